"""The companion checking waiting users against the old system's own sign-in API, end to end over
real sockets (docs/companion.md#old-systems).

For each system: the ZITADEL test server holds users without a password (as ``push --api=user-v2``
writes them); ``companion setup`` makes the target; ``companion serve --old-system=...`` runs as its
own process against a stand-in of the system's API (tests/standins/legacy_*.py, written from the
vendor's documentation); sign-ins are CreateSession/SetSession calls to the test server. A wrong
password, a user blocked there, and a system that rate-limits, is slow past the bound or is down
set nothing and keep the user waiting; the right password (with a second factor or a pending step
at the old system too) lands in ZITADEL once. Every log, output and file the companion writes is
searched for the passwords and secrets.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from pathlib import Path

import legacy_app
import legacy_auth0
import legacy_cognito
import legacy_firebase
import legacy_keycloak
import legacy_okta
import pytest
from legacy_server import LegacyServer, LegacyUser, make_certificate
from zitadel_fixtures import PAT
from zitadel_server import ZitadelServer

from tests.scenarios.test_companion import (
    Companion,
    _assert_no_secrets,
    _cli,
    _free_port,
    _import,
    create_user,
    sign_in,
    sign_in_two_steps,
    write_store,
)

SECRET = "stand-in-client-secret-9f3e"
PASSWORDS = {
    "ana@example.com": "ana-Old-pass-1",
    "bo@example.com": "bo-Old-pass-2 ✓",
    "cy@example.com": "cy-Old-pass-3",
    "dee@example.com": "dee-Old-pass-4",
    "eve@example.com": "eve-Old-pass-5",
}
IDS = {login: f"old-{n}" for n, login in enumerate(PASSWORDS, start=1)}
TIMEOUT = "4s"  # the target's timeout: the old system's call is bounded at 30%, 1.2 s


@dataclasses.dataclass(frozen=True)
class System:
    kind: str
    answer: Callable
    config: dict[str, str]
    flags: Callable[[str, Path], list[str]]
    second_state: str = "mfa"  # what "right, but more to do" is called there
    disabled_is: str = "blocked"  # the health counter a disabled user's check bumps


def _secret_file(tmp: Path, value: str) -> Path:
    path = tmp / "old-system-secret"
    path.write_text(value + "\n")
    os.chmod(path, 0o600)
    return path


SYSTEMS = {
    "auth0": System(
        "auth0", legacy_auth0.answer,
        {"client_id": "companion-client", "client_secret": SECRET, "connection": "Username-Password-Authentication"},
        lambda url, tmp: [f"--old-system-url={url}", "--old-system-client-id=companion-client",
                          f"--old-system-secret-file={_secret_file(tmp, SECRET)}",
                          "--old-system-realm=Username-Password-Authentication"],
    ),
    "keycloak": System(
        "keycloak", legacy_keycloak.answer, {"realm": "acme", "client_id": "zitadel-companion", "client_secret": SECRET},
        lambda url, tmp: [f"--old-system-url={url}/realms/acme", "--old-system-client-id=zitadel-companion",
                          f"--old-system-secret-file={_secret_file(tmp, SECRET)}"],
        second_state="pending",  # an OTP user cannot be told from a wrong password (docs/companion.md#keycloak)
    ),
    "cognito": System(
        "cognito", legacy_cognito.answer, {"client_id": "5example-app-client", "client_secret": SECRET},
        lambda url, tmp: [f"--old-system-url={url}", "--old-system-client-id=5example-app-client",
                          f"--old-system-secret-file={_secret_file(tmp, SECRET)}"],
    ),
    "okta": System(
        "okta", legacy_okta.answer, {"client_id": "0oa-companion"},
        lambda url, tmp: [f"--old-system-url={url}"],
        disabled_is="mismatched",  # Okta answers E0000004 for a deactivated or suspended user
    ),
    "okta-oauth": System(
        "okta-oauth", legacy_okta.answer, {"client_id": "0oa-companion", "client_secret": SECRET},
        lambda url, tmp: [f"--old-system-url={url}/oauth2/default", "--old-system-client-id=0oa-companion",
                          f"--old-system-secret-file={_secret_file(tmp, SECRET)}"],
        disabled_is="mismatched",
    ),
    "firebase": System(
        "firebase", legacy_firebase.answer, {"api_key": "AIzaStandInWebApiKey"},
        lambda url, tmp: [f"--old-system-url={url}", f"--old-system-secret-file={_secret_file(tmp, 'AIzaStandInWebApiKey')}"],
    ),
    "http": System(
        "http", legacy_app.answer, {"key": SECRET},
        lambda url, tmp: [f"--old-system-url={url}/check-password", f"--old-system-secret-file={_secret_file(tmp, SECRET)}"],
        second_state="active",  # the contract has no second factor: right is right
        disabled_is="unanswered",  # 423 is "anything else": unknown
    ),
}  # fmt: skip


def _users(system: System) -> dict[str, LegacyUser]:
    states = {"bo@example.com": system.second_state, "cy@example.com": "disabled"}
    return {login: LegacyUser(password, states.get(login, "active")) for login, password in PASSWORDS.items()}


def _zitadel(tmp: Path) -> tuple[ZitadelServer, Path]:
    server = ZitadelServer(tokens={PAT}).start()
    (tmp / "pat").write_text(PAT)
    os.chmod(tmp / "pat", 0o600)
    _import(server, [])  # the organization exists
    for login, user_id in IDS.items():
        create_user(server, user_id, login)
    store = write_store(
        tmp / "waiting.ndjson",
        [{"id": user_id, "form": "old-system", "login_names": [login]} for login, user_id in IDS.items()],
    )
    return server, store


def _setup(server: ZitadelServer, tmp: Path, port: int) -> tuple[Path, str]:
    key_file = tmp / "signing-key"
    done = _cli(
        "setup", f"--url={server.url}", f"--token-file={tmp / 'pat'}", f"--endpoint=http://127.0.0.1:{port}/",
        f"--signing-key-file={key_file}", f"--timeout={TIMEOUT}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return key_file, done.stdout + done.stderr


def _password(server: ZitadelServer, user_id: str) -> str | None:
    return server.state.users[user_id][1].get("password")


def _files_and_outputs(tmp: Path, companion: Companion, *outputs: str) -> list[str]:
    texts = [companion.log.read_text(), *outputs]
    texts += [path.read_text() for path in tmp.glob("waiting.ndjson*")]
    return texts


@pytest.mark.parametrize("kind", sorted(SYSTEMS))
def test_a_waiting_user_signs_in_with_the_password_the_old_system_knows(kind, tmp_path):
    system = SYSTEMS[kind]
    legacy = LegacyServer(system.answer, _users(system), **system.config).start()
    server, store = _zitadel(tmp_path)
    port = _free_port()
    key_file, setup_out = _setup(server, tmp_path, port)
    companion = Companion(
        tmp_path, server.url, store, key_file, port, f"--old-system={kind}", f"--timeout={TIMEOUT}",
        *system.flags(legacy.url, tmp_path),
    ).start()  # fmt: skip
    try:
        # A wrong password: refused there, nothing set, the user keeps waiting.
        status, answer = sign_in(server, "ana@example.com", "not-her-password")
        assert (status, "Errors.User.Password.NotSet" in answer["message"]) == (400, True)
        assert _password(server, IDS["ana@example.com"]) is None and len(legacy.calls) == 1
        # The right one (as login v2 does it: user, then password) lands in ZITADEL, once.
        status, answer = sign_in_two_steps(server, "ana@example.com", PASSWORDS["ana@example.com"])
        assert status == 200, answer
        assert _password(server, IDS["ana@example.com"]) == PASSWORDS["ana@example.com"]
        assert sign_in(server, "ana@example.com", PASSWORDS["ana@example.com"])[0] == 200
        assert len(legacy.calls) == 2  # the second sign-in is ZITADEL's own
        # Right, with a second factor or a pending step at the old system: right all the same.
        assert sign_in(server, "bo@example.com", PASSWORDS["bo@example.com"])[0] == 200
        # Disabled there: nothing set.
        assert sign_in(server, "cy@example.com", PASSWORDS["cy@example.com"])[0] == 400
        assert _password(server, IDS["cy@example.com"]) is None
        assert companion.health()[system.disabled_is] == 1 + (system.disabled_is == "mismatched")  # + ana's
        # Rate-limited, then slow past the bound: unknown, nothing set, the user keeps waiting.
        legacy.mode = "rate-limit"
        assert sign_in(server, "dee@example.com", PASSWORDS["dee@example.com"])[0] == 400
        time.sleep(1.1)  # the answer's Retry-After: 1 pauses the companion's calls that long
        legacy.mode, legacy.delay = "slow", 2.5
        started = time.monotonic()
        assert sign_in(server, "dee@example.com", PASSWORDS["dee@example.com"])[0] == 400
        assert time.monotonic() - started < 2.3  # bounded at 1.2 s, well inside the target's 4 s
        assert _password(server, IDS["dee@example.com"]) is None
        legacy.mode = "normal"
        assert sign_in(server, "dee@example.com", PASSWORDS["dee@example.com"])[0] == 200
        # Down: unknown.
        legacy.stop()
        assert sign_in(server, "eve@example.com", PASSWORDS["eve@example.com"])[0] == 400
        health = companion.health()
        assert (health["matched"], health["waiting"], health["unanswered"]) == (3, 2, 3 + (kind == "http"))
        done = _cli("status", f"--store={store}")
        assert done.returncode == 0, done.stderr
        today = time.strftime("%Y-%m-%d", time.gmtime())
        assert f"{today}: 3 moved, 2 waiting, {3 + (kind == 'http')} unanswered" in done.stdout
        companion.stop()
        secrets = [
            *PASSWORDS.values(),
            "not-her-password",
            SECRET,
            "AIzaStandInWebApiKey",
            PAT,
            key_file.read_text().strip(),
        ]
        _assert_no_secrets(
            _files_and_outputs(tmp_path, companion, setup_out, done.stdout, done.stderr), secrets
        )
    finally:
        companion.stop()
        legacy.stop()
        server.stop()


def test_the_companions_own_limit_stops_calls_before_the_old_system_locks_the_user(tmp_path):
    """Keycloak locks after 3 failures here; the companion stops after 2, so the user is not locked there."""
    system = SYSTEMS["keycloak"]
    legacy = LegacyServer(system.answer, _users(system), lockout_after=3, **system.config).start()
    server, store = _zitadel(tmp_path)
    port = _free_port()
    key_file, _ = _setup(server, tmp_path, port)
    companion = Companion(
        tmp_path, server.url, store, key_file, port, "--old-system=keycloak", f"--timeout={TIMEOUT}",
        "--max-failures=2", *system.flags(legacy.url, tmp_path),
    ).start()  # fmt: skip
    try:
        for attempt in range(4):
            assert sign_in(server, "ana@example.com", f"guess-{attempt}")[0] == 400
        assert len(legacy.calls) == 2  # the third and fourth never left
        assert legacy.users["ana@example.com"].state == "active"
        health = companion.health()
        assert (health["mismatched"], health["limited"]) == (2, 2)
    finally:
        companion.stop()
        legacy.stop()
        server.stop()


def test_an_old_system_whose_certificate_is_not_trusted_gets_no_password(tmp_path):
    cert, key = make_certificate(tmp_path)
    system = SYSTEMS["keycloak"]
    legacy = LegacyServer(system.answer, _users(system), tls=(cert, key), **system.config).start()
    server, store = _zitadel(tmp_path)
    port = _free_port()
    key_file, _ = _setup(server, tmp_path, port)
    flags = ["--old-system=keycloak", f"--timeout={TIMEOUT}", *system.flags(legacy.url, tmp_path)]
    companion = Companion(tmp_path, server.url, store, key_file, port, *flags).start()
    try:
        assert sign_in(server, "ana@example.com", PASSWORDS["ana@example.com"])[0] == 400
        assert companion.health()["unanswered"] == 1
        assert legacy.calls == []  # the handshake failed before any request was sent
        companion.stop()
        assert "TLS certificate not trusted" in companion.log.read_text()
        # Trusted through --old-system-ca-file (a private CA), the same sign-in goes through.
        companion = Companion(
            tmp_path, server.url, store, key_file, port, *flags, f"--old-system-ca-file={cert}"
        ).start()
        assert sign_in(server, "ana@example.com", PASSWORDS["ana@example.com"])[0] == 200
    finally:
        companion.stop()
        legacy.stop()
        server.stop()
