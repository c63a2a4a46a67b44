"""Benchmark: what the companion adds to a sign-in, over real sockets, against the test server.

    python benchmarks/companion_signin.py --users 20

The test server (tests/standins/zitadel_server.py, in this process) and ``python -m
pipeline.companion serve`` (its own process). ``--users`` Firebase users (the published vector's
project parameters, each its own salt and password) are created through the user service without
a password and kept in a store; as many users with a password ZITADEL holds are imported. Timed,
each a one-step ``CreateSession`` with the user and password checks, median over the users:

- ``no execution`` (the baseline): a user whose password ZITADEL holds, before the target is set;
- ``pass-through``: the same users once the execution calls the companion (signature check, the
  user not in the store);
- ``first sign-in``: a Firebase user (signature, the Firebase scrypt check, SetPassword, the
  removal's fsync);
- ``first sign-in, old system``: a user of form ``old-system`` checked against the Keycloak
  stand-in (tests/standins/legacy_keycloak.py, plain HTTP on loopback, in this process): the
  signature, the direct grant call, SetPassword, the removal's fsync. Interleaved with the
  Firebase users' first sign-ins (one of each in turn), so both see the same machine;
- ``second sign-in``: the same Firebase user again (pass-through).

The test server checks a password it holds without a hash's cost, so the figures are the
companion's own. This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "helpers"), str(REPO / "tests" / "standins")]

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes  # noqa: E402
from legacy_keycloak import answer as keycloak_answer  # noqa: E402 - after the sys.path set-up above
from legacy_server import LegacyServer, LegacyUser  # noqa: E402
from zitadel_server import ZitadelServer  # noqa: E402

PAT = "bench-" + base64.urlsafe_b64encode(os.urandom(18)).decode()
VECTOR = REPO / "tests" / "data" / "firebase" / "scrypt-readme"


def _config() -> dict[str, str]:
    pairs = {}
    for line in (VECTOR / "hash_config.txt").read_text().splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            pairs[key.strip()] = value.strip().rstrip(",")
    return pairs


def _firebase(password: str, salt: bytes, config: dict[str, str]) -> str:
    derived = hashlib.scrypt(
        password.encode(),
        salt=salt + base64.b64decode(config["base64_salt_separator"]),
        n=1 << int(config["mem_cost"]),
        r=int(config["rounds"]),
        p=1,
        dklen=64,
    )
    encryptor = Cipher(algorithms.AES(derived[:32]), modes.CTR(b"\0" * 16)).encryptor()
    return base64.b64encode(
        encryptor.update(base64.b64decode(config["base64_signer_key"])) + encryptor.finalize()
    ).decode()


def _call(url: str, method: str, path: str, body: dict) -> int:
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {PAT}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code


def _sign_in(url: str, login: str, password: str) -> float:
    started = time.perf_counter()
    status = _call(
        url,
        "POST",
        "/v2/sessions",
        {"checks": {"user": {"loginName": login}, "password": {"password": password}}},
    )
    elapsed = (time.perf_counter() - started) * 1000
    assert status == 200, (login, status)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20)
    args = parser.parse_args()
    config = _config()
    work = pathlib.Path(tempfile.mkdtemp(prefix="companion-bench-"))
    server = ZitadelServer(tokens={PAT}).start()
    held = [(f"held-{i}@example.com", f"held-pw-{i}") for i in range(args.users)]
    server.import_data(
        {
            "timeout": "1m",
            "dataOrgs": {
                "orgs": [
                    {
                        "orgId": "o1",
                        "humanUsers": [
                            {
                                "userId": f"held-{i}",
                                "user": {
                                    "userName": login,
                                    "profile": {"firstName": "F", "lastName": "L"},
                                    "email": {"email": login, "isEmailVerified": True},
                                    "password": password,
                                },
                            }
                            for i, (login, password) in enumerate(held)
                        ],
                    }
                ]
            },
        }
    )
    firebase = [(f"fb-{i}@example.com", f"fb-pw-{i}") for i in range(args.users)]
    fd = os.open(work / "store.ndjson", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as store:
        for i, (login, password) in enumerate(firebase):
            body = {
                "userId": f"fb-{i}",
                "organization": {"orgId": "o1"},
                "username": login,
                "profile": {"givenName": "F", "familyName": "L"},
                "email": {"email": login, "returnCode": {}},
            }
            assert _call(server.url, "POST", "/v2/users/human", body) == 200
            salt = os.urandom(12)
            params = {
                "salt": base64.b64encode(salt).decode(),
                "signer_key": config["base64_signer_key"],
                "salt_separator": config["base64_salt_separator"],
                "rounds": int(config["rounds"]),
                "mem_cost": int(config["mem_cost"]),
            }
            record = {"id": f"fb-{i}", "form": "firebase-scrypt", "hash": _firebase(password, salt, config)}
            store.write(json.dumps({**record, "params": params, "login_names": [login]}) + "\n")
        old = [(f"old-{i}@example.com", f"old-pw-{i}") for i in range(args.users)]
        for i, (login, _) in enumerate(old):
            body = {
                "userId": f"old-{i}",
                "organization": {"orgId": "o1"},
                "username": login,
                "profile": {"givenName": "F", "familyName": "L"},
                "email": {"email": login, "returnCode": {}},
            }
            assert _call(server.url, "POST", "/v2/users/human", body) == 200
            store.write(json.dumps({"id": f"old-{i}", "form": "old-system", "login_names": [login]}) + "\n")
    legacy = LegacyServer(
        keycloak_answer,
        {login: LegacyUser(password) for login, password in old},
        realm="acme",
        client_id="zitadel-companion",
    ).start()
    (work / "pat").write_text(PAT)
    os.chmod(work / "pat", 0o600)
    baseline = [_sign_in(server.url, login, password) for login, password in held]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    python = [sys.executable, "-m", "pipeline.companion"]
    common = [f"--url={server.url}", f"--token-file={work / 'pat'}", f"--signing-key-file={work / 'key'}"]
    subprocess.run(
        [*python, "setup", *common, f"--endpoint=http://127.0.0.1:{port}/"],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    serve = subprocess.Popen(
        [
            *python,
            "serve",
            *common,
            f"--store={work / 'store.ndjson'}",
            f"--listen=127.0.0.1:{port}",
            "--old-system=keycloak",
            f"--old-system-url={legacy.url}/realms/acme",
            "--old-system-client-id=zitadel-companion",
        ],  # fmt: skip
        cwd=REPO,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
                break
            except OSError:
                time.sleep(0.05)
        passing = [_sign_in(server.url, login, password) for login, password in held]
        first: list[float] = []
        first_old: list[float] = []
        for (login, password), (old_login, old_password) in zip(firebase, old, strict=True):
            first.append(_sign_in(server.url, login, password))
            first_old.append(_sign_in(server.url, old_login, old_password))
        second = [_sign_in(server.url, login, password) for login, password in firebase]
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        server.stop()
        legacy.stop()
    base = statistics.median(baseline)
    print(f"{'sign-in (CreateSession)':<28}{'median ms':>10}{'min':>8}{'max':>8}{'ratio':>8}")
    for name, values in (
        ("no execution", baseline),
        ("pass-through", passing),
        ("first sign-in (migrates)", first),
        ("first sign-in, old system", first_old),
        ("second sign-in", second),
    ):
        median = statistics.median(values)
        print(f"{name:<28}{median:>10.1f}{min(values):>8.1f}{max(values):>8.1f}{median / base:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
