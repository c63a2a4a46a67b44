"""A scheduled sync's night on top of push: the bodies, then the changes and the state commit.

A sync manifest (``"sync"`` in the manifest, docs/sync.md) carries import bodies for the new users
and change files for the rest. ``push_night`` pushes it with the push engine
(``transforms/push/engine.py``) and hands it a ``SyncFollowUp``: before anything is sent the
manifest's base generation is checked against the state; after the bodies, on the push's own
client and limiter, the changes are applied, verified when asked, and the state committed
(``commit.py``). Sync stands on push; push imports nothing of sync.

Example::

    report = push_night(load_manifest("out/importBody.manifest.json"), url, credentials, verify=True)
    report.sync.table()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

from transforms.output.manifest import Manifest
from transforms.push.engine import push_manifest
from transforms.push.ledger import BodyResult
from transforms.push.report import PushReport
from transforms.sync.apply import check_base
from transforms.sync.commit import apply_and_commit
from transforms.sync.report import SyncReport
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.limiter import Limiter

__all__ = ["push_night", "SyncFollowUp"]


class SyncFollowUp:
    """The sync's part of a push of a sync manifest (report.FollowUp)."""

    def __init__(
        self,
        manifest: Manifest,
        *,
        request_timeout: float | None,
        progress: bool,
        stream: TextIO | None,
        verify: bool,
    ) -> None:
        self.manifest, self.request_timeout, self.progress = manifest, request_timeout, progress
        self.stream, self.verify = stream, verify

    def before(self) -> None:
        check_base(self.manifest)  # a manifest of an older state is refused before anything is sent

    def after(
        self,
        bodies: Sequence[BodyResult],
        client: AdminClient,
        results_dir: str,
        limiter: Limiter,
        *,
        bodies_stopped: bool,
    ) -> SyncReport:
        import sys

        return apply_and_commit(
            self.manifest,
            client,
            results_dir,
            bodies,
            bodies_stopped=bodies_stopped,
            limiter=limiter,  # the users' calls at the pace the target allows (or exactly --concurrency)
            request_timeout=self.request_timeout,
            progress=self.progress,
            stream=self.stream or sys.stderr,
            verify=self.verify,
        )


def push_night(manifest: Manifest, url: str, credentials: Credentials, **push: Any) -> PushReport:
    """Push a manifest, its changes and state commit with it when it is a sync manifest; the
    keyword arguments are ``push_manifest``'s."""
    if manifest.sync is None:
        return push_manifest(manifest, url, credentials, **push)
    follow = SyncFollowUp(
        manifest,
        request_timeout=push.get("request_timeout"),
        progress=push.get("progress", True),
        stream=push.get("stream"),
        verify=bool(push.get("verify")),
    )
    return push_manifest(manifest, url, credentials, then=follow, **push)
