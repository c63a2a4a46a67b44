"""``migrate auth0`` and ``migrate keycloak`` with ``--push-url --push-verify`` against a ZITADEL
without the admin API, with a credential that manages one org only: every user lands in the named
org as an admin import of the same bodies would land it, verify confirms it, a re-run creates
nothing (docs/user-v2.md)."""

from __future__ import annotations

import json
from pathlib import Path

import bcrypt
import pytest
import zitadel_user_v2_create as creation
from keycloak_fixtures import split_export_files
from repo_files import DATA_DIR
from zitadel_fixtures import PAT
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.zitadel_api.user_v2 import CREATE_USER_PATH

ORG = "123456789"
ORG_TOKEN = "org-token-Q7vL2OnlyOrg123456789manager"
DATA = DATA_DIR
VERIFIERS = ("argon2", "pbkdf2")


@pytest.fixture(name="v5")
def v5_fixture():
    server = ZitadelServer(tokens={PAT}, hash_verifiers=VERIFIERS).start()
    server.admin_api = False
    creation.add_org(server, ORG)
    creation.add_org_token(server, ORG_TOKEN, ORG)
    yield server
    server.stop()


def _auth0_export(folder: Path) -> list[str]:
    folder.mkdir(parents=True)
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(10)).decode()
    profiles, passwords = [], []
    for n in range(12):
        uid = f"auth0|{n:024d}"
        profile = {"user_id": uid, "email": f"u{n}@example.com", "email_verified": n % 3 != 0,
                   "given_name": f"G{n}", "family_name": f"F{n}", "app_metadata": {"plan": "pro"}}  # fmt: skip
        profiles.append(profile)
        if n % 4 != 1:
            passwords.append(
                {"_id": {"$oid": f"{n:024d}"}, "email": f"u{n}@example.com", "passwordHash": hashed}
            )
    (folder / "users.json").write_text("".join(json.dumps(p) + "\n" for p in profiles))
    (folder / "passwords.json").write_text("".join(json.dumps(p) + "\n" for p in passwords))
    return [p["user_id"] for p in profiles]


def _migrate(source: str, inputs: list[str], out: Path, url: str, token_file: Path, *extra: str) -> int:
    return main(
        ["migrate", source, f"--org={ORG}", *inputs, f"--output={out / 'importBody.json'}",
         f"--push-url={url}", f"--token-file={token_file}", "--push-verify", *extra]
    )  # fmt: skip


def _held(server: ZitadelServer, ids: list[str]) -> dict[str, dict]:
    return {uid: creation.stored_user(server, uid) for uid in ids}


@pytest.mark.parametrize("source", ["auth0", "keycloak"])
def test_migrate_push_lands_every_user_in_the_named_org_as_an_import_would(source, v5, tmp_path, capsys):
    if source == "auth0":
        ids = _auth0_export(tmp_path / "export")
        inputs = [f"--users={tmp_path / 'export' / 'users.json'}", f"--passwords={tmp_path / 'export' / 'passwords.json'}",
                  "--metadata"]  # fmt: skip
    else:
        ids = [u["id"] for u in split_export_files(tmp_path / "export", "acme", [4, 3])]
        inputs = [
            f"--realm={tmp_path / 'export'}",
            f"--zitadel-config={DATA / 'zitadel-config' / 'verifiers-enabled.yaml'}",
        ]
    token_file = tmp_path / "org-token"
    token_file.write_text(ORG_TOKEN)
    rc = _migrate(source, inputs, tmp_path / "v2", v5.url, token_file)
    out, err = capsys.readouterr()
    assert rc == 0, err[-2000:]
    assert "the user service v2, one call per user: the server has no admin API" in err
    assert "verify: ok, every user was added" in out
    assert v5.user_ids() == set(ids) and v5.user_ids(ORG) == set(ids)
    assert v5.state.import_calls == 0 and v5.v2.notifications == []

    pat_file = tmp_path / "pat"
    pat_file.write_text(PAT)
    with ZitadelServer(tokens={PAT}, hash_verifiers=VERIFIERS) as imported:
        rc = _migrate(source, inputs, tmp_path / "admin", imported.url, pat_file, "--api=admin-import")
        assert rc == 0, capsys.readouterr().err[-2000:]
        assert imported.state.import_calls > 0
        held, expected = _held(v5, ids), _held(imported, ids)
        assert all(creation.same_but_state(held[uid], expected[uid]) for uid in ids), (held, expected)

    posts = sum(1 for path, _ in v5.requests if path == CREATE_USER_PATH)
    rc = _migrate(source, inputs, tmp_path / "v2", v5.url, token_file)
    assert rc == 0 and sum(1 for path, _ in v5.requests if path == CREATE_USER_PATH) == posts
    assert set(v5.added_event_counts().values()) == {1}


def test_verify_names_a_user_found_in_another_org(v5, tmp_path, capsys):
    ids = _auth0_export(tmp_path / "export")
    creation.add_org(v5, "999")
    token_file = tmp_path / "pat"
    token_file.write_text(PAT)
    inputs = [
        f"--users={tmp_path / 'export' / 'users.json'}",
        f"--passwords={tmp_path / 'export' / 'passwords.json'}",
    ]
    assert _migrate("auth0", inputs, tmp_path / "v2", v5.url, token_file) == 0
    capsys.readouterr()
    with v5.state.lock:  # a user moved to another org behind the tool's back
        _, user = v5.state.users[ids[3]]
        v5.state.users[ids[3]] = ("999", user)
    manifest = tmp_path / "v2" / "importBody.manifest.json"
    rc = main(["verify", f"--url={v5.url}", f"--manifest={manifest}", f"--token-file={token_file}"])
    out = capsys.readouterr().out
    assert rc == 1
    assert f"verify: 1 missing user(s) are in another org: {ids[3]} (in 999)" in out
    missing = tmp_path / "v2" / "importBody.results" / "verify-missing.ndjson"
    (line,) = [json.loads(raw) for raw in missing.read_text().splitlines()]
    assert line == {"orgId": ORG, "userId": ids[3], "reason": "in-another-org", "foundIn": "999"}
