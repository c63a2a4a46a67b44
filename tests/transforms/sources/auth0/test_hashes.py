"""Auth0 bulk-import hashes end to end: migrate auth0 → bodies → push to the test server.

One export holds a user per hash shape (Auth0's bulk-import schema: ``custom_password_hash`` and
the top-level ``password_hash``). A run against ZITADEL's defaults keeps bcrypt only and names
why each other user was refused; a run with a config that enables the verifiers and lowers the
limits imports them, through real HTTP, and each imported hash verifies its password under
passwap's rules (tests/standins/passwap_rules.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import bcrypt
import passwap_rules
import pytest
from argon2.low_level import Type, hash_secret
from repo_files import DATA_DIR
from zitadel_fixtures import PAT, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from pipeline.cli import main
from transforms.hashing.policy import HashPolicy
from transforms.mapping.validate import Reason
from transforms.output.manifest import load_manifest
from transforms.zitadel_api.credentials import Credentials

ENABLED = DATA_DIR / "zitadel-config" / "verifiers-enabled.yaml"


def _b64(data: bytes, pad: bool = True) -> str:
    text = base64.b64encode(data).decode()
    return text if pad else text.rstrip("=")


def _pbkdf2(password: str, digest: str, rounds: int) -> dict:
    salt = os.urandom(16)
    key = hashlib.pbkdf2_hmac(digest, password.encode(), salt, rounds, 32)
    return {
        "algorithm": "pbkdf2",
        "hash": {
            "value": f"$pbkdf2-{digest}$i={rounds},l=32${_b64(salt, False)}${_b64(key, False)}",
            "encoding": "utf8",
        },
    }


def _scrypt(password: str, cost: int) -> dict:
    salt = os.urandom(16)
    key = hashlib.scrypt(
        password.encode(),
        salt=salt,
        n=cost if cost & (cost - 1) == 0 else 16384,
        r=8,
        p=1,
        dklen=32,
        maxmem=64 << 20,
    )
    return {
        "algorithm": "scrypt",
        "hash": {"value": key.hex(), "encoding": "hex"},
        "salt": {"value": _b64(salt), "encoding": "base64"},
        "keylen": 32,
        "cost": cost,
    }


def _md5(password: str, salt: str | None) -> dict:
    digest = hashlib.md5(((salt or "") + password).encode()).hexdigest()
    block = {"algorithm": "md5", "hash": {"value": digest, "encoding": "hex"}}
    if salt is not None:
        block["salt"] = {"value": salt, "encoding": "utf8", "position": "prefix"}
    return block


def _argon2(password: str, kind: Type) -> dict:
    value = hash_secret(
        password.encode(),
        os.urandom(16),
        time_cost=2,
        memory_cost=7168,
        parallelism=1,
        hash_len=32,
        type=kind,
    ).decode()
    return {"algorithm": "argon2", "hash": {"value": value, "encoding": "utf8"}}


def _bcrypt(password: str, cost: int) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(cost)).decode()


# name → (profile hash fields, reason under ZITADEL's defaults, reason under ENABLED, or None: imports)
CASES = {
    "bcrypt10": (
        lambda pw: {"custom_password_hash": {"algorithm": "bcrypt", "hash": {"value": _bcrypt(pw, 10)}}},
        None,
        None,
    ),
    "top-bcrypt": (lambda pw: {"password_hash": _bcrypt(pw, 10)}, None, None),
    "top-bcrypt4": (lambda pw: {"password_hash": _bcrypt(pw, 4)}, Reason.BCRYPT_COST, None),
    "argon2id": (lambda pw: _wrap(_argon2(pw, Type.ID)), Reason.HASH_VERIFIER_DISABLED, None),
    "pbkdf2-sha256": (lambda pw: _wrap(_pbkdf2(pw, "sha256", 10000)), Reason.HASH_VERIFIER_DISABLED, None),
    "pbkdf2-500": (
        lambda pw: _wrap(_pbkdf2(pw, "sha1", 500)),
        Reason.HASH_VERIFIER_DISABLED,
        Reason.HASH_OUT_OF_LIMITS,
    ),
    "md5": (lambda pw: _wrap(_md5(pw, None)), Reason.HASH_VERIFIER_DISABLED, None),
    "md5-salted": (lambda pw: _wrap(_md5(pw, "pepper")), Reason.HASH_VERIFIER_DISABLED, None),
    "scrypt": (lambda pw: _wrap(_scrypt(pw, 16384)), Reason.HASH_VERIFIER_DISABLED, None),
    "scrypt-10000": (
        lambda pw: _wrap(_scrypt(pw, 10000)),
        Reason.UNSUPPORTED_SCRYPT_COST,
        Reason.UNSUPPORTED_SCRYPT_COST,
    ),
    "argon2d": (
        lambda pw: _wrap(_argon2(pw, Type.D)),
        Reason.UNSUPPORTED_ARGON2_VARIANT,
        Reason.UNSUPPORTED_ARGON2_VARIANT,
    ),
    "sha256-salted": (
        lambda pw: _wrap(
            {
                "algorithm": "sha256",
                "hash": {"value": hashlib.sha256(b"s" + pw.encode()).hexdigest(), "encoding": "hex"},
                "salt": {"value": "s", "position": "prefix"},
            }
        ),
        Reason.UNSUPPORTED_SALTED_SHA,
        Reason.UNSUPPORTED_SALTED_SHA,
    ),
    "hmac": (
        lambda pw: _wrap(
            {
                "algorithm": "hmac",
                "hash": {
                    "value": "00" * 32,
                    "encoding": "hex",
                    "digest": "sha256",
                    "key": {"value": "k", "encoding": "utf8"},
                },
            }
        ),
        Reason.UNSUPPORTED_HMAC,
        Reason.UNSUPPORTED_HMAC,
    ),
    "md4": (
        lambda pw: _wrap({"algorithm": "md4", "hash": {"value": "00" * 16, "encoding": "hex"}}),
        Reason.UNSUPPORTED_MD4,
        Reason.UNSUPPORTED_MD4,
    ),
    "ldap": (
        lambda pw: _wrap({"algorithm": "ldap", "hash": {"value": "{SSHA}AAAA", "encoding": "utf8"}}),
        Reason.UNSUPPORTED_LDAP,
        Reason.UNSUPPORTED_LDAP,
    ),
    "pbkdf2-md5": (
        lambda pw: _wrap(
            {
                "algorithm": "pbkdf2",
                "hash": {
                    "value": f"$pbkdf2-md5$i=1000,l=16$c2FsdA${_b64(bytes(16), False)}",
                    "encoding": "utf8",
                },
            }
        ),
        Reason.UNSUPPORTED_PBKDF2_DIGEST,
        Reason.UNSUPPORTED_PBKDF2_DIGEST,
    ),
    "utf16": (
        lambda pw: _wrap({**_md5(pw, None), "password": {"encoding": "utf16le"}}),
        Reason.UNSUPPORTED_PASSWORD_ENCODING,
        Reason.UNSUPPORTED_PASSWORD_ENCODING,
    ),
    "md5-binary-salt": (
        lambda pw: _wrap({**_md5(pw, None), "salt": {"value": "/w==", "encoding": "base64"}}),
        Reason.UNSUPPORTED_SALT,
        Reason.UNSUPPORTED_SALT,
    ),
}
HASH_REASONS = {reason for _, low, high in CASES.values() for reason in (low, high) if reason}


def _wrap(block: dict) -> dict:
    return {"custom_password_hash": block}


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("auth0-hashes")
    profiles, passwords = [], {}
    for i, (name, (make, _, _)) in enumerate(CASES.items()):
        password = f"pw-{name}-ü"
        passwords[f"auth0|{i}"] = password
        profiles.append(
            {
                "user_id": f"auth0|{i}",
                "email": f"{name}@example.com",
                "email_verified": True,
                "given_name": "Ann",
                "family_name": name,
                **make(password),
            }
        )
    path = tmp / "users.json"
    path.write_text(json.dumps(profiles))
    return path, passwords


def _migrate(tmp: Path, users: Path, *flags: str):
    output = tmp / "importBody.json"
    rc = main(
        [
            "migrate",
            "auth0",
            "--org=123",
            f"--users={users}",
            "--passwords=none",
            f"--output={output}",
            *flags,
        ]
    )
    manifest = json.loads((tmp / "importBody.manifest.json").read_text())
    written = [
        u
        for body in manifest["bodies"]
        for u in json.loads((tmp / body["path"]).read_text())["dataOrgs"]["orgs"][0]["humanUsers"]
    ]
    dead_path = tmp / manifest["dead_letter"]["path"]
    dead = [json.loads(line) for line in dead_path.read_text().splitlines()] if dead_path.exists() else []
    return rc, manifest, written, dead


def _family(letter: dict) -> str:
    record = letter["record"]
    return record["email"].split("@")[0] if isinstance(record, dict) else ""


@pytest.mark.parametrize("config", [None, ENABLED], ids=["defaults", "enabled"])
def test_each_user_imports_or_is_refused_with_its_reason(tmp_path, export, config, zitadel):
    users, passwords = export
    flags = [f"--zitadel-config={config}"] if config else ["--zitadel-config="]
    rc, manifest, written, dead = _migrate(tmp_path, users, *flags)
    assert rc == 0 and manifest["invariant"]["holds"] is True
    column = 1 if config is None else 2
    expected = {name: case[column] for name, case in CASES.items()}
    got = {_family(d): d["reason"] for d in dead if d["source"] == "auth0-profile"}
    assert got == {name: reason for name, reason in expected.items() if reason}
    # A converted hash whose user was refused is accounted for as a record of that profile.
    assert all(d["reason"] == Reason.PROFILE_REJECTED for d in dead if d["source"] != "auth0-profile")
    assert {u["user"]["profile"]["lastName"] for u in written} == {
        n for n, r in expected.items() if r is None
    }
    for letter in dead:  # the reason's detail never carries hash or salt
        assert "pepper" not in letter["detail"] and "$2b$" not in letter["detail"]
    for entry in written:
        value = entry["user"]["hashedPassword"]["value"]
        assert passwap_rules.verify(value, passwords[entry["userId"]])
        assert not passwap_rules.verify(value, "wrong")

    # Through real HTTP to a server configured like the run: every written user is created.
    server = zitadel
    if config is not None:
        server.hash_verifiers = frozenset(passwap_rules.ORDER)
        server.hash_limits = {**passwap_rules.DEFAULT_LIMITS, "Argon2.MinMemory": 7168, "Bcrypt.MinCost": 4}
    from transforms.push import engine as push_engine

    report = push_engine.push_manifest(
        load_manifest(str(tmp_path / "importBody.manifest.json")),
        server.url,
        Credentials("token", token=PAT),
        progress=False,
    )
    assert report.created == len(written), report.table()
    assert {user["profile"]["lastName"] for _, user in server.state.users.values()} == {
        u["user"]["profile"]["lastName"] for u in written
    }


def test_default_server_refuses_per_user_what_a_default_run_would_not_write(tmp_path, export, zitadel):
    """The body of the enabled run sent to a default server: bcrypt users import, the rest fail
    one by one with passwap's errors and the body still goes through."""
    users, _ = export
    rc, manifest, written, _ = _migrate(tmp_path, users, f"--zitadel-config={ENABLED}")
    from transforms.push import engine as push_engine

    report = push_engine.push_manifest(
        load_manifest(str(tmp_path / "importBody.manifest.json")),
        zitadel.url,
        Credentials("token", token=PAT),
        progress=False,
    )
    imported = {user["profile"]["lastName"] for _, user in zitadel.state.users.values()}
    assert imported == {"bcrypt10", "top-bcrypt"}
    assert report.created == 2


def test_import_without_password_keeps_the_user_and_names_the_reason(tmp_path, export):
    users, _ = export
    rc, manifest, written, dead = _migrate(
        tmp_path, users, "--zitadel-config=", "--on-unsupported-hash=import-without-password"
    )
    assert rc == 0 and manifest["invariant"]["holds"] is True
    assert len(written) == len(CASES)
    without = {u["user"]["profile"]["lastName"] for u in written if "hashedPassword" not in u["user"]}
    assert without == {name for name, case in CASES.items() if case[1]}
    assert all(d["detail"].endswith("(user imported without password)") for d in dead)
    assert manifest["counts"]["auth0.imported_without_password"] == len(without)


def test_manifest_counts_verifiers_and_push_warns_when_the_target_lacks_them(
    tmp_path, export, zitadel, caplog
):
    users, _ = export
    _, manifest, written, _ = _migrate(tmp_path, users, f"--zitadel-config={ENABLED}")
    assert manifest["password_hashes"] == {
        "argon2": 1,
        "bcrypt": 3,
        "md5plain": 1,
        "md5salted": 1,
        "pbkdf2": 1,
        "scrypt": 1,
    }
    assert manifest["password_hash_params"]["bcrypt"] == {"cost": [4, 10]}
    assert manifest["password_hash_params"]["argon2"]["memory"] == [7168, 7168]
    snippet = manifest["zitadel_config"]
    assert "      - md5salted\n" in snippet and "MinMemory: 7168" in snippet and "MinCost: 4" in snippet
    import yaml

    from transforms.hashing.policy import load_policy

    config = tmp_path / "needed.yaml"
    config.write_text(snippet)
    assert (
        load_policy(str(config), {}).covers(
            {v: {p: tuple(r) for p, r in ps.items()} for v, ps in manifest["password_hash_params"].items()}
        )
        == []
    )
    assert yaml.safe_load(snippet)["SystemDefaults"]["PasswordHasher"]["Verifiers"][0] == "argon2"

    from transforms.push import engine as push_engine

    with caplog.at_level("WARNING"):
        push_engine.push_manifest(
            load_manifest(str(tmp_path / "importBody.manifest.json")),
            zitadel.url,
            Credentials("token", token=PAT),
            progress=False,
            # push's own config (ZITADEL's defaults) wins over the one migrate recorded
            hash_policy=HashPolicy(),
        )
    warnings = [r.getMessage() for r in caplog.records if "does not cover" in r.getMessage()]
    assert any("verifier 'argon2' is not enabled" in w for w in warnings)
    assert any(
        "bcrypt cost 4 < SystemDefaults.PasswordHasher.Limits.Bcrypt.MinCost = 10" in w for w in warnings
    )
    caplog.clear()
    with caplog.at_level("WARNING"):
        push_engine.push_manifest(
            load_manifest(str(tmp_path / "importBody.manifest.json")),
            zitadel.url,
            Credentials("token", token=PAT),
            progress=False,
            hash_policy=load_policy(str(config), {}),
        )
    assert not [r for r in caplog.records if "does not cover" in r.getMessage()]


def test_passwordless_users_are_listed_for_reset_mails(tmp_path, export):
    users, _ = export
    _, manifest, written, _ = _migrate(
        tmp_path, users, "--zitadel-config=", "--on-unsupported-hash=import-without-password"
    )
    listing = tmp_path / manifest["passwordless"]["path"]
    assert listing.stat().st_mode & 0o777 == 0o600
    rows = [json.loads(line) for line in listing.read_text().splitlines()]
    expected = {f"{name}@example.com": case[1] for name, case in CASES.items() if case[1]}
    assert {row["email"]: row["reason"] for row in rows} == expected
    assert manifest["passwordless"]["count"] == len(rows) == len(expected)
    assert all(row["id"].startswith("auth0|") for row in rows)
    assert sum(manifest["users_without_password_by_reason"].values()) == len(expected)
    assert "$" not in listing.read_text()  # no hash in it
