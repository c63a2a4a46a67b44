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
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

__all__ = [
    "InputFile",
    "Unit",
    "match_inputs",
    "plan_units",
    "read_unit",
    "RANGE_BYTES",
]

_LOGGER = logging.getLogger(__name__)

RANGE_BYTES = 32 * 1024 * 1024
_SNIFF_BYTES = 1 << 20

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
            raise FileNotFoundError(f"cannot read {what} {pattern!r}: {_first_line(err)}") from None
        metadata = sorted(result.metadata_list, key=lambda m: m.path)
        metadata = [m for m in metadata if not m.path.endswith("/")]
        folders = [m.path for m in metadata if "://" not in m.path and os.path.isdir(m.path)]
        if folders:
            raise FileNotFoundError(f"{what} {pattern!r}: {folders[0]!r} is a directory, not a file")
        if not metadata:
            raise FileNotFoundError(f"{what} {pattern!r}: no such file")
        for m in metadata:
            files.append(InputFile(first_index + len(files), m.path, m.size_in_bytes))
    return files


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__


def _open(path: str, compressed: bool):
    if compressed:
        return FileSystems.open(path, compression_type=CompressionTypes.AUTO)
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def sniff_layout(path: str) -> str:
    """NDJSON, a JSON array, a multi-line stream of values, or empty (see module docstring)."""
    with _open(path, _is_compressed(path)) as handle:
        head = handle.read(_SNIFF_BYTES)
    text = head.lstrip()
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:].lstrip()
    if not text:
        return EMPTY
    if text[:1] == b"[":
        return ARRAY
    if text[:1] != b"{":
        return NDJSON  # every line becomes a malformed-json dead letter with its text
    first_line = text.split(b"\n", 1)[0]
    try:
        orjson.loads(first_line)
        return NDJSON
    except orjson.JSONDecodeError:
        return STREAM


def plan_units(file: InputFile, range_bytes: int = RANGE_BYTES) -> list[Unit]:
    """Split an uncompressed NDJSON file into byte ranges; any other file is one unit."""
    layout = sniff_layout(file.path)
    if layout != NDJSON or _is_compressed(file.path) or file.size <= range_bytes:
        return [Unit(file.index, file.path, layout, 0, -1)]
    return [
        Unit(file.index, file.path, layout, start, min(start + range_bytes, file.size))
        for start in range(0, file.size, range_bytes)
    ]


# What read_unit yields: (position, raw bytes or None, parsed value or None, error text or None).
Record = tuple[int, "bytes | None", Any, "str | None"]


def read_unit(unit: Unit) -> Iterator[Record]:
    """Yield every record of ``unit``.

    For NDJSON, ``raw`` is the line's bytes (so callers can embed it without re-encoding) and a
    line that does not parse yields ``error``. For arrays and streams, ``raw`` is None and
    ``value`` the parsed element; a syntax error ends the file with one error record, since
    nothing after it can be located reliably.
    """
    if unit.layout == EMPTY:
        return
    if unit.layout == NDJSON:
        yield from _read_ndjson(unit)
    else:
        yield from _read_stream(unit)


def _read_ndjson(unit: Unit) -> Iterator[Record]:
    compressed = _is_compressed(unit.path)
    with _open(unit.path, compressed) as handle:
        if unit.end < 0:
            data = handle.read()
            base = 0
        else:
            data, base = _read_range(handle, unit.start, unit.end)
    offset = base
    for line in data.split(b"\n"):
        position = offset
        offset += len(line) + 1
        stripped = line.strip()
        if not stripped:
            continue
        if position == 0 and stripped.startswith(b"\xef\xbb\xbf"):
            stripped = stripped[3:]
        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError as err:
            yield position, stripped, None, f"not valid JSON ({err.msg})"
            continue
        yield position, stripped, value, None


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

    compressed = _is_compressed(unit.path)
    index = 0
    fallback = False
    with _open(unit.path, compressed) as handle:
        if unit.layout == ARRAY:
            items = ijson.items(handle, "item", use_float=True)
        else:
            items = ijson.items(handle, "", multiple_values=True, use_float=True)
        try:
            for value in items:
                yield index, None, value, None
                index += 1
        except (ijson.JSONError, ValueError) as err:
            if unit.layout == STREAM and index == 0:
                # Taken for a multi-line stream only because its first line did not parse: an
                # NDJSON file whose first line is corrupt. Read it line by line instead, so that
                # line alone is dead-lettered and every record after it is kept.
                fallback = True
            else:
                fallback = False
                yield index, None, None, f"JSON syntax error after element {index}: {_first_line(err)}"
    if fallback:
        yield from _read_ndjson(Unit(unit.index, unit.path, NDJSON, 0, -1))
