"""Clerk as the tool below the command line sees it: its counters, record kind, export shapes and
accounting (docs/clerk.md). ``command.py`` declares the command; ``read.py`` reads the files.

Example::

    KIND.records["clerk-user"].blocked(b'{"id":"user_1","banned":true}')  # True
    clerk_csv(b"id,first_name,last_name,username,primary_email_address,...")  # True
"""

from __future__ import annotations

import csv
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

__all__ = ["KIND", "PREFIX", "SOURCE", "blocked", "clerk_csv", "invariant"]

PREFIX = source_name(__name__)  # "clerk": the source's name, of the names below
SOURCE = f"{PREFIX}-user"  # the source of a user's rows and dead letters
FILE_SOURCE = f"{PREFIX}-file"  # the dead letter of a file's unreadable rest
USERS_READ = f"{PREFIX}.users_read"
USERS_MAPPED = f"{PREFIX}.users_mapped"  # passed mapping and validation (written or duplicate)
UNREADABLE_FILES = f"{PREFIX}.unreadable_files"
FILES = f"{PREFIX}.files."  # + csv / json
HASHERS = f"{PREFIX}.password_hasher."  # + Clerk's hasher name, of users mapped with a digest
NO_PASSWORD = f"{PREFIX}.no_password_in_export"
AWSCOGNITO = f"{PREFIX}.awscognito_no_password"  # Clerk's Cognito marker: not a hash, no password
PASSWORD_DROPPED = f"{PREFIX}.password_dropped."  # + reason: imported without it (reset list)
BLOCKED_WRITTEN = f"{PREFIX}.blocked_written"  # banned or locked users read (--include-blocked, --state)
PRIMARY_CHOSEN = f"{PREFIX}.primary_email_chosen"  # no primary named: the first address taken
OTHER_EMAILS = f"{PREFIX}.other_emails_not_carried"  # users written with more addresses than one
OTHER_PHONES = f"{PREFIX}.other_phones_not_carried"
OTP_NOT_CARRIED = f"{PREFIX}.otp_not_carried."  # + cause (transforms/mapping/otp.py)
IDP_LINKS = f"{PREFIX}.idp_links."  # + outcome + "." + provider
METADATA_ENTRIES = f"{PREFIX}.metadata_entries"
METADATA_DROPPED = f"{PREFIX}.metadata_dropped"  # the summary's "metadata entries dropped (limits)"

# The Dashboard CSV's columns that tell it (docs/clerk.md#the-dashboard-csv).
CSV_MARKS = frozenset(
    {"password_digest", "password_hasher", "primary_email_address", "verified_email_addresses"}
)
# The JSON exports' keys that tell a Clerk user (the support export's, the migration tool's, the CLI's).
JSON_MARKS = ("password_hasher", "password_digest", "primary_email_address", "verified_email_addresses")


def _truthy(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"))


def blocked(record: Mapping[str, object]) -> bool:
    """Banned or locked at Clerk (the Backend API's ``banned`` / ``locked``; "true" in a CSV)."""
    return _truthy(record.get("banned")) or _truthy(record.get("locked"))


def _blocked(record_json: bytes) -> bool:
    if b'"banned"' not in record_json and b'"locked"' not in record_json:  # most users, unparsed
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and blocked(record)


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("id")
    return [user_id.strip()] if isinstance(user_id, str) and user_id.strip() else None


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    if "clerkMigrate" in keys:
        return "clerk-users", 'a "clerkMigrate" envelope (clerk migrate export)'
    for key in JSON_MARKS:
        if key in keys:
            return "clerk-users", f'records with "{key}"'
    if "email_addresses" in keys and "id" in keys:
        return "clerk-users", 'records with "id" and "email_addresses"'
    return None


def clerk_csv(head: bytes) -> bool:
    """Whether ``head`` starts with a Clerk Dashboard export's header: ``id`` and a Clerk column."""
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace")
    names = {cell.strip() for cell in next(csv.reader([first]), [])}
    return "id" in names and bool(names & CSV_MARKS)


KIND = SourceKind(
    name=PREFIX,
    records={
        SOURCE: UserRecordKind(blocked=_blocked, ids=_ids, reason=Reason.BLOCKED, flag="--include-blocked"),
        FILE_SOURCE: UNREADABLE_FILE,
    },
    shapes=FileShapes(
        shapes={"clerk-users": Shape(what="a Clerk user export")},
        readers={"clerk-users": ("clerk-users",)},
        identify=_identify,
        rank=40,  # narrow marks: before Auth0's broad profile keys
        text=(TextShape(what="a Clerk Dashboard user export (CSV)", shape="clerk-users", matches=clerk_csv),),
    ),
    second_factors={OTP_NOT_CARRIED: "clerk.otp."},
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
