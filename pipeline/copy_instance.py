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
import json
import os
import posixpath
import sys

from pipeline.errors import ConfigError
from transforms import admin_api

__all__ = ["add_arguments", "run", "credentials_for", "check_machine_users"]

EXPORT_NAME = "export.json"
BODY_NAME = "importBody.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source-url", required=True, help="the instance to copy from")
    parser.add_argument("--target-url", required=True, help="the instance to copy into (it must exist, configured)")
    parser.add_argument("--org-ids", help="comma-separated org ids to copy (default: every org)")
    parser.add_argument("--excluded-org-ids", help="comma-separated org ids to leave out")
    parser.add_argument("--with-passwords", action="store_true", help="copy password hashes")
    parser.add_argument("--with-otp", action="store_true", help="copy users' OTP secrets")
    parser.add_argument("--work-dir", default="./zitadel-copy",
                        help="folder for the export, bodies, manifest (local or gs://; default ./zitadel-copy)")
    parser.add_argument("--re-export", action="store_true", help="export again even if the work dir has one")
    parser.add_argument("--batch-size", type=int, default=5000, help="at most this many users per body (default 5000)")
    parser.add_argument("--timeout", default="5m0s", help="server-side timeout of each import body (default 5m0s)")
    parser.add_argument("--export-timeout", default="30m0s", help="server-side timeout of the export (default 30m0s)")
    parser.add_argument("--concurrency", type=int, default=1, help="bodies imported at once (default 1)")
    parser.add_argument("--results", help="push ledger folder (default <work-dir>/importBody.results)")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    for side in ("source", "target"):
        group = parser.add_argument_group(f"{side} credentials (one of; default env ZITADEL_{side.upper()}_TOKEN)")
        group.add_argument(f"--{side}-token-file", help=f"file with a PAT / access token for the {side}")
        group.add_argument(f"--{side}-key-file", help=f"service-account JSON key file for the {side}")
        group.add_argument(f"--{side}-client-id", help=f"service user client id for the {side}")
        group.add_argument(f"--{side}-client-secret-file", help=f"file with that client's secret ({side})")


def credentials_for(args: argparse.Namespace, side: str, environ=None) -> admin_api.Credentials:
    """The credentials of one side; the env fallback is ZITADEL_SOURCE_TOKEN / ZITADEL_TARGET_TOKEN."""
    environ = os.environ if environ is None else environ
    try:
        return admin_api.load_credentials(
            token_file=getattr(args, f"{side}_token_file"), client_id=getattr(args, f"{side}_client_id"),
            client_secret_file=getattr(args, f"{side}_client_secret_file"),
            key_file=getattr(args, f"{side}_key_file"),
            environ={"ZITADEL_TOKEN": environ.get(f"ZITADEL_{side.upper()}_TOKEN", "")})
    except admin_api.CredentialError as err:
        text = str(err).replace("--", f"--{side}-").replace("ZITADEL_TOKEN", f"ZITADEL_{side.upper()}_TOKEN")
        raise ConfigError(f"{side}: {text}") from None


def _join(folder: str, name: str) -> str:
    return posixpath.join(folder, name) if folder.startswith("gs://") else os.path.join(folder, name)


def _exists(path: str) -> bool:
    if path.startswith("gs://"):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.exists(path)
    return os.path.isfile(path)


def _size(path: str) -> int:
    if path.startswith("gs://"):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    return os.path.getsize(path)


def _split_is_current(manifest_path: str, export: str, batch_size: int, timeout: str) -> bool:
    """A manifest from an earlier run of the same export and settings (skip the split)."""
    from pipeline.push import _read_bytes

    if not _exists(manifest_path):
        return False
    try:
        manifest = json.loads(_read_bytes(manifest_path))
    except (OSError, ValueError):
        return False
    return (manifest.get("source") == "zitadel" and manifest.get("export_bytes") == _size(export)
            and manifest.get("batch_size") == batch_size and manifest.get("timeout") == timeout
            and (manifest.get("invariant") or {}).get("holds") is True)


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    from pipeline.durations import normalise_duration
    from pipeline.export import export_document, export_request
    from pipeline.migrate import check_gcs_reachable
    from pipeline.migrate_zitadel import split_export
    from pipeline.push import connect, push_manifest

    del pipeline_args
    args = known_args
    if args.concurrency < 1 or args.batch_size < 1:
        raise ConfigError("--concurrency and --batch-size must be at least 1")
    try:
        timeout = normalise_duration(args.timeout)
    except ValueError as err:
        raise ConfigError(f"--timeout: {err}") from None
    source_creds, target_creds = credentials_for(args, "source"), credentials_for(args, "target")
    work = args.work_dir.rstrip("/") or "."
    check_gcs_reachable([work])
    export = _join(work, EXPORT_NAME)
    output = _join(work, BODY_NAME)
    manifest = _join(work, "importBody.manifest.json")
    # Both instances answer (and accept the credentials) before anything is exported.
    source = connect(args.source_url, source_creds)
    target = connect(args.target_url, target_creds)

    if _exists(export) and not args.re_export:
        print(f"copy: 1/4 export: reusing {export} (--re-export to fetch it again)")
    else:
        request = export_request(args.org_ids, args.excluded_org_ids, args.with_passwords, args.with_otp,
                                 args.export_timeout)
        print("copy: 1/4 " + export_document(source, request, export).text())
    sys.stdout.flush()

    if _split_is_current(manifest, export, args.batch_size, timeout):
        print(f"copy: 2/4 split: {manifest} is current, reused")
    else:
        result = split_export(export, output, timeout=timeout, batch_size=args.batch_size)
        print("copy: 2/4 split:\n" + result.summary())
        if not result.holds:
            return 3
    sys.stdout.flush()

    # The ledger is rewritten atomically, so it stays local: beside a gs:// work dir's name here.
    results = args.results or (_join(work, "importBody.results") if not work.startswith("gs://")
                               else f"{posixpath.basename(work) or 'copy'}.importBody.results")
    report = push_manifest(manifest, target.base_url, target_creds, results_dir=results,
                           concurrency=args.concurrency, progress=not args.quiet, verify=True, client=target)
    print("copy: 3/4 push:\n" + report.table())
    if report.verify is None:
        print("copy: 4/4 verify: not run (the push stopped)")
        return 1
    print("copy: 4/4 verify:\n" + report.verify.table())
    expected, missing = check_machine_users(manifest, target)
    if expected:
        print(f"verify: machine users {expected - len(missing)}/{expected} added"
              + (f"; missing: {', '.join(missing[:5])}" if missing else ""))
    return 0 if report.ok and not missing else 1


def check_machine_users(manifest_path: str, client) -> tuple[int, list[str]]:
    """Machine users of the bodies against ``user.machine.added`` events (verify checks humans).

    Returns (expected count, missing ids).
    """
    from pipeline.push import load_manifest, read_body

    per_org: dict[str, list[str]] = {}
    for ref in load_manifest(manifest_path).bodies:
        body = json.loads(read_body(ref))
        data = body.get("dataOrgsv1") or body.get("data_orgsv1") or {}
        for org in data.get("orgs") or []:
            for user in org.get("machineUsers") or []:
                per_org.setdefault(str(org.get("orgId", "")), []).append(str(user.get("userId", "")))
    missing: list[str] = []
    for org_id, ids in per_org.items():
        try:
            added = {str(e.get("aggregate", {}).get("id", ""))
                     for e in client.iter_events(["user.machine.added"], resource_owner=org_id)}
        except admin_api.AdminApiError as err:
            raise ConfigError(f"events search failed for org {org_id}: {err.message}") from None
        missing += [u for u in ids if u not in added]
    return sum(len(v) for v in per_org.values()), missing
