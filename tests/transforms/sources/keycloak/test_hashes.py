"""Keycloak credential → MCF/PHC conversion, checked by verifying known passwords.

Each credential is built from a known password exactly as Keycloak stores it, converted, and
the converted string is verified with an independent implementation (argon2-cffi, bcrypt, a
pbkdf2 check that parses the MCF string). A wrong password must fail.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os

import argon2
import bcrypt
import pytest
from argon2.low_level import Type, hash_secret_raw

from transforms.hashing.convert import ConvertedHash, HashFailure
from transforms.mapping.validate import Reason, ValidationOptions, hash_problem
from transforms.sources.keycloak.hashes import convert_credential

PASSWORD = "correct horse battery staple"
WRONG = "correct horse battery stapler"
_KEYCLOAK_OPTS = ValidationOptions(allowed_hash_families=("bcrypt", "argon2", "pbkdf2"), bcrypt_min_cost=4)

_PBKDF2_DIGEST = {
    "pbkdf2": "sha1",
    "pbkdf2-sha1": "sha1",
    "pbkdf2-sha224": "sha224",
    "pbkdf2-sha256": "sha256",
    "pbkdf2-sha384": "sha384",
    "pbkdf2-sha512": "sha512",
}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _credential(secret: dict, data: dict) -> dict:
    """The current (Keycloak 11+) layout: two JSON documents inside JSON strings."""
    return {"type": "password", "secretData": json.dumps(secret), "credentialData": json.dumps(data)}


def _keycloak_pbkdf2(algorithm: str, password: str, iterations: int = 1000, key_len: int = 64) -> dict:
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac(_PBKDF2_DIGEST[algorithm], password.encode(), salt, iterations, key_len)
    return _credential(
        {"value": _b64(digest), "salt": _b64(salt), "additionalParameters": {}},
        {"hashIterations": iterations, "algorithm": algorithm, "additionalParameters": {}},
    )


def _keycloak_argon2(password: str, type_: str = "id", version: str = "1.3") -> dict:
    # Keycloak 25+ defaults: m=7168 KiB, t=5, p=1, 32-byte hash, 16-byte salt.
    salt = os.urandom(16)
    low_type = {"id": Type.ID, "i": Type.I, "d": Type.D}[type_]
    digest = hash_secret_raw(
        password.encode(),
        salt,
        time_cost=5,
        memory_cost=7168,
        parallelism=1,
        hash_len=32,
        type=low_type,
        version=19 if version == "1.3" else 16,
    )
    return _credential(
        {"value": _b64(digest), "salt": _b64(salt), "additionalParameters": {}},
        {
            "hashIterations": 5,
            "algorithm": "argon2",
            "additionalParameters": {
                "hashLength": ["32"],
                "memory": ["7168"],
                "type": [type_],
                "version": [version],
                "parallelism": ["1"],
            },
        },
    )


def _keycloak_bcrypt(password: str) -> dict:
    mcf = bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()
    return _credential(
        {"value": mcf, "salt": "", "additionalParameters": {}},
        {"hashIterations": 4, "algorithm": "bcrypt", "additionalParameters": {}},
    )


def _verify_pbkdf2_mcf(mcf: str, password: str) -> bool:
    """An independent pbkdf2 check: parse ``$id$iter$salt$hash`` and recompute."""
    _, ident, iterations, salt, expected = mcf.split("$")
    digest = {"pbkdf2": "sha1"}.get(ident) or ident.removeprefix("pbkdf2-")
    want = base64.b64decode(expected)
    got = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(salt), int(iterations), len(want))
    return hmac.compare_digest(got, want)


def _verify_argon2(phc: str, password: str) -> bool:
    try:
        return argon2.PasswordHasher().verify(phc, password)
    except argon2.exceptions.VerifyMismatchError:
        return False


@pytest.mark.parametrize("algorithm", sorted(_PBKDF2_DIGEST))
def test_pbkdf2_known_password_verifies(algorithm):
    converted = convert_credential(_keycloak_pbkdf2(algorithm, PASSWORD))
    assert isinstance(converted, ConvertedHash)
    expected_id = "pbkdf2" if _PBKDF2_DIGEST[algorithm] == "sha1" else algorithm
    assert converted.value.startswith(f"${expected_id}$1000$")
    assert converted.algorithm == f"pbkdf2-{_PBKDF2_DIGEST[algorithm]}"
    assert _verify_pbkdf2_mcf(converted.value, PASSWORD)
    assert not _verify_pbkdf2_mcf(converted.value, WRONG)
    assert hash_problem(converted.value, _KEYCLOAK_OPTS) is None


def test_pbkdf2_copies_salt_and_hash_verbatim():
    """zitadel-tools writes Keycloak's padded base64 unchanged (the reference output's user)."""
    credential = _credential(
        {
            "value": "ng6oDRung/pBLayd5ro7IU3mL/p86pg3WvQNQc+N1Eg=",
            "salt": "RaXjs4RiUKgJGkX6kp277w==",
            "additionalParameters": {},
        },
        {"hashIterations": 27500, "algorithm": "pbkdf2-sha256", "additionalParameters": {}},
    )
    assert convert_credential(credential) == ConvertedHash(
        "pbkdf2-sha256",
        "$pbkdf2-sha256$27500$RaXjs4RiUKgJGkX6kp277w==$ng6oDRung/pBLayd5ro7IU3mL/p86pg3WvQNQc+N1Eg=",
        "pbkdf2",
        (("rounds", 27500),),
    )


@pytest.mark.parametrize(
    "type_,version,prefix",
    [
        ("id", "1.3", "$argon2id$v=19$m=7168,t=5,p=1$"),
        ("i", "1.3", "$argon2i$v=19$m=7168,t=5,p=1$"),
    ],
)
def test_argon2_known_password_verifies(type_, version, prefix):
    converted = convert_credential(_keycloak_argon2(PASSWORD, type_, version))
    assert isinstance(converted, ConvertedHash)
    assert converted.value.startswith(prefix)
    salt, digest = converted.value.split("$")[-2:]
    assert "=" not in salt + digest  # PHC uses unpadded base64
    assert _verify_argon2(converted.value, PASSWORD)
    assert not _verify_argon2(converted.value, WRONG)
    assert hash_problem(converted.value, _KEYCLOAK_OPTS) is None


@pytest.mark.parametrize("type_,version", [("d", "1.3"), ("id", "1.0"), ("i", "1.0")])
def test_argon2_without_a_zitadel_verifier_is_refused(type_, version):
    """passwap parses argon2i/argon2id with v=19 only: argon2d and version 1.0 (v=16) are refused."""
    failure = convert_credential(_keycloak_argon2(PASSWORD, type_, version))
    assert isinstance(failure, HashFailure) and failure.reason == Reason.UNSUPPORTED_ARGON2_VARIANT
    assert ("1.0" in failure.detail) if version == "1.0" else ("argon2d" in failure.detail)


def test_argon2_missing_parameters_use_keycloak_defaults():
    credential = _keycloak_argon2(PASSWORD)
    data = json.loads(credential["credentialData"])
    data["additionalParameters"] = {}
    credential["credentialData"] = json.dumps(data)
    converted = convert_credential(credential)
    assert converted.value.startswith("$argon2id$v=19$m=7168,t=5,p=1$")
    assert _verify_argon2(converted.value, PASSWORD)


def test_bcrypt_known_password_verifies():
    converted = convert_credential(_keycloak_bcrypt(PASSWORD))
    assert isinstance(converted, ConvertedHash) and converted.algorithm == "bcrypt"
    assert bcrypt.checkpw(PASSWORD.encode(), converted.value.encode())
    assert not bcrypt.checkpw(WRONG.encode(), converted.value.encode())
    assert hash_problem(converted.value, _KEYCLOAK_OPTS) is None


def test_legacy_layout_pbkdf2_verifies():
    """Keycloak < 11 put hashedSaltedValue, salt, hashIterations and algorithm on the credential."""
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha1", PASSWORD.encode(), salt, 20000, 64)
    credential = {
        "type": "password",
        "hashedSaltedValue": _b64(digest),
        "salt": _b64(salt),
        "hashIterations": 20000,
        "counter": 0,
        "algorithm": "pbkdf2",
        "config": {},
    }
    converted = convert_credential(credential)
    assert converted.value.startswith("$pbkdf2$20000$")
    assert _verify_pbkdf2_mcf(converted.value, PASSWORD)
    assert not _verify_pbkdf2_mcf(converted.value, WRONG)


def test_keycloak_1x_credential_without_algorithm_is_pbkdf2_sha1():
    """Keycloak 1.x wrote no algorithm: its only hasher was PBKDF2-HMAC-SHA1 with a 64-byte key."""
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha1", PASSWORD.encode(), salt, 1000, 64)
    credential = {
        "type": "password",
        "hashedSaltedValue": _b64(digest),
        "salt": _b64(salt),
        "hashIterations": 1000,
    }
    converted = convert_credential(credential)
    assert isinstance(converted, ConvertedHash)
    assert (converted.algorithm, converted.verifier) == ("pbkdf2-sha1", "pbkdf2")
    assert converted.value.startswith("$pbkdf2$1000$")
    assert _verify_pbkdf2_mcf(converted.value, PASSWORD) and not _verify_pbkdf2_mcf(converted.value, WRONG)


_SECRET = "c2VjcmV0LWhhc2gtYnl0ZXMtdGhhdC1tdXN0LW5vdC1sZWFr"
_SALT = "c2FsdHNhbHRzYWx0c2FsdA=="


@pytest.mark.parametrize(
    "credential,reason",
    [
        (
            _credential({"value": _SECRET, "salt": _SALT}, {"hashIterations": 1, "algorithm": "md5"}),
            Reason.UNSUPPORTED_HASH,
        ),
        (
            _credential({"value": _SECRET, "salt": _SALT}, {"hashIterations": 1, "algorithm": "scrypt"}),
            Reason.UNSUPPORTED_HASH,
        ),
        (
            {"type": "password", "secretData": '{"value": "' + _SECRET, "credentialData": "{}"},
            Reason.UNSUPPORTED_HASH,
        ),
        (
            {
                "type": "password",
                "secretData": json.dumps({"value": _SECRET, "salt": _SALT}),
                "credentialData": "not json",
            },
            Reason.UNSUPPORTED_HASH,
        ),
        ({"type": "password", "secretData": "[1, 2]", "credentialData": "{}"}, Reason.UNSUPPORTED_HASH),
        (_credential({"value": _SECRET, "salt": _SALT}, {"algorithm": "pbkdf2-sha256"}), Reason.INVALID_HASH),
        (
            _credential(
                {"value": _SECRET, "salt": _SALT}, {"hashIterations": "many", "algorithm": "pbkdf2-sha256"}
            ),
            Reason.INVALID_HASH,
        ),
        (
            _credential(
                {"value": "not base64!", "salt": _SALT}, {"hashIterations": 10, "algorithm": "pbkdf2-sha256"}
            ),
            Reason.INVALID_HASH,
        ),
        (
            _credential({"value": _SECRET, "salt": ""}, {"hashIterations": 10, "algorithm": "pbkdf2-sha256"}),
            Reason.INVALID_HASH,
        ),
        (
            _credential(
                {"value": _SECRET, "salt": _SALT},
                {"hashIterations": 5, "algorithm": "argon2", "additionalParameters": {"type": ["x"]}},
            ),
            Reason.INVALID_HASH,
        ),
        (
            _credential(
                {"value": _SECRET, "salt": _SALT},
                {"hashIterations": 5, "algorithm": "argon2", "additionalParameters": {"version": ["2.0"]}},
            ),
            Reason.INVALID_HASH,
        ),
        (
            _credential(
                {"value": _SECRET, "salt": _SALT},
                {"hashIterations": 5, "algorithm": "argon2", "additionalParameters": {"hashLength": ["32"]}},
            ),
            Reason.INVALID_HASH,
        ),
        (
            _credential({"value": _SECRET, "salt": ""}, {"hashIterations": 10, "algorithm": "bcrypt"}),
            Reason.INVALID_HASH,
        ),
        (_credential({"value": _SECRET, "salt": _SALT}, {"hashIterations": 10}), Reason.UNSUPPORTED_HASH),
        ({"type": "password"}, Reason.UNSUPPORTED_HASH),
        ({"type": "password", "value": _SECRET}, Reason.PLAINTEXT_PASSWORD),
    ],
)
def test_unconvertible_credentials_fail_without_leaking(credential, reason):
    failure = convert_credential(credential)
    assert isinstance(failure, HashFailure)
    assert failure.reason == reason
    assert failure.detail
    assert _SECRET not in failure.detail and _SALT not in failure.detail
    assert _SECRET[:12] not in failure.detail
