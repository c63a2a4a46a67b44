"""A realm's role definitions read from its files (transforms/sources/keycloak/roles.py)."""

from __future__ import annotations

import orjson
import pytest

from transforms.mapping.roles import RoleSettings
from transforms.sources.keycloak.roles import load_keycloak_roles

SETTINGS = RoleSettings(project_id="p1")


def _realm(name: str, *roles: str, users: list[dict] | None = None) -> dict:
    doc: dict = {"realm": name, "roles": {"realm": [{"name": role} for role in roles]}}
    if users is not None:
        doc["users"] = users
    return doc


def _keys(model) -> list[str]:
    return [entry[1] for entry in model.defined_entries()]


def test_single_realm_file_defines_its_roles(tmp_path):
    path = tmp_path / "realm.json"
    path.write_bytes(orjson.dumps(_realm("acme", "admin", "viewer", users=[{"username": "u"}])))
    assert _keys(load_keycloak_roles(str(path), None, SETTINGS)) == ["admin", "viewer"]


def test_split_export_reads_the_realm_file_and_skips_users_files(tmp_path):
    (tmp_path / "acme-realm.json").write_bytes(orjson.dumps(_realm("acme", "admin")))
    # A users file is never read for definitions, even when it (wrongly) holds some.
    (tmp_path / "acme-users-0.json").write_bytes(orjson.dumps(_realm("acme", "ghost", users=[])))
    assert _keys(load_keycloak_roles(str(tmp_path), None, SETTINGS)) == ["admin"]


def test_multi_realm_array_takes_the_named_realm(tmp_path):
    path = tmp_path / "realms.json"
    path.write_bytes(orjson.dumps([_realm("acme", "admin"), _realm("other", "boss")]))
    assert _keys(load_keycloak_roles(str(path), "other", SETTINGS)) == ["boss"]


def test_a_file_of_another_realm_is_left_out(tmp_path):
    (tmp_path / "acme-realm.json").write_bytes(orjson.dumps(_realm("acme", "admin")))
    (tmp_path / "other-realm.json").write_bytes(orjson.dumps(_realm("other", "boss")))
    assert _keys(load_keycloak_roles(str(tmp_path), "acme", SETTINGS)) == ["admin"]


def test_unreadable_file_is_one_line(tmp_path):
    path = tmp_path / "realm.json"
    path.write_bytes(b'{"realm": "acme", "roles": {"realm": [')
    with pytest.raises(ValueError, match=r"^cannot read the roles of .*realm\.json: [^\n]*$"):
        load_keycloak_roles(str(path), None, SETTINGS)
