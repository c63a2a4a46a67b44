"""The parts of an ImportDataRequest body: its orgs, their human users, metadata and per-user records.

Bodies come from migrate (``dataOrgs`` / ``dataOrgsv1``, camelCase) or from other tools (the
snake_case spellings the API accepts too); see ``docs/zitadel-import-api.md``. ``split_body``
halves a body's users for a resend after the server's own timeout elapsed.

Example::

    body_user_ids({"dataOrgs": {"orgs": [{"orgId": "1", "humanUsers": [{"userId": "u"}]}]}})
    # [("1", "u")]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

__all__ = [
    "DATA_KEYS",
    "USER_KEYS",
    "META_KEYS",
    "first_key",
    "orgs_of",
    "org_id_of",
    "users_of",
    "metadata_of",
    "user_id_of",
    "user_name_of",
    "UserRef",
    "body_user_ids",
    "shape_problem",
    "with_orgs",
    "split_body",
]

DATA_KEYS = ("dataOrgs", "data_orgs", "dataOrgsv1", "data_orgsv1")
USER_KEYS = ("humanUsers", "human_users")
META_KEYS = ("userMetadata", "user_metadata")


def first_key(mapping: dict, keys: Iterable[str]) -> str | None:
    return next((k for k in keys if k in mapping), None)


def orgs_of(body: dict) -> list[dict]:
    key = first_key(body, DATA_KEYS)
    return list((body.get(key) or {}).get("orgs") or []) if key else []


def org_id_of(org: dict) -> str:
    return str(org.get("orgId", org.get("org_id", "")))


def users_of(org: dict) -> list[dict]:
    key = first_key(org, USER_KEYS)
    return list(org.get(key) or []) if key else []


def metadata_of(org: dict) -> list[dict]:
    key = first_key(org, META_KEYS)
    return list(org.get(key) or []) if key else []


def user_id_of(entry: dict) -> str:
    return str(entry.get("userId", entry.get("user_id", "")))


class UserRef(NamedTuple):
    """One human user of a body: the org it goes to and its id ('' when the server assigns one)."""

    org_id: str
    user_id: str


def body_user_ids(body: dict) -> list[UserRef]:
    """(org id, user id) of every human user in an ImportDataRequest, in order."""
    return [UserRef(org_id_of(org), user_id_of(u)) for org in orgs_of(body) for u in users_of(org)]


def _kind(value: object) -> str:
    names = {list: "an array", dict: "an object", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def shape_problem(body: object) -> str | None:
    """What makes a parsed JSON value not an ImportDataRequest the functions here can read.

    >>> shape_problem([{"dataOrgs": {}}])
    'an array in JSON, not an import request (an object with dataOrgs)'
    >>> shape_problem({"dataOrgs": {"orgs": [{"humanUsers": {}}]}})
    'dataOrgs.orgs[0].humanUsers is an object, not an array'
    """
    if not isinstance(body, dict):
        return f"{_kind(body)} in JSON, not an import request (an object with dataOrgs)"
    key = first_key(body, DATA_KEYS)
    if key is None or body.get(key) is None:
        return None
    data = body[key]
    if not isinstance(data, dict):
        return f"{key} is {_kind(data)}, not an object"
    orgs = data.get("orgs")
    if orgs is None:
        return None
    if not isinstance(orgs, list):
        return f"{key}.orgs is {_kind(orgs)}, not an array"
    for i, org in enumerate(orgs):
        if not isinstance(org, dict):
            return f"{key}.orgs[{i}] is {_kind(org)}, not an object"
        for field in (first_key(org, USER_KEYS), first_key(org, META_KEYS)):
            items = org.get(field) if field else None
            if items is None:
                continue
            if not isinstance(items, list):
                return f"{key}.orgs[{i}].{field} is {_kind(items)}, not an array"
            bad = next((j for j, item in enumerate(items) if not isinstance(item, dict)), None)
            if bad is not None:
                return f"{key}.orgs[{i}].{field}[{bad}] is {_kind(items[bad])}, not an object"
    return None


def with_orgs(body: dict, orgs: list[dict]) -> dict:
    key = first_key(body, DATA_KEYS) or "dataOrgs"
    out = {k: v for k, v in body.items() if k != key}
    out[key] = {**(body.get(key) or {}), "orgs": orgs}
    return out


def split_body(body: dict) -> tuple[dict, dict]:
    """Split an ImportDataRequest's human users in halves; each user's metadata follows it (and, in
    an export document, its grants, memberships and IdP links).

    Everything else of an org (its name, policies, projects, ...) stays in the first half, which is
    sent first, so an org exists before the second half's users are added to it.
    """
    flat = [(i, j) for i, org in enumerate(orgs_of(body)) for j, _ in enumerate(users_of(org))]
    # By position, not id: users without userId (the server assigns one) all share the id "".
    first_ids = set(flat[: len(flat) // 2])
    halves: tuple[list[dict], list[dict]] = ([], [])
    v1 = first_key(body, DATA_KEYS) in ("dataOrgsv1", "data_orgsv1")
    for i, org in enumerate(orgs_of(body)):
        user_key = first_key(org, USER_KEYS) or "humanUsers"
        meta_key = first_key(org, META_KEYS) or "userMetadata"
        a_users = [u for j, u in enumerate(users_of(org)) if (i, j) in first_ids]
        b_users = [u for j, u in enumerate(users_of(org)) if (i, j) not in first_ids]
        b_ids = {user_id_of(u) for u in b_users}
        b_meta = [m for m in metadata_of(org) if str(m.get("id", "")) in b_ids]
        a_meta = [m for m in metadata_of(org) if str(m.get("id", "")) not in b_ids]
        rest = {k: v for k, v in org.items() if k not in (user_key, meta_key)}
        # An export document's per-user records (grants, memberships, links) follow their user too.
        b_records = {}
        for key in [k for k in rest if k in _USER_RECORD_KEYS and isinstance(rest[k], list)]:
            follows = [
                isinstance(r, dict) and r.get("userId", r.get("user_id")) in b_ids - {""} for r in rest[key]
            ]
            if any(follows):
                b_records[key] = [r for r, f in zip(rest[key], follows, strict=True) if f]
                rest[key] = [r for r, f in zip(rest[key], follows, strict=True) if not f]
        halves[0].append({**rest, user_key: a_users, meta_key: a_meta})
        if b_users:
            id_key = "orgId" if "orgId" in org else "org_id"
            second = {id_key: org_id_of(org)}
            if "org" in org and v1:  # an export document's org: Org.AlreadyExisting, not an invalid org
                second["org"] = org["org"]
            halves[1].append({**second, user_key: b_users, meta_key: b_meta, **b_records})
    return with_orgs(body, halves[0]), with_orgs(body, halves[1])


_USER_RECORD_KEYS = (
    "userGrants",
    "user_grants",
    "orgMembers",
    "org_members",
    "projectMembers",
    "project_members",
    "projectGrantMembers",
    "project_grant_members",
    "userLinks",
    "user_links",
)


def user_name_of(entry: dict) -> str:
    """The userName of a humanUsers entry (either spelling), or ''."""
    user = entry.get("user") or {}
    return str(user.get("userName", user.get("user_name", "")))
