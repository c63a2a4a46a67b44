"""CSV tables of users: records out of a CSV file, local or ``gs://``, plain or ``.gz``.

The file is opened by ``transforms/sources/input_stream.py`` like every input (a UTF-8 BOM is
skipped, UTF-16/32 with a BOM are decoded, a cut ``.gz`` keeps the rows before the cut) and
parsed by Python's ``csv`` module (RFC 4180: quoted cells may hold the delimiter, quotes and
newlines). The first row is the header. Each data row becomes a dict ``{column: text}``; a row
whose cell count differs from the header's is a ``malformed-csv`` record (an unquoted delimiter
or a cut line), and so is a row holding bytes that are not UTF-8 (shown as U+FFFD in its dead
letter; the rows around it are read); blank lines are skipped. docs/table.md#csv.

Example::

    with open_input("users.csv.gz") as stream:
        header, rows = read_csv(stream)
        for position, record, error in rows: ...
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator

from transforms.common.errors import ConfigError, one_line
from transforms.common.reasons import Reason

__all__ = [
    "read_csv",
    "CsvRecord",
    "MAX_CELL",
    "DELIMITERS",
    "delimiter_flag",
    "delimiter_option",
    "encoding_option",
    "detect_delimiter",
    "delimiter_name",
    "joined_by",
    "not_utf8",
]

# Largest cell (characters): far beyond any user field, small enough to bound memory per row.
MAX_CELL = 1 << 20
csv.field_size_limit(MAX_CELL)

# (position: the data row's index, the record or None, (reason, detail) or None)
CsvRecord = tuple[int, "dict[str, str] | None", "tuple[str, str] | None"]


def _mark(err: UnicodeError) -> tuple[str | bytes, int]:
    """Decode a byte that is not UTF-8 as a lone surrogate (``surrogateescape``), and note that
    one was seen, so that rows are checked one by one only in files that have such bytes."""
    _NOT_UTF8[0] += 1
    return _SURROGATEESCAPE(err)


_NOT_UTF8 = [0]
_SURROGATEESCAPE = codecs.lookup_error("surrogateescape")
codecs.register_error("zitadel_beam_csv", _mark)


def _shown(row: list[str]) -> list[str]:
    """Cells with their bytes that are not UTF-8 shown as U+FFFD (for the dead letter)."""
    return [c.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for c in row]


def read_csv(
    stream: io.RawIOBase, delimiter: str = ",", encoding: str = "utf-8"
) -> tuple[list[str], Iterator[CsvRecord]]:
    """The header (columns trimmed) and an iterator of the data rows (see module docstring);
    ``encoding`` (``--encoding``) decodes a file that is not UTF-8.

    The iterator raises InputReadError where the file cannot be read on (a cut or damaged
    ``.gz``); every row before it has been yielded.
    """
    seen = _NOT_UTF8[0]
    text = io.TextIOWrapper(
        io.BufferedReader(stream, 1 << 20), encoding=encoding, errors="zitadel_beam_csv", newline=""
    )
    reader = csv.reader(text, delimiter=delimiter, strict=False)
    header: list[str] = []
    for row in reader:
        if row:
            header = [cell.strip() for cell in _shown(row)]
            break
    return header, _rows(reader, header, seen)


def _rows(reader, header: list[str], seen: int) -> Iterator[CsvRecord]:
    position = 0
    width = len(header)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            yield position, {}, (Reason.MALFORMED_CSV, f"row {position + 1}: {one_line(err)}")
            position += 1
            continue
        if not row or (len(row) == 1 and not row[0].strip() and width != 1):
            continue  # a blank line
        if _NOT_UTF8[0] != seen and not _utf8(row):
            yield (
                position,
                dict(zip(header, _shown(row), strict=False)),
                (
                    Reason.MALFORMED_CSV,
                    f"row {position + 1} holds bytes that are not UTF-8 (a file saved as Windows-1252: "
                    "convert it to UTF-8, or give --encoding=cp1252)",
                ),
            )
        elif len(row) != width:
            record = dict(zip(header, row, strict=False))
            if len(row) > width:
                record["_extra_cells"] = ",".join(row[width:])  # shown in the dead letter
            yield (
                position,
                record,
                (
                    Reason.MALFORMED_CSV,
                    f"row {position + 1} has {len(row)} cells, the header {width} "
                    "(an unquoted delimiter, or a cut line)",
                ),
            )
        else:
            yield position, dict(zip(header, row, strict=True)), None
        position += 1


def _utf8(row: list[str]) -> bool:
    try:
        "".join(row).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


# The delimiters a header line is tried with, in the order a tie is decided.
DELIMITERS = (",", ";", "\t", "|")
_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": " "}


def delimiter_flag(text: str) -> str:
    """``--delimiter`` → the character: one character, or ``tab``/``\\t`` (as a shell passes
    them), ``comma``, ``semicolon``, ``pipe``, ``space``; ValueError naming the choices."""
    if len(text) == 1:
        return text
    named = _NAMES.get(text.strip().lower())
    if named is None:
        raise ValueError(f"give one character, or one of {', '.join(_NAMES)}")
    return named


def delimiter_option(flag: str | None) -> str | None:
    """``--delimiter`` checked (None: read from the header); ConfigError, one line."""
    if flag is None:
        return None
    try:
        return delimiter_flag(flag)
    except ValueError as err:
        raise ConfigError(f"--delimiter {flag!r}: {err}") from None


def encoding_option(name: str | None) -> str | None:
    """``--encoding`` checked and named as Python names it (None: UTF-8); ConfigError, one line."""
    if name is None:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        raise ConfigError(
            f"--encoding {name!r}: not an encoding Python knows (e.g. cp1252, latin-1)"
        ) from None


def delimiter_name(delimiter: str) -> str:
    """How the summary names a delimiter (``tab`` for the tab)."""
    return "tab" if delimiter == "\t" else repr(delimiter)


def detect_delimiter(header_line: str) -> str:
    """The delimiter of :data:`DELIMITERS` that cuts ``header_line`` into the most cells (``,``
    when none cuts it: a one-column table)."""
    best, cells = ",", 1
    for delimiter in DELIMITERS:
        row = next(csv.reader([header_line], delimiter=delimiter), [])
        if len(row) > cells:
            best, cells = delimiter, len(row)
    return best


def joined_by(cell: str, names: list[str]) -> str | None:
    """The delimiter of :data:`DELIMITERS` that joins some of ``names`` in one header ``cell``
    (``id;name;email`` read with ``,``), or None."""
    folded = {n.strip().casefold() for n in names}
    for delimiter in DELIMITERS:
        parts = [p.strip().casefold() for p in cell.split(delimiter)]
        if len(parts) > 1 and folded & set(parts):
            return delimiter
    return None


def not_utf8(head: bytes, complete: bool) -> tuple[int, int, int] | None:
    """(the first line, its first byte that is not UTF-8, how many lines hold such bytes) of
    ``head``, or None (a character cut by the head's end is not counted)."""
    first: tuple[int, int] | None = None
    bad = 0
    lines = head.split(b"\n")
    for number, line in enumerate(lines, 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as err:
            if number == len(lines) and not complete and err.reason == "unexpected end of data":
                break
            bad += 1
            first = first or (number, line[err.start])
    return None if first is None else (first[0], first[1], bad)
