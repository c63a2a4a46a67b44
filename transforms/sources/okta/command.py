"""``zitadel-beam migrate okta``: Okta's user export (CSV) → ZITADEL import bodies.

Example::

    zitadel-beam migrate okta --org=123456789 --users=okta-users.csv --output=out/importBody.json

Okta never exports a password or a hash: every user arrives without a password (listed as
unable to sign in until it sets one or is linked to an IdP). Okta documents no column list for
its admin-console user export: a file is told by its header, Okta's profile variable names
(``login``, ``email``, ``firstName``...) or the report's labels (``Okta username``, ``Primary
email``), matched without regard to case (docs/okta.md). The reader part and the mapping are
``read.py``; the names both use (counters, statuses, column aliases) the package's ``__init__``.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from typing import TYPE_CHECKING

import orjson

from transforms.common.accounting import users_lines
from transforms.common.counters import by_suffix
from transforms.sources.declaration import (
    FlagParser,
    Flags,
    FlexPart,
    Plan,
    SourceDescription,
    SourceSettings,
    SummaryLine,
    file_flag,
)
from transforms.sources.okta import BLOCKED, BLOCKED_WRITTEN, CHANGE_NOT_MARKED, COUNTERS, STATUS, column
from transforms.sources.source_parts import FileShapes, Shape, SourceKind, TextShape, user_records

if TYPE_CHECKING:
    from transforms.sources.input_plan import LookedFile

__all__ = ["DESCRIPTION", "KIND", "okta_csv", "okta_marks"]

# What marks a CSV as Okta's for the other readers' refusal (a table of users may well have a
# login and an e-mail column): the report's own labels, or Okta's profile variable names as Okta
# spells them, status and both names with them.
_LABELS = frozenset({"okta username", "okta id", "okta user status"})
_PROFILE = frozenset({"login", "email", "status", "firstName", "lastName"})


def _header(head: bytes) -> list[str]:
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace").strip()
    return next(csv.reader([first]), [])


def okta_csv(head: bytes) -> bool:
    """Whether ``head`` starts with an Okta user export's header: a login and an e-mail column."""
    return {"login", "email"} <= {column(cell).casefold() for cell in _header(head)}


def okta_marks(head: bytes) -> bool:
    """Whether ``head``'s header is surely Okta's (narrower than :func:`okta_csv`, what Okta reads)."""
    cells = {cell.strip() for cell in _header(head)}
    return _PROFILE <= cells or any(cell.casefold() in _LABELS for cell in cells)


def _blocked(record_json: bytes) -> bool:
    record = orjson.loads(record_json)
    return isinstance(record, dict) and str(record.get("status", "")).upper() in BLOCKED


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("id")
    return [user_id] if isinstance(user_id, str) and user_id.strip() else None


KIND = SourceKind(
    name=COUNTERS.name,
    records=user_records(COUNTERS, blocked=_blocked, ids=_ids),
    shapes=FileShapes(
        shapes={"okta-users": Shape(what="an Okta user export (CSV)")},
        readers={"okta-users": ("okta-users",)},
        identify=lambda keys: None,  # no JSON form
        rank=60,
        text=(TextShape(what="an Okta user export (CSV)", shape="okta-users", matches=okta_marks),),
    ),
)


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--users",
        reads="okta-users",
        required=True,
        help="Okta's user export, CSV with a header (id, status, login, email, firstName, lastName, "
        "...; the report's labels 'Okta username', 'Primary email' too): path or glob, local or gs://",
    )
    parser.add_argument(
        "--include-blocked",
        action="store_true",
        help="import users SUSPENDED, LOCKED_OUT or DEPROVISIONED at Okta (default: dead-letter them "
        "as blocked; with --state they are read so that ZITADEL deactivates them)",
    )
    parser.add_argument(
        "--trust-email",
        action="store_true",
        help="import e-mail addresses as verified (Okta's export says nothing of verification; "
        "default: unverified)",
    )
    parser.add_argument(
        "--trust-phone", action="store_true", help="import phone numbers as verified (default: unverified)"
    )


def _not_okta(looked: LookedFile) -> str | None:
    if okta_csv(looked.head):
        return None
    return (
        "not an Okta user export (a CSV whose header names a login column, 'login' or 'Okta "
        "username', and an e-mail column, 'email' or 'Primary email')"
    )


def plan(flags: Flags, settings: SourceSettings) -> Plan:
    """Match the files and look at each header (the shared planner); the reader's options."""
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.input_plan import plan_inputs
    from transforms.sources.okta.read import OktaOptions, read_okta

    files = plan_inputs(flags.users, flag="--users", reader="okta-users", check=_not_okta)
    options = OktaOptions(
        include_blocked=settings.read_blocked,
        trust_email=flags.trust_email,
        trust_phone=flags.trust_phone,
        metadata=settings.metadata,
        email_fallback=settings.email_fallback,
        validation=ValidationOptions(hash_policy=settings.hash_policy),
    )
    return Plan(
        read=lambda pipeline, tmp_dir: read_okta(pipeline, files, options, tmp_dir),
        input_paths=[flags.users],
        input_names={f.index: f.path for f in files},
    )


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of Okta's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [("users read", counts.get(COUNTERS.users_read, 0)), *users_lines(counts)]
    lines += [(f"  Okta status {status}", value) for status, value in by_suffix(counts, STATUS)]
    lines.append(("must change password at Okta, no password to mark", counts.get(CHANGE_NOT_MARKED, 0)))
    lines.append(("blocked users written (--include-blocked, --state)", counts.get(BLOCKED_WRITTEN, 0)))
    return lines


DESCRIPTION = SourceDescription(
    kind=KIND,
    help="Okta user export (CSV) → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=COUNTERS.invariant,
    # In the Flex Template with its own flags and the shared ones of its groups (none: no hashes).
    flex=FlexPart(
        labels={
            "users": "Okta user export",
            "include_blocked": "Include blocked users",
            "trust_email": "E-mail addresses verified",
            "trust_phone": "Phone numbers verified",
        },
    ),
)
