"""Tables of users → user rows: read CSV, NDJSON or JSON-array files, map, convert hashes, validate.

Shape of the work (few, large elements; see ``transforms/common/records.py``)::

    TableFile per file ─ PlanUnits ─ Reshuffle ─ ReadUnits ──► (partition, rows spill path)
                                                    │           one per partition and ~20,000 records
                                                    ├─► dead letters (sortkey, line)
                                                    └─► roles (with --project-id)

A CSV file is one unit (a quoted cell may hold a newline, so the file cannot be cut at
arbitrary bytes; give several files, a glob, to read in parallel); a large uncompressed NDJSON
file is cut into 32 MB ranges (``json_units.plan_units``). What one record becomes is the pure
mapping (``mapping.py``); this module reads, counts and packs.

Each row's record is ``{"id", "blocked", "record"}``: the id and blocked flag as the mapping
read them (what a scheduled sync asks of a record, ``source.py``) and
the record as read (a CSV row as ``{column: text}``).

Example::

    result = pipeline | "ReadTable" >> ReadTableUsers(files, TableOptions(spec=spec), 32, tmp_dir)
    rows, dead = result.rows, result.dead
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.common import counters, live_tally
from transforms.common.errors import one_line
from transforms.common.reasons import Reason
from transforms.common.records import (
    NAMESPACE,
    DeadLetter,
    EncodedRow,
    Grants,
    PartitionRows,
    SortKey,
    dead_letter,
    encoded_row,
    intern_tallies,
    no_gc,
    partition_of,
    user_name_key,
)
from transforms.files.spill import spill_parts
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.fields import FieldTally
from transforms.mapping.roles import RoleEntry
from transforms.sources import json_units
from transforms.sources.auth0.roles import JoinRoles
from transforms.sources.input_stream import InputReadError, open_input
from transforms.sources.source_parts import ReadUsers
from transforms.sources.table import accounting as ta
from transforms.sources.table.csv_rows import read_csv
from transforms.sources.table.mapping import TableOptions, TableRejection, TableUser, map_record
from transforms.sources.table.sample import NestedFields, holds, selected
from transforms.sources.table.spec import TableSpec, for_columns

__all__ = ["ReadTableUsers", "TableFile", "CHUNK_RECORDS", "CSV"]

_LOGGER = logging.getLogger(__name__)

_DEAD = "dead"
_ROLES = "roles"
CSV = "csv"
CHUNK_RECORDS = 20_000


@dataclasses.dataclass(frozen=True)
class TableFile:
    """A matched input file, its index in the sort key, and whether it is read as CSV."""

    index: int
    path: str
    size: int
    csv: bool
    delimiter: str = ","
    delimiter_detected: bool = False  # read from the header line (no --delimiter)
    encoding: str = "utf-8"  # --encoding (CSV)
    items: str | None = None  # a wrapper's records ({"data": [...]}: "data.item"), JSON only


# What the readers yield: (position, record or None, the record's JSON or None, (reason, detail) or None)
_Read = tuple[int, object, "bytes | None", "tuple[str, str] | None"]


class _PlanUnitsFn(beam.DoFn):
    """A file → its units (CSV: the whole file; JSON: ``json_units.plan_units``)."""

    def process(self, file: TableFile) -> Iterator[tuple[TableFile, json_units.Unit]]:
        if file.csv:
            yield file, json_units.Unit(file.index, file.path, CSV)
            return
        if file.items is not None:  # the records of a wrapper object: one array, streamed
            yield file, json_units.Unit(file.index, file.path, json_units.ARRAY, items=file.items)
            return
        for unit in json_units.plan_units(json_units.InputFile(file.index, file.path, file.size)):
            yield file, unit


class _ReadUnitFn(beam.DoFn):
    """Read one unit's records; emit ``(partition, spill path)`` per partition every chunk."""

    def __init__(self, options: TableOptions, partitions: int, tmp_dir: str, project: str | None):
        self._options = options
        self._partitions = partitions
        self._tmp_dir = tmp_dir
        self._project = project  # --project-id: roles become grants

    def setup(self):
        self._tally = HashTally()
        self._fields: FieldTally | None = None
        self._nested = NestedFields(self._options.spec)
        self._holds = _holds(self._options.spec)

    def process(self, element: tuple[TableFile, json_units.Unit]):
        file, unit = element
        counts: collections.Counter[str] = collections.Counter()
        parts: dict[int, list[EncodedRow]] = {}
        roles = JoinRoles(self._project)
        try:
            with no_gc():
                records = self._csv(file, counts) if file.csv else self._json(unit)
                read = 0
                for position, record, raw, problem in records:
                    sortkey = (unit.index, position)
                    if raw is None and record is None:  # the rest of the file cannot be read
                        counts[ta.UNREADABLE_FILES] += 1
                        yield _dead(sortkey, problem or ("", ""), ta.FILE_SOURCE, {"file": file.path})
                        continue
                    counts[ta.RECORDS_READ] += 1
                    letter = self._one(sortkey, record, raw, problem, parts, counts, roles)
                    if letter is not None:
                        yield letter
                    read += 1
                    if not read & 4095:  # the live line (live_tally.py)
                        live_tally.add(live_tally.PARSED, 4096)
                    if read % CHUNK_RECORDS == 0:
                        yield from self._flush(unit, position, parts)
                live_tally.add(live_tally.PARSED, read & 4095)
                yield from self._flush(unit, -1, parts)
            if self._project is not None:
                yield beam.pvalue.TaggedOutput(_ROLES, roles.publish())
        finally:
            counts[ta.RECORDS_READ] += 0  # always reported, even for an empty table
            for name, value in counts.items():
                Metrics.counter(NAMESPACE, name).inc(value)
            self._tally.publish()

    def _csv(self, file: TableFile, counts: collections.Counter[str]) -> Iterator[_Read]:
        """The rows of a CSV file, mapped with the mapping spelled as its header spells columns."""
        read = 0
        try:
            with open_input(file.path, progress=True) as stream:
                if stream.encoding:
                    counts[counters.INPUTS_DECODED + stream.encoding] += 1
                header, rows = read_csv(stream, file.delimiter, file.encoding)
                spec, _ = for_columns(self._options.spec, header)
                self._file_options = dataclasses.replace(self._options, spec=spec)
                # Columns the mapping does not name: counted per written user who had a value.
                mapped = frozenset(spec.first_parts())
                self._fields = FieldTally(ta.PREFIX, mapped, frozenset(header) - mapped)
                self._nested = NestedFields(spec)
                self._holds = _holds(spec)
                for position, record, problem in rows:
                    read += 1
                    yield position, record, None, problem
        except InputReadError as err:
            counts[f"{counters.INPUTS_PARTIAL}{file.index}"] += read
            detail = f"{one_line(err)}; {read} rows were read before it, the rest of the file was not read"
            _LOGGER.error("%s: %s", file.path, detail)
            yield read, None, None, (Reason.UNREADABLE_INPUT, detail)

    def _json(self, unit: json_units.Unit) -> Iterator[_Read]:
        self._file_options = self._options
        # Keys the mapping does not name: counted (by name) per written user as unknown fields.
        self._fields = FieldTally(ta.PREFIX, frozenset(self._options.spec.first_parts()), frozenset())
        self._nested = NestedFields(self._options.spec)
        self._holds = _holds(self._options.spec)
        for position, raw, value, error in json_units.read_unit(unit):
            reason = getattr(error, "reason", Reason.MALFORMED_JSON)
            if error is not None and reason == Reason.UNREADABLE_INPUT and raw is None:
                yield position, None, None, (reason, str(error))  # the rest of the file
            elif error is not None:  # this record only
                yield position, {"position": position} if raw is None else {}, raw, (reason, str(error))
            else:
                yield position, value, raw, None

    def _one(
        self,
        sortkey: SortKey,
        record: object,
        raw: bytes | None,
        problem: tuple[str, str] | None,
        parts: dict[int, list[EncodedRow]],
        counts: collections.Counter[str],
        roles: JoinRoles,
    ) -> beam.pvalue.TaggedOutput | None:
        if problem is not None:  # a record that did not read: its id cannot be told
            # Its text as it was (it may not be JSON), or the CSV cells read.
            text = raw.decode("utf-8", "replace") if raw is not None else record
            return _dead(sortkey, problem, ta.SOURCE, {"id": None, "blocked": False, "record": text})
        if type(record) is dict and not self._selected(record, counts):
            return None  # --where: not a user; counted, neither written nor dead-lettered
        shown = orjson.Fragment(raw) if raw is not None else record
        mapped = map_record(record, self._file_options)
        if isinstance(mapped, TableRejection):
            roles.user(mapped.roles, (), dead=True)
            self._tally.refused(mapped.refused)
            if mapped.form_outcome is not None:
                self._tally.rewritten(mapped.form_outcome)
            envelope = {"id": mapped.user_id, "blocked": mapped.blocked, "record": shown}
            return _dead(sortkey, (mapped.reason, mapped.detail), ta.SOURCE, envelope)
        grants = roles.user(mapped.roles, (), dead=False)
        if mapped.roles and self._project is None:
            counts[counters.ROLES_USERS_HOLDING] += 1
        envelope_json = orjson.dumps({"id": mapped.user_id, "blocked": mapped.blocked, "record": shown})
        written = self._written(mapped, record)
        parts.setdefault(partition_of(mapped.user_id, self._partitions), []).append(
            _row(sortkey, mapped, envelope_json, grants, written)
        )
        self._count_converted(mapped, counts)
        return None

    def _selected(self, record: dict, counts: collections.Counter[str]) -> bool:
        """Whether ``--where`` selects ``record`` (else counted as not selected); a selected
        record counts, per mapped field, whether it held a value there."""
        spec = self._file_options.spec
        if spec.where and not selected(record, spec.where):
            counts[ta.NOT_SELECTED] += 1
            return False
        for name, holds_value in self._holds:
            if holds_value(record):
                counts[name] += 1
        return True

    def _written(self, mapped: TableUser, record: object) -> tuple[tuple[str, ...], bytes]:
        """What the summary and the manifest count about the user once it is written: the row's
        ``tallies`` and passwordless line (transforms/output/written.py counts them)."""
        names = []
        line = b""
        if mapped.password is None:
            names.append(counters.CANNOT_SIGN_IN + ta.PREFIX)
        if mapped.form_outcome is not None:  # its form counted, and its verifier's parameters
            names.append(self._tally.form_name(mapped.form_outcome))
        if mapped.dropped_hash is not None:
            email = mapped.entry["user"].get("email") or {}
            name, line = passwordless(mapped.dropped_hash.reason, mapped.user_id, email.get("email"))
            names.append(name)
            refused = self._tally.refused_name(mapped.dropped_hash.refused)
            if refused is not None:
                names.append(refused)
        names += [counters.note(note) for note in mapped.notes]
        fields = (
            self._fields.names(record, self._nested.names(record))
            if self._fields is not None and type(record) is dict
            else ()
        )
        return (intern_tallies((*fields, *names)) if names else fields), line

    def _count_converted(self, mapped: TableUser, counts: collections.Counter[str]) -> None:
        """What the summary counts about a record converted (written or, later, a duplicate)."""
        if mapped.password is not None:
            counts[ta.WITH_PASSWORD + mapped.password] += 1
        else:
            counts[ta.WITHOUT_PASSWORD] += 1
        if mapped.dropped_hash is not None:
            counts[ta.PASSWORD_DROPPED + mapped.dropped_hash.reason] += 1
        if mapped.metadata or mapped.metadata_dropped:
            counts[ta.METADATA_ENTRIES] += len(mapped.metadata)
            counts[ta.METADATA_DROPPED] += mapped.metadata_dropped

    def _flush(
        self, unit: json_units.Unit, position: int, parts: dict[int, list[EncodedRow]]
    ) -> Iterator[tuple[int, bytes | str]]:
        """One spill file per partition (files/spill.py)."""
        mark = "end" if position < 0 else f"{position:012d}"
        prefix = f"table-{unit.index:05d}-{max(unit.start, 0):012d}-{mark}"
        return spill_parts(parts, self._tmp_dir, lambda part: f"{prefix}-p{part:03d}.pkl")


def _holds(spec: TableSpec) -> list[tuple[str, Callable[[dict], bool]]]:
    """(counter name, whether a record holds a value there) of each mapped field."""
    return [(ta.MAPPED + field, holds(path)) for field, path in spec.fields.items()]


def _row(
    sortkey: SortKey,
    mapped: TableUser,
    envelope_json: bytes,
    grants: Grants,
    written: tuple[tuple[str, ...], bytes],
) -> EncodedRow:
    """A table user's row (``records.encoded_row``); ``written``: its tallies and passwordless line."""
    file_index, position = sortkey
    metadata = mapped.metadata
    meta = orjson.dumps([{"id": mapped.user_id, **item} for item in metadata])[1:-1] if metadata else b""
    return encoded_row(
        file_index=file_index,
        position=position,
        user_id=mapped.user_id,
        name_key=user_name_key(mapped.entry["user"].get("userName")),
        entry_json=orjson.dumps(mapped.entry),
        metadata_json=meta,
        password=mapped.converted.verifier
        if mapped.converted is not None
        else "password"
        if mapped.password
        else "",
        source=ta.SOURCE,
        record_json=envelope_json,
        companions_json=b"",
        grants=grants or (),
        tallies=written[0],
        passwordless=written[1],
    )


def _dead(
    sortkey: SortKey, problem: tuple[str, str], source: str, record: object
) -> beam.pvalue.TaggedOutput:
    reason, detail = problem
    try:
        letter = dead_letter(sortkey, reason, detail, source, record)
    except orjson.JSONEncodeError:  # the record itself cannot be written as JSON: point at it
        letter = dead_letter(
            sortkey, reason, detail, source, {"unencodable_record": True, "position": sortkey[1]}
        )
    return beam.pvalue.TaggedOutput(_DEAD, letter)


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadTableUsers(beam.PTransform):
    """Table files → ``{'rows': (partition, spill path), 'dead': dead letters}`` (+ ``roles``
    with ``project``, the ``--project-id``: the project roles the users hold)."""

    def __init__(
        self,
        files: Sequence[TableFile],
        options: TableOptions,
        partitions: int,
        tmp_dir: str,
        project: str | None = None,
    ):
        super().__init__()
        self._files = list(files)
        self._options = options
        self._partitions = partitions
        self._tmp_dir = tmp_dir
        self._project = project

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        """Returns ``ReadUsers(rows, dead)`` (and ``roles`` when asked for them)."""
        read = (
            pbegin
            | "ListTableFiles" >> beam.Create(self._files)
            | "PlanUnits" >> beam.ParDo(_PlanUnitsFn())
            | "SpreadUnits" >> beam.Reshuffle()
            | "ReadUnits"
            >> beam.ParDo(_ReadUnitFn(self._options, self._partitions, self._tmp_dir, self._project))
            .with_output_types(PartitionRows, **{_DEAD: DeadLetter, _ROLES: list[RoleEntry]})
            .with_outputs(_DEAD, _ROLES, main="rows")
        )
        if self._project is not None:
            return ReadUsers(read.rows, read[_DEAD], read[_ROLES])
        return ReadUsers(read.rows, read[_DEAD])
