"""The push engine: send a manifest's import bodies to ``POST /admin/v1/import``, resumably.

What it does, per body (the import is slow, not transactional, and rejects a whole request for
one invalid user: ``docs/zitadel-import-api.md``):

- one cheap authenticated call first, so a bad URL or credential fails in a second;
- skip the body if its ledger file under the results folder says done for the same sha256;
- send it with retries (429/502/503/504, dropped connections, client timeouts); when the server's
  own timeout elapses (``context deadline exceeded``) send the users again in halves;
- ``Errors.User.AlreadyExisting`` means *present* (a retry after a lost answer, or a re-run), and
  ``Errors.Org.AlreadyExisting`` is success; every other per-user error goes to
  ``<results>/push-dead-letter.ndjson`` with the server's message (ids only, never hashes);
- the ledger is written atomically (temp file + rename), so a killed run resumes cleanly;
- ``concurrency`` bodies at once, or (None) as many as the target keeps up with, at most
  ``max_concurrency``, at most ``max_rate`` requests a second (``limiter.py``).

Example::

    manifest = load_manifest("out/importBody.manifest.json")
    report = push_manifest(manifest, "https://x.zitadel.cloud", credentials)
    report.ok, report.created, report.present, report.failed
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from typing import TextIO

from transforms.common.errors import ConfigError
from transforms.hashing.policy import HashPolicy
from transforms.hashing.summary import warn_uncovered
from transforms.output.manifest import BodyRef, Manifest, default_results_dir
from transforms.push.api_choice import ADMIN_IMPORT, USER_V2, open_client
from transforms.push.body_scheduler import BodyScheduler
from transforms.push.grant_calls import check_projects
from transforms.push.ledger import FINISHED, BodyResult, BodyStatus, Ledger, write_dead_letter
from transforms.push.precheck import precheck
from transforms.push.progress import PushProgress
from transforms.push.report import FollowUp, PushReport
from transforms.push.send_body import send_body
from transforms.push.user_v2_push import LimiterRunner, send_body_v2
from transforms.push.user_v2_sender import CreatePath, OrgAccess
from transforms.push.verification import verify_manifest
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.limiter import DEFAULT_MAXIMUM, Limiter

__all__ = ["push_manifest"]

_LOGGER = logging.getLogger(__name__)


def _send_all(
    manifest: Manifest,
    client: AdminClient,
    ledger: Ledger,
    *,
    limiter: Limiter,
    max_attempts: int,
    request_timeout: float | None,
    progress: bool,
    stream: TextIO,
    api: str = ADMIN_IMPORT,
    hash_policy: HashPolicy | None = None,
) -> tuple[list[BodyResult], str | None]:
    """Every body, skipping those the ledger says are done; the results in manifest order, and
    why the push stopped (None when it did not). On the user service path one 403 refuses one
    org's users (``OrgAccess``); a 403 in every org the bodies name stops the push."""
    access, create = OrgAccess(), CreatePath()
    with PushProgress(manifest, stream, progress, limiter=limiter) as live:

        def skip(ref: BodyRef) -> BodyResult | None:
            previous = ledger.load(ref)
            if previous is not None and previous.status in FINISHED:
                _LOGGER.info("%s: done in an earlier run (ledger), skipped", ref.name)
                return dataclasses.replace(previous, status=BodyStatus.SKIPPED)
            return None

        def work(ref: BodyRef) -> BodyResult:
            if api == USER_V2:  # one call per user, a limiter slot per user (user_v2_push.py)
                paced = client.paced(limiter)
                runner = LimiterRunner(limiter)
                return send_body_v2(
                    paced, ref, ledger.load(ref), live, ledger, runner, request_timeout,
                    access=access, create=create, hash_policy=hash_policy,
                )  # fmt: skip
            return send_body(
                client,
                ref,
                ledger.load(ref),
                manifest.timeout,
                request_timeout,
                live,
                ledger,
                max_attempts,
                limiter,
            )

        # The user service path sends one body at a time, its users as many at once as the limiter allows.
        bodies = Limiter(fixed=1) if api == USER_V2 else limiter
        scheduler = BodyScheduler(manifest, bodies, work, skip, live.body_done)
        results = scheduler.run()
    return [results[b.index] for b in manifest.bodies], scheduler.fatal or access.every_org_denied()


def _open(
    url: str, credentials: Credentials, api: str, max_attempts: int, timeout: float | None, stream: TextIO
) -> tuple[AdminClient, str]:
    """A client that passed its probe, and the path it takes (``--api``: api_choice.py)."""
    client, api, line = open_client(url, credentials, api, max_attempts, timeout)
    if line:
        print(line, file=stream)
    return client, api


def _stopped_line(fatal: str, ordered: list[BodyResult]) -> str:
    """Why the push stopped, with what was done and how to resume."""
    done = sum(1 for r in ordered if r.status in FINISHED)
    return fatal + (
        f"; {done} of {len(ordered)} bodies done "
        f"({sum(len(r.created) for r in ordered)} users created, "
        f"{sum(len(r.present) for r in ordered)} present): re-run the same command to resume"
    )


def push_manifest(
    manifest: Manifest,
    url: str,
    credentials: Credentials,
    results_dir: str | None = None,
    concurrency: int | None = 1,
    max_attempts: int = 6,
    request_timeout: float | None = None,
    progress: bool = True,
    verify: bool = False,
    stream: TextIO | None = None,
    client: AdminClient | None = None,
    hash_policy: HashPolicy | None = None,
    api: str = ADMIN_IMPORT,  # or user-v2, or auto: probe and say which (api_choice.py)
    max_concurrency: int = DEFAULT_MAXIMUM,
    max_rate: float | None = None,
    then: FollowUp | None = None,
) -> PushReport:
    """Push every body of a loaded manifest; resumable through the ledger in ``results_dir``.

    >>> report = push_manifest("out/importBody.manifest.json", "https://x.zitadel.cloud",
    ...                        load_credentials(token_file="pat"), concurrency=2)  # doctest: +SKIP
    >>> report.ok, report.created, report.present, report.failed  # doctest: +SKIP

    Raises ConfigError for a bad manifest, URL or credential (the probe call). With
    ``hash_policy`` (the target's verifiers and limits), a warning names the manifest's hashes that
    target would refuse (docs/password-hashes.md). ``then``: what runs after the bodies, on the
    same client and pace, before verify (a scheduled sync's changes and state commit:
    ``transforms/sync/night.py``, which stands on this engine); a manifest with a ``sync`` section
    is refused without it, so its changes are never silently left out.

    >>> report = push_manifest(load_manifest("out/importBody.manifest.json"),
    ...                        "https://x.zitadel.cloud", credentials)  # doctest: +SKIP
    >>> report.ok, report.created, report.present, report.failed  # doctest: +SKIP
    """
    stream = stream or sys.stderr
    forced = precheck(
        manifest, stream
    )  # before the ledger and the network: a refused manifest leaves nothing
    warn_uncovered(manifest.raw, hash_policy)
    if manifest.sync is not None and then is None:
        raise ConfigError(f"{manifest.path}: a sync manifest: its changes are pushed with its bodies by push")
    if then is not None:
        then.before()  # before anything is sent (a sync refuses a manifest of an older state)
    ledger = Ledger(results_dir or default_results_dir(manifest))
    if client is None:  # ``--request-timeout`` bounds every call of the push, not only imports
        client, api = _open(url, credentials, api, max_attempts, request_timeout, stream)
    if api != USER_V2:  # the events search it reads is an admin API call
        check_projects(manifest.raw, client)  # the grants' projects must exist before any body
    started = time.monotonic()
    limiter = Limiter(fixed=concurrency, maximum=max_concurrency, max_rate=max_rate)
    ordered, fatal = _send_all(
        manifest,
        client,
        ledger,
        limiter=limiter,
        max_attempts=max_attempts,
        request_timeout=request_timeout,
        progress=progress,
        stream=stream,
        api=api,
        hash_policy=hash_policy,
    )
    report = PushReport(
        ordered,
        time.monotonic() - started,
        ledger.directory,
        write_dead_letter(ledger.directory, ordered),
        client.stats,
        None if fatal is None else _stopped_line(fatal, ordered),
        limiter=limiter.stats(),
        change_dropped=forced if api != USER_V2 else 0,
    )
    if then is not None:
        report.sync = then.after(
            ordered, client.paced(limiter), ledger.directory, limiter, bodies_stopped=fatal is not None
        )
    if verify and fatal is None:
        report.verify = verify_manifest(
            manifest, url, credentials, results_dir=ledger.directory, client=client
        )
    return report
