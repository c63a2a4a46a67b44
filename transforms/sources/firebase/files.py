"""Firebase Auth export files: which to read (planned in the launcher) and streaming their users.

``firebase auth:export users.json`` writes ``{"users": [...]}``; ``auth:export users.csv``
writes one user per line, no header, in the column order of ``mapping.CSV_COLUMNS``
(docs/firebase.md). :func:`plan_firebase_files` plans the files with the shared planner
(``input_plan``: paths and globs, local or gs://, each head read, another source's export or a SQL
dump refused naming what reads it), tells the two formats apart from each file's first bytes, and
refuses with one line a file that is neither format (a table with a header row: the registry's
source that reads any table). Workers then stream one
file with :func:`iter_json_users` or :func:`iter_csv_users`.

Example::

    files = plan_firebase_files(["exports/users-*.json.gz"])
    with open_input(files[0].path) as handle:
        for user in iter_json_users(DepthGuard(handle)): ...
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections.abc import Iterator, Sequence

import ijson

from transforms.common.errors import ConfigError, one_line
from transforms.sources.firebase.mapping import CSV_MIN_COLUMNS, csv_user
from transforms.sources.input_plan import LookedFile, any_file_reader, look_at_inputs
from transforms.sources.input_sniff import describe_head
from transforms.sources.input_stream import DepthGuard, InputStream

__all__ = [
    "FirebaseFile",
    "FirebaseInputError",
    "JSON",
    "CSV",
    "detect_format",
    "plan_firebase_files",
    "iter_json_users",
    "iter_csv_users",
]

JSON, CSV = "json", "csv"
_IJSON_BUF = 1 << 20
# A CSV field may hold a long customAttributes value (Firebase allows 1000 bytes of claims);
# the csv module's default limit is 128 KiB, and a field beyond this ends the file's reading.
_CSV_FIELD_LIMIT = 1 << 20


@dataclasses.dataclass(frozen=True)
class FirebaseFile:
    """One file to read; ``index`` orders files for the sort key."""

    index: int
    path: str
    format: str  # JSON or CSV


class FirebaseInputError(ValueError):
    """The input cannot be used (missing, empty, another export, neither format); one line."""


def detect_format(head: bytes) -> str:
    """JSON when the first byte that is not white space opens an object or array, else CSV."""
    start = head.lstrip()[:1]
    return JSON if start in (b"{", b"[") else CSV


def plan_firebase_files(patterns: Sequence[str], what: str = "--users") -> list[FirebaseFile]:
    """Expand ``patterns`` and look at the head of each file (``input_plan``: another source's
    export is refused naming its command); FirebaseInputError (one line) when one cannot be used."""
    try:
        looked = look_at_inputs(
            patterns,
            flag=what,
            reader="firebase-users",
            empty_hint='an export without users is {"users": []}',
            check=_problem,
        )
    except ConfigError as err:
        raise FirebaseInputError(str(err)) from None
    return [FirebaseFile(one.file.index, one.file.path, detect_format(one.head)) for one in looked]


def _problem(looked: LookedFile) -> str | None:
    """Why a file is neither Firebase export format, or None."""
    if detect_format(looked.head) == JSON:
        return _json_problem(looked.head, looked.complete)
    return _csv_problem(looked.head)


def _json_problem(head: bytes, complete: bool) -> str | None:
    """Why a JSON head is not ``{"users": [...]}`` as ``auth:export`` writes it, or None."""
    events = ijson.parse(DepthGuard(io.BytesIO(head)), multiple_values=True)
    expect_users = False
    try:
        for prefix, event, value in events:
            if prefix == "" and event == "start_array":
                return 'a JSON array, not a Firebase Auth export ({"users": [...]}, as firebase auth:export writes)'
            if expect_users:
                return None if event == "start_array" else '"users" is not an array'
            if prefix == "" and event == "map_key":
                expect_users = value == "users"
            if prefix == "" and event == "end_map":
                break
    except ijson.JSONError as err:
        if complete or "premature EOF" not in str(err):
            return f"not valid JSON ({one_line(err)})"
    return 'no "users" array at its start: not a Firebase Auth export ({"users": [...]}, as firebase auth:export writes)'


def _csv_problem(head: bytes) -> str | None:
    """Why a head is not a Firebase CSV export (a header row: a table for ``migrate table``; a first
    row of too few columns), or None."""
    first = head.split(b"\n", 1)[0]
    try:
        row = next(csv.reader([first.decode("utf-8")]), [])
    except (UnicodeDecodeError, csv.Error):
        row = []
    cells = max((_cells(first, d) for d in ",;\t|"), key=len)
    if _header_row(cells):
        shown = ", ".join(cell.strip() for cell in cells[:6]) + (", ..." if len(cells) > 6 else "")
        return (
            f"a table with a header row ({shown}), not a Firebase Auth CSV export (firebase auth:export "
            f"writes no header: its columns are read by position); {any_file_reader()}"
        )
    if len(row) >= CSV_MIN_COLUMNS:
        return None
    return (
        f"neither a JSON export nor a Firebase CSV export (its first line has {len(row)} columns, "
        f"firebase auth:export writes at least {CSV_MIN_COLUMNS}): {describe_head(head)}"
    )


def _cells(line: bytes, delimiter: str) -> list[str]:
    try:
        return next(csv.reader([line.decode("utf-8")], delimiter=delimiter), [])
    except (UnicodeDecodeError, csv.Error):
        return []


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ .:-]{0,63}")


def _header_row(row: list[str]) -> bool:
    """Whether a first row names columns rather than holding a user: every cell a name (no e-mail
    address, no true/false, no number), two or more of them. A Firebase CSV export's first row is
    a user (``uid,ann@example.com,true,...``)."""
    cells = [cell.strip() for cell in row]
    if len(cells) < 2 or any(not cell for cell in cells[:2]):
        return False
    return all(
        _NAME.fullmatch(cell) is not None and cell.lower() not in ("true", "false") for cell in cells if cell
    )


def iter_json_users(handle: DepthGuard) -> Iterator[object]:
    """The elements of ``users`` of a JSON export (``handle``: an open file behind a DepthGuard)."""
    return ijson.items(handle, "users.item", use_float=True, buf_size=_IJSON_BUF)


def iter_csv_users(handle: InputStream) -> Iterator[object]:
    """The users of a CSV export, as the JSON export's keys (``mapping.csv_user``); a
    row of too few columns is yielded as a list of its fields (the reader dead-letters it).
    Blank lines are skipped. Bad UTF-8 or a broken quote raise ValueError or csv.Error."""
    csv.field_size_limit(_CSV_FIELD_LIMIT)
    text = io.TextIOWrapper(io.BufferedReader(handle), encoding="utf-8", errors="strict", newline="")
    for row in csv.reader(text):
        if not row or row == [""]:
            continue
        yield csv_user(row) if len(row) >= CSV_MIN_COLUMNS else row
