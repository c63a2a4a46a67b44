"""``push --body``: bodies written by other tools or by hand are validated, then sent.

zitadel-tools' 2023 body (``tests/data/realworld/zitadel``) has snake_case ``data_orgs``,
``hashedPassword.algorithm`` and a user without ``userId``; a hand-written body here adds invalid
users, which must be reported with migrate's reason codes and never reach the server.
"""

from __future__ import annotations

import json
from pathlib import Path

from repo_files import DATA_DIR
from zitadel_fixtures import PAT, hash_pool, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from pipeline.cli import main
from transforms.output.body_check import check_body
from transforms.output.manifest import load_manifest

REALWORLD = DATA_DIR / "realworld"
ZITADEL_TOOLS_BODY = REALWORLD / "zitadel" / "zitadel-tools-import-data_orgs-2023.json"


def _push(url: str, *bodies: Path) -> int:
    return main(["push", "--url", url, *[f"--body={b}" for b in bodies], "--quiet", "--verify"])


def test_zitadel_tools_body_is_validated_and_pushed(zitadel, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    monkeypatch.chdir(tmp_path)
    # Counted by hand: 3 users in org 191279307643945217, all valid (bcrypt cost 14, languages
    # de/und/en); test9@test9 has no userId; wile@test9 has no password.
    checked = check_body(json.loads(ZITADEL_TOOLS_BODY.read_bytes()))
    users = checked.body["data_orgs"]["orgs"][0]["humanUsers"]
    assert checked.rejected == [] and len(users) == 3
    assert sum("hashedPassword" in u["user"] for u in users) == 2
    assert all("algorithm" not in u["user"].get("hashedPassword", {}) for u in users)

    rc = _push(zitadel.url, ZITADEL_TOOLS_BODY)
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    created = zitadel.user_ids("191279307643945217")
    assert len(created) == 3 and {"120080115081209416", "145195347319252359"} < created
    assert "verify: ok" in out  # the server-assigned user is found by its user name
    assert (tmp_path / "zitadel-tools-import-data_orgs-2023.push.manifest.json").exists()


def test_invalid_users_are_reported_before_sending_and_never_sent(zitadel, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    monkeypatch.chdir(tmp_path)
    good_hash = hash_pool(1)[0]

    def user(uid, name, **extra):
        entry = {
            "user": {
                "user_name": name,
                "profile": {"first_name": "A", "last_name": "B"},
                "email": {"email": f"{name}@example.com", "is_email_verified": True},
                **extra,
            }
        }
        return {"user_id": uid, **entry} if uid else entry

    body = {
        "timeout": "1m",
        "data_orgs": {
            "orgs": [
                {
                    "org_id": "77",
                    "human_users": [
                        user("u1", "ann", hashed_password={"value": good_hash, "algorithm": "bcrypt"}),
                        user("u2", "bad-mail", email={"email": "not an address"}),
                        user("u3", "bad-hash", hashed_password={"value": "$2b$10$short"}),
                        user(None, "no-id", otp_code="JBSWY3DPEHPK3PXP"),
                        user("u5", "bad-otp", otp_code="not base32!"),
                    ],
                    "user_metadata": [{"id": "u2", "key": "k", "value": "dg=="}],
                }
            ]
        },
    }
    path = tmp_path / "handmade.json"
    path.write_text(json.dumps(body))

    rc = _push(zitadel.url, path)
    out, err = capsys.readouterr()
    assert rc == 1
    assert "3 invalid user(s) will not be sent (invalid-email 1, invalid-hash 1, invalid-otp-secret 1)" in err
    names = {user["userName"] for _, user in zitadel.state.users.values()}
    assert names == {"ann", "no-id"}
    dead = [
        json.loads(line)
        for line in (tmp_path / "handmade.push.results" / "push-dead-letter.ndjson").read_text().splitlines()
    ]
    assert sorted((d["userId"], d["reason"]) for d in dead) == [
        ("u2", "invalid-email"),
        ("u3", "invalid-hash"),
        ("u5", "invalid-otp-secret"),
    ]
    assert good_hash not in out + err and "$2b$10$short" not in json.dumps(dead)
    # verify: the users push refused are missing; the one without userId is found by user name.
    missing = (tmp_path / "handmade.push.results" / "verify-missing.ndjson").read_text()
    assert sorted(json.loads(line)["userId"] for line in missing.splitlines()) == ["u2", "u3", "u5"]


def test_check_body_fixes_like_migrate_and_keeps_valid_bodies_byte_for_byte():
    entry = {
        "userId": "1",
        "user": {
            "userName": "a@b.co",
            "profile": {"firstName": "A", "lastName": "B"},
            "email": {"email": "a@b.co"},
        },
    }
    clean = {"dataOrgs": {"orgs": [{"orgId": "1", "humanUsers": [entry]}]}, "timeout": "5m0s"}
    assert check_body(clean).changed is False
    long_language = json.loads(json.dumps(clean))
    long_language["dataOrgs"]["orgs"][0]["humanUsers"][0]["user"]["profile"]["preferredLanguage"] = (
        "en-u-rg-uszzzz"
    )
    checked = check_body(long_language)
    assert checked.changed and checked.rejected == []
    assert (
        checked.body["dataOrgs"]["orgs"][0]["humanUsers"][0]["user"]["profile"]["preferredLanguage"] == "en"
    )


def test_keycloak_users_without_id_are_pushed_and_verified_by_user_name(zitadel, tmp_path):
    realm = REALWORLD / "keycloak" / "strimzi-kafka-authz-realm.json"
    from transforms.push import engine as push_engine
    from transforms.zitadel_api.credentials import Credentials

    out = tmp_path / "importBody.json"
    # alice and bob have pbkdf2-sha256 hashes: a target with the pbkdf2 verifier enabled.
    zitadel.hash_verifiers = frozenset({"bcrypt", "pbkdf2"})
    config = tmp_path / "zitadel.yaml"
    config.write_text("SystemDefaults:\n  PasswordHasher:\n    Verifiers: [pbkdf2]\n")
    assert (
        main(
            [
                "migrate",
                "keycloak",
                "--org=55",
                f"--realm={realm}",
                "--allow-plaintext-passwords",
                f"--zitadel-config={config}",
                f"--output={out}",
            ]
        )
        == 0
    )
    report = push_engine.push_manifest(
        load_manifest(str(tmp_path / "importBody.manifest.json")),
        zitadel.url,
        Credentials("token", token=PAT),
        progress=False,
        verify=True,
    )
    assert report.ok and report.created == 3, report.table()
    assert len(report.verify.orgs) == 1 and report.verify.orgs[0].created == 3
    assert report.verify.unexpected == []  # server-assigned ids matched by name, not "unexpected"
    assert {user["userName"] for _, user in zitadel.state.users.values()} == {"alice", "bob", "zero"}
