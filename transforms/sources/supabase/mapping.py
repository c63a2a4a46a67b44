"""One row of Supabase's ``auth.users`` (its identities and MFA factors) → a ``humanUsers`` entry,
or why it is none: the pure mapping, no Beam.

A row is a CSV record (psql's ``\\copy ... csv header``, or Studio's "Download CSV", which writes
NULL as ``null``) or an object of Studio's "Copy as JSON"; columns are read by name
(docs/supabase.md). The reader (``read.py``) calls :func:`map_user` once per row.

Example::

    mapped = map_user(row, SupabaseOptions(), identities=[], factors=[])
    if isinstance(mapped, Refusal): print(mapped.reason, mapped.detail)
    else: print(mapped.entry["userId"], mapped.converted)
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping, Sequence

import orjson

from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure, parse_hash
from transforms.hashing.policy import OnUnsupportedHash
from transforms.mapping.idp_links import LinkFields, idp_links
from transforms.mapping.ids import EmailChoice, email_or_fallback
from transforms.mapping.validate import (
    EMAIL_FALLBACK,
    MAX_METADATA_KEY,
    MAX_METADATA_VALUE,
    ValidationOptions,
    normalise_otp,
    otp_problem,
    validate_user,
)
from transforms.sources import supabase as sb
from transforms.sources.supabase import banned, text

__all__ = [
    "SupabaseFile",
    "SupabaseOptions",
    "MappedUser",
    "Refusal",
    "map_user",
    "object_column",
    "DELETED",
    "ANONYMOUS",
]

DELETED = "deleted"  # the dead letter of a soft-deleted user (deleted_at set)
ANONYMOUS = "anonymous"  # the dead letter of an anonymous sign-in user (is_anonymous)

# One-time token hashes: not user data, never kept in a row's record or a dead letter.
TOKENS = frozenset(
    "confirmation_token recovery_token email_change_token_new email_change_token_current "
    "phone_change_token reauthentication_token".split()
)
# Columns read for the body (or for whether the user is imported at all).
CARRIED = frozenset(
    "id email encrypted_password email_confirmed_at phone phone_confirmed_at banned_until "
    "deleted_at is_anonymous raw_user_meta_data raw_app_meta_data".split()
)
# Columns that hold nothing of the user to carry: constants, derived or bookkeeping.
IGNORED = frozenset(
    "instance_id aud role confirmed_at updated_at confirmation_sent_at recovery_sent_at "
    "email_change_sent_at phone_change_sent_at reauthentication_sent_at "
    "email_change_confirm_status".split()
)
# Columns ZITADEL has no field for, counted among users written (docs/supabase.md "Not carried").
NOT_CARRIED = frozenset(
    "created_at last_sign_in_at invited_at is_super_admin email_change phone_change is_sso_user".split()
)
KNOWN = CARRIED | IGNORED | TOKENS | NOT_CARRIED
# Claims in raw_user_meta_data the body carries or that repeat a column: not metadata.
USER_CLAIMS = frozenset(
    "sub email email_verified phone phone_verified full_name name given_name family_name "
    "preferred_username user_name locale iss provider_id".split()
)
APP_SYSTEM = frozenset({"provider", "providers"})  # set by Supabase from the identities
# auth.identities providers that are Supabase's own sign-in, not an identity provider.
OWN_PROVIDERS = frozenset({"email", "phone", "anonymous"})
IDENTITIES, FACTORS = "identities", "mfa_factors"


@dataclasses.dataclass(frozen=True)
class SupabaseFile:
    """A planned file: its index (the sort key), path and form (``csv`` or ``json``)."""

    index: int
    path: str
    format: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class SupabaseOptions:
    include_blocked: bool = False  # --include-blocked or --state: banned users are read
    metadata: bool = False  # --metadata
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.DEAD_LETTER
    email_fallback: str | None = None
    idp_map: tuple[tuple[str, str], ...] = ()
    validation: ValidationOptions = ValidationOptions(allowed_hash_families=("bcrypt", "argon2"))
    identities: tuple[SupabaseFile, ...] = ()  # --identities
    factors: tuple[SupabaseFile, ...] = ()  # --mfa-factors


@dataclasses.dataclass
class MappedUser:
    entry: dict[str, object]
    metadata: list[dict[str, str]]
    metadata_dropped: int
    converted: ConvertedHash | None  # the hash written
    dropped_hash: HashFailure | None  # --on-unsupported-hash=import-without-password
    banned: bool
    phone_plus: bool  # '+' added to the stored digits
    link_outcomes: list[tuple[str, str]]
    otp_not_carried: list[str]
    notes: list[str]
    custom_metadata: tuple[str, ...] = ()  # raw_*_meta_data columns holding keys beyond those carried


@dataclasses.dataclass(frozen=True)
class Refusal:
    reason: str
    detail: str
    refused: ConvertedHash | None = None  # the target's configuration refused this hash


def object_column(record: Mapping[str, object], key: str) -> dict[str, object] | None:
    """A jsonb column: an object in Studio's JSON, its text in a CSV; {} for NULL; None when bad."""
    value = record.get(key)
    if isinstance(value, str):
        if not text(record, key):
            return {}
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    if value is None:
        return {}
    return value if isinstance(value, dict) else None


def _claim(claims: Mapping[str, object], *keys: str) -> str:
    for key in keys:
        value = claims.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _phone(stored: str) -> tuple[str, bool]:
    """Supabase stores E.164 digits without '+' (``formatPhoneNumber``): ``4915112345001`` →
    ``+4915112345001``; anything else stays as it is (validation drops it, counted)."""
    if stored.isdigit() and 8 <= len(stored) <= 15 and stored[0] != "0":  # no country code starts with 0
        return "+" + stored, True
    return stored, False


def _names(claims: Mapping[str, object], user_name: str) -> dict[str, object]:
    """given_name/family_name, else full_name/name cut at its first space, else the user name."""
    full = _claim(claims, "full_name", "name")
    first, _, last = full.partition(" ")
    profile: dict[str, object] = {
        "firstName": _claim(claims, "given_name") or first or user_name,
        "lastName": _claim(claims, "family_name") or last.strip() or first or user_name,
    }
    if full:
        profile["displayName"] = full
    if _claim(claims, "locale"):
        profile["preferredLanguage"] = _claim(claims, "locale")
    return profile


def _password(record: Mapping[str, object], options: SupabaseOptions, body: dict[str, object]):
    """``encrypted_password`` → ``hashedPassword``: ``(converted, dropped)`` or a Refusal."""
    value = text(record, "encrypted_password")
    if not value:  # '' (OAuth, magic link, phone OTP, invited): no password
        return None, None
    failure: HashFailure | None
    if value.startswith("{"):
        failure = HashFailure(
            Reason.UNSUPPORTED_HASH,
            "encrypted_password is encrypted with the project's key (GOTRUE_SECURITY_DB_ENCRYPTION): "
            "export it decrypted",
        )
    else:
        parsed = parse_hash(value)
        policy = options.validation.hash_policy
        failure = (policy.check(parsed) if policy else None) if isinstance(parsed, ConvertedHash) else parsed
        if failure is None and isinstance(parsed, ConvertedHash):
            body["hashedPassword"] = {"value": parsed.value}
            return parsed, None
    assert failure is not None
    if options.on_unsupported_hash == OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD:
        return None, failure
    return Refusal(failure.reason, failure.detail, failure.refused)


def _link_display(user: Mapping[str, object], entry: Mapping[str, object], external: str) -> str:
    return _claim(entry, "email", "name") or external


LINKS = LinkFields(
    "identities", "provider", "provider_id", _link_display, own=dict.fromkeys(OWN_PROVIDERS, "supabase")
)


def _otp(factors: Sequence[Mapping[str, str]]) -> tuple[str | None, list[str]]:
    """The newest verified TOTP factor's base32 secret → ``otpCode``; a cause for each other one."""
    usable: list[tuple[str, str]] = []
    causes = []
    for factor in factors:
        kind, secret = factor.get("factor_type", ""), factor.get("secret", "")
        if kind != "totp":
            causes.append(kind or "unknown")
        elif factor.get("status") != "verified":
            causes.append("unverified")
        elif secret.startswith("{"):
            causes.append("encrypted")
        elif otp_problem(secret) is not None:
            causes.append("invalid-secret")
        else:
            usable.append((factor.get("created_at", ""), normalise_otp(secret).rstrip("=")))
    if not usable:
        return None, causes
    causes += ["superseded"] * (len(usable) - 1)
    return max(usable)[1], causes


def _metadata(
    user_claims: Mapping[str, object], app: Mapping[str, object]
) -> tuple[list[dict[str, str]], int]:
    """Custom keys of raw_user_meta_data (as they are) and raw_app_meta_data (``app.<key>``):
    ``{key, value (base64 of its text, JSON for a non-text)}``, and how many exceed ZITADEL's limits."""
    items = [(k, v) for k, v in user_claims.items() if k not in USER_CLAIMS]
    items += [(f"app.{k}", v) for k, v in app.items() if k not in APP_SYSTEM]
    entries, dropped = [], 0
    for key, value in items:
        encoded = value.encode() if isinstance(value, str) else orjson.dumps(value)
        if not encoded or value is None:
            continue
        if len(key) > MAX_METADATA_KEY or len(encoded) > MAX_METADATA_VALUE:
            dropped += 1
            continue
        entries.append({"key": key, "value": base64.b64encode(encoded).decode("ascii")})
    return entries, dropped


def _refused_state(record: Mapping[str, object], options: SupabaseOptions) -> Refusal | None:
    """Soft-deleted, anonymous, or banned (without --include-blocked): not imported."""
    if text(record, "deleted_at"):
        detail = "soft-deleted at Supabase: its e-mail and phone are obfuscated (removed with --state)"
        return Refusal(DELETED, detail)
    if text(record, "is_anonymous") in ("t", "true"):
        return Refusal(ANONYMOUS, "an anonymous sign-in user: no e-mail, phone or password")
    if not options.include_blocked and banned(record):
        until = text(record, "banned_until")
        return Refusal(
            Reason.BLOCKED, f"banned until {until} at Supabase (--include-blocked imports such users)"
        )
    return None


def map_user(
    record: object,
    options: SupabaseOptions,
    identities: Sequence[Mapping[str, object]] = (),
    factors: Sequence[Mapping[str, str]] = (),
) -> MappedUser | Refusal:
    """One ``auth.users`` row (its identities and MFA factors) → its entry, or why it is none."""
    if not isinstance(record, Mapping):
        return Refusal(Reason.NOT_AN_OBJECT, "user is not a JSON object")
    user_id = text(record, "id")
    if not user_id:
        return Refusal(Reason.MISSING_USER_ID, "no id (auth.users.id)")
    refused = _refused_state(record, options)
    if refused is not None:
        return refused
    claims, app = object_column(record, "raw_user_meta_data"), object_column(record, "raw_app_meta_data")
    notes = [] if claims is not None and app is not None else [sb.INVALID_METADATA]
    claims, app = claims or {}, app or {}
    email, phone = text(record, "email").lower(), text(record, "phone")
    phone, plus = _phone(phone)
    user_name = _claim(claims, "preferred_username", "user_name") or email or phone or user_id
    chosen = email_or_fallback(email, options.email_fallback, user_name, user_id)
    if not isinstance(chosen, EmailChoice):
        return Refusal(*chosen)
    verified = bool(text(record, "email_confirmed_at")) and not chosen.from_fallback
    notes += [EMAIL_FALLBACK] if chosen.from_fallback else []
    body: dict[str, object] = {
        "userName": user_name,
        "profile": _names(claims, user_name),
        "email": {"email": chosen.email, "isEmailVerified": verified},
    }
    if phone:
        body["phone"] = {"phone": phone, "isPhoneVerified": bool(text(record, "phone_confirmed_at"))}
    password = _password(record, options, body)
    if isinstance(password, Refusal):
        return password
    converted, dropped = password
    links, outcomes = idp_links({"identities": list(identities)}, dict(options.idp_map), LINKS)
    if links:
        body["idps"] = links
    otp, otp_causes = _otp(factors)
    if otp is not None:
        body["otpCode"] = otp
    entry: dict[str, object] = {"userId": user_id, "user": body}
    result = validate_user(entry, options.validation)
    if result.reason is not None:
        return Refusal(result.reason, result.detail)
    metadata, too_big = _metadata(claims, app) if options.metadata else ([], 0)
    custom = (
        ("raw_user_meta_data", claims.keys() - USER_CLAIMS),
        ("raw_app_meta_data", app.keys() - APP_SYSTEM),
    )
    return MappedUser(
        entry=entry,
        metadata=metadata,
        metadata_dropped=too_big,
        converted=converted,
        dropped_hash=dropped,
        banned=banned(record),
        phone_plus=plus and "phone" in body,
        link_outcomes=[(o, p) for o, p in outcomes if o != "supabase"],
        otp_not_carried=otp_causes,
        notes=notes + list(result.notes),
        custom_metadata=tuple(column for column, keys in custom if keys),
    )
