"""Roles of Auth0 users (docs/roles.md): where the reader finds them, and how the join turns them into grants.

For whoever changes ``--roles-from`` / ``--roles-file``. The parse step (``parse``) takes a
profile's role names at the ``--roles-from`` path (``profile_roles``), counts users holding roles
without ``--project-id`` (``holds_roles``) and routes ``--roles-file`` lines by user_id
(``role_record``); the join (``join``) gives each user the grants of the union (the shared
``transforms/sources/role_grants.py``) and emits the project roles used, which
``transforms/output/grants.py`` resolves.

Example::

    profile_roles({"app_metadata": {"roles": ["b", "a", "a"]}}, ("app_metadata", "roles"))  # ('a', 'b')
"""

from __future__ import annotations

from typing import Any

from transforms.common.records import partition_of
from transforms.mapping.roles import role_names
from transforms.mapping.validate import Reason
from transforms.sources.auth0.items import (
    JsonObject,
    Kind,
    MfaRecord,
    Problem,
    RoleRecord,
    RouteItem,
)

__all__ = ["profile_roles", "holds_roles", "role_record"]

# Records keyed by user_id, by (kind, user_id partition) (the parse step's ``routes``).
Routes = dict[tuple[int, int], list[RouteItem | MfaRecord | RoleRecord]]


def profile_roles(profile: JsonObject, path: tuple[str, ...]) -> tuple[str, ...]:
    """The role names at ``path`` (``--roles-from`` split at dots, e.g. ``("app_metadata",
    "roles")``) of a profile, sorted and unique; () when there is no list there."""
    value: Any = profile
    for part in path:
        if type(value) is not dict:
            return ()
        value = value.get(part)
    if type(value) is not list or not value:
        return ()
    if all(type(v) is str for v in value):  # the usual shape: a list of names
        return tuple(sorted(set(value)))
    return tuple(sorted(set(role_names(value))))


def holds_roles(profile: JsonObject) -> bool:
    """Without ``--project-id``: roles at ``app_metadata.roles`` or
    ``app_metadata.authorization.roles`` (the summary's hint only)."""
    app = profile.get("app_metadata")
    if type(app) is not dict:
        return False
    if app.get("roles"):
        return True
    auth = app.get("authorization")
    return type(auth) is dict and bool(auth.get("roles"))


def role_record(
    sortkey: tuple[int, int], record: JsonObject, raw: bytes, routes: Routes, partitions: int
) -> Problem | None:
    """One ``--roles-file`` line ``{"user_id", "roles": [name or {"name"}]}``: routed to its user."""
    user_id = record.get("user_id")
    if not isinstance(user_id, str) or not user_id.strip():
        return Reason.MISSING_USER_ID, "roles record has no user_id"
    if not isinstance(record.get("roles"), list):
        return Reason.NOT_AN_OBJECT, "roles record has no 'roles' list"
    item: RoleRecord = (sortkey[0], sortkey[1], user_id, tuple(sorted(set(role_names(record["roles"])))), raw)
    routes.setdefault((Kind.ROLE_RECORDS, partition_of(user_id, partitions)), []).append(item)
    return None
