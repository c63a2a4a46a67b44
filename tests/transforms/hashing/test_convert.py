"""transforms/hashing/convert.py: every conversion verifies under passwap's rules (tests/standins/passwap_rules.py).

Source hashes are made here from known passwords with hashlib / bcrypt / argon2-cffi, in the
shapes Auth0's "bulk user import database schema and examples" page documents; the converted
string must verify the password and refuse a wrong one. passwap's own vectors
(tests/data/passwap_vectors.json) check the verifier and the parser against each other.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os

import bcrypt
import passwap_rules
import pytest
from argon2.low_level import Type, hash_secret
from repo_files import DATA_DIR

from transforms.hashing.convert import ConvertedHash, HashFailure, parse_hash
from transforms.mapping.validate import Reason
from transforms.sources.auth0.hashes import convert_auth0
from transforms.sources.keycloak.hashes import convert_credential

PASSWORD, WRONG = "corrêct horse ✓", "corrêct horse ✗"
VECTORS = json.loads((DATA_DIR / "passwap_vectors.json").read_text())["vectors"]


def _b64(data: bytes, pad: bool = True) -> str:
    text = base64.b64encode(data).decode()
    return text if pad else text.rstrip("=")


def _pw() -> bytes:
    return PASSWORD.encode("utf-8")


# --------------------------------------------------------------------------- passwap's vectors


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["encoded"][:24])
def test_passwap_vectors_verify_and_parse(vector):
    encoded, password = vector["encoded"], vector["password"]
    parsed = parse_hash(encoded)
    if not vector["accept"]:
        with pytest.raises(passwap_rules.Refused):
            passwap_rules.verify(encoded, password)
        assert isinstance(parsed, HashFailure)
        return
    assert passwap_rules.claim(encoded) == vector["verifier"]
    assert passwap_rules.verify(encoded, password)
    assert not passwap_rules.verify(encoded, password + "!")
    assert isinstance(parsed, ConvertedHash) and parsed.verifier == vector["verifier"]


@pytest.mark.parametrize(
    "encoded, params",
    [
        ("$2b$12$bIRGj4QPPoSUMWsJE.4Pk.T1qTpDWz7HhMnuiQhGzGinKPsx/HQdq", {"cost": 12}),
        (
            "$argon2id$v=19$m=4096,t=3,p=1$cmFuZG9tc2FsdGlzaGFyZA$DYojYpnUWSMmTtrkVXyaNWVGxLmGe1n8VJBPDdFkbjU",
            {"time": 3, "memory": 4096, "threads": 1},
        ),
        (
            "$pbkdf2-sha256$12$cmFuZG9tc2FsdGlzaGFyZA$OFvEcLOIPFd/oq8egf10i.qJLI7A8nDjPLnolCWarQY",
            {"rounds": 12},
        ),
        (
            "$scrypt$ln=16,r=8,p=1$cmFuZG9tc2FsdGlzaGFyZA$Rh+NnJNo1I6nRwaNqbDm6kmADswD1+7FTKZ7Ln9D8nQ",
            {"ln": 16, "r": 8, "p": 1},
        ),
        (
            "$6$rounds=5000$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1",
            {"sha512rounds": 5000},
        ),
        ("$P$9IQRaTwmfeRo7ud9Fh4E2PdI0S3r.L0", {"rounds": 11}),
        ("$S$ECiTwp95d.CM.PorExdDeWcec0F1SeaEsf3Yon9RUcrhQy4Q7XX1", {"iterations": 1 << 16}),
    ],
)
def test_parse_hash_reads_cost_parameters(encoded, params):
    assert dict(parse_hash(encoded).params) == params


@pytest.mark.parametrize(
    "encoded, reason",
    [
        (
            "$argon2id$v=19$m=4096,t=3,p=1$cmFuZG9tc2FsdGlzaGFyZA==$DYojYpnUWSMmTtrkVXyaNWVGxLmGe1n8VJBPDdFkbjU",
            Reason.INVALID_HASH,
        ),  # padded salt: passwap is strict
        (
            "$argon2id$v=19$t=3,m=4096,p=1$cmFuZG9tc2FsdGlzaGFyZA$DYojYpnUWSMmTtrkVXyaNWVGxLmGe1n8VJBPDdFkbjU",
            Reason.UNSUPPORTED_ARGON2_VARIANT,
        ),  # field order
        (
            "$argon2id$v=16$m=4096,t=3,p=1$cmFuZG9tc2FsdGlzaGFyZA$DYojYpnUWSMmTtrkVXyaNWVGxLmGe1n8VJBPDdFkbjU",
            Reason.UNSUPPORTED_ARGON2_VARIANT,
        ),
        ("$2x$12$bIRGj4QPPoSUMWsJE.4Pk.T1qTpDWz7HhMnuiQhGzGinKPsx/HQdq", Reason.INVALID_HASH),
        ("$pbkdf2-sha1$12$cmFuZG9tc2FsdGlzaGFyZA$mwUqsMixIYMc/0eN4v1.l3SVDpk", Reason.INVALID_HASH),
        ("$pbkdf2-sha256$i=12,l=32$cmFuZG9tc2FsdGlzaGFyZA$OFvEcLOIPFd", Reason.INVALID_HASH),
        ("$sha1$1$x$y", Reason.UNSUPPORTED_HASH),
        ("plain-text", Reason.INVALID_HASH),
    ],
)
def test_parse_hash_refuses_what_passwap_refuses(encoded, reason):
    failure = parse_hash(encoded)
    assert isinstance(failure, HashFailure) and failure.reason == reason
    assert encoded[-10:] not in failure.detail
    with pytest.raises(passwap_rules.Refused):
        passwap_rules.verify(encoded, "password")


# --------------------------------------------------------------------------- Auth0 custom_password_hash


def _auth0_argon2(kind: Type) -> dict:
    phc = hash_secret(
        _pw(), os.urandom(16), time_cost=2, memory_cost=8192, parallelism=1, hash_len=32, type=kind
    )
    return {"algorithm": "argon2", "hash": {"value": phc.decode(), "encoding": "utf8"}}


def _auth0_pbkdf2(digest: str, iterations: int = 1000) -> dict:
    salt = os.urandom(16)
    key = hashlib.pbkdf2_hmac(
        digest, _pw(), salt, iterations, {"sha1": 20, "sha256": 32, "sha512": 64}[digest]
    )
    value = f"$pbkdf2-{digest}$i={iterations},l={len(key)}${_b64(salt, False)}${_b64(key, False)}"
    return {"algorithm": "pbkdf2", "hash": {"value": value, "encoding": "utf8"}}


def _auth0_md5(encoding: str, salt: str | None = None, position: str = "prefix") -> dict:
    data = (
        _pw()
        if salt is None
        else ((salt.encode() + _pw()) if position == "prefix" else (_pw() + salt.encode()))
    )
    digest = hashlib.md5(data).digest()
    block = {
        "algorithm": "md5",
        "hash": {"value": digest.hex() if encoding == "hex" else _b64(digest), "encoding": encoding},
    }
    if salt is not None:
        block["salt"] = {"value": salt, "encoding": "utf8", "position": position}
    return block


def _auth0_scrypt(encoding: str, cost: int = 16384) -> dict:
    salt = os.urandom(16)
    key = hashlib.scrypt(_pw(), salt=salt, n=cost, r=8, p=1, dklen=64, maxmem=64 << 20)
    return {
        "algorithm": "scrypt",
        "hash": {"value": key.hex() if encoding == "hex" else _b64(key), "encoding": encoding},
        "salt": {"value": _b64(salt), "encoding": "base64"},
        "keylen": 64,
        "cost": cost,
    }


AUTH0_CONVERTIBLE = {
    "bcrypt": (
        {"algorithm": "bcrypt", "hash": {"value": bcrypt.hashpw(_pw(), bcrypt.gensalt(10)).decode()}},
        "bcrypt",
        "auth0-bcrypt",
    ),
    "argon2id": (_auth0_argon2(Type.ID), "argon2", "auth0-argon2"),
    "argon2i": (_auth0_argon2(Type.I), "argon2", "auth0-argon2"),
    "pbkdf2-sha1": (_auth0_pbkdf2("sha1"), "pbkdf2", "auth0-pbkdf2"),
    "pbkdf2-sha256": (_auth0_pbkdf2("sha256"), "pbkdf2", "auth0-pbkdf2"),
    "pbkdf2-sha512": (_auth0_pbkdf2("sha512"), "pbkdf2", "auth0-pbkdf2"),
    "md5-hex": (_auth0_md5("hex"), "md5plain", "auth0-md5"),
    "md5-base64": (_auth0_md5("base64"), "md5plain", "auth0-md5"),
    "md5-salt-prefix": (_auth0_md5("hex", "pepper", "prefix"), "md5salted", "auth0-md5-salted"),
    "md5-salt-suffix": (_auth0_md5("base64", "pepper", "suffix"), "md5salted", "auth0-md5-salted"),
    "scrypt-base64": (_auth0_scrypt("base64"), "scrypt", "auth0-scrypt"),
    "scrypt-hex": (_auth0_scrypt("hex", 1 << 15), "scrypt", "auth0-scrypt"),
}


@pytest.mark.parametrize("name", AUTH0_CONVERTIBLE)
def test_auth0_conversion_verifies_the_original_password(name):
    block, verifier, label = AUTH0_CONVERTIBLE[name]
    converted = convert_auth0(block)
    assert isinstance(converted, ConvertedHash), converted
    assert (converted.verifier, converted.algorithm) == (verifier, label)
    assert passwap_rules.claim(converted.value) == verifier
    assert passwap_rules.verify(converted.value, PASSWORD)
    assert not passwap_rules.verify(converted.value, WRONG)
    # What the string says about itself is what the conversion said (one set of rules).
    reparsed = parse_hash(converted.value)
    assert (reparsed.verifier, reparsed.params) == (converted.verifier, converted.params)


def test_auth0_pbkdf2_sha1_is_written_as_plain_pbkdf2():
    assert convert_auth0(_auth0_pbkdf2("sha1")).value.startswith("$pbkdf2$1000$")


def test_auth0_scrypt_writes_log2_of_the_cost():
    assert convert_auth0(_auth0_scrypt("hex", 1 << 15)).value.startswith("$scrypt$ln=15,r=8,p=1$")


_DIGEST = hashlib.sha256(b"secret").hexdigest()
_UNSUPPORTED = [
    (
        {
            "algorithm": "sha1",
            "hash": {"value": _DIGEST[:40], "encoding": "hex"},
            "salt": {"value": "pepper", "position": "prefix"},
        },
        Reason.UNSUPPORTED_SALTED_SHA,
    ),
    (
        {
            "algorithm": "sha256",
            "hash": {"value": _DIGEST, "encoding": "hex"},
            "salt": {"value": "pepper", "position": "suffix"},
        },
        Reason.UNSUPPORTED_SALTED_SHA,
    ),
    (
        {"algorithm": "sha512", "hash": {"value": _DIGEST * 2, "encoding": "hex"}},
        Reason.UNSUPPORTED_SALTED_SHA,
    ),
    (
        {
            "algorithm": "hmac",
            "hash": {
                "value": _DIGEST,
                "encoding": "hex",
                "digest": "sha256",
                "key": {"value": "k", "encoding": "utf8"},
            },
        },
        Reason.UNSUPPORTED_HMAC,
    ),
    ({"algorithm": "md4", "hash": {"value": _DIGEST[:32], "encoding": "hex"}}, Reason.UNSUPPORTED_MD4),
    (
        {"algorithm": "ldap", "hash": {"value": "{SSHA}" + _DIGEST, "encoding": "utf8"}},
        Reason.UNSUPPORTED_LDAP,
    ),
    (
        {
            "algorithm": "pbkdf2",
            "hash": {"value": f"$pbkdf2-md5$i=1000,l=16$c2FsdA${_b64(bytes(16), False)}", "encoding": "utf8"},
        },
        Reason.UNSUPPORTED_PBKDF2_DIGEST,
    ),
    (
        {
            "algorithm": "pbkdf2",
            "hash": {"value": f"$pbkdf2-md4$i=1000,l=16$c2FsdA${_b64(bytes(16), False)}", "encoding": "utf8"},
        },
        Reason.UNSUPPORTED_PBKDF2_DIGEST,
    ),
    ({**_auth0_md5("hex"), "password": {"encoding": "utf16le"}}, Reason.UNSUPPORTED_PASSWORD_ENCODING),
    ({**_auth0_md5("hex"), "password": {"encoding": "latin1"}}, Reason.UNSUPPORTED_PASSWORD_ENCODING),
    ({**_auth0_md5("hex"), "salt": {"value": "has space", "encoding": "utf8"}}, Reason.UNSUPPORTED_SALT),
    ({**_auth0_md5("hex"), "salt": {"value": "/w==", "encoding": "base64"}}, Reason.UNSUPPORTED_SALT),
    ({**_auth0_scrypt("hex"), "cost": 10000}, Reason.UNSUPPORTED_SCRYPT_COST),
    (
        {
            "algorithm": "argon2",
            "hash": {
                "value": hash_secret(
                    b"x",
                    os.urandom(16),
                    time_cost=1,
                    memory_cost=8192,
                    parallelism=1,
                    hash_len=32,
                    type=Type.D,
                ).decode()
            },
        },
        Reason.UNSUPPORTED_ARGON2_VARIANT,
    ),
    ({"algorithm": "whirlpool", "hash": {"value": _DIGEST, "encoding": "hex"}}, Reason.UNSUPPORTED_HASH),
    ({"algorithm": "md5", "hash": {"value": "zz" * 16, "encoding": "hex"}}, Reason.INVALID_HASH),
    ({"algorithm": "md5", "hash": {"value": _DIGEST, "encoding": "hex"}}, Reason.INVALID_HASH),  # 32 bytes
    ({"algorithm": "bcrypt", "hash": {"value": "$2x$10$" + "a" * 53}}, Reason.INVALID_HASH),
    (
        {"algorithm": "pbkdf2", "hash": {"value": "$pbkdf2-sha256$i=1000,l=99$c2FsdA$aGFzaA"}},
        Reason.INVALID_HASH,
    ),
    ({"algorithm": "md5", "hash": {}}, Reason.MISSING_PASSWORD_HASH),
    ("bcrypt", Reason.INVALID_HASH),
]


@pytest.mark.parametrize("block, reason", _UNSUPPORTED, ids=lambda v: v if isinstance(v, str) else None)
def test_auth0_unsupported_each_with_its_reason(block, reason):
    failure = convert_auth0(block)
    assert isinstance(failure, HashFailure) and failure.reason == reason
    assert _DIGEST[:16] not in failure.detail and "pepper" not in failure.detail


# --------------------------------------------------------------------------- Keycloak


def _keycloak(algorithm: str | None, digest: bytes, salt: bytes, iterations: int, **params) -> dict:
    data = {"hashIterations": iterations, "additionalParameters": params}
    if algorithm is not None:
        data["algorithm"] = algorithm
    return {
        "type": "password",
        "secretData": json.dumps({"value": _b64(digest), "salt": _b64(salt)}),
        "credentialData": json.dumps(data),
    }


def _keycloak_cases():
    salt = os.urandom(16)
    cases = {}
    for name, digest in (("pbkdf2", "sha1"), ("pbkdf2-sha256", "sha256"), ("pbkdf2-sha512", "sha512")):
        cases[name] = (
            _keycloak(name, hashlib.pbkdf2_hmac(digest, _pw(), salt, 27500, 64), salt, 27500),
            "pbkdf2",
        )
    from argon2.low_level import hash_secret_raw

    raw = hash_secret_raw(_pw(), salt, 5, 7168, 1, 32, Type.ID, 19)
    cases["argon2"] = (_keycloak("argon2", raw, salt, 5), "argon2")
    cases["bcrypt"] = (
        {
            "type": "password",
            "secretData": json.dumps({"value": bcrypt.hashpw(_pw(), bcrypt.gensalt(10)).decode()}),
            "credentialData": json.dumps({"algorithm": "bcrypt", "hashIterations": 10}),
        },
        "bcrypt",
    )
    legacy = hashlib.pbkdf2_hmac("sha1", _pw(), salt, 1024, 64)
    cases["1.x without algorithm"] = (
        {"type": "password", "hashedSaltedValue": _b64(legacy), "salt": _b64(salt), "hashIterations": 1024},
        "pbkdf2",
    )
    return cases


KEYCLOAK_CASES = _keycloak_cases()


@pytest.mark.parametrize("name", KEYCLOAK_CASES)
def test_keycloak_conversion_verifies_the_original_password(name):
    credential, verifier = KEYCLOAK_CASES[name]
    converted = convert_credential(credential)
    assert isinstance(converted, ConvertedHash) and converted.verifier == verifier
    assert passwap_rules.claim(converted.value) == verifier
    assert passwap_rules.verify(converted.value, PASSWORD)
    assert not passwap_rules.verify(converted.value, WRONG)
    assert parse_hash(converted.value).params == converted.params
