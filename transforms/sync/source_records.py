"""What a scheduled sync reads from each source's user record: blocked or not, and its user ids.

The compare (``transforms/sync/compare.py``) is source-neutral except for these questions, asked
of a row's original record or of a dead letter's record; the answers for every source live here,
one :class:`UserRecordKind` per ``source`` value the readers write (``auth0-profile``,
``keycloak-user``, ``keycloak-file``):

- is the user blocked (Auth0 ``blocked: true``) or disabled (Keycloak ``enabled`` not true)?
- which user ids would a record that was dead-lettered have had (``None``: it cannot be told, and
  then no removal is made, docs/sync.md)?
- when a new user is blocked at the source, which reason and which flag imports it anyway?

Example::

    >>> is_blocked("auth0-profile", b'{"user_id":"auth0|1","blocked":true}')
    True
    >>> candidate_ids("auth0-profile", {"email": "ann@example.com"}, realm=None)
    ['auth0|...']  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import orjson

from transforms.common.reasons import Reason
from transforms.mapping.ids import auth0_user_id, keycloak_user_id

__all__ = ["UserRecordKind", "USER_RECORDS", "USER_SOURCES", "is_blocked", "candidate_ids", "refusal"]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _auth0_blocked(record_json: bytes) -> bool:
    if b'"blocked"' not in record_json:  # the common case, without parsing
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("blocked") is True


def _auth0_ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = _text(record.get("user_id"))
    if user_id is not None:
        return [user_id]
    email = _text(record.get("email"))
    return [auth0_user_id(email)] if email is not None else None


def _keycloak_blocked(record_json: bytes) -> bool:
    if b'"enabled":true' in record_json:  # the common case, without parsing
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("enabled") is not True


def _keycloak_ids(record: dict, realm: str | None) -> list[str] | None:
    ids = []
    if _text(record.get("id")) is not None:
        ids.append(record["id"])
    name = _text(record.get("username"))
    if name is not None and realm:  # derived ids of users without id need the realm
        ids.append(keycloak_user_id(realm, name))
    return ids or None


def _table_blocked(record_json: bytes) -> bool:
    # The reader writes {"id", "blocked", "record"}: the flag as the run's mapping read it.
    if b'"blocked":true' not in record_json:  # the common case, without parsing
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("blocked") is True


def _table_ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = _text(record.get("id"))
    return [user_id] if user_id is not None else None


def _firebase_disabled(record_json: bytes) -> bool:
    if b'"disabled"' not in record_json:  # the common case, without parsing
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("disabled") is True


def _firebase_ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = _text(record.get("localId"))
    return [user_id] if user_id is not None else None


def _never_blocked(record_json: bytes) -> bool:
    return False


def _no_ids(record: dict, realm: str | None) -> list[str] | None:
    return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class UserRecordKind:
    """One source's user record, as the sync reads it."""

    blocked: Callable[[bytes], bool]  # the record's JSON bytes → blocked or disabled at the source
    ids: Callable[[dict, str | None], list[str] | None]  # (record, Keycloak realm) → candidate ids
    reason: str = Reason.BLOCKED  # a new user blocked at the source is refused with this...
    flag: str = "--include-blocked"  # ...unless this flag imports it (then deactivates it)


# Every source whose dead letters carry one user's record (the others are password or MFA records,
# which never decide whether a user is gone).
USER_RECORDS: dict[str, UserRecordKind] = {
    "auth0-profile": UserRecordKind(blocked=_auth0_blocked, ids=_auth0_ids),
    "keycloak-user": UserRecordKind(
        blocked=_keycloak_blocked, ids=_keycloak_ids, reason=Reason.DISABLED, flag="--include-disabled"
    ),
    # A realm file that did not read: whose users it held cannot be told.
    "keycloak-file": UserRecordKind(blocked=_never_blocked, ids=_no_ids),
    # A table record (transforms/sources/table/table_read.py) and a table file that did not read.
    "table-user": UserRecordKind(blocked=_table_blocked, ids=_table_ids),
    "table-file": UserRecordKind(blocked=_never_blocked, ids=_no_ids),
    "firebase-user": UserRecordKind(
        blocked=_firebase_disabled, ids=_firebase_ids, reason=Reason.DISABLED, flag="--include-disabled"
    ),
    # A Firebase export file that did not read on: whose users it held cannot be told.
    "firebase-file": UserRecordKind(blocked=_never_blocked, ids=_no_ids),
}
USER_SOURCES = tuple(USER_RECORDS)


def is_blocked(source: str, record_json: bytes) -> bool:
    """Blocked (Auth0 ``blocked: true``) or disabled (Keycloak ``enabled`` not true) at the source."""
    kind = USER_RECORDS.get(source)
    return kind is not None and kind.blocked(record_json)


def candidate_ids(source: str, record: object, realm: str | None) -> list[str] | None:
    """The ids a dead-lettered user record would have had; None when it cannot be told."""
    kind = USER_RECORDS.get(source)
    if kind is None or not isinstance(record, dict):
        return None
    return kind.ids(record, realm)


def refusal(source: str) -> tuple[str, str]:
    """``(reason, flag)`` of a new user blocked at the source: why it is refused, what imports it."""
    kind = USER_RECORDS.get(source)
    return (kind.reason, kind.flag) if kind is not None else (Reason.BLOCKED, "--include-blocked")
