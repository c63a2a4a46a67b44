"""Password hashes in the forms people have → the form passwap verifies, or why not.

:func:`detect` names the form of one stored value (None when it is none this module knows);
:func:`to_passwap` rewrites a value, of a detected or a declared :class:`HashForm`, into the string
ZITADEL's passwap parses, or refuses it with a reason that starts with the form's name
(docs/hash-forms.md: each layout, its rewrite, the verifier and limits it needs, and the origins).
A :class:`Rewritten` also carries the parsed result (:class:`~transforms.hashing.convert.ConvertedHash`:
verifier and cost parameters) that ``tally.HashTally.rewritten`` and ``summary.forms_needs`` turn
into the report's verifiers, limits and config block.

Pure functions, no Beam; no value is ever raised on or logged, and no reason holds a hash or salt.

Example::

    >>> to_passwap("pbkdf2_sha256$390000$seasalt$8xBlGd3jVgvJ+92hWPxi5ww0uuAuAnKgC45eudxro7c=").encoded
    '$pbkdf2-sha256$390000$c2Vhc2FsdA$8xBlGd3jVgvJ.92hWPxi5ww0uuAuAnKgC45eudxro7c'
    >>> to_passwap("bcrypt_sha256$$2b$12$...").reason
    'django bcrypt_sha256: passwap has no verifier that pre-hashes with SHA-256 (...)'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import NamedTuple

from transforms.common.errors import ConfigError
from transforms.common.reasons import Reason
from transforms.hashing import framework_hashes as fw
from transforms.hashing.convert import ConvertedHash, HashFailure, parse_hash
from transforms.hashing.framework_hashes import MAX_UINT32, Refusal, std_b64

__all__ = ["HashForm", "Rewritten", "VERIFIER", "MAX_LENGTH", "detect", "to_passwap", "form_named"]

MAX_LENGTH = 1024  # the longest form here (ASP.NET v3 with a 512-bit salt and subkey) is ~200


class HashForm(StrEnum):
    """A stored hash's form; the value is the spelling a ``--hash-form``-like flag would take."""

    BCRYPT = "bcrypt"
    ARGON2 = "argon2"
    PBKDF2 = "pbkdf2"  # passwap's (and passlib's) own $pbkdf2[-sha<n>]$ form; Auth0's i=,l= variant
    SCRYPT = "scrypt"  # passwap's $scrypt$ln=..,r=..,p=..$ form (passlib's too; $7$ln=.. alike)
    MD5_SALTED = "md5-salted"  # passwap's $md5salted-prefix|suffix$ form
    MD5_PLAIN = "md5-plain"
    JOOMLA_MD5 = "joomla-md5"  # <hex md5(password + salt)>:<salt>, declared only
    OSCOMMERCE_MD5 = "oscommerce-md5"  # <hex md5(salt + password)>:<salt>, declared only
    MD5CRYPT = "md5crypt"
    APR1_MD5 = "apr1-md5"
    YESCRYPT = "yescrypt"  # $y$ (current Debian, Ubuntu, Fedora /etc/shadow) and $gy$
    SHA256CRYPT = "sha256crypt"
    SHA512CRYPT = "sha512crypt"
    PHPASS = "phpass"
    DRUPAL7 = "drupal7"
    DRUPAL7_MD5 = "drupal7-md5"
    WORDPRESS_BCRYPT = "wordpress-bcrypt"
    DJANGO_PBKDF2_SHA256 = "django-pbkdf2-sha256"
    DJANGO_PBKDF2_SHA1 = "django-pbkdf2-sha1"
    DJANGO_BCRYPT = "django-bcrypt"
    DJANGO_BCRYPT_SHA256 = "django-bcrypt-sha256"
    DJANGO_ARGON2 = "django-argon2"
    DJANGO_SCRYPT = "django-scrypt"
    DJANGO_MD5 = "django-md5"
    DJANGO_SHA1 = "django-sha1"
    DJANGO_CRYPT = "django-crypt"
    ASPNET_IDENTITY_V2 = "aspnet-identity-v2"
    ASPNET_IDENTITY_V3 = "aspnet-identity-v3"
    WERKZEUG_PBKDF2 = "werkzeug-pbkdf2"
    WERKZEUG_SCRYPT = "werkzeug-scrypt"
    LDAP = "ldap"
    FIREBASE_SCRYPT = "firebase-scrypt"

    @property
    def label(self) -> str:
        """How a reason names the form (``django bcrypt_sha256``, ``asp.net identity v3``)."""
        return _LABELS.get(self, self.value)


_LABELS = {
    HashForm.MD5_SALTED: "salted md5",
    HashForm.MD5_PLAIN: "md5",
    HashForm.APR1_MD5: "apache apr1 md5",
    HashForm.DRUPAL7_MD5: "drupal7 U$S$",
    HashForm.WORDPRESS_BCRYPT: "wordpress bcrypt",
    HashForm.DJANGO_PBKDF2_SHA256: "django pbkdf2_sha256",
    HashForm.DJANGO_PBKDF2_SHA1: "django pbkdf2_sha1",
    HashForm.DJANGO_BCRYPT: "django bcrypt",
    HashForm.DJANGO_BCRYPT_SHA256: "django bcrypt_sha256",
    HashForm.DJANGO_ARGON2: "django argon2",
    HashForm.DJANGO_SCRYPT: "django scrypt",
    HashForm.DJANGO_MD5: "django md5",
    HashForm.DJANGO_SHA1: "django sha1",
    HashForm.DJANGO_CRYPT: "django crypt",
    HashForm.ASPNET_IDENTITY_V2: "asp.net identity v2",
    HashForm.ASPNET_IDENTITY_V3: "asp.net identity v3",
    HashForm.WERKZEUG_PBKDF2: "werkzeug pbkdf2",
    HashForm.WERKZEUG_SCRYPT: "werkzeug scrypt",
    HashForm.FIREBASE_SCRYPT: "firebase scrypt",
}


class Rewritten(NamedTuple):
    """One value's outcome: ``encoded`` (the passwap string) or None with ``reason`` naming the form.

    ``code`` is the dead-letter reason code of a refusal (transforms/common/reasons.py);
    ``converted`` the written string's verifier and cost parameters, as convert.parse_hash reads
    them (for HashTally and the report). Immutable; a NamedTuple because one is made per user
    (a frozen dataclass costs ~6 µs more each, benchmarks/hash_forms_bench.py).
    """

    encoded: str | None
    form: HashForm | None
    reason: str | None
    code: str | None = None
    converted: ConvertedHash | None = None


# The ZITADEL verifier (SystemDefaults.PasswordHasher.Verifiers) each form is written for; None: refused.
VERIFIER: Mapping[HashForm, str | None] = {
    HashForm.BCRYPT: "bcrypt",
    HashForm.ARGON2: "argon2",
    HashForm.PBKDF2: "pbkdf2",
    HashForm.SCRYPT: "scrypt",
    HashForm.MD5_SALTED: "md5salted",
    HashForm.MD5_PLAIN: "md5plain",
    HashForm.JOOMLA_MD5: "md5salted",
    HashForm.OSCOMMERCE_MD5: "md5salted",
    HashForm.MD5CRYPT: "md5",
    HashForm.APR1_MD5: None,
    HashForm.YESCRYPT: None,
    HashForm.SHA256CRYPT: "sha2",
    HashForm.SHA512CRYPT: "sha2",
    HashForm.PHPASS: "phpass",
    HashForm.DRUPAL7: "drupal7",
    HashForm.DRUPAL7_MD5: None,
    HashForm.WORDPRESS_BCRYPT: None,
    HashForm.DJANGO_PBKDF2_SHA256: "pbkdf2",
    HashForm.DJANGO_PBKDF2_SHA1: "pbkdf2",
    HashForm.DJANGO_BCRYPT: "bcrypt",
    HashForm.DJANGO_BCRYPT_SHA256: None,
    HashForm.DJANGO_ARGON2: "argon2",
    HashForm.DJANGO_SCRYPT: "scrypt",
    HashForm.DJANGO_MD5: "md5salted",  # md5plain for Django's md5$$<hex>
    HashForm.DJANGO_SHA1: None,
    HashForm.DJANGO_CRYPT: None,
    HashForm.ASPNET_IDENTITY_V2: "pbkdf2",
    HashForm.ASPNET_IDENTITY_V3: "pbkdf2",
    HashForm.WERKZEUG_PBKDF2: "pbkdf2",
    HashForm.WERKZEUG_SCRYPT: "scrypt",
    HashForm.LDAP: None,  # {MD5} → md5plain and {CRYPT}<crypt form> are rewritten
    HashForm.FIREBASE_SCRYPT: None,
}

_HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")
_BCRYPT = re.compile(r"^\$2([abxy]?)\$(\d\d)\$[./A-Za-z0-9]{53}$")
_LDAP = re.compile(r"^\{([A-Za-z0-9-]{1,20})\}(.*)$", re.S)
_PREFIXES: tuple[tuple[str, HashForm], ...] = (
    ("$2", HashForm.BCRYPT),
    ("$argon2", HashForm.ARGON2),
    ("$pbkdf2", HashForm.PBKDF2),
    ("$scrypt$", HashForm.SCRYPT),
    ("$7$", HashForm.SCRYPT),
    ("$md5salted", HashForm.MD5_SALTED),
    ("$1$", HashForm.MD5CRYPT),
    ("$apr1$", HashForm.APR1_MD5),
    ("$y$", HashForm.YESCRYPT),
    ("$gy$", HashForm.YESCRYPT),
    ("$5$", HashForm.SHA256CRYPT),
    ("$6$", HashForm.SHA512CRYPT),
    ("$P$", HashForm.PHPASS),
    ("$H$", HashForm.PHPASS),
    ("$S$", HashForm.DRUPAL7),
    ("$wp$", HashForm.WORDPRESS_BCRYPT),
    ("U$", HashForm.DRUPAL7_MD5),
    ("pbkdf2_sha256$", HashForm.DJANGO_PBKDF2_SHA256),
    ("pbkdf2_sha1$", HashForm.DJANGO_PBKDF2_SHA1),
    ("bcrypt_sha256$", HashForm.DJANGO_BCRYPT_SHA256),
    ("bcrypt$", HashForm.DJANGO_BCRYPT),
    ("argon2$", HashForm.DJANGO_ARGON2),
    ("scrypt$", HashForm.DJANGO_SCRYPT),
    ("md5$", HashForm.DJANGO_MD5),
    ("sha1$", HashForm.DJANGO_SHA1),
    ("crypt$", HashForm.DJANGO_CRYPT),
    ("pbkdf2:", HashForm.WERKZEUG_PBKDF2),
    ("scrypt:", HashForm.WERKZEUG_SCRYPT),
    ("{", HashForm.LDAP),
)

# The prefixes by their first character: detection tries only those that can match.
_BY_FIRST: dict[str, list[tuple[str, HashForm]]] = {}
for _prefix, _form in _PREFIXES:
    _BY_FIRST.setdefault(_prefix[0], []).append((_prefix, _form))


def _usable(value: object) -> str | None:
    """``value`` without surrounding whitespace when it can be a hash at all, else None."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    # isprintable() is False for every whitespace but the ASCII space (Unicode Z* and C* categories).
    if not value or len(value) > MAX_LENGTH or " " in value or not value.isprintable():
        return None
    return value


def detect(value: str) -> HashForm | None:
    """The form of one stored hash, by its prefix or shape; None when no form here matches.

    Firebase's modified scrypt has no self-describing form (its export keeps hash and salt apart):
    it is only ever declared. A 32-hex-digit value is taken as unsalted md5.
    """
    text = _usable(value)
    return None if text is None else _detect(text)


def _detect(text: str) -> HashForm | None:
    for prefix, form in _BY_FIRST.get(text[0], ()):
        if text.startswith(prefix):
            return form
    if _HEX32.match(text):
        return HashForm.MD5_PLAIN
    # ASP.NET Core Identity: base64 whose first byte is the format marker. Taken loosely (a
    # truncated value is still named, so its refusal says what is wrong with it).
    raw = std_b64(text) if len(text) % 4 == 0 and len(text) >= 20 else None
    if raw and raw[0] == 0x00:
        return HashForm.ASPNET_IDENTITY_V2
    if raw and raw[0] == 0x01 and int.from_bytes(raw[1:5], "big") <= 2:
        return HashForm.ASPNET_IDENTITY_V3
    return None


def form_named(name: str) -> HashForm:
    """A declared form (a flag's or a mapping file's value): the value or the label, any case.
    ConfigError (exit 2) naming the choices otherwise."""
    wanted = name.strip().lower() if isinstance(name, str) else ""
    for form in HashForm:
        if wanted in (form.value, form.label):
            return form
    raise ConfigError(f"unknown hash form {name!r}: one of {', '.join(form.value for form in HashForm)}")


def to_passwap(value: str, form: HashForm | None = None) -> Rewritten:
    """``value`` (of ``form``, else of its detected form) rewritten into the string passwap parses,
    or refused with a reason naming the form. Never raises, whatever ``value`` and ``form`` are
    (a declared form by name: :func:`form_named`)."""
    if form is not None and not isinstance(form, HashForm):  # a caller's slip, not a user's value
        return _refused(None, Reason.UNSUPPORTED_HASH, f"unknown hash form {str(form)[:40]!r}")
    text = _usable(value)
    if text is None:
        label = f"{form.label}: " if form is not None else ""
        return _refused(form, Reason.INVALID_HASH, f"{label}{_unusable_reason(value)}")
    form = form if form is not None else _detect(text)
    if form is None:
        return _refused(
            None,
            Reason.UNSUPPORTED_HASH,
            "not a hash form this tool recognises (docs/hash-forms.md lists them)",
        )
    if form in _AS_PARSED:  # already in passwap's exact layout: one parse, no rewrite (most values)
        parsed = parse_hash(text)
        if (
            isinstance(parsed, ConvertedHash)
            and parsed.verifier == VERIFIER[form]  # a declared form may not be the value's
            and _AS_PARSED[form](dict(parsed.params))
        ):
            return Rewritten(text, form, None, None, parsed)
    outcome = _CONVERTERS[form](text)
    if isinstance(outcome, Refusal):
        return _refused(form, outcome.code, f"{form.label}: {outcome.detail}")
    parsed = parse_hash(outcome)
    if isinstance(parsed, HashFailure):  # a rewrite passwap would not parse: a bug here, refused all the same
        return _refused(form, parsed.reason, f"{form.label}: {parsed.detail}")
    return Rewritten(outcome, form, None, None, parsed)


# Forms whose value passes as is when convert.parse_hash (passwap's layout, strict base64) takes it
# and its parameters are within what passwap can scan; anything else goes through the converter,
# which rewrites it or words the refusal.
_AS_PARSED: dict[HashForm, Callable[[dict[str, int]], bool]] = {
    HashForm.BCRYPT: lambda p: 4 <= p["cost"] <= 31,
    HashForm.ARGON2: lambda p: (
        1 <= p["memory"] <= MAX_UINT32 and 1 <= p["time"] <= MAX_UINT32 and 1 <= p["threads"] <= 255
    ),
    HashForm.SCRYPT: lambda p: (
        1 <= p["ln"] <= 62 and p["r"] >= 1 and p["p"] >= 1 and p["r"] * p["p"] < 1 << 30
    ),
}


def _unusable_reason(value: object) -> str:
    if not isinstance(value, str):
        return "hash value is not text"
    if not value.strip():
        return "hash value is empty"
    if len(value.strip()) > MAX_LENGTH:
        return f"hash value is longer than {MAX_LENGTH} characters"
    return "hash value holds whitespace or control characters"


def _refused(form: HashForm | None, code: str, reason: str) -> Rewritten:
    return Rewritten(None, form, reason, code)


def _unsupported(detail: str) -> Callable[[str], Refusal]:
    return lambda _value: Refusal(Reason.UNSUPPORTED_HASH, detail)


# --------------------------------------------------------------------------- passwap's own forms


def _bcrypt(value: str) -> str | Refusal:
    match = _BCRYPT.match(value)
    if match is None:
        return Refusal(Reason.INVALID_HASH, "expected $2a$/$2b$/$2y$, a 2-digit cost and 53 characters")
    if match.group(1) in ("", "x"):
        return Refusal(
            Reason.UNSUPPORTED_HASH, f"$2{match.group(1)}$ is not read by passwap (only $2a$/$2b$/$2y$)"
        )
    if not 4 <= int(match.group(2)) <= 31:
        return Refusal(Reason.INVALID_HASH, f"cost {match.group(2)} is outside bcrypt's 4 - 31")
    return value


def _parsed_as_is(value: str) -> str | Refusal:
    """Forms whose check is convert.parse_hash's (passwap's prefix and field rules)."""
    parsed = parse_hash(value)
    return value if isinstance(parsed, ConvertedHash) else Refusal(parsed.reason, parsed.detail)


def _md5_plain(value: str) -> str | Refusal:
    return value if _HEX32.match(value) else Refusal(Reason.INVALID_HASH, "expected 32 hex digits")


def _ldap(value: str) -> str | Refusal:
    """RFC 2307 ``{SCHEME}value``: {MD5} (base64 of the digest) → md5plain hex; {CRYPT} → the crypt form."""
    match = _LDAP.match(value)
    if match is None:
        return Refusal(Reason.INVALID_HASH, "expected {SCHEME}<value>")
    scheme, rest = match.group(1).upper(), match.group(2)
    if scheme == "MD5":
        digest = std_b64(rest)
        if digest is None or len(digest) != 16:
            return Refusal(Reason.INVALID_HASH, "{MD5} value is not base64 of 16 bytes")
        return digest.hex()
    if scheme == "CRYPT":
        inner = detect(rest)
        if inner in (HashForm.BCRYPT, HashForm.MD5CRYPT, HashForm.SHA256CRYPT, HashForm.SHA512CRYPT):
            return _CONVERTERS[inner](rest)
        return Refusal(Reason.UNSUPPORTED_HASH, "{CRYPT} holds no $1$/$2?$/$5$/$6$ crypt string")
    if scheme in ("SSHA", "SHA", "SSHA256", "SSHA512", "SHA256", "SHA512"):
        return Refusal(
            Reason.UNSUPPORTED_SALTED_SHA, f"{{{scheme}}}: passwap has no SHA-1/SHA-2 digest verifier"
        )
    return Refusal(Reason.UNSUPPORTED_LDAP, f"{{{scheme}}} has no passwap verifier")


def _strip(prefix: str, inner: Callable[[str], str | Refusal]) -> Callable[[str], str | Refusal]:
    """Django's forms that wrap a library's own string: ``bcrypt$`` + bcrypt's ``$2b$...``
    (BCryptPasswordHasher joins with '$'), ``argon2`` + argon2-cffi's ``$argon2id$...`` (joined as is)."""

    def convert(value: str) -> str | Refusal:
        if not value.startswith(prefix + "$"):
            return Refusal(Reason.INVALID_HASH, f"expected {prefix}$<the library's hash>")
        return inner(value[len(prefix) :])

    return convert


_CONVERTERS: dict[HashForm, Callable[[str], str | Refusal]] = {
    HashForm.BCRYPT: _bcrypt,
    HashForm.ARGON2: fw.passwap_argon2,
    HashForm.PBKDF2: fw.passwap_pbkdf2,
    HashForm.SCRYPT: fw.passwap_scrypt,
    HashForm.MD5_SALTED: _parsed_as_is,
    HashForm.MD5_PLAIN: _md5_plain,
    HashForm.JOOMLA_MD5: lambda value: fw.md5_colon_salt(value, salt_first=False),
    HashForm.OSCOMMERCE_MD5: lambda value: fw.md5_colon_salt(value, salt_first=True),
    HashForm.MD5CRYPT: _parsed_as_is,
    HashForm.APR1_MD5: _unsupported(
        "passwap's md5 verifier reads $1$ md5-crypt only (apr1 mixes in another magic)"
    ),
    HashForm.YESCRYPT: _unsupported("passwap has no yescrypt verifier (sha256crypt/sha512crypt it has)"),
    HashForm.SHA256CRYPT: fw.sha_crypt("5"),
    HashForm.SHA512CRYPT: fw.sha_crypt("6"),
    HashForm.PHPASS: fw.portable("PH", 34),
    HashForm.DRUPAL7: fw.portable("S", 55),
    HashForm.DRUPAL7_MD5: _unsupported(
        "the password was md5-hashed before SHA-512; passwap's drupal7 hashes it plain"
    ),
    HashForm.WORDPRESS_BCRYPT: _unsupported(
        "$wp$ is bcrypt of the password's HMAC-SHA384 (WordPress 6.8+); passwap's bcrypt hashes the password itself"
    ),
    HashForm.DJANGO_PBKDF2_SHA256: lambda value: fw.django_pbkdf2(value, "pbkdf2-sha256"),
    HashForm.DJANGO_PBKDF2_SHA1: lambda value: fw.django_pbkdf2(value, "pbkdf2"),
    HashForm.DJANGO_BCRYPT: _strip("bcrypt$", _bcrypt),
    HashForm.DJANGO_BCRYPT_SHA256: _unsupported(
        "passwap has no verifier that pre-hashes with SHA-256 (bcrypt of the password's SHA-256 hex digest)"
    ),
    HashForm.DJANGO_ARGON2: _strip("argon2", fw.passwap_argon2),
    HashForm.DJANGO_SCRYPT: fw.django_scrypt,
    HashForm.DJANGO_MD5: fw.django_md5,
    HashForm.DJANGO_SHA1: lambda _value: Refusal(
        Reason.UNSUPPORTED_SALTED_SHA, "passwap has no (salted) SHA-1 verifier"
    ),
    HashForm.DJANGO_CRYPT: _unsupported("DES crypt has no passwap verifier"),
    HashForm.ASPNET_IDENTITY_V2: lambda value: fw.aspnet_identity(value, 0x00),
    HashForm.ASPNET_IDENTITY_V3: lambda value: fw.aspnet_identity(value, 0x01),
    HashForm.WERKZEUG_PBKDF2: lambda value: fw.werkzeug(value, "pbkdf2"),
    HashForm.WERKZEUG_SCRYPT: lambda value: fw.werkzeug(value, "scrypt"),
    HashForm.LDAP: _ldap,
    HashForm.FIREBASE_SCRYPT: _unsupported("ZITADEL cannot verify it; import without password"),
}
