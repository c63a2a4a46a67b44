"""Keycloak password credentials → the strings passwap parses (transforms/hashing/convert.py).

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

from collections.abc import Mapping
from typing import Any

import orjson

from transforms.common.reasons import Reason
from transforms.hashing.convert import (
    PBKDF2_IDENTIFIERS,
    ConvertedHash,
    HashFailure,
    argon2_phc,
    bcrypt_mcf,
    pbkdf2_mcf,
    shown,
)

__all__ = ["convert_credential", "plaintext_value"]


def _json_part(credential: Mapping[str, object], key: str) -> dict[str, Any] | HashFailure:
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


def plaintext_value(credential: object) -> str | None:
    """The cleartext of a ``{"type": "password", "value": "..."}`` credential (one a realm file
    hands Keycloak to hash on import), or None when the credential is not one."""
    if not isinstance(credential, Mapping) or "secretData" in credential or "hashedSaltedValue" in credential:
        return None
    value = credential.get("value")
    return value if isinstance(value, str) and value else None


def convert_credential(credential: Mapping[str, object]) -> ConvertedHash | HashFailure:
    """One Keycloak ``password`` credential → the hash string to import, or why not."""
    if not isinstance(credential, Mapping):
        return HashFailure(Reason.UNSUPPORTED_HASH, "password credential is not an object")
    legacy = False
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
        legacy = True
        algorithm, iterations = credential.get("algorithm"), credential.get("hashIterations")
        params = credential.get("config")
        salt, value = credential.get("salt"), credential.get("hashedSaltedValue")
    elif "value" in credential:
        # A plaintext password meant for Keycloak to hash on import; not a hash at all.
        return HashFailure(
            Reason.PLAINTEXT_PASSWORD, "password credential holds a plaintext value, not a hash"
        )
    else:
        return HashFailure(Reason.UNSUPPORTED_HASH, "password credential holds no hash")

    if legacy and algorithm in (None, ""):
        # Keycloak 1.x wrote no algorithm: its only hasher was PBKDF2-HMAC-SHA1.
        algorithm = "pbkdf2"
    if not isinstance(algorithm, str) or not algorithm:
        return HashFailure(Reason.UNSUPPORTED_HASH, "password credential names no algorithm")
    name = algorithm.strip().lower()
    if name in PBKDF2_IDENTIFIERS:
        return pbkdf2_mcf(name, iterations, salt, value)
    if name == "argon2":
        return argon2_phc(iterations, params if isinstance(params, Mapping) else {}, salt, value)
    if name == "bcrypt":
        return bcrypt_mcf(value)
    return HashFailure(Reason.UNSUPPORTED_HASH, f"password algorithm {shown(algorithm)!r} is not supported")
