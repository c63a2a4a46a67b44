"""The launcher's first look at the table files of ``migrate table``: which to read, and how.

:func:`plan_table_files` plans ``--input`` with the shared planner (``input_plan``: paths and
globs, local or ``gs://``; an empty file, a SQL dump or a CSV another source's text shape recognises
refused naming what reads it) and, before anything is written, gives each file a look
that refuses with one line what would otherwise change people silently
(docs/table.md#checked-before-the-run):

- CSV: the delimiter is read from the header line when ``--delimiter`` is not given (``,`` ``;``
  tab ``|``: the one that cuts it into the most cells); a file that is not UTF-8 is refused
  saying how to convert it, unless ``--encoding`` names its encoding; a header that lacks a
  mapped column is refused naming the column meant, or the delimiter that joins the mapped
  names in one cell;
- JSON: the file must hold JSON records; a top-level object holding one array of records
  (``{"data": [...]}``) is read as those records, unless they are another export's (a Firebase
  export's ``{"users": [...]}``), which is refused naming the command that reads it;
- every file: the mapping and ``--where`` are checked against the first records (``sample.py``).

Example::

    files = plan_table_files("export/users-*.json", spec=spec)   # ConfigError: one line
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from transforms.common.errors import ConfigError, one_line
from transforms.sources import json_units
from transforms.sources.csv_rows import (
    delimiter_name,
    delimiter_option,
    detect_delimiter,
    encoding_option,
    joined_by,
    not_utf8,
    read_csv,
)
from transforms.sources.input_plan import ANY_READER, look_at_inputs, marked_shape
from transforms.sources.input_stream import InputReadError, open_input
from transforms.sources.table.read import TableFile
from transforms.sources.table.sample import SampleFile, check_sample, read_sample, wrapper_key
from transforms.sources.table.spec import TableSpec, did_you_mean, for_columns

__all__ = ["plan_table_files", "sample_header", "delimiters", "CSV_NAMES", "JSON_NAMES"]

CSV_NAMES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
JSON_NAMES = (".json", ".ndjson", ".jsonl", ".json.gz", ".ndjson.gz", ".jsonl.gz")


def plan_table_files(
    pattern: str,
    *,
    spec: TableSpec,
    fmt: str = "auto",
    delimiter: str | None = None,
    encoding: str | None = None,
) -> list[TableFile]:
    """The ``--input`` files, each looked at and the mapping checked (module docstring)."""
    looked = look_at_inputs(pattern, flag="--input", reader=None)
    chosen = delimiter_option(delimiter)
    encoding = encoding_option(encoding)
    files: list[TableFile] = []
    json_samples: list[SampleFile] = []
    for file, head, complete in looked:
        if _is_csv(file.path, head, fmt):
            planned, header = _csv_file(file, head, complete, spec, chosen, encoding or "utf-8")
            files.append(planned)
            spelled = for_columns(spec, header)[0]  # the mapping as this header spells its columns
            sample_file = SampleFile(file.path, True, planned.delimiter, planned.encoding)
            check_sample(read_sample([sample_file], spelled), spelled)
            continue
        if encoding is not None:
            raise ConfigError(
                "--encoding: only CSV files are decoded with it (JSON is UTF-8, or UTF-16/32 with a BOM)"
            )
        planned = _json_file(file, head, spec)
        files.append(planned)
        json_samples.append(SampleFile(file.path, False, items=planned.items))
    if json_samples:
        check_sample(read_sample(json_samples, spec), spec)
    return files


def _is_csv(path: str, head: bytes, wanted: str) -> bool:
    if wanted != "auto":
        return wanted == "csv"
    name = path.lower()
    if name.endswith(CSV_NAMES):
        return True
    if name.endswith(JSON_NAMES):
        return False
    return head.lstrip()[:1] not in (b"{", b"[")


def _json_file(file: json_units.InputFile, head: bytes, spec: TableSpec) -> TableFile:
    """A JSON file; a wrapper object's records, or a refusal naming the export it is."""
    json_units.check_readable(file.path, "--input")
    key = wrapper_key(head, spec.fields["id"].parts[0])
    if key is None:
        return TableFile(file.index, file.path, file.size, False)
    marked = marked_shape(head)
    if marked is not None:
        raise ConfigError(f"--input {file.path}: looks like {marked[0]}, not {ANY_READER}; {marked[1]}")
    return TableFile(file.index, file.path, file.size, False, items=f"{key}.item")


def _csv_file(
    file: json_units.InputFile,
    head: bytes,
    complete: bool,
    spec: TableSpec,
    delimiter: str | None,
    encoding: str,
) -> tuple[TableFile, list[str]]:
    """A CSV file: its delimiter (given or read from the header line), its encoding checked, its
    header holding every mapped column."""
    name = posixpath.basename(file.path)
    bad = not_utf8(head, complete) if encoding == "utf-8" else None
    # One stray byte is that row's dead letter (malformed-csv, naming the flag); a header or
    # several rows that are not UTF-8 are a file in another encoding: every such user would be lost.
    if bad is not None and (bad[0] == 1 or bad[2] > 1):
        line, byte, lines = bad
        raise ConfigError(
            f"--input {file.path}: not UTF-8 ({lines} line(s) of its start, the first line {line}, hold "
            f"bytes such as 0x{byte:02x}; a file saved as Windows-1252 or Latin-1?): convert it (iconv -f "
            f"cp1252 -t utf-8 {name} > utf8-{name}) or give its encoding (--encoding=cp1252)"
        )
    detected = delimiter is None
    if delimiter is None:
        first = head.decode(encoding, "replace").lstrip("\ufeff\r\n").split("\n", 1)[0]
        delimiter = detect_delimiter(first)
    planned = TableFile(file.index, file.path, file.size, True, delimiter, detected, encoding)
    header = sample_header(planned)
    if not header:
        raise ConfigError(f"--input {file.path}: the CSV file has no header row")
    _, missing = for_columns(spec, header)
    if missing:
        first_part = missing[0].split(".")[0]
        joined = next((j for cell in header if (j := joined_by(cell, spec.first_parts())) is not None), None)
        hint = (
            f"; its header holds the mapped names joined by {delimiter_name(joined)}: "
            f"--delimiter={'tab' if joined == chr(9) else repr(joined)}"
            if joined is not None and joined != delimiter
            else f"; its columns: {', '.join(header[:20])}"
        )
        raise ConfigError(
            f"--input {file.path}: the header has no column {missing[0]!r}{did_you_mean(first_part, header)}{hint}"
        )
    return planned, header


def sample_header(file: TableFile) -> list[str]:
    """The header of a CSV file as its reader sees it."""
    try:
        with open_input(file.path) as stream:
            header, _ = read_csv(stream, file.delimiter, file.encoding)
    except (OSError, InputReadError) as err:
        raise ConfigError(f"--input {file.path}: cannot be read ({one_line(err)})") from None
    return header


def delimiters(files: Sequence[TableFile]) -> list[str]:
    """How the summary names each CSV file's delimiter (and whether it was read from the header)."""
    return sorted(
        {
            f"{delimiter_name(f.delimiter)}{' (detected)' if f.delimiter_detected else ''}"
            for f in files
            if f.csv
        }
    )
