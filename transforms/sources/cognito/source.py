"""Cognito as the tool below the command line sees it: its record kind, its files, its counters.

The command's half is ``command.py`` (``DESCRIPTION``, which the registry finds); ``read.py``
writes the counters named here. Example::

    KIND.records["cognito-user"].blocked(b'{"Username": "u1", "Enabled": false}')  # True
    cognito_csv(b"name,email,cognito:mfa_enabled,cognito:username")  # True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import orjson

from transforms.common.accounting import reader_invariant
from transforms.common.reasons import Reason
from transforms.sources.declaration import source_name
from transforms.sources.source_parts import (
    UNREADABLE_FILE,
    FileShapes,
    Shape,
    SourceKind,
    TextShape,
    UserRecordKind,
)

__all__ = ["KIND", "CognitoFile", "cognito_csv", "invariant"]

PREFIX = source_name(__name__)  # the source's name: of the counters below
SOURCE = f"{PREFIX}-user"  # the source of a user's rows and dead letters
FILE_SOURCE = f"{PREFIX}-file"  # the dead letter of a file's unreadable rest
USERS_READ = f"{PREFIX}.users_read"
USERS_MAPPED = f"{PREFIX}.users_mapped"  # passed mapping and validation (written or duplicate)
UNREADABLE_FILES = f"{PREFIX}.unreadable_files"
FILES = f"{PREFIX}.files."  # + format (json, csv): files read
STATUS = f"{PREFIX}.status."  # + UserStatus of a user mapped (CONFIRMED, UNCONFIRMED, ...)
# FORCE_CHANGE_PASSWORD, RESET_REQUIRED: Cognito asks for a new password, there is none to mark.
CHANGE_NOT_MARKED = f"{PREFIX}.password_change_not_marked"
BLOCKED_WRITTEN = f"{PREFIX}.blocked_written"  # Enabled false (or ARCHIVED, COMPROMISED) read
IDP_LINKS = f"{PREFIX}.idp_links."  # + outcome (linked, unmapped, invalid) + "." + providerName
METADATA_DROPPED = f"{PREFIX}.metadata_dropped"  # the summary's "metadata entries dropped (limits)"

# UserStatus values of a user who cannot sign in at Cognito (Enabled false is the other mark).
BLOCKED_STATUS = frozenset({"ARCHIVED", "COMPROMISED"})
JSON, CSV = "json", "csv"


@dataclasses.dataclass(frozen=True)
class CognitoFile:
    """A planned input file: its sort-key ``index``, ``path`` and ``format`` (json, csv)."""

    index: int
    path: str
    format: str


def _blocked(record_json: bytes) -> bool:
    record = orjson.loads(record_json)
    return isinstance(record, dict) and (
        record.get("Enabled") is False or str(record.get("UserStatus", "")).upper() in BLOCKED_STATUS
    )


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("Username", record.get("cognito:username"))
    return [user_id] if isinstance(user_id, str) and user_id.strip() else None


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    if keys.get("Users") == "start_array":
        return "cognito-users", 'a top-level "Users" array (aws cognito-idp list-users)'
    if keys.get("CSVHeader") == "start_array":
        return "cognito-csv-header", 'a top-level "CSVHeader"'
    return None


def cognito_csv(head: bytes) -> bool:
    """Whether ``head`` starts with a header of get-csv-header's columns (``cognito:username``)."""
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace")
    return "cognito:username" in {cell.strip() for cell in first.split(",")}


KIND = SourceKind(
    name=PREFIX,
    records={
        SOURCE: UserRecordKind(blocked=_blocked, ids=_ids, reason=Reason.BLOCKED, flag="--include-blocked"),
        FILE_SOURCE: UNREADABLE_FILE,
    },
    shapes=FileShapes(
        shapes={
            "cognito-users": Shape(what="an AWS Cognito user export (list-users JSON or its CSV)"),
            "cognito-csv-header": Shape(
                what="the answer of aws cognito-idp get-csv-header (a header, no users)",
                takes="no command reads it: migrate cognito --users reads the CSV written under it",
            ),
        },
        readers={"cognito-users": ("cognito-users",)},
        identify=_identify,
        rank=40,
        text=(TextShape(what="an AWS Cognito user CSV", shape="cognito-users", matches=cognito_csv),),
    ),
)


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """users read = written + dead-lettered; users mapped = written + dropped as duplicates."""
    return reader_invariant(
        counts,
        read=counts.get(USERS_READ, 0),
        noun="users",
        source=SOURCE,
        passed=counts.get(USERS_MAPPED, 0),
        passed_label="mapped",
        refused_label="blocked",
    )
