"""Source password hashes → the strings passwap parses, tagged with the ZITADEL verifier.

The one place that knows hash formats (docs/password-hashes.md): :func:`convert_auth0` for
Auth0's ``custom_password_hash``, :func:`convert_credential` for Keycloak credentials and
:func:`parse_hash` for strings that are already formed (Auth0's password export, ZITADEL
bodies, hand-written bodies). Whether the target server accepts a result (enabled verifiers,
parameter limits) is transforms/hashing/policy.py's concern.

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
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from transforms.common.reasons import Reason

__all__ = [
    "ConvertedHash",
    "HashFailure",
    "convert_credential",
    "pbkdf2_mcf",
    "argon2_phc",
    "bcrypt_mcf",
    "PBKDF2_IDENTIFIERS",
    "KEYCLOAK_ARGON2_DEFAULTS",
    "convert_auth0",
    "parse_hash",
    "plaintext_value",
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

# What Keycloak's Argon2PasswordHashProvider uses when a parameter is not stored (docs/password-hashes.md).
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
_BCRYPT_RE = re.compile(r"^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$")
_B64_RE = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


class ConvertedHash(NamedTuple):
    """A hash string passwap parses.

    ``algorithm`` is the source label counted in the run summary (``pbkdf2-sha256``,
    ``auth0-md5``, ...), ``verifier`` the ZITADEL verifier name that claims ``value``
    (docs/password-hashes.md) and ``params`` its cost parameters as ``(name, value)`` pairs
    named like the limits they are checked against (``cost``, ``memory``, ``rounds``, ...).
    """

    algorithm: str
    value: str
    verifier: str = ""
    params: tuple[tuple[str, int], ...] = ()

    def param(self, name: str) -> int | None:
        for key, value in self.params:
            if key == name:
                return value
        return None


@dataclasses.dataclass(frozen=True)
class HashFailure:
    """Why a credential could not be converted; ``detail`` never contains hash or salt."""

    reason: str
    detail: str


def _b64decode(text: object) -> bytes | None:
    """Standard base64 (padding optional) → bytes; None when ``text`` is not that."""
    if not isinstance(text, str) or not text or not _B64_RE.match(text):
        return None
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _raw_b64(data: bytes) -> str:
    """passwap's RawStd: standard alphabet, no padding."""
    return base64.b64encode(data).decode("ascii").rstrip("=")


def _positive_int(value: object) -> int | None:
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


def _param(params: Mapping[str, object], name: str) -> str | None:
    value = params.get(name, KEYCLOAK_ARGON2_DEFAULTS.get(name))
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _shown(name: object) -> str:
    """An algorithm name fit for a dead-letter detail (printable, at most 40 characters)."""
    if not isinstance(name, str):
        return "?"
    return name if len(name) <= 40 and name.isprintable() else name[:40].encode("unicode_escape").decode()


# --------------------------------------------------------------------------- building blocks


def pbkdf2_mcf(
    algorithm: str, iterations: object, salt: object, value: object
) -> ConvertedHash | HashFailure:
    """pbkdf2 parts (salt and hash in standard base64) → ``$pbkdf2[-sha<n>]$<rounds>$<salt>$<hash>``."""
    ident = PBKDF2_IDENTIFIERS.get(algorithm)
    if ident is None:
        return HashFailure(Reason.UNSUPPORTED_PBKDF2_DIGEST, f"unknown pbkdf2 variant {_shown(algorithm)!r}")
    rounds = _positive_int(iterations)
    if rounds is None:
        return HashFailure(Reason.INVALID_HASH, f"{algorithm} credential has no valid hashIterations")
    if _b64decode(salt) is None:
        return HashFailure(Reason.INVALID_HASH, f"{algorithm} credential salt is missing or not base64")
    if _b64decode(value) is None:
        return HashFailure(Reason.INVALID_HASH, f"{algorithm} credential hash is missing or not base64")
    # Copied verbatim: passwap strips trailing '=' and reads a field without '+' in passlib's
    # './' alphabet, which shares '/' and the letters and digits with standard base64, so the
    # bytes are the same; zitadel-tools writes exactly these characters (conformance test).
    return ConvertedHash(ident[1], f"${ident[0]}${rounds}${salt}${value}", "pbkdf2", (("rounds", rounds),))


def argon2_phc(
    iterations: object, params: Mapping[str, object], salt: object, value: object
) -> ConvertedHash | HashFailure:
    """Keycloak argon2 credential parts → PHC ``$argon2<i|id>$v=19$m=..,t=..,p=..$salt$hash``."""
    type_name = _ARGON2_TYPES.get(_param(params, "type") or "")
    if type_name is None:
        return HashFailure(Reason.INVALID_HASH, "argon2 credential has an unknown type")
    if type_name == "argon2d":
        return HashFailure(
            Reason.UNSUPPORTED_ARGON2_VARIANT, "argon2d has no ZITADEL verifier (argon2i and argon2id do)"
        )
    version = _ARGON2_VERSIONS.get(_param(params, "version") or "")
    if version is None:
        return HashFailure(Reason.INVALID_HASH, "argon2 credential has an unknown version")
    if version != 19:
        return HashFailure(
            Reason.UNSUPPORTED_ARGON2_VARIANT, "argon2 version 1.0 (v=16) has no ZITADEL verifier (only v=19)"
        )
    memory = _positive_int(_param(params, "memory"))
    parallelism = _positive_int(_param(params, "parallelism"))
    rounds = _positive_int(iterations)
    if memory is None or parallelism is None or rounds is None:
        return HashFailure(
            Reason.INVALID_HASH, "argon2 credential lacks a valid memory, parallelism or hashIterations"
        )
    raw_salt, raw_hash = _b64decode(salt), _b64decode(value)
    if not raw_salt or not raw_hash:
        return HashFailure(Reason.INVALID_HASH, "argon2 credential salt or hash is missing or not base64")
    length = _positive_int(_param(params, "hashLength"))
    if length is not None and length != len(raw_hash):
        return HashFailure(
            Reason.INVALID_HASH, f"argon2 hash is {len(raw_hash)} bytes but hashLength says {length}"
        )
    return ConvertedHash(
        type_name,
        f"${type_name}$v=19$m={memory},t={rounds},p={parallelism}${_raw_b64(raw_salt)}${_raw_b64(raw_hash)}",
        "argon2",
        (("time", rounds), ("memory", memory), ("threads", parallelism)),
    )


def bcrypt_mcf(value: object) -> ConvertedHash | HashFailure:
    """A bcrypt MCF string (``$2a$``/``$2b$``/``$2y$``) as is; passwap refuses ``$2$`` and ``$2x$``."""
    if isinstance(value, str) and (match := _BCRYPT_RE.match(value)):
        return ConvertedHash("bcrypt", value, "bcrypt", (("cost", int(match.group(1))),))
    return HashFailure(Reason.INVALID_HASH, "bcrypt value is not a $2a$/$2b$/$2y$ MCF string")


# --------------------------------------------------------------------------- already-formed strings

_ARGON2_STR = re.compile(
    r"^\$(argon2(?:id|i|d))\$v=(\d+)\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$"
)
_ARGON2_ANY_ORDER = re.compile(
    r"^\$argon2(?:id|i|d)\$v=\d+\$[mtp]=\d+,[mtp]=\d+,[mtp]=\d+\$[A-Za-z0-9+/]+=*\$[A-Za-z0-9+/]+=*$"
)
_ARGON2_MTP = re.compile(r"\$m=\d+,t=\d+,p=\d+\$")
_PBKDF2_STR = re.compile(
    r"^\$(pbkdf2(?:-sha224|-sha256|-sha384|-sha512)?)\$(\d+)\$([A-Za-z0-9+/.]+=*)\$([A-Za-z0-9+/.]+=*)$"
)
_SCRYPT_STR = re.compile(r"^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$")
_MD5SALTED_STR = re.compile(r"^\$md5salted-(prefix|suffix)\$([^$\s]+)\$([A-Za-z0-9+/]{22}==)$")
_MD5CRYPT_STR = re.compile(r"^\$1\$[^$]{0,8}\$[./0-9A-Za-z]{22}$")
_SHA2_STR = re.compile(r"^\$([56])\$(?:rounds=(\d+)\$)?[^$]{0,16}\$[./0-9A-Za-z]+$")
_PHPASS_STR = re.compile(r"^\$[PH]\$([./0-9A-Za-z])[./0-9A-Za-z]{8}[./0-9A-Za-z]{22}$")
_DRUPAL7_STR = re.compile(r"^\$S\$([./0-9A-Za-z])[./0-9A-Za-z]{8}[./0-9A-Za-z]{43}$")
_MD5PLAIN_STR = re.compile(r"^[0-9a-fA-F]{32}$")
_ITOA64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _strict_raw_b64(text: str) -> bytes | None:
    """Go's base64.RawStdEncoding.Strict(): no padding, zero trailing bits."""
    if len(text) % 4 == 1:
        return None
    try:
        data = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if _raw_b64(data) == text else None


def parse_hash(value: object) -> ConvertedHash | HashFailure:
    """Which ZITADEL verifier claims an already-formed hash string, with its cost parameters.

    Follows passwap's parsers (docs/password-hashes.md): prefixes, field order, strict unpadded
    base64 for argon2 and scrypt. ``algorithm`` is the verifier name (``argon2id`` / ``argon2i``
    for argon2, the identifier for pbkdf2). The failure's detail never holds the string.
    """
    if not isinstance(value, str) or not value:
        return HashFailure(Reason.INVALID_HASH, "password hash is empty or not a string")
    if value.startswith("$2"):
        return bcrypt_mcf(value)
    if value.startswith("$argon2"):
        match = _ARGON2_STR.match(value)
        if not match and _ARGON2_ANY_ORDER.match(value) and not _ARGON2_MTP.search(value):
            return HashFailure(
                Reason.UNSUPPORTED_ARGON2_VARIANT, "argon2 parameters not in passwap's m=..,t=..,p=.. order"
            )
        if not match or _strict_raw_b64(match.group(6)) is None or _strict_raw_b64(match.group(7)) is None:
            return HashFailure(
                Reason.INVALID_HASH,
                "not a well-formed argon2 PHC string "
                "($argon2id$v=19$m=..,t=..,p=..$ unpadded base64 salt and hash)",
            )
        if match.group(1) == "argon2d" or match.group(2) != "19":
            return HashFailure(
                Reason.UNSUPPORTED_ARGON2_VARIANT, "only argon2i/argon2id with v=19 have a ZITADEL verifier"
            )
        m, t, p = (int(match.group(i)) for i in (3, 4, 5))
        return ConvertedHash(match.group(1), value, "argon2", (("time", t), ("memory", m), ("threads", p)))
    if value.startswith("$pbkdf2"):
        match = _PBKDF2_STR.match(value)
        if not match:
            return HashFailure(
                Reason.INVALID_HASH,
                "not a well-formed pbkdf2 MCF string ($pbkdf2[-sha<n>]$<rounds>$<salt>$<hash>)",
            )
        return ConvertedHash(match.group(1), value, "pbkdf2", (("rounds", int(match.group(2))),))
    if value.startswith("$scrypt$"):
        match = _SCRYPT_STR.match(value)
        if not match or _strict_raw_b64(match.group(4)) is None or _strict_raw_b64(match.group(5)) is None:
            return HashFailure(
                Reason.INVALID_HASH, "not a well-formed scrypt string ($scrypt$ln=..,r=..,p=..$salt$hash)"
            )
        ln, r, p = (int(match.group(i)) for i in (1, 2, 3))
        return ConvertedHash("scrypt", value, "scrypt", (("ln", ln), ("r", r), ("p", p)))
    if value.startswith("$md5salted"):
        if not _MD5SALTED_STR.match(value):
            return HashFailure(
                Reason.INVALID_HASH, "not a well-formed md5salted string ($md5salted-prefix|suffix$salt$hash)"
            )
        return ConvertedHash("md5salted", value, "md5salted")
    if value.startswith("$1$"):
        if not _MD5CRYPT_STR.match(value):
            return HashFailure(Reason.INVALID_HASH, "not a well-formed md5-crypt string")
        return ConvertedHash("md5", value, "md5")
    if value.startswith(("$5$", "$6$")):
        match = _SHA2_STR.match(value)
        if not match:
            return HashFailure(Reason.INVALID_HASH, "not a well-formed sha-crypt string")
        rounds = int(match.group(2)) if match.group(2) else 5000
        name = "sha256rounds" if match.group(1) == "5" else "sha512rounds"
        return ConvertedHash("sha2", value, "sha2", ((name, rounds),))
    if value.startswith(("$P$", "$H$")):
        match = _PHPASS_STR.match(value)
        if not match:
            return HashFailure(Reason.INVALID_HASH, "not a well-formed phpass string (34 characters)")
        return ConvertedHash("phpass", value, "phpass", (("rounds", _ITOA64.index(match.group(1))),))
    if value.startswith("$S$"):
        match = _DRUPAL7_STR.match(value)
        if not match:
            return HashFailure(Reason.INVALID_HASH, "not a well-formed drupal7 string (55 characters)")
        return ConvertedHash(
            "drupal7", value, "drupal7", (("iterations", 1 << _ITOA64.index(match.group(1))),)
        )
    if _MD5PLAIN_STR.match(value):
        return ConvertedHash("md5plain", value, "md5plain")
    prefix = value.split("$")[1] if value.startswith("$") and value.count("$") > 1 else ""
    if prefix and len(prefix) <= 20 and prefix.isprintable():
        return HashFailure(Reason.UNSUPPORTED_HASH, f"'${prefix}$' hashes have no ZITADEL verifier")
    return HashFailure(Reason.INVALID_HASH, "not a hash string any ZITADEL verifier parses")


# --------------------------------------------------------------------------- Keycloak


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
    return HashFailure(Reason.UNSUPPORTED_HASH, f"password algorithm {_shown(algorithm)!r} is not supported")


# --------------------------------------------------------------------------- Auth0

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
        return _b64decode(value)
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
                f"custom_password_hash password.encoding {_shown(encoding)!r}: ZITADEL hashes UTF-8 only",
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
        Reason.UNSUPPORTED_HASH, f"custom_password_hash algorithm {_shown(algorithm)!r} is not supported"
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
            f"pbkdf2 with {_shown(digest)} has no ZITADEL verifier (sha1, sha256, sha512 do)",
        )
    raw_salt, raw_hash = _b64decode(salt.replace(".", "+")), _b64decode(hashed.replace(".", "+"))
    if not raw_salt or not raw_hash or int(rounds) < 1:
        return HashFailure(Reason.INVALID_HASH, "custom_password_hash pbkdf2 salt, hash or rounds invalid")
    if int(keylen) != len(raw_hash):
        return HashFailure(Reason.INVALID_HASH, f"pbkdf2 hash is {len(raw_hash)} bytes but l={keylen}")
    # passwap: unpadded fields; a field with '+' is read as standard base64, else as passlib's
    # './' alphabet, which agrees with standard base64 whenever no '+' occurs.
    return ConvertedHash(
        "auth0-pbkdf2",
        f"${ident}${int(rounds)}${_raw_b64(raw_salt)}${_raw_b64(raw_hash)}",
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
    cost = _positive_int(block.get("cost", 16384))
    r = _positive_int(block.get("blockSize", 8))
    p = _positive_int(block.get("parallelization", 1))
    keylen = _positive_int(block.get("keylen", len(digest)))
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
        f"$scrypt$ln={ln},r={r},p={p}${_raw_b64(salt)}${_raw_b64(digest)}",
        "scrypt",
        (("ln", ln), ("r", r), ("p", p)),
    )
