"""Auth0 exports → user rows: parse profile and password files, join them, map, validate.

Shape of the work (few, large elements; see ``transforms/records.py``)::

    files ─ PlanUnits ─ Reshuffle ─ ParseUnits ──► (partition, (kind, blob)) ─ GroupByKey
                                       └─► dead letters (malformed lines)
    (partition, [(PROFILES, blob), (PASSWORDS, blob), ...]) ─ JoinPartition ─► (partition, rows_blob)
                                                                     └─► dead letters

The partition is a stable hash of the e-mail trimmed and case-folded, so a profile and its
password records always meet in the same partition and the join is linear in the input size.

Example::

    result = (pipeline | 'ReadAuth0' >> ReadAuth0Users(profile_files, password_files, options))
    rows, dead = result['rows'], result['dead']
"""
from __future__ import annotations

import base64
import dataclasses
import gc
import logging
from typing import Any, Iterable, Iterator, Sequence

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms import fileio
from transforms.records import NAMESPACE, dead_letter, encode_rows, partition_of
from transforms.validate import (
    MAX_METADATA_KEY,
    MAX_METADATA_VALUE,
    Reason,
    ValidationOptions,
    validate_user,
)

__all__ = [
    "Auth0Options",
    "ReadAuth0Users",
    "map_profile",
    "metadata_entries",
    "normalise_email",
    "password_oid",
    "password_date",
    "PROFILE_SOURCE",
    "PASSWORD_SOURCE",
]

_LOGGER = logging.getLogger(__name__)

PROFILE_SOURCE = "auth0-profile"
PASSWORD_SOURCE = "auth0-password"
PROFILES, PASSWORDS = 0, 1
_SOURCES = {PROFILES: PROFILE_SOURCE, PASSWORDS: PASSWORD_SOURCE}
_DEAD = "dead"


@dataclasses.dataclass(frozen=True)
class Auth0Options:
    """Mapping choices from the command line (all picklable, no clients)."""

    email_verified: bool = False
    include_blocked: bool = False
    metadata: bool = False
    validation: ValidationOptions = ValidationOptions()


def _counter(name: str):
    return Metrics.counter(NAMESPACE, name)


# --------------------------------------------------------------------------- pure functions


def normalise_email(value: Any) -> str:
    """The join key: the e-mail trimmed and case-folded ('' when there is none)."""
    return value.strip().casefold() if isinstance(value, str) else ""


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    return value.strip() if isinstance(value, str) else ""


def password_oid(record: dict[str, Any]) -> str:
    """The user id suffix a password record names (``_id``/``_ID``, ``$oid`` or plain string)."""
    for key in ("_id", "_ID"):
        value = record.get(key)
        if isinstance(value, dict):
            value = value.get("$oid")
        if isinstance(value, str) and value:
            return value.rsplit("|", 1)[-1]
    return ""


def password_date(record: dict[str, Any]) -> str:
    """When the password was set (ISO text sorts chronologically), '' when unknown."""
    for key in ("password_set_date", "last_password_reset"):
        value = record.get(key)
        if isinstance(value, dict):
            value = value.get("$date")
        if isinstance(value, str):
            return value
    return ""


def map_profile(profile: dict[str, Any], password_hash: str | None, email_verified_flag: bool) -> dict[str, Any]:
    """An Auth0 profile (+ the chosen password hash) → a ``humanUsers`` entry.

    Same mapping and fallbacks as ``zitadel-tools migrate auth0`` (FACTS.md §2), except that
    the source's ``email_verified`` is kept when ``--email-verified`` is not given.
    """
    email = profile.get("email") if isinstance(profile.get("email"), str) else ""
    email = email.strip()
    user_name = _text(profile, "username") or email
    name = _text(profile, "name")
    first = _text(profile, "given_name") or name or user_name
    last = _text(profile, "family_name") or name or user_name or first
    person: dict[str, Any] = {"firstName": first, "lastName": last}
    if _text(profile, "nickname"):
        person["nickName"] = _text(profile, "nickname")
    if name:
        person["displayName"] = name
    if _text(profile, "locale"):
        person["preferredLanguage"] = _text(profile, "locale")
    verified = True if email_verified_flag else profile.get("email_verified") is True
    user: dict[str, Any] = {
        "userName": user_name,
        "profile": person,
        "email": {"email": email, "isEmailVerified": verified} if verified else {"email": email},
    }
    phone = _text(profile, "phone_number")
    if phone:
        user["phone"] = {"phone": phone, "isPhoneVerified": True} if profile.get("phone_verified") is True else {"phone": phone}
    if password_hash is not None:
        user["hashedPassword"] = {"value": password_hash}
    entry: dict[str, Any] = {"user": user}
    user_id = profile.get("user_id")
    entry = {"userId": user_id, **entry} if user_id is not None else entry
    return entry


def metadata_entries(profile: dict[str, Any]) -> tuple[list[dict[str, str]], int]:
    """``user_metadata`` / ``app_metadata`` top-level keys → ``[{key, value(base64 JSON)}]``.

    A key present in both keeps ``user_metadata``'s under its name and ``app_metadata``'s as
    ``app_metadata.<key>``. Returns the entries and how many were dropped for ZITADEL's limits
    (key 1-200 characters, value at most 500000 bytes).
    """
    entries: list[dict[str, str]] = []
    dropped = 0
    seen: set[str] = set()
    for field in ("user_metadata", "app_metadata"):
        block = profile.get(field)
        if not isinstance(block, dict):
            continue
        for key, value in block.items():
            name = key if key not in seen else f"{field}.{key}"
            encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
            if not name or len(name) > MAX_METADATA_KEY or len(encoded) > MAX_METADATA_VALUE:
                dropped += 1
                continue
            seen.add(name)
            entries.append({"key": name, "value": base64.b64encode(encoded).decode("ascii")})
    return entries, dropped


# --------------------------------------------------------------------------- DoFns


class _PlanUnitsFn(beam.DoFn):
    """A matched file → the units (byte ranges or whole file) that workers parse."""

    def process(self, element: tuple[int, fileio.InputFile]) -> Iterator[tuple[int, fileio.Unit]]:
        kind, file = element
        for unit in fileio.plan_units(file):
            yield kind, unit


class _ParseUnitFn(beam.DoFn):
    """Parse one unit; emit one ``(partition, (kind, blob))`` per partition it touches.

    The blob is a JSON array of ``[file_index, position, record]`` built from the lines' own
    bytes, so a record is parsed here only to find its e-mail and never re-encoded.
    """

    def __init__(self, partitions: int):
        self._partitions = partitions

    def setup(self):
        self._read = {k: _counter(f"auth0.{_SOURCES[k].split('-')[1]}s_read") for k in _SOURCES}

    def process(self, element: tuple[int, fileio.Unit]):
        kind, unit = element
        source = _SOURCES[kind]
        parts: dict[int, list[bytes]] = {}
        count = 0
        gc_was_enabled = gc.isenabled()
        gc.disable()  # millions of small dicts: the cyclic GC would rescan them all, for nothing
        try:
            for position, raw, value, error in fileio.read_unit(unit):
                count += 1
                sortkey = (unit.index, position)
                if error is not None:
                    reason = Reason.MALFORMED_JSON if raw is not None else Reason.UNREADABLE_INPUT
                    record: Any = raw.decode("utf-8", "replace") if raw is not None else {"file": unit.path, "position": position}
                    yield beam.pvalue.TaggedOutput(_DEAD, dead_letter(sortkey, reason, error, source, record))
                    continue
                if not isinstance(value, dict):
                    yield beam.pvalue.TaggedOutput(_DEAD, dead_letter(
                        sortkey, Reason.NOT_AN_OBJECT, "record is not a JSON object", source, value))
                    continue
                if raw is None:
                    raw = orjson.dumps(value)
                part = partition_of(normalise_email(value.get("email")), self._partitions)
                parts.setdefault(part, []).append(b"[%d,%d,%s]" % (unit.index, position, raw))
        finally:
            if gc_was_enabled:
                gc.enable()
        self._read[kind].inc(count)
        for part, items in parts.items():
            yield part, (kind, b"[" + b",".join(items) + b"]")


class _JoinPartitionFn(beam.DoFn):
    """Join, map and validate the profiles and password records of one partition."""

    def __init__(self, options: Auth0Options):
        self._options = options

    def setup(self):
        self._c = {name: _counter(name) for name in (
            "auth0.password_conflicts", "auth0.metadata_dropped", "auth0.metadata_entries")}

    def process(self, element: tuple[int, Iterable[tuple[int, bytes]]]):
        part, blobs = element
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            yield from self._join(part, blobs)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _join(self, part: int, blobs: Iterable[tuple[int, bytes]]):
        profiles: list[list[Any]] = []
        passwords: list[list[Any]] = []
        for kind, blob in blobs:
            (profiles if kind == PROFILES else passwords).extend(orjson.loads(blob))
        profiles.sort(key=lambda r: (r[0], r[1]))
        passwords.sort(key=lambda r: (r[0], r[1]))

        by_email: dict[str, list[list[Any]]] = {}
        for row in profiles:
            by_email.setdefault(normalise_email(row[2].get("email")), []).append(row)

        # Password records → the profile they belong to (index into `profiles` rows by id()).
        assigned: dict[int, list[list[Any]]] = {}
        pw_groups: dict[str, list[list[Any]]] = {}
        for row in passwords:
            pw_groups.setdefault(normalise_email(row[2].get("email")), []).append(row)
        for email, group in pw_groups.items():
            candidates = by_email.get(email, []) if email else []
            for row in group:
                sortkey, record = (row[0], row[1]), row[2]
                if not email:
                    yield _dl(sortkey, Reason.MISSING_EMAIL, "password record has no e-mail", PASSWORDS, record)
                    continue
                if not isinstance(record.get("passwordHash"), str) or not record["passwordHash"]:
                    yield _dl(sortkey, Reason.MISSING_PASSWORD_HASH, "password record has no passwordHash", PASSWORDS, record)
                    continue
                target = _pick_profile(record, candidates)
                if target is None:
                    reason = Reason.ORPHAN_PASSWORD if not candidates else Reason.AMBIGUOUS_PASSWORD
                    detail = ("no profile has this e-mail" if not candidates else
                              f"{len(candidates)} profiles share this e-mail and none matches the record's id")
                    yield _dl(sortkey, reason, detail, PASSWORDS, record)
                    continue
                assigned.setdefault(id(target), []).append(row)

        opts = self._options
        out_rows: list[list[Any]] = []
        for row in profiles:
            sortkey, profile = (row[0], row[1]), row[2]
            chosen = None
            pw_rows = assigned.get(id(row), [])
            if pw_rows:
                pw_rows.sort(key=lambda r: (password_date(r[2]), r[0], r[1]))
                chosen = pw_rows[-1]
                for older in pw_rows[:-1]:
                    self._c["auth0.password_conflicts"].inc()
                    yield _dl((older[0], older[1]), Reason.PASSWORD_SUPERSEDED,
                              "a newer password record exists for this e-mail", PASSWORDS, older[2])
            companions = [[[chosen[0], chosen[1]], PASSWORD_SOURCE, chosen[2]]] if chosen else []
            problem = self._profile_problem(profile)
            entry = None
            if problem is None:
                entry = map_profile(profile, chosen[2]["passwordHash"] if chosen else None, opts.email_verified)
                result = validate_user(entry, opts.validation)
                if result.reason is not None:
                    problem = (result.reason, result.detail)
                for note in result.notes:
                    _counter(f"notes.{note}").inc()
            if problem is not None:
                yield _dl(sortkey, problem[0], problem[1], PROFILES, profile)
                for c in companions:
                    yield _dl(tuple(c[0]), Reason.PROFILE_REJECTED,
                              f"its profile was dead-lettered ({problem[0]})", PASSWORDS, c[2])
                continue
            metadata: list[dict[str, str]] = []
            if opts.metadata:
                metadata, dropped = metadata_entries(profile)
                self._c["auth0.metadata_dropped"].inc(dropped)
                self._c["auth0.metadata_entries"].inc(len(metadata))
            out_rows.append([list(sortkey), entry, metadata, profile, PROFILE_SOURCE, companions])
        if out_rows:
            yield part, encode_rows(out_rows)

    def _profile_problem(self, profile: dict[str, Any]) -> tuple[str, str] | None:
        user_id = profile.get("user_id")
        if not isinstance(user_id, str) or not user_id.strip():
            return Reason.MISSING_USER_ID, "profile has no user_id"
        if not normalise_email(profile.get("email")):
            return Reason.MISSING_EMAIL, "profile has no e-mail address"
        if profile.get("blocked") is True and not self._options.include_blocked:
            return Reason.BLOCKED, "user is blocked in Auth0 (use --include-blocked to import anyway)"
        return None


def _dl(sortkey, reason: str, detail: str, kind: int, record: Any):
    return beam.pvalue.TaggedOutput(_DEAD, dead_letter(sortkey, reason, detail, _SOURCES[kind], record))


def _pick_profile(record: dict[str, Any], candidates: list[list[Any]]) -> list[Any] | None:
    """Which profile a password record belongs to.

    The record's ``_id`` names the database user (``auth0|<oid>``); only when it names none of
    the candidates do we fall back to the e-mail: the single profile with that e-mail, or the
    single database (``auth0|``) profile among several (the others are social logins).
    """
    oid = password_oid(record)
    if oid:
        for row in candidates:
            user_id = row[2].get("user_id")
            if isinstance(user_id, str) and user_id.rsplit("|", 1)[-1] == oid:
                return row
    if len(candidates) == 1:
        return candidates[0]
    database = [r for r in candidates if str(r[2].get("user_id", "")).startswith("auth0|")]
    return database[0] if len(database) == 1 else None


# --------------------------------------------------------------------------- PTransform


class ReadAuth0Users(beam.PTransform):
    """Auth0 profile + password files → ``{'rows': (partition, rows_blob), 'dead': dead letters}``.

    ``profile_files`` and ``password_files`` come from ``fileio.match_inputs`` (run in the
    launcher, so a missing file fails before the pipeline starts).
    """

    def __init__(self, profile_files: Sequence[fileio.InputFile], password_files: Sequence[fileio.InputFile],
                 options: Auth0Options, partitions: int):
        super().__init__()
        self._files = [(PROFILES, f) for f in profile_files] + [(PASSWORDS, f) for f in password_files]
        self._options = options
        self._partitions = partitions

    def expand(self, pbegin):
        units = (
            pbegin
            | "ListFiles" >> beam.Create(self._files)
            | "PlanUnits" >> beam.ParDo(_PlanUnitsFn())
            | "SpreadUnits" >> beam.Reshuffle()
        )
        parsed = units | "ParseUnits" >> beam.ParDo(_ParseUnitFn(self._partitions)).with_outputs(_DEAD, main="parts")
        joined = (
            parsed.parts
            | "GroupPartitions" >> beam.GroupByKey()
            | "JoinPartitions" >> beam.ParDo(_JoinPartitionFn(self._options)).with_outputs(_DEAD, main="rows")
        )
        dead = (parsed[_DEAD], joined[_DEAD]) | "MergeDeadLetters" >> beam.Flatten()
        return {"rows": joined.rows, "dead": dead}
