"""transforms/output/waiting.py: ``migrate <source> --old-system-store``, which users it writes, what it
leaves alone, and its checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_files import DATA_DIR

from pipeline.cli import main

BCRYPT = "$2b$10$JQOZFlZkDm8ayIt9g8fRCeQfCQrenz8seEhLcKVZZmA.w574wN3FW"
VECTOR = DATA_DIR / "firebase" / "scrypt-readme"


def _lines(*records: dict) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def _auth0(tmp: Path) -> list[str]:
    """An Auth0 export with a user of each kind; the flags that read it."""
    (tmp / "users.json").write_text(
        _lines(
            {"user_id": "auth0|a1", "email": "ann@example.com", "username": "ann", "name": "Ann"},
            {"user_id": "auth0|b2", "email": "bo@example.com", "name": "Bo"},
            {"user_id": "auth0|c3", "email": "cy@example.com", "name": "Cy"},  # bcrypt: ZITADEL verifies it
            {"user_id": "auth0|d4", "email": "dee@example.com", "name": "Dee"},  # a hash ZITADEL cannot take
            {"user_id": "auth0|e5", "username": "eve", "name": "Eve"},  # no e-mail: the fallback's
            {"user_id": "google-oauth2|555", "email": "sol@example.com", "name": "Sol",
             "identities": [{"provider": "google-oauth2", "user_id": "555", "connection": "google-oauth2",
                             "isSocial": True}]},
        )
    )  # fmt: skip
    (tmp / "passwords.json").write_text(
        _lines(
            {"_id": {"$oid": "c3"}, "email": "cy@example.com", "passwordHash": BCRYPT},
            {
                "_id": {"$oid": "d4"},
                "email": "dee@example.com",
                "passwordHash": "{SSHA}not-a-hash-zitadel-knows",
            },
        )
    )
    return [
        "migrate", "auth0", "--org=1", f"--users={tmp / 'users.json'}", f"--passwords={tmp / 'passwords.json'}",
        f"--output={tmp / 'out' / 'importBody.json'}", "--idp-map=google-oauth2=99",
        "--email-fallback={id}@users.invalid", "--on-unsupported-hash=import-without-password",
    ]  # fmt: skip


def test_the_users_without_a_usable_password_go_to_the_store_and_leave_the_reset_list(tmp_path, capsys):
    store = tmp_path / "out" / "waiting.ndjson"
    assert main([*_auth0(tmp_path), f"--old-system-store={store}"]) == 0
    out = capsys.readouterr().out
    # Not Cy (ZITADEL verifies the hash), not Sol (signs in through Google); Eve without the
    # e-mail --email-fallback made up; Dee, whose hash was dropped, from the reset list.
    assert [json.loads(line) for line in store.read_text().splitlines()] == [
        {"id": "auth0|a1", "form": "old-system", "login_names": ["ann", "ann@example.com"]},
        {"id": "auth0|b2", "form": "old-system", "login_names": ["bo@example.com"]},
        {"id": "auth0|d4", "form": "old-system", "login_names": ["dee@example.com"]},
        {"id": "auth0|e5", "form": "old-system", "login_names": ["eve"]},
    ]
    assert oct(store.stat().st_mode & 0o777) == "0o600"
    assert "waiting for the old system's check, no reset mail: 4 " in out
    assert "for password-reset mails" not in out
    assert not (tmp_path / "out" / "importBody.passwordless.ndjson").exists()
    manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
    assert manifest["old_system_store"]["count"] == 4
    assert manifest["passwordless"]["count"] == 0
    # The store is read as the companion reads it: four waiting, all checked against the old system.
    from companion.store import Store

    opened = Store.open(str(store))
    assert (len(opened), opened.status().old_system) == (4, 4)
    assert opened.find(login_name="ANN@example.com") == opened.find(user_id="auth0|a1")


def test_without_the_flag_nothing_changes(tmp_path, capsys):
    assert main(_auth0(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "waiting for the old system's check" not in out
    manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
    assert "old_system_store" not in manifest
    reset = (tmp_path / "out" / "importBody.passwordless.ndjson").read_text().splitlines()
    assert [json.loads(line)["id"] for line in reset] == ["auth0|d4"]


def test_firebase_users_kept_with_their_hash_are_not_written_again(tmp_path, capsys):
    export = tmp_path / "users.csv"
    cols = [""] * 28  # Firebase's CSV layout (tests/scenarios/test_companion.py _csv_line): no hash
    cols[:6], cols[23:25] = ["fb-dee", "dee@example.com", "true", "", "", "Dee"], ["1508893925000"] * 2
    export.write_text((VECTOR / "users.csv").read_text() + ",".join(cols) + ",\n")
    legacy, waiting = tmp_path / "out" / "legacy.ndjson", tmp_path / "out" / "waiting.ndjson"
    code = main(
        ["migrate", "firebase", "--org=1", f"--users={export}", f"--output={tmp_path / 'out' / 'importBody.json'}",
         f"--hash-config={VECTOR / 'hash_config.txt'}", f"--legacy-hashes={legacy}", f"--old-system-store={waiting}"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert [json.loads(line)["form"] for line in legacy.read_text().splitlines()] == ["firebase-scrypt"]
    assert [json.loads(line) for line in waiting.read_text().splitlines()] == [
        {"id": "fb-dee", "form": "old-system", "login_names": ["dee@example.com"]}
    ]
    manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
    assert (manifest["legacy_hashes"]["count"], manifest["old_system_store"]["count"]) == (1, 1)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--old-system-store={existing}"], "is never replaced"),
        (["--old-system-store={users}"], "is an input or another output of this run"),
        (
            ["--old-system-store={store}", "--push-url=http://127.0.0.1:9", "--token-file={token}",
             "--api=admin-import"],
            "push with --api=user-v2",
        ),
    ],
)  # fmt: skip
def test_flag_problems_fail_fast_in_one_line(tmp_path, capsys, extra, message):
    existing = tmp_path / "existing.ndjson"
    existing.write_text("{}\n")
    token = tmp_path / "token"
    token.write_text("a-token\n")
    token.chmod(0o600)
    args = _auth0(tmp_path)
    filled = [
        a.format(existing=existing, users=tmp_path / "users.json", store=tmp_path / "s.ndjson", token=token)
        for a in extra
    ]
    assert main([*args, *filled]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing ran
    assert existing.read_text() == "{}\n"


def test_the_same_file_as_legacy_hashes_is_refused(tmp_path, capsys):
    same = tmp_path / "store.ndjson"
    code = main(
        ["migrate", "firebase", "--org=1", f"--users={VECTOR / 'users.csv'}",
         f"--output={tmp_path / 'out' / 'importBody.json'}", f"--hash-config={VECTOR / 'hash_config.txt'}",
         f"--legacy-hashes={same}", f"--old-system-store={same}"]
    )  # fmt: skip
    assert code == 2
    assert "--old-system-store and --legacy-hashes name the same file" in capsys.readouterr().err
