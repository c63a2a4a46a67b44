"""Tables of users → user rows: the table's part of the shared reader (``file_reader.py``).

Shape of the work (few, large elements; see ``transforms/common/records.py``)::

    TableFile per file ─ PlanUnits ─ Reshuffle ─ ReadUnits ──► (partition, rows spill path)
                                                    │           one per partition and ~20,000 records
                                                    ├─► dead letters (sortkey, line)
                                                    └─► roles (with --project-id)

A CSV file is one unit (a quoted cell may hold a newline, so the file cannot be cut at
arbitrary bytes; give several files, a glob, to read in parallel), read by the shared CSV reader
(``transforms/sources/csv_rows.py``); a large uncompressed NDJSON file is cut into 32 MB ranges
(``json_units.plan_units``). What one record becomes is the pure mapping (``mapping.py``); the
shared reader (``transforms/sources/file_reader.py``) opens, counts and packs.

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
from collections.abc import Callable, Iterator, Sequence

import apache_beam as beam
import orjson

from transforms.common import counters
from transforms.common.reasons import Reason
from transforms.common.records import SortKey
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.fields import FieldTally
from transforms.mapping.roles import RoleEntry
from transforms.sources import json_units
from transforms.sources.csv_rows import read_csv
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    RestUnreadable,
    SourceFile,
    UserRow,
    encode_user,
    row_tallies,
)
from transforms.sources.input_stream import InputStream
from transforms.sources.role_grants import JoinRoles
from transforms.sources.source_parts import ReadUsers
from transforms.sources.table import accounting as ta
from transforms.sources.table.mapping import TableOptions, TableRejection, TableUser, map_record
from transforms.sources.table.sample import NestedFields, holds, selected
from transforms.sources.table.spec import TableSpec, for_columns

__all__ = ["ReadTableUsers", "TableFile", "CHUNK_RECORDS", "CSV"]

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


@dataclasses.dataclass(frozen=True)
class _TableUnit:
    """A unit of a table file: the whole file (CSV, a wrapper's array) or a range of NDJSON."""

    file: TableFile
    unit: json_units.Unit

    @property
    def index(self) -> int:
        return self.unit.index

    @property
    def path(self) -> str:
        return self.unit.path


class _TablePart(RecordPart[_TableUnit]):
    """A table's records (CSV rows, JSON records) → rows, with ``--where`` and roles (``file_reader.py``)."""

    name, source, file_source = "table", ta.SOURCE, ta.FILE_SOURCE
    read, unreadable, noun = ta.RECORDS_READ, ta.UNREADABLE_FILES, "rows"

    def __init__(self, options: TableOptions, project: str | None):
        self._options = options
        self._project = project  # --project-id: roles become grants
        self.collects_roles = project is not None

    def setup(self) -> None:
        self._tally = HashTally()
        self._roles = JoinRoles(self._project)

    def units(self, file: SourceFile) -> Iterator[_TableUnit]:
        assert isinstance(file, TableFile)  # ReadTableUsers reads TableFiles
        if file.csv:
            yield _TableUnit(file, json_units.Unit(file.index, file.path, CSV))
        elif file.items is not None:  # the records of a wrapper object: one array, streamed
            yield _TableUnit(file, json_units.Unit(file.index, file.path, json_units.ARRAY, items=file.items))
        else:
            for unit in json_units.plan_units(json_units.InputFile(file.index, file.path, file.size)):
                yield _TableUnit(file, unit)

    def begin(self, unit: _TableUnit, counts: collections.Counter[str]) -> None:
        self._roles = JoinRoles(self._project)  # the grants of this unit's users

    def split(self, unit: _TableUnit, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        spec = self._options.spec
        if unit.file.csv:  # the mapping spelled as the header spells columns
            header, rows = read_csv(open_stream(), unit.file.delimiter, unit.file.encoding)
            spec, _ = for_columns(self._options.spec, header)
            mapped = frozenset(spec.first_parts())
            # Columns the mapping does not name: counted per written user who had a value.
            self._fields = FieldTally(ta.PREFIX, mapped, frozenset(header) - mapped)
            records: Iterator[Record] = (
                Record(p, _shown(record) if problem else record, None, problem) for p, record, problem in rows
            )
        else:  # keys the mapping does not name: counted (by name) per written user as unknown fields
            self._fields = FieldTally(ta.PREFIX, frozenset(spec.first_parts()), frozenset())
            records = _json_records(unit.unit)
        self._file_options = dataclasses.replace(self._options, spec=spec)
        self._nested = NestedFields(spec)
        self._holds = _holds(spec)
        return records

    def finish(self) -> list[RoleEntry] | None:
        self._tally.publish()
        return self._roles.publish() if self._project is not None else None

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected | None:
        value, raw = record.value, record.raw
        if type(value) is dict and not self._selected(value, counts):
            return None  # --where: not a user; counted, neither written nor dead-lettered
        shown = orjson.Fragment(raw) if raw is not None else value
        mapped = map_record(value, self._file_options)
        if isinstance(mapped, TableRejection):
            self._roles.user(mapped.roles, (), dead=True)
            self._tally.refused(mapped.refused)
            if mapped.form_outcome is not None:
                self._tally.rewritten(mapped.form_outcome)
            envelope = {"id": mapped.user_id, "blocked": mapped.blocked, "record": shown}
            return Rejected(mapped.reason, mapped.detail, envelope)
        grants = self._roles.user(mapped.roles, (), dead=False)
        if mapped.roles and self._project is None:
            counts[counters.ROLES_USERS_HOLDING] += 1
        tallies, line = self._written(mapped, value)
        row = encode_user(
            sortkey,
            source=ta.SOURCE,
            user_id=mapped.user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            password=_password(mapped),
            record_json=orjson.dumps({"id": mapped.user_id, "blocked": mapped.blocked, "record": shown}),
            grants=grants or (),
            tallies=tallies,
            passwordless=line,
        )
        self._count_converted(mapped, counts)
        return UserRow(mapped.user_id, row)

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
        return row_tallies(fields, names), line

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


def _password(mapped: TableUser) -> str:
    """The verifier of the user's hash, "password" for a clear-text one, "" for none."""
    if mapped.converted is not None:
        return mapped.converted.verifier
    return "password" if mapped.password else ""


def _shown(record: object) -> dict[str, object]:
    """The envelope of a record that did not read: its id cannot be told."""
    return {"id": None, "blocked": False, "record": record}


def _json_records(unit: json_units.Unit) -> Iterator[Record]:
    """A JSON unit's records (``json_units.read_unit``); a record that did not parse shows its
    text as it was (it may not be JSON), or where it was."""
    for position, raw, value, error in json_units.read_unit(unit):
        if error is None:
            yield Record(position, value, raw)
            continue
        reason = getattr(error, "reason", Reason.MALFORMED_JSON)
        if reason == Reason.UNREADABLE_INPUT and raw is None:  # the rest of the file
            raise RestUnreadable(str(error), position, logged=True)
        text = raw.decode("utf-8", "replace") if raw is not None else {"position": position}
        yield Record(position, _shown(text), None, (reason, str(error)))


def _holds(spec: TableSpec) -> list[tuple[str, Callable[[dict], bool]]]:
    """(counter name, whether a record holds a value there) of each mapped field."""
    return [(ta.MAPPED + field, holds(path)) for field, path in spec.fields.items()]


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
        part = _TablePart(options, project)
        self._read = ReadSourceFiles[_TableUnit](
            files, part, partitions=partitions, tmp_dir=tmp_dir, chunk=CHUNK_RECORDS
        )

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        """Returns ``ReadUsers(rows, dead)`` (and ``roles`` when asked for them)."""
        return pbegin | "ReadTableFiles" >> self._read
