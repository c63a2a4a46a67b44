"""Auth0's ``custom_password_hash`` blocks → the strings passwap parses (transforms/hashing/convert.py).

Pure functions, no Beam. The algorithms Auth0's bulk import accepts (docs/password-hashes.md):
bcrypt, argon2, pbkdf2, the salted SHA and MD5 forms and scrypt, each rewritten into the form
passwap verifies, or a :class:`HashFailure` naming the problem (never the hash or the salt).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping

from transforms.common.reasons import Reason
from transforms.hashing.convert import (
    ConvertedHash,
    HashFailure,
    b64decode,
    bcrypt_mcf,
    parse_hash,
    positive_int,
    raw_b64,
    shown,
)

__all__ = ["convert_auth0"]


_AUTH0_SALTED_SHA = {"sha1", "sha256", "sha512"}
_AUTH0_PBKDF2 = re.compile(
    r"^\$pbkdf2-([a-z0-9]+)\$i=(\d+),l=(\d+)\$([A-Za-z0-9+/.]+=*)\$([A-Za-z0-9+/.]+=*)$"
)
_AUTH0_PBKDF2_DIGESTS = {"sha1": "pbkdf2", "sha256": "pbkdf2-sha256", "sha512": "pbkdf2-sha512"}
_HEX_RE = re.compile(r"^(?:[0-9a-fA-F]{2})+$")


def _decode(value: object, encoding: object) -> bytes | None:
    """Auth0's ``{value, encoding}`` pair → bytes (hex, base64 or utf8); None when invalid."""
    if not isinstance(value, str) or not value:
        return None
    encoding = (encoding or "").lower() if isinstance(encoding, str) or encoding is None else None
    if encoding == "hex":
        return bytes.fromhex(value) if _HEX_RE.match(value) else None
    if encoding == "base64":
        return b64decode(value)
    if encoding in ("utf8", "utf-8"):
        return value.encode("utf-8")
    return None


def convert_auth0(block: object) -> ConvertedHash | HashFailure:
    """Auth0 bulk-import ``custom_password_hash`` → the passwap string, or why not.

    Algorithms and their mapping: docs/password-hashes.md. Labels are ``auth0-<algorithm>``
    (``auth0-md5-salted`` for md5 with a salt).
    """
    if not isinstance(block, Mapping):
        return HashFailure(Reason.INVALID_HASH, "custom_password_hash is not an object")
    algorithm = block.get("algorithm")
    name = algorithm.strip().lower() if isinstance(algorithm, str) else ""
    password = block.get("password")
    if password is not None:
        encoding = password.get("encoding") if isinstance(password, Mapping) else None
        if not isinstance(encoding, str) or encoding.lower() not in ("utf8", "utf-8"):
            return HashFailure(
                Reason.UNSUPPORTED_PASSWORD_ENCODING,
                f"custom_password_hash password.encoding {shown(encoding)!r}: ZITADEL hashes UTF-8 only",
            )
    hash_block = block.get("hash")
    if not isinstance(hash_block, Mapping):
        return HashFailure(Reason.MISSING_PASSWORD_HASH, "custom_password_hash has no hash object")
    value, encoding = hash_block.get("value"), hash_block.get("encoding")
    if not isinstance(value, str) or not value:
        return HashFailure(Reason.MISSING_PASSWORD_HASH, "custom_password_hash has no hash.value")
    salt_block = block.get("salt")
    if salt_block is not None and not isinstance(salt_block, Mapping):
        return HashFailure(Reason.INVALID_HASH, "custom_password_hash salt is not an object")

    if name == "hmac":
        return HashFailure(Reason.UNSUPPORTED_HMAC, "custom_password_hash hmac has no ZITADEL verifier")
    if name == "md4":
        return HashFailure(Reason.UNSUPPORTED_MD4, "custom_password_hash md4 has no ZITADEL verifier")
    if name == "ldap":
        return HashFailure(Reason.UNSUPPORTED_LDAP, "custom_password_hash ldap has no ZITADEL verifier")
    if name in _AUTH0_SALTED_SHA:
        if salt_block is None:
            # Unsalted sha-1/-256/-512 digests: passwap's sha2 is SHA-crypt, a different thing.
            return HashFailure(
                Reason.UNSUPPORTED_SALTED_SHA,
                f"custom_password_hash {name} has no ZITADEL verifier (salted or not)",
            )
        return HashFailure(
            Reason.UNSUPPORTED_SALTED_SHA, f"custom_password_hash salted {name} has no ZITADEL verifier"
        )
    if name == "bcrypt":
        return _relabel(bcrypt_mcf(value), "auth0-bcrypt")
    if name == "argon2":
        parsed = parse_hash(value)
        if isinstance(parsed, ConvertedHash) and parsed.verifier != "argon2":
            return HashFailure(
                Reason.INVALID_HASH, "custom_password_hash argon2 value is not an argon2 PHC string"
            )
        return _relabel(parsed, "auth0-argon2")
    if name == "pbkdf2":
        return _relabel(_auth0_pbkdf2(value), "auth0-pbkdf2")
    if name == "md5":
        return _auth0_md5(value, encoding, salt_block)
    if name == "scrypt":
        return _auth0_scrypt(block, value, encoding, salt_block)
    return HashFailure(
        Reason.UNSUPPORTED_HASH, f"custom_password_hash algorithm {shown(algorithm)!r} is not supported"
    )


def _relabel(result: ConvertedHash | HashFailure, label: str) -> ConvertedHash | HashFailure:
    return result._replace(algorithm=label) if isinstance(result, ConvertedHash) else result


def _auth0_pbkdf2(value: str) -> ConvertedHash | HashFailure:
    match = _AUTH0_PBKDF2.match(value)
    if not match:
        return HashFailure(
            Reason.INVALID_HASH,
            "custom_password_hash pbkdf2 value is not $pbkdf2-<digest>$i=<n>,l=<n>$salt$hash",
        )
    digest, rounds, keylen, salt, hashed = match.groups()
    ident = _AUTH0_PBKDF2_DIGESTS.get(digest)
    if ident is None:
        return HashFailure(
            Reason.UNSUPPORTED_PBKDF2_DIGEST,
            f"pbkdf2 with {shown(digest)} has no ZITADEL verifier (sha1, sha256, sha512 do)",
        )
    raw_salt, raw_hash = b64decode(salt.replace(".", "+")), b64decode(hashed.replace(".", "+"))
    if not raw_salt or not raw_hash or int(rounds) < 1:
        return HashFailure(Reason.INVALID_HASH, "custom_password_hash pbkdf2 salt, hash or rounds invalid")
    if int(keylen) != len(raw_hash):
        return HashFailure(Reason.INVALID_HASH, f"pbkdf2 hash is {len(raw_hash)} bytes but l={keylen}")
    # passwap: unpadded fields; a field with '+' is read as standard base64, else as passlib's
    # './' alphabet, which agrees with standard base64 whenever no '+' occurs.
    return ConvertedHash(
        "auth0-pbkdf2",
        f"${ident}${int(rounds)}${raw_b64(raw_salt)}${raw_b64(raw_hash)}",
        "pbkdf2",
        (("rounds", int(rounds)),),
    )


def _auth0_md5(
    value: str, encoding: object, salt_block: Mapping[str, object] | None
) -> ConvertedHash | HashFailure:
    digest = _decode(value, encoding)
    if digest is None or len(digest) != 16:
        return HashFailure(
            Reason.INVALID_HASH, "custom_password_hash md5 value is not a 16-byte digest in its hash.encoding"
        )
    if salt_block is None:
        return ConvertedHash("auth0-md5", digest.hex(), "md5plain")
    raw = _decode(salt_block.get("value"), salt_block.get("encoding") or "utf8")
    if raw is None:
        return HashFailure(
            Reason.INVALID_HASH, "custom_password_hash md5 salt is missing or not in its encoding"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if not text or "$" in text or any(ch.isspace() for ch in text):
        # md5salted holds the salt as literal text between '$' fields.
        return HashFailure(
            Reason.UNSUPPORTED_SALT,
            "md5 salt is not UTF-8 text without '$' and spaces (md5salted needs that)",
        )
    position = salt_block.get("position", "prefix")
    if position not in ("prefix", "suffix"):
        return HashFailure(
            Reason.INVALID_HASH, "custom_password_hash salt.position is neither prefix nor suffix"
        )
    return ConvertedHash(
        "auth0-md5-salted",
        f"$md5salted-{position}${text}${base64.b64encode(digest).decode('ascii')}",
        "md5salted",
    )


def _auth0_scrypt(
    block: Mapping[str, object], value: str, encoding: object, salt_block: Mapping[str, object] | None
) -> ConvertedHash | HashFailure:
    digest = _decode(value, encoding)
    salt = _decode(salt_block.get("value"), salt_block.get("encoding") or "utf8") if salt_block else None
    if not digest or not salt:
        return HashFailure(
            Reason.INVALID_HASH,
            "custom_password_hash scrypt needs hash.value and salt.value in their encodings",
        )
    cost = positive_int(block.get("cost", 16384))
    r = positive_int(block.get("blockSize", 8))
    p = positive_int(block.get("parallelization", 1))
    keylen = positive_int(block.get("keylen", len(digest)))
    if cost is None or r is None or p is None or keylen != len(digest):
        return HashFailure(
            Reason.INVALID_HASH,
            "custom_password_hash scrypt cost, blockSize, parallelization or keylen invalid",
        )
    if cost & (cost - 1) or cost < 2:
        return HashFailure(
            Reason.UNSUPPORTED_SCRYPT_COST,
            f"scrypt cost {cost} is not a power of two (passwap stores ln = log2 N)",
        )
    ln = cost.bit_length() - 1
    return ConvertedHash(
        "auth0-scrypt",
        f"$scrypt$ln={ln},r={r},p={p}${raw_b64(salt)}${raw_b64(digest)}",
        "scrypt",
        (("ln", ln), ("r", r), ("p", p)),
    )
