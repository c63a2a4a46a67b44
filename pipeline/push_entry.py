"""The one push entry: ``push``, ``migrate --push-url`` and ``copy`` push through ``run_push``.

Each command adds the same pace flags (``add_pace_arguments``; ``migrate`` spells them with a
``--push-`` prefix, beside its own flags), turns them into one ``PushSettings`` in one helper
(``push_settings``: checked, no network), and pushes with ``run_push``: the same defaults (the
pace adapts to the target unless ``--concurrency`` fixes it), the same lock on the results (a
second push of a manifest being pushed is refused at once, naming the running one), the
state's lock for a sync manifest, one probe call, the same table and closing line::

    settings = push_settings(args)                     # flags → settings, checked, no call made
    status = show(run_push(manifest_path, args.url, credentials, settings))

A sync manifest's changes and state commit follow its bodies (transforms/sync/night.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TextIO

from transforms.common.errors import ConfigError
from transforms.files.locks import acquire_lock
from transforms.hashing.policy import HashPolicy
from transforms.output.manifest import Manifest, default_results_dir, load_manifest
from transforms.push.api_choice import PushApi, open_client
from transforms.push.report import PushReport
from transforms.push.send_body import TIMEOUT_MARGIN
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.limiter import DEFAULT_MAXIMUM

__all__ = [
    "PushSettings",
    "Target",
    "add_pace_arguments",
    "push_settings",
    "results_lock_path",
    "open_target",
    "run_push",
    "show",
]


# A client that answered the probe, and the path it takes (admin-import or user-v2).
Target = tuple[AdminClient, PushApi]


@dataclasses.dataclass(frozen=True, kw_only=True)
class PushSettings:
    """How a push sends: the same for every command that pushes."""

    concurrency: int | None = None  # None: as many as the target keeps up with (README "Push pace")
    max_concurrency: int = DEFAULT_MAXIMUM
    max_rate: float | None = None
    max_attempts: int = 6
    request_timeout: float | None = None
    verify: bool = False
    progress: bool = True
    results: str | None = None  # the ledger folder (default: <manifest stem>.results/ beside it)
    api: PushApi = PushApi.AUTO  # --api: admin-import, user-v2 or auto (docs/user-v2.md)
    break_lock: bool = False
    hash_policy: HashPolicy | None = None  # the target's verifiers and limits, when known


def add_pace_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, prefix: str = "") -> None:
    """``--concurrency``, ``--max-concurrency``, ``--max-rate``, ``--max-attempts`` and
    ``--request-timeout`` (``prefix="push-"``: ``--push-concurrency`` and so on)."""
    parser.add_argument(
        f"--{prefix}concurrency",
        type=int,
        default=None,
        help="exactly this many bodies sent at once, or users for --api=user-v2 and a sync's changes "
        "(default: as many as the target keeps up with, found while sending, at most "
        f"--{prefix}max-concurrency; README 'Push pace')",
    )
    parser.add_argument(
        f"--{prefix}max-concurrency",
        type=int,
        default=DEFAULT_MAXIMUM,
        help=f"without --{prefix}concurrency: the most bodies (or users) sent at once (default {DEFAULT_MAXIMUM})",
    )
    parser.add_argument(
        f"--{prefix}max-rate",
        type=float,
        default=None,
        help="at most this many requests a second, retries included (e.g. under the target's rate "
        "limit; default: no limit but what 429 answers teach)",
    )
    parser.add_argument(
        f"--{prefix}max-attempts",
        type=int,
        default=6,
        help="attempts per request for retryable failures (default 6): a request ends after at "
        f"most about attempts x --{prefix}request-timeout (plus backoff)",
    )
    parser.add_argument(
        f"--{prefix}request-timeout",
        type=float,
        help="seconds one attempt of an import request may take, from connect to the answer's last "
        f"byte (default: the body's timeout + {TIMEOUT_MARGIN:.0f} s)",
    )


def push_settings(
    args: argparse.Namespace,
    prefix: str = "",
    *,
    verify: bool = False,
    progress: bool = True,
    results: str | None = None,
    break_lock: bool = False,
    hash_policy: HashPolicy | None = None,
) -> PushSettings:
    """The pace flags of ``add_pace_arguments`` (same ``prefix``) and the command's own choices,
    checked: one ConfigError line for a bad value. Makes no call."""
    dest = prefix.replace("-", "_")
    concurrency = getattr(args, f"{dest}concurrency")
    max_concurrency = getattr(args, f"{dest}max_concurrency")
    max_attempts = getattr(args, f"{dest}max_attempts")
    max_rate = getattr(args, f"{dest}max_rate")
    timeout = getattr(args, f"{dest}request_timeout")
    if min(max_attempts, max_concurrency, 1 if concurrency is None else concurrency) < 1:
        raise ConfigError(
            f"--{prefix}concurrency, --{prefix}max-concurrency and --{prefix}max-attempts must be at least 1"
        )
    if max_rate is not None and max_rate <= 0:
        raise ConfigError(f"--{prefix}max-rate must be above 0")
    if timeout is not None and timeout <= 0:
        raise ConfigError(f"--{prefix}request-timeout must be above 0")
    return PushSettings(
        concurrency=concurrency,
        max_concurrency=max_concurrency,
        max_rate=max_rate,
        max_attempts=max_attempts,
        request_timeout=timeout,
        verify=verify,
        progress=progress,
        results=results,
        api=PushApi(getattr(args, "api", None) or PushApi.AUTO),
        break_lock=break_lock,
        hash_policy=hash_policy,
    )


def results_lock_path(results: str) -> str:
    """One push per ledger: the lock every command that pushes takes."""
    return results.rstrip("/") + ".lock"


def open_target(url: str, credentials: Credentials, settings: PushSettings) -> Target:
    """The one probe call of a push: a client that answered, and the path it takes (``--api``)."""
    client, api, line = open_client(
        url, credentials, settings.api, settings.max_attempts, settings.request_timeout
    )
    if line:
        print(line, file=sys.stderr)
    return client, api


def run_push(
    manifest_path: str,
    url: str,
    credentials: Credentials,
    settings: PushSettings,
    *,
    label: str = "push",
    target: Target | None = None,
    state_locked: bool = False,
    stream: TextIO | None = None,
) -> PushReport:
    """Push a manifest (its changes too, for a sync manifest) under the results' lock (and the
    state's, for a sync manifest); the report (``show`` prints it). ``label`` names this run in
    its locks (``push``, ``migrate --push-url``, ``copy``): a second push is refused naming it.

    ``target``: a client and path from ``open_target`` (migrate probes before its pipeline runs;
    no second probe). ``state_locked``: the caller holds the sync state's lock (migrate --state).
    """
    manifest = load_manifest(manifest_path)
    results = settings.results or default_results_dir(manifest)
    what = f"{label} of {manifest_path}"
    # One push per ledger: two at once would send the same bodies and race on its records.
    with acquire_lock(results_lock_path(results), what=what, break_lock=settings.break_lock):
        if manifest.sync is not None and not state_locked:
            # A sync run's manifest commits its state: hold the state's lock too (docs/sync.md#state).
            from transforms.sync.state import acquire_state_lock

            with acquire_state_lock(manifest.sync.state, label, settings.break_lock):
                return _push(manifest, url, credentials, settings, results, target, stream)
        return _push(manifest, url, credentials, settings, results, target, stream)


def show(report: PushReport, label: str = "push") -> int:
    """Print the push's table (and verify's), and when not ok one closing line on stderr naming
    what failed; the exit status (0 ok, 1 not)."""
    prefix = "" if label == "push" else f"{label}: "
    print(report.table())
    if report.verify is not None:
        print(report.verify.table())
    if not report.ok:  # the table is on stdout; stderr gets the one line that says why
        print(f"zitadel-beam: {prefix}push: {report.failure_line()}", file=sys.stderr)
    return 0 if report.ok else 1


def _push(
    manifest: Manifest,
    url: str,
    credentials: Credentials,
    settings: PushSettings,
    results: str,
    target: Target | None,
    stream: TextIO | None,
) -> PushReport:
    from transforms.sync.night import push_night

    # Without a target, the engine probes after its local checks (a refused manifest calls nothing).
    client, api = target if target is not None else (None, settings.api)
    return push_night(
        manifest,
        url,
        credentials,
        results_dir=results,
        concurrency=settings.concurrency,
        max_concurrency=settings.max_concurrency,
        max_rate=settings.max_rate,
        max_attempts=settings.max_attempts,
        request_timeout=settings.request_timeout,
        progress=settings.progress,
        verify=settings.verify,
        hash_policy=settings.hash_policy,
        client=client,
        api=api,
        stream=stream,
    )
