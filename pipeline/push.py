"""``zitadel-beam push``: send the import bodies of a manifest to the admin import endpoint.

Examples::

    ZITADEL_TOKEN=$(cat pat.txt) zitadel-beam push --url=https://my.zitadel.cloud \\
        --manifest=out/importBody.manifest.json
    zitadel-beam push --url=... --manifest=... --key-file=sa-key.json --concurrency=2 --verify
    zitadel-beam push --url=... --manifest=... --client-id=importer --client-secret-file=secret.txt

The work (probe, ledger and resume, retries, halving after a server timeout, per-user results)
is done by ``transforms/push/engine.py``; its docstring lists the steps. With ``--gcs-document``
the request is handed to ``pipeline/gcs_import.py`` instead.

Exit status: 0 when every user is created or present, 1 otherwise, 2 for configuration errors.
"""

from __future__ import annotations

import argparse
import os
import sys

from pipeline.gcs_import import run_gcs_push
from pipeline.options import add_credential_arguments, add_gcs_arguments, credentials_from_args
from transforms.common.errors import ConfigError
from transforms.files.locks import acquire_lock
from transforms.hashing.policy import HashPolicy, load_policy
from transforms.output.manifest import default_results_dir, load_manifest, write_body_manifest
from transforms.push.api_choice import API_CHOICES
from transforms.push.engine import push_manifest
from transforms.push.send_body import TIMEOUT_MARGIN
from transforms.zitadel_api.limiter import DEFAULT_MAXIMUM

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", required=True, help="ZITADEL instance base URL, e.g. https://x.zitadel.cloud"
    )
    parser.add_argument("--manifest", help="the <stem>.manifest.json written by migrate")
    parser.add_argument(
        "--body",
        action="append",
        default=[],
        help="instead of --manifest: an ImportDataRequest body written by another tool or by "
        "hand (repeatable, sent in order; <stem>.push.manifest.json is written in the "
        "current folder, for resume and --verify). Every user is validated first, with "
        "migrate's rules and reason codes: invalid ones are reported, not sent",
    )
    parser.add_argument("--results", help="ledger folder (default: <manifest stem>.results/ beside it)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="exactly this many bodies sent at once, or users for --api=user-v2 and a sync's changes "
        "(default: as many as the target keeps up with, found while sending, at most "
        "--max-concurrency; README 'Push pace')",
    )
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=DEFAULT_MAXIMUM,
        help=f"without --concurrency: the most bodies (or users) sent at once (default {DEFAULT_MAXIMUM})",
    )
    parser.add_argument(
        "--max-rate",
        type=float,
        default=None,
        help="at most this many requests a second, retries included (e.g. under the target's rate "
        "limit; default: no limit but what 429 answers teach)",
    )
    parser.add_argument(
        "--max-attempts",
        type=int,
        default=6,
        help="attempts per request for retryable failures (default 6): a request ends after at "
        "most about attempts x --request-timeout (plus backoff)",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        help="seconds one attempt of an import request may take, from connect to the answer's last "
        f"byte (default: the body's timeout + {TIMEOUT_MARGIN:.0f} s)",
    )
    parser.add_argument("--verify", action="store_true", help="run verify when the push is done")
    add_api_argument(parser)
    parser.add_argument(
        "--break-lock",
        action="store_true",
        help="remove another push's lock on this ledger, or on the sync state (docs/sync.md), "
        "only when that run is certainly gone",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    parser.add_argument(
        "--zitadel-config",
        metavar="FILE",
        default=None,
        help="the target's config YAML: warn before sending when its password verifiers or "
        "limits do not cover the manifest's hashes (default: the config migrate was given, "
        "recorded in the manifest, else ZITADEL's defaults)",
    )
    add_credential_arguments(parser)
    add_gcs_arguments(parser)


def add_api_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup, flag: str = "--api") -> None:
    """``--api``: the admin import or the user service v2 (docs/user-v2.md)."""
    parser.add_argument(
        flag,
        dest="api",
        choices=API_CHOICES,
        default="auto",
        help="how users go in: admin-import (POST /admin/v1/import, an instance-level credential), "
        "user-v2 (one user service call per user; an org's user manager suffices), or auto "
        "(default): the admin import where the credential may use it, else the user service",
    )


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    del pipeline_args  # push has no Beam options; the CLI already rejected unknown flags
    if getattr(known_args, "gcs_document", None):
        return run_gcs_push(known_args)
    low = [known_args.max_attempts, known_args.max_concurrency, known_args.concurrency or 1]
    if min(low) < 1 or known_args.concurrency == 0:
        raise ConfigError("--concurrency, --max-concurrency and --max-attempts must be at least 1")
    if known_args.max_rate is not None and known_args.max_rate <= 0:
        raise ConfigError("--max-rate must be above 0")
    if bool(known_args.manifest) == bool(known_args.body):
        raise ConfigError("give either --manifest or --body (one or more)")
    manifest_path = known_args.manifest or write_body_manifest(known_args.body)
    manifest = load_manifest(manifest_path)
    results = known_args.results or default_results_dir(manifest)
    # One push per ledger: two at once would send the same bodies and race on its records.
    with acquire_lock(
        results.rstrip("/") + ".lock", what=f"push --results={results}", break_lock=known_args.break_lock
    ):
        sync = manifest.raw.get("sync")
        if not isinstance(sync, dict):
            return _push(known_args, manifest_path, results)
        # A sync run's manifest commits its state: hold the state's lock too (docs/sync.md#state).
        from transforms.sync.state import acquire_state_lock

        with acquire_state_lock(str(sync["state"]), "push", known_args.break_lock):
            return _push(known_args, manifest_path, results)


def _own_hash_policy(known_args: argparse.Namespace) -> HashPolicy | None:
    """push's own target config (``--zitadel-config``, or the variables changing ZITADEL's
    defaults); None: the hash check uses what migrate recorded in the manifest."""
    policy = load_policy(known_args.zitadel_config, os.environ)
    return policy if known_args.zitadel_config or policy != HashPolicy() else None


def _push(known_args: argparse.Namespace, manifest_path: str, results: str) -> int:
    report = push_manifest(
        manifest_path,
        known_args.url,
        credentials_from_args(known_args),
        results_dir=results,
        concurrency=known_args.concurrency,
        max_concurrency=known_args.max_concurrency,
        max_rate=known_args.max_rate,
        max_attempts=known_args.max_attempts,
        request_timeout=known_args.request_timeout,
        progress=not known_args.quiet,
        verify=known_args.verify,
        hash_policy=_own_hash_policy(known_args),
        api=known_args.api,
    )
    print(report.table())
    if report.verify is not None:
        print(report.verify.table())
    if not report.ok:  # the table is on stdout; stderr gets the one line that says why
        print(f"zitadel-beam: push: {report.failure_line()}", file=sys.stderr)
    return 0 if report.ok else 1
