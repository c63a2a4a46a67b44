"""Auth0 exports → user rows: parse profile and password files, join them, map, validate.

Shape of the work (few, large elements; see ``transforms/common/records.py``)::

    files ─ PlanUnits ─ Reshuffle ─ ParseUnits ──► (partition, (kind, blob)) ─ GroupByKey
                                       └─► dead letters (malformed, rejected profiles)
    (partition, [(PROFILES, blob), (PASSWORDS, blob), ...]) ─ JoinPartition ─► (partition, rows_blob)
                                                                     └─► dead letters

ParseUnits does all per-record work (parse, map, validate, encode) in parallel over 32 MB units;
JoinPartition only matches small tuples and splices the chosen hash into the encoded user. The
partition is a stable hash of the e-mail trimmed and case-folded, so a profile and its password
records always meet in the same partition and the join is linear in the input size.

Shapes accepted without flags: password exports keyed ``_id`` or ``_ID`` (``$oid`` objects or
plain strings), the ``"version":"1.1"`` layout (e-mail in ``identifiers[]``, ``last_password_reset``),
Management API profiles with explicit nulls, and bulk-import profiles carrying their own
``custom_password_hash`` (joined like a password record, source ``auth0-custom-hash``).

With MFA files (``--mfa``), the OTP secrets are keyed by ``user_id``, not e-mail, so they take
one more step to reach their profile's partition::

    ParseUnits ─► routes: (hash(user_id), [(ROUTES, blob) from profiles, (MFA, blob) from MFA files])
        ─ GroupByKey ─ RouteMfa ─► (e-mail partition, (MFA, blob)) ─┐ (into GroupPartitions)
                          └─► dead letters (unknown-user)           │

Example::

    result = (pipeline | 'ReadAuth0' >> ReadAuth0Users(profile_files, password_files, options))
    rows, dead = result['rows'], result['dead']
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import pickle
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.common.ids import auth0_user_id, fallback_email
from transforms.common.records import (
    NAMESPACE,
    DeadLetter,
    PartitionRows,
    dead_letter,
    no_gc,
    pack_rows,
    partition_of,
    user_name_key,
)
from transforms.files.spill import load_blob, write_spill
from transforms.hashing.convert import ConvertedHash
from transforms.hashing.policy import DROPPABLE_REASONS
from transforms.hashing.tally import HashTally
from transforms.mapping.fields import FieldTally, counter_safe
from transforms.mapping.otp import auth0_mfa_factors
from transforms.mapping.roles import display_name, grants_from_names, role_names
from transforms.mapping.validate import (
    Reason,
    ValidationOptions,
    check_hash,
    control_char_problem,
    normalise_otp,
    otp_problem,
    validate_user,
)
from transforms.sources import json_units as fileio
from transforms.sources.auth0.mapping import (
    KNOWN_FIELDS,
    custom_password_hash,
    idp_links,
    map_profile,
    metadata_entries,
    normalise_email,
    not_carried_keys,
    password_date,
    password_oid,
    pick_profile,
    record_email,
)

__all__ = [
    "Auth0Options",
    "ReadAuth0Users",
    "map_profile",
    "metadata_entries",
    "normalise_email",
    "password_oid",
    "password_date",
    "with_password",
    "with_otp",
    "PROFILE_SOURCE",
    "PASSWORD_SOURCE",
    "CUSTOM_HASH_SOURCE",
    "MFA_SOURCE",
    "EMBEDDED_UNUSED_PREFIX",
]

_LOGGER = logging.getLogger(__name__)

PROFILE_SOURCE = "auth0-profile"
PASSWORD_SOURCE = "auth0-password"
CUSTOM_HASH_SOURCE = "auth0-custom-hash"
MFA_SOURCE = "auth0-mfa"
ROLE_SOURCE = "auth0-roles"  # --roles-file records (docs/roles.md)
# Kinds of parsed items. CUSTOM_HASHES are the bulk-import schema's ``custom_password_hash``
# (carried by a profile, joined like a password record, so that one accounting covers both);
# ROUTES are ``user_id → partition`` items that take MFA records to their profile's partition.
PROFILES, PASSWORDS, CUSTOM_HASHES, MFA, ROUTES = 0, 1, 2, 3, 4
# ROLE_RECORDS: --roles-file lines, routed by user_id like MFA records (docs/roles.md).
ROLE_RECORDS = 5
_SOURCES = {
    PROFILES: PROFILE_SOURCE,
    PASSWORDS: PASSWORD_SOURCE,
    CUSTOM_HASHES: CUSTOM_HASH_SOURCE,
    MFA: MFA_SOURCE,
    ROLE_RECORDS: ROLE_SOURCE,
}
_READ_COUNTERS = {
    PROFILES: "auth0.profiles_read",
    PASSWORDS: "auth0.passwords_read",
    CUSTOM_HASHES: "auth0.custom_hashes_read",
    MFA: "auth0.mfa_read",
    ROLE_RECORDS: "auth0.role_records_read",
}
_DEAD = "dead"
_ROLES = "roles"
_ROUTES = "routes"
# Counters of a profile's embedded hash that was not used and has no line of its own (it is part
# of the profile's line, or the profile was written with a newer password record's hash).
EMBEDDED_UNUSED_PREFIX = "auth0.custom_hash_unused."


@dataclasses.dataclass(frozen=True)
class Auth0Options:
    """Mapping choices from the command line (all picklable, no clients).

    ``idp_map``: ``(provider, ZITADEL IdP id)`` pairs from ``--idp-map``.
    """

    email_verified: bool = False
    include_blocked: bool = False
    metadata: bool = False
    validation: ValidationOptions = ValidationOptions()
    idp_map: tuple[tuple[str, str], ...] = ()
    # --on-unsupported-hash (transforms/hashing/policy.py): "import-without-password" imports the
    # user without its password and dead-letters the hash record with the reason.
    on_unsupported_hash: str = "dead-letter"
    # --email-fallback TEMPLATE ({username}, {id}): the address of profiles without one (unverified).
    email_fallback: str | None = None
    # Roles (docs/roles.md): --project-id, and --roles-from's dotted path into each profile.
    roles_project: str | None = None
    roles_from: str | None = None

    @property
    def drop_bad_hashes(self) -> bool:
        return self.on_unsupported_hash == "import-without-password"


def _counter(name: str):
    return Metrics.counter(NAMESPACE, name)


# --------------------------------------------------------------------------- DoFns


class _PlanUnitsFn(beam.DoFn):
    """A matched file → the units (byte ranges or whole file) that workers parse."""

    def process(self, element: tuple[int, fileio.InputFile]) -> Iterator[tuple[int, fileio.Unit]]:
        kind, file = element
        for unit in fileio.plan_units(file):
            yield kind, unit


# What the parse step sends to the join, per record (pickled lists; bytes are never re-parsed).
# Profile: (file_index, position, email_key, user_id, name_key, problem, entry_json, meta_json,
#           notes, raw). ``problem`` is None or (reason, detail); a rejected profile is
#           dead-lettered by the parse step and still sent (without entry) so that its password
#           records are accounted for as ``profile-rejected`` instead of ``orphan-password``.
# Password: (file_index, position, email_key, oid, date, hash, raw, kind, target): ``kind`` is
#           PASSWORDS or CUSTOM_HASHES; ``target`` the sortkey of the profile carrying a custom
#           hash (None for password records, which are matched by id and e-mail).
# MFA (after routing): (file_index, position, target_file_index, target_position, secret, raw);
#           role records the same, with the sorted role names instead of the secret. Profiles
#           end with their --roles-from role names (sorted tuple; () without --project-id).
_ProfileItem = tuple[int, int, str, str, str, Any, bytes, bytes, tuple, bytes, tuple]
_PasswordItem = tuple[int, int, str, str, str, str, bytes, int, Any]
_MfaItem = tuple[int, int, int, int, str, bytes]


class _ParseUnitFn(beam.DoFn):
    """Parse, map and validate one unit; emit one ``(partition, (kind, blob))`` per partition.

    Everything that needs only one record happens here, in parallel over units: JSON parsing,
    the zitadel-tools mapping, the import API's profile rules, the metadata, the IdP links. The
    join that follows then only matches small tuples and splices the chosen hash into the user.

    With ``route_mfa``, profiles also emit ``(user_id partition, (ROUTES, blob))`` and MFA
    records ``(user_id partition, (MFA, blob))`` on the ``routes`` output (see ``_RouteMfaFn``).
    """

    def __init__(self, partitions: int, options: Auth0Options, tmp_dir: str, route_mfa: bool = False):
        self._partitions = partitions
        self._options = options
        self._tmp_dir = tmp_dir
        self._route_mfa = route_mfa
        self._roles_path = tuple(options.roles_from.split(".")) if options.roles_from else ()
        self._role_sets: dict[tuple[str, ...], tuple[str, ...]] = {}

    def setup(self):
        self._read = {k: _counter(name) for k, name in _READ_COUNTERS.items()}
        self._metadata_dropped = _counter("auth0.metadata_dropped")
        self._dropped = _counter("auth0.imported_without_password")
        self._tally = HashTally(self._tmp_dir)
        self._idp_map = dict(self._options.idp_map)
        self._counts: collections.Counter[Any] = collections.Counter()
        self._fields = FieldTally("auth0", KNOWN_FIELDS, not_carried_keys(self._options.metadata))

    def process(self, element: tuple[int, fileio.Unit]):
        kind, unit = element
        source = _SOURCES[kind]
        parts: dict[tuple[int, int], list[tuple]] = {}  # (kind, partition) → items
        routes: dict[tuple[int, int], list[tuple]] = {}
        count = 0
        self._counts.clear()
        with no_gc():
            for position, raw, value, error in fileio.read_unit(unit):
                count += 1
                sortkey = (unit.index, position)
                if error is not None:
                    reason = getattr(error, "reason", None) or (
                        Reason.MALFORMED_JSON if raw is not None else Reason.UNREADABLE_INPUT
                    )
                    record: Any = (
                        raw.decode("utf-8", "replace")
                        if raw is not None
                        else {"file": unit.path, "position": position}
                    )
                    yield beam.pvalue.TaggedOutput(_DEAD, dead_letter(sortkey, reason, error, source, record))
                    continue
                if not isinstance(value, dict):
                    yield beam.pvalue.TaggedOutput(
                        _DEAD,
                        dead_letter(
                            sortkey, Reason.NOT_AN_OBJECT, "record is not a JSON object", source, value
                        ),
                    )
                    continue
                if raw is None:
                    raw = orjson.dumps(value)
                if kind == ROLE_RECORDS:
                    problem = _role_record(sortkey, value, raw, routes, self._partitions)
                    if problem is not None:
                        yield beam.pvalue.TaggedOutput(
                            _DEAD, dead_letter(sortkey, problem[0], problem[1], source, orjson.Fragment(raw))
                        )
                    continue
                if kind == MFA:
                    problem = self._mfa(sortkey, value, raw, routes)
                    if problem is not None:
                        yield beam.pvalue.TaggedOutput(
                            _DEAD, dead_letter(sortkey, problem[0], problem[1], source, orjson.Fragment(raw))
                        )
                    continue
                if kind == PROFILES:
                    email = normalise_email(value.get("email"))
                    item = self._profile(sortkey, email, value, raw)
                    # A fallback address joins no password record, so the item's e-mail is the key.
                    _, _, email, user_id, _, profile_problem, *_ = item
                    part = partition_of(email, self._partitions)
                    if profile_problem is not None:
                        reason, detail = profile_problem
                        yield beam.pvalue.TaggedOutput(
                            _DEAD, dead_letter(sortkey, reason, detail, source, orjson.Fragment(raw))
                        )
                    else:
                        custom, hash_problem_ = custom_password_hash(value)
                        if custom is None and hash_problem_ is not None:
                            # Only reached with --on-unsupported-hash=import-without-password
                            # (else the profile itself was dead-lettered): account for the hash.
                            self._read[CUSTOM_HASHES].inc()
                            self._dropped.inc()
                            self._tally.without_password(
                                hash_problem_[0], user_id or None, value.get("email")
                            )
                            key = (
                                "custom_password_hash" if "custom_password_hash" in value else "password_hash"
                            )
                            yield beam.pvalue.TaggedOutput(
                                _DEAD,
                                dead_letter(
                                    sortkey,
                                    hash_problem_[0],
                                    f"{hash_problem_[1]} (user imported without password)",
                                    CUSTOM_HASH_SOURCE,
                                    {"user_id": user_id, "email": value.get("email"), key: value[key]},
                                ),
                            )
                        if custom is not None:
                            self._read[CUSTOM_HASHES].inc()
                            key = (
                                "custom_password_hash" if "custom_password_hash" in value else "password_hash"
                            )
                            record = {"user_id": user_id, "email": value.get("email"), key: value[key]}
                            parts.setdefault((CUSTOM_HASHES, part), []).append(
                                (
                                    sortkey[0],
                                    sortkey[1],
                                    email,
                                    "",
                                    "",
                                    custom,
                                    orjson.dumps(record),
                                    CUSTOM_HASHES,
                                    sortkey,
                                )
                            )
                        if "mfa_factors" in value:
                            factor = self._mfa_factors(sortkey, user_id, value)
                            if factor is not None:
                                parts.setdefault((MFA, part), []).append(factor)
                    if self._route_mfa and user_id:
                        routes.setdefault((ROUTES, partition_of(user_id, self._partitions)), []).append(
                            (user_id, part, sortkey[0], sortkey[1])
                        )
                else:
                    email = record_email(value)
                    problem = _password_problem(value, email)
                    if problem is not None:
                        yield beam.pvalue.TaggedOutput(
                            _DEAD, dead_letter(sortkey, problem[0], problem[1], source, orjson.Fragment(raw))
                        )
                        continue
                    password_item: _PasswordItem = (
                        sortkey[0],
                        sortkey[1],
                        email,
                        password_oid(value),
                        password_date(value),
                        value["passwordHash"],
                        raw,
                        PASSWORDS,
                        None,
                    )
                    part = partition_of(email, self._partitions)
                    parts.setdefault((kind, part), []).append(password_item)
                    continue
                parts.setdefault((kind, part), []).append(item)
        self._read[kind].inc(count)
        self._tally.publish()
        self._fields.flush(self._counts)
        for key, value in self._counts.items():
            if isinstance(key, tuple):  # an identity: (outcome, provider)
                key = (
                    "auth0.identities.database"
                    if key[0] == "database"
                    else f"auth0.identities.{key[0]}.{key[1]}"
                )
            _counter(key).inc(value)
        for (what, part), items in parts.items():
            name = f"parse-{what}-{unit.index:06d}-{unit.start:013d}-p{part:03d}.pkl"
            yield (
                part,
                (
                    what,
                    write_spill(self._tmp_dir, name, pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)),
                ),
            )
        for (what, part), items in routes.items():
            name = f"route-{what}-{unit.index:06d}-{unit.start:013d}-p{part:03d}.pkl"
            yield beam.pvalue.TaggedOutput(
                _ROUTES,
                (
                    part,
                    (
                        what,
                        write_spill(
                            self._tmp_dir, name, pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)
                        ),
                    ),
                ),
            )

    def _mfa(self, sortkey, record: dict[str, Any], raw: bytes, routes) -> tuple[str, str] | None:
        """One Auth0 MFA export record: an OTP secret is routed to its user; other types counted."""
        kind = record.get("type")
        if kind != "otp":
            # recovery-code (a bcrypt of a code ZITADEL cannot import), and anything newer.
            self._counts[f"auth0.mfa_not_importable.{counter_safe(kind)}"] += 1
            return None
        user_id = record.get("user_id")
        if not isinstance(user_id, str) or not user_id.strip():
            return Reason.MISSING_USER_ID, "MFA record has no user_id"
        problem = otp_problem(record.get("otp_secret"))
        if problem is not None:
            return problem
        routes.setdefault((MFA, partition_of(user_id, self._partitions)), []).append(
            (sortkey[0], sortkey[1], user_id, normalise_otp(record["otp_secret"]), raw)
        )
        return None

    def _mfa_factors(self, sortkey, user_id: str, profile: dict[str, Any]) -> _MfaItem | None:
        """A valid bulk-import profile's ``mfa_factors``: a ``totp`` secret goes to the join as an
        OTP item of its own profile (so that it is accounted for like an MFA record, and an MFA
        export record of the same user, read later, wins); the rest is counted by cause."""
        secret, causes = auth0_mfa_factors(profile["mfa_factors"])
        for cause in causes:
            self._counts[f"auth0.mfa_factors_not_carried.{cause}"] += 1
        if secret is None:
            return None
        self._counts["auth0.mfa_factors.totp"] += 1
        record = {
            "user_id": user_id,
            "email": profile.get("email"),
            "mfa_factors": [{"totp": {"secret": secret}}],
        }
        return (sortkey[0], sortkey[1], sortkey[0], sortkey[1], secret, orjson.dumps(record))

    def _profile(self, sortkey, email: str, profile: dict[str, Any], raw: bytes) -> _ProfileItem:
        opts = self._options
        raw_id = profile.get("user_id")
        user_id = raw_id if isinstance(raw_id, str) else ""
        derived = not user_id.strip() and bool(email) and "user_id" not in _present(profile)
        if derived:
            # Auth0's bulk-import shape has no user_id: README "User ids".
            user_id = auth0_user_id(email)
        fallback = None
        if not email and opts.email_fallback is not None and user_id.strip():
            fallback = fallback_email(opts.email_fallback, _text_field(profile, "username"), user_id)
        problem = _profile_problem(
            profile, email, opts.include_blocked, user_id, opts.email_fallback, fallback
        )
        if fallback is not None:
            # Password records join on e-mail; a made-up address must not meet one, so the join
            # key is one no record can have (records without e-mail are dead letters).
            email = "\x00" + user_id
        entry_json, meta_json, name_key = b"", b"", ""
        notes: tuple[str, ...] = ()
        if problem is None:
            problem = custom_password_hash(profile)[1]
            if problem is not None and opts.drop_bad_hashes and problem[0] in DROPPABLE_REASONS:
                problem = None  # the user comes without password; the hash is dead-lettered
        if problem is None:
            entry = map_profile(profile, None, opts.email_verified)
            if derived:
                entry = {"userId": user_id, **entry}
            if fallback is not None:
                entry["user"]["email"] = {"email": fallback}  # never verified
                entry["user"]["userName"] = entry["user"]["userName"] or fallback
            result = validate_user(entry, opts.validation)
            if result.reason is not None:
                problem = (result.reason, result.detail)
            else:
                notes = (
                    tuple(result.notes)
                    + (("derived-id",) if derived else ())
                    + (("email-fallback",) if fallback is not None else ())
                )
                name_key = user_name_key(entry["user"]["userName"])
                links, outcomes = idp_links(profile, self._idp_map)
                for outcome in outcomes:
                    self._counts[outcome] += 1
                self._fields.count(profile)
                if links:
                    entry["user"]["idps"] = links
                entry_json = orjson.dumps(entry)
                if opts.metadata:
                    metadata, dropped = metadata_entries(profile)
                    self._metadata_dropped.inc(dropped)
                    bad_key = next(
                        (
                            p
                            for p in (control_char_problem(m["key"], "metadata key") for m in metadata)
                            if p is not None
                        ),
                        None,
                    )
                    if bad_key is not None:
                        problem, entry_json, notes, name_key = bad_key, b"", (), ""
                    elif metadata:
                        meta_json = orjson.dumps([{"id": user_id, **m} for m in metadata])[1:-1]
        roles: tuple[str, ...] = ()
        if opts.roles_project is not None:
            roles = profile_roles(profile, self._roles_path)
            # One object per role combination: pickle then writes each combination once per blob.
            roles = self._role_sets.setdefault(roles, roles) if len(self._role_sets) < 10_000 else roles
        elif problem is None and holds_roles(profile):
            self._counts["roles.users_holding"] += 1  # the summary's hint (docs/roles.md)
        return (
            sortkey[0],
            sortkey[1],
            email,
            user_id,
            name_key,
            problem,
            entry_json,
            meta_json,
            notes,
            raw,
            roles,
        )


def _present(profile: dict[str, Any]) -> set[str]:
    """Keys with a non-null value: an explicit but empty or non-string user_id is not absent."""
    return {k for k, v in profile.items() if v is not None and v != ""}


def _text_field(profile: dict[str, Any], key: str) -> str:
    value = profile.get(key)
    return value.strip() if isinstance(value, str) else ""


def _profile_problem(
    profile: dict[str, Any],
    email: str,
    include_blocked: bool,
    user_id: str,
    template: str | None,
    fallback: str | None,
) -> tuple[str, str] | None:
    if not user_id.strip():
        if email or "user_id" in _present(profile):
            return Reason.MISSING_USER_ID, "profile has no usable user_id"
        return (
            Reason.MISSING_USER_ID,
            "profile has neither user_id nor e-mail (an id is derived from the e-mail)",
        )
    if not email:
        if template is None:
            return Reason.MISSING_EMAIL, "profile has no e-mail address (--email-fallback TEMPLATE gives one)"
        if fallback is None:
            return (
                Reason.INVALID_EMAIL_FALLBACK,
                f"--email-fallback {template!r} gives no valid e-mail address for this user",
            )
    if profile.get("blocked") is True and not include_blocked:
        return Reason.BLOCKED, "user is blocked in Auth0 (use --include-blocked to import anyway)"
    return None


def _password_problem(record: dict[str, Any], email: str) -> tuple[str, str] | None:
    if not email:
        return Reason.MISSING_EMAIL, "password record has no e-mail"
    if not isinstance(record.get("passwordHash"), str) or not record["passwordHash"]:
        return Reason.MISSING_PASSWORD_HASH, "password record has no passwordHash"
    return None


def _with_user_fields(entry_json: bytes, fields: bytes) -> bytes:
    """Append encoded ``,"key":value`` pairs as the last fields of ``user`` in an encoded entry
    (``map_profile`` puts ``user`` last in the entry, so the entry ends with ``}}``)."""
    return entry_json[:-2] + fields + b"}}"


def with_password(entry_json: bytes, password_hash: str) -> bytes:
    """Append ``hashedPassword`` as the last field of ``user`` in an encoded entry.

    ``map_profile`` puts ``user`` last in the entry and ``hashedPassword`` last in the user, so
    this gives exactly the bytes of encoding the entry with the hash (tested against it).
    """
    return _with_user_fields(entry_json, b',"hashedPassword":{"value":' + orjson.dumps(password_hash) + b"}")


def with_otp(entry_json: bytes, secret: str) -> bytes:
    """Append ``otpCode`` (a base32 TOTP secret) as the last field of ``user``."""
    return _with_user_fields(entry_json, b',"otpCode":' + orjson.dumps(secret))


class _RouteMfaFn(beam.DoFn):
    """Take MFA records to the e-mail partition of the profile with their ``user_id``.

    Why a routing step rather than a side input: an MFA export can hold a record per user (millions),
    and a side input would be materialised in full on every worker. Here both sides are grouped by
    a hash of ``user_id`` (profiles send ``(user_id, e-mail partition, sortkey)``, a few dozen bytes
    each), so each worker holds one partition's slice, and the records then join their profile
    in ``_JoinPartitionFn`` by its sortkey. The cost is one extra shuffle of small tuples.
    """

    def __init__(self, tmp_dir: str):
        self._tmp_dir = tmp_dir

    def process(self, element: tuple[int, Iterable[tuple[int, str]]]):
        part, blobs = element
        with no_gc():
            routes: dict[str, tuple[int, int, int]] = {}  # user_id → (e-mail partition, file, position)
            records: list[tuple] = []
            for kind, spilled in blobs:
                items = pickle.loads(load_blob(spilled))
                if kind in (MFA, ROLE_RECORDS):
                    records.extend(item + (kind,) for item in items)
                    continue
                for user_id, email_part, file_index, position in items:
                    known = routes.get(user_id)
                    # Several profiles with one user_id: the first in input order keeps the id.
                    if known is None or (file_index, position) < known[1:]:
                        routes[user_id] = (email_part, file_index, position)
            records.sort(key=lambda r: (r[0], r[1]))
            out: dict[tuple[int, int], list[_MfaItem]] = {}
            for file_index, position, user_id, secret, raw, kind in records:
                target = routes.get(user_id)
                if target is None:
                    yield beam.pvalue.TaggedOutput(
                        _DEAD,
                        dead_letter(
                            (file_index, position),
                            Reason.UNKNOWN_USER,
                            "no profile has this user_id",
                            _SOURCES[kind],
                            orjson.Fragment(raw),
                        ),
                    )
                    continue
                out.setdefault((kind, target[0]), []).append(
                    (file_index, position, target[1], target[2], secret, raw)
                )
        for (kind, email_part), items in out.items():
            name = f"{'mfa' if kind == MFA else 'roles'}-r{part:03d}-p{email_part:03d}.pkl"
            yield (
                email_part,
                (
                    kind,
                    write_spill(self._tmp_dir, name, pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)),
                ),
            )


class _JoinPartitionFn(beam.DoFn):
    """Match the password records (and OTP secrets) of one partition to their profiles; emit rows."""

    def __init__(self, options: Auth0Options, tmp_dir: str):
        self._options = options
        self._tmp_dir = tmp_dir

    def setup(self):
        self._conflicts = _counter("auth0.password_conflicts")
        self._cannot_sign_in = _counter("cannot_sign_in.auth0")
        self._dropped = _counter("auth0.imported_without_password")
        self._tally = HashTally(self._tmp_dir)
        self._notes: dict[str, Any] = {}

    def process(self, element: tuple[int, Iterable[tuple[int, str]]]):
        part, blobs = element
        with no_gc():
            yield from self._join(part, blobs)
        self._tally.publish()

    def _embedded_unused(self, why: str) -> None:
        """Count a profile's own hash that is not used and gets no dead-letter line of its own."""
        name = f"{EMBEDDED_UNUSED_PREFIX}{why}"
        if name not in self._notes:
            self._notes[name] = _counter(name)
        self._notes[name].inc()

    def _note(self, note: str) -> None:
        if note not in self._notes:
            self._notes[note] = _counter(f"notes.{note}")
        self._notes[note].inc()

    def _join(self, part: int, blobs: Iterable[tuple[int, str]]):
        profiles: list[_ProfileItem] = []
        passwords: list[_PasswordItem] = []
        secrets: list[_MfaItem] = []
        role_records: list[_MfaItem] = []
        for kind, spilled in blobs:
            items = pickle.loads(load_blob(spilled))
            if kind == PROFILES:
                profiles.extend(items)
            elif kind == MFA:
                secrets.extend(items)
            elif kind == ROLE_RECORDS:
                role_records.extend(items)
            else:
                passwords.extend(items)
        profiles.sort(key=lambda r: (r[0], r[1]))
        passwords.sort(key=lambda r: (r[0], r[1]))
        secrets.sort(key=lambda r: (r[0], r[1]))

        by_email: dict[str, list[int]] = {}
        by_sortkey: dict[tuple[int, int], int] = {}
        for index, item in enumerate(profiles):
            by_email.setdefault(item[2], []).append(index)
            by_sortkey[(item[0], item[1])] = index

        assigned: dict[int, list[_PasswordItem]] = {}
        for pw in passwords:
            if pw[7] == CUSTOM_HASHES:  # carried by its profile: no matching needed
                assigned.setdefault(by_sortkey[pw[8]], []).append(pw)
                continue
            candidates = by_email.get(pw[2], [])
            choice = pick_profile(pw[3], [profiles[i][3] for i in candidates])
            if choice is None:
                reason = Reason.ORPHAN_PASSWORD if not candidates else Reason.AMBIGUOUS_PASSWORD
                detail = (
                    "no profile has this e-mail"
                    if not candidates
                    else f"{len(candidates)} profiles share this e-mail and none matches the record's id"
                )
                yield _dl(pw, reason, detail, PASSWORDS, pw[6])
                continue
            assigned.setdefault(candidates[choice], []).append(pw)
        otps: dict[int, list[_MfaItem]] = {}
        for secret in secrets:
            otps.setdefault(by_sortkey[(secret[2], secret[3])], []).append(secret)
        held: dict[int, list[_MfaItem]] = {}
        for record in sorted(role_records, key=lambda r: (r[0], r[1])):
            held.setdefault(by_sortkey[(record[2], record[3])], []).append(record)
        roles = _JoinRoles(self._options.roles_project)

        rows = []
        for index, item in enumerate(profiles):
            chosen = None
            pws = assigned.get(index)
            if pws:
                # The newest record wins; without dates, the later file (password exports are
                # listed after profile files, so a password record beats a custom_password_hash).
                pws.sort(key=lambda r: (r[4], r[0], r[1]))
                chosen = pws[-1]
                for older in pws[:-1]:
                    self._conflicts.inc()
                    if older[7] == CUSTOM_HASHES:
                        # Embedded in a profile that is written: no line of its own (the
                        # profile is no rejected record); the accounting counts it here.
                        self._embedded_unused("superseded")
                        continue
                    yield _dl(
                        older,
                        Reason.PASSWORD_SUPERSEDED,
                        "a newer password record exists for this user",
                        older[7],
                        older[6],
                    )
            otp: _MfaItem | None = None
            if otps.get(index):
                *older_otps, otp = otps[index]
                for older_otp in older_otps:
                    yield _dl(
                        older_otp,
                        Reason.OTP_SUPERSEDED,
                        "a later OTP record exists for this user",
                        MFA,
                        older_otp[5],
                    )
            problem = item[5]
            entry_json = item[6]
            if problem is None and chosen is not None:
                checked = check_hash(chosen[5], self._options.validation)
                problem = None if isinstance(checked, ConvertedHash) else checked
                if problem is None:
                    self._tally.add(checked)
                if problem is not None and self._options.drop_bad_hashes and problem[0] in DROPPABLE_REASONS:
                    # --on-unsupported-hash=import-without-password: the user comes without it.
                    self._dropped.inc()
                    self._tally.without_password(problem[0], item[3] or None, _email_of(item[6]))
                    yield _dl(
                        chosen,
                        problem[0],
                        f"{problem[1]} (user imported without password)",
                        chosen[7],
                        chosen[6],
                    )
                    chosen, problem = None, None
                elif problem is not None:  # the profile was fine; the hash is not: reject both
                    yield _dl(item, problem[0], problem[1], PROFILES, item[9])
                else:
                    entry_json = with_password(entry_json, chosen[5])
            grants = roles.user(item, held.get(index, ()), dead=problem is not None)
            if problem is not None:
                for record in held.get(index, ()):
                    yield _dl(
                        record,
                        Reason.PROFILE_REJECTED,
                        f"its profile was dead-lettered ({problem[0]})",
                        ROLE_RECORDS,
                        record[5],
                    )
                if chosen is not None and chosen[7] == CUSTOM_HASHES:
                    # The hash travels inside the profile's dead-letter line: one line per
                    # rejected input record (README "Dead-letter reasons").
                    self._embedded_unused("profile-rejected")
                elif chosen is not None:
                    yield _dl(
                        chosen,
                        Reason.PROFILE_REJECTED,
                        f"its profile was dead-lettered ({problem[0]})",
                        chosen[7],
                        chosen[6],
                    )
                if otp is not None:
                    yield _dl(
                        otp,
                        Reason.PROFILE_REJECTED,
                        f"its profile was dead-lettered ({problem[0]})",
                        MFA,
                        otp[5],
                    )
                continue
            for note in item[8]:
                self._note(note)
            companions = []
            if chosen is not None:
                companions.append([[chosen[0], chosen[1]], _SOURCES[chosen[7]], orjson.Fragment(chosen[6])])
            if otp is not None:
                entry_json = with_otp(entry_json, otp[4])
                companions.append([[otp[0], otp[1]], MFA_SOURCE, orjson.Fragment(otp[5])])
            if chosen is None and b'"hashedPassword":' not in entry_json and b'"idps":[' not in entry_json:
                self._cannot_sign_in.inc()  # neither a password nor a linked IdP
            rows.append(
                (
                    item[0],
                    item[1],
                    item[3],
                    item[4],
                    entry_json,
                    item[7],
                    checked.verifier if chosen is not None else "",
                    PROFILE_SOURCE,
                    item[9],
                    orjson.dumps(companions) if companions else b"",
                    grants,  # records.EncodedRow[10]
                )
            )
        if rows:
            yield part, write_spill(self._tmp_dir, f"rows-p{part:03d}.pkl", pack_rows(rows))
        if self._options.roles_project is not None:
            yield beam.pvalue.TaggedOutput(_ROLES, roles.publish())


def profile_roles(profile: dict[str, Any], path: tuple[str, ...]) -> tuple[str, ...]:
    """The role names at ``path`` (``--roles-from`` split at dots, e.g. ``("app_metadata",
    "roles")``) of a profile, sorted and unique; () when there is no list there."""
    value: Any = profile
    for part in path:
        if type(value) is not dict:
            return ()
        value = value.get(part)
    if type(value) is not list or not value:
        return ()
    if all(type(v) is str for v in value):  # the usual shape: a list of names
        return tuple(sorted(set(value)))
    return tuple(sorted(set(role_names(value))))


def holds_roles(profile: dict[str, Any]) -> bool:
    """Without ``--project-id``: roles at ``app_metadata.roles`` or
    ``app_metadata.authorization.roles`` (the summary's hint only)."""
    app = profile.get("app_metadata")
    if type(app) is not dict:
        return False
    if app.get("roles"):
        return True
    auth = app.get("authorization")
    return type(auth) is dict and bool(auth.get("roles"))


def _role_record(
    sortkey, record: dict[str, Any], raw: bytes, routes, partitions: int
) -> tuple[str, str] | None:
    """One ``--roles-file`` line ``{"user_id", "roles": [name or {"name"}]}``: routed to its user."""
    user_id = record.get("user_id")
    if not isinstance(user_id, str) or not user_id.strip():
        return Reason.MISSING_USER_ID, "roles record has no user_id"
    if not isinstance(record.get("roles"), list):
        return Reason.NOT_AN_OBJECT, "roles record has no 'roles' list"
    names = tuple(sorted(set(role_names(record["roles"]))))
    routes.setdefault((ROLE_RECORDS, partition_of(user_id, partitions)), []).append(
        (sortkey[0], sortkey[1], user_id, names, raw)
    )
    return None


class _JoinRoles:
    """A partition's grants: the union of each user's --roles-from and --roles-file names."""

    def __init__(self, project: str | None):
        self._project = project
        self._counts: collections.Counter[str] = collections.Counter()
        self._keys: set[str] = set()
        self._cache: dict[tuple, tuple[tuple, tuple[tuple[str, int], ...]]] = {}

    def user(self, item: _ProfileItem, records: Sequence[_MfaItem], dead: bool) -> tuple:
        if self._project is None:
            return ()
        names: Any = item[10]  # sorted and unique
        if not records and not dead:
            # The common case: --roles-from only. One result per role combination (shared by
            # the rows, so the rows' pickle holds each combination once).
            cached = self._cache.get(names)
            if cached is None:
                outcomes: collections.Counter[str] = collections.Counter()
                cached = (grants_from_names(names, self._project, outcomes), tuple(outcomes.items()))
                for _, keys in cached[0]:
                    self._keys.update(keys)
                if len(self._cache) < 10_000:
                    self._cache[names] = cached
            for name, value in cached[1]:
                self._counts[name] += value
            return cached[0]
        if records:
            names = set(names)
            for record in records:
                names.update(record[4])
                if not dead:
                    self._counts["auth0.role_records_joined"] += 1
        if not names:
            return ()
        grants = grants_from_names(names, self._project, self._counts)
        if dead:
            self._counts["roles.skipped.user-dead-lettered"] += sum(len(k) for _, k in grants)
            return ()
        for _, keys in grants:
            self._keys.update(keys)
        return grants

    def publish(self) -> list[tuple[str, str, str, str]]:
        for name, value in self._counts.items():
            _counter(name).inc(value)
        return sorted((self._project or "", key, display_name(None, key), "") for key in self._keys)


def _email_of(entry_json: bytes) -> str | None:
    """The e-mail of a mapped user entry (for the passwordless listing; rare, so parsed here)."""
    try:
        return orjson.loads(entry_json)["user"]["email"]["email"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def _dl(item, reason: str, detail: str, kind: int, raw: bytes):
    return beam.pvalue.TaggedOutput(
        _DEAD, dead_letter((item[0], item[1]), reason, detail, _SOURCES[kind], orjson.Fragment(raw))
    )


# --------------------------------------------------------------------------- PTransform


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadAuth0Users(beam.PTransform):
    """Auth0 profile + password (+ MFA) files → ``{'rows': (partition, rows spill path), 'dead': dead letters}``.

    Intermediate data goes to spill files under ``tmp_dir`` (see ``transforms/files/spill.py``).

    ``profile_files``, ``password_files`` and ``mfa_files`` come from ``fileio.match_inputs``
    (run in the launcher, so a missing file fails before the pipeline starts). Without MFA
    files, the routing step is not part of the pipeline.
    """

    def __init__(
        self,
        profile_files: Sequence[fileio.InputFile],
        password_files: Sequence[fileio.InputFile],
        options: Auth0Options,
        partitions: int,
        tmp_dir: str,
        mfa_files: Sequence[fileio.InputFile] = (),
        role_files: Sequence[fileio.InputFile] = (),
    ):
        super().__init__()
        self._files = (
            [(PROFILES, f) for f in profile_files]
            + [(PASSWORDS, f) for f in password_files]
            + [(MFA, f) for f in mfa_files]
            + [(ROLE_RECORDS, f) for f in role_files]
        )
        self._options = options
        self._partitions = partitions
        self._tmp_dir = tmp_dir
        self._route_mfa = bool(mfa_files) or bool(role_files)  # both are joined on user_id

    def expand(self, pbegin: beam.pvalue.PBegin) -> dict[str, beam.PCollection]:
        """Returns ``{'rows': PCollection[PartitionRows], 'dead': PCollection[DeadLetter]}``."""
        units = (
            pbegin
            | "ListFiles" >> beam.Create(self._files)
            | "PlanUnits" >> beam.ParDo(_PlanUnitsFn())
            | "SpreadUnits" >> beam.Reshuffle()
        )
        parsed = units | "ParseUnits" >> beam.ParDo(
            _ParseUnitFn(self._partitions, self._options, self._tmp_dir, self._route_mfa)
        ).with_outputs(_DEAD, _ROUTES, main="parts")
        parts, dead = parsed.parts, [parsed[_DEAD]]
        if self._route_mfa:
            routed = (
                parsed[_ROUTES]
                | "GroupByUserId" >> beam.GroupByKey()
                | "RouteMfa" >> beam.ParDo(_RouteMfaFn(self._tmp_dir)).with_outputs(_DEAD, main="parts")
            )
            parts = (parts, routed.parts) | "WithMfa" >> beam.Flatten()
            dead.append(routed[_DEAD])
        joined = (
            parts
            | "GroupPartitions" >> beam.GroupByKey()
            | "JoinPartitions"
            >> beam.ParDo(_JoinPartitionFn(self._options, self._tmp_dir))
            .with_output_types(PartitionRows, **{_DEAD: DeadLetter, _ROLES: Any})
            .with_outputs(_DEAD, _ROLES, main="rows")
        )
        dead = tuple(dead) + (joined[_DEAD],) | "MergeDeadLetters" >> beam.Flatten().with_output_types(
            DeadLetter
        )
        if self._options.roles_project is not None:  # transforms/output/grants.py resolves them
            return {"rows": joined.rows, "dead": dead, "roles": joined[_ROLES]}
        return {"rows": joined.rows, "dead": dead}
