"""passwap's parsing and verification rules, written test-side and independent of transforms/.

Read from passwap's Go sources (github.com/zitadel/passwap; see tests/data/README.md for the
commit): each verifier claims a string by its prefix, scans its '$'-separated fields in a fixed
order, decodes salts and hashes with the encoding that package uses, and compares the recomputed
hash. ``claim(encoded)`` says which verifier takes a string (None when none does, raising
:class:`Refused` when one claims it but cannot parse it); ``verify(encoded, password)`` answers
True/False like passwap's ``Verify`` and raises :class:`Refused` where passwap returns an error.

bcrypt and argon2 use the bcrypt and argon2-cffi packages (the reference C implementations);
pbkdf2, scrypt and md5 use hashlib; md5-crypt, SHA-crypt, phpass and drupal7 are implemented
here from their published algorithms (short, and no maintained Python package offers them all).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re

from optional_deps import optional

ORDER = ("bcrypt", "argon2", "pbkdf2", "scrypt", "md5salted", "md5", "sha2", "phpass", "drupal7", "md5plain")
_ITOA64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_PBKDF2_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789./"
_STD_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


class Refused(ValueError):
    """A verifier claimed the string but passwap would return an error for it."""


def raw_std_strict(text: str) -> bytes:
    """Go's base64.RawStdEncoding.Strict(): no '=', no stray trailing bits."""
    if "=" in text or len(text) % 4 == 1 or not re.fullmatch(r"[A-Za-z0-9+/]*", text):
        raise Refused("not RawStd base64")
    data = base64.b64decode(text + "=" * (-len(text) % 4))
    if base64.b64encode(data).decode().rstrip("=") != text:
        raise Refused("non-zero trailing bits")
    return data


def _pbkdf2_field(text: str) -> bytes:
    """passwap's AutoDecodePbkdf2: strip '='; with '+' RawStd, else passlib's './' alphabet."""
    text = text.rstrip("=")
    if "+" not in text:
        if not re.fullmatch(r"[A-Za-z0-9./]*", text):
            raise Refused("not ab64")
        text = text.translate(str.maketrans(_PBKDF2_ALPHABET, _STD_ALPHABET))
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error as err:
        raise Refused(str(err)) from None


def _fields(encoded: str, count: int) -> list[str]:
    """Go's Sscanf over the string with '$' turned into spaces: whitespace-split tokens."""
    parts = encoded.replace("$", " ").split()
    if len(parts) < count:
        raise Refused("too few fields")
    return parts


# --------------------------------------------------------------------------- crypt helpers


def _to64(value: int, count: int) -> str:
    out = ""
    for _ in range(count):
        out += _ITOA64[value & 0x3F]
        value >>= 6
    return out


def md5_crypt(password: bytes, salt: bytes) -> str:
    magic = b"$1$"
    salt = salt[:8]
    alt = hashlib.md5(password + salt + password).digest()
    ctx = password + magic + salt
    length = len(password)
    while length > 0:
        ctx += alt[: min(16, length)]
        length -= 16
    i = len(password)
    while i:
        ctx += b"\0" if i & 1 else password[:1]
        i >>= 1
    final = hashlib.md5(ctx).digest()
    for i in range(1000):
        step = password if i & 1 else final
        if i % 3:
            step += salt
        if i % 7:
            step += password
        step += final if i & 1 else password
        final = hashlib.md5(step).digest()
    out = "".join(
        _to64(final[a] << 16 | final[b] << 8 | final[c], 4)
        for a, b, c in ((0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5))
    )
    return f"$1${salt.decode()}${out}{_to64(final[11], 2)}"


_SHA256_ORDER = [
    (0, 10, 20),
    (21, 1, 11),
    (12, 22, 2),
    (3, 13, 23),
    (24, 4, 14),
    (15, 25, 5),
    (6, 16, 26),
    (27, 7, 17),
    (18, 28, 8),
    (9, 19, 29),
]


def _sha512_order() -> list[tuple[int, int, int]]:
    # Drepper's spec: byte triples rotate their order every group.
    order = []
    for i in range(21):
        a, b, c = i, i + 21, i + 42
        rot = i % 3
        order.append((a, b, c) if rot == 0 else (b, c, a) if rot == 1 else (c, a, b))
    return order


def sha_crypt(password: bytes, salt: bytes, rounds: int, variant: str, explicit_rounds: bool) -> str:
    digest = hashlib.sha512 if variant == "6" else hashlib.sha256
    size = 64 if variant == "6" else 32
    salt = salt[:16]
    b = digest(password + salt + password).digest()
    a = password + salt + b * (len(password) // size) + b[: len(password) % size]
    i = len(password)
    while i:
        a += b if i & 1 else password
        i >>= 1
    a = digest(a).digest()
    dp = digest(password * len(password)).digest()
    p = dp * (len(password) // size) + dp[: len(password) % size]
    ds = digest(salt * (16 + a[0])).digest()
    s = ds * (len(salt) // size) + ds[: len(salt) % size]
    c = a
    for r in range(rounds):
        step = p if r & 1 else c
        if r % 3:
            step += s
        if r % 7:
            step += p
        step += c if r & 1 else p
        c = digest(step).digest()
    if variant == "6":
        out = "".join(_to64(c[x] << 16 | c[y] << 8 | c[z], 4) for x, y, z in _sha512_order()) + _to64(
            c[63], 2
        )
    else:
        out = "".join(_to64(c[x] << 16 | c[y] << 8 | c[z], 4) for x, y, z in _SHA256_ORDER)
        out += _to64(c[31] << 8 | c[30], 3)
    head = f"${variant}$rounds={rounds}$" if explicit_rounds else f"${variant}$"
    return f"{head}{salt.decode()}${out}"


def _phpass_encode(data: bytes, count: int) -> str:
    out, i = "", 0
    while True:
        value = data[i]
        i += 1
        out += _ITOA64[value & 0x3F]
        if i < count:
            value |= data[i] << 8
        out += _ITOA64[(value >> 6) & 0x3F]
        if i >= count:
            break
        i += 1
        if i < count:
            value |= data[i] << 16
        out += _ITOA64[(value >> 12) & 0x3F]
        if i >= count:
            break
        i += 1
        out += _ITOA64[(value >> 18) & 0x3F]
        if i >= count:
            break
    return out


def _portable(encoded: str, password: bytes, digest, size: int) -> str:
    count = 1 << _ITOA64.index(encoded[3])
    salt = encoded[4:12].encode()
    value = digest(salt + password).digest()
    for _ in range(count):
        value = digest(value + password).digest()
    return encoded[:12] + _phpass_encode(value, size)


# --------------------------------------------------------------------------- claim + verify


def claim(encoded: str) -> str | None:
    """The verifier that claims ``encoded`` (passwap's prefix rules), after checking it parses."""
    return _parse(encoded)[0]


def _parse(encoded: str):
    if encoded.startswith("$2"):
        if not re.fullmatch(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}", encoded):
            raise Refused("bcrypt: bad format")
        return "bcrypt", None
    if encoded.startswith("$argon2"):
        ident, version, params, salt, hashed = _fields(encoded, 5)[:5]
        if ident not in ("argon2i", "argon2id"):
            raise Refused(f"argon2: identifier {ident}")
        match_v = re.fullmatch(r"v=(\d+)", version)
        match_p = re.fullmatch(r"m=(\d+),t=(\d+),p=(\d+)", params)
        if not match_v or not match_p:
            raise Refused("argon2: field order")
        if int(match_v.group(1)) != 19:
            raise Refused("argon2: version")
        m, t, p = map(int, match_p.groups())
        return "argon2", (ident, m, t, p, raw_std_strict(salt), raw_std_strict(hashed))
    if encoded.startswith("$pbkdf2"):
        ident, rounds, salt, hashed = _fields(encoded, 4)[:4]
        digests = {
            "pbkdf2": "sha1",
            "pbkdf2-sha224": "sha224",
            "pbkdf2-sha256": "sha256",
            "pbkdf2-sha384": "sha384",
            "pbkdf2-sha512": "sha512",
        }
        if ident not in digests or not rounds.isdigit():
            raise Refused("pbkdf2: identifier or rounds")
        return "pbkdf2", (digests[ident], int(rounds), _pbkdf2_field(salt), _pbkdf2_field(hashed))
    # passwap's scrypt also claims "$7$" (scrypt.Prefix_Linux) and scans it in its own ln=,r=,p= layout.
    if encoded.startswith(("$scrypt$", "$7$")):
        _, params, salt, hashed = _fields(encoded, 4)[:4]
        match = re.fullmatch(r"ln=(\d+),r=(\d+),p=(\d+)", params)
        if not match:
            raise Refused("scrypt: params")
        ln, r, p = map(int, match.groups())
        return "scrypt", (ln, r, p, raw_std_strict(salt), raw_std_strict(hashed))
    if encoded.startswith("$md5salted"):
        ident, salt, hashed = _fields(encoded, 3)[:3]
        if ident not in ("md5salted-prefix", "md5salted-suffix"):
            raise Refused("md5salted: identifier")
        try:
            digest = base64.b64decode(hashed, validate=True)
        except binascii.Error:
            raise Refused("md5salted: hash not base64") from None
        return "md5salted", (ident.endswith("prefix"), salt.encode(), digest)
    if encoded.startswith("$1$"):
        parts = encoded.split("$")
        if len(parts) != 4:
            raise Refused("md5: fields")
        return "md5", parts[2].encode()
    if encoded.startswith(("$5$", "$6$")):
        match = re.fullmatch(r"\$([56])\$(?:rounds=(\d+)\$)?([^$]*)\$([./0-9A-Za-z]+)", encoded)
        if not match:
            raise Refused("sha2: fields")
        return "sha2", match.groups()
    if encoded.startswith(("$P$", "$H$")):
        if len(encoded) != 34:
            raise Refused("phpass: length")
        return "phpass", None
    if encoded.startswith("$S$"):
        if len(encoded) != 55:
            raise Refused("drupal7: length")
        return "drupal7", None
    if re.fullmatch(r"[0-9a-fA-F]{32}", encoded):
        return "md5plain", bytes.fromhex(encoded)
    return None, None


def verify(encoded: str, password: str) -> bool:
    """passwap's Verify: True when ``password`` matches; Refused when nothing can parse it."""
    verifier, parsed = _parse(encoded)
    pw = password.encode("utf-8")
    if verifier is None:
        raise Refused("no verifier claims this string")
    if verifier == "bcrypt":
        return optional("bcrypt", "bcrypt", "checking a bcrypt hash").checkpw(pw, encoded.encode())
    if verifier == "argon2":
        low_level = optional("argon2.low_level", "argon2-cffi", "checking an argon2 hash")
        ident, m, t, p, salt, hashed = parsed
        kind = low_level.Type.ID if ident == "argon2id" else low_level.Type.I
        raw = low_level.hash_secret_raw(pw, salt, t, m, p, len(hashed), kind, 19)
        return hmac.compare_digest(raw, hashed)
    if verifier == "pbkdf2":
        digest, rounds, salt, hashed = parsed
        return hmac.compare_digest(hashlib.pbkdf2_hmac(digest, pw, salt, rounds, len(hashed)), hashed)
    if verifier == "scrypt":
        ln, r, p, salt, hashed = parsed
        computed = hashlib.scrypt(pw, salt=salt, n=1 << ln, r=r, p=p, dklen=len(hashed), maxmem=256 << 20)
        return hmac.compare_digest(computed, hashed)
    if verifier == "md5salted":
        prefix, salt, digest = parsed
        return hmac.compare_digest(hashlib.md5(salt + pw if prefix else pw + salt).digest(), digest)
    if verifier == "md5":
        return hmac.compare_digest(md5_crypt(pw, parsed), encoded)
    if verifier == "sha2":
        variant, rounds, salt, _ = parsed
        computed = sha_crypt(pw, salt.encode(), int(rounds) if rounds else 5000, variant, rounds is not None)
        return hmac.compare_digest(computed, encoded)
    if verifier == "phpass":
        return hmac.compare_digest(_portable(encoded, pw, hashlib.md5, 16), encoded)
    if verifier == "drupal7":
        return hmac.compare_digest(_portable(encoded, pw, hashlib.sha512, 64)[:55], encoded)
    return hmac.compare_digest(hashlib.md5(pw).digest(), parsed)


# --------------------------------------------------------------------------- limits (the server's side)

# ZITADEL's default SystemDefaults.PasswordHasher.Limits (cmd/defaults.yaml; passwap v0.12).
DEFAULT_LIMITS = {
    "Bcrypt.MinCost": 10,
    "Bcrypt.MaxCost": 16,
    "Argon2.MinTime": 1,
    "Argon2.MaxTime": 10,
    "Argon2.MinMemory": 8192,
    "Argon2.MaxMemory": 524288,
    "Argon2.MinThreads": 1,
    "Argon2.MaxThreads": 16,
    "Scrypt.MinLN": 14,
    "Scrypt.MaxLN": 20,
    "Scrypt.MinR": 8,
    "Scrypt.MaxR": 32,
    "Scrypt.MinP": 1,
    "Scrypt.MaxP": 16,
    "PBKDF2.MinRounds": 1000,
    "PBKDF2.MaxRounds": 10_000_000,
    "Sha2.MinSha256Rounds": 1000,
    "Sha2.MaxSha256Rounds": 999_999_999,
    "Sha2.MinSha512Rounds": 1000,
    "Sha2.MaxSha512Rounds": 999_999_999,
    "PHPass.MinRounds": 7,
    "PHPass.MaxRounds": 31,
    "Drupal7.MinIterations": 1000,
    "Drupal7.MaxIterations": 500_000,
}


def cost_params(encoded: str) -> dict[str, int]:
    """``Group.Name → value`` for the limits passwap checks (``Argon2.Memory``, ``Bcrypt.Cost``...)."""
    verifier, parsed = _parse(encoded)
    if verifier == "bcrypt":
        return {"Bcrypt.Cost": int(encoded[4:6])}
    if verifier == "argon2":
        return {"Argon2.Memory": parsed[1], "Argon2.Time": parsed[2], "Argon2.Threads": parsed[3]}
    if verifier == "pbkdf2":
        return {"PBKDF2.Rounds": parsed[1]}
    if verifier == "scrypt":
        return {"Scrypt.LN": parsed[0], "Scrypt.R": parsed[1], "Scrypt.P": parsed[2]}
    if verifier == "sha2":
        return {f"Sha2.Sha{'512' if parsed[0] == '6' else '256'}Rounds": int(parsed[1] or 5000)}
    if verifier == "phpass":
        return {"PHPass.Rounds": _ITOA64.index(encoded[3])}
    if verifier == "drupal7":
        return {"Drupal7.Iterations": 1 << _ITOA64.index(encoded[3])}
    return {}


def server_refusal(encoded: str, verifiers: frozenset[str] | set[str], limits: dict[str, int]) -> str | None:
    """What ZITADEL's import answers for one user's hash: None (imported) or the error message.

    The hasher (bcrypt) and the enabled verifiers parse; none claiming it → Errors.Hash.NotSupported;
    a parameter outside the limits → Errors.User.Password.Invalid naming it.
    """
    try:
        verifier = claim(encoded)
    except Refused:
        verifier = None
    if verifier is None or verifier not in verifiers:
        return "ID=CRYPT-Nx7XY Message=Errors.Hash.NotSupported"
    for key, value in cost_params(encoded).items():
        group, name = key.split(".")
        low, high = limits[f"{group}.Min{name}"], limits[f"{group}.Max{name}"]
        if not low <= value <= high:
            return (
                f"ID=COMMAND-4n8fs Message=Errors.User.Password.Invalid "
                f"(verifier: {verifier} parameter {name} out of bounds: expected {low} - {high}, got {value})"
            )
    return None
