"""One Clerk user → a ZITADEL ``humanUsers`` entry, or the reason it is none: pure, no Beam
(docs/clerk.md; the reader is ``read.py``).

One mapping reads every form: the Dashboard CSV (multi-valued cells split on ``,``, ``|`` or ``;``;
Clerk's formula guard, a TAB before a value starting with ``= + - @``, stripped), the support
ticket's JSON (``email_addresses`` as ``a|b``), the migration tool's JSON (lists) and the
``clerk migrate export`` envelope (``users``, ``banned``, ``external_accounts``).

Example::

    mapped = map_user({"id": "user_1", "primary_email_address": "ann@example.com",
                       "verified_email_addresses": "ann@example.com",
                       "password_digest": "$2b$10$...", "password_hasher": "bcrypt"}, ClerkOptions())
    mapped.entry["user"]["email"]  # {"email": "ann@example.com", "isEmailVerified": True}
"""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import orjson

from transforms.common import counters
from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure, shown
from transforms.hashing.forms import HashForm, Rewritten, to_passwap
from transforms.hashing.hashers import by_hasher
from transforms.hashing.policy import HashPolicy, OnUnsupportedHash
from transforms.mapping.idp_links import LinkFields, idp_links
from transforms.mapping.ids import EmailChoice, email_or_fallback
from transforms.mapping.otp import keycloak_otp
from transforms.mapping.validate import MAX_METADATA_KEY, MAX_METADATA_VALUE, ValidationOptions, validate_user
from transforms.sources import clerk as ck

__all__ = [
    "ClerkOptions",
    "MappedUser",
    "Refusal",
    "map_user",
    "clerk_hash",
    "text",
    "values",
    "KNOWN_FIELDS",
    "NOT_CARRIED",
    "METADATA_FIELDS",
]

_GUARD = re.compile(r"\t(?=[=+\-@\t\r\n＝＋－＠])")
_SEPARATORS = re.compile(r"[,|;]")
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")
_AWSCOGNITO = "awscognito"  # a marker of a user moved from Cognito who never signed in: no hash
# What the mapping reads, and what it cannot carry (counted per field among users written).
KNOWN_FIELDS = frozenset(
    "id first_name last_name username primary_email_address primary_phone_number email_addresses "
    "phone_numbers verified_email_addresses unverified_email_addresses verified_phone_numbers "
    "unverified_phone_numbers totp_secret password_digest password_hasher banned locked "
    "external_accounts public_metadata private_metadata unsafe_metadata".split()
)
NOT_CARRIED = frozenset(
    "has_image image_url profile_image_url backup_codes backup_codes_enabled created_at updated_at "
    "legal_accepted_at last_sign_in_at last_active_at create_organization_enabled "
    "create_organizations_limit delete_self_enabled external_id two_factor_enabled".split()
)
METADATA_FIELDS = ("public_metadata", "private_metadata", "unsafe_metadata")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClerkOptions:
    include_blocked: bool = False  # --include-blocked or --state
    trust_email: bool = False  # an address of unknown verification arrives verified
    trust_phone: bool = False
    metadata: bool = False  # --metadata: the three metadata objects → metadata
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.DEAD_LETTER
    email_fallback: str | None = None
    validation: ValidationOptions = dataclasses.field(default_factory=ValidationOptions)
    idp_map: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass
class MappedUser:
    entry: dict[str, object]
    metadata: list[dict[str, str]]
    metadata_dropped: int
    hash: Rewritten | None  # the digest's form outcome (written, or refused and dropped)
    dropped: HashFailure | None  # the digest imported without (--on-unsupported-hash)
    tallies: list[str]  # counter names of the user once written
    counts: list[str]  # counter names of the user once mapped


class Refusal(NamedTuple):
    reason: str
    detail: str
    hash: Rewritten | None = None
    refused: ConvertedHash | None = None


# --------------------------------------------------------------------------- cells


def text(value: object) -> str:
    """A value's text without Clerk's formula guard (exactly one TAB before ``= + - @``), trimmed."""
    if type(value) is not str:  # parsed cells are exact str: the cheap check first, per cell
        return value.strip() if isinstance(value, str) else ""
    if value[:1] == "\t" and _GUARD.match(value):
        value = value[1:]
    return value.strip()


def values(value: object) -> list[str]:
    """A multi-valued cell (``a,b``, ``a|b``) or a JSON list → its distinct values, in order."""
    if not value:
        return []
    if isinstance(value, str):
        items: Sequence[object] = _SEPARATORS.split(value) if _SEPARATORS.search(value) else (value,)
    else:
        items = value if isinstance(value, list) else ()
    found: list[str] = []
    for item in items:
        one = text(item)
        if one and one not in found:
            found.append(one)
    return found


class _Address(NamedTuple):
    value: str
    verified: bool | None  # None: the export does not say
    others: int  # distinct addresses besides it
    chosen: bool  # no primary named: the first address taken


def _address(record: Mapping[str, object], kind: str, plural: str) -> _Address:
    """The primary e-mail or phone, whether it is verified (it is iff it is among the verified
    ones), and how many others the user has (ZITADEL holds one)."""
    verified_key, unverified_key = "verified_" + plural, "unverified_" + plural
    verified = values(record.get(verified_key))
    pool = verified + values(record.get(unverified_key)) + values(record.get(plural))
    primary = text(record.get("primary_" + kind))
    said = verified_key in record or unverified_key in record
    if not pool:  # most users: nothing beyond the primary (or nothing at all)
        return _Address(primary, False if said else None, 0, False)
    folded = {p.casefold() for p in pool}
    chosen = not primary and len(folded) > 1
    primary = primary or pool[0]
    key = primary.casefold()
    is_verified = (key in {v.casefold() for v in verified}) if said else None
    return _Address(primary, is_verified, len(folded - {key}), chosen)


# --------------------------------------------------------------------------- hashes


def clerk_hash(
    digest: str, hasher: str, policy: HashPolicy | None
) -> tuple[ConvertedHash | HashFailure, Rewritten | None]:
    """A digest read as its hasher says (never by its look: Clerk's pbkdf2_sha256 and pbkdf2_sha1
    share Django's prefixes) → the hash written or why not, and its form outcome (counted)."""
    name = hasher.strip().lower() or ("bcrypt" if digest.startswith("$2") else "")  # Clerk's default
    read = by_hasher(digest, name)
    if isinstance(read, HashFailure):
        return read, Rewritten(None, HashForm.PBKDF2, read.detail, read.reason)
    if read is None or name == "argon2":  # "argon2" is not one of Clerk's hasher names
        form = None
    else:
        digest, form = read
    if form is None:
        detail = (
            f"password_hasher {shown(hasher) if hasher else '(none)'!r}: no ZITADEL verifier (docs/clerk.md)"
        )
        return HashFailure(Reason.UNSUPPORTED_HASH, detail), None
    outcome = to_passwap(digest, form)
    if outcome.converted is None or outcome.encoded is None:
        return HashFailure(outcome.code or Reason.INVALID_HASH, outcome.reason or "not a hash"), outcome
    refused = policy.check(outcome.converted) if policy is not None else None
    if refused is not None:
        return refused, outcome._replace(encoded=None, converted=None, code=refused.reason)
    return outcome.converted, outcome


# --------------------------------------------------------------------------- one user


def _metadata(record: Mapping[str, object]) -> tuple[list[dict[str, str]], int]:
    """Each key of public/private/unsafe_metadata → ``<object>.<key>``: text as it is, other JSON
    values as JSON; how many were dropped for ZITADEL's limits (counted)."""
    entries, dropped = [], 0
    for name in METADATA_FIELDS:
        found = record.get(name)
        for key, value in found.items() if isinstance(found, Mapping) else ():
            encoded = (
                value.encode("utf-8", "surrogatepass") if isinstance(value, str) else orjson.dumps(value)
            )
            full = f"{name}.{key}"
            if not encoded or value is None:
                continue
            if len(full) > MAX_METADATA_KEY or len(encoded) > MAX_METADATA_VALUE:
                dropped += 1
                continue
            entries.append({"key": full, "value": base64.b64encode(encoded).decode("ascii")})
    return entries, dropped


def _link_display(user: Mapping[str, object], entry: Mapping[str, object], external: str) -> str:
    return text(entry.get("email_address")) or text(entry.get("username")) or external.strip()


EXTERNAL_ACCOUNTS = LinkFields("external_accounts", "provider", "provider_user_id", _link_display)


def _otp(secret: str) -> tuple[str | None, list[str]]:
    """``totp_secret`` (base32; Clerk's TOTP is SHA1, 6 digits, 30 s) checked as Keycloak's OTP
    devices are: the ``otpCode`` ZITADEL verifies, or the cause it is not carried."""
    device = {
        "type": "otp",
        "credentialData": {
            "subType": "totp",
            "algorithm": "HmacSHA1",
            "digits": 6,
            "period": 30,
            "secretEncoding": "BASE32",
        },
        "secretData": {"value": secret},
    }
    return keycloak_otp([device], None)


_Password = tuple[Rewritten | None, HashFailure | None, list[str]]


def _password(
    record: Mapping[str, object], options: ClerkOptions, user: dict[str, object]
) -> _Password | Refusal:
    """``(outcome, dropped, counts)`` of the digest, ``hashedPassword`` set in ``user``; a Refusal."""
    digest, hasher = text(record.get("password_digest")), text(record.get("password_hasher"))
    if not digest:
        return None, None, [ck.NO_PASSWORD]
    if hasher.lower() == _AWSCOGNITO or digest.startswith(_AWSCOGNITO + "#"):
        return None, None, [ck.HASHERS + _AWSCOGNITO, ck.AWSCOGNITO]
    counts = [ck.HASHERS + (re.sub(r"[^a-z0-9_]+", "_", hasher.lower())[:40] or "none")]
    converted, outcome = clerk_hash(digest, hasher, options.validation.hash_policy)
    if isinstance(converted, ConvertedHash) and outcome is not None and outcome.encoded is not None:
        user["hashedPassword"] = {"value": outcome.encoded}
        return outcome, None, counts
    assert isinstance(converted, HashFailure)
    if options.on_unsupported_hash != OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD:
        return Refusal(converted.reason, converted.detail, outcome, converted.refused)
    return outcome, converted, [*counts, ck.PASSWORD_DROPPED + converted.reason]


def map_user(record: object, options: ClerkOptions) -> MappedUser | Refusal:
    """One Clerk user (a CSV row or a JSON object) → its entry, or the reason it is refused."""
    if not isinstance(record, Mapping):
        return Refusal(Reason.NOT_AN_OBJECT, "user is not a JSON object")
    is_blocked = ck.blocked(record)
    if is_blocked and not options.include_blocked:
        return Refusal(Reason.BLOCKED, "banned or locked at Clerk (--include-blocked imports such users)")
    user_id = text(record.get("id"))
    if not user_id:
        return Refusal(Reason.MISSING_USER_ID, "no id (Clerk's user id, user_...)")
    email, phone = (
        _address(record, "email_address", "email_addresses"),
        _address(record, "phone_number", "phone_numbers"),
    )
    username = text(record.get("username"))
    chosen = email_or_fallback(email.value, options.email_fallback, username, user_id)
    if not isinstance(chosen, EmailChoice):
        return Refusal(*chosen)
    login = username or chosen.email
    first, last = text(record.get("first_name")), text(record.get("last_name"))
    verified = (
        options.trust_email if email.verified is None else email.verified
    ) and not chosen.from_fallback
    user: dict[str, object] = {
        "userName": login,
        "profile": {"firstName": first or login, "lastName": last or login},
        "email": {"email": chosen.email, "isEmailVerified": verified},
    }
    if phone.value:
        number = phone.value.translate(str.maketrans("", "", " .-()"))
        phone_verified = options.trust_phone if phone.verified is None else phone.verified
        user["phone"] = {"phone": number, "isPhoneVerified": phone_verified}
    password = _password(record, options, user)
    if isinstance(password, Refusal):
        return password
    outcome, dropped, counts = password
    tallies = [ck.BLOCKED_WRITTEN] if is_blocked else []
    links, outcomes = idp_links(record, dict(options.idp_map), EXTERNAL_ACCOUNTS)
    if links:
        user["idps"] = links
    counts += [f"{ck.IDP_LINKS}{result}.{provider}" for result, provider in outcomes]
    secret, causes = _otp(text(record.get("totp_secret"))) if text(record.get("totp_secret")) else (None, [])
    if secret is not None:
        user["otpCode"] = secret
    tallies += [ck.OTP_NOT_CARRIED + cause for cause in causes]
    tallies += [ck.OTHER_EMAILS] if email.others else []
    tallies += [ck.OTHER_PHONES] if phone.others and "phone" in user else []
    counts += [ck.PRIMARY_CHOSEN] if email.chosen else []
    entry: dict[str, object] = {"userId": user_id, "user": user}
    result = validate_user(entry, options.validation)
    if result.reason is not None:
        return Refusal(result.reason, result.detail, outcome)
    tallies += [counters.note(note) for note in result.notes]
    metadata, dropped_entries = _metadata(record) if options.metadata else ([], 0)
    return MappedUser(entry, metadata, dropped_entries, outcome, dropped, tallies, counts)
