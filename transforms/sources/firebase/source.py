"""Firebase Auth as the tool below the command line sees it: its record kinds and its files.

The command's half is ``command.py`` (``DESCRIPTION``, which the registry finds). Example::

    KIND.records["firebase-user"].blocked(b'{"localId":"fb-1","disabled":true}')  # True
    firebase_csv(b"uid1,ann@example.com,true,...")  # a CSV export's first line (23+ columns)
"""

from __future__ import annotations

import csv
from collections.abc import Mapping

import orjson

from transforms.common.reasons import Reason
from transforms.sources.declaration import source_name
from transforms.sources.firebase import accounting as fb
from transforms.sources.source_parts import (
    UNREADABLE_FILE,
    FileShapes,
    Shape,
    SourceKind,
    TextShape,
    UserRecordKind,
)

__all__ = ["KIND", "firebase_csv"]


def _disabled(record_json: bytes) -> bool:
    if b'"disabled"' not in record_json:  # the common case, without parsing
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("disabled") is True


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("localId")
    return [user_id] if isinstance(user_id, str) and user_id.strip() else None


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    if "\x00users[].localId" in keys:  # firebase auth:export: {"users": [...]}
        return "firebase-users", 'a "users" array of records with "localId"'
    if "localId" in keys:
        return "firebase-users", 'records with "localId"'
    return None


def firebase_csv(head: bytes) -> bool:
    """Whether ``head`` starts like ``firebase auth:export users.csv``: no header, a first line
    of at least 23 columns whose third (emailVerified) is ``true`` or ``false``."""
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    if first.count(",") < 22:
        return False
    row = next(csv.reader([first]), [])
    _, _, verified, *_ = row + ["", "", ""]
    return len(row) >= 23 and verified.strip() in ("true", "false")


KIND = SourceKind(
    name=source_name(__name__),  # the package's name
    records={
        fb.SOURCE: UserRecordKind(
            blocked=_disabled, ids=_ids, reason=Reason.DISABLED, flag="--include-disabled"
        ),
        # A Firebase export file that did not read on: whose users it held cannot be told.
        fb.FILE_SOURCE: UNREADABLE_FILE,
    },
    shapes=FileShapes(
        shapes={"firebase-users": Shape(what="a Firebase Auth export")},
        readers={"firebase-users": ("firebase-users",)},
        identify=_identify,
        rank=30,
        text=(TextShape(what="a Firebase Auth CSV export", shape="firebase-users", matches=firebase_csv),),
    ),
)
