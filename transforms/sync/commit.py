"""The commit point of a scheduled sync: apply the change files, verify them, commit the state.

A sync manifest (``"sync"`` in the manifest, docs/sync.md) carries import bodies for the new
users and change files for the rest. Once the push engine (``transforms/push/engine.py``) has sent
the bodies, ``apply_and_commit`` applies the changes (``apply.py``), verifies them when asked, and
commits the state store with only what the target confirmed: a user that failed keeps its old
record and is sent again by the next run::

    report.sync = apply_and_commit(manifest, client, ledger.directory, ordered, bodies_stopped=False,
                                   limiter=limiter, request_timeout=None, progress=True,
                                   stream=sys.stderr, verify=True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from transforms.output.manifest import Manifest
from transforms.push.ledger import FINISHED, BodyResult
from transforms.sync.apply import apply_changes, commit_state, verify_changes
from transforms.sync.report import SyncReport
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.limiter import Limiter

__all__ = ["apply_and_commit"]


def apply_and_commit(
    manifest: Manifest,
    client: AdminClient,
    results_dir: str,
    ordered: Sequence[BodyResult],
    *,
    bodies_stopped: bool,
    concurrency: int = 1,
    limiter: Limiter | None = None,
    request_timeout: float | None,
    progress: bool,
    stream: TextIO,
    verify: bool,
) -> SyncReport:
    """Apply the manifest's changes (unless the bodies' push stopped), verify, commit the state.

    ``ordered``: the bodies' results, in manifest order. ``limiter``: a slot per user (the push's:
    adaptive, or exactly ``--concurrency``); without one, ``concurrency`` users at once.
    Returns the sync's report.
    """
    confirmed = {r.index: set(r.created) | set(r.present) for r in ordered}
    if not bodies_stopped:
        sync, changes = apply_changes(
            manifest,
            client,
            results_dir,
            created=set().union(*confirmed.values()) if confirmed else set(),
            concurrency=concurrency,
            limiter=limiter,
            request_timeout=request_timeout,
            progress=progress,
            stream=stream,
        )
    else:
        sync, changes = SyncReport([], 0.0, 0, "not started: the bodies' push stopped"), []
    if verify and sync.fatal is None:
        verify_changes(changes, sync, client)
    # Only what the target confirmed: a failed user keeps its old record (sent again next run).
    bodies_done = frozenset(r.index for r in ordered if r.status in FINISHED)
    commit_state(manifest, confirmed, changes, sync, bodies_done)
    return sync
