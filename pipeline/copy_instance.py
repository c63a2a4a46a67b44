"""``zitadel-beam copy``: move organizations from one ZITADEL instance to another.

Examples::

    ZITADEL_SOURCE_TOKEN=$(cat src.pat) ZITADEL_TARGET_TOKEN=$(cat dst.pat) \\
        zitadel-beam copy --source-url=https://old.zitadel.cloud --target-url=https://id.example.com \\
        --with-passwords --work-dir=work/move
    zitadel-beam copy --source-url=... --source-key-file=src-sa.json \\
        --target-url=... --target-key-file=dst-sa.json --org-ids=1234 --work-dir=gs://B/move

Export → split → push → verify in one command (each step is also a command of its own: ``export``,
``migrate zitadel``, ``push``, ``verify``). Everything lands in ``--work-dir``: ``export.json``
(mode 0600, it holds hashes), the bodies and their manifest, and the push ledger
(``importBody.results/``; for a gs:// work dir ``./<name>.importBody.results``, as the ledger is
rewritten atomically and stays local). Re-running the same command
resumes: an existing export is reused (``--re-export`` to fetch it again), the split is
deterministic, and bodies the ledger records as done are skipped.

Credentials, one kind per instance: ``--source-token-file`` / ``--source-key-file`` /
``--source-client-id`` + ``--source-client-secret-file`` (env ``ZITADEL_SOURCE_TOKEN``) and the same
with ``--target-`` (env ``ZITADEL_TARGET_TOKEN``). Exit status: 0 when every user was imported and
verify found them all, 1 otherwise, 2 for configuration errors.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import sys

from pipeline.document_run import LAUNCHER
from pipeline.migrate_options import batch_size_type
from pipeline.options import (
    add_export_selection_arguments,
    add_side_credential_arguments,
    credentials_for,
    flag_duration,
)
from pipeline.push_entry import add_pace_arguments, push_settings, run_push
from transforms.files.locks import acquire_lock
from transforms.files.storage import check_gcs_reachable, exists, join
from transforms.push.api_choice import ADMIN_IMPORT
from transforms.push.instance_moves import (
    COPY_BODY_NAME,
    COPY_EXPORT_NAME,
    COPY_LOCK_NAME,
    check_machine_users,
    export_document,
    export_request,
    split_is_current,
)
from transforms.sources.zitadel.command import split_export
from transforms.zitadel_api.client import connect

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source-url", required=True, help="the instance to copy from")
    parser.add_argument(
        "--target-url", required=True, help="the instance to copy into (it must exist, configured)"
    )
    add_export_selection_arguments(parser)
    parser.add_argument(
        "--work-dir",
        default="./zitadel-copy",
        help="folder for the export, bodies, manifest (local or gs://; default ./zitadel-copy)",
    )
    parser.add_argument("--re-export", action="store_true", help="export again even if the work dir has one")
    parser.add_argument(
        "--batch-size",
        type=batch_size_type,
        default=5000,
        help="at most this many users per body (default 5000)",
    )
    parser.add_argument(
        "--timeout", default="5m0s", help="server-side timeout of each import body (default 5m0s)"
    )
    parser.add_argument(
        "--export-timeout", default="30m0s", help="server-side timeout of the export (default 30m0s)"
    )
    add_pace_arguments(parser)  # push's own flags and defaults (pipeline/push_entry.py)
    parser.add_argument("--results", help="push ledger folder (default <work-dir>/importBody.results)")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    parser.add_argument(
        "--break-lock",
        action="store_true",
        help="remove another run's lock on this --work-dir (only when that run is certainly gone)",
    )
    for side in ("source", "target"):
        add_side_credential_arguments(parser, side)


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    del pipeline_args
    args = known_args
    push_settings(args)  # the pace flags, checked now (a bad one fails before the export)
    work = args.work_dir.rstrip("/") or "."
    check_gcs_reachable([work])
    return _copy(args, work)


def _copy(args: argparse.Namespace, work: str) -> int:
    timeout = flag_duration("--timeout", args.timeout)
    source_creds, target_creds = credentials_for(args, "source"), credentials_for(args, "target")
    # Both instances answer (and accept the credentials) before anything is exported.
    source = connect(args.source_url, source_creds)
    target = connect(args.target_url, target_creds)
    if not work.startswith("gs://"):
        os.makedirs(work, mode=0o700, exist_ok=True)
    with acquire_lock(join(work, COPY_LOCK_NAME), what=f"copy --work-dir={work}", break_lock=args.break_lock):
        return _copy_locked(args, work, source, target, target_creds, timeout)


def _copy_locked(args: argparse.Namespace, work: str, source, target, target_creds, timeout: str) -> int:
    export = join(work, COPY_EXPORT_NAME)
    output = join(work, COPY_BODY_NAME)
    manifest = join(work, "importBody.manifest.json")
    if exists(export) and not args.re_export:
        print(f"copy: 1/4 export: reusing {export} (--re-export to fetch it again)")
    else:
        request = export_request(
            args.org_ids, args.excluded_org_ids, args.with_passwords, args.with_otp, args.export_timeout
        )
        print("copy: 1/4 " + export_document(source, request, export).text())
    sys.stdout.flush()

    if split_is_current(manifest, export, args.batch_size, timeout):
        print(f"copy: 2/4 split: {manifest} is current, reused")
    else:
        result = split_export(export, output, launcher=LAUNCHER, timeout=timeout, batch_size=args.batch_size)
        print("copy: 2/4 split:\n" + result.summary())
        if not result.holds:
            return 3
    sys.stdout.flush()

    # The ledger is rewritten atomically, so it stays local: beside a gs:// work dir's name here.
    results = args.results or (
        join(work, "importBody.results")
        if not work.startswith("gs://")
        else f"{posixpath.basename(work) or 'copy'}.importBody.results"
    )
    settings = push_settings(
        args, verify=True, progress=not args.quiet, results=results, break_lock=args.break_lock
    )
    report = run_push(
        manifest, target.base_url, target_creds, settings, label="copy", target=(target, ADMIN_IMPORT)
    )
    print("copy: 3/4 push:\n" + report.table())
    if not report.ok:
        print(f"zitadel-beam: copy: push: {report.failure_line()}", file=sys.stderr)
    if report.verify is None:
        print("copy: 4/4 verify: not run (the push stopped)")
        return 1
    print("copy: 4/4 verify:\n" + report.verify.table())
    expected, missing = check_machine_users(manifest, target)
    if expected:
        print(
            f"verify: machine users {expected - len(missing)}/{expected} added"
            + (f"; missing: {', '.join(missing[:5])}" if missing else "")
        )
    return 0 if report.ok and not missing else 1
