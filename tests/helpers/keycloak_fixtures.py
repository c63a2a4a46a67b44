"""Keycloak realms for the tests: users with a real pbkdf2 password, realm files, split exports.

Shared by test_keycloak_mapping.py, test_keycloak_realm_files.py, test_keycloak_read.py and
tests/transforms/sources/keycloak/test_command.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import orjson
from repo_files import DATA_DIR

__all__ = [
    "DATA",
    "REFERENCE",
    "REALWORLD",
    "need",
    "pbkdf2_credential",
    "make_user",
    "write_json",
    "split_export_files",
]

DATA = DATA_DIR
REFERENCE = DATA / "zitadel-tools" / "keycloak"
REALWORLD = DATA / "realworld" / "keycloak"


def need(path: Path) -> Path:
    assert path.exists(), f"{path} is missing from tests/data"
    return path


def pbkdf2_credential(password: str, iterations: int = 1000) -> dict:
    salt = hashlib.sha256(password.encode()).digest()[:16]  # deterministic for stable fixtures
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations, 32)
    return {
        "type": "password",
        "secretData": json.dumps(
            {"value": base64.b64encode(digest).decode(), "salt": base64.b64encode(salt).decode()}
        ),
        "credentialData": json.dumps({"hashIterations": iterations, "algorithm": "pbkdf2-sha256"}),
    }


def make_user(n: int, **extra) -> dict:
    user = {
        "id": f"id-{n}",
        "username": f"user{n}",
        "enabled": True,
        "emailVerified": True,
        "firstName": f"First{n}",
        "lastName": f"Last{n}",
        "email": f"user{n}@example.com",
        "credentials": [pbkdf2_credential(f"pw{n}")],
    }
    user.update(extra)
    return user


def write_json(path: Path, doc) -> Path:
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path


def split_export_files(directory: Path, realm: str, users_per_file: list[int]) -> list[dict]:
    """What `kc.sh export --users different_files` writes: a realm file + users files."""
    directory.mkdir(parents=True, exist_ok=True)
    write_json(
        directory / f"{realm}-realm.json",
        {"realm": realm, "enabled": True, "roles": {"realm": []}, "clients": []},
    )
    users, n = [], 0
    for file_no, count in enumerate(users_per_file):
        chunk = [make_user(n + i) for i in range(count)]
        n += count
        users += chunk
        write_json(directory / f"{realm}-users-{file_no}.json", {"realm": realm, "users": chunk})
    return users
