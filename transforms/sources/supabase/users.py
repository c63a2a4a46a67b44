"""Supabase's ``auth.users`` rows → ZITADEL ``humanUsers`` entries: the mapping and the reader part.

A users file is CSV (psql's ``\\copy ... csv header``, or Studio's "Download CSV", which writes NULL
as ``null``) or Studio's "Copy as JSON" (an array of row objects); columns are read by name
(docs/supabase.md). ``auth.identities`` and ``auth.mfa_factors`` (optional, CSV or JSON) are read
whole by each worker (:class:`SideTables`) and joined by ``user_id``.

Example::

    mapped = map_user(row, SupabaseOptions(), identities=[], factors=[])
    if isinstance(mapped, Refusal): print(mapped.reason, mapped.detail)
    else: print(mapped.entry["userId"], mapped.converted)
"""

from __future__ import annotations

import base64
import collections
import csv
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence

import apache_beam as beam
import ijson
import orjson

from transforms.common import counters
from transforms.common.reasons import Reason
from transforms.common.records import SortKey
from transforms.hashing.convert import ConvertedHash, HashFailure, parse_hash
from transforms.hashing.policy import OnUnsupportedHash
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.fields import FieldTally
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
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    UserRow,
    csv_records,
    encode_user,
    guarded_records,
    row_tallies,
)
from transforms.sources.input_stream import DepthGuard, InputReadError, InputStream, open_input
from transforms.sources.source_parts import ReadUsers
from transforms.sources.supabase import source as sb
from transforms.sources.supabase.source import banned, text

__all__ = [
    "SupabaseFile",
    "SupabaseOptions",
    "MappedUser",
    "Refusal",
    "SideTables",
    "map_user",
    "ReadSupabaseUsers",
    "json_rows",
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


@dataclasses.dataclass(frozen=True)
class Refusal:
    reason: str
    detail: str
    refused: ConvertedHash | None = None  # the target's configuration refused this hash


def _object(record: Mapping[str, object], key: str) -> dict[str, object] | None:
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
    claims, app = _object(record, "raw_user_meta_data"), _object(record, "raw_app_meta_data")
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
    )


# --------------------------------------------------------------------------- side tables


def json_rows(guard: DepthGuard, form: str) -> Iterator[object]:
    """The rows of a JSON file: the elements of an array (``json``) or one object a line (``ndjson``)."""
    if form == "ndjson":
        return ijson.items(guard, "", multiple_values=True, use_float=True)
    return ijson.items(guard, "item", use_float=True)


def _rows(file: SupabaseFile) -> Iterator[dict[str, object] | None]:
    """A side table's rows (None for a row that did not read)."""
    with open_input(file.path) as stream:
        if file.format != "csv":
            for item in json_rows(DepthGuard(stream), file.format):
                yield item if isinstance(item, dict) else None
            return
        for record in csv_records(stream):
            yield record.value if record.problem is None and isinstance(record.value, dict) else None


class SideTables:
    """``auth.identities`` and ``auth.mfa_factors`` by ``user_id``, read whole on each worker;
    ``read``/``unreadable``: rows read per table, and those that did not read (no ``user_id``, bad
    JSON; a file that cannot be read on counts once for its rest, which is not read)."""

    def __init__(self, identities: Sequence[SupabaseFile], factors: Sequence[SupabaseFile]):
        self.identities: dict[str, list[dict[str, object]]] = {}
        self.factors: dict[str, list[dict[str, str]]] = {}
        self.read: collections.Counter[str] = collections.Counter()
        self.unreadable: collections.Counter[str] = collections.Counter()
        for table, files, add in ((IDENTITIES, identities, self._identity), (FACTORS, factors, self._factor)):
            for file in files:
                try:
                    for row in _rows(file):
                        add(row)
                except (ijson.JSONError, csv.Error, ValueError, InputReadError):
                    self.read[table] += 1
                    self.unreadable[table] += 1

    def _identity(self, row: dict[str, object] | None) -> None:
        self.read[IDENTITIES] += 1
        user_id = text(row, "user_id") if row is not None else ""
        data = _object(row, "identity_data") if row is not None else None
        if row is None or not user_id or data is None:
            self.unreadable[IDENTITIES] += 1
            return
        provider = text(row, "provider")
        if provider in OWN_PROVIDERS:
            return  # Supabase's own sign-in: not a link (provider_id is the user id)
        entry: dict[str, object] = {"provider": provider, "provider_id": text(row, "provider_id")}
        entry.update({k: v for k in ("email", "name") if isinstance(v := data.get(k), str)})
        self.identities.setdefault(user_id, []).append(entry)

    def _factor(self, row: dict[str, object] | None) -> None:
        self.read[FACTORS] += 1
        user_id = text(row, "user_id") if row is not None else ""
        if row is None or not user_id:
            self.unreadable[FACTORS] += 1
            return
        keys = ("factor_type", "status", "secret", "created_at")
        self.factors.setdefault(user_id, []).append({k: text(row, k) for k in keys})


# --------------------------------------------------------------------------- the reader part


def _cells(record: Mapping[str, object]) -> dict[str, object]:
    """The row as kept in its body's record and its dead letter: without one-time tokens."""
    return {k: v for k, v in record.items() if k not in TOKENS}


def _had(record: Mapping[str, object], metadata: bool) -> dict[str, object]:
    """The columns that hold something, for the "fields not carried" tally."""
    empty = ("", "f", "false", "{}", "0")
    had = {k: v for k, v in record.items() if k not in _META and text(record, k) not in empty}
    if metadata:  # carried as metadata: not counted
        return had
    claims, app = _object(record, "raw_user_meta_data") or {}, _object(record, "raw_app_meta_data") or {}
    if claims.keys() - USER_CLAIMS:
        had["raw_user_meta_data"] = True
    if app.keys() - APP_SYSTEM:
        had["raw_app_meta_data"] = True
    return had


_META = ("raw_user_meta_data", "raw_app_meta_data")


class _SupabasePart(RecordPart[SupabaseFile]):
    """An ``auth.users`` file's rows (CSV or JSON) → rows (``file_reader.py``)."""

    name, source, file_source = "supabase", sb.SOURCE, sb.FILE_SOURCE
    read, unreadable = sb.USERS_READ, sb.UNREADABLE_FILES

    def __init__(self, options: SupabaseOptions):
        self._options = options

    def setup(self) -> None:
        options = self._options
        self._side = SideTables(options.identities, options.factors)
        self._tally = HashTally()
        not_carried = NOT_CARRIED | (
            set() if options.metadata else {"raw_user_meta_data", "raw_app_meta_data"}
        )
        self._fields = FieldTally(sb.PREFIX, KNOWN, frozenset(not_carried))

    def begin(self, unit: SupabaseFile, counts: collections.Counter[str]) -> None:
        counts[sb.FILES + unit.format] += 1
        if unit.index == 0:  # the side tables, counted once per run
            for table, value in self._side.read.items():
                counts[sb.SIDE_ROWS + table] += value
            for table, value in self._side.unreadable.items():
                counts[sb.SIDE_UNREADABLE + table] += value

    def split(self, unit: SupabaseFile, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        if unit.format != "csv":
            items = functools.partial(json_rows, form=unit.format)
            return guarded_records(open_stream(), items, lambda position: {"position": position})
        return csv_records(open_stream())

    def finish(self) -> None:
        self._tally.publish()

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        row = record.value
        user_id = text(row, "id") if isinstance(row, Mapping) else ""
        links, factors = self._side.identities.get(user_id, ()), self._side.factors.get(user_id, ())
        mapped = map_user(row, self._options, links, factors)
        if isinstance(mapped, Refusal):
            self._tally.refused(mapped.refused)
            return Rejected(mapped.reason, mapped.detail, _cells(row) if isinstance(row, Mapping) else row)
        assert isinstance(row, Mapping)
        counts[sb.USERS_MAPPED] += 1
        if mapped.converted is not None:
            counts[sb.WITH_PASSWORD + mapped.converted.algorithm] += 1
            self._tally.add(mapped.converted)
        elif mapped.dropped_hash is not None:
            counts[sb.PASSWORD_DROPPED + mapped.dropped_hash.reason] += 1
        else:
            counts[sb.WITHOUT_PASSWORD] += 1
        if self._options.metadata:
            counts[sb.METADATA_ENTRIES] += len(mapped.metadata)
            counts[sb.METADATA_DROPPED] += mapped.metadata_dropped
        tallies, line = self._written(row, mapped, len(links), len(factors))
        encoded = encode_user(
            sortkey,
            source=sb.SOURCE,
            user_id=user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            password=mapped.converted.verifier if mapped.converted is not None else "",
            record_json=orjson.dumps(_cells(row)),
            tallies=tallies,
            passwordless=line,
        )
        return UserRow(user_id, encoded)

    def _written(
        self, row: Mapping[str, object], mapped: MappedUser, links: int, factors: int
    ) -> tuple[tuple[str, ...], bytes]:
        """What the summary counts about the user once written: its row's tallies, passwordless line."""
        body = mapped.entry["user"]
        assert isinstance(body, dict)
        names = [f"{sb.IDP_LINKS}{outcome}.{provider}" for outcome, provider in mapped.link_outcomes]
        names += [sb.OTP_NOT_CARRIED + cause for cause in mapped.otp_not_carried]
        names += [sb.SIDE_JOINED + IDENTITIES] * links + [sb.SIDE_JOINED + FACTORS] * factors
        line = b""
        if mapped.dropped_hash is not None:
            email = body.get("email")
            name, line = passwordless(
                mapped.dropped_hash.reason,
                mapped.entry["userId"],
                email.get("email") if isinstance(email, dict) else None,
            )
            names.append(name)
            refused = self._tally.refused_name(mapped.dropped_hash.refused)
            names += [refused] if refused is not None else []
        if mapped.converted is None and "idps" not in body:
            names.append(sb.CANNOT_SIGN_IN)
        names += [sb.BANNED_WRITTEN] if mapped.banned else []
        names += [sb.PHONE_PLUS_ADDED] if mapped.phone_plus else []
        names += [counters.note(note) for note in mapped.notes]
        return row_tallies(self._fields.names(_had(row, self._options.metadata)), names), line


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadSupabaseUsers(beam.PTransform):
    """Planned ``auth.users`` files → ``ReadUsers(rows, dead)``."""

    def __init__(
        self, files: Sequence[SupabaseFile], options: SupabaseOptions, partitions: int, tmp_dir: str | None
    ):
        super().__init__()
        self._read = ReadSourceFiles(files, _SupabasePart(options), partitions=partitions, tmp_dir=tmp_dir)

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        return pbegin | "ReadSupabaseFiles" >> self._read
