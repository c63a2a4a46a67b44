"""Source roles → ZITADEL project role keys: Keycloak's effective roles and the key rules.

A user's roles become one grant per ZITADEL project (``transforms/output/grants.py`` renders them). This
module decides *which* keys a user holds (docs/roles.md):

- **Keycloak effective roles**, as Keycloak computes them: the user's direct realm and client
  roles, the roles of every group the user belongs to and of each ancestor of that group
  (``/a/b`` inherits ``/a``), then the composites of each role, transitively (cycles are safe).
- **Built-ins** (realm ``offline_access``, ``uma_authorization``, ``default-roles-<realm>``, the
  names of the legacy ``defaultRoles``; every role of the clients ``account``, ``account-console``,
  ``realm-management``, ``broker``, ``admin-cli``, ``security-admin-console``) are skipped and
  counted unless ``include_builtin``.
- **Where a role goes**: realm roles to ``project_id`` with their name as key; client roles of a
  client mapped with ``--client-project`` to that project with their own name; other client roles
  to ``project_id`` as ``CLIENT:ROLE``. ``group`` is the client id for client roles.
- **Key rules**: a key longer than 200 characters (ZITADEL's limit) or empty is skipped and
  counted; display names are the description, else the name, cut to 200 characters.

Every role assignment ends in exactly one outcome, counted under ``roles.*`` (see ``Outcome``).

Example::

    model = KeycloakRoles.from_realm(realm_doc, RoleSettings("p1"))
    grants, outcomes = model.user_grants({"realmRoles": ["admin"], "groups": ["/staff"]})
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from transforms.common import counters
from transforms.common.records import Grants

__all__ = [
    "MAX_KEY",
    "BUILTIN_CLIENTS",
    "BUILTIN_REALM_ROLES",
    "RoleSettings",
    "RoleEntry",
    "Grants",
    "KeycloakRoles",
    "role_names",
    "grants_from_names",
    "key_problem",
    "display_name",
    "grant_items",
    "direct_roles_beyond_builtin",
]

MAX_KEY = 200  # AddProjectRoleRequest.roleKey / displayName / group: 1..200 runes (docs/roles.md)

BUILTIN_REALM_ROLES = frozenset({"offline_access", "uma_authorization"})
BUILTIN_CLIENTS = frozenset(
    {"account", "account-console", "realm-management", "broker", "admin-cli", "security-admin-console"}
)

# A role: (client id, name); client id "" for a realm role.
Role = tuple[str, str]
# One project role: (project id, key, display name, group).
RoleEntry = tuple[str, str, str, str]


@dataclasses.dataclass(frozen=True)
class RoleSettings:
    """The role flags of a run (picklable): ``--project-id`` and friends."""

    project_id: str
    create_project: str | None = None
    # ``(Keycloak client id, ZITADEL project id)`` pairs from ``--client-project``.
    client_projects: tuple[tuple[str, str], ...] = ()
    include_builtin: bool = False


def key_problem(key: str) -> str | None:
    """Why ``key`` cannot be a ZITADEL role key (a skip reason), or None."""
    if len(key) > MAX_KEY:
        return "key-too-long"
    if not key.strip() or "\x00" in key:
        return "invalid-key"
    return None


def display_name(description: object, name: str) -> str:
    """The role's description, else its name; at most 200 characters, never empty."""
    text = description.strip() if isinstance(description, str) else ""
    text = (text or name).replace("\x00", "")
    return text[:MAX_KEY] or name[:MAX_KEY]


def _names(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def role_names(value: object) -> list[str]:
    """A list of role names, each a string or ``{"name": ...}`` (Auth0 role files); others ignored."""
    out: list[str] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, Mapping):
            item = item.get("name")
        if isinstance(item, str) and item:
            out.append(item)
    return out


def grants_from_names(
    names: Iterable[str], project_id: str, counts: collections.Counter[str] | None = None
) -> Grants:
    """Role names of one project (Auth0) → grants; outcomes counted into ``counts`` under
    ``roles.`` (``assigned``, ``skipped.<reason>``). A tuple must hold each name once (what
    ``auth0.profile_roles`` gives); other iterables may repeat a name."""
    unique = names if isinstance(names, (set, frozenset, tuple)) else set(names)
    keys = [n for n in unique if 0 < len(n) <= MAX_KEY and "\x00" not in n and n.strip()]
    if counts is not None:
        counts[counters.ROLES_ASSIGNED] += len(unique)
        if len(keys) != len(unique):
            for name in unique:
                problem = key_problem(name)
                if problem is not None:
                    counts[counters.ROLES_SKIPPED + problem] += 1
    return ((project_id, tuple(sorted(keys))),) if keys else ()


@dataclasses.dataclass
class KeycloakRoles:
    """A realm's role definitions (roles, composites, groups) and the run's role settings."""

    settings: RoleSettings
    descriptions: dict[Role, str]
    composites: dict[Role, tuple[Role, ...]]
    group_roles: dict[str, tuple[Role, ...]]
    builtin_realm: frozenset[str]
    _memo: dict[Any, tuple[Grants, tuple[tuple[str, int], ...]]] = dataclasses.field(
        default_factory=dict, repr=False
    )

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_memo"] = {}
        return state

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_realm(cls, realm: Mapping[str, object], settings: RoleSettings) -> KeycloakRoles:
        return cls.from_parts([realm], settings)

    @classmethod
    def from_parts(cls, parts: Iterable[Mapping[str, object]], settings: RoleSettings) -> KeycloakRoles:
        """Merge the definitions of several documents (a split export's realm file and parts)."""
        descriptions: dict[Role, str] = {}
        composites: dict[Role, tuple[Role, ...]] = {}
        group_roles: dict[str, tuple[Role, ...]] = {}
        builtin = set(BUILTIN_REALM_ROLES)
        for realm in parts:
            name = realm.get("realm")
            if isinstance(name, str) and name:
                builtin.add(f"default-roles-{name.lower()}")
            default = realm.get("defaultRole")
            if isinstance(default, Mapping) and isinstance(default.get("name"), str):
                builtin.add(default["name"])
            builtin.update(_names(realm.get("defaultRoles")))
            roles = realm.get("roles")
            roles = roles if isinstance(roles, Mapping) else {}
            for rep in roles.get("realm") or []:
                _add_role(
                    ("", rep.get("name")) if isinstance(rep, Mapping) else None, rep, descriptions, composites
                )
            clients = roles.get("client")
            for client, reps in clients.items() if isinstance(clients, Mapping) else []:
                for rep in reps if isinstance(reps, list) else []:
                    role = (str(client), rep.get("name")) if isinstance(rep, Mapping) else None
                    _add_role(role, rep, descriptions, composites)
            _add_groups(realm.get("groups"), "", group_roles)
        return cls(settings, descriptions, composites, group_roles, frozenset(builtin))

    # ------------------------------------------------------------------ per user
    def is_builtin(self, role: Role) -> bool:
        client, name = role
        return client in BUILTIN_CLIENTS if client else name in self.builtin_realm

    def effective(self, user: Mapping[str, object]) -> set[Role]:
        """Direct roles + group (and ancestor group) roles, composites expanded transitively."""
        start: list[Role] = [("", n) for n in _names(user.get("realmRoles"))]
        clients = user.get("clientRoles")
        if isinstance(clients, Mapping):
            for client, names in clients.items():
                start += [(str(client), n) for n in _names(names)]
        for path in _names(user.get("groups")):
            for ancestor in _ancestors(path):
                start += self.group_roles.get(ancestor, ())
        seen: set[Role] = set()
        stack = list(start)
        while stack:
            role = stack.pop()
            if role in seen:
                continue
            seen.add(role)
            stack.extend(self.composites.get(role, ()))
        return seen

    def entry(self, role: Role) -> RoleEntry:
        """Where ``role`` goes: (project id, key, display name, group)."""
        client, name = role
        display = display_name(self.descriptions.get(role), name)
        if not client:
            return self.settings.project_id, name, display, ""
        mapped = dict(self.settings.client_projects).get(client)
        if mapped is not None:
            return mapped, name, display, client[:MAX_KEY]
        return self.settings.project_id, f"{client}:{name}", display, client[:MAX_KEY]

    def user_grants(self, user: Mapping[str, object]) -> tuple[Grants, tuple[tuple[str, int], ...]]:
        """The user's grants and the outcome counts of its role assignments (``assigned``,
        ``skipped.<reason>``, ``undefined``); memoised on the user's direct roles and groups."""
        memo_key = (
            _freeze(user.get("realmRoles")),
            _freeze(user.get("clientRoles")),
            _freeze(user.get("groups")),
        )
        cached = self._memo.get(memo_key)
        if cached is not None:
            return cached
        outcomes: collections.Counter[str] = collections.Counter()
        per_project: dict[str, set[str]] = {}
        for role in self.effective(user):
            outcomes["assigned"] += 1
            if not self.settings.include_builtin and self.is_builtin(role):
                outcomes["skipped.builtin"] += 1
                continue
            project, key, _, _ = self.entry(role)
            problem = key_problem(key)
            if problem is not None:
                outcomes["skipped." + problem] += 1
                continue
            if role not in self.descriptions:
                outcomes["undefined"] += 1
            per_project.setdefault(project, set()).add(key)
        grants = tuple((p, tuple(sorted(keys))) for p, keys in sorted(per_project.items()))
        result = (grants, tuple(sorted(outcomes.items())))
        if len(self._memo) < 100_000:
            self._memo[memo_key] = result
        return result

    def held_entries(self, user: Mapping[str, object]) -> list[RoleEntry]:
        """The project roles of the roles ``user`` holds that the export does not define."""
        out = []
        for role in self.effective(user):
            if role in self.descriptions or (not self.settings.include_builtin and self.is_builtin(role)):
                continue
            entry = self.entry(role)
            if key_problem(entry[1]) is None:
                out.append(entry)
        return out

    def defined_entries(self) -> list[RoleEntry]:
        """Every defined role that gets a project role (built-ins only with ``include_builtin``)."""
        out = []
        for role in self.descriptions:
            if not self.settings.include_builtin and self.is_builtin(role):
                continue
            entry = self.entry(role)
            if key_problem(entry[1]) is None:
                out.append(entry)
        return sorted(out)


def grant_items(user_id: str, grants: Grants) -> bytes:
    """The ``userGrants`` items of one user, without brackets (b"" for none)."""
    if not grants:
        return b""
    return b",".join(
        orjson.dumps({"userId": user_id, "projectId": project, "roleKeys": list(keys)})
        for project, keys in grants
    )


def _add_role(role: tuple[str, object] | None, rep: Any, descriptions: dict, composites: dict) -> None:
    if role is None or not isinstance(role[1], str) or not role[1]:
        return
    descriptions.setdefault(role, rep.get("description") if isinstance(rep.get("description"), str) else "")
    inner = rep.get("composites")
    if not isinstance(inner, Mapping):
        return
    found: list[Role] = [("", n) for n in _names(inner.get("realm"))]
    for key in ("client", "application"):  # "application" is the deprecated spelling
        clients = inner.get(key)
        if isinstance(clients, Mapping):
            for client, names in clients.items():
                found += [(str(client), n) for n in _names(names)]
    composites[role] = tuple(dict.fromkeys(composites.get(role, ()) + tuple(found)))


def _add_groups(groups: object, parent: str, out: dict[str, tuple[Role, ...]]) -> None:
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, Mapping):
            continue
        name = group.get("name")
        path = group.get("path")
        if not isinstance(path, str) or not path:
            path = f"{parent}/{name}" if isinstance(name, str) else ""
        if not path:
            continue
        roles: list[Role] = [("", n) for n in _names(group.get("realmRoles"))]
        clients = group.get("clientRoles")
        if isinstance(clients, Mapping):
            for client, names in clients.items():
                roles += [(str(client), n) for n in _names(names)]
        out[path] = tuple(dict.fromkeys(out.get(path, ()) + tuple(roles)))
        _add_groups(group.get("subGroups"), path, out)


def _ancestors(path: str) -> list[str]:
    """``/a/b/c`` → ``/a/b/c``, ``/a/b``, ``/a``."""
    parts = [p for p in path.split("/") if p] if path.startswith("/") else [path]
    out = []
    for i in range(len(parts), 0, -1):
        out.append("/" + "/".join(parts[:i]))
    if not path.startswith("/"):
        out.append(path)  # a hand-written name without a leading slash
    return out


def _freeze(value: object) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    return value


# --------------------------------------------------------------------------- loading a realm


def direct_roles_beyond_builtin(user: Mapping[str, object], realm: str) -> bool:
    """Without ``--project-id``: does ``user`` hold a role or group beyond Keycloak's built-ins
    (direct assignments only; the summary's hint)?"""
    builtin = BUILTIN_REALM_ROLES | {f"default-roles-{realm.lower()}"}
    if any(n not in builtin for n in _names(user.get("realmRoles"))):
        return True
    clients = user.get("clientRoles")
    if isinstance(clients, Mapping) and any(
        c not in BUILTIN_CLIENTS and _names(v) for c, v in clients.items()
    ):
        return True
    return bool(_names(user.get("groups")))
