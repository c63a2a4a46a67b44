"""Okta as the tool below the command line sees it: its record kind and its export's shape.

Okta documents no column list for its admin-console user export (docs/okta.md): a file is told
by its header, the profile variable names (``login``, ``email``, ``firstName``...) or the
report's labels (``Okta username``, ``Primary email``), matched without regard to case.

Example::

    KIND.records["okta-user"].blocked(b'{"status":"SUSPENDED"}')  # True
    okta_csv(b"id,status,login,email,firstName,lastName")  # True
"""

from __future__ import annotations

import csv

import orjson

from transforms.common.reasons import Reason
from transforms.sources.declaration import source_name
from transforms.sources.okta import accounting as okta
from transforms.sources.source_parts import (
    UNREADABLE_FILE,
    FileShapes,
    Shape,
    SourceKind,
    TextShape,
    UserRecordKind,
)

__all__ = ["KIND", "BLOCKED", "ALIASES", "okta_csv", "okta_marks", "column"]

# Okta's UserStatus values of a user who cannot sign in at Okta (suspended, locked, deactivated).
BLOCKED = frozenset({"SUSPENDED", "LOCKED_OUT", "DEPROVISIONED"})
# A header cell (case-folded) → the profile variable name it stands for.
ALIASES = {
    "okta username": "login",
    "username": "login",
    "primary email": "email",
    "okta user status": "status",
    "user status": "status",
    "user fullname": "displayName",
    "user id": "id",
    "okta id": "id",
}


def column(name: str) -> str:
    """A header cell's name as this source reads it: an alias resolved, else the name itself."""
    return ALIASES.get(name.strip().casefold(), name.strip())


def _blocked(record_json: bytes) -> bool:
    record = orjson.loads(record_json)
    return isinstance(record, dict) and str(record.get("status", "")).upper() in BLOCKED


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("id")
    return [user_id] if isinstance(user_id, str) and user_id.strip() else None


def okta_csv(head: bytes) -> bool:
    """Whether ``head`` starts with an Okta user export's header: a login and an e-mail column."""
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace")
    names = {column(cell).casefold() for cell in next(csv.reader([first]), [])}
    return {"login", "email"} <= names


# What marks a CSV as Okta's for the other readers' refusal (a table of users may well have a
# login and an e-mail column): the report's own labels, or Okta's profile variable names as Okta
# spells them, status and both names with them.
_LABELS = frozenset({"okta username", "okta id", "okta user status"})
_PROFILE = frozenset({"login", "email", "status", "firstName", "lastName"})


def okta_marks(head: bytes) -> bool:
    """Whether ``head``'s header is surely Okta's (narrower than :func:`okta_csv`, what Okta reads)."""
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace").strip()
    cells = {cell.strip() for cell in next(csv.reader([first]), [])}
    return _PROFILE <= cells or any(cell.casefold() in _LABELS for cell in cells)


KIND = SourceKind(
    name=source_name(__name__),
    records={
        okta.SOURCE: UserRecordKind(
            blocked=_blocked, ids=_ids, reason=Reason.BLOCKED, flag="--include-blocked"
        ),
        okta.FILE_SOURCE: UNREADABLE_FILE,
    },
    shapes=FileShapes(
        shapes={"okta-users": Shape(what="an Okta user export (CSV)")},
        readers={"okta-users": ("okta-users",)},
        identify=lambda keys: None,  # no JSON form
        rank=60,
        text=(TextShape(what="an Okta user export (CSV)", shape="okta-users", matches=okta_marks),),
    ),
)
