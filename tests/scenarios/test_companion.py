"""The companion end to end, over real sockets (docs/companion.md#tests).

The test server (tests/standins/zitadel_server.py with zitadel_actions_v2.py) holds the users and
calls its Actions v2 targets as ZITADEL does; ``zitadel-beam companion setup`` makes the target
and executions through the API; ``zitadel-beam companion serve`` runs as its own process; sign-ins
are CreateSession/SetSession calls to the test server. Each test reads the companion's stderr and
asserts that no password, hash, key or token is in it.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import zitadel_actions_v2
from repo_files import DATA_DIR, ROOT
from zitadel_fixtures import PAT, hash_pool, make_user
from zitadel_server import ZitadelServer

from companion.signature import sign

DATA = DATA_DIR / "firebase" / "scrypt-readme"

# Firebase's published vector (tests/data/firebase/scrypt-readme, origin in tests/data/README.md).
VECTOR_ID = "kYi4EvWQlQTKSfnJ3dRSP6IH3ed2"
VECTOR_PASSWORD = "user1password"


def _hash_config() -> dict:
    pairs = {}
    for line in (DATA / "hash_config.txt").read_text().splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            pairs[key.strip()] = value.strip().rstrip(",")
    return pairs


def firebase_record(user_id: str, password_hash: str, salt: str, login_name: str) -> dict:
    config = _hash_config()
    return {
        "id": user_id,
        "form": "firebase-scrypt",
        "hash": password_hash,
        "params": {
            "salt": salt,
            "signer_key": config["base64_signer_key"],
            "salt_separator": config["base64_salt_separator"],
            "rounds": int(config["rounds"]),
            "mem_cost": int(config["mem_cost"]),
        },
        "login_names": [login_name],
    }


def vector_record() -> dict:
    fields = (DATA / "users.csv").read_text().split(",")
    return firebase_record(fields[0], fields[3], fields[4], fields[1])


def write_store(path: Path, records: list[dict]) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# `python -m pipeline.companion` is the command alone (about a second to start); the migrate test
# runs `python -m pipeline companion` (zitadel-beam's whole command line) to show both are one.
ALONE = ["-m", "pipeline.companion"]
WHOLE = ["-m", "pipeline", "companion"]


def _cli(*args: str, entry: list[str] = ALONE) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *entry, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


class Companion:
    """``zitadel-beam companion serve`` as a process of its own; its stderr goes to a file."""

    def __init__(
        self,
        tmp: Path,
        url: str,
        store: Path,
        key_file: Path,
        port: int,
        *extra: str,
        entry: list[str] = ALONE,
    ) -> None:
        self.args = [
            sys.executable, *entry, "serve", f"--url={url}",
            f"--token-file={tmp / 'pat'}", f"--store={store}", f"--signing-key-file={key_file}",
            f"--listen=127.0.0.1:{port}", *extra,
        ]  # fmt: skip
        self.url = f"http://127.0.0.1:{port}/"
        self.log = tmp / "companion.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> Companion:
        handle = open(self.log, "a")  # noqa: SIM115 - the process owns it until stop()
        self.process = subprocess.Popen(self.args, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT)
        handle.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"companion exited: {self.log.read_text()}")
            try:
                with urllib.request.urlopen(self.url + "healthz", timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("companion did not answer within 60 s")

    def health(self) -> dict:
        with urllib.request.urlopen(self.url + "healthz", timeout=5) as answer:
            return json.loads(answer.read())

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


def _call(server: ZitadelServer, method: str, path: str, body: dict | None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        server.url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {PAT}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def sign_in(server: ZitadelServer, login_name: str, password: str) -> tuple[int, dict]:
    """CreateSession with the user and password checks in one call."""
    checks = {"user": {"loginName": login_name}, "password": {"password": password}}
    return _call(server, "POST", "/v2/sessions", {"checks": checks})


def sign_in_two_steps(server: ZitadelServer, login_name: str, password: str) -> tuple[int, dict]:
    """What ZITADEL's login UI does: CreateSession with the user, then SetSession with the password."""
    status, created = _call(server, "POST", "/v2/sessions", {"checks": {"user": {"loginName": login_name}}})
    assert status == 200, created
    return _call(
        server,
        "PATCH",
        f"/v2/sessions/{created['sessionId']}",
        {"checks": {"password": {"password": password}}},
    )


def create_user(server: ZitadelServer, user_id: str, email: str) -> None:
    """AddHumanUser without a password, as push --api=user-v2 sends a Firebase user."""
    body = {
        "userId": user_id,
        "organization": {"orgId": "o1"},
        "username": email,
        "profile": {"givenName": "Some", "familyName": "One"},
        "email": {"email": email, "returnCode": {}},
    }
    status, answer = _call(server, "POST", "/v2/users/human", body)
    assert status == 200, answer


def _import(server: ZitadelServer, entries: list[dict]) -> None:
    server.import_data({"dataOrgs": {"orgs": [{"orgId": "o1", "humanUsers": entries}]}, "timeout": "1m"})


@pytest.fixture(name="setup")
def setup_fixture(tmp_path):
    """A test server with the vector's user (no password, as migrate writes a Firebase user), a user
    ZITADEL can verify, the store, the target set up through the CLI, and the companion running."""
    server = ZitadelServer(tokens={PAT}).start()
    (tmp_path / "pat").write_text(PAT)
    os.chmod(tmp_path / "pat", 0o600)
    vector = vector_record()
    second = firebase_record("fb-2", *_made_firebase_hash("second-secret", "c2FsdHNhbHQ="), "two@example.com")
    # The admin import: a user ZITADEL can verify (active), and one without password (initial).
    _import(server, [make_user("bcrypt-user", hash_pool()[0]), make_user("fb-initial")])
    # The user service, as migrate --legacy-hashes --api=user-v2 pushes them: active, no password.
    create_user(server, VECTOR_ID, "user1@test.com")
    create_user(server, "fb-2", "two@example.com")
    initial = firebase_record(
        "fb-initial", *_made_firebase_hash("initial-secret", "aW5pdA=="), "fb-initial@example.com"
    )
    store = write_store(tmp_path / "legacy.ndjson", [vector, second, initial])
    port = _free_port()
    key_file = tmp_path / "signing-key"
    done = _cli(
        "setup", f"--url={server.url}", f"--token-file={tmp_path / 'pat'}",
        f"--endpoint=http://127.0.0.1:{port}/", f"--signing-key-file={key_file}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    companion = Companion(tmp_path, server.url, store, key_file, port).start()
    try:
        yield server, companion, store, key_file, [done.stdout + done.stderr]
    finally:
        companion.stop()
        server.stop()


def _made_firebase_hash(password: str, salt: str) -> tuple[str, str]:
    """A Firebase scrypt hash of ``password`` under the vector's project parameters."""
    import hashlib

    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    config = _hash_config()
    derived = hashlib.scrypt(
        password.encode(),
        salt=base64.b64decode(salt) + base64.b64decode(config["base64_salt_separator"]),
        n=1 << int(config["mem_cost"]),
        r=int(config["rounds"]),
        p=1,
        dklen=64,
    )
    encryptor = Cipher(algorithms.AES(derived[:32]), modes.CTR(b"\0" * 16)).encryptor()
    signer = base64.b64decode(config["base64_signer_key"])
    return base64.b64encode(encryptor.update(signer) + encryptor.finalize()).decode(), salt


def _secrets(store: Path, key_file: Path) -> list[str]:
    values = [PAT, VECTOR_PASSWORD, "second-secret", "wrong-password", key_file.read_text().strip()]
    for line in store.read_text().splitlines():
        record = json.loads(line)
        values += [record["hash"], *[str(v) for v in record["params"].values() if isinstance(v, str)]]
    return values


def _assert_no_secrets(texts: list[str], secrets: list[str]) -> None:
    for text in texts:
        leaked = [s[:4] + "…" for s in secrets if s and s in text]
        assert not leaked, f"secret values in a log: {leaked}"


def test_the_vector_user_signs_in_with_the_old_password_and_then_without_the_companion(setup):
    server, companion, store, key_file, outputs = setup
    status, answer = sign_in(server, "user1@test.com", VECTOR_PASSWORD)
    assert status == 200, answer
    assert answer["sessionId"]
    health = companion.health()
    assert (health["matched"], health["waiting"]) == (1, 2)
    removed = [json.loads(line) for line in Path(str(store) + ".removed").read_text().splitlines()]
    assert [r["id"] for r in removed] == [VECTOR_ID]
    # The second sign-in (as the login UI does it: user, then password): ZITADEL holds the password;
    # the companion is called and passes it through. (The same call again within the same second
    # would be refused as a replay, and ZITADEL would go on without the companion.)
    status, answer = sign_in_two_steps(server, "user1@test.com", VECTOR_PASSWORD)
    assert status == 200, answer
    after = companion.health()
    assert after["checked"] == health["checked"]
    assert after["passed"] == health["passed"] + 2  # CreateSession without a password, SetSession
    # ZITADEL's own check now refuses a wrong password for that user.
    status, answer = sign_in(server, "user1@test.com", "wrong-password")
    assert (status, "Errors.User.Password.Invalid" in answer["message"]) == (400, True)
    calls = zitadel_actions_v2.actions(server).calls
    assert [c[2] for c in calls] == [200, 200, 200, 200]
    companion.stop()
    _assert_no_secrets([companion.log.read_text(), *outputs], _secrets(store, key_file))


def test_a_wrong_password_changes_nothing_and_the_right_one_then_works(setup):
    server, companion, store, key_file, outputs = setup
    events = len(server.state.events)
    status, answer = sign_in_two_steps(server, "two@example.com", "wrong-password")
    assert (status, "Errors.User.Password.NotSet" in answer["message"]) == (400, True)
    assert len(server.state.events) == events  # no password written
    assert companion.health()["mismatched"] == 1
    assert not Path(str(store) + ".removed").exists()
    status, answer = sign_in_two_steps(server, "two@example.com", "second-secret")
    assert status == 200, answer
    assert server.state.users["fb-2"][1]["password"] == "second-secret"
    assert companion.health()["waiting"] == 2
    companion.stop()
    _assert_no_secrets([companion.log.read_text(), *outputs], _secrets(store, key_file))


def test_a_user_not_in_the_store_passes_through(setup):
    server, companion, *_ = setup
    status, answer = sign_in(server, "bcrypt-user@example.com", "pw-0")
    assert status == 200, answer
    health = companion.health()
    assert (health["passed"], health["checked"]) == (1, 0)


def _signed_payload(key: bytes, password: str, at: int) -> tuple[bytes, str]:
    body = zitadel_actions_v2.go_json(
        {
            "fullMethod": "/zitadel.session.v2.SessionService/CreateSession",
            "instanceID": "test-instance",
            "request": {"checks": {"user": {"userId": VECTOR_ID}, "password": {"password": password}}},
        }
    )
    return body, sign(body, key, at)


def _post(url: str, body: bytes, header: str | None) -> int:
    headers = {"Content-Type": "application/json", **({"ZITADEL-Signature": header} if header else {})}
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code


def test_forged_replayed_stale_and_unsigned_calls_are_refused(setup):
    server, companion, store, key_file, outputs = setup
    key = key_file.read_bytes().strip()
    now = int(time.time())
    body, header = _signed_payload(b"not-the-key", VECTOR_PASSWORD, now)
    assert _post(companion.url, body, header) == 401  # forged
    assert _post(companion.url, body, None) == 401  # unsigned
    body, header = _signed_payload(key, VECTOR_PASSWORD, now - 301)
    assert _post(companion.url, body, header) == 401  # stale
    body, header = _signed_payload(key, VECTOR_PASSWORD, now)
    tampered = body.replace(b"CreateSession", b"SetSession")
    assert _post(companion.url, tampered, header) == 401  # signed, then changed
    assert _post(companion.url, b"x" * (65 * 1024), header) == 413
    assert companion.health()["matched"] == 0
    assert _post(companion.url, body, header) == 200  # the genuine call
    assert companion.health()["matched"] == 1
    assert _post(companion.url, body, header) == 401  # the same call again: a replay
    assert companion.health()["refused"] == 6
    companion.stop()
    _assert_no_secrets([companion.log.read_text(), *outputs], _secrets(store, key_file))


def test_removals_survive_a_restart_and_status_counts_them(setup, tmp_path):
    server, companion, store, key_file, _ = setup
    assert sign_in(server, "user1@test.com", VECTOR_PASSWORD)[0] == 200
    companion.stop()
    companion.start()
    assert companion.health()["waiting"] == 2
    assert sign_in(server, "user1@test.com", VECTOR_PASSWORD)[0] == 200
    assert companion.health()["checked"] == 0  # not verified again after the restart
    done = _cli("status", f"--store={store}")
    assert done.returncode == 0, done.stderr
    assert "waiting for their first sign-in: 2" in done.stdout
    assert "migrated (password set in ZITADEL): 1" in done.stdout
    assert time.strftime("%Y-%m-%d", time.gmtime()) + ": 1" in done.stdout


def test_setup_is_idempotent_and_keeps_other_targets(setup, tmp_path):
    server, companion, store, key_file, _ = setup
    state = zitadel_actions_v2.actions(server)
    other = state.create_target(
        {"name": "other", "restWebhook": {}, "timeout": "5s", "endpoint": "http://127.0.0.1:9/"}
    )
    state.set_execution(
        {
            "condition": {"request": {"method": "/zitadel.session.v2.SessionService/SetSession"}},
            "targets": [other["id"]],
        }
    )
    key_before = key_file.read_text()
    done = _cli(
        "setup", f"--url={server.url}", f"--token-file={tmp_path / 'pat'}",
        f"--endpoint={companion.url}", f"--signing-key-file={key_file}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert key_file.read_text() == key_before
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert len(state.targets) == 2
    ours = next(t.id for t in state.targets.values() if t.name == "zitadel-beam-companion")
    assert state.executions["request:/zitadel.session.v2.SessionService/CreateSession"] == [ours]
    assert state.executions["request:/zitadel.session.v2.SessionService/SetSession"] == [other["id"], ours]
    assert key_before.strip() not in done.stdout + done.stderr


def test_failed_attempts_are_limited_per_user(setup):
    server, companion, store, key_file, _ = setup
    companion.stop()
    limited = Companion(
        companion.log.parent, server.url, store, key_file, _port(companion), "--max-failures=2"
    )
    limited.start()
    try:
        for attempt in range(3):
            assert sign_in(server, "two@example.com", f"wrong-{attempt}")[0] == 400
        health = limited.health()
        assert (health["mismatched"], health["limited"]) == (2, 1)
        # Over the limit even the right password is not checked (ZITADEL answers as without the companion).
        assert sign_in(server, "two@example.com", "second-secret")[0] == 400
        assert limited.health()["matched"] == 0
        assert sign_in(server, "user1@test.com", VECTOR_PASSWORD)[0] == 200  # another user is not held up
    finally:
        limited.stop()


def _port(companion: Companion) -> int:
    return int(companion.url.rstrip("/").rsplit(":", 1)[1])


def test_a_failed_set_password_keeps_the_user_waiting(setup):
    server, companion, *_ = setup
    server.faults.inject("503", count=2, path="/v2/users/fb-2/password")  # both of the companion's attempts
    status, answer = sign_in(server, "two@example.com", "second-secret")
    assert (status, "Errors.User.Password.NotSet" in answer["message"]) == (400, True)
    health = companion.health()
    assert (health["set_failed"], health["waiting"]) == (1, 3)
    assert sign_in_two_steps(server, "two@example.com", "second-secret")[0] == 200
    assert companion.health()["waiting"] == 2


def test_a_companion_that_is_down_blocks_no_user_whose_password_zitadel_holds(setup):
    server, companion, *_ = setup
    companion.stop()
    status, answer = sign_in(server, "bcrypt-user@example.com", "pw-0")
    assert status == 200, answer  # interruptOnError is off (the default of setup)
    assert zitadel_actions_v2.actions(server).calls[-1][2] == 0  # the call found nobody listening
    # With interruptOnError on, the same sign-in fails: what that setting costs (docs/companion.md).
    for target in zitadel_actions_v2.actions(server).targets.values():
        target.interrupt_on_error = True
    status, answer = sign_in(server, "bcrypt-user@example.com", "pw-0")
    assert (status, "Errors.Execution.Failed" in answer["message"]) == (400, True)


def _csv_line(user_id: str, email: str, password_hash: str, salt: str) -> str:
    cols = [""] * 28
    cols[:6] = [user_id, email, "true", password_hash, salt, "Some One"]
    cols[23:25] = ["1508893925000", "1508893925000"]
    return ",".join(cols) + ",\n"


def test_a_firebase_export_migrated_with_legacy_hashes_signs_in_with_its_old_passwords(tmp_path, capsys):
    """The trickle migration's whole path: migrate firebase --legacy-hashes on the published vector and more users,
    push, set up, serve; every user with a kept hash signs in with the old password."""
    from pipeline.cli import main

    passwords = {"fb-ana": "ana-old-pass", "fb-bo": "bö-pässword ✓"}
    export = tmp_path / "users.csv"
    lines = [(DATA / "users.csv").read_text()]
    lines.append(
        _csv_line("fb-ana", "ana@example.com", *_made_firebase_hash(passwords["fb-ana"], "YW5hc2FsdA=="))
    )
    lines.append(_csv_line("fb-bo", "bo@example.com", *_made_firebase_hash(passwords["fb-bo"], "Ym9zYWx0")))
    lines.append(_csv_line("fb-cy", "cy@example.com", _made_firebase_hash("cy", "Y3k=")[0], ""))  # no salt
    lines.append(_csv_line("fb-dee", "dee@example.com", "", ""))  # no password in Firebase
    export.write_text("".join(lines))
    (tmp_path / "pat").write_text(PAT)
    os.chmod(tmp_path / "pat", 0o600)
    store = tmp_path / "out" / "legacy-hashes.ndjson"
    server = ZitadelServer(tokens={PAT}).start()
    _import(server, [])  # the organization exists
    companion = None
    try:
        code = main(
            [
                "migrate", "firebase", "--org=o1", f"--users={export}", f"--output={tmp_path / 'out' / 'importBody.json'}",
                f"--hash-config={DATA / 'hash_config.txt'}", f"--legacy-hashes={store}",
                f"--push-url={server.url}", f"--token-file={tmp_path / 'pat'}", "--api=user-v2",
            ]
        )  # fmt: skip
        migrate_out, migrate_err = capsys.readouterr()
        assert code == 0, migrate_out + migrate_err
        assert (
            f"kept for sign-in verification: 3 (zitadel-beam companion; mode 0600; push with --api=user-v2): {store}"
            in migrate_out
        )
        assert oct(store.stat().st_mode & 0o777) == "0o600"
        kept = [json.loads(line) for line in store.read_text().splitlines()]
        assert sorted(r["id"] for r in kept) == sorted([VECTOR_ID, "fb-ana", "fb-bo"])
        assert next(r for r in kept if r["id"] == VECTOR_ID) == vector_record() | {
            "login_names": ["user1@test.com"]
        }
        reset = tmp_path / "out" / "importBody.passwordless.ndjson"
        assert [json.loads(line)["id"] for line in reset.read_text().splitlines()] == ["fb-cy"]
        manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
        assert manifest["legacy_hashes"]["count"] == 3
        assert manifest["passwordless"]["count"] == 1
        assert server.user_ids("o1") == {VECTOR_ID, "fb-ana", "fb-bo", "fb-cy", "fb-dee"}

        port = _free_port()
        key_file = tmp_path / "signing-key"
        done = _cli(
            "setup", f"--url={server.url}", f"--token-file={tmp_path / 'pat'}",
            f"--endpoint=http://127.0.0.1:{port}/", f"--signing-key-file={key_file}", entry=WHOLE,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        companion = Companion(tmp_path, server.url, store, key_file, port, entry=WHOLE).start()
        assert companion.health()["waiting"] == 3
        assert sign_in_two_steps(server, "user1@test.com", VECTOR_PASSWORD)[0] == 200
        assert sign_in(server, "ana@example.com", passwords["fb-ana"])[0] == 200
        assert sign_in(server, "bo@example.com", "wrong")[0] == 400
        assert sign_in_two_steps(server, "bo@example.com", passwords["fb-bo"])[0] == 200
        assert sign_in(server, "cy@example.com", "cy")[0] == 400  # no salt, not kept: a reset mail
        health = companion.health()
        assert (health["waiting"], health["matched"], health["mismatched"]) == (0, 3, 1)
        # Every one of them signs in again through ZITADEL's own check, the companion passing through.
        assert sign_in_two_steps(server, "ana@example.com", passwords["fb-ana"])[0] == 200
        assert companion.health()["checked"] == health["checked"]
        status = _cli("status", f"--store={store}")
        assert "waiting for their first sign-in: 0" in status.stdout
        assert "migrated (password set in ZITADEL): 3" in status.stdout
        companion.stop()
        secrets = _secrets(store, key_file) + list(passwords.values())
        _assert_no_secrets(
            [companion.log.read_text(), migrate_out, migrate_err, done.stdout, done.stderr], secrets
        )
    finally:
        if companion is not None:
            companion.stop()
        server.stop()


def test_a_user_the_admin_import_left_initial_cannot_be_given_a_password_and_the_log_says_why(setup):
    server, companion, *_ = setup
    status, answer = sign_in(server, "fb-initial@example.com", "initial-secret")
    assert (status, "Errors.User.Password.NotSet" in answer["message"]) == (400, True)
    health = companion.health()
    assert (health["matched"], health["set_failed"], health["waiting"]) == (1, 1, 3)
    companion.stop()
    log = companion.log.read_text()
    assert "user fb-initial: SetPassword failed (" in log
    assert "HTTP 400); ZITADEL holds the user in state initial" in log
    assert "--api=user-v2" in log and "initial-secret" not in log
