"""A Keycloak realm's role definitions, read in the launcher for ``--project-id`` (docs/roles.md).

The realm's ``roles``, ``groups`` and default role become a :class:`KeycloakRoles` model
(transforms/mapping/roles.py) that the reader uses to turn each user's roles and groups into
grants. Users files of a split export hold no definitions and are not read.

Example::

    model = load_keycloak_roles("exports/", "acme", role_settings)
"""

from __future__ import annotations

from collections.abc import Mapping

import ijson

from transforms.common.errors import one_line
from transforms.mapping.roles import KeycloakRoles, RoleSettings
from transforms.sources.keycloak.realm_files import (
    RealmInputError,
    expand_realm,
    is_users_part,
    open_realm_file,
    scan_top_level,
)

__all__ = ["load_keycloak_roles"]

_DEFINITION_KEYS = ("realm", "roles", "groups", "defaultRole", "defaultRoles")


def load_keycloak_roles(realm: str, realm_name: str | None, settings: RoleSettings) -> KeycloakRoles:
    """The role definitions of ``--realm`` (a file, a multi-realm array, or a split export's
    files) for ``realm_name`` (None: the only realm). Users files of a split export hold none and
    are not read; a single-file realm is streamed once per definition key (ijson's C backend
    skips the users array without building it). Raises ValueError with one line."""
    parts: list[Mapping[str, object]] = []
    for path in expand_realm(realm):
        if is_users_part(path):
            continue  # <realm>-users-N.json
        try:
            top = scan_top_level(path)
            if top.array:
                parts += _array_definitions(path, realm_name)
                continue
            doc = _file_definitions(path)
        except (OSError, ijson.JSONError, RealmInputError) as err:
            raise ValueError(f"cannot read the roles of {path}: {one_line(err)}") from None
        if realm_name is not None and doc.get("realm") not in (None, realm_name):
            continue
        parts.append(doc)
    return KeycloakRoles.from_parts(parts, settings)


def _array_definitions(path: str, realm_name: str | None) -> list[Mapping[str, object]]:
    """The definitions of the realms of a multi-realm array named ``realm_name`` (None: all)."""
    parts: list[Mapping[str, object]] = []
    with open_realm_file(path) as handle:
        for item in ijson.items(handle, "item", use_float=True):
            if isinstance(item, Mapping) and (realm_name is None or item.get("realm") == realm_name):
                parts.append({k: item.get(k) for k in _DEFINITION_KEYS})
    return parts


def _file_definitions(path: str) -> dict[str, object]:
    """The definition keys of a single realm file, each read by its own streamed pass."""
    doc: dict[str, object] = {}
    for key in _DEFINITION_KEYS:
        with open_realm_file(path) as handle:
            found = next(iter(ijson.items(handle, key, use_float=True)), None)
        if found is not None:
            doc[key] = found
    return doc
