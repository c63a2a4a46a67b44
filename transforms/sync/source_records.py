"""What a scheduled sync reads from a source's user record: blocked or not, and its user ids.

The compare (``transforms/sync/compare.py``) is source-neutral except for these questions, asked
of a row's original record or of a dead letter's record. Each source answers them for the
``source`` values its reader writes (``auth0-profile``, ``keycloak-user``, ``keycloak-file``, ...)
in its description (``records`` of ``transforms/sources/<name>/source.py``); the launcher
hands them to the compare in ``SyncOptions.records``, so a worker needs no registry:

- is the user blocked (Auth0 ``blocked: true``) or disabled (Keycloak ``enabled`` not true)?
- which user ids would a record that was dead-lettered have had (``None``: it cannot be told, and
  then no removal is made, docs/sync.md)?
- when a new user is blocked at the source, which reason and which flag imports it anyway?

A row whose ``source`` its source did not describe is a bug, and stops the run (:class:`UnknownRecord`):
answering "not blocked" would leave a user blocked at the source active in ZITADEL.

Example::

    >>> from transforms.sources.registry import kind
    >>> records = kind("auth0").records
    >>> is_blocked(records, "auth0-profile", b'{"user_id":"auth0|1","blocked":true}')
    True
    >>> candidate_ids(records, "auth0-profile", {"user_id": "auth0|1"}, realm=None)
    ['auth0|1']
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.sources.source_parts import UserRecordKind

__all__ = ["UnknownRecord", "is_blocked", "candidate_ids", "refusal"]

Records = Mapping[str, UserRecordKind]


class UnknownRecord(LookupError):
    """A user row whose ``source`` value its source's description does not list."""


def _kind(records: Records, source: str) -> UserRecordKind:
    kind = records.get(source)
    if kind is None:
        raise UnknownRecord(
            f"a user row's source {source!r} is not among its source's record kinds "
            f"({', '.join(sorted(records)) or 'none'}): describe it in the source's records"
        )
    return kind


def is_blocked(records: Records, source: str, record_json: bytes) -> bool:
    """Blocked (Auth0 ``blocked: true``) or disabled (Keycloak ``enabled`` not true) at the source;
    UnknownRecord for a ``source`` the records do not describe."""
    return _kind(records, source).blocked(record_json)


def candidate_ids(records: Records, source: str, record: object, realm: str | None) -> list[str] | None:
    """The ids a dead-lettered user record would have had; None when it cannot be told (also for
    a record that is not one user's: a password or MFA record)."""
    kind = records.get(source)
    if kind is None or not isinstance(record, dict):
        return None
    return kind.ids(record, realm)


def refusal(records: Records, source: str) -> tuple[str, str]:
    """``(reason, flag)`` of a new user blocked at the source: why it is refused, what imports it."""
    kind = _kind(records, source)
    return kind.reason, kind.flag
