"""One reader for file-based sources: files → user rows, dead letters (and roles).

A source that reads files gives a :class:`RecordPart`: how one of its files splits into records
(:meth:`RecordPart.split`: JSON units, CSV rows, a realm's users) and what one record becomes
(:meth:`RecordPart.convert`: a :class:`UserRow`, a :class:`Rejected` record, or None for a record
that is not a user). :class:`ReadSourceFiles` does the rest, the same for every source::

    files ─ units ─ Reshuffle ─ ReadUnits ──► (partition, rows_blob or spill path)
                                    │           one per partition and ~20,000 records
                                    ├─► dead letters (sortkey, line)
                                    └─► roles (when the part collects them)

- opening (``input_stream.open_input``: local or gs://, gzip, a BOM, UTF-16/32; the decoding
  counted), one unit per worker, the records counted (``part.read``) and shown on the live line;
- the dead letter of a record that did not read or was rejected, with the record pointed at when
  it cannot be written as JSON, and of a user whose row cannot be encoded as JSON;
- the one dead letter for the rest of a file that cannot be read on (a cut ``.gz``, a syntax
  error), logged and counted (``part.unreadable``, ``inputs.partial.<file>``);
- rows buffered per partition and flushed every ``chunk`` records, as blobs or spill files.

Which files to read is planned in the launcher by the shared planner, ``input_plan.py`` (patterns
matched, each file's head read, a file of another source's shape or a SQL dump refused naming
what reads it, then the source's own look at each head). Beam's
``fileio.MatchFiles``/``ReadMatches`` are not used: a missing file or a file of the wrong kind must
fail before the pipeline starts, with one line, so matching happens in the launcher and the planned
list travels into the pipeline with ``beam.Create``; and a matched file is opened by
``open_input``, which adds what ``ReadableFile.open`` lacks (gzip told by its bytes, BOMs,
UTF-16/32, a damaged ``.gz`` told apart from its records) (docs/inputs.md).

Example (a source's whole reader)::

    class _OktaPart(RecordPart[SourceFile], counters=SourceCounters("okta")):  # okta-user, ...
        def split(self, unit, open_stream):
            return csv_records(open_stream())
        def convert(self, record, sortkey, counts):
            ...  # map record.value; return UserRow(key, encode_user(...)) or Rejected(...)

    result = pipeline | "ReadOkta" >> ReadSourceFiles(files, _OktaPart(), partitions=32, tmp_dir=tmp)
"""

from __future__ import annotations

import collections
import contextlib
import csv
import functools
import logging
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Generic, NamedTuple, Protocol, TypeVar, cast

import apache_beam as beam
import ijson
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
from transforms.mapping.roles import RoleEntry
from transforms.sources.csv_rows import read_csv
from transforms.sources.input_stream import (
    DepthGuard,
    InputReadError,
    InputStream,
    has_marker,
    marker_problem,
    open_input,
)
from transforms.sources.source_counters import SourceCounters
from transforms.sources.source_parts import ReadUsers

__all__ = [
    "ReadSourceFiles",
    "RecordPart",
    "SourceFile",
    "Record",
    "UserRow",
    "Rejected",
    "RestUnreadable",
    "guarded_records",
    "csv_records",
    "encode_user",
    "row_tallies",
    "CHUNK_RECORDS",
]

_LOGGER = logging.getLogger(__name__)

_DEAD = "dead"
_ROLES = "roles"
# Records read before the buffered rows are flushed as one blob per partition: large enough that
# Beam moves few elements, small enough that a worker holds only a slice of a 1 GB file.
CHUNK_RECORDS = 20_000
# What ends a file's reading with "the rest was not read" besides a cut .gz: a syntax error of the
# parser (ijson, csv), bad UTF-8 or a number out of range (ValueError).
_SYNTAX_ERRORS = (ijson.JSONError, csv.Error, ValueError)


class SourceFile(Protocol):
    """What the reader needs of a unit of work: its file's ``index`` (the sort key) and ``path``."""

    @property
    def index(self) -> int: ...

    @property
    def path(self) -> str: ...


class Record(NamedTuple):
    """One record as a part's :meth:`~RecordPart.split` yields it.

    ``position``: its place in the file (the sort key's second half); ``value``: the record as read
    (or, with ``problem``, what its dead letter shows); ``raw``: its JSON text when the split kept
    it; ``problem``: ``(reason, detail)`` when this record did not read."""

    position: int
    value: object
    raw: bytes | None = None
    problem: tuple[str, str] | None = None


class UserRow(NamedTuple):
    """A record that became a user: ``key`` picks its partition (``records.partition_of``)."""

    key: str
    row: EncodedRow


class Rejected(NamedTuple):
    """A record that became no user: its dead letter's reason, detail and the record shown."""

    reason: str
    detail: str
    record: object


class RestUnreadable(Exception):
    """Raised by a split: nothing after this point of the file can be read (one dead letter).

    ``position``: the sort key of that dead letter (None: the records read so far); ``logged``:
    the split already logged it and counted ``inputs.partial`` (``json_units.read_unit``)."""

    def __init__(self, detail: str, position: int | None = None, logged: bool = False):
        super().__init__(detail)
        self.detail = detail
        self.position = position
        self.logged = logged


U = TypeVar("U", bound=SourceFile)


class RecordPart(Generic[U]):
    """A source's part of the reader; a subclass sets the names and writes ``split`` and ``convert``.

    Counter and record names are the source's own (its ``SourceCounters``): ``source`` marks a
    user's record, ``file_source`` the dead letter of a file's unreadable rest, ``read`` counts
    records read, ``unreadable`` files whose rest was not read; ``noun`` names the records in
    that dead letter ("users", "rows"). ``name`` prefixes its spill files."""

    name: str = ""
    source: str = ""
    file_source: str = ""
    read: str = ""
    unreadable: str = ""
    noun: str = "users"
    collects_roles: bool = False  # :meth:`finish` returns role entries (``--project-id``)

    def __init_subclass__(cls, counters: SourceCounters | None = None, **kwargs: object) -> None:
        """``class _Part(RecordPart[SourceFile], counters=COUNTERS)``: the names above from the
        source's ``SourceCounters`` (``source_counters.py``) instead of one by one."""
        super().__init_subclass__(**kwargs)
        if counters is not None:
            cls.name, cls.source, cls.file_source = counters.name, counters.source, counters.file_source
            cls.read, cls.unreadable = counters.users_read, counters.unreadable_files

    def setup(self) -> None:
        """Per worker (``DoFn.setup``): counters of field names, hash tallies."""

    def units(self, file: SourceFile) -> Iterable[U]:
        """The units a planned file is read in: the file itself by default (``U``); a part whose
        units are pieces of files (a range of a large NDJSON file) says how it cuts them."""
        return (cast(U, file),)

    def begin(self, unit: U, counts: collections.Counter[str]) -> None:
        """Before a unit's records: what is counted per file, state kept per unit."""

    def split(self, unit: U, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        """The unit's records; ``open_stream()`` opens its file (closed by the reader)."""
        raise NotImplementedError

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected | None:
        """What one record that read becomes; ``counts``: the summary's counters of this unit."""
        raise NotImplementedError

    def finish(self) -> list[RoleEntry] | None:
        """At the end of a unit (also when it failed): hash tallies published; the role entries
        the unit's users hold when :attr:`collects_roles`."""
        return None


def guarded_records(
    stream: InputStream,
    items: Callable[[DepthGuard], Iterator[object]],
    shown: Callable[[int], Mapping[str, object]],
) -> Iterator[Record]:
    """The records ``items`` streams out of JSON text behind a ``DepthGuard`` (ijson's memory
    grows with the square of the nesting depth): a record the guard cut (too deep, a number too
    long) is a problem record showing ``shown(position)``."""
    guard = DepthGuard(stream)
    seen_cuts = 0
    for position, value in enumerate(items(guard)):
        marker = has_marker(value) if guard.cut > seen_cuts else None
        if marker is None:
            yield Record(position, value)
            continue
        seen_cuts += 1
        reason, detail = marker_problem(marker)
        yield Record(position, shown(position), problem=(reason, f"user {position}: {detail}"))


def csv_records(stream: InputStream, delimiter: str = ",", encoding: str = "utf-8") -> Iterator[Record]:
    """A CSV file's data rows as records ``{column: text}``, its header naming the columns
    (``csv_rows.read_csv``: quoted newlines, blank lines skipped, a cut ``.gz`` raising where it
    ends); a row that did not read (cells unlike the header's, bytes not UTF-8) is a problem
    record showing its cells."""
    _, rows = read_csv(stream, delimiter, encoding)
    return (Record(position, record, None, problem) for position, record, problem in rows)


def encode_user(
    sortkey: SortKey,
    *,
    source: str,
    user_id: str,
    entry: Mapping[str, object],
    metadata: Sequence[Mapping[str, object]],
    password: str,
    record_json: bytes,
    grants: Grants = (),
    tallies: tuple[str, ...] = (),
    passwordless: bytes = b"",
) -> EncodedRow:
    """A user's row (``records.encoded_row``): its entry and metadata rendered as JSON once.
    ``password``: the verifier of its hash, "password" for a clear-text one, "" for none."""
    body = entry["user"]
    name = body.get("userName") if isinstance(body, Mapping) else None
    meta = orjson.dumps([{"id": user_id, **item} for item in metadata])[1:-1] if metadata else b""
    file_index, position = sortkey
    return encoded_row(
        file_index=file_index,
        position=position,
        user_id=user_id,
        name_key=user_name_key(name),
        entry_json=orjson.dumps(entry),
        metadata_json=meta,
        password=password,
        source=source,
        record_json=record_json,
        companions_json=b"",  # one record per user
        grants=grants,
        tallies=tallies,
        passwordless=passwordless,
    )


def row_tallies(fields: tuple[str, ...], names: Sequence[str]) -> tuple[str, ...]:
    """A row's ``tallies``: the field counters and the other names, shared between rows alike."""
    return intern_tallies((*fields, *names)) if names else fields


class _ReadUnitsFn(beam.DoFn, Generic[U]):
    """Read one unit's records; emit ``(partition, rows)`` per partition every chunk."""

    def __init__(self, part: RecordPart[U], partitions: int, chunk: int, tmp_dir: str | None):
        self._part = part
        self._partitions = partitions
        self._chunk = chunk
        self._tmp_dir = tmp_dir

    def setup(self):
        self._part.setup()

    def process(self, unit: U):
        part = self._part
        counts: collections.Counter[str] = collections.Counter()
        parts: dict[int, list[EncodedRow]] = {}
        read = 0
        # Spill names from the unit's repr (a frozen dataclass of plain fields: the same in every
        # worker), so a retried bundle overwrites its own files.
        prefix = f"{part.name}-{unit.index:05d}-{zlib.crc32(repr(unit).encode()):08x}"
        try:
            part.begin(unit, counts)
            with no_gc(), contextlib.ExitStack() as opened:
                records = part.split(unit, functools.partial(_open_stream, unit.path, opened, counts))
                while True:
                    try:
                        record = next(records)
                    except StopIteration:
                        break
                    except (RestUnreadable, InputReadError, *_SYNTAX_ERRORS) as err:
                        yield self._unreadable_rest(unit, read, err, counts)
                        break
                    letter = self._one(record, (unit.index, record.position), parts, counts)
                    if letter is not None:
                        yield beam.pvalue.TaggedOutput(_DEAD, letter)
                    read += 1
                    if not read & 4095:  # the live line (live_tally.py)
                        live_tally.add(live_tally.PARSED, 4096)
                    if read % self._chunk == 0:
                        yield from spill_parts(parts, self._tmp_dir, _namer(prefix, read))
            yield from spill_parts(parts, self._tmp_dir, _namer(prefix, read))
        finally:
            live_tally.add(live_tally.PARSED, read & 4095)
            roles = part.finish()
            counts[part.read] += 0  # always reported, even for an empty file
            for name, value in counts.items():
                Metrics.counter(NAMESPACE, name).inc(value)
        if roles is not None:
            yield beam.pvalue.TaggedOutput(_ROLES, roles)

    def _one(
        self,
        record: Record,
        sortkey: SortKey,
        parts: dict[int, list[EncodedRow]],
        counts: collections.Counter[str],
    ) -> DeadLetter | None:
        counts[self._part.read] += 1
        if record.problem is not None:
            outcome: UserRow | Rejected | None = Rejected(*record.problem, record.value)
        else:
            try:
                outcome = self._part.convert(record, sortkey, counts)
            except orjson.JSONEncodeError as err:  # a value JSON cannot carry: this user only
                detail = f"user holds a value JSON output cannot carry ({one_line(err)})"
                outcome = Rejected(Reason.UNREADABLE_INPUT, detail, record.value)
        if isinstance(outcome, UserRow):
            parts.setdefault(partition_of(outcome.key, self._partitions), []).append(outcome.row)
            return None
        if outcome is None:
            return None
        try:
            return dead_letter(sortkey, outcome.reason, outcome.detail, self._part.source, outcome.record)
        except orjson.JSONEncodeError:  # the record itself cannot be written as JSON: point at it
            pointer = {"unencodable_record": True, "position": sortkey[1]}
            return dead_letter(sortkey, outcome.reason, outcome.detail, self._part.source, pointer)

    def _unreadable_rest(
        self, unit: U, read: int, err: Exception, counts: collections.Counter[str]
    ) -> beam.pvalue.TaggedOutput:
        """The one dead letter for the rest of a file that cannot be read on (logged, counted)."""
        position = read
        if isinstance(err, RestUnreadable):
            detail = err.detail
            position = read if err.position is None else err.position
        elif isinstance(err, InputReadError):  # a .gz cut short or damaged
            counts[f"{counters.INPUTS_PARTIAL}{unit.index}"] += read
            noun = self._part.noun
            detail = f"{one_line(err)}; {read} {noun} were read before it, the rest of the file was not read"
        else:  # nothing after a syntax error can be located reliably
            what = str(getattr(unit, "format", "json")).upper()
            detail = (
                f"{os.path.basename(unit.path)}: {what} syntax error after user {read} "
                f"({one_line(err)}); the rest of the file was not read"
            )
        if not (isinstance(err, RestUnreadable) and err.logged):
            _LOGGER.error("%s", detail)
        counts[self._part.unreadable] += 1
        record = {"file": unit.path, "position": position}
        letter = dead_letter(
            (unit.index, position), Reason.UNREADABLE_INPUT, detail, self._part.file_source, record
        )
        return beam.pvalue.TaggedOutput(_DEAD, letter)


def _open_stream(path: str, opened: contextlib.ExitStack, counts: collections.Counter[str]) -> InputStream:
    """The unit's file opened for its split (closed with the unit); its decoding counted."""
    stream = opened.enter_context(open_input(path, progress=True))
    if stream.encoding:
        counts[counters.INPUTS_DECODED + stream.encoding] += 1
    return stream


def _namer(prefix: str, read: int) -> Callable[[int], str]:
    return lambda partition: f"{prefix}-{read:010d}-p{partition:03d}.pkl"


class _UnitsFn(beam.DoFn, Generic[U]):
    """A planned file → the units it is read in."""

    def __init__(self, part: RecordPart[U]):
        self._part = part

    def process(self, file: SourceFile) -> Iterator[U]:
        yield from self._part.units(file)


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadSourceFiles(beam.PTransform, Generic[U]):
    """Planned files → ``ReadUsers(rows, dead)`` (+ ``roles`` when the part collects them).

    ``files`` come from the launcher's planning (a missing or unusable file fails before the
    pipeline starts). With ``tmp_dir``, each blob is written to a spill file there and the
    element carries its path (``transforms/files/spill.py``); without it, the blobs themselves."""

    def __init__(
        self,
        files: Sequence[SourceFile],
        part: RecordPart[U],
        *,
        partitions: int,
        tmp_dir: str | None = None,
        chunk: int = CHUNK_RECORDS,
    ):
        super().__init__()
        self._files = list(files)
        self._part = part
        self._partitions = partitions
        self._tmp_dir = tmp_dir
        self._chunk = chunk

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        """Returns ``ReadUsers(rows, dead)`` (and ``roles`` when the part collects them)."""
        read = (
            pbegin
            | "ListFiles" >> beam.Create(self._files)
            | "PlanUnits" >> beam.ParDo(_UnitsFn(self._part))
            | "SpreadUnits" >> beam.Reshuffle()
            | "ReadUnits"
            >> beam.ParDo(_ReadUnitsFn(self._part, self._partitions, self._chunk, self._tmp_dir))
            .with_output_types(PartitionRows, **{_DEAD: DeadLetter, _ROLES: list[RoleEntry]})
            .with_outputs(_DEAD, _ROLES, main="rows")
        )
        if self._part.collects_roles:
            return ReadUsers(read.rows, read[_DEAD], read[_ROLES])
        return ReadUsers(read.rows, read[_DEAD])
