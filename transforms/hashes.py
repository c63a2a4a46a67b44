"""Keycloak password credentials → hash strings ZITADEL can verify (Modular Crypt / PHC form).

Pure functions, no Beam. Keycloak stores a password credential either in the current layout
(``secretData`` and ``credentialData``, two JSON documents held in JSON strings) or, before
Keycloak 11, in the legacy layout (``hashedSaltedValue``, ``salt``, ``hashIterations`` and
``algorithm`` directly on the credential). Both are handled:

- ``pbkdf2`` (SHA-1), ``pbkdf2-sha1``, ``pbkdf2-sha224``, ``pbkdf2-sha256``, ``pbkdf2-sha384``,
  ``pbkdf2-sha512`` → ``$<id>$<iterations>$<salt>$<hash>`` with salt and hash copied as Keycloak
  stores them (standard padded base64), exactly as zitadel-tools writes it. ``<id>`` is passwap's
  identifier: ``pbkdf2`` for SHA-1 (zitadel-tools copies Keycloak's ``pbkdf2`` verbatim, and
  passwap knows no ``pbkdf2-sha1``), ``pbkdf2-sha256`` etc. for the others;
- ``argon2`` (Keycloak 25+ default) → ``$argon2<type>$v=<19|16>$m=<memory>,t=<iterations>,
  p=<parallelism>$<salt>$<hash>`` with unpadded base64, type and version read from
  ``additionalParameters`` (Keycloak's defaults when a parameter is absent);
- ``bcrypt`` (the keycloak-bcrypt extension) → the MCF string it stores in ``value``.

Anything else returns a :class:`HashFailure` whose detail names the problem but never the hash
or the salt (those must not reach logs or dead-letter details).

Example::

    >>> convert_credential({"type": "password",
    ...     "secretData": '{"value":"ng6o...=","salt":"RaXj...=="}',
    ...     "credentialData": '{"hashIterations":27500,"algorithm":"pbkdf2-sha256"}'})  # doctest: +SKIP
    ConvertedHash(algorithm='pbkdf2-sha256', value='$pbkdf2-sha256$27500$RaXj...==$ng6o...=')
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import re
from typing import Any, Mapping

import orjson

from transforms.validate import Reason

__all__ = [
    "ConvertedHash",
    "HashFailure",
    "convert_credential",
    "pbkdf2_mcf",
    "argon2_phc",
    "bcrypt_mcf",
    "PBKDF2_IDENTIFIERS",
    "KEYCLOAK_ARGON2_DEFAULTS",
]

_LOGGER = logging.getLogger(__name__)

# Keycloak algorithm name → (passwap identifier written in the MCF string, counter label).
PBKDF2_IDENTIFIERS: dict[str, tuple[str, str]] = {
    "pbkdf2": ("pbkdf2", "pbkdf2-sha1"),
    "pbkdf2-sha1": ("pbkdf2", "pbkdf2-sha1"),
    "pbkdf2-sha224": ("pbkdf2-sha224", "pbkdf2-sha224"),
    "pbkdf2-sha256": ("pbkdf2-sha256", "pbkdf2-sha256"),
    "pbkdf2-sha384": ("pbkdf2-sha384", "pbkdf2-sha384"),
    "pbkdf2-sha512": ("pbkdf2-sha512", "pbkdf2-sha512"),
}

# What Keycloak's Argon2PasswordHashProvider uses when a parameter is not stored (FACTS.md §2).
KEYCLOAK_ARGON2_DEFAULTS: dict[str, str] = {
    "type": "id",
    "version": "1.3",
    "memory": "7168",
    "parallelism": "1",
    "hashLength": "32",
}
_ARGON2_TYPES = {"id": "argon2id", "i": "argon2i", "d": "argon2d"}
_ARGON2_VERSIONS = {"1.3": 19, "1.0": 16, "19": 19, "16": 16}

# keycloak-bcrypt stores the whole MCF string; older releases wrote $2a$, current ones $2y$.
_BCRYPT_RE = re.compile(r"^\$2[abxy]?\$\d\d\$[./A-Za-z0-9]{53}$")
_B64_RE = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


@dataclasses.dataclass(frozen=True)
class ConvertedHash:
    """A hash ZITADEL can read; ``algorithm`` is the label counted in the run summary."""

    algorithm: str
    value: str


@dataclasses.dataclass(frozen=True)
class HashFailure:
    """Why a credential could not be converted; ``detail`` never contains hash or salt."""

    reason: str
    detail: str


def _b64decode(text: Any) -> bytes | None:
    """Standard base64 (padding optional) → bytes; None when ``text`` is not that."""
    if not isinstance(text, str) or not text or not _B64_RE.match(text):
        return None
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _positive_int(value: Any) -> int | None:
    """Keycloak writes numbers as JSON numbers, additionalParameters as lists of strings."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and value > 0 else None


def _param(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name, KEYCLOAK_ARGON2_DEFAULTS.get(name))
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def pbkdf2_mcf(algorithm: str, iterations: Any, salt: Any, value: Any) -> ConvertedHash | HashFailure:
    """Keycloak pbkdf2 credential parts → ``$pbkdf2-<alg>$<iter>$<salt>$<hash>``."""
    ident = PBKDF2_IDENTIFIERS.get(algorithm)
    if ident is None:
        return HashFailure(Reason.UNSUPPORTED_HASH, f"unknown pbkdf2 variant {algorithm[:40]!r}")
    rounds = _positive_int(iterations)
    if rounds is None:
        return HashFailure(Reason.UNSUPPORTED_HASH, f"{algorithm} credential has no valid hashIterations")
    if _b64decode(salt) is None:
        return HashFailure(Reason.UNSUPPORTED_HASH, f"{algorithm} credential salt is missing or not base64")
    if _b64decode(value) is None:
        return HashFailure(Reason.UNSUPPORTED_HASH, f"{algorithm} credential hash is missing or not base64")
    # Copied verbatim: passwap accepts Keycloak's padded standard base64, and zitadel-tools
    # writes exactly these bytes (the conformance test compares them).
    return ConvertedHash(ident[1], f"${ident[0]}${rounds}${salt}${value}")


def argon2_phc(iterations: Any, params: Mapping[str, Any], salt: Any, value: Any) -> ConvertedHash | HashFailure:
    """Keycloak argon2 credential parts → PHC ``$argon2<type>$v=..$m=..,t=..,p=..$salt$hash``."""
    type_name = _ARGON2_TYPES.get(_param(params, "type") or "")
    if type_name is None:
        return HashFailure(Reason.UNSUPPORTED_HASH, "argon2 credential has an unknown type")
    version = _ARGON2_VERSIONS.get(_param(params, "version") or "")
    if version is None:
        return HashFailure(Reason.UNSUPPORTED_HASH, "argon2 credential has an unknown version")
    memory = _positive_int(_param(params, "memory"))
    parallelism = _positive_int(_param(params, "parallelism"))
    rounds = _positive_int(iterations)
    if memory is None or parallelism is None or rounds is None:
        return HashFailure(Reason.UNSUPPORTED_HASH,
                           "argon2 credential lacks a valid memory, parallelism or hashIterations")
    raw_salt, raw_hash = _b64decode(salt), _b64decode(value)
    if not raw_salt or not raw_hash:
        return HashFailure(Reason.UNSUPPORTED_HASH, "argon2 credential salt or hash is missing or not base64")
    length = _positive_int(_param(params, "hashLength"))
    if length is not None and length != len(raw_hash):
        return HashFailure(Reason.UNSUPPORTED_HASH,
                           f"argon2 hash is {len(raw_hash)} bytes but hashLength says {length}")

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii").rstrip("=")

    return ConvertedHash(
        type_name,
        f"${type_name}$v={version}$m={memory},t={rounds},p={parallelism}${b64(raw_salt)}${b64(raw_hash)}",
    )


def bcrypt_mcf(value: Any) -> ConvertedHash | HashFailure:
    """keycloak-bcrypt's stored value is already the MCF string."""
    if isinstance(value, str) and _BCRYPT_RE.match(value):
        return ConvertedHash("bcrypt", value)
    return HashFailure(Reason.UNSUPPORTED_HASH, "bcrypt credential value is not a bcrypt MCF string")


def _json_part(credential: Mapping[str, Any], key: str) -> dict[str, Any] | HashFailure:
    """``secretData`` / ``credentialData``: a JSON document in a string (or, rarely, an object)."""
    raw = credential.get(key)
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return HashFailure(Reason.UNSUPPORTED_HASH, f"password credential has no {key}")
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return HashFailure(Reason.UNSUPPORTED_HASH, f"password credential {key} is not valid JSON")
    if not isinstance(parsed, dict):
        return HashFailure(Reason.UNSUPPORTED_HASH, f"password credential {key} is not a JSON object")
    return parsed


def plaintext_value(credential: Any) -> str | None:
    """The cleartext of a ``{"type": "password", "value": "..."}`` credential (one a realm file
    hands Keycloak to hash on import), or None when the credential is not one."""
    if not isinstance(credential, Mapping) or "secretData" in credential or "hashedSaltedValue" in credential:
        return None
    value = credential.get("value")
    return value if isinstance(value, str) and value else None


def convert_credential(credential: Mapping[str, Any]) -> ConvertedHash | HashFailure:
    """One Keycloak ``password`` credential → the hash string to import, or why not."""
    if not isinstance(credential, Mapping):
        return HashFailure(Reason.UNSUPPORTED_HASH, "password credential is not an object")
    if "secretData" in credential or "credentialData" in credential:
        secret = _json_part(credential, "secretData")
        if isinstance(secret, HashFailure):
            return secret
        data = _json_part(credential, "credentialData")
        if isinstance(data, HashFailure):
            return data
        algorithm, iterations = data.get("algorithm"), data.get("hashIterations")
        params = data.get("additionalParameters")
        salt, value = secret.get("salt"), secret.get("value")
    elif "hashedSaltedValue" in credential:
        # Keycloak < 11 (e.g. 3.x exports): the same fields, directly on the credential.
        algorithm, iterations = credential.get("algorithm"), credential.get("hashIterations")
        params = credential.get("config")
        salt, value = credential.get("salt"), credential.get("hashedSaltedValue")
    elif "value" in credential:
        # A plaintext password meant for Keycloak to hash on import; not a hash at all.
        return HashFailure(Reason.PLAINTEXT_PASSWORD, "password credential holds a plaintext value, not a hash")
    else:
        return HashFailure(Reason.UNSUPPORTED_HASH, "password credential holds no hash")

    if not isinstance(algorithm, str) or not algorithm:
        return HashFailure(Reason.UNSUPPORTED_HASH, "password credential names no algorithm")
    name = algorithm.strip().lower()
    if name in PBKDF2_IDENTIFIERS:
        return pbkdf2_mcf(name, iterations, salt, value)
    if name == "argon2":
        return argon2_phc(iterations, params if isinstance(params, Mapping) else {}, salt, value)
    if name == "bcrypt":
        return bcrypt_mcf(value)
    shown = algorithm if len(algorithm) <= 40 and algorithm.isprintable() else algorithm[:40].encode("unicode_escape").decode()
    return HashFailure(Reason.UNSUPPORTED_HASH, f"password algorithm {shown!r} is not supported")
