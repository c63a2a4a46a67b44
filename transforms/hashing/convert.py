"""Source password hashes → the strings passwap parses, tagged with the ZITADEL verifier.

Where hash formats are known (docs/password-hashes.md): :func:`parse_hash` here for strings that
are already formed (Auth0's password export, ZITADEL bodies, hand-written bodies) and the building
blocks every source uses; ``sources/keycloak/hashes.convert_credential`` for Keycloak credentials and
``sources/auth0/hashes.convert_auth0`` for Auth0's ``custom_password_hash``. Whether the target server accepts a result (enabled verifiers,
parameter limits) is transforms/hashing/policy.py's concern.

Pure functions, no Beam.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import re
from collections.abc import Mapping
from typing import NamedTuple

from transforms.common.reasons import Reason

__all__ = [
    "ConvertedHash",
    "HashFailure",
    "pbkdf2_mcf",
    "argon2_phc",
    "bcrypt_mcf",
    "PBKDF2_IDENTIFIERS",
    "KEYCLOAK_ARGON2_DEFAULTS",
    "parse_hash",
    "b64decode",
    "positive_int",
    "raw_b64",
    "shown",
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
    # The parsed hash when it is the target's configuration that refuses it (HashPolicy.check),
    # so the run can say which configuration admits it; None for a hash nothing can verify.
    refused: ConvertedHash | None = dataclasses.field(default=None, compare=False, repr=False)


def b64decode(text: object) -> bytes | None:
    """Standard base64 (padding optional) → bytes; None when ``text`` is not that."""
    if not isinstance(text, str) or not text or not _B64_RE.match(text):
        return None
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def raw_b64(data: bytes) -> str:
    """passwap's RawStd: standard alphabet, no padding."""
    return base64.b64encode(data).decode("ascii").rstrip("=")


def positive_int(value: object) -> int | None:
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


def shown(name: object) -> str:
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
        return HashFailure(Reason.UNSUPPORTED_PBKDF2_DIGEST, f"unknown pbkdf2 variant {shown(algorithm)!r}")
    rounds = positive_int(iterations)
    if rounds is None:
        return HashFailure(Reason.INVALID_HASH, f"{algorithm} credential has no valid hashIterations")
    if b64decode(salt) is None:
        return HashFailure(Reason.INVALID_HASH, f"{algorithm} credential salt is missing or not base64")
    if b64decode(value) is None:
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
    memory = positive_int(_param(params, "memory"))
    parallelism = positive_int(_param(params, "parallelism"))
    rounds = positive_int(iterations)
    if memory is None or parallelism is None or rounds is None:
        return HashFailure(
            Reason.INVALID_HASH, "argon2 credential lacks a valid memory, parallelism or hashIterations"
        )
    raw_salt, raw_hash = b64decode(salt), b64decode(value)
    if not raw_salt or not raw_hash:
        return HashFailure(Reason.INVALID_HASH, "argon2 credential salt or hash is missing or not base64")
    length = positive_int(_param(params, "hashLength"))
    if length is not None and length != len(raw_hash):
        return HashFailure(
            Reason.INVALID_HASH, f"argon2 hash is {len(raw_hash)} bytes but hashLength says {length}"
        )
    return ConvertedHash(
        type_name,
        f"${type_name}$v=19$m={memory},t={rounds},p={parallelism}${raw_b64(raw_salt)}${raw_b64(raw_hash)}",
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
    return data if raw_b64(data) == text else None


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
