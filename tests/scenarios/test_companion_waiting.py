"""A source with no usable password to carry, migrated with ``--old-system-store``, then its users
signing in through the companion with the password the old system knows (docs/companion.md#old-systems).

For Auth0 without a hash export, Okta (which exports none), Firebase without the project's hash
parameters, a Keycloak realm exported without credentials and a home-grown application's table
without hashes (checked through the documented HTTP contract): ``migrate <source> --old-system-store=PATH --push-url=... --api=user-v2`` against the
ZITADEL test server writes the file (mode 0600, ids and login names only), takes those users off
the reset list and pushes them without a password; ``companion import`` joins it into the store;
``companion setup`` and ``companion serve --store=STORE --old-system=<kind>`` run as processes of their own against the stand-in of the old
system (tests/standins/legacy_*.py); each user signs in with the old password (one step or as login
v2 does it) and holds it in ZITADEL afterwards, a wrong password sets nothing, and a user who
signs in through an identity provider or whose hash ZITADEL took is not in the store.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import urllib.parse
from pathlib import Path

import pytest
from legacy_server import LegacyServer, LegacyUser
from zitadel_fixtures import PAT
from zitadel_server import ZitadelServer

from pipeline.cli import main
from tests.scenarios.test_companion import (
    WHOLE,
    Companion,
    _assert_no_secrets,
    _cli,
    _free_port,
    _import,
    sign_in,
    sign_in_two_steps,
)
from tests.scenarios.test_companion_old_systems import SECRET, SYSTEMS

# A bcrypt hash ZITADEL verifies (examples/auth0/passwords.json's first record).
BCRYPT = "$2b$10$JQOZFlZkDm8ayIt9g8fRCeQfCQrenz8seEhLcKVZZmA.w574wN3FW"


@dataclasses.dataclass(frozen=True)
class Case:
    """One source: its input files (name → text), its flags, the store it must write (id → login
    names) and the old system's users (the name it is sent → password)."""

    files: dict[str, str]
    flags: list[str]
    store: dict[str, list[str]]
    old_users: dict[str, str]
    not_waiting: tuple[str, ...]  # written, but not for the companion (an IdP, a hash ZITADEL took)


def _lines(*records: dict) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def _okta_csv(*rows: tuple[str, str, str, str]) -> str:
    head = "id,status,login,firstName,lastName,email\n"
    return head + "".join(",".join(row[:2]) + f",{row[2]},Some,One,{row[3]}\n" for row in rows)


CASES = {
    "auth0": Case(
        files={
            "users.json": _lines(
                {"user_id": "auth0|a1", "email": "ann@example.com", "username": "ann", "name": "Ann"},
                {"user_id": "auth0|b2", "email": "bo@example.com", "name": "Bo"},
                {"user_id": "auth0|c3", "email": "cy@example.com", "name": "Cy"},
                {"user_id": "google-oauth2|555", "email": "sol@example.com", "name": "Sol",
                 "identities": [{"provider": "google-oauth2", "user_id": "555", "connection": "google-oauth2",
                                 "isSocial": True}]},
            ),
            # The hash export holds only Cy: ZITADEL verifies it, so Cy needs no companion.
            "passwords.json": _lines({"_id": {"$oid": "c3"}, "email": "cy@example.com", "passwordHash": BCRYPT}),
        },
        flags=["--users={tmp}/users.json", "--passwords={tmp}/passwords.json", "--idp-map=google-oauth2=99"],
        store={"auth0|a1": ["ann", "ann@example.com"], "auth0|b2": ["bo@example.com"]},
        old_users={"ann": "ann-Old-pass-1", "bo@example.com": "bo-Old-pass-2 ✓"},
        not_waiting=("auth0|c3", "google-oauth2|555"),
    ),
    "okta": Case(
        files={
            "okta-users.csv": _okta_csv(
                ("00uANN", "ACTIVE", "ann.login", "ann@example.com"),
                ("00uBO", "PASSWORD_EXPIRED", "bo@example.com", "bo@example.com"),
            )
        },
        flags=["--users={tmp}/okta-users.csv"],
        store={"00uANN": ["ann.login", "ann@example.com"], "00uBO": ["bo@example.com"]},
        old_users={"ann.login": "ann-Old-pass-1", "bo@example.com": "bo-Old-pass-2 ✓"},
        not_waiting=(),
    ),
    "firebase": Case(
        files={
            "users.json": json.dumps(
                {
                    "users": [
                        # Firebase's scrypt: not importable, and no --hash-config to keep it with.
                        {"localId": "fb-ann", "email": "ann@example.com", "passwordHash": "c2NyeXB0LWhhc2g=",
                         "salt": "c2FsdA==", "createdAt": "1508893925000"},
                        {"localId": "fb-bo", "email": "bo@example.com", "createdAt": "1508893925000"},
                    ]
                }
            )
        },
        flags=["--users={tmp}/users.json"],
        store={"fb-ann": ["ann@example.com"], "fb-bo": ["bo@example.com"]},
        old_users={"ann@example.com": "ann-Old-pass-1", "bo@example.com": "bo-Old-pass-2 ✓"},
        not_waiting=(),
    ),
    "keycloak": Case(
        files={
            "realm.json": json.dumps(
                {
                    "realm": "acme",
                    "users": [
                        # No credentials in the export (an operator without access to the hashes).
                        {"id": "kc-ann", "username": "ann", "email": "ann@example.com", "enabled": True,
                         "firstName": "Ann", "lastName": "A"},
                        {"id": "kc-bo", "username": "bo", "email": "bo@example.com", "enabled": True,
                         "firstName": "Bo", "lastName": "B"},
                    ],
                }
            )
        },
        flags=["--realm={tmp}/realm.json"],
        store={"kc-ann": ["ann", "ann@example.com"], "kc-bo": ["bo", "bo@example.com"]},
        old_users={"ann": "ann-Old-pass-1", "bo": "bo-Old-pass-2 ✓"},
        not_waiting=(),
    ),
    # A home-grown application's table without its hashes, checked through the documented contract.
    "http": Case(
        files={"users.csv": "uid,login,mail\napp-ann,ann,ann@example.com\napp-bo,bo@example.com,bo@example.com\n"},
        flags=["--input={tmp}/users.csv", "--map=id=uid", "--map=username=login", "--map=email=mail"],
        store={"app-ann": ["ann", "ann@example.com"], "app-bo": ["bo@example.com"]},
        old_users={"ann": "ann-Old-pass-1", "bo@example.com": "bo-Old-pass-2 ✓"},
        not_waiting=(),
    ),
}  # fmt: skip
COMMANDS = {"http": "table"}  # the source each case migrates, where its name is not the old system's


def _sent_name(body: bytes) -> str:
    """The login name a call to the old system carried (a form for Auth0, JSON for the others)."""
    try:
        request = json.loads(body)
    except ValueError:
        request = dict(urllib.parse.parse_qsl(body.decode()))
    return str(request.get("username") or request.get("email") or request.get("loginName"))


def _migrate(kind: str, case: Case, tmp: Path, server: ZitadelServer, capsys) -> tuple[Path, str]:
    for name, text in case.files.items():
        (tmp / name).write_text(text)
    store = tmp / "out" / "waiting.ndjson"
    code = main(
        [
            "migrate", COMMANDS.get(kind, kind), "--org=o1", *[flag.format(tmp=tmp) for flag in case.flags],
            f"--output={tmp / 'out' / 'importBody.json'}", f"--old-system-store={store}",
            f"--push-url={server.url}", f"--token-file={tmp / 'pat'}", "--api=user-v2",
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return store, out + err


@pytest.mark.parametrize("kind", sorted(CASES))
def test_users_without_a_usable_password_sign_in_through_the_old_system(kind, tmp_path, capsys):
    case = CASES[kind]
    system = SYSTEMS[kind]
    (tmp_path / "pat").write_text(PAT)
    os.chmod(tmp_path / "pat", 0o600)
    server = ZitadelServer(tokens={PAT}).start()
    legacy = LegacyServer(
        system.answer,
        {login: LegacyUser(password) for login, password in case.old_users.items()},
        **system.config,
    ).start()
    companion = None
    try:
        _import(server, [])  # the organization exists
        store, migrate_out = _migrate(kind, case, tmp_path, server, capsys)

        # The store: mode 0600, each waiting user once with its login names, nothing else.
        assert oct(store.stat().st_mode & 0o777) == "0o600"
        records = [json.loads(line) for line in store.read_text().splitlines()]
        assert {r["id"]: r["login_names"] for r in records} == case.store
        assert all(set(r) == {"id", "form", "login_names"} and r["form"] == "old-system" for r in records)
        assert (
            f"waiting for the old system's check, no reset mail: {len(case.store)} "
            f"(zitadel-beam companion serve --old-system; mode 0600; push with --api=user-v2): {store}"
        ) in migrate_out
        # The reset list no longer names them; the manifest counts the store.
        reset = tmp_path / "out" / "importBody.passwordless.ndjson"
        listed = [json.loads(line)["id"] for line in reset.read_text().splitlines()] if reset.exists() else []
        assert not set(listed) & set(case.store)
        manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
        assert manifest["old_system_store"]["count"] == len(case.store)
        assert manifest["old_system_store"]["path"] == "waiting.ndjson"
        # Pushed through the user service: active, no password yet.
        assert server.user_ids("o1") >= set(case.store) | set(case.not_waiting)
        assert all(server.state.users[user_id][1].get("password") is None for user_id in case.store)

        # companion import joins it into the store the service reads (a second import adds nobody).
        joined = tmp_path / "store.ndjson"
        for added in (len(case.store), 0):
            imported = _cli("import", f"--store={joined}", f"--file={store}")
            assert imported.returncode == 0, imported.stderr
            assert (
                f"{store}: {added} users added, {len(case.store) - added} already in the store"
                in imported.stdout
            )
        assert oct(joined.stat().st_mode & 0o777) == "0o600"
        store = joined

        port = _free_port()
        key_file = tmp_path / "signing-key"
        done = _cli(
            "setup", f"--url={server.url}", f"--token-file={tmp_path / 'pat'}",
            f"--endpoint=http://127.0.0.1:{port}/", f"--signing-key-file={key_file}", "--timeout=4s", entry=WHOLE,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        companion = Companion(
            tmp_path, server.url, store, key_file, port, f"--old-system={kind}", "--timeout=4s",
            *system.flags(legacy.url, tmp_path),
        ).start()  # fmt: skip
        status = _cli("status", f"--store={store}")
        assert f"waiting for their first sign-in: {len(case.store)}" in status.stdout
        assert f"of which checked against the old system: {len(case.store)}" in status.stdout

        (first, first_names), (second, second_names) = case.store.items()
        old_first, old_second = case.old_users.values()
        # A wrong password: nothing set, the user keeps waiting.
        assert sign_in(server, first_names[-1], "not-the-old-one")[0] == 400
        assert server.state.users[first][1].get("password") is None
        # The old system's password, by any login name ZITADEL knows: set in ZITADEL, once.
        assert sign_in_two_steps(server, first_names[-1], old_first)[0] == 200
        assert sign_in(server, second_names[0], old_second)[0] == 200
        assert server.state.users[first][1].get("password") == old_first
        assert server.state.users[second][1].get("password") == old_second
        calls = len(legacy.calls)
        assert sign_in(server, first_names[0], old_first)[0] == 200  # now ZITADEL's own check
        assert len(legacy.calls) == calls
        # The old system was sent the name it knows each user by: the first login name.
        assert {_sent_name(body) for _, _, body in legacy.calls} == set(case.old_users)
        health = companion.health()
        assert (health["matched"], health["mismatched"], health["waiting"]) == (2, 1, 0)
        status = _cli("status", f"--store={store}")
        today = time.strftime("%Y-%m-%d", time.gmtime())
        assert f"{today}: 2 moved, 0 waiting" in status.stdout
        companion.stop()
        texts = [companion.log.read_text(), migrate_out, store.read_text(), status.stdout, done.stdout]
        _assert_no_secrets(texts, [*case.old_users.values(), "not-the-old-one", SECRET, PAT])
    finally:
        if companion is not None:
            companion.stop()
        legacy.stop()
        server.stop()
