"""The import API's request validation, applied to every user before anything is written.

One invalid user makes ZITADEL reject a whole import request (docs/zitadel-import-api.md#validation, zitadel/zitadel#10417),
so every entry is checked here with the same rules and rejected entries become dead letters with a
stable reason code. Fields whose problem does not change who can log in (a phone without ``+``, a
too-long language tag) are dropped and counted instead of rejecting the user.

Example::

    >>> opts = ValidationOptions()
    >>> result = validate_user({"userId": "1", "user": {"userName": "a@b.co",
    ...     "profile": {"firstName": "A", "lastName": "B"},
    ...     "email": {"email": "a@b.co", "isEmailVerified": True}}}, opts)
    >>> result.reason is None
    True
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from transforms.common.reasons import Reason  # re-exported: the reason codes predate their own module
from transforms.hashing.convert import ConvertedHash, HashFailure, parse_hash
from transforms.hashing.policy import HashPolicy

__all__ = [
    "CONTROL_CHARS_REMOVED",
    "LANGUAGE_DROPPED",
    "PHONE_DROPPED",
    "DERIVED_ID",
    "EMAIL_FALLBACK",
    "Reason",
    "ValidationOptions",
    "ValidationResult",
    "validate_user",
    "hash_problem",
    "check_hash",
    "valid_email",
    "base_language",
    "MAX_NAME",
    "otp_problem",
    "normalise_otp",
    "idp_link_problem",
    "control_char_problem",
    "clean_text",
    "CONTROL_CHARS_REMOVED",
]

MAX_NAME = 200
MAX_PHONE = 50
MAX_LANGUAGE = 10
MAX_METADATA_KEY = 200
MAX_METADATA_VALUE = 500_000


@dataclasses.dataclass(frozen=True)
class ValidationOptions:
    """Limits that can differ between ZITADEL instances."""

    # --bcrypt-min-cost/--bcrypt-max-cost; None: from hash_policy (or 10..16 without one).
    bcrypt_min_cost: int | None = None
    bcrypt_max_cost: int | None = None
    # Hash families a source may produce. "other" admits the remaining formats the server
    # verifies (scrypt, md5 variants, sha2 crypt, phpass, drupal7).
    allowed_hash_families: tuple[str, ...] = ("bcrypt",)
    # The target's verifiers and limits (transforms/hashing/policy.py, HashPolicy); None: format and
    # bcrypt cost only (push, which leaves the rest to the server and warns from the manifest).
    hash_policy: HashPolicy | None = None


@dataclasses.dataclass
class ValidationResult:
    """``reason`` is None when the user passes; ``notes`` lists fields dropped (counted)."""

    reason: str | None = None
    detail: str = ""
    notes: list[str] = dataclasses.field(default_factory=list)


# The e-mail rule ZITADEL's domain layer applies (domain.EmailRegex) plus RFC 5321 lengths.
_EMAIL_RE = re.compile(
    r"^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
    r"(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$"
)
_LANGUAGE_RE = re.compile(r"^[a-zA-Z]{2,8}$")
# An RFC 4648 base32 TOTP secret (Auth0's otp_secret, ZITADEL's otpCode), padding optional.
_BASE32_RE = re.compile(r"^[A-Z2-7]{16,128}=*$")
MAX_PASSWORD = 200

# C0 controls (U+0000-U+001F) and DEL (docs/source-schemas.md). TAB, LF and CR are controls
# too: names and identifiers are single-line text, so the README's "Text rules" treat them like
# the rest, except that in a name they separate words and become a space (see clean_text).
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_WHITESPACE_CONTROL_RE = re.compile(r"[\t\n\r]+")
# Notes: what a user lost on the way, counted as ``notes.<note>`` (transforms/common/counters.py)
# and listed by the summary (pipeline/report.py).
CONTROL_CHARS_REMOVED = "control-chars-removed"  # a name lost control characters
LANGUAGE_DROPPED = "language-dropped"  # no valid base language
PHONE_DROPPED = "phone-dropped"  # not +..., or over 50 characters
DERIVED_ID = "derived-id"  # the source had no id (transforms/mapping/ids.py)
EMAIL_FALLBACK = "email-fallback"  # the e-mail came from --email-fallback
# Fields that are free text: control characters are removed. Every other text field is an
# identity or login (userName, e-mail, userId, idp configId/externalUserId, metadata keys): a
# control character there makes the user a dead letter naming the field.
_CLEANED_PROFILE_FIELDS = ("firstName", "lastName", "nickName", "displayName")


def clean_text(value: str) -> str:
    """``value`` with TAB/LF/CR runs turned into one space, other C0 controls and DEL removed,
    and the ends trimmed when anything changed (``"Ann\\tLee\\x00"`` → ``"Ann Lee"``)."""
    if value.isprintable() or _CONTROL_RE.search(value) is None:  # isprintable: the fast path
        return value
    return _CONTROL_RE.sub("", _WHITESPACE_CONTROL_RE.sub(" ", value)).strip()


def control_char_problem(value: object, field: str) -> tuple[str, str] | None:
    """``(control-characters, detail naming field)`` when ``value`` is a string holding a C0
    control character or DEL; the detail names the code point, never the value."""
    if isinstance(value, str) and not value.isprintable():  # C0 and DEL are never printable
        found = _CONTROL_RE.search(value)
        if found is not None:
            return Reason.CONTROL_CHARACTERS, f"{field} contains control character U+{ord(found.group()):04X}"
    return None


def valid_email(email: str) -> bool:
    """True when ZITADEL accepts ``email`` as a user's address."""
    if not email or len(email) > 254:
        return False
    local, _, _ = email.rpartition("@")
    return len(local) <= 64 and _EMAIL_RE.match(email) is not None


def base_language(locale: object) -> str | None:
    """``fr-FR`` → ``fr``, ``en-u-rg-uszzzz`` → ``en``; None when nothing valid remains."""
    if not isinstance(locale, str):
        return None
    base = re.split(r"[-_]", locale.strip(), maxsplit=1)[0]
    if not _LANGUAGE_RE.match(base) or len(base) > MAX_LANGUAGE:
        return None
    return base.lower()


def hash_problem(value: object, opts: ValidationOptions) -> tuple[str, str] | None:
    """Return ``(reason, detail)`` when ``value`` is not a hash the server can verify, else None."""
    checked = check_hash(value, opts)
    return None if checked.__class__ is ConvertedHash else checked


def check_hash(value: object, opts: ValidationOptions) -> Any:
    """The parsed hash (transforms.hashing.convert.ConvertedHash) when the server can verify ``value``,
    else ``(reason, detail)``.

    The format rules are transforms/hashing/convert.py's (passwap's parsers); with ``opts.hash_policy``
    the target's verifiers and limits apply too (transforms/hashing/policy.py), the bcrypt cost
    options overriding its Bcrypt limits when set. The detail never contains the hash itself.
    """
    parsed = parse_hash(value)
    if isinstance(parsed, HashFailure):
        return parsed.reason, parsed.detail
    family = parsed.verifier if parsed.verifier in ("bcrypt", "argon2", "pbkdf2") else "other"
    if family not in opts.allowed_hash_families:
        return Reason.INVALID_HASH, f"{parsed.algorithm} hashes cannot be imported from this source"
    policy = opts.hash_policy
    if policy is None:
        cost = parsed.param("cost")
        low, high = opts.bcrypt_min_cost or 10, opts.bcrypt_max_cost or 16
        if cost is not None and not low <= cost <= high:
            return Reason.BCRYPT_COST, f"bcrypt cost {cost} outside {low}..{high}"
        return parsed
    overrides = {}
    if opts.bcrypt_min_cost is not None:
        overrides["Bcrypt_MinCost"] = opts.bcrypt_min_cost
    if opts.bcrypt_max_cost is not None:
        overrides["Bcrypt_MaxCost"] = opts.bcrypt_max_cost
    failure = (policy.with_limits(**overrides) if overrides else policy).check(parsed)
    return (failure.reason, failure.detail) if failure is not None else parsed


def otp_problem(value: object) -> tuple[str, str] | None:
    """``(reason, detail)`` when ``value`` is not a base32 TOTP secret (the detail omits it)."""
    if not isinstance(value, str) or not _BASE32_RE.match(value.strip().upper().replace(" ", "")):
        return Reason.INVALID_OTP_SECRET, "OTP secret is not base32 (16-128 characters of A-Z, 2-7)"
    return None


def normalise_otp(value: str) -> str:
    """Authenticator apps show secrets in groups and lower case; the server wants plain base32."""
    return value.strip().upper().replace(" ", "")


def idp_link_problem(link: object) -> tuple[str, str] | None:
    if not isinstance(link, dict):
        return Reason.INVALID_IDP_LINK, "idps entry is not an object"
    for key in ("configId", "externalUserId"):
        value = link.get(key)
        if not isinstance(value, str) or not value or len(value) > MAX_NAME:
            return Reason.INVALID_IDP_LINK, f"idps entry {key} is not a string of 1-{MAX_NAME} characters"
    display = link.get("displayName")
    if display is not None and (not isinstance(display, str) or len(display) > MAX_NAME):
        return (
            Reason.INVALID_IDP_LINK,
            f"idps entry displayName is not a string of at most {MAX_NAME} characters",
        )
    return None


def _check_len(value: object, what: str, reason: str) -> tuple[str, str] | None:
    if not isinstance(value, str) or not value:
        return reason, f"{what} is empty"
    if len(value) > MAX_NAME:
        return reason, f"{what} is {len(value)} characters (at most {MAX_NAME})"
    return None


def _identity_control_chars(entry: dict[str, Any], user: dict[str, Any]) -> tuple[str, str] | None:
    """A control character in a field that names or logs in the user (README "Text rules")."""
    email = user.get("email")
    # The e-mail before userName: sources fall back to the address as userName.
    problem = (
        control_char_problem(entry.get("userId"), "userId")
        or control_char_problem(email.get("email") if isinstance(email, dict) else None, "email")
        or control_char_problem(user.get("userName"), "userName")
    )
    links = user.get("idps")
    if problem is None and isinstance(links, list):
        for link in links:
            if isinstance(link, dict):
                problem = control_char_problem(link.get("configId"), "idps.configId") or control_char_problem(
                    link.get("externalUserId"), "idps.externalUserId"
                )
                if problem is not None:
                    break
    return problem


def _clean_names(user: dict[str, Any], result: ValidationResult) -> None:
    """Remove control characters from the free-text names, noting it once per user."""
    changed = False
    profile = user.get("profile")
    if isinstance(profile, dict):
        for key in _CLEANED_PROFILE_FIELDS:
            value = profile.get(key)
            if isinstance(value, str) and value != (cleaned := clean_text(value)):
                profile[key] = cleaned
                changed = True
        for key in ("nickName", "displayName"):
            if profile.get(key) == "":  # optional: an empty one is left out, not rejected
                del profile[key]
    links = user.get("idps")
    if isinstance(links, list):
        for link in links:
            value = link.get("displayName") if isinstance(link, dict) else None
            if isinstance(value, str) and value != (cleaned := clean_text(value)):
                link["displayName"] = cleaned
                changed = True
    if changed:
        result.notes.append(CONTROL_CHARS_REMOVED)


def validate_user(entry: dict[str, Any], opts: ValidationOptions) -> ValidationResult:
    """Check one ``humanUsers`` entry in place against the import API's rules.

    Rejections return a reason; fixable fields (phone, preferred language) are removed from
    ``entry`` and named in ``notes`` (``phone-dropped``, ``language-dropped``). Control
    characters are removed from names (note ``control-chars-removed``) and reject the user in
    identity fields (README "Text rules").
    """
    result = ValidationResult()
    user = entry.get("user") or {}
    user_id = entry.get("userId")
    if user_id is not None and (not isinstance(user_id, str) or len(user_id) > MAX_NAME):
        result.reason, result.detail = (
            Reason.INVALID_USER_ID,
            "userId is not a string of at most 200 characters",
        )
        return result
    problem = _identity_control_chars(entry, user)
    if problem is not None:
        result.reason, result.detail = problem
        return result
    _clean_names(user, result)
    problem = _check_len(user.get("userName"), "userName", Reason.INVALID_USERNAME)
    profile = user.get("profile") or {}
    problem = problem or _check_len(profile.get("firstName"), "firstName", Reason.INVALID_FIRST_NAME)
    problem = problem or _check_len(profile.get("lastName"), "lastName", Reason.INVALID_LAST_NAME)
    if problem is None:
        email = (user.get("email") or {}).get("email")
        if not email:
            problem = Reason.MISSING_EMAIL, "no e-mail address"
        elif not valid_email(email):
            problem = Reason.INVALID_EMAIL, f"'{email}' is not a valid e-mail address"
    if problem is None and "hashedPassword" in user:
        hashed = user["hashedPassword"]
        problem = hash_problem(hashed.get("value") if isinstance(hashed, dict) else None, opts)
    if problem is None and "password" in user:
        # A plaintext password (Keycloak --allow-plaintext-passwords, hand-written bodies): the
        # server applies its password complexity policy, which cannot be checked here.
        password = user["password"]
        if "hashedPassword" in user:
            problem = Reason.INVALID_PASSWORD, "both password and hashedPassword are set"
        elif not isinstance(password, str) or not password or len(password) > MAX_PASSWORD:
            problem = Reason.INVALID_PASSWORD, f"password is not a string of 1-{MAX_PASSWORD} characters"
    if problem is None and "otpCode" in user:
        problem = otp_problem(user["otpCode"])
    if problem is None and "idps" in user:
        links = user["idps"]
        if not isinstance(links, list):
            problem = Reason.INVALID_IDP_LINK, "idps is not a list"
        else:
            problem = next((p for p in map(idp_link_problem, links) if p is not None), None)
    if problem is not None:
        result.reason, result.detail = problem
        return result
    for key in ("nickName", "displayName"):
        if isinstance(profile.get(key), str) and len(profile[key]) > MAX_NAME:
            del profile[key]
            result.notes.append(f"{key.lower()}-dropped")
    language = profile.get("preferredLanguage")
    if language is not None:
        base = base_language(language)
        if base is None:
            del profile["preferredLanguage"]
            result.notes.append(LANGUAGE_DROPPED)
        elif base != language:
            profile["preferredLanguage"] = base
    phone = user.get("phone")
    if phone is not None:
        number = phone.get("phone")
        if not isinstance(number, str) or not number.startswith("+") or len(number) > MAX_PHONE:
            del user["phone"]
            result.notes.append(PHONE_DROPPED)
    return result
