"""A hasher's name → the digest in a form passwap verifies: Clerk's own pbkdf2 layouts rewritten,
checked with passwap's rules (tests/standins/passwap_rules.py) against the password they hash."""

from __future__ import annotations

import base64
import hashlib

import passwap_rules
import pytest

from transforms.hashing.convert import HashFailure
from transforms.hashing.forms import HashForm, to_passwap
from transforms.hashing.hashers import HASHERS, by_hasher


def _verifies(value: str, form: HashForm, password: str) -> bool:
    converted = to_passwap(value, form).converted
    assert converted is not None
    return passwap_rules.verify(converted.value, password)


def test_clerk_pbkdf2_sha256_is_read_with_base64_salt_and_hash():
    salt = b"clerk-salt-16byt"
    key = hashlib.pbkdf2_hmac("sha256", b"correct horse", salt, 1000)
    digest = f"pbkdf2_sha256$1000${base64.b64encode(salt).decode()}${base64.b64encode(key).decode()}"
    read = by_hasher(digest, " PBKDF2_SHA256 ")
    assert (
        isinstance(read, tuple) and read[1] is HashForm.PBKDF2 and read[0].startswith("$pbkdf2-sha256$1000$")
    )
    assert _verifies(*read, "correct horse") and not _verifies(*read, "correct horsex")


@pytest.mark.parametrize("salt_text", ["73616c74", "not-hex-salt"])
def test_clerk_pbkdf2_sha1_takes_a_hex_salt_as_bytes_and_any_other_as_text(salt_text):
    salt = bytes.fromhex(salt_text) if salt_text == "73616c74" else salt_text.encode()
    key = hashlib.pbkdf2_hmac("sha1", b"s3cret", salt, 2000)
    for digest in (
        f"pbkdf2_sha1$2000${salt_text}${key.hex()}",
        f"pbkdf2_sha1$2000${salt_text}${key.hex()}$20",
    ):
        read = by_hasher(digest, "pbkdf2_sha1")
        assert isinstance(read, tuple) and _verifies(*read, "s3cret") and not _verifies(*read, "s3cretx")


@pytest.mark.parametrize(
    "digest, hasher",
    [
        ("pbkdf2_sha1$2000$73616c74$abcd$99", "pbkdf2_sha1"),  # a key length not the hash's
        ("pbkdf2_sha1$x$73616c74$abcd", "pbkdf2_sha1"),
        ("pbkdf2_sha256$1000$c2FsdA==", "pbkdf2_sha256"),  # a field missing
    ],
)
def test_a_digest_not_of_its_hashers_layout_is_an_invalid_hash(digest, hasher):
    read = by_hasher(digest, hasher)
    assert isinstance(read, HashFailure) and read.reason == "invalid-hash"
    assert digest not in read.detail


def test_other_hashers_keep_their_digest_and_an_unknown_name_is_left_to_the_caller():
    assert by_hasher("$2a$10$abc", "bcrypt") == ("$2a$10$abc", HashForm.BCRYPT)
    assert by_hasher("x", "scrypt_firebase") == ("x", HashForm.FIREBASE_SCRYPT)
    assert by_hasher("x", "pbkdf2_sha512") is None
    assert set(HASHERS) >= {"bcrypt", "argon2id", "pbkdf2_sha256_django", "md5", "phpass"}
