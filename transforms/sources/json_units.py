"""Reading JSON records from local or ``gs://`` files in large, splittable units.

A file is read as one of three layouts, detected from its first bytes (no flag needed):

- **NDJSON**, one object per line (Auth0's export jobs): split into byte ranges of
  ``RANGE_BYTES`` so several workers can parse one large file;
- a **JSON array** of objects: streamed element by element with ijson;
- a **stream of JSON values** where a value spans several lines (what zitadel-tools' ``--multiline``
  was for): streamed with ijson's ``multiple_values``.

``.gz`` files are decompressed on the fly and read as one unit. Every record comes with its
position (byte offset for NDJSON, element index otherwise), which becomes part of the sort key.

Example::

    for unit in plan_units(match_inputs(["users-*.json"], first_index=0)):
        for position, raw, value, error in read_unit(unit):
            ...
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from transforms.common import counters, live_tally
from transforms.common.errors import one_line
from transforms.common.reasons import Reason
from transforms.common.records import NAMESPACE
from transforms.files.storage import is_remote
from transforms.sources.input_sniff import check_readable
from transforms.sources.input_stream import (
    MAX_DEPTH,
    UTF8_BOM,
    DepthGuard,
    InputReadError,
    has_marker,
    marker_problem,
    open_input,
    too_deep,
)

__all__ = [
    "InputFile",
    "Unit",
    "match_inputs",
    "plan_units",
    "read_unit",
    "RANGE_BYTES",
    "ReadError",
    "check_readable",
]

_LOGGER = logging.getLogger(__name__)

RANGE_BYTES = 32 * 1024 * 1024
_SNIFF_BYTES = 1 << 20
_BLOCK_BYTES = 16 * 1024 * 1024

NDJSON, ARRAY, STREAM, EMPTY = "ndjson", "array", "stream", "empty"


@dataclasses.dataclass(frozen=True)
class InputFile:
    """A matched input file; ``index`` orders files for the sort key."""

    index: int
    path: str
    size: int


@dataclasses.dataclass(frozen=True)
class Unit:
    """A piece of work for one worker: a byte range of an NDJSON file, or a whole file."""

    index: int
    path: str
    layout: str
    start: int = 0
    end: int = -1
    # The ijson prefix of an array's records: "item" for a top-level array, "data.item" for the
    # records of a wrapper object ({"data": [...]}, migrate table).
    items: str = "item"


def _is_compressed(path: str) -> bool:
    return CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED


def match_inputs(patterns: Sequence[str], first_index: int = 0, what: str = "input") -> list[InputFile]:
    """Expand paths and globs (local or gs://) in the launcher, failing fast when nothing matches.

    Raises FileNotFoundError with a one-line message; files are ordered by pattern, then path.
    """
    files: list[InputFile] = []
    for pattern in patterns:
        try:
            result = FileSystems.match([pattern])[0]
        except Exception as err:  # Beam wraps every backend error in BeamIOError
            raise FileNotFoundError(f"cannot read {what} {pattern!r}: {one_line(err, 300)}") from None
        metadata = sorted(result.metadata_list, key=lambda m: m.path)
        metadata = [m for m in metadata if not m.path.endswith("/")]
        folders = [m.path for m in metadata if not is_remote(m.path) and os.path.isdir(m.path)]
        if folders:
            raise FileNotFoundError(f"{what} {pattern!r}: {folders[0]!r} is a directory, not a file")
        if not metadata:
            raise FileNotFoundError(f"{what} {pattern!r}: no such file")
        for m in metadata:
            files.append(InputFile(first_index + len(files), m.path, m.size_in_bytes))
    return files


def _open(path: str, compressed: bool):
    if compressed:
        return FileSystems.open(path, compression_type=CompressionTypes.AUTO)
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _sniff(path: str) -> tuple[str, str | None]:
    """``(layout, encoding)``: the layout (see module docstring) and a decoded encoding or None."""
    try:
        with open_input(path) as handle:
            head = handle.read(_SNIFF_BYTES)
            encoding = handle.encoding
    except InputReadError:
        return NDJSON, None  # unreadable from the start: the reader reports it (unreadable-input)
    text = head.lstrip()
    if not text:
        return EMPTY, encoding
    if text[:1] not in (b"[", b"{"):
        return NDJSON, encoding  # every line becomes a malformed-json dead letter with its text
    lines = text.split(b"\n", 2)
    first = _line_state(lines[0])
    second = _line_state(lines[1]) if len(lines) > 1 else "none"
    if text[:1] == b"[":
        # An array, unless its first line is a whole value and further lines hold values too
        # (NDJSON whose first record is an array, e.g. a record nested far too deep).
        whole = first != "incomplete" and second in ("ok", "refused")
        return (NDJSON if whole else ARRAY), encoding
    if first != "incomplete":
        # Parsed, or refused for what it holds (a lone surrogate, a bad byte, too deep): NDJSON,
        # with a bad first record at worst; not the start of a value spread over lines.
        return NDJSON, encoding
    if second == "ok":
        return NDJSON, encoding  # the first record is cut short, the next one is whole
    return STREAM, encoding


def _line_state(line: bytes) -> str:
    """ "ok", "incomplete" (the text ends inside a value), "refused" (anything else) or "none"."""
    line = line.strip()
    if not line:
        return "none"
    try:
        orjson.loads(line)
        return "ok"
    except orjson.JSONDecodeError as err:
        return "incomplete" if "unexpected end of data" in err.msg else "refused"


def sniff_layout(path: str) -> str:
    """NDJSON, a JSON array, a multi-line stream of values, or empty (see module docstring)."""
    return _sniff(path)[0]


def plan_units(file: InputFile, range_bytes: int = RANGE_BYTES) -> list[Unit]:
    """Split an uncompressed NDJSON file into byte ranges; any other file is one unit."""
    layout, encoding = _sniff(file.path)
    if layout != NDJSON or _is_compressed(file.path) or encoding or file.size <= range_bytes:
        return [Unit(file.index, file.path, layout, 0, -1)]
    return [
        Unit(file.index, file.path, layout, start, min(start + range_bytes, file.size))
        for start in range(0, file.size, range_bytes)
    ]


# What read_unit yields: (position, raw bytes or None, parsed value or None, error text or None).
Record = tuple[int, "bytes | None", Any, "str | None"]


def read_unit(unit: Unit) -> Iterator[Record]:
    """Yield every record of ``unit``.

    ``raw`` is the record's JSON bytes (the NDJSON line, or the array element re-encoded), so
    callers can embed it without re-encoding; a record that does not parse yields ``error``
    (a :class:`ReadError`, whose ``reason`` is the dead-letter code) and, where it has them,
    its bytes. For arrays and streams a syntax error ends the file with one error record without
    ``raw``, since nothing after it can be located reliably. A compressed file that ends early or
    is damaged ends with such a record too, and counts ``inputs.partial.<file index>`` (the
    records read before it) for the launcher.
    """
    if unit.layout == EMPTY:
        return
    try:
        if unit.layout == NDJSON:
            yield from _read_ndjson(unit)
        else:
            yield from _read_stream(unit)
    except InputReadError as err:  # on opening: a gzip header that is broken
        yield _partial(unit, 0, 0, err)


class ReadError(str):
    """The error text of a record that could not be read; ``reason`` is its dead-letter code."""

    reason: str = Reason.MALFORMED_JSON


def _error(reason: str, text: str) -> ReadError:
    error = ReadError(text)
    error.reason = reason
    return error


def _count_decoded(encoding: str | None) -> None:
    if encoding:
        Metrics.counter(NAMESPACE, counters.INPUTS_DECODED + encoding).inc()


def _partial(unit: Unit, position: int, records: int, err: BaseException) -> Record:
    """The record that ends a file cut short or damaged; counted for the launcher's exit status."""
    Metrics.counter(NAMESPACE, f"{counters.INPUTS_PARTIAL}{unit.index}").inc(records)
    _LOGGER.error("%s; %d records were read before it", one_line(err, 300), records)
    return (
        position,
        None,
        None,
        _error(
            Reason.UNREADABLE_INPUT,
            f"{one_line(err, 300)}; {records} records were read before it, the rest was not read",
        ),
    )


def _line_records(lines: list[bytes], offset: int, first: bool) -> Iterator[Record]:
    for line in lines:
        position = offset
        offset += len(line) + 1
        stripped = line.strip()
        if not stripped:
            continue
        if first and position == 0 and stripped.startswith(UTF8_BOM):
            stripped = stripped[3:]
        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError as err:
            if "depth" in err.msg:
                yield (
                    position,
                    stripped,
                    None,
                    _error(Reason.TOO_DEEP, f"nested deeper than {MAX_DEPTH} levels"),
                )
            else:
                yield position, stripped, None, _error(Reason.MALFORMED_JSON, f"not valid JSON ({err.msg})")
            continue
        if len(stripped) > 2 * MAX_DEPTH and too_deep(stripped):
            yield position, stripped, None, _error(Reason.TOO_DEEP, f"nested deeper than {MAX_DEPTH} levels")
            continue
        yield position, stripped, value, None


def _read_ndjson(unit: Unit) -> Iterator[Record]:
    if unit.end >= 0:  # a byte range of a large uncompressed UTF-8 file
        with _open(unit.path, False) as handle:
            data, base = _read_range(handle, unit.start, unit.end)
        live_tally.reached(unit.path, unit.start, unit.end - unit.start)
        yield from _line_records(data.split(b"\n"), base, base == 0)
        return
    # The whole file, read in blocks: lines are handed on as each block completes them, and a
    # file that ends early (a cut .gz) keeps every record before the cut.
    offset, tail, count = 0, b"", 0
    with open_input(unit.path, progress=True) as handle:
        _count_decoded(handle.encoding)
        while True:
            try:
                block = handle.read(_BLOCK_BYTES)
            except InputReadError as err:
                yield _partial(unit, offset, count, err)
                return
            if not block:
                break
            data = tail + block
            lines = data.split(b"\n")
            tail = lines.pop()
            for record in _line_records(lines, offset, offset == 0):
                count += 1
                yield record
            offset += len(data) - len(tail)
    yield from _line_records([tail], offset, offset == 0)


def _read_range(handle, start: int, end: int) -> tuple[bytes, int]:
    """The lines that *start* in [start, end): skip a partial first line, finish the last one."""
    if start > 0:
        handle.seek(start - 1)
        if handle.read(1) != b"\n":
            skipped = handle.readline()
            start += len(skipped)
    else:
        handle.seek(0)
    if start >= end:
        return b"", start
    data = handle.read(end - start)
    if data and not data.endswith(b"\n"):
        data += handle.readline()
    return data, start


def _read_stream(unit: Unit) -> Iterator[Record]:
    import ijson  # C backend (yajl2_c) when available

    index = 0
    fallback = False
    with open_input(unit.path, progress=True) as handle:
        _count_decoded(handle.encoding)
        guard = DepthGuard(handle)
        if unit.layout == ARRAY:
            items = ijson.items(guard, unit.items, use_float=True)
        else:
            items = ijson.items(guard, "", multiple_values=True, use_float=True)
        seen_cuts = 0
        try:
            for value in items:
                position = index
                index += 1
                marker = has_marker(value) if guard.cut > seen_cuts else None
                if marker is not None:
                    seen_cuts += 1
                    reason, detail = marker_problem(marker)
                    yield position, None, None, _error(reason, f"element {position}: {detail}")
                    continue
                try:
                    raw = orjson.dumps(value)
                except orjson.JSONEncodeError as err:
                    # A lone surrogate (``"\\ud800"``) ijson let through: this record only.
                    text = json.dumps(value, ensure_ascii=True).encode()
                    yield position, text, None, _error(Reason.MALFORMED_JSON, f"not valid JSON text ({err})")
                    continue
                yield position, raw, value, None
        except InputReadError as err:
            yield _partial(unit, index, index, err)
        except (ijson.JSONError, ValueError) as err:
            if unit.layout == STREAM and index == 0:
                # Taken for a multi-line stream only because its first line did not parse: an
                # NDJSON file whose first line is corrupt. Read it line by line instead, so that
                # line alone is dead-lettered and every record after it is kept.
                fallback = True
            else:
                fallback = False
                yield (
                    index,
                    None,
                    None,
                    _error(
                        Reason.UNREADABLE_INPUT,
                        f"JSON syntax error after element {index}: {one_line(err, 300)}",
                    ),
                )
    if fallback:
        yield from _read_ndjson(Unit(unit.index, unit.path, NDJSON, 0, -1))
