"""Moving organizations between instances: export, server-side (gs://) import, copy bookkeeping.

``POST /admin/v1/export`` returns an export document (or writes it to a bucket), and
``POST /admin/v1/import`` with ``dataOrgsv1Gcs`` imports one the server reads from a bucket
itself, detached, with no per-user answer (``docs/instance-moves.md``). The commands ``export``,
``copy`` and ``push --gcs-document`` call these functions.

Example::

    request = export_request(None, None, with_passwords=True, with_otp=False, timeout="30m")
    summary = export_document(client, request, "out/export.json")
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import sys
import time
from typing import Any

from transforms.common.durations import flag_duration, parse_duration
from transforms.common.errors import ConfigError
from transforms.files.storage import (
    check_gcs_reachable,
    check_local_outputs,
    exists,
    open_private,
    read_bytes,
    size,
    split_gcs_url,
)
from transforms.output.manifest import load_manifest, read_body
from transforms.push.verification import MACHINE_ADDED, check_orgs
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient

__all__ = [
    "COPY_EXPORT_NAME",
    "COPY_BODY_NAME",
    "COPY_LOCK_NAME",
    "read_service_account",
    "export_request",
    "ExportSummary",
    "count_document",
    "export_document",
    "gcs_import_request",
    "document_user_ids",
    "split_is_current",
    "check_machine_users",
    "CLIENT_MARGIN",
]

# What `copy` keeps in its --work-dir (pipeline/copy_instance.py; the preflight lists them too).
COPY_EXPORT_NAME = "export.json"
COPY_BODY_NAME = "importBody.json"
COPY_LOCK_NAME = "copy.lock"
CLIENT_MARGIN = 30.0  # seconds the client waits beyond the export's server-side timeout


def read_service_account(path: str | None, flag: str) -> str:
    """The key file, checked to be a service-account JSON, base64-encoded (``serviceaccountJson``)."""
    if not path:
        raise ConfigError(f"{flag} needs --service-account=FILE (a service-account JSON key)")
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as err:
        raise ConfigError(
            f"cannot read the --service-account file: {err.strerror or err} (the name given is not "
            "shown: it may be a secret)"
        ) from None
    try:
        key = json.loads(raw)
    except ValueError:
        raise ConfigError("the --service-account file is not JSON") from None
    if not isinstance(key, dict) or key.get("type") != "service_account" or not key.get("client_email"):
        raise ConfigError(
            "the --service-account file is not a service-account key file "
            "(type service_account with client_email)"
        )
    return base64.b64encode(raw).decode()


def _ids(text: str | None) -> list[str]:
    ids = [part.strip() for part in (text or "").split(",") if part.strip()]
    for org_id in ids:
        if not org_id.isalnum():
            raise ConfigError(f"org id {org_id!r} is not an id (digits, comma-separated)")
    return ids


def export_request(
    org_ids: str | None,
    excluded: str | None,
    with_passwords: bool,
    with_otp: bool,
    timeout: str,
    gcs_output: str | None = None,
    service_account: str | None = None,
) -> dict:
    """The ExportDataRequest for the flags (ConfigError for bad ones)."""
    timeout = flag_duration("--timeout", timeout)
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
        request["gcsOutput"] = {
            "path": path,
            "bucket": bucket,
            "serviceaccountJson": read_service_account(service_account, "--gcs-output"),
        }
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
            return (
                f"export: the server wrote the document to {self.where} ({self.seconds:.1f} s); "
                f"next: zitadel-beam migrate zitadel --export={self.where} ..."
            )
        c = self.counts
        return (
            f"export: {self.where}: {self.size:,} bytes, {c.get('orgs', 0)} org(s), "
            f"{c.get('humanUsers', 0):,} human and {c.get('machineUsers', 0):,} machine user(s), "
            f"{c.get('userMetadata', 0):,} metadata, {c.get('userGrants', 0):,} grant(s) "
            f"({self.seconds:.1f} s)"
        )


def count_document(data: bytes) -> dict[str, int]:
    """Stream the document once: check it is a complete export and count its items per field."""
    from transforms.sources.zitadel.export_reader import iter_export

    counts: dict[str, int] = {"orgs": 0}
    for _, field, _, is_item in iter_export(io.BytesIO(data)):
        if field == "":
            counts["orgs"] += 1
        elif is_item:
            counts[field] = counts.get(field, 0) + 1
    return counts


def export_document(client: AdminClient, request: dict, output: str | None) -> ExportSummary:
    """Run the export and write it (``responseOutput``), or let the server write it (``gcsOutput``)."""
    from transforms.sources.zitadel.export_reader import ExportFormatError

    seconds = parse_duration(request.get("timeout", "30m0s")) + CLIENT_MARGIN
    started = time.monotonic()
    if output is not None:
        check_gcs_reachable([output])
        check_local_outputs({"--output": output})
    try:
        data = client.export_document(request, client_timeout=seconds)
    except api_errors.AuthError as err:
        raise ConfigError(f"{client.base_url}: export not allowed: {err.message}") from None
    except api_errors.AdminApiError as err:
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
        raise ConfigError(
            f"{client.base_url}: the answer is not a complete export document ({err})"
        ) from None
    assert output is not None
    with open_private(output) as handle:
        handle.write(data)
    sys.stdout.flush()
    return ExportSummary(output, len(data), elapsed, counts)


def gcs_import_request(gcs_document: str, service_account: str | None, timeout: str) -> dict:
    bucket, path = split_gcs_url(gcs_document, "--gcs-document")
    timeout = flag_duration("--timeout", timeout)
    return {
        "dataOrgsv1Gcs": {
            "bucket": bucket,
            "path": path,
            "serviceaccountJson": read_service_account(service_account, "--gcs-document"),
        },
        "timeout": timeout,
    }


def document_user_ids(path: str) -> dict[str, list[str]]:
    """org id → human user ids of an export document (local or gs://), streamed."""
    from apache_beam.io.filesystems import FileSystems

    from transforms.sources.zitadel.export_reader import ExportFormatError, iter_export

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
        raise ConfigError(
            f"--gcs-document {path}: cannot read it ({str(err).splitlines()[0][:200]})"
        ) from None
    return per_org


def split_is_current(manifest_path: str, export: str, batch_size: int, timeout: str) -> bool:
    """A manifest from an earlier run of the same export and settings (skip the split)."""
    if not exists(manifest_path):
        return False
    try:
        manifest = json.loads(read_bytes(manifest_path))
    except (OSError, ValueError):
        return False
    return (
        manifest.get("source") == "zitadel"
        and manifest.get("export_bytes") == size(export)
        and manifest.get("batch_size") == batch_size
        and manifest.get("timeout") == timeout
        and (manifest.get("invariant") or {}).get("holds") is True
    )


def check_machine_users(manifest_path: str, client) -> tuple[int, list[str]]:
    """Machine users of the bodies against ``user.machine.added`` events (verify checks humans).

    Returns (expected count, missing ids).
    """
    per_org: dict[str, list[str]] = {}
    for ref in load_manifest(manifest_path).bodies:
        body = json.loads(read_body(ref))
        data = body.get("dataOrgsv1") or body.get("data_orgsv1") or {}
        for org in data.get("orgs") or []:
            for user in org.get("machineUsers") or []:
                per_org.setdefault(str(org.get("orgId", "")), []).append(str(user.get("userId", "")))
    report = check_orgs(client, per_org, MACHINE_ADDED)
    missing = report.missing
    return sum(len(v) for v in per_org.values()), missing
