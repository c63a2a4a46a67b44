"""The Auth0 reader's parse step: each unit of an input file → items per partition, in parallel.

For whoever changes how one Auth0 record is read. Everything that needs only one record happens
here: JSON parsing, the zitadel-tools mapping, the import API's profile rules, the metadata, the
IdP links, the roles. The join that follows (``join``) then only matches small items and
splices the chosen hash into the encoded user. Item shapes: ``items``.

Example (inside ``ReadAuth0Users``)::

    units | 'ParseUnits' >> beam.ParDo(_ParseUnitFn(32, options, tmp_dir)).with_outputs('dead', 'routes', main='parts')
"""

from __future__ import annotations

import collections
import pickle
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.common import counters, live_tally
from transforms.common.records import (
    NAMESPACE,
    DeadLetter,
    dead_letter,
    intern_tallies,
    no_gc,
    partition_of,
    user_name_key,
)
from transforms.files.spill import write_spill
from transforms.hashing.policy import DROPPABLE_REASONS
from transforms.hashing.tally import passwordless
from transforms.mapping.fields import FieldTally, counter_safe
from transforms.mapping.ids import auth0_user_id, fallback_email
from transforms.mapping.otp import auth0_mfa_factors
from transforms.mapping.validate import (
    DERIVED_ID,
    EMAIL_FALLBACK,
    Reason,
    control_char_problem,
    normalise_otp,
    otp_problem,
    validate_user,
)
from transforms.sources import json_units
from transforms.sources.auth0 import items as a0
from transforms.sources.auth0.items import (
    CUSTOM_HASH_SOURCE,
    PASSWORD_SOURCE,
    PROFILE_SOURCE,
    READ_COUNTERS,
    SOURCES,
    JsonObject,
    Kind,
    MfaRecord,
    OtpItem,
    PasswordItem,
    Problem,
    ProfileItem,
    with_written,
)
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
    record_email,
)
from transforms.sources.auth0.options import Auth0Options
from transforms.sources.auth0.roles import Routes, holds_roles, profile_roles, role_record

__all__ = ["DEAD", "ROUTES"]

DEAD = "dead"
ROUTES = "routes"

# Items of one unit, by (kind, partition): pickled into one spill file each.
_Parts = dict[tuple[int, int], list[ProfileItem | PasswordItem | OtpItem]]
# A mapped profile: (problem, entry_json, meta_json, name_key, tallies).
_Mapped = tuple[Problem | None, bytes, bytes, str, tuple[str, ...]]


def _counter(name: str):
    return Metrics.counter(NAMESPACE, name)


class _PlanUnitsFn(beam.DoFn):
    """A matched file → the units (byte ranges or whole file) that workers parse."""

    def process(self, element: tuple[int, json_units.InputFile]) -> Iterator[tuple[int, json_units.Unit]]:
        kind, file = element
        for unit in json_units.plan_units(file):
            yield kind, unit


class _ParseUnitFn(beam.DoFn):
    """Parse, map and validate one unit; emit one ``(partition, (kind, blob))`` per partition.

    With ``route_mfa``, profiles also emit ``(user_id partition, (ROUTES, blob))`` and MFA and
    role records ``(user_id partition, (MFA, blob))`` on the ``routes`` output (``route``).
    """

    def __init__(self, partitions: int, options: Auth0Options, tmp_dir: str, route_mfa: bool = False):
        self._partitions = partitions
        self._options = options
        self._tmp_dir = tmp_dir
        self._route_mfa = route_mfa
        self._roles_path = tuple(options.roles_from.split(".")) if options.roles_from else ()
        self._role_sets: dict[tuple[str, ...], tuple[str, ...]] = {}

    def setup(self):
        self._read = {k: _counter(name) for k, name in READ_COUNTERS.items()}
        self._metadata_dropped = _counter(a0.METADATA_DROPPED)
        self._written_pairs: dict[tuple[str, ...], tuple[tuple[str, ...], bytes]] = {}
        self._idp_map = dict(self._options.idp_map)
        self._counts: collections.Counter[Any] = collections.Counter()
        self._fields = FieldTally("auth0", KNOWN_FIELDS, not_carried_keys(self._options.metadata))

    def process(self, element: tuple[int, json_units.Unit]):
        kind, unit = element
        parts: _Parts = {}
        routes: Routes = {}
        count = 0
        self._counts.clear()
        with no_gc():
            for position, raw, value, error in json_units.read_unit(unit):
                count += 1
                if not count & 4095 and kind == Kind.PROFILES:  # the live line (live_tally.py)
                    live_tally.add(live_tally.PARSED, 4096)
                sortkey = (unit.index, position)
                letter: DeadLetter | None
                if error is not None or not isinstance(value, dict):
                    letter = _unreadable(sortkey, raw, value, error, SOURCES[kind], unit.path)
                else:
                    if raw is None:
                        raw = orjson.dumps(value)
                    if kind == Kind.ROLE_RECORDS:
                        letter = _letter(
                            sortkey, role_record(sortkey, value, raw, routes, self._partitions), kind, raw
                        )
                    elif kind == Kind.MFA:
                        letter = _letter(sortkey, self._mfa(sortkey, value, raw, routes), kind, raw)
                    elif kind == Kind.PROFILES:
                        letter = self._parse_profile(sortkey, value, raw, parts, routes)
                    else:
                        letter = self._password(sortkey, value, raw, parts)
                if letter is not None:
                    yield beam.pvalue.TaggedOutput(DEAD, letter)
        self._read[kind].inc(count)
        if kind == Kind.PROFILES:
            live_tally.add(live_tally.PARSED, count & 4095)
        self._publish_counts()
        yield from self._spill(unit, parts, routes)

    def _publish_counts(self) -> None:
        for key, value in self._counts.items():
            if isinstance(key, tuple):  # an identity: (outcome, provider)
                outcome, provider = key
                key = (
                    a0.IDENTITIES_DATABASE
                    if outcome == "database"
                    else f"{a0.IDENTITIES}{outcome}.{provider}"
                )
            _counter(key).inc(value)

    def _spill(self, unit: json_units.Unit, parts: _Parts, routes: Routes):
        """Each partition's items into one spill file; route items on the ``routes`` output.
        Kinds travel as plain ints (the coders of Beam's shuffle know ints, not our enum)."""
        for (what, part), items in parts.items():
            name = f"parse-{int(what)}-{unit.index:06d}-{unit.start:013d}-p{part:03d}.pkl"
            blob = pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)
            yield part, (int(what), write_spill(self._tmp_dir, name, blob))
        for (what, part), keyed in routes.items():
            name = f"route-{int(what)}-{unit.index:06d}-{unit.start:013d}-p{part:03d}.pkl"
            blob = pickle.dumps(keyed, protocol=pickle.HIGHEST_PROTOCOL)
            yield beam.pvalue.TaggedOutput(
                ROUTES, (part, (int(what), write_spill(self._tmp_dir, name, blob)))
            )

    def _parse_profile(
        self, sortkey: tuple[int, int], value: JsonObject, raw: bytes, parts: _Parts, routes: Routes
    ) -> DeadLetter | None:
        """A profile → its item, its own custom hash and ``mfa_factors`` items, and its route."""
        item = self._profile(sortkey, normalise_email(value.get("email")), value, raw)
        # A fallback address joins no password record, so the item's e-mail is the key.
        (_, _, email_key, user_id, _, problem, _, _, _, _, _) = item
        part = partition_of(email_key, self._partitions)
        letter = None
        if problem is not None:
            reason, detail = problem
            letter = dead_letter(sortkey, reason, detail, PROFILE_SOURCE, orjson.Fragment(raw))
        else:
            letter, dropped = self._custom_hash(sortkey, email_key, user_id, value, part, parts)
            causes: list[str] = []
            if "mfa_factors" in value:
                factor, causes = self._mfa_factors(sortkey, user_id, value)
                if factor is not None:
                    parts.setdefault((Kind.MFA, part), []).append(factor)
            if dropped is not None or causes:
                item = with_written(item, causes, dropped)
        if self._route_mfa and user_id:
            routes.setdefault((Kind.ROUTES, partition_of(user_id, self._partitions)), []).append(
                (user_id, part, sortkey[0], sortkey[1])
            )
        parts.setdefault((Kind.PROFILES, part), []).append(item)
        return letter

    def _custom_hash(
        self,
        sortkey: tuple[int, int],
        email_key: str,
        user_id: str,
        profile: JsonObject,
        part: int,
        parts: _Parts,
    ) -> tuple[DeadLetter | None, tuple[str, bytes] | None]:
        """A valid profile's own ``custom_password_hash``: a password item joined like a password
        record, or (with --on-unsupported-hash=import-without-password) a dead letter and what
        the user written without it counts and lists (``hashing.tally.passwordless``)."""
        custom, problem = custom_password_hash(profile)
        if custom is None and problem is None:
            return None, None
        self._read[Kind.CUSTOM_HASHES].inc()
        key = "custom_password_hash" if "custom_password_hash" in profile else "password_hash"
        record = {"user_id": user_id, "email": profile.get("email"), key: profile[key]}
        if custom is None:
            # Only reached with --on-unsupported-hash=import-without-password (else the profile
            # itself was dead-lettered): account for the hash.
            assert problem is not None
            reason, detail = problem
            letter = dead_letter(
                sortkey, reason, f"{detail} (user imported without password)", CUSTOM_HASH_SOURCE, record
            )
            return letter, passwordless(reason, user_id or None, profile.get("email"))
        item: PasswordItem = (
            sortkey[0],
            sortkey[1],
            email_key,
            "",
            "",
            custom,
            orjson.dumps(record),
            Kind.CUSTOM_HASHES,
            sortkey,
        )
        parts.setdefault((Kind.CUSTOM_HASHES, part), []).append(item)
        return None, None

    def _password(
        self, sortkey: tuple[int, int], record: JsonObject, raw: bytes, parts: _Parts
    ) -> DeadLetter | None:
        """A password record → its item in the partition of its e-mail, or a dead letter."""
        email = record_email(record)
        problem = _password_problem(record, email)
        if problem is not None:
            reason, detail = problem
            return dead_letter(sortkey, reason, detail, PASSWORD_SOURCE, orjson.Fragment(raw))
        item: PasswordItem = (
            sortkey[0],
            sortkey[1],
            email,
            password_oid(record),
            password_date(record),
            record["passwordHash"],
            raw,
            Kind.PASSWORDS,
            None,
        )
        parts.setdefault((Kind.PASSWORDS, partition_of(email, self._partitions)), []).append(item)
        return None

    def _mfa(
        self, sortkey: tuple[int, int], record: JsonObject, raw: bytes, routes: Routes
    ) -> Problem | None:
        """One Auth0 MFA export record: an OTP secret is routed to its user; other types counted."""
        kind = record.get("type")
        if kind != "otp":
            # recovery-code (a bcrypt of a code ZITADEL cannot import), and anything newer.
            self._counts[a0.MFA_NOT_IMPORTABLE + counter_safe(kind)] += 1
            return None
        user_id = record.get("user_id")
        if not isinstance(user_id, str) or not user_id.strip():
            return Reason.MISSING_USER_ID, "MFA record has no user_id"
        problem = otp_problem(record.get("otp_secret"))
        if problem is not None:
            return problem
        item: MfaRecord = (sortkey[0], sortkey[1], user_id, normalise_otp(record["otp_secret"]), raw)
        routes.setdefault((Kind.MFA, partition_of(user_id, self._partitions)), []).append(item)
        return None

    def _mfa_factors(
        self, sortkey: tuple[int, int], user_id: str, profile: JsonObject
    ) -> tuple[OtpItem | None, list[str]]:
        """A valid bulk-import profile's ``mfa_factors``: a ``totp`` secret goes to the join as an
        OTP item of its own profile (so that it is accounted for like an MFA record, and an MFA
        export record of the same user, read later, wins); the rest is counted by cause once
        the user is written (the counter names returned)."""
        secret, causes = auth0_mfa_factors(profile["mfa_factors"])
        names = [a0.MFA_FACTORS_NOT_CARRIED + cause for cause in causes]
        if secret is None:
            return None, names
        self._counts[a0.MFA_FACTORS_TOTP] += 1
        record = {
            "user_id": user_id,
            "email": profile.get("email"),
            "mfa_factors": [{"totp": {"secret": secret}}],
        }
        return (sortkey[0], sortkey[1], sortkey[0], sortkey[1], secret, orjson.dumps(record)), names

    def _profile(self, sortkey: tuple[int, int], email: str, profile: JsonObject, raw: bytes) -> ProfileItem:
        """A profile's item: its identity, then (when nothing rejects it) its encoded entry."""
        opts = self._options
        user_id, derived, fallback = self._identity(email, profile)
        problem = _profile_problem(
            profile, email, opts.include_blocked, user_id, opts.email_fallback, fallback
        )
        if fallback is not None:
            # Password records join on e-mail; a made-up address must not meet one, so the join
            # key is one no record can have (records without e-mail are dead letters).
            email = "\x00" + user_id
        if problem is None:
            problem = custom_password_hash(profile)[1]
            if problem is not None and opts.drop_bad_hashes and problem[0] in DROPPABLE_REASONS:
                problem = None  # the user comes without password; the hash is dead-lettered
        entry_json, meta_json, name_key = b"", b"", ""
        tallies: tuple[str, ...] = ()
        if problem is None:
            problem, entry_json, meta_json, name_key, tallies = self._entry(
                profile, user_id, derived, fallback
            )
        roles = self._roles(profile, problem)
        written = self._written_pairs.get(tallies)
        if written is None:  # one pair per list of names: pickle then writes it once per blob
            written = (tallies, b"")
            if len(self._written_pairs) < 10_000:
                self._written_pairs[tallies] = written
        return (
            sortkey[0],
            sortkey[1],
            email,
            user_id,
            name_key,
            problem,
            entry_json,
            meta_json,
            written,
            raw,
            roles,
        )

    def _identity(self, email: str, profile: JsonObject) -> tuple[str, bool, str | None]:
        """``(user_id, derived, fallback e-mail)``: Auth0's bulk-import shape has no user_id, so one
        is derived from the e-mail (README "User ids"); --email-fallback gives a missing e-mail."""
        raw_id = profile.get("user_id")
        user_id = raw_id if isinstance(raw_id, str) else ""
        derived = not user_id.strip() and bool(email) and "user_id" not in _present(profile)
        if derived:
            user_id = auth0_user_id(email)
        fallback = None
        template = self._options.email_fallback
        if not email and template is not None and user_id.strip():
            fallback = fallback_email(template, _text_field(profile, "username"), user_id)
        return user_id, derived, fallback

    def _entry(self, profile: JsonObject, user_id: str, derived: bool, fallback: str | None) -> _Mapped:
        """Map and validate an accepted profile: its encoded entry, metadata, name key and the
        counter names its user adds one to once written (notes, fields not carried)."""
        entry = map_profile(profile, None, self._options.email_verified)
        if derived:
            entry = {"userId": user_id, **entry}
        if fallback is not None:
            entry["user"]["email"] = {"email": fallback}  # never verified
            entry["user"]["userName"] = entry["user"]["userName"] or fallback
        result = validate_user(entry, self._options.validation)
        if result.reason is not None:
            return (result.reason, result.detail), b"", b"", "", ()
        notes = (
            [*result.notes]
            + ([DERIVED_ID] if derived else [])
            + ([EMAIL_FALLBACK] if fallback is not None else [])
        )
        name_key = user_name_key(entry["user"]["userName"])
        links, outcomes = idp_links(profile, self._idp_map)
        for outcome in outcomes:
            self._counts[outcome] += 1
        fields = self._fields.names(profile)
        tallies = intern_tallies((*fields, *map(counters.note, notes))) if notes else fields
        if links:
            entry["user"]["idps"] = links
        entry_json = orjson.dumps(entry)
        meta_json = b""
        if self._options.metadata:
            metadata, dropped = metadata_entries(profile)
            self._metadata_dropped.inc(dropped)
            problems = (control_char_problem(m["key"], "metadata key") for m in metadata)
            bad_key = next((p for p in problems if p is not None), None)
            if bad_key is not None:
                return bad_key, b"", b"", "", ()
            if metadata:
                meta_json = orjson.dumps([{"id": user_id, **m} for m in metadata])[1:-1]
        return None, entry_json, meta_json, name_key, tallies

    def _roles(self, profile: JsonObject, problem: Problem | None) -> tuple[str, ...]:
        """The profile's --roles-from role names (with --project-id); else only counted."""
        if self._options.roles_project is not None:
            roles = profile_roles(profile, self._roles_path)
            # One object per role combination: pickle then writes each combination once per blob.
            return self._role_sets.setdefault(roles, roles) if len(self._role_sets) < 10_000 else roles
        if problem is None and holds_roles(profile):
            self._counts[counters.ROLES_USERS_HOLDING] += 1  # the summary's hint (docs/roles.md)
        return ()


def _unreadable(
    sortkey: tuple[int, int], raw: bytes | None, value: object, error: str | None, source: str, path: str
) -> DeadLetter:
    """The dead letter of a record that does not parse, or is not a JSON object."""
    if error is None:
        return dead_letter(sortkey, Reason.NOT_AN_OBJECT, "record is not a JSON object", source, value)
    reason = getattr(error, "reason", None) or (
        Reason.MALFORMED_JSON if raw is not None else Reason.UNREADABLE_INPUT
    )
    record: object = (
        raw.decode("utf-8", "replace") if raw is not None else {"file": path, "position": sortkey[1]}
    )
    return dead_letter(sortkey, reason, error, source, record)


def _letter(sortkey: tuple[int, int], problem: Problem | None, kind: int, raw: bytes) -> DeadLetter | None:
    if problem is None:
        return None
    reason, detail = problem
    return dead_letter(sortkey, reason, detail, SOURCES[kind], orjson.Fragment(raw))


def _present(profile: JsonObject) -> set[str]:
    """Keys with a non-null value: an explicit but empty or non-string user_id is not absent."""
    return {k for k, v in profile.items() if v is not None and v != ""}


def _text_field(profile: JsonObject, key: str) -> str:
    value = profile.get(key)
    return value.strip() if isinstance(value, str) else ""


def _profile_problem(
    profile: JsonObject,
    email: str,
    include_blocked: bool,
    user_id: str,
    template: str | None,
    fallback: str | None,
) -> Problem | None:
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


def _password_problem(record: JsonObject, email: str) -> Problem | None:
    if not email:
        return Reason.MISSING_EMAIL, "password record has no e-mail"
    if not isinstance(record.get("passwordHash"), str) or not record["passwordHash"]:
        return Reason.MISSING_PASSWORD_HASH, "password record has no passwordHash"
    return None
