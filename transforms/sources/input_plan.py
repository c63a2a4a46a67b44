"""The files a flag names, planned in the launcher: matched, each head read, the wrong kind refused.

Every source that reads files plans them here, before anything is written (docs/inputs.md):

- the flag's paths and globs are matched, local or ``gs://`` (``json_units.match_inputs``); a
  pattern that matches nothing, or a directory, is one line (``ConfigError``);
- each file's head is read (``input_shape.read_head``: at most 64 KiB, decompressed, the BOM
  removed); a file that cannot be read, or an empty one, is one line;
- a file of the wrong kind is refused naming what it is and the command that reads it, from every
  registered source's shapes (``FileShapes`` in each ``source.py``): a JSON file whose first
  records carry another source's marks (``identify``), a text file another source's
  ``TextShape`` recognises, and a SQL dump (``mysqldump``, ``pg_dump``, a script of ``CREATE
  TABLE``/``INSERT INTO``/``COPY ... FROM stdin``), which no source reads: the line says what to
  export instead;
- then the source's own ``check(looked)`` (a header its reader needs, a format told apart).

A source declares its shapes once, in its ``SourceKind.shapes``; it never lists the others: a new
source's shapes are refused by every other reader as soon as it is registered.

Example::

    files = plan_inputs([flags.users], flag="--users", reader="okta-users", check=_okta_header)
    looked = look_at_inputs([flags.users], flag="--users", reader="firebase-users")  # heads kept
    head_problem(b"-- PostgreSQL database dump\\n", "okta-users")  # 'looks like a SQL dump (...'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from transforms.common.errors import ConfigError, one_line
from transforms.sources import registry
from transforms.sources.input_shape import (
    any_file_reader,
    identify,
    read_head,
    reader_shape,
    readers,
    shapes,
    sql_dump,
    sql_dump_problem,
    wrong_shape,
)
from transforms.sources.input_stream import InputReadError

if TYPE_CHECKING:
    from transforms.sources.json_units import InputFile  # imports Beam: only where files are matched

__all__ = [
    "LookedFile",
    "Check",
    "look_at_inputs",
    "plan_inputs",
    "head_problem",
    "file_problem",
    "marked_shape",
    "sql_dump",
    "sql_dump_problem",
    "any_file_reader",
    "ANY_READER",
]

# What a reader of any file (a table of users, read with a mapping) takes, in the refusal's words.
ANY_READER = "a table of users"


class LookedFile(NamedTuple):
    """A matched file and its head, as the planner read it (``head``: at most 64 KiB, decoded)."""

    file: InputFile
    head: bytes
    complete: bool  # the head is the whole file


# A source's own look at one file: the problem in words (the line after "<flag> <path>: "), or None.
Check = Callable[[LookedFile], "str | None"]


def look_at_inputs(
    patterns: str | Sequence[str],
    *,
    flag: str,
    reader: str | None,
    first_index: int = 0,
    allow_empty: bool = False,
    empty_hint: str = "",
    check: Check | None = None,
) -> list[LookedFile]:
    """The files ``patterns`` match, in order, each with its head; ``ConfigError`` (one line) for
    the first that cannot be used (module docstring).

    ``reader``: the key of the reader the flag feeds (``kind.shapes.readers``), or None for a
    reader of any file (a table); ``allow_empty``: a 0-byte file is kept (an empty password
    export); ``empty_hint``: what the refusal of an empty file adds (what an export without users
    holds); ``check``: the source's own look at each file, after the shared ones."""
    from transforms.sources.json_units import match_inputs  # Beam's FileSystems

    try:
        matched = match_inputs([patterns] if isinstance(patterns, str) else patterns, first_index, flag)
    except FileNotFoundError as err:
        raise ConfigError(one_line(err)) from None
    looked = []
    for file in matched:
        try:
            head, complete = read_head(file.path)
        except (OSError, InputReadError) as err:
            strerror = getattr(err, "strerror", None)
            raise ConfigError(f"{flag} {file.path}: cannot be read ({strerror or one_line(err)})") from None
        one = LookedFile(file, head, complete)
        problem = _empty(head, allow_empty, empty_hint) or head_problem(head, reader)
        if problem is None and check is not None and head:
            problem = check(one)
        if problem:
            raise ConfigError(f"{flag} {file.path}: {problem}")
        looked.append(one)
    return looked


def plan_inputs(
    patterns: str | Sequence[str],
    *,
    flag: str,
    reader: str | None,
    first_index: int = 0,
    allow_empty: bool = False,
    empty_hint: str = "",
    check: Check | None = None,
) -> list[InputFile]:
    """:func:`look_at_inputs` without the heads: the files to give the reader."""
    looked = look_at_inputs(
        patterns,
        flag=flag,
        reader=reader,
        first_index=first_index,
        allow_empty=allow_empty,
        empty_hint=empty_hint,
        check=check,
    )
    return [one.file for one in looked]


def _empty(head: bytes, allow_empty: bool, hint: str) -> str | None:
    if not head and allow_empty:
        return None
    if head.strip():
        return None
    said = "the file is empty (0 bytes)" if not head else "the file holds only white space"
    return f"{said}; {hint}" if hint else said


def head_problem(head: bytes, reader: str | None) -> str | None:
    """Why a file whose head is ``head`` is not for ``reader`` (a key of ``input_shape.readers()``,
    None: a reader of any file), in words, or None: a SQL dump, a JSON file whose first records
    show another source's shape, a text file another source's ``TextShape`` recognises. Here a reader
    of any file is refused only a SQL dump (the table's own check refuses another system's whole
    JSON export; a users table it reads with its mapping).

    A JSON file without marks, or a text file no shape recognises, is the source's own check's."""
    dump = sql_dump_problem(head)
    if dump is not None or reader is None:
        # The reader of any file (the table) reads what it is given a mapping for, another
        # system's users table too (docs/table.md#tables-shaped-like-other-systems-exports).
        return dump
    taken = readers().get(reader, ())
    start = head.lstrip()[:1]
    if start in (b"{", b"["):
        return wrong_shape(head, reader)
    for kind in registry.kinds():
        for text in kind.shapes.text:
            if text.shape not in taken and text.matches(head):
                wanted = reader_shape(reader).what
                return f"looks like {text.what}, not {wanted}; {shapes()[text.shape].takes}"
    return None


def file_problem(path: str, reader: str | None) -> str | None:
    """:func:`head_problem` for a file (its head only); None also when it cannot be read (its
    reader says why)."""
    try:
        head, _ = read_head(path)
    except (OSError, InputReadError, ValueError):
        return None
    return head_problem(head, reader)


def marked_shape(head: bytes) -> tuple[str, str] | None:
    """``(what it is and what reads it, evidence)`` of a JSON head another source's marks show."""
    marked = identify(head)
    if marked is None or marked[0] not in shapes():
        return None
    shape = shapes()[marked[0]]
    return f"{shape.what} ({marked[1]})", shape.takes
