"""The ASP.NET Identity source: ``AspNetUsers`` (+ logins, tokens, claims) → ZITADEL import bodies
(docs/aspnet.md). Here, what its command and reader share: its counter names, its record kind (a
user locked out at the source) and the shapes of the tables it reads.

ASP.NET Identity has no export of its own: its tables are saved as CSV by a database tool, and a
table is told by its header (docs/aspnet.md): ``NormalizedUserName`` and ``LockoutEnd`` for ASP.NET
Core Identity's ``AspNetUsers``, ``LockoutEndDateUtc`` for Identity 2's, and the side tables by
their own columns. Names are compared without regard to case, spaces or underscores.

Example::

    table_of(b"Id,UserName,NormalizedUserName,Email,LockoutEnd")  # "core"
    KIND.records["aspnet-user"].blocked(b'{"id":"u1","locked":true,"record":{}}')  # True
"""

from __future__ import annotations

import csv

import orjson

from transforms.sources.csv_rows import detect_delimiter
from transforms.sources.declaration import source_name
from transforms.sources.source_counters import SourceCounters
from transforms.sources.source_parts import FileShapes, Shape, SourceKind, TextShape, user_records

__all__ = ["KIND", "COUNTERS", "TABLES", "WHAT", "key", "table_of"]

COUNTERS = SourceCounters(source_name(__name__))  # aspnet-user, aspnet.users_read, ...
PREFIX = COUNTERS.name  # the source's name: of the names below
SOURCE = COUNTERS.source  # the source of a user's rows and dead letters
FILE_SOURCE = COUNTERS.file_source  # the dead letter of a file's unreadable rest
USERS_READ = COUNTERS.users_read
USERS_MAPPED = COUNTERS.users_mapped  # passed mapping and validation (written or duplicate)
UNREADABLE_FILES = COUNTERS.unreadable_files
LAYOUT = COUNTERS.own("layout.")  # + core / identity2: the table's layout, per user read
WITH_PASSWORD = COUNTERS.own("with_password.")  # + the hash form (aspnet-identity-v3, ...)
WITHOUT_PASSWORD = COUNTERS.own("without_password")  # PasswordHash NULL (external logins only)
PASSWORD_DROPPED = COUNTERS.own("password_dropped.")  # + reason (--on-unsupported-hash)
LOCKED_WRITTEN = COUNTERS.own("locked_written")  # locked out at the source, read (--include-blocked, --state)
PHONE_NOT_CARRIED = COUNTERS.own("phone_not_carried.")  # + no-country-code / not-e164
IDP_LINKS = COUNTERS.own("idp_links.")  # + outcome (linked, unmapped, invalid) + "." + LoginProvider
OTP_NOT_CARRIED = COUNTERS.own("otp_not_carried.")  # + cause (two-factor-off, no-authenticator-key, ...)
SIDE_ROWS = COUNTERS.own("side_rows.")  # + logins/tokens/claims: side-table rows of the users read
CLAIMS_USED = COUNTERS.own("claims_used")  # AspNetUserClaims rows that gave a name or metadata
METADATA_ENTRIES = COUNTERS.own("metadata_entries")
METADATA_DROPPED = COUNTERS.metadata_dropped  # the summary's "metadata entries dropped (limits)"


def key(name: str) -> str:
    """A header cell as compared: case, spaces and underscores ignored (``LockoutEnd``,
    ``lockout_end`` of a snake-case naming convention)."""
    return name.strip().lower().replace("_", "").replace(" ", "")


# The tables read, by the columns (as :func:`key` gives them) that tell each apart.
TABLES: dict[str, frozenset[str]] = {
    "core": frozenset({"id", "username", "email", "normalizedusername", "lockoutend"}),
    "identity2": frozenset({"id", "username", "email", "lockoutenddateutc"}),
    "logins": frozenset({"loginprovider", "providerkey", "userid"}),
    "tokens": frozenset({"userid", "loginprovider", "name", "value"}),
    "claims": frozenset({"userid", "claimtype", "claimvalue"}),
}
WHAT = {
    "core": "an ASP.NET Core Identity AspNetUsers table (CSV)",
    "identity2": "an ASP.NET Identity 2 AspNetUsers table (CSV)",
    "logins": "an AspNetUserLogins table (CSV)",
    "tokens": "an AspNetUserTokens table (CSV)",
    "claims": "an AspNetUserClaims table (CSV)",
}


def table_of(head: bytes) -> str | None:
    """Which of :data:`TABLES` a CSV's first line is the header of (the most specific), or None;
    cells cut by commas, or tabs (``mysql --batch``), semicolons, pipes (``csv_rows.detect_delimiter``)."""
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace")
    names = {key(cell) for cell in next(csv.reader([first], delimiter=detect_delimiter(first)), [])}
    found = [table for table, needed in TABLES.items() if needed <= names]
    return max(found, key=lambda table: len(TABLES[table])) if found else None


def _blocked(record_json: bytes) -> bool:
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("locked") is True


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("id")
    return [user_id] if isinstance(user_id, str) and user_id.strip() else None


def _shape(table: str) -> TextShape:
    return TextShape(
        what=WHAT[table], shape=f"{PREFIX}-{table}", matches=lambda head: table_of(head) == table
    )


KIND = SourceKind(
    name=PREFIX,
    records=user_records(COUNTERS, blocked=_blocked, ids=_ids),
    shapes=FileShapes(
        # The users flag takes two layouts: what reads the second is said (the registry names the
        # flag of a reader's first shape).
        shapes={
            f"{PREFIX}-{table}": Shape(
                what=what, takes=f"migrate {PREFIX} --users reads it" if table == "identity2" else ""
            )
            for table, what in WHAT.items()
        },
        readers={
            f"{PREFIX}-users": (f"{PREFIX}-core", f"{PREFIX}-identity2"),
            **{f"{PREFIX}-{table}": (f"{PREFIX}-{table}",) for table in ("logins", "tokens", "claims")},
        },
        identify=lambda keys: None,  # no JSON form
        rank=60,
        text=tuple(_shape(table) for table in WHAT),
    ),
    second_factors={OTP_NOT_CARRIED: f"{PREFIX}.otp."},
)
