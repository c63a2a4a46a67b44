"""Keycloak roles and groups → project roles and user grants (transforms/mapping/roles.py, grants.py),
through ``migrate keycloak`` with ``--project-id`` and friends (docs/roles.md)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from repo_files import DATA_DIR
from zitadel_fixtures import zitadel_fixture  # noqa: F401 - a pytest fixture, used by name

from pipeline.cli import main
from transforms.common.errors import ConfigError
from transforms.mapping.roles import KeycloakRoles, RoleSettings
from transforms.output.grants import resolve
from transforms.output.manifest import load_manifest

DATA = DATA_DIR
REALWORLD = DATA / "realworld" / "keycloak"


def _role(name: str, description: str | None = None, composites: dict | None = None) -> dict:
    rep: dict = {"name": name}
    if description is not None:
        rep["description"] = description
    if composites:
        rep["composite"] = True
        rep["composites"] = composites
    return rep


def realm_doc(users: list[dict] | None = None) -> dict:
    """A realm with composites (a cycle too), nested groups, client roles and built-ins."""
    doc: dict = {
        "realm": "Acme",
        "roles": {
            "realm": [
                _role("offline_access"),
                _role("uma_authorization"),
                _role(
                    "default-roles-acme",
                    composites={
                        "realm": ["offline_access", "uma_authorization"],
                        "client": {"account": ["view-profile"]},
                    },
                ),
                _role("admin", "Administrators", composites={"realm": ["editor"]}),
                _role("editor", composites={"realm": ["viewer"], "client": {"shop": ["buyer"]}}),
                _role("viewer", "Can view"),
                _role("loop-a", composites={"realm": ["loop-b"]}),
                _role("loop-b", composites={"realm": ["loop-a"]}),
                _role("Ops"),
                _role("ops"),
                _role("x" * 201),
            ],
            "client": {
                "shop": [_role("buyer", "Buys things"), _role("seller")],
                "billing": [_role("payer")],
                "account": [_role("view-profile"), _role("manage-account")],
            },
        },
        "groups": [
            {
                "name": "staff",
                "path": "/staff",
                "realmRoles": ["viewer"],
                "subGroups": [
                    {"name": "sellers", "path": "/staff/sellers", "clientRoles": {"shop": ["seller"]}},
                    # Older exports give no path: it is the parent's path + the name.
                    {"name": "payers", "clientRoles": {"billing": ["payer"]}},
                ],
            }
        ],
        "defaultRole": {"name": "default-roles-acme", "composite": True},
    }
    if users is not None:
        doc["users"] = users
    return doc


def user(n: int, **extra) -> dict:
    out = {
        "id": f"id-{n}",
        "username": f"user{n}",
        "enabled": True,
        "email": f"user{n}@example.com",
        "emailVerified": True,
        "firstName": f"F{n}",
        "lastName": f"L{n}",
    }
    out.update(extra)
    return out


SETTINGS = RoleSettings("p1")


def test_effective_roles_follow_groups_ancestors_and_composites_with_cycles():
    model = KeycloakRoles.from_realm(realm_doc(), SETTINGS)
    grants, outcomes = model.user_grants(
        {"realmRoles": ["admin", "loop-a", "default-roles-acme"], "groups": ["/staff/sellers"]}
    )
    # admin → editor → viewer + shop:buyer; /staff/sellers → shop:seller and /staff → viewer.
    assert grants == (("p1", ("admin", "editor", "loop-a", "loop-b", "shop:buyer", "shop:seller", "viewer")),)
    counted = dict(outcomes)
    # default-roles-acme, offline_access, uma_authorization and account:view-profile are built-ins.
    assert counted["skipped.builtin"] == 4
    assert counted["assigned"] == 7 + 4
    assert "undefined" not in counted


def test_group_without_path_and_mapped_client_project():
    model = KeycloakRoles.from_realm(realm_doc(), RoleSettings("p1", client_projects=(("shop", "p-shop"),)))
    grants, _ = model.user_grants({"groups": ["/staff/payers"], "clientRoles": {"shop": ["buyer"]}})
    assert grants == (("p-shop", ("buyer",)), ("p1", ("billing:payer", "viewer")))  # by project id
    entries = {e[:2]: e for e in model.defined_entries()}
    assert entries[("p-shop", "buyer")] == ("p-shop", "buyer", "Buys things", "shop")
    assert entries[("p1", "billing:payer")] == ("p1", "billing:payer", "payer", "billing")
    assert entries[("p1", "admin")] == ("p1", "admin", "Administrators", "")


def test_builtins_carried_on_request_and_undefined_roles_counted():
    model = KeycloakRoles.from_realm(realm_doc(), RoleSettings("p1", include_builtin=True))
    grants, outcomes = model.user_grants(
        {"realmRoles": ["offline_access", "ghost"], "clientRoles": {"x": ["y"]}}
    )
    assert grants == (("p1", ("ghost", "offline_access", "x:y")),)
    assert dict(outcomes)["undefined"] == 2
    assert sorted(model.held_entries({"realmRoles": ["ghost"]})) == [("p1", "ghost", "ghost", "")]


def test_long_keys_are_skipped_and_counted_the_rest_arrives():
    model = KeycloakRoles.from_realm(realm_doc(), SETTINGS)
    grants, outcomes = model.user_grants({"realmRoles": ["x" * 201, "viewer"]})
    assert grants == (("p1", ("viewer",)),)
    assert dict(outcomes)["skipped.key-too-long"] == 1
    assert all(len(e[1]) <= 200 for e in model.defined_entries())


def test_case_collisions_keep_the_first_in_sorted_order():
    kept, losers = resolve([("p1", "ops", "ops", ""), ("p1", "Ops", "Ops", ""), ("p2", "ops", "ops", "")])
    assert kept == [("p1", "Ops", "Ops", ""), ("p1", "ops", "ops", "")][:1] + [("p2", "ops", "ops", "")]
    assert losers == frozenset({("p1", "ops")})


# --------------------------------------------------------------------------- migrate keycloak


def _run(tmp_path: Path, *args: str) -> tuple[int, dict | None]:
    output = tmp_path / "out" / "importBody.json"
    code = main(["migrate", "keycloak", "--org=123", f"--output={output}", *args])
    manifest = tmp_path / "out" / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _bodies(tmp_path: Path, manifest: dict) -> list[dict]:
    return [json.loads((tmp_path / "out" / b["path"]).read_bytes()) for b in manifest["bodies"]]


def _grants(bodies: list[dict]) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for body in bodies:
        for org in body["dataOrgs"]["orgs"]:
            for grant in org.get("userGrants", []):
                out.setdefault(grant["userId"], {})[grant["projectId"]] = grant["roleKeys"]
    return out


def test_migrate_keycloak_writes_authorizations_first_and_grants_per_user(tmp_path):
    users = [
        user(1, realmRoles=["admin", "default-roles-acme"]),
        user(2, groups=["/staff/sellers"], clientRoles={"shop": ["buyer"], "account": ["manage-account"]}),
        user(3, realmRoles=["Ops", "ops"]),  # the same key up to case: "Ops" is kept
        user(4, realmRoles=["default-roles-acme"]),  # built-ins only: no grant
        user(5, enabled=False, realmRoles=["viewer"]),  # dead-lettered: no grant, counted
        user(6, username="user1", realmRoles=["viewer", "ghost"]),  # duplicate user name
        user(7, realmRoles=["ghost"], groups=["/nowhere"]),  # a role the realm does not define
    ]
    realm = tmp_path / "realm.json"
    realm.write_bytes(orjson.dumps(realm_doc(users)))
    code, manifest = _run(
        tmp_path,
        f"--realm={realm}",
        "--project-id=p1",
        "--create-project=Acme app",
        "--client-project=shop=p-shop",
        "--batch-size=2",
    )
    assert code == 0 and manifest is not None
    first = manifest["bodies"][0]
    assert first["kind"] == "authorizations" and first["users"] == 0
    assert all(b["after"] == [0] for b in manifest["bodies"][1:])
    bodies = _bodies(tmp_path, manifest)
    org = bodies[0]["dataOrgs"]["orgs"][0]
    assert org["projects"] == [{"projectId": "p1", "project": {"name": "Acme app"}}]
    keys = {(r["projectId"], r["roleKey"]) for r in org["projectRoles"]}
    assert ("p1", "Ops") in keys and ("p1", "ops") not in keys
    assert ("p1", "ghost") in keys  # held but not defined: still created
    assert ("p-shop", "buyer") in keys and ("p1", "shop:buyer") not in keys
    assert not any("offline_access" in k or k.startswith("account:") for _, k in keys)
    grants = _grants(bodies[1:])
    assert grants == {
        "id-1": {"p1": ["admin", "editor", "viewer"], "p-shop": ["buyer"]},
        "id-2": {"p1": ["viewer"], "p-shop": ["buyer", "seller"]},
        "id-3": {"p1": ["Ops"]},
        "id-7": {"p1": ["ghost"]},
    }
    auth = manifest["authorizations"]
    assert auth["invariant"]["holds"], auth
    assert auth["grants"] == 6 and auth["users_with_roles"] == 4
    skipped = auth["skipped"]
    assert skipped["key-case-collision"] == 1
    assert skipped["user-dead-lettered"] == 3  # user5's viewer, user6's viewer and ghost
    assert skipped["builtin"] >= 5
    assert auth["undefined_roles_held"] == 2  # user7's ghost (carried) and user6's (a duplicate)
    assert manifest["counts"]["bodies_written"] == len(manifest["bodies"])
    # Each body grants only its own users.
    for body in bodies[1:]:
        org = body["dataOrgs"]["orgs"][0]
        ids = {u["userId"] for u in org["humanUsers"]}
        assert {g["userId"] for g in org.get("userGrants", [])} <= ids


def test_without_project_id_only_a_summary_line(tmp_path, capsys):
    realm = tmp_path / "realm.json"
    realm.write_bytes(orjson.dumps(realm_doc([user(1, realmRoles=["admin"]), user(2)])))
    code, manifest = _run(tmp_path, f"--realm={realm}")
    assert code == 0 and manifest is not None
    assert "users holding roles (not carried: --project-id carries them)" in capsys.readouterr().out
    assert manifest["authorizations"] == {"users_holding_roles": 1}
    assert (
        len(manifest["bodies"]) == 1
        and "userGrants" not in (tmp_path / "out" / "importBody.json").read_text()
    )


def test_split_export_reads_roles_from_the_realm_file(tmp_path):
    doc = realm_doc()
    export = tmp_path / "export"  # a run never writes into the folder its --realm reads
    export.mkdir()
    (export / "acme-realm.json").write_bytes(orjson.dumps(doc))
    (export / "acme-users-0.json").write_bytes(
        orjson.dumps({"realm": "Acme", "users": [user(1, groups=["/staff"]), user(2, realmRoles=["editor"])]})
    )
    code, manifest = _run(tmp_path, f"--realm={export}", "--project-id=p1")
    assert code == 0 and manifest is not None
    grants = _grants(_bodies(tmp_path, manifest)[1:])
    assert grants == {"id-1": {"p1": ["viewer"]}, "id-2": {"p1": ["editor", "shop:buyer", "viewer"]}}
    assert "projects" not in _bodies(tmp_path, manifest)[0]["dataOrgs"]["orgs"][0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--create-project=X"], "--create-project needs --project-id"),
        (["--project-id=p 1"], "--project-id 'p 1' is not a project id"),
        (["--project-id=p1", "--client-project=shop"], "expected CLIENT=PROJECT_ID"),
    ],
)
def test_role_flag_errors_are_one_line(tmp_path, capsys, args, message):
    realm = tmp_path / "realm.json"
    realm.write_bytes(orjson.dumps(realm_doc([user(1)])))
    code, _ = _run(tmp_path, f"--realm={realm}", *args)
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_realworld_exports_account_for_every_role(tmp_path):
    """The real-world realms in tests/data: only built-ins and role-less groups there, so every
    assignment is a counted skip and no grant is written."""
    builtin = 0
    for path in sorted(REALWORLD.glob("*.json")):
        out = tmp_path / path.stem
        out.mkdir()
        args = [f"--realm={path}", "--project-id=p1", "--on-unsupported-hash=import-without-password"]
        code, manifest = _run(out, *args)
        assert code == 0 and manifest is not None, path.name
        auth = manifest["authorizations"]
        assert auth["invariant"]["holds"], (path.name, auth)
        builtin += auth["skipped"]["builtin"]
        assert auth["assignments"] == auth["assignments_carried"] + sum(auth["skipped"].values())
    assert builtin > 0


def test_realworld_split_users_file_with_its_realm_groups(tmp_path):
    """JHipster's users part (tests/data) beside a realm file that maps its groups to roles, as
    JHipster's own realm does (Admins → ROLE_ADMIN, Users → ROLE_USER)."""
    export = tmp_path / "export"  # a run never writes into the folder its --realm reads
    export.mkdir()
    (export / "jhipster-users-0.json").write_bytes((REALWORLD / "jhipster-split-users-0.json").read_bytes())
    realm = {
        "realm": "jhipster",
        "roles": {
            "realm": [_role("ROLE_ADMIN", "Admin"), _role("ROLE_USER", "User"), _role("offline_access")]
        },
        "groups": [
            {"name": "Admins", "path": "/Admins", "realmRoles": ["ROLE_ADMIN"]},
            {"name": "Users", "path": "/Users", "realmRoles": ["ROLE_USER"]},
        ],
    }
    (export / "jhipster-realm.json").write_bytes(orjson.dumps(realm))
    code, manifest = _run(
        tmp_path, f"--realm={export}", "--project-id=p1", "--on-unsupported-hash=import-without-password"
    )
    assert code == 0 and manifest is not None
    users = json.loads((REALWORLD / "jhipster-split-users-0.json").read_bytes())["users"]
    want = {
        u["id"]: {"p1": sorted({"/Admins": "ROLE_ADMIN", "/Users": "ROLE_USER"}[g] for g in u["groups"])}
        for u in users
    }
    assert _grants(_bodies(tmp_path, manifest)[1:]) == want
    assert manifest["authorizations"]["invariant"]["holds"]


# --------------------------------------------------------------------------- push and verify


def _seed_project(server, project_id: str, org_id: str = "123") -> None:
    server.import_data(
        {
            "dataOrgs": {
                "orgs": [{"orgId": org_id, "projects": [{"projectId": project_id, "project": {"name": "X"}}]}]
            },
            "timeout": "1m",
        }
    )


def _migrated(tmp_path: Path, *flags: str) -> Path:
    users = [
        user(1, realmRoles=["admin"]),
        user(2, groups=["/staff/sellers"]),
        user(3, realmRoles=["Ops", "ops", "ghost"]),
        user(4),
        user(5, clientRoles={"billing": ["payer"]}),
    ]
    realm = tmp_path / "realm.json"
    realm.write_bytes(orjson.dumps(realm_doc(users)))
    code, manifest = _run(tmp_path, f"--realm={realm}", "--project-id=p1", "--batch-size=2", *flags)
    assert code == 0 and manifest is not None
    return tmp_path / "out" / "importBody.manifest.json"


def _server_grants(server) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for event in server.state.events:
        if event.event_type == "user.grant.added":
            out.setdefault(event.payload["userId"], {})[event.payload["projectId"]] = event.payload[
                "roleKeys"
            ]
    return out


def test_push_sends_authorizations_first_then_grants_and_a_rerun_finds_them_present(zitadel, tmp_path):
    from zitadel_fixtures import PAT

    from transforms.push import engine as push_engine
    from transforms.zitadel_api.credentials import Credentials

    manifest = _migrated(tmp_path, "--create-project=Acme", "--client-project=shop=p-shop")
    token = Credentials("token", token=PAT)
    with pytest.raises(ConfigError, match="project p-shop does not exist"):
        push_engine.push_manifest(load_manifest(str(manifest)), zitadel.url, token, progress=False)
    assert zitadel.state.import_calls == 0  # nothing was sent
    _seed_project(zitadel, "p-shop")
    calls = zitadel.state.import_calls
    report = push_engine.push_manifest(
        load_manifest(str(manifest)), zitadel.url, token, progress=False, verify=True
    )
    assert report.ok, report.table()
    assert report.verify.grants_expected == 6 and report.verify.missing_grants == []
    first = zitadel.state.import_log[calls]
    assert first[4] == 0  # the authorizations body, alone and first
    assert all(entry[0] >= first[1] for entry in zitadel.state.import_log[calls + 1 :])
    assert _server_grants(zitadel) == {
        "id-1": {"p1": ["admin", "editor", "viewer"], "p-shop": ["buyer"]},
        "id-2": {"p1": ["viewer"], "p-shop": ["seller"]},
        "id-3": {"p1": ["Ops", "ghost"]},
        "id-5": {"p1": ["billing:payer"]},
    }
    # A re-run with another ledger: project, roles, users and grants all exist → present, ok.
    again = push_engine.push_manifest(
        load_manifest(str(manifest)), zitadel.url, token, progress=False, results_dir=str(tmp_path / "again")
    )
    assert again.ok and again.failed == 0 and again.present == 5, again.table()
    assert len([e for e in zitadel.state.events if e.event_type == "user.grant.added"]) == 6


def test_push_refuses_a_missing_project_and_verify_names_missing_grants(zitadel, tmp_path):
    from zitadel_fixtures import PAT

    from transforms.push import engine as push_engine
    from transforms.push import verification as verify_engine
    from transforms.zitadel_api.credentials import Credentials

    manifest = _migrated(tmp_path)
    token = Credentials("token", token=PAT)
    with pytest.raises(ConfigError, match="project p1 does not exist.*--create-project"):
        push_engine.push_manifest(load_manifest(str(manifest)), zitadel.url, token, progress=False)
    _seed_project(zitadel, "p1")
    report = push_engine.push_manifest(load_manifest(str(manifest)), zitadel.url, token, progress=False)
    assert report.ok, report.table()
    # A grant lost on the server's side: verify names it.
    zitadel.state.events = [
        e
        for e in zitadel.state.events
        if not (e.event_type == "user.grant.added" and e.payload["userId"] == "id-2")
    ]
    checked = verify_engine.verify_manifest(load_manifest(str(manifest)), zitadel.url, token)
    assert not checked.ok and checked.missing_grants == ["id-2@p1"]
    assert "grants 3 of 4 arrived" in checked.table()


def test_server_enforces_role_and_grant_rules(zitadel):
    _seed_project(zitadel, "p1")
    answer = zitadel.import_data(
        {
            "dataOrgs": {
                "orgs": [
                    {
                        "orgId": "123",
                        "humanUsers": [
                            {
                                "userId": "u1",
                                "user": {
                                    "userName": "u1",
                                    "profile": {"firstName": "a", "lastName": "b"},
                                    "email": {"email": "u1@a.io"},
                                },
                            }
                        ],
                        "projectRoles": [
                            {"projectId": "p1", "roleKey": "Admin", "displayName": "A"},
                            {"projectId": "p1", "roleKey": "admin", "displayName": "a"},
                            {"projectId": "nope", "roleKey": "x", "displayName": "x"},
                        ],
                        "userGrants": [
                            {"userId": "u1", "projectId": "p1", "roleKeys": ["admin"]},
                            {"userId": "u1", "projectId": "p1", "roleKeys": ["Admin"]},
                            {"userId": "u1", "projectId": "p1", "roleKeys": ["Admin"]},
                            {"userId": "ghost", "projectId": "p1", "roleKeys": ["Admin"]},
                        ],
                    }
                ]
            },
            "timeout": "1m",
        }
    )
    messages = [(e["type"], e["id"], e["message"].split("Message=")[1]) for e in answer["errors"]][1:]
    assert answer["errors"][0]["type"] == "org"  # the org came with the seeded project
    assert messages == [
        ("project_role", "p1_admin", "Errors.Project.Role.AlreadyExists"),
        ("project_role", "nope_x", "Errors.Project.NotFound"),
        ("user_grant", "123_p1_u1", "Errors.Project.Role.NotFound"),
        ("user_grant", "123_p1_u1", "Errors.UserGrant.AlreadyExists"),
        ("user_grant", "123_p1_ghost", "Errors.User.NotFound"),
    ]


# --------------------------------------------------------------------------- migrate auth0

AUTH0 = DATA / "realworld" / "auth0"


def _run_auth0(tmp_path: Path, *args: str) -> tuple[int, dict | None]:
    output = tmp_path / "out" / "importBody.json"
    code = main(["migrate", "auth0", "--org=123", f"--output={output}", "--passwords=none", *args])
    manifest = tmp_path / "out" / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _profile(n: int, **extra) -> dict:
    out = {
        "user_id": f"auth0|{n}",
        "email": f"p{n}@example.com",
        "email_verified": True,
        "given_name": f"G{n}",
        "family_name": f"F{n}",
    }
    out.update(extra)
    return out


def test_auth0_roles_from_the_realworld_profiles(tmp_path):
    users = AUTH0 / "clerk-auth0-users-api-shape.json"
    code, manifest = _run_auth0(
        tmp_path,
        f"--users={users}",
        "--project-id=p1",
        "--create-project=App",
        "--roles-from=app_metadata.roles",
    )
    assert code == 0 and manifest is not None
    profiles = json.loads(users.read_bytes())
    written = {
        u["userId"] for b in _bodies(tmp_path, manifest)[1:] for u in b["dataOrgs"]["orgs"][0]["humanUsers"]
    }
    want = {
        p["user_id"]: {"p1": sorted(set(p["app_metadata"]["roles"]))}
        for p in profiles
        if p["user_id"] in written and p.get("app_metadata", {}).get("roles")
    }
    assert want and _grants(_bodies(tmp_path, manifest)[1:]) == want
    roles = _bodies(tmp_path, manifest)[0]["dataOrgs"]["orgs"][0]["projectRoles"]
    assert {r["roleKey"] for r in roles} == {k for v in want.values() for k in v["p1"]}
    assert manifest["authorizations"]["invariant"]["holds"]


def test_auth0_roles_file_and_profile_path_are_united(tmp_path):
    profiles = [
        _profile(1, app_metadata={"authorization": {"roles": ["Admin", "reader"]}}),
        _profile(2, app_metadata={"authorization": {"roles": ["admin"]}}),  # collides with Admin
        _profile(3),
        _profile(4, blocked=True, app_metadata={"authorization": {"roles": ["reader"]}}),
        _profile(5, app_metadata={"authorization": {"roles": ["r" * 201, "writer"]}}),
    ]
    users = tmp_path / "users.json"
    users.write_bytes(b"\n".join(orjson.dumps(p) for p in profiles))
    records = [
        {"user_id": "auth0|1", "roles": [{"name": "writer"}, "reader"]},
        {"user_id": "auth0|3", "roles": ["reader"]},
        {"user_id": "auth0|4", "roles": ["writer"]},  # its profile is blocked: dead-lettered
        {"user_id": "auth0|99", "roles": ["reader"]},  # no such user
        {"roles": ["reader"]},  # no user_id
    ]
    roles_file = tmp_path / "roles.ndjson"
    roles_file.write_bytes(b"\n".join(orjson.dumps(r) for r in records))
    code, manifest = _run_auth0(
        tmp_path,
        f"--users={users}",
        "--project-id=p1",
        "--roles-from=app_metadata.authorization.roles",
        f"--roles-file={roles_file}",
    )
    assert code == 0 and manifest is not None
    assert _grants(_bodies(tmp_path, manifest)[1:]) == {
        "auth0|1": {"p1": ["Admin", "reader", "writer"]},
        "auth0|3": {"p1": ["reader"]},
        "auth0|5": {"p1": ["writer"]},
    }
    auth = manifest["authorizations"]
    assert auth["invariant"]["holds"], auth
    assert auth["skipped"]["key-case-collision"] == 1
    assert auth["skipped"]["key-too-long"] == 1
    assert auth["skipped"]["user-dead-lettered"] == 2  # user 4's reader and writer
    reasons = sorted(
        (d["source"], d["reason"])
        for d in map(
            json.loads, (tmp_path / "out" / "importBody.dead-letter.ndjson").read_text().splitlines()
        )
        if d["source"] == "auth0-roles"
    )
    assert reasons == [
        ("auth0-roles", "missing-user-id"),
        ("auth0-roles", "profile-rejected"),
        ("auth0-roles", "unknown-user"),
    ]
    assert (
        manifest["invariant"]["holds"]
        and "role records 5 = joined 2 + dead-lettered 3" in manifest["invariant"]["text"]
    )


def test_auth0_without_project_id_counts_users_holding_roles(tmp_path, capsys):
    code, manifest = _run_auth0(tmp_path, f"--users={AUTH0 / 'clerk-auth0-users-api-shape.json'}")
    assert code == 0 and manifest is not None
    assert manifest["authorizations"]["users_holding_roles"] == manifest["counts"]["users_written"] > 0
    assert "--project-id carries them" in capsys.readouterr().out


def test_auth0_project_id_needs_a_roles_source(tmp_path, capsys):
    code, _ = _run_auth0(tmp_path, f"--users={AUTH0 / 'clerk-auth0-users-api-shape.json'}", "--project-id=p1")
    assert code == 2 and "--roles-from" in capsys.readouterr().err


def test_a_rerun_writes_the_same_bytes(tmp_path):
    users = [user(i, realmRoles=["admin"] if i % 2 else ["viewer", "ghost"]) for i in range(12)]
    realm = tmp_path / "realm.json"
    realm.write_bytes(orjson.dumps(realm_doc(users)))
    args = [f"--realm={realm}", "--project-id=p1", "--create-project=A", "--batch-size=5"]
    code, first = _run(tmp_path, *args)
    code_again, again = _run(tmp_path, *args)
    assert code == code_again == 0 and first is not None and again is not None
    assert [b["sha256"] for b in first["bodies"]] == [b["sha256"] for b in again["bodies"]]
    # With --state the first run is the same migration (grants of later runs: tests/scenarios/test_sync_nights.py).
    code, synced = _run(tmp_path, *args, f"--state={tmp_path / 'state'}")
    assert code == 0 and synced is not None
    assert [b["sha256"] for b in synced["bodies"]] == [b["sha256"] for b in first["bodies"]]
