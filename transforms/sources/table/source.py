"""A table of users as the tool below the command line sees it: its record kinds (it reads any file).

The command's half is ``command.py`` (``DESCRIPTION``, which the registry finds). The reader writes each record as
``{"id", "blocked", "record"}``: the id and the blocked flag as the run's mapping read them.
Example::

    KIND.records["table-user"].blocked(b'{"id":"t1","blocked":true,"record":{}}')  # True
"""

from __future__ import annotations

import orjson

from transforms.sources.declaration import source_name
from transforms.sources.source_parts import ANY_FILE, UNREADABLE_FILE, SourceKind, UserRecordKind
from transforms.sources.table import accounting as ta

__all__ = ["KIND"]


def _blocked(record_json: bytes) -> bool:
    if b'"blocked":true' not in record_json:  # the common case, without parsing
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("blocked") is True


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("id")
    return [user_id] if isinstance(user_id, str) and user_id.strip() else None


KIND = SourceKind(
    name=source_name(__name__),  # the package's name
    # A table record (read.py) and a table file that did not read.
    records={ta.SOURCE: UserRecordKind(blocked=_blocked, ids=_ids), ta.FILE_SOURCE: UNREADABLE_FILE},
    shapes=ANY_FILE,  # any table: the mapping says what its columns are
)
