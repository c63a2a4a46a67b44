"""``zitadel-beam export``: write a ZITADEL instance's organizations as an export document.

Examples::

    ZITADEL_TOKEN=$(cat source-pat.txt) zitadel-beam export --url=https://source.zitadel.cloud \\
        --with-passwords --with-otp --output=work/export.json
    zitadel-beam export --url=... --token-file=pat --org-ids=1234,5678 --output=gs://B/export.json
    zitadel-beam export --url=... --token-file=pat --with-passwords \\
        --gcs-output=gs://B/exports/export.json --service-account=sa-writer.json

``POST /admin/v1/export`` (FACTS.md §1) with ``responseOutput`` answers with the document itself;
it is written exactly as it came, mode 0600 (with ``--with-passwords`` it holds password hashes),
then read once as a stream to check it is a complete export and to count what it holds.
``--gcs-output`` instead asks the server to write the document to the bucket itself
(``gcsOutput``, the service-account file base64-encoded), for exports too large to pass through
this client; the account needs Storage Object Creator on the bucket.

The export does not carry: global (instance) policies, IAM members, global IdPs, global
second/multi factors, machine keys, personal access tokens, passkeys, deactivated states of
orgs and users, or event history (see docs/instance-moves.md).
"""
from __future__ import annotations

import argparse
import base64
import dataclasses
import io
import json
import sys
import time
from typing import Any

from pipeline.durations import normalise_duration, parse_duration
from pipeline.errors import ConfigError
from transforms import admin_api
from transforms.admin_api import AdminClient

__all__ = ["add_arguments", "run", "export_document", "ExportSummary", "split_gcs_url", "read_service_account",
           "export_request"]

_CLIENT_MARGIN = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pipeline.push import add_credential_arguments

    parser.add_argument("--url", required=True, help="the source instance's base URL, e.g. https://x.zitadel.cloud")
    parser.add_argument("--output", help="where the document goes: a local path or gs:// (mode 0600)")
    parser.add_argument("--gcs-output", help="instead of --output: gs://bucket/path the *server* writes to")
    parser.add_argument("--service-account",
                        help="service-account JSON key file for --gcs-output (sent base64-encoded)")
    parser.add_argument("--org-ids", help="comma-separated org ids to export (default: every org)")
    parser.add_argument("--excluded-org-ids", help="comma-separated org ids to leave out")
    parser.add_argument("--with-passwords", action="store_true", help="include password hashes")
    parser.add_argument("--with-otp", action="store_true", help="include users' OTP secrets")
    parser.add_argument("--timeout", default="30m0s",
                        help="server-side timeout of the export, a Go duration (default 30m0s)")
    add_credential_arguments(parser)


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    del pipeline_args
    from pipeline.push import connect, credentials_from_args

    if bool(known_args.output) == bool(known_args.gcs_output):
        raise ConfigError("give either --output or --gcs-output")
    request = export_request(known_args.org_ids, known_args.excluded_org_ids, known_args.with_passwords,
                             known_args.with_otp, known_args.timeout, known_args.gcs_output,
                             known_args.service_account)
    client = connect(known_args.url, credentials_from_args(known_args))
    summary = export_document(client, request, known_args.output)
    print(summary.text())
    return 0


def split_gcs_url(url: str, flag: str) -> tuple[str, str]:
    """``gs://bucket/a/b.json`` → ``("bucket", "a/b.json")``; ConfigError otherwise."""
    if not url.startswith("gs://") or "/" not in url[5:] or url.endswith("/"):
        raise ConfigError(f"{flag} {url!r} must be gs://BUCKET/PATH")
    bucket, _, path = url[5:].partition("/")
    if not bucket or not path:
        raise ConfigError(f"{flag} {url!r} must be gs://BUCKET/PATH")
    return bucket, path


def read_service_account(path: str | None, flag: str) -> str:
    """The key file, checked to be a service-account JSON, base64-encoded (``serviceaccountJson``)."""
    if not path:
        raise ConfigError(f"{flag} needs --service-account=FILE (a service-account JSON key)")
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as err:
        raise ConfigError(f"--service-account {path}: {err.strerror or err}") from None
    try:
        key = json.loads(raw)
    except ValueError:
        raise ConfigError(f"--service-account {path} is not JSON") from None
    if not isinstance(key, dict) or key.get("type") != "service_account" or not key.get("client_email"):
        raise ConfigError(f"--service-account {path} is not a service-account key file "
                          "(type service_account with client_email)")
    return base64.b64encode(raw).decode()


def _ids(text: str | None) -> list[str]:
    ids = [part.strip() for part in (text or "").split(",") if part.strip()]
    for org_id in ids:
        if not org_id.isalnum():
            raise ConfigError(f"org id {org_id!r} is not an id (digits, comma-separated)")
    return ids


def export_request(org_ids: str | None, excluded: str | None, with_passwords: bool, with_otp: bool,
                   timeout: str, gcs_output: str | None = None, service_account: str | None = None) -> dict:
    """The ExportDataRequest for the flags (ConfigError for bad ones)."""
    try:
        timeout = normalise_duration(timeout)
    except ValueError as err:
        raise ConfigError(f"--timeout: {err}") from None
    request: dict[str, Any] = {"timeout": timeout}
    if _ids(org_ids):
        request["orgIds"] = _ids(org_ids)
    if _ids(excluded):
        request["excludedOrgIds"] = _ids(excluded)
    if with_passwords:
        request["withPasswords"] = True
    if with_otp:
        request["withOtp"] = True
    if gcs_output:
        bucket, path = split_gcs_url(gcs_output, "--gcs-output")
        request["gcsOutput"] = {"path": path, "bucket": bucket,
                                "serviceaccountJson": read_service_account(service_account, "--gcs-output")}
    else:
        request["responseOutput"] = True
    return request


@dataclasses.dataclass
class ExportSummary:
    where: str
    size: int
    seconds: float
    counts: dict[str, int]
    server_side: bool = False

    def text(self) -> str:
        if self.server_side:
            return (f"export: the server wrote the document to {self.where} ({self.seconds:.1f} s); "
                    f"next: zitadel-beam migrate zitadel --export={self.where} ...")
        c = self.counts
        return (f"export: {self.where}: {self.size:,} bytes, {c.get('orgs', 0)} org(s), "
                f"{c.get('humanUsers', 0):,} human and {c.get('machineUsers', 0):,} machine user(s), "
                f"{c.get('userMetadata', 0):,} metadata, {c.get('userGrants', 0):,} grant(s) "
                f"({self.seconds:.1f} s)")


def count_document(data: bytes) -> dict[str, int]:
    """Stream the document once: check it is a complete export and count its items per field."""
    from transforms.zitadel_export import iter_export

    counts: dict[str, int] = {"orgs": 0}
    for _, field, _, is_item in iter_export(io.BytesIO(data)):
        if field == "":
            counts["orgs"] += 1
        elif is_item:
            counts[field] = counts.get(field, 0) + 1
    return counts


def export_document(client: AdminClient, request: dict, output: str | None) -> ExportSummary:
    """Run the export and write it (``responseOutput``), or let the server write it (``gcsOutput``)."""
    from transforms.zitadel_export import ExportFormatError

    seconds = parse_duration(request.get("timeout", "30m0s")) + _CLIENT_MARGIN
    started = time.monotonic()
    if output is not None:
        from pipeline.migrate import check_gcs_reachable, check_local_outputs

        check_gcs_reachable([output])
        check_local_outputs({"--output": output})
    try:
        data = client.export_document(request, client_timeout=seconds)
    except admin_api.AuthError as err:
        raise ConfigError(f"{client.base_url}: export not allowed: {err.message}") from None
    except admin_api.AdminApiError as err:
        raise ConfigError(f"{client.base_url}: export failed: {err.message}") from None
    elapsed = time.monotonic() - started
    gcs = request.get("gcsOutput")
    if gcs:
        return ExportSummary(f"gs://{gcs['bucket']}/{gcs['path']}", 0, elapsed, {}, server_side=True)
    try:
        counts = count_document(data)
    except ExportFormatError as err:
        if data.strip() in (b"{}", b""):
            raise ConfigError(f"{client.base_url}: the export is empty (no organization matched)") from None
        raise ConfigError(f"{client.base_url}: the answer is not a complete export document ({err})") from None
    from transforms.sinks import open_private

    assert output is not None
    with open_private(output) as handle:
        handle.write(data)
    sys.stdout.flush()
    return ExportSummary(output, len(data), elapsed, counts)
