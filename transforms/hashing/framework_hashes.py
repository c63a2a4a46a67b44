"""Framework password hashes (Django, ASP.NET Core Identity, Werkzeug) → the strings passwap parses.

Each function takes one stored value and returns the passwap string or a :class:`Refusal` whose
detail explains the problem without the hash or salt. transforms/hashing/hash_forms.py detects the
form, calls these and prefixes the form's name; docs/hash-forms.md has each layout and its origin.

Pure functions, no Beam.

Example::

    >>> django_pbkdf2("pbkdf2_sha1$390000$seasalt2$aDapRanzW8aHTz97v2TcfHzWD+I=", "pbkdf2")
    '$pbkdf2$390000$c2Vhc2FsdDI$aDapRanzW8aHTz97v2TcfHzWD.I'
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import NamedTuple

from transforms.common.reasons import Reason
from transforms.hashing.convert import raw_b64

__all__ = [
    "Refusal",
    "ab64",
    "std_b64",
    "django_pbkdf2",
    "django_scrypt",
    "django_md5",
    "aspnet_identity",
    "werkzeug",
    "MAX_UINT32",
]

MAX_UINT32 = 2**32 - 1  # passwap scans pbkdf2 rounds, argon2 memory and time into uint32
_STD_B64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
# Django forbids '$' in a salt; passwap's field scanner splits on whitespace, so a salt that
# has either cannot be carried as text (it is re-encoded as bytes where the target form allows).
_DJANGO_PBKDF2 = re.compile(r"^pbkdf2_sha(?:256|1)\$(\d{1,10})\$([^$]+)\$([A-Za-z0-9+/]+={0,2})$")
_DJANGO_SCRYPT = re.compile(r"^scrypt\$(\d{1,12})\$([^$]+)\$(\d{1,6})\$(\d{1,6})\$([A-Za-z0-9+/]+={0,2})$")
_DJANGO_MD5 = re.compile(r"^md5\$([^$]*)\$([0-9a-fA-F]{32})$")
_WERKZEUG = re.compile(r"^(pbkdf2|scrypt)((?::[0-9A-Za-z]{1,12}){0,3})\$([^$]*)\$([0-9a-f]+)$")
_WERKZEUG_PBKDF2_DIGESTS = {
    "sha1": "pbkdf2",
    "sha224": "pbkdf2-sha224",
    "sha256": "pbkdf2-sha256",
    "sha384": "pbkdf2-sha384",
    "sha512": "pbkdf2-sha512",
}
# KeyDerivationPrf (Microsoft.AspNetCore.Cryptography.KeyDerivation): 0 HMACSHA1, 1 HMACSHA256, 2 HMACSHA512.
_ASPNET_PRF = {0: ("pbkdf2", 20), 1: ("pbkdf2-sha256", 32), 2: ("pbkdf2-sha512", 64)}


class Refusal(NamedTuple):
    """Why a value cannot be rewritten: a dead-letter code (transforms/common/reasons.py) and a
    detail that never holds the hash or the salt."""

    code: str
    detail: str


def _invalid(detail: str) -> Refusal:
    return Refusal(Reason.INVALID_HASH, detail)


def std_b64(text: str) -> bytes | None:
    """Standard base64 with optional padding → bytes; None when ``text`` is not that."""
    if not _STD_B64.match(text) or len(text.rstrip("=")) % 4 == 1:
        return None
    try:
        return base64.b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def ab64(data: bytes) -> str:
    """passlib's adapted base64 ('.' for '+', no padding): passwap's pbkdf2 reads a field without
    '+' in this alphabet (internal/encoding/pbkdf2.go), so it decodes whatever bytes it holds."""
    return raw_b64(data).replace("+", ".")


def _pbkdf2(ident: str, rounds: int, salt: bytes, key: bytes) -> str | Refusal:
    if not 1 <= rounds <= MAX_UINT32:
        return _invalid(f"iteration count {rounds} is outside 1 - {MAX_UINT32}")
    if not salt or not key:
        return _invalid("salt or derived key is empty")
    return f"${ident}${rounds}${ab64(salt)}${ab64(key)}"


def django_pbkdf2(value: str, ident: str) -> str | Refusal:
    """Django ``pbkdf2_sha256$<iterations>$<salt>$<base64 key>`` (or ``pbkdf2_sha1``) →
    ``$pbkdf2-sha256$...`` / ``$pbkdf2$...``; Django hashes the salt text's UTF-8 bytes."""
    match = _DJANGO_PBKDF2.match(value)
    key = std_b64(match.group(3)) if match else None
    if match is None or key is None:
        return _invalid("expected <algorithm>$<iterations>$<salt>$<standard base64 key>")
    return _pbkdf2(ident, int(match.group(1)), match.group(2).encode("utf-8"), key)


def django_scrypt(value: str) -> str | Refusal:
    """Django ``scrypt$<N>$<salt>$<r>$<p>$<base64 key>`` → ``$scrypt$ln=..,r=..,p=..$<salt>$<key>``."""
    match = _DJANGO_SCRYPT.match(value)
    key = std_b64(match.group(5)) if match else None
    if match is None or not key:
        return _invalid("expected scrypt$<N>$<salt>$<r>$<p>$<standard base64 key>")
    n, r, p = int(match.group(1)), int(match.group(3)), int(match.group(4))
    if n < 2 or n & (n - 1) or n.bit_length() - 1 > 63:
        return _invalid(f"N={n} is not a power of two (passwap stores log2 N)")
    if r < 1 or p < 1 or r * p >= 1 << 30:
        return _invalid(f"r={r}, p={p}: each must be positive and r*p below 2^30")
    salt = match.group(2).encode("utf-8")
    return f"$scrypt$ln={n.bit_length() - 1},r={r},p={p}${raw_b64(salt)}${raw_b64(key)}"


def django_md5(value: str) -> str | Refusal:
    """Django ``md5$<salt>$<hex md5(salt + password)>`` → ``$md5salted-prefix$<salt>$<base64>``;
    ``md5$$<hex>`` (Django's alternate unsalted syntax) → the 32 hex digits md5plain reads."""
    match = _DJANGO_MD5.match(value)
    if match is None:
        return _invalid("expected md5$<salt>$<32 hex digits>")
    salt, digest = match.group(1), bytes.fromhex(match.group(2))
    if not salt:
        return digest.hex()
    if any(char.isspace() for char in salt):
        return Refusal(
            Reason.UNSUPPORTED_SALT, "the salt holds whitespace, which passwap's md5salted cannot read"
        )
    return f"$md5salted-prefix${salt}${base64.b64encode(digest).decode('ascii')}"


def aspnet_identity(value: str, marker: int) -> str | Refusal:
    """ASP.NET Core Identity ``PasswordHash`` (base64) → passwap's pbkdf2 form.

    v2: 0x00 | 16-byte salt | 32-byte subkey, PBKDF2-HMAC-SHA1 with 1000 iterations.
    v3: 0x01 | prf | iterations | salt length (uint32 big-endian each) | salt | subkey.
    ``marker`` is the version byte the value is declared (or was detected) to start with.
    """
    raw = std_b64(value)
    if raw is None or not raw:
        return _invalid("not standard base64")
    if raw[0] != marker:
        return _invalid(f"format marker is 0x{raw[0]:02x}, not 0x{marker:02x}")
    if raw[0] == 0x00:
        if len(raw) != 49:
            return _invalid(f"v2 is 49 bytes (0x00, 16-byte salt, 32-byte subkey), this is {len(raw)}")
        return _pbkdf2("pbkdf2", 1000, raw[1:17], raw[17:])
    if raw[0] != 0x01:
        return _invalid(f"format marker 0x{raw[0]:02x} is neither v2 (0x00) nor v3 (0x01)")
    if len(raw) < 13:
        return _invalid(f"v3 header is 13 bytes, the value has {len(raw)}")
    prf, rounds, salt_len = (int.from_bytes(raw[i : i + 4], "big") for i in (1, 5, 9))
    if prf not in _ASPNET_PRF:
        return Refusal(Reason.UNSUPPORTED_PBKDF2_DIGEST, f"v3 prf {prf} is not HMACSHA1/256/512 (0/1/2)")
    # ASP.NET Core itself refuses a salt or subkey under 128 bits (PasswordHasher.VerifyHashedPasswordV3).
    if salt_len < 16 or len(raw) - 13 - salt_len < 16:
        return _invalid(f"v3 salt ({salt_len} bytes) or subkey under 16 bytes in a {len(raw)}-byte value")
    return _pbkdf2(_ASPNET_PRF[prf][0], rounds, raw[13 : 13 + salt_len], raw[13 + salt_len :])


def werkzeug(value: str, expected: str) -> str | Refusal:
    """Werkzeug ``generate_password_hash``: ``pbkdf2:<digest>:<iterations>$<salt>$<hex key>`` →
    passwap pbkdf2; ``scrypt:<N>:<r>:<p>$<salt>$<hex key>`` → passwap scrypt (salt as UTF-8 text)."""
    match = _WERKZEUG.match(value)
    if match is None or match.group(1) != expected or len(match.group(4)) % 2:
        return _invalid(f"expected {expected}:<parameters>$<salt>$<hex key>")
    method, args = match.group(1), match.group(2).split(":")[1:]
    salt, key = match.group(3).encode("utf-8"), bytes.fromhex(match.group(4))
    if method == "pbkdf2":
        digest = args[0] if args else "sha256"
        ident = _WERKZEUG_PBKDF2_DIGESTS.get(digest)
        if ident is None:
            return Refusal(
                Reason.UNSUPPORTED_PBKDF2_DIGEST, f"pbkdf2 digest {digest[:12]!r} has no passwap form"
            )
        # Without a count Werkzeug used its release's default (50000 ... 600000), not knowable here.
        if len(args) != 2 or not args[1].isdigit():
            return _invalid("expected pbkdf2:<digest>:<iterations>")
        return _pbkdf2(ident, int(args[1]), salt, key)
    if len(args) != 3 or not all(arg.isdigit() for arg in args):
        return _invalid("expected scrypt:<N>:<r>:<p>")
    n, r, p = (int(arg) for arg in args)
    if n < 2 or n & (n - 1):
        return _invalid(f"N={n} is not a power of two (passwap stores log2 N)")
    if r < 1 or p < 1 or r * p >= 1 << 30 or not salt or not key:
        return _invalid("r and p must be positive, r*p below 2^30, salt and key non-empty")
    return f"$scrypt$ln={n.bit_length() - 1},r={r},p={p}${raw_b64(salt)}${raw_b64(key)}"
