"""The Supabase source: ``auth.users`` (+ ``auth.identities``, ``auth.mfa_factors``) → ZITADEL import
bodies (docs/supabase.md). Here, what its command and reader share: counter names, record kinds,
file shapes.

Supabase has no user export of its own: its users are the ``auth.users`` table, written as CSV by
psql (``\\copy ... with (format csv, header)``) or by Studio's SQL editor, or as JSON by Studio
(docs/supabase.md). Files are told by their columns: ``encrypted_password`` for users,
``identity_data`` for identities, ``factor_type`` for MFA factors.

Example::

    KIND.records["supabase-user"].blocked(b'{"id":"u1","banned_until":"2124-01-01 00:00:00+00"}')  # True
    users_csv(b"instance_id,id,aud,role,email,encrypted_password,...")  # True
"""

from __future__ import annotations

import csv
import datetime
from collections.abc import Mapping

import orjson

from transforms.sources.declaration import source_name
from transforms.sources.source_counters import SourceCounters
from transforms.sources.source_parts import FileShapes, Shape, SourceKind, TextShape, user_records

__all__ = [
    "KIND",
    "COUNTERS",
    "PREFIX",
    "SOURCE",
    "FILE_SOURCE",
    "invariant",
    "banned",
    "users_csv",
    "identities_csv",
    "factors_csv",
    "text",
]

COUNTERS = SourceCounters(source_name(__name__))  # supabase-user, supabase.users_read, ...
PREFIX = COUNTERS.name  # the source's name: of the names below
SOURCE = COUNTERS.source  # the source of a user's rows and dead letters
FILE_SOURCE = COUNTERS.file_source  # the dead letter of a file's unreadable rest
USERS_READ = COUNTERS.users_read
USERS_MAPPED = COUNTERS.users_mapped  # passed mapping and validation (written or duplicate)
UNREADABLE_FILES = COUNTERS.unreadable_files
FILES = COUNTERS.own("files.")  # + csv / json
WITH_PASSWORD = COUNTERS.own("with_password.")  # + the hash form carried (bcrypt, argon2id, ...)
WITHOUT_PASSWORD = COUNTERS.own("without_password")  # encrypted_password '' (OAuth, magic link, invited)
PASSWORD_DROPPED = COUNTERS.own(
    "password_dropped."
)  # + reason (--on-unsupported-hash=import-without-password)
BANNED_WRITTEN = COUNTERS.own("banned_written")  # banned users read (--include-blocked, --state)
IDP_LINKS = COUNTERS.own("idp_links.")  # + outcome (linked, unmapped, invalid) + "." + provider
OTP_NOT_CARRIED = COUNTERS.own("otp_not_carried.")  # + cause (unverified, encrypted, phone, webauthn, ...)
PHONE_PLUS_ADDED = COUNTERS.own("phone_plus_added")  # digits stored without '+', written as E.164
SIDE_ROWS = COUNTERS.own("side_rows.")  # + identities / mfa_factors: rows read from the side tables
SIDE_UNREADABLE = COUNTERS.own("side_unreadable.")  # + identities / mfa_factors: rows that did not read
SIDE_JOINED = COUNTERS.own("side_joined.")  # + identities / mfa_factors: rows of users written
METADATA_ENTRIES = COUNTERS.own("metadata_entries")
METADATA_DROPPED = COUNTERS.metadata_dropped  # the summary's "metadata entries dropped (limits)"
# A note (counted as notes.<name>): raw_*_meta_data that is not a JSON object, read as {}.
INVALID_METADATA = f"{PREFIX}-invalid-metadata"

# Studio's CSV writes SQL NULL as the text ``null`` (JSON.stringify(null)); psql writes an empty cell.
NULL = "null"


def text(record: Mapping[str, object], key: str) -> str:
    """A column's value as text, ``""`` for SQL NULL in any of the three forms."""
    value = record.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        value = value.strip()
        return "" if value == NULL else value
    if isinstance(value, bool):
        return "t" if value else "f"
    return str(value)


def timestamp(value: str) -> datetime.datetime | None:
    """PostgreSQL's timestamptz text (``2024-02-11 08:14:03.5122+00``) or ISO (``...T...+00:00``);
    ``infinity`` as the largest time; None when it is neither."""
    if value == "infinity":
        return datetime.datetime.max.replace(tzinfo=datetime.UTC)
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)


def banned(record: Mapping[str, object], now: datetime.datetime | None = None) -> bool:
    """``User.IsBanned()``: ``banned_until`` set and in the future. A value that is not a time
    counts as banned (a user is never let in on a value we cannot read)."""
    until = text(record, "banned_until")
    if not until:
        return False
    moment = timestamp(until)
    return moment is None or moment > (now or datetime.datetime.now(datetime.UTC))


def _blocked(record_json: bytes) -> bool:
    if b'"banned_until"' not in record_json:
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and banned(record)


def _ids(record: dict, realm: str | None) -> list[str] | None:
    """The user's id. A soft-deleted user is gone at Supabase: its id is named as one ZITADEL
    cannot hold, so the sync finds no user to leave alone and treats it as removed
    (``--on-removed``); an empty list would mean the same but the compare needs one partition."""
    user_id = text(record, "id")
    if not user_id:
        return None
    return [f"{user_id} (deleted at Supabase)"] if text(record, "deleted_at") else [user_id]


def _header(head: bytes) -> set[str]:
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace").strip("\r")
    return {cell.strip().casefold() for cell in next(csv.reader([first]), [])}


def users_csv(head: bytes) -> bool:
    """Whether ``head`` starts with the header of an ``auth.users`` CSV (psql's or Studio's)."""
    return {"id", "encrypted_password"} <= _header(head)


def identities_csv(head: bytes) -> bool:
    """Whether ``head`` starts with the header of an ``auth.identities`` CSV."""
    return {"user_id", "provider", "identity_data"} <= _header(head)


def factors_csv(head: bytes) -> bool:
    """Whether ``head`` starts with the header of an ``auth.mfa_factors`` CSV."""
    return {"user_id", "factor_type", "secret"} <= _header(head)


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    if "encrypted_password" in keys and "raw_user_meta_data" in keys:
        return "supabase-users", 'an "encrypted_password" and a "raw_user_meta_data" key'
    if "identity_data" in keys and "provider" in keys and "user_id" in keys:
        return "supabase-identities", 'an "identity_data" key'
    if "factor_type" in keys and "user_id" in keys:
        return "supabase-mfa-factors", 'a "factor_type" key'
    return None


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """users read = written + dead-lettered (banned among them); users mapped = written + duplicates."""
    return COUNTERS.invariant(counts, refused_label="banned")


_USERS = "an auth.users table of Supabase (CSV or Studio's JSON)"
_IDENTITIES = "an auth.identities table of Supabase"
_FACTORS = "an auth.mfa_factors table of Supabase"

KIND = SourceKind(
    name=PREFIX,
    records=user_records(COUNTERS, blocked=_blocked, ids=_ids),
    shapes=FileShapes(
        shapes={
            "supabase-users": Shape(what=_USERS),
            "supabase-identities": Shape(what=_IDENTITIES),
            "supabase-mfa-factors": Shape(what=_FACTORS),
        },
        readers={
            "supabase-users": ("supabase-users",),
            "supabase-identities": ("supabase-identities",),
            "supabase-mfa-factors": ("supabase-mfa-factors",),
        },
        identify=_identify,
        rank=30,
        text=(
            TextShape(
                what="an auth.users table of Supabase (CSV)", shape="supabase-users", matches=users_csv
            ),
            TextShape(what=f"{_IDENTITIES} (CSV)", shape="supabase-identities", matches=identities_csv),
            TextShape(what=f"{_FACTORS} (CSV)", shape="supabase-mfa-factors", matches=factors_csv),
        ),
    ),
    second_factors={OTP_NOT_CARRIED: f"{PREFIX}.otp."},
)

# The counters the summary reads that the reader adds to (named here so both agree).
CANNOT_SIGN_IN = COUNTERS.cannot_sign_in
