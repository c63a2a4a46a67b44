"""Which realm files and realms a run reads (transforms/sources/keycloak/realm_files.py)."""

from __future__ import annotations

import os

import pytest
from keycloak_fixtures import make_user, split_export_files, write_json

from transforms.sources.keycloak.realm_files import RealmInputError, RealmSource, plan_realm_sources

# --------------------------------------------------------------------------- planning


def test_plan_split_export_directory_orders_files(tmp_path):
    split_export_files(tmp_path / "exp", "acme", [2] * 11)
    sources = plan_realm_sources(str(tmp_path / "exp"))
    names = [os.path.basename(s.path) for s in sources]
    assert names == [f"acme-users-{n}.json" for n in range(11)]  # realm file has no users; 10 after 9
    assert [s.index for s in sources] == list(range(11))


def test_plan_realm_file_alone_finds_its_users_files(tmp_path):
    split_export_files(tmp_path, "acme", [1, 1])
    sources = plan_realm_sources(str(tmp_path / "acme-realm.json"))
    assert [os.path.basename(s.path) for s in sources] == ["acme-users-0.json", "acme-users-1.json"]


def test_plan_several_realms_needs_a_name(tmp_path):
    split_export_files(tmp_path, "acme", [1])
    split_export_files(tmp_path, "master", [1])
    with pytest.raises(RealmInputError, match="several realms.*--realm-name"):
        plan_realm_sources(str(tmp_path))
    assert [os.path.basename(s.path) for s in plan_realm_sources(str(tmp_path), "master")] == [
        "master-users-0.json"
    ]
    with pytest.raises(RealmInputError, match="no realm named 'nope'"):
        plan_realm_sources(str(tmp_path), "nope")


def test_plan_multi_realm_array(tmp_path):
    path = write_json(
        tmp_path / "all.json",
        [
            {"realm": "master", "users": [make_user(1)]},
            {"realm": "acme", "users": [make_user(2), make_user(3)]},
        ],
    )
    with pytest.raises(RealmInputError, match="master"):
        plan_realm_sources(str(path))
    assert plan_realm_sources(str(path), "acme") == [RealmSource(0, str(path), 1, "acme")]


@pytest.mark.parametrize(
    "content,message",
    [
        (b'{"realm": "a", "enabled": true, "clients": []}', 'no "users" array'),
        (b'{"realm": "a", "users": null}', 'no "users" array'),
        (b'{"realm": "a", "roles": {"realm": [', "not valid JSON"),
        (b"", "empty"),
        (b'"just a string"', "not a Keycloak realm export"),
    ],
)
def test_plan_rejects_unusable_documents(tmp_path, content, message):
    path = tmp_path / "realm.json"
    path.write_bytes(content)
    with pytest.raises(RealmInputError, match=message):
        plan_realm_sources(str(path))


def test_plan_missing_file(tmp_path):
    with pytest.raises(RealmInputError, match="no such file"):
        plan_realm_sources(str(tmp_path / "missing.json"))
