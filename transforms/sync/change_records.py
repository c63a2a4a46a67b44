"""The change records of a scheduled sync: the calls they hold and the one place a line is built.

A change record is one NDJSON line of a change file (``<stem>.changes-*.ndjson``, written by
``transforms/sync/compare.py``, named and listed by ``transforms/sync/change_files.py``, applied by
``transforms/sync/apply.py``)::

    {"userId": "auth0|1", "orgId": "123", "userName": "ann", "kind": "changed",
     "fields": ["profile"], "calls": [{"call": "UpdateHumanUser", "body": {..}}],
     "state": {..the state record to commit once the calls are confirmed..}, "previous": {..}}

The names written (call names, kinds, keys and their order) are what a reviewer reads and what a
later push applies: they never change. The state records inside are
``transforms/sync/state_records.py``'s.

Example::

    >>> change_line("123", "auth0|1", "ann", ChangeKind.REMOVED, [], [{"call": Call.DELETE_USER}],
    ...             {"id": "auth0|1"}, previous={"id": "auth0|1"}, policy="delete")
    b'{"userId":"auth0|1","orgId":"123","userName":"ann","kind":"removed","policy":"delete",...'
"""

from __future__ import annotations

import enum
from typing import Any, NotRequired, TypedDict

import orjson

__all__ = ["Call", "ChangeCall", "ChangeKind", "ChangeRecord", "OnRemoved", "ON_REMOVED", "change_line"]


class OnRemoved(enum.StrEnum):
    """What happens to a user in the state that the source no longer has (``--on-removed``)."""

    REPORT = "report"  # listed in the change file, nothing sent
    DEACTIVATE = "deactivate"
    DELETE = "delete"


ON_REMOVED = tuple(policy.value for policy in OnRemoved)


class Call(enum.StrEnum):
    """The calls a change record holds; the value is the name written in the change files."""

    UPDATE_HUMAN_USER = "UpdateHumanUser"
    REMOVE_PHONE = "RemovePhone"
    ADD_IDP_LINK = "AddIDPLink"
    REMOVE_IDP_LINK = "RemoveIDPLink"
    SET_USER_METADATA = "SetUserMetadata"
    DELETE_USER_METADATA = "DeleteUserMetadata"
    SET_USER_GRANT = "SetUserGrant"
    REMOVE_USER_GRANT = "RemoveUserGrant"
    DEACTIVATE_USER = "DeactivateUser"
    REACTIVATE_USER = "ReactivateUser"
    LOCK_USER = "LockUser"
    UNLOCK_USER = "UnlockUser"
    DELETE_USER = "DeleteUser"


class ChangeCall(TypedDict):
    """One call of a change record (``{"call": "RemoveIDPLink", "idpId": ..}``); which of the
    optional fields it carries depends on the call (``transforms/sync/calls.py``)."""

    call: str  # a Call value
    body: NotRequired[dict[str, Any]]  # the request body, as ZITADEL's JSON mapping takes it
    idpId: NotRequired[str]
    linkedUserId: NotRequired[str]
    keys: NotRequired[list[str]]
    projectId: NotRequired[str]
    roleKeys: NotRequired[list[str]]


class ChangeKind(enum.StrEnum):
    """What a change record is about (its ``kind``)."""

    NEW = "new"
    UNCHANGED = "unchanged"
    CHANGED = "changed"
    NEW_BLOCKED = "new-blocked"  # imported blocked (--include-blocked), then deactivated
    REMOVED = "removed"


class StateRecord(TypedDict, total=False):
    """One user's state record (its keys are the letters named in ``state_records``: ``ID`` ...
    ``GRANTS``); here, beside the change line that carries it to be committed."""

    id: str
    n: str | None
    q: str | None  # None only in a record written without one (merge_confirmed keeps it)
    f: dict[str, str | None]
    b: str
    l: list[list[str]]  # noqa: E741 - the on-disk key of the IdP links
    m: dict[str, str]
    g: int
    a: list[list[Any]]  # [project id, [role keys]]: mixed types in one JSON list
    i: int


class ChangeRecord(TypedDict):
    """One line of a change file (the module docstring shows one); keys in the order written."""

    userId: str
    orgId: str
    userName: str | None
    kind: str  # a ChangeKind value
    policy: NotRequired[str]  # kind "removed": the --on-removed policy applied
    fields: list[str]  # the changed groups
    calls: list[ChangeCall]
    notApplied: NotRequired[list[str]]  # what cannot be carried to the target (plan_changes)
    state: StateRecord  # the record to commit once the calls are confirmed
    previous: NotRequired[StateRecord]


def change_line(
    org_id: str,
    user_id: str,
    user_name: str | None,
    kind: ChangeKind,
    groups: list[str],
    calls: list[ChangeCall],
    record: StateRecord,
    *,
    notes: list[str] | None = None,
    previous: StateRecord | None = None,
    policy: str | None = None,
) -> bytes:
    """One change record's line (no newline), its keys in the order a change file holds them:
    ``policy`` only for a removed user, ``notApplied`` only when there are notes, ``previous``
    only for a user the state held."""
    # A plain dict, filled in ChangeRecord's key order (the optional keys sit between the others).
    change: dict[str, object] = {"userId": user_id, "orgId": org_id, "userName": user_name, "kind": kind}
    if policy is not None:
        change["policy"] = policy
    change["fields"] = groups
    change["calls"] = calls
    if notes:
        change["notApplied"] = notes
    change["state"] = record
    if previous is not None:
        change["previous"] = previous
    return orjson.dumps(change)
