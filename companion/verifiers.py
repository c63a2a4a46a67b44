"""Legacy password checks for the hashes ZITADEL refuses (docs/companion.md#forms).

Each form is checked with its source's own algorithm, the cryptography done by maintained
libraries (``hashlib.scrypt``, AES-256-CTR from ``cryptography``, ``bcrypt``); every comparison
is constant-time. A record the companion cannot check answers False and is never an error that
could carry its values.

- ``firebase-scrypt``: Firebase's modified scrypt (github.com/firebase/scrypt): the key
  scrypt(password, salt + salt separator, N = 2^mem_cost, r = rounds, p = 1, 64 bytes); its first
  32 bytes are the AES-256-CTR key (zero counter block) that encrypts the project's signer key;
  the result is the stored hash. Parameters: ``salt``, ``signer_key``, ``salt_separator`` (base64),
  ``rounds``, ``mem_cost``.
- ``django-bcrypt-sha256``: ``bcrypt_sha256$<bcrypt>``, bcrypt of the password's SHA-256 hex digest
  (Django's BCryptSHA256PasswordHasher).
- ``wordpress-bcrypt``: ``$wp$2y$...``, bcrypt of base64(HMAC-SHA384(password, key "wp-sha384"))
  (WordPress 6.8 wp_hash_password).

Example::

    verify({"form": "firebase-scrypt", "hash": "...", "params": {...}}, "user1password")  # True
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable, Mapping

import bcrypt

__all__ = ["FORMS", "verify"]

# Bounds on the work one check may cost: a store written with wild parameters must not turn a
# sign-in into a memory or CPU exhaustion. Firebase's projects use rounds 8, mem_cost 14.
_MAX_MEM_COST = 17
_MAX_ROUNDS = 32
_MAX_PASSWORD = 1024


def _b64(value: object) -> bytes:
    if not isinstance(value, str):
        raise ValueError("not base64 text")
    try:
        return base64.b64decode(value.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64 text") from None


def firebase_scrypt(record: Mapping[str, object], password: bytes) -> bool:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    params = record.get("params")
    if not isinstance(params, Mapping):
        return False
    rounds, mem_cost = params.get("rounds"), params.get("mem_cost")
    if not isinstance(rounds, int) or not isinstance(mem_cost, int):
        return False
    if not (1 <= rounds <= _MAX_ROUNDS and 1 <= mem_cost <= _MAX_MEM_COST):
        return False
    try:
        stored = _b64(record.get("hash"))
        salt = _b64(params.get("salt")) + _b64(params.get("salt_separator"))
        signer_key = _b64(params.get("signer_key"))
    except ValueError:
        return False
    n = 1 << mem_cost
    derived = hashlib.scrypt(
        password, salt=salt, n=n, r=rounds, p=1, dklen=64, maxmem=2 * 128 * rounds * n + (1 << 20)
    )
    encryptor = Cipher(algorithms.AES(derived[:32]), modes.CTR(b"\0" * 16)).encryptor()
    computed = encryptor.update(signer_key) + encryptor.finalize()
    return hmac.compare_digest(computed, stored)


def _bcrypt_check(secret: bytes, encoded: str) -> bool:
    try:
        return bcrypt.checkpw(secret, encoded.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return False


def django_bcrypt_sha256(record: Mapping[str, object], password: bytes) -> bool:
    encoded = record.get("hash")
    if not isinstance(encoded, str) or not encoded.startswith("bcrypt_sha256$"):
        return False
    digest = hashlib.sha256(password).hexdigest().encode()
    return _bcrypt_check(digest, encoded[len("bcrypt_sha256$") :])


def wordpress_bcrypt(record: Mapping[str, object], password: bytes) -> bool:
    encoded = record.get("hash")
    if not isinstance(encoded, str) or not encoded.startswith("$wp$"):
        return False
    pre = base64.b64encode(hmac.new(b"wp-sha384", password, hashlib.sha384).digest())
    return _bcrypt_check(pre, encoded[3:])


FORMS: dict[str, Callable[[Mapping[str, object], bytes], bool]] = {
    "firebase-scrypt": firebase_scrypt,
    "django-bcrypt-sha256": django_bcrypt_sha256,
    "wordpress-bcrypt": wordpress_bcrypt,
}


def verify(record: Mapping[str, object], password: str) -> bool:
    """True when ``password`` matches the record's legacy hash; False otherwise (also for a form
    the companion does not know or a record it cannot read)."""
    check = FORMS.get(str(record.get("form")))
    if check is None or not password or len(password) > _MAX_PASSWORD:
        return False
    return check(record, password.encode("utf-8"))
