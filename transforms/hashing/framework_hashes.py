"""Framework password hashes (Django, ASP.NET Core Identity, Werkzeug) → the strings passwap parses,
the checks of the crypt-style forms passwap reads as they are (sha-crypt, phpass, Drupal 7), and
passwap's own argon2, pbkdf2 and scrypt forms as other libraries spell them, re-spelled.

Each function takes one stored value and returns the passwap string or a :class:`Refusal` whose
detail explains the problem without the hash or salt. transforms/hashing/forms.py detects the
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
from collections.abc import Callable
from typing import NamedTuple

from transforms.common.reasons import Reason

__all__ = [
    "Refusal",
    "ab64",
    "std_b64",
    "raw_b64",
    "django_pbkdf2",
    "django_scrypt",
    "django_md5",
    "aspnet_identity",
    "werkzeug",
    "md5_colon_salt",
    "MAX_UINT32",
    "sha_crypt",
    "portable",
    "passwap_argon2",
    "passwap_pbkdf2",
    "passwap_scrypt",
    "lenient_b64",
    "pbkdf2_field",
    "scrypt_n_as_ln",
]

MAX_UINT32 = 2**32 - 1  # passwap scans pbkdf2 rounds, argon2 memory and time into uint32
_ITOA64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_SHA_CRYPT = re.compile(r"^\$([56])\$(?:rounds=(\d{1,10})\$)?([^$]{0,16})\$([./0-9A-Za-z]+)$")
_PORTABLE = re.compile(r"^\$([PHS])\$[./0-9A-Za-z]+$")
_STD_B64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
# Django forbids '$' in a salt; passwap's field scanner splits on whitespace, so a salt that
# has either cannot be carried as text (it is re-encoded as bytes where the target form allows).
_DJANGO_PBKDF2 = re.compile(r"^pbkdf2_sha(?:256|1)\$(\d{1,10})\$([^$]+)\$([A-Za-z0-9+/]+={0,2})$")
_DJANGO_SCRYPT = re.compile(r"^scrypt\$(\d{1,12})\$([^$]+)\$(\d{1,6})\$(\d{1,6})\$([A-Za-z0-9+/]+={0,2})$")
_DJANGO_MD5 = re.compile(r"^md5\$([^$]*)\$([0-9a-fA-F]{32})$")
_MD5_COLON_SALT = re.compile(r"^([0-9a-fA-F]{32}):([^:]+)$")
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
    if not _STD_B64.match(text):
        return None
    text = text.rstrip("=")
    try:  # strict: no character outside the alphabet, no misplaced padding (binascii, not base64: ~2x faster)
        return binascii.a2b_base64(text + "=" * (-len(text) % 4), strict_mode=True)
    except binascii.Error:
        return None


def raw_b64(data: bytes) -> str:
    """Standard base64 without padding (passwap's RawStd); convert.raw_b64's result, faster."""
    return binascii.b2a_base64(data, newline=False).decode("ascii").rstrip("=")


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


def md5_colon_salt(value: str, salt_first: bool) -> str | Refusal:
    """``<hex md5>:<salt>`` → ``$md5salted-prefix|suffix$<salt>$<base64>``. The layout does not say
    the order, so it is only ever declared: osCommerce 2 hashes ``salt + password`` (prefix),
    Joomla 1.0 - 2.5 ``password + salt`` (suffix)."""
    match = _MD5_COLON_SALT.match(value)
    if match is None:
        return _invalid("expected <32 hex digits>:<salt>")
    if "$" in match.group(2):
        return Refusal(Reason.UNSUPPORTED_SALT, "the salt holds '$', which passwap's md5salted cannot read")
    digest = base64.b64encode(bytes.fromhex(match.group(1))).decode("ascii")
    return f"$md5salted-{'prefix' if salt_first else 'suffix'}${match.group(2)}${digest}"


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


def sha_crypt(variant: str) -> Callable[[str], str | Refusal]:
    """The check of a ``$5$``/``$6$`` SHA-crypt string (Drepper's layout), which passes as is."""

    def convert(value: str) -> str | Refusal:
        match = _SHA_CRYPT.match(value)
        size = 43 if variant == "5" else 86
        if match is None or match.group(1) != variant or len(match.group(4)) != size:
            return Refusal(
                Reason.INVALID_HASH,
                f"expected ${variant}$[rounds=<n>$]<salt of at most 16>${size} crypt characters",
            )
        # glibc writes the rounds it used, clamped to 1000 - 999999999; a value outside was not made by it.
        if match.group(2) is not None and not 1000 <= int(match.group(2)) <= 999_999_999:
            return Refusal(Reason.INVALID_HASH, f"rounds={match.group(2)} is outside 1000 - 999999999")
        return value

    return convert


def portable(kind: str, length: int) -> Callable[[str], str | Refusal]:
    """phpass ($P$/$H$, 34 characters) and Drupal 7 ($S$, 55): the count character is log2 of the
    iterations, 7 - 30 in both (phpass's PasswordHash, Drupal's DRUPAL_MIN/MAX_HASH_COUNT)."""

    def convert(value: str) -> str | Refusal:
        match = _PORTABLE.match(value)
        if match is None or match.group(1) not in kind or len(value) != length:
            return Refusal(Reason.INVALID_HASH, f"expected {length} characters in the crypt alphabet")
        count = _ITOA64.index(value[3])
        if not 7 <= count <= 30:
            return Refusal(Reason.INVALID_HASH, f"count character gives 2^{count}, outside 2^7 - 2^30")
        return value

    return convert


# --------------------------------------------------------------------------- passwap's own forms, re-spelled


def passwap_argon2(value: str) -> str | Refusal:
    """PHC argon2 → passwap's exact layout: v=19, m,t,p in that order, unpadded standard base64."""
    parts = value.split("$")
    if 3 <= len(parts) < 6 and parts[2].startswith("v="):  # cut short: it names what it lacks
        missing = ("m,t,p parameters, salt and hash", "salt and hash", "hash")[len(parts) - 3]
        return Refusal(
            Reason.INVALID_HASH,
            f"no {missing}: the value ends after {len(parts) - 1} of the 5 fields of "
            "$argon2id$v=19$m=..,t=..,p=..$<salt>$<hash>",
        )
    if len(parts) == 5:  # no v= field: argon2 1.0 (v=16) as early libraries wrote it
        return Refusal(
            Reason.UNSUPPORTED_ARGON2_VARIANT, "no v= field (argon2 1.0); passwap verifies only v=19"
        )
    if len(parts) != 6 or parts[0]:
        return Refusal(Reason.INVALID_HASH, "expected $argon2id$v=19$m=..,t=..,p=..$<salt>$<hash>")
    ident, version, params, salt_text, hash_text = parts[1:]
    if ident not in ("argon2i", "argon2id", "argon2d"):
        return Refusal(Reason.INVALID_HASH, "identifier is not argon2i, argon2id or argon2d")
    if ident == "argon2d":
        return Refusal(
            Reason.UNSUPPORTED_ARGON2_VARIANT, "argon2d has no passwap verifier (argon2i/argon2id do)"
        )
    if version != "v=19":
        return Refusal(Reason.UNSUPPORTED_ARGON2_VARIANT, "only version v=19 has a passwap verifier")
    pairs = dict(item.partition("=")[::2] for item in params.split(","))
    if (
        set(pairs) != {"m", "t", "p"}
        or len(params.split(",")) != 3
        or not all(v.isdigit() for v in pairs.values())
    ):
        return Refusal(
            Reason.UNSUPPORTED_ARGON2_VARIANT,
            "parameters are not exactly m, t and p (keyid/data unsupported)",
        )
    m, t, p = (int(pairs[key][:11]) for key in "mtp")
    if not (1 <= m <= MAX_UINT32 and 1 <= t <= MAX_UINT32 and 1 <= p <= 255):
        return Refusal(Reason.INVALID_HASH, "m and t must be 1 - 2^32-1 and p 1 - 255")
    salt, digest = lenient_b64(salt_text), lenient_b64(hash_text)
    if not salt or not digest:
        return Refusal(Reason.INVALID_HASH, "salt or hash is empty or not base64")
    return f"${ident}$v=19$m={m},t={t},p={p}${raw_b64(salt)}${raw_b64(digest)}"


def lenient_b64(text: str) -> bytes | None:
    """Standard base64, or passlib's adapted alphabet ('.' for '+'), padded or not."""
    return std_b64(text.replace(".", "+")) if text else None


def passwap_pbkdf2(value: str) -> str | Refusal:
    """passwap's own form as is; Auth0's ``$pbkdf2-<digest>$i=<n>,l=<len>$<salt>$<hash>`` and
    passlib-style ``$pbkdf2-sha1$`` rewritten (passwap knows no ``pbkdf2-sha1`` identifier)."""
    parts = value.split("$")
    if len(parts) != 5 or parts[0]:
        return Refusal(Reason.INVALID_HASH, "expected $pbkdf2[-sha<n>]$<rounds>$<salt>$<hash>")
    ident, rounds_text, salt_text, hash_text = parts[1:]
    ident = "pbkdf2" if ident == "pbkdf2-sha1" else ident
    if ident not in ("pbkdf2", "pbkdf2-sha224", "pbkdf2-sha256", "pbkdf2-sha384", "pbkdf2-sha512"):
        return Refusal(Reason.UNSUPPORTED_PBKDF2_DIGEST, "digest is not sha1/224/256/384/512")
    length = None
    if rounds_text.startswith("i="):  # the PHC-like variant of Auth0 and Ory Kratos
        match = re.fullmatch(r"i=(\d{1,10}),l=(\d{1,4})", rounds_text)
        if match is None:
            return Refusal(Reason.INVALID_HASH, "expected i=<iterations>,l=<key length>")
        if ident in ("pbkdf2-sha224", "pbkdf2-sha384"):
            # Ory Kratos (hash/hasher_pbkdf2.go) reads sha224/sha384 in this layout as SHA3-224/384;
            # Auth0 offers neither. passwap's pbkdf2-sha224/384 are SHA-2 and it has no SHA-3.
            return Refusal(
                Reason.UNSUPPORTED_PBKDF2_DIGEST,
                f"{ident[7:]} in the i=,l= layout is SHA3-{ident[10:]} (Ory Kratos); "
                "passwap's pbkdf2 has SHA-1 and SHA-2 digests only",
            )
        rounds_text, length = match.group(1), int(match.group(2))
    if not rounds_text.isdigit() or len(rounds_text) > 10 or not 1 <= int(rounds_text) <= MAX_UINT32:
        return Refusal(Reason.INVALID_HASH, f"rounds must be 1 - {MAX_UINT32}")
    salt, digest = pbkdf2_field(salt_text), pbkdf2_field(hash_text)
    if not salt or not digest:
        return Refusal(Reason.INVALID_HASH, "salt or hash is empty or not base64")
    if length is not None and length != len(digest):
        return Refusal(Reason.INVALID_HASH, f"hash is {len(digest)} bytes but l= says {length}")
    if ident == parts[1] and length is None:
        return value
    return f"${ident}${int(rounds_text)}${ab64(salt)}${ab64(digest)}"


def pbkdf2_field(text: str) -> bytes | None:
    """passwap's AutoDecodePbkdf2: '=' stripped; with '+' standard base64, else the './' alphabet."""
    text = text.rstrip("=")
    if "+" in text and "." in text:
        return None
    return std_b64(text.replace(".", "+")) if text else None


def passwap_scrypt(value: str) -> str | Refusal:
    """passwap's form (also under ``$7$``) in its exact spelling; an ``ln`` above 62 cannot be
    log2 N: a power of two there is N itself, as Ory Kratos writes it (:func:`scrypt_n_as_ln`)."""
    match = re.fullmatch(r"\$(?:scrypt|7)\$ln=(\d{1,20}),r=(\d{1,6}),p=(\d{1,6})\$([^$]+)\$([^$]+)", value)
    if match is not None and int(match.group(1)) > 62 and value.startswith("$scrypt$"):
        return scrypt_n_as_ln(value)
    if match is None and value.startswith(
        "$7$"
    ):  # libxcrypt's $7$<N><r><p><salt>$<hash>, a layout of its own
        return Refusal(
            Reason.UNSUPPORTED_HASH, "libxcrypt's $7$ layout is not the $scrypt$ln=..,r=..,p=.. passwap reads"
        )
    if match is None:
        return Refusal(Reason.INVALID_HASH, "expected $scrypt$ln=..,r=..,p=..$<salt>$<hash>")
    ln, r, p = (int(match.group(i)) for i in (1, 2, 3))
    if not 1 <= ln <= 62 or r < 1 or p < 1 or r * p >= 1 << 30:
        return Refusal(Reason.INVALID_HASH, "ln must be 1 - 62, r and p positive with r*p below 2^30")
    salt, digest = lenient_b64(match.group(4)), lenient_b64(match.group(5))
    if not salt or not digest:
        return Refusal(Reason.INVALID_HASH, "salt or hash is empty or not base64")
    return f"$scrypt$ln={ln},r={r},p={p}${raw_b64(salt)}${raw_b64(digest)}"


_SCRYPT_N = re.compile(r"\$scrypt\$ln=(\d{1,20}),r=(\d{1,6}),p=(\d{1,6})\$([^$]+)\$([^$]+)")


def scrypt_n_as_ln(value: str) -> str | Refusal:
    """Ory Kratos's ``$scrypt$ln=<N>,r=..,p=..$<salt>$<hash>`` → passwap's ``ln=<log2 N>``.

    Kratos (hash/hash_comparator.go ``decodeScryptHash``) passes ``ln`` to scrypt as N itself
    (16384, not 14) and writes salt and hash in padded standard base64; passwap reads ``ln`` as
    log2 N and unpadded base64. N must be a power of two (scrypt's own rule).
    """
    match = _SCRYPT_N.fullmatch(value)
    if match is None:
        return _invalid("expected $scrypt$ln=<N>,r=..,p=..$<salt>$<hash>")
    n, r, p = (int(match.group(i)) for i in (1, 2, 3))
    if n < 2 or n & (n - 1) or n.bit_length() - 1 > 62:
        return _invalid(f"N={n} (Ory Kratos's ln=) is not a power of two from 2 to 2^62")
    if r < 1 or p < 1 or r * p >= 1 << 30:
        return _invalid("r and p must be positive with r*p below 2^30")
    salt, digest = std_b64(match.group(4)), std_b64(match.group(5))
    if not salt or not digest:
        return _invalid("salt or hash is empty or not standard base64")
    return f"$scrypt$ln={n.bit_length() - 1},r={r},p={p}${raw_b64(salt)}${raw_b64(digest)}"
