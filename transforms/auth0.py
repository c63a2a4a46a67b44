"""Auth0 exports → user rows: parse profile and password files, join them, map, validate.

Shape of the work (few, large elements; see ``transforms/records.py``)::

    files ─ PlanUnits ─ Reshuffle ─ ParseUnits ──► (partition, (kind, blob)) ─ GroupByKey
                                       └─► dead letters (malformed, rejected profiles)
    (partition, [(PROFILES, blob), (PASSWORDS, blob), ...]) ─ JoinPartition ─► (partition, rows_blob)
                                                                     └─► dead letters

ParseUnits does all per-record work (parse, map, validate, encode) in parallel over 32 MB units;
JoinPartition only matches small tuples and splices the chosen hash into the encoded user. The
partition is a stable hash of the e-mail trimmed and case-folded, so a profile and its password
records always meet in the same partition and the join is linear in the input size.

Example::

    result = (pipeline | 'ReadAuth0' >> ReadAuth0Users(profile_files, password_files, options))
    rows, dead = result['rows'], result['dead']
"""
from __future__ import annotations

import dataclasses
import logging
import pickle
from typing import Any, Iterable, Iterator, Sequence

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms import fileio
from transforms.records import NAMESPACE, dead_letter, no_gc, pack_rows, partition_of, user_name_key
from transforms.spill import load_blob, write_spill
from transforms.auth0_mapping import (
    map_profile,
    metadata_entries,
    normalise_email,
    password_date,
    password_oid,
    pick_profile,
)
from transforms.validate import Reason, ValidationOptions, hash_problem, validate_user

__all__ = [
    "Auth0Options",
    "ReadAuth0Users",
    "map_profile",
    "metadata_entries",
    "normalise_email",
    "password_oid",
    "password_date",
    "with_password",
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
# Password: (file_index, position, email_key, oid, date, hash, raw).
_ProfileItem = tuple[int, int, str, str, str, Any, bytes, bytes, tuple, bytes]
_PasswordItem = tuple[int, int, str, str, str, str, bytes]


class _ParseUnitFn(beam.DoFn):
    """Parse, map and validate one unit; emit one ``(partition, (kind, blob))`` per partition.

    Everything that needs only one record happens here, in parallel over units: JSON parsing,
    the zitadel-tools mapping, the import API's profile rules, the metadata. The join that
    follows then only matches small tuples and splices the chosen hash into the encoded user.
    """

    def __init__(self, partitions: int, options: Auth0Options, tmp_dir: str):
        self._partitions = partitions
        self._options = options
        self._tmp_dir = tmp_dir

    def setup(self):
        self._read = {k: _counter(f"auth0.{_SOURCES[k].split('-')[1]}s_read") for k in _SOURCES}
        self._metadata_dropped = _counter("auth0.metadata_dropped")

    def process(self, element: tuple[int, fileio.Unit]):
        kind, unit = element
        source = _SOURCES[kind]
        parts: dict[int, list[tuple]] = {}
        count = 0
        with no_gc():
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
                email = normalise_email(value.get("email"))
                if kind == PROFILES:
                    item = self._profile(sortkey, email, value, raw)
                    if item[5] is not None:
                        yield beam.pvalue.TaggedOutput(_DEAD, dead_letter(
                            sortkey, item[5][0], item[5][1], source, orjson.Fragment(raw)))
                else:
                    problem = _password_problem(value, email)
                    if problem is not None:
                        yield beam.pvalue.TaggedOutput(_DEAD, dead_letter(
                            sortkey, problem[0], problem[1], source, orjson.Fragment(raw)))
                        continue
                    item = (sortkey[0], sortkey[1], email, password_oid(value), password_date(value),
                            value["passwordHash"], raw)
                parts.setdefault(partition_of(email, self._partitions), []).append(item)
        self._read[kind].inc(count)
        for part, items in parts.items():
            name = f"parse-{kind}-{unit.index:06d}-{unit.start:013d}-p{part:03d}.pkl"
            yield part, (kind, write_spill(self._tmp_dir, name, pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)))

    def _profile(self, sortkey, email: str, profile: dict[str, Any], raw: bytes) -> _ProfileItem:
        opts = self._options
        user_id = profile.get("user_id") if isinstance(profile.get("user_id"), str) else ""
        problem = _profile_problem(profile, email, opts.include_blocked)
        entry_json, meta_json, notes, name_key = b"", b"", (), ""
        if problem is None:
            entry = map_profile(profile, None, opts.email_verified)
            result = validate_user(entry, opts.validation)
            if result.reason is not None:
                problem = (result.reason, result.detail)
            else:
                notes = tuple(result.notes)
                name_key = user_name_key(entry["user"]["userName"])
                entry_json = orjson.dumps(entry)
                if opts.metadata:
                    metadata, dropped = metadata_entries(profile)
                    self._metadata_dropped.inc(dropped)
                    if metadata:
                        meta_json = orjson.dumps([{"id": user_id, **m} for m in metadata])[1:-1]
        return (sortkey[0], sortkey[1], email, user_id, name_key, problem, entry_json, meta_json, notes, raw)


def _profile_problem(profile: dict[str, Any], email: str, include_blocked: bool) -> tuple[str, str] | None:
    user_id = profile.get("user_id")
    if not isinstance(user_id, str) or not user_id.strip():
        return Reason.MISSING_USER_ID, "profile has no user_id"
    if not email:
        return Reason.MISSING_EMAIL, "profile has no e-mail address"
    if profile.get("blocked") is True and not include_blocked:
        return Reason.BLOCKED, "user is blocked in Auth0 (use --include-blocked to import anyway)"
    return None


def _password_problem(record: dict[str, Any], email: str) -> tuple[str, str] | None:
    if not email:
        return Reason.MISSING_EMAIL, "password record has no e-mail"
    if not isinstance(record.get("passwordHash"), str) or not record["passwordHash"]:
        return Reason.MISSING_PASSWORD_HASH, "password record has no passwordHash"
    return None


def with_password(entry_json: bytes, password_hash: str) -> bytes:
    """Append ``hashedPassword`` as the last field of ``user`` in an encoded entry.

    ``map_profile`` puts ``user`` last in the entry and ``hashedPassword`` last in the user, so
    this gives exactly the bytes of encoding the entry with the hash (tested against it).
    """
    return entry_json[:-2] + b',"hashedPassword":{"value":' + orjson.dumps(password_hash) + b"}}}"


class _JoinPartitionFn(beam.DoFn):
    """Match the password records of one partition to their profiles; emit encoded rows."""

    def __init__(self, options: Auth0Options, tmp_dir: str):
        self._options = options
        self._tmp_dir = tmp_dir

    def setup(self):
        self._conflicts = _counter("auth0.password_conflicts")
        self._notes: dict[str, Any] = {}

    def process(self, element: tuple[int, Iterable[tuple[int, bytes]]]):
        part, blobs = element
        with no_gc():
            yield from self._join(part, blobs)

    def _note(self, note: str) -> None:
        if note not in self._notes:
            self._notes[note] = _counter(f"notes.{note}")
        self._notes[note].inc()

    def _join(self, part: int, blobs: Iterable[tuple[int, bytes]]):
        profiles: list[_ProfileItem] = []
        passwords: list[_PasswordItem] = []
        for kind, spilled in blobs:
            (profiles if kind == PROFILES else passwords).extend(pickle.loads(load_blob(spilled)))
        profiles.sort(key=lambda r: (r[0], r[1]))
        passwords.sort(key=lambda r: (r[0], r[1]))

        by_email: dict[str, list[int]] = {}
        for index, item in enumerate(profiles):
            by_email.setdefault(item[2], []).append(index)

        assigned: dict[int, list[_PasswordItem]] = {}
        for pw in passwords:
            candidates = by_email.get(pw[2], [])
            choice = pick_profile(pw[3], [profiles[i][3] for i in candidates])
            if choice is None:
                reason = Reason.ORPHAN_PASSWORD if not candidates else Reason.AMBIGUOUS_PASSWORD
                detail = ("no profile has this e-mail" if not candidates else
                          f"{len(candidates)} profiles share this e-mail and none matches the record's id")
                yield _dl(pw, reason, detail, PASSWORDS, pw[6])
                continue
            assigned.setdefault(candidates[choice], []).append(pw)

        rows = []
        for index, item in enumerate(profiles):
            chosen = None
            pws = assigned.get(index)
            if pws:
                pws.sort(key=lambda r: (r[4], r[0], r[1]))
                chosen = pws[-1]
                for older in pws[:-1]:
                    self._conflicts.inc()
                    yield _dl(older, Reason.PASSWORD_SUPERSEDED, "a newer password record exists for this e-mail",
                              PASSWORDS, older[6])
            problem = item[5]
            entry_json = item[6]
            if problem is None and chosen is not None:
                problem = hash_problem(chosen[5], self._options.validation)
                if problem is not None:  # the profile was fine; the hash is not: reject both
                    yield _dl(item, problem[0], problem[1], PROFILES, item[9])
                else:
                    entry_json = with_password(entry_json, chosen[5])
            if problem is not None:
                if chosen is not None:
                    yield _dl(chosen, Reason.PROFILE_REJECTED, f"its profile was dead-lettered ({problem[0]})",
                              PASSWORDS, chosen[6])
                continue
            for note in item[8]:
                self._note(note)
            companions = b""
            if chosen is not None:
                companions = orjson.dumps([[[chosen[0], chosen[1]], PASSWORD_SOURCE, orjson.Fragment(chosen[6])]])
            rows.append((item[0], item[1], item[3], item[4], entry_json, item[7], chosen is not None,
                         PROFILE_SOURCE, item[9], companions))
        if rows:
            yield part, write_spill(self._tmp_dir, f"rows-p{part:03d}.pkl", pack_rows(rows))


def _dl(item, reason: str, detail: str, kind: int, raw: bytes):
    return beam.pvalue.TaggedOutput(_DEAD, dead_letter(
        (item[0], item[1]), reason, detail, _SOURCES[kind], orjson.Fragment(raw)))


# --------------------------------------------------------------------------- PTransform


class ReadAuth0Users(beam.PTransform):
    """Auth0 profile + password files → ``{'rows': (partition, rows spill path), 'dead': dead letters}``.

    Intermediate data goes to spill files under ``tmp_dir`` (see ``transforms/spill.py``).

    ``profile_files`` and ``password_files`` come from ``fileio.match_inputs`` (run in the
    launcher, so a missing file fails before the pipeline starts).
    """

    def __init__(self, profile_files: Sequence[fileio.InputFile], password_files: Sequence[fileio.InputFile],
                 options: Auth0Options, partitions: int, tmp_dir: str):
        super().__init__()
        self._files = [(PROFILES, f) for f in profile_files] + [(PASSWORDS, f) for f in password_files]
        self._options = options
        self._partitions = partitions
        self._tmp_dir = tmp_dir

    def expand(self, pbegin):
        units = (
            pbegin
            | "ListFiles" >> beam.Create(self._files)
            | "PlanUnits" >> beam.ParDo(_PlanUnitsFn())
            | "SpreadUnits" >> beam.Reshuffle()
        )
        parsed = units | "ParseUnits" >> beam.ParDo(_ParseUnitFn(self._partitions, self._options, self._tmp_dir)).with_outputs(
            _DEAD, main="parts")
        joined = (
            parsed.parts
            | "GroupPartitions" >> beam.GroupByKey()
            | "JoinPartitions" >> beam.ParDo(_JoinPartitionFn(self._options, self._tmp_dir)).with_outputs(_DEAD, main="rows")
        )
        dead = (parsed[_DEAD], joined[_DEAD]) | "MergeDeadLetters" >> beam.Flatten()
        return {"rows": joined.rows, "dead": dead}
