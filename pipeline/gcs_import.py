"""``zitadel-beam push --gcs-document``: import an export document that already sits in a bucket.

Examples::

    zitadel-beam push --url=https://target.zitadel.cloud --token-file=pat \\
        --gcs-document=gs://B/exports/export.json --service-account=sa-reader.json --verify --wait=30m

The request is ``dataOrgsv1Gcs`` (FACTS.md §1, seed §4.1 variant C): ``{bucket, path,
serviceaccountJson}`` with the key file base64-encoded; the account needs Storage Object Viewer.
The server answers **at once with an empty body** and runs the import detached, until the
request's ``--timeout``: there is no per-user result, no error list, and a failure shows only in
the server's logs. ``verify`` is therefore the only proof: with ``--verify`` this command reads the
document itself (streamed, through the local Google credentials) for the human user ids, then
polls events search until every one of them has a ``user.human.added`` event or ``--wait`` runs
out. The document is sent as one import: split large ones with ``migrate zitadel`` and push the
bodies instead when the server-side timeout would not suffice.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from pipeline.errors import ConfigError
from transforms import admin_api

__all__ = ["add_gcs_arguments", "run_gcs_push", "document_user_ids", "gcs_import_request"]

USER_ADDED = "user.human.added"


def add_gcs_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("import a document from GCS instead (dataOrgsv1Gcs; the server runs it detached)")
    group.add_argument("--gcs-document", help="gs://bucket/path of an export document (instead of --manifest)")
    group.add_argument("--service-account", help="service-account JSON key the *server* reads the bucket with")
    group.add_argument("--timeout", default="30m0s", help="server-side timeout of the detached import (default 30m0s)")
    group.add_argument("--wait", default="10m0s",
                       help="with --verify: how long to poll events search for the users (default 10m0s)")
    group.add_argument("--poll-interval", type=float, default=10.0, help="seconds between verify polls (default 10)")


def gcs_import_request(gcs_document: str, service_account: str | None, timeout: str) -> dict:
    from pipeline.durations import normalise_duration
    from pipeline.export import read_service_account, split_gcs_url

    bucket, path = split_gcs_url(gcs_document, "--gcs-document")
    try:
        timeout = normalise_duration(timeout)
    except ValueError as err:
        raise ConfigError(f"--timeout: {err}") from None
    return {"dataOrgsv1Gcs": {"bucket": bucket, "path": path,
                              "serviceaccountJson": read_service_account(service_account, "--gcs-document")},
            "timeout": timeout}


def document_user_ids(path: str) -> dict[str, list[str]]:
    """org id → human user ids of an export document (local or gs://), streamed."""
    from apache_beam.io.filesystems import FileSystems

    from pipeline.migrate import check_gcs_reachable
    from transforms.zitadel_export import ExportFormatError, iter_export

    check_gcs_reachable([path])
    per_org: dict[str, list[str]] = {}
    org_of: dict[int, str] = {}
    users: dict[int, list[str]] = {}
    try:
        with FileSystems.open(path) as handle:
            for pos, field, value, is_item in iter_export(handle):
                if field == "orgId":
                    org_of[pos] = str(value)
                elif field == "humanUsers" and is_item and isinstance(value, dict) and value.get("userId"):
                    users.setdefault(pos, []).append(str(value["userId"]))
                elif field == "":
                    per_org.setdefault(org_of.get(pos, ""), []).extend(users.pop(pos, []))
    except ExportFormatError as err:
        raise ConfigError(f"--gcs-document {path}: {err}") from None
    except (OSError, ValueError) as err:  # not found, no access
        raise ConfigError(f"--gcs-document {path}: cannot read it ({str(err).splitlines()[0][:200]})") from None
    return per_org


def _check(client: admin_api.AdminClient, expected: dict[str, list[str]]):
    from pipeline.verify import OrgCheck, VerifyReport

    checks = []
    for org_id, ids in expected.items():
        added = {str(e.get("aggregate", {}).get("id", ""))
                 for e in client.iter_events([USER_ADDED], resource_owner=org_id)}
        wanted = set(ids)
        checks.append(OrgCheck(org_id, len(wanted), len(wanted & added), [u for u in ids if u not in added],
                               sorted(added - wanted)))
    return VerifyReport(checks)


def run_gcs_push(known_args: argparse.Namespace) -> int:
    """``push --gcs-document``: send the request, then (``--verify``) poll until the users are there."""
    from pipeline.durations import parse_duration
    from pipeline.push import connect, credentials_from_args

    if known_args.manifest or known_args.body:
        raise ConfigError("give --gcs-document or --manifest/--body, not both")
    request = gcs_import_request(known_args.gcs_document, known_args.service_account, known_args.timeout)
    try:
        wait = parse_duration(known_args.wait)
    except ValueError as err:
        raise ConfigError(f"--wait: {err}") from None
    expected = document_user_ids(known_args.gcs_document) if known_args.verify else {}
    client = connect(known_args.url, credentials_from_args(known_args))
    try:
        answer = client.import_data(json.dumps(request).encode(), 60.0)
    except admin_api.AdminApiError as err:
        raise ConfigError(f"{client.base_url}: the import request was refused: {err.message}") from None
    print(f"push: {client.base_url} accepted {known_args.gcs_document} for a detached import "
          f"(timeout {request['timeout']}); the server returns no per-user result"
          + (f" (answer: {json.dumps(answer)[:200]})" if answer else ""))
    if not known_args.verify:
        print("push: run `zitadel-beam push --gcs-document=... --verify` or check the users in the target: "
              "verify is the only proof that the import worked")
        return 0
    total = sum(len(v) for v in expected.values())
    deadline = time.monotonic() + wait
    while True:
        report = _check(client, expected)
        if report.ok or time.monotonic() >= deadline:
            break
        if not known_args.quiet:
            print(f"verify: {report.created}/{total} users added so far; polling", file=sys.stderr, flush=True)
        time.sleep(min(known_args.poll_interval, max(deadline - time.monotonic(), 0.0)))
    print(report.table())
    return 0 if report.ok else 1
