"""One AspNetUsers row and its side-table rows → a ZITADEL ``humanUsers`` entry, or why it is none.

Columns are read by name (``source.key``: case and underscores ignored), in both layouts: ASP.NET
Core Identity (``LockoutEnd`` with an offset, ``Normalized*``) and Identity 2 (``LockoutEndDateUtc``,
UTC). A cell that is empty or the text ``NULL`` is NULL (:func:`canonical`). Pure: no Beam
(docs/aspnet.md: each rule and its source).

Example::

    map_row(canonical({"Id": "5b2f", "UserName": "amy@example.com", "Email": "amy@example.com",
                       "EmailConfirmed": "1", "PasswordHash": "AQAAAAIAAYag...", "LockoutEnabled": "1"}),
            Side(), AspnetOptions(now=time.time()))
    # MappedUser(entry={"userId": "5b2f", "user": {"userName": "amy@example.com", ...}}, ...)
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import math
import re
from collections.abc import Mapping
from typing import NamedTuple

import orjson

from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure
from transforms.hashing.forms import Rewritten, to_passwap
from transforms.hashing.policy import OnUnsupportedHash
from transforms.mapping.fields import counter_safe
from transforms.mapping.idp_links import LinkFields, idp_links
from transforms.mapping.ids import EmailChoice, email_or_fallback
from transforms.mapping.validate import (
    MAX_METADATA_KEY,
    MAX_METADATA_VALUE,
    PHONE_DROPPED,
    ValidationOptions,
    normalise_otp,
    otp_problem,
    validate_user,
)
from transforms.sources.aspnet import key

__all__ = [
    "AspnetOptions",
    "Side",
    "MappedUser",
    "Refusal",
    "map_row",
    "canonical",
    "IDENTITY",
    "NOT_CARRIED",
    "NAME_COLUMNS",
    "STORE",
]

# Identity's own columns, as key() gives them → their spelling (IdentityUser's properties).
IDENTITY = {
    key(name): name
    for name in (
        "Id UserName NormalizedUserName Email NormalizedEmail EmailConfirmed PasswordHash SecurityStamp "
        "ConcurrencyStamp PhoneNumber PhoneNumberConfirmed TwoFactorEnabled LockoutEnd LockoutEndDateUtc "
        "LockoutEnabled AccessFailedCount"
    ).split()
}
# Identity's columns ZITADEL has no field for (docs/fields-not-carried.md): counted, never metadata.
NOT_CARRIED = frozenset(
    {"NormalizedUserName", "NormalizedEmail", "SecurityStamp", "ConcurrencyStamp", "AccessFailedCount"}
)
# An ApplicationUser's own columns (key()) or a claim type's last URI segment (key()) → the name part.
NAME_COLUMNS = {"firstname": "first", "givenname": "first", "lastname": "last", "familyname": "last"}
NAME_COLUMNS |= {"surname": "last", "displayname": "display", "fullname": "display"}
NAME_CLAIMS = {"givenname": "first", "familyname": "last", "surname": "last", "name": "display"}
NAME_CLAIMS |= {"nickname": "nick", "locale": "language"}
_TRUE, _FALSE = frozenset({"1", "t", "true", "y", "yes"}), frozenset({"0", "f", "false", "n", "no"})
_INFINITE = {"infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}
_OFFSET_SPACE = re.compile(r"\s+(?=[+-]\d{2}(?::?\d{2})?$)")
_E164 = re.compile(r"\+[1-9][0-9]{6,14}")
# UserStoreBase: the authenticator key and recovery codes are tokens of this LoginProvider.
STORE = "[AspNetUserStore]"
_LINKS = LinkFields(
    "logins",
    "LoginProvider",
    "ProviderKey",
    display=lambda user, entry, external: str(user.get("email") or external),
)


@dataclasses.dataclass(frozen=True)
class AspnetOptions:
    now: float  # the run's "now" (seconds since the epoch): a lockout ending later is in force
    include_blocked: bool = False  # --include-blocked or --state
    metadata: bool = False  # --metadata: custom columns and claims not taken as names → metadata
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.DEAD_LETTER
    email_fallback: str | None = None
    validation: ValidationOptions = dataclasses.field(default_factory=ValidationOptions)
    idp_map: tuple[tuple[str, str], ...] = ()
    logins: tuple[str, ...] = ()  # the side tables' files
    tokens: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()
    delimiters: tuple[tuple[str, str], ...] = ()  # (path, delimiter) of each file read; "," if not

    def delimiter(self, path: str) -> str:
        return dict(self.delimiters).get(path, ",")


@dataclasses.dataclass
class Side:
    """One user's rows of the side tables."""

    logins: list[dict[str, str]] = dataclasses.field(default_factory=list)
    tokens: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)  # (provider, name) → value
    claims: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (type, value)


@dataclasses.dataclass
class MappedUser:
    entry: dict[str, object]
    metadata: list[dict[str, str]]
    metadata_dropped: int  # over ZITADEL's key or value limit
    locked: bool
    converted: ConvertedHash | None  # the hash written
    dropped_hash: HashFailure | None  # --on-unsupported-hash=import-without-password
    outcome: Rewritten | None  # the hash's form, counted
    link_outcomes: list[tuple[str, str]]
    otp_not_carried: list[str]
    phone_cause: str | None  # why PhoneNumber was not carried
    claims_used: int
    not_carried: tuple[str, ...]  # side-table names not carried (tokens, claims)
    notes: list[str]


class Refusal(NamedTuple):
    reason: str
    detail: str
    locked: bool = False
    failure: HashFailure | None = None
    outcome: Rewritten | None = None


def canonical(row: Mapping[str, str]) -> dict[str, str]:
    """The row's cells that are not NULL, Identity's columns under their own spelling."""
    cells = {}
    for name, value in row.items():
        text = value.strip() if isinstance(value, str) else ""
        if text and text != "NULL":
            cells[IDENTITY.get(key(name), name.strip())] = text
    return cells


def _flag(cells: Mapping[str, str], column: str) -> bool | None:
    """A bit/boolean cell (``1``/``0``, ``t``/``f``, ``True``/``False``); NULL is false; None: not one."""
    text = cells.get(column, "0").lower()
    return True if text in _TRUE else False if text in _FALSE else None


def _instant(text: str) -> float | None:
    """``LockoutEnd`` as a timestamp: ``2126-01-01 00:00:00.0000000 +00:00``, ``...+00``, ISO 8601,
    ``infinity``; without an offset it is UTC (Identity 2's ``LockoutEndDateUtc``, MySQL)."""
    if text.lower() in _INFINITE:
        return _INFINITE[text.lower()]
    try:
        moment = datetime.datetime.fromisoformat(_OFFSET_SPACE.sub("", text))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _lockout(cells: Mapping[str, str], now: float) -> bool | Refusal:
    """Identity's ``IsLockedOutAsync``: LockoutEnabled and a LockoutEnd not before ``now``."""
    enabled = _flag(cells, "LockoutEnabled")
    column = "LockoutEnd" if "LockoutEnd" in cells else "LockoutEndDateUtc"
    if enabled is None:
        return Refusal(Reason.INVALID_FIELD_TYPE, "LockoutEnabled is not a bit (1/0, t/f, true/false)")
    if not enabled or column not in cells:
        return False
    end = _instant(cells[column])
    if end is None:
        return Refusal(Reason.INVALID_FIELD_TYPE, f"{column} {cells[column][:40]!r} is not a date and time")
    return end >= now


def _names(cells: Mapping[str, str], side: Side, user_name: str) -> tuple[dict[str, object], int]:
    """The profile from name columns, else from claims; and how many claims it used."""
    parts: dict[str, str] = {}
    for name, value in cells.items():
        part = NAME_COLUMNS.get(key(name))
        if part and part not in parts:
            parts[part] = value
    used = 0
    for claim, value in side.claims:
        part = NAME_CLAIMS.get(key(claim.rsplit("/", 1)[-1]))
        if part and value.strip() and part not in parts:
            parts[part], used = value.strip(), used + 1
    first, _, last = parts.get("display", "").rpartition(" ")
    profile: dict[str, object] = {
        "firstName": parts.get("first") or first or last or user_name,
        "lastName": parts.get("last") or last or user_name,
    }
    for part, field in (("display", "displayName"), ("nick", "nickName"), ("language", "preferredLanguage")):
        if part in parts:
            profile[field] = parts[part]
    return profile, used


def _phone(text: str) -> tuple[str | None, str | None]:
    """Free text → E.164 (spaces, dots, dashes, brackets, slashes removed; ``00`` read as ``+``),
    or the cause it is not carried: a number without a country code cannot be guessed."""
    number = re.sub(r"[\s.()/-]", "", text)
    if number.startswith("00"):
        number = "+" + number[2:]
    if _E164.fullmatch(number):
        return number, None
    return None, "not-e164" if number.startswith("+") else "no-country-code"


def _password(value: str | None, options: AspnetOptions, body: dict[str, object]):
    """``PasswordHash`` → ``hashedPassword`` in ``body``: (written, dropped, form outcome) or a Refusal."""
    if not value:
        return None, None, None
    outcome = to_passwap(value)
    converted = outcome.converted
    failure = None
    if converted is None:
        failure = HashFailure(outcome.code or Reason.INVALID_HASH, outcome.reason or "not a hash")
    elif options.validation.hash_policy is not None:
        failure = options.validation.hash_policy.check(converted)
        if failure is not None:
            outcome = outcome._replace(encoded=None, converted=None, code=failure.reason)
    if failure is None and converted is not None:
        body["hashedPassword"] = {"value": converted.value}
        return converted, None, outcome
    assert failure is not None
    if options.on_unsupported_hash == OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD:
        return None, failure, outcome
    return Refusal(failure.reason, failure.detail, failure=failure, outcome=outcome)


def _otp(cells: Mapping[str, str], side: Side, body: dict[str, object]) -> list[str]:
    """The authenticator key → ``otpCode`` when two-factor is on; the causes of what is not carried."""
    enabled = _flag(cells, "TwoFactorEnabled")
    secret = side.tokens.get((STORE, "AuthenticatorKey"))
    causes = ["recovery-codes"] if (STORE, "RecoveryCodes") in side.tokens else []
    if secret is None:
        return causes + (["no-authenticator-key"] if enabled else [])
    if not enabled:
        return [*causes, "two-factor-off"]
    if otp_problem(secret) is not None:
        return [*causes, "not-base32"]
    body["otpCode"] = normalise_otp(secret)
    return causes


def _metadata(cells: Mapping[str, str], side: Side, used: int) -> tuple[list[dict[str, str]], int, int]:
    """Custom columns and the claims not taken as names → ``{key, value (base64)}``; how many broke
    ZITADEL's limits, and the claims used. A claim type held more than once: its values as a JSON list."""
    extra = [
        (k, v.encode()) for k, v in cells.items() if k not in IDENTITY.values() and key(k) not in NAME_COLUMNS
    ]
    claims: dict[str, list[str]] = {}
    for claim, value in side.claims:
        if NAME_CLAIMS.get(key(claim.rsplit("/", 1)[-1])) is None:
            claims.setdefault(claim, []).append(value)
    for claim, values in claims.items():
        extra.append((claim, values[0].encode() if len(values) == 1 else orjson.dumps(values)))
        used += len(values)
    kept = [(k, v) for k, v in extra if len(k) <= MAX_METADATA_KEY and len(v) <= MAX_METADATA_VALUE]
    entries = [{"key": k, "value": base64.b64encode(v).decode("ascii")} for k, v in kept]
    return entries, len(extra) - len(kept), used


def _not_carried(side: Side, metadata: bool, used: int) -> tuple[str, ...]:
    """Names (``FieldTally`` extras) of the side rows not carried: other tokens, claims without --metadata."""
    names = [f"AspNetUserTokens.{counter_safe(name)}" for provider, name in side.tokens if provider != STORE]
    if not metadata and len(side.claims) > used:
        names.append("AspNetUserClaims")
    return tuple(sorted(set(names)))


def map_row(cells: Mapping[str, str], side: Side, options: AspnetOptions) -> MappedUser | Refusal:
    """One AspNetUsers row (:func:`canonical`) and its side rows → its entry, or why it is refused."""
    locked = _lockout(cells, options.now)
    if isinstance(locked, Refusal):
        return locked
    if locked and not options.include_blocked:
        return Refusal(
            Reason.BLOCKED, "locked out at the source (--include-blocked imports such users)", True
        )
    user_id, user_name = cells.get("Id", ""), cells.get("UserName") or cells.get("Email", "")
    if not user_id:
        return Refusal(Reason.MISSING_USER_ID, "no Id", locked)
    if not user_name:
        return Refusal(Reason.INVALID_USERNAME, "no UserName and no Email", locked)
    chosen = email_or_fallback(cells.get("Email", ""), options.email_fallback, user_name, user_id)
    if not isinstance(chosen, EmailChoice):
        return Refusal(*chosen, locked)
    confirmed = _flag(cells, "EmailConfirmed"), _flag(cells, "PhoneNumberConfirmed")
    if None in confirmed:
        return Refusal(
            Reason.INVALID_FIELD_TYPE, "EmailConfirmed or PhoneNumberConfirmed is not a bit", locked
        )
    profile, used = _names(cells, side, user_name)
    body: dict[str, object] = {
        "userName": user_name,
        "profile": profile,
        "email": {"email": chosen.email, "isEmailVerified": bool(confirmed[0]) and not chosen.from_fallback},
    }
    phone, phone_cause = _phone(cells["PhoneNumber"]) if "PhoneNumber" in cells else (None, None)
    if phone:
        body["phone"] = {"phone": phone, "isPhoneVerified": bool(confirmed[1])}
    password = _password(cells.get("PasswordHash"), options, body)
    if isinstance(password, Refusal):
        return password._replace(locked=locked)
    converted, dropped_hash, outcome = password
    links, link_outcomes = idp_links(
        {"logins": side.logins, "email": chosen.email}, dict(options.idp_map), _LINKS
    )
    if links:
        body["idps"] = links
    otp_not_carried = _otp(cells, side, body)
    entry: dict[str, object] = {"userId": user_id, "user": body}
    result = validate_user(entry, options.validation)
    if result.reason is not None:
        return Refusal(result.reason, result.detail, locked)
    metadata, dropped, used = _metadata(cells, side, used) if options.metadata else ([], 0, used)
    return MappedUser(
        entry=entry,
        metadata=metadata,
        metadata_dropped=dropped,
        locked=locked,
        converted=converted,
        dropped_hash=dropped_hash,
        outcome=outcome,
        link_outcomes=link_outcomes,
        otp_not_carried=otp_not_carried,
        phone_cause=phone_cause,
        claims_used=used,
        not_carried=_not_carried(side, options.metadata, used),
        notes=list(result.notes) + ([PHONE_DROPPED] if phone_cause else []),
    )
