"""Which export a file is, from its first records: each reader refuses the shapes of the others.

Also what no source reads: a SQL dump (:func:`sql_dump_problem`, which says what to export instead).

A Keycloak realm given as ``--users`` used to become one profile without ``user_id`` (exit 0,
its users never mentioned); an Auth0 password export given as ``--users`` became users without
passwords. :func:`wrong_shape` looks at the head the launcher already reads
(``input_sniff.check_readable``: at most 64 KiB, whatever the file's size) and names what the file
is and which command takes it. Only a positive match on another shape refuses: a file whose first
records match none (damaged, unusual) is left to the reader, which dead-letters what it cannot use.
Each source describes its own shapes and how its records show them (``FileShapes`` in
``transforms/sources/<name>/source.py``); this module asks them all (``registry``).

Example::

    wrong_shape(b'{"realm": "acme", "users": [', "auth0-users")
    # 'looks like a Keycloak realm export (a "realm" key), not an Auth0 user export;
    #  migrate keycloak --realm reads it'
    shape_problem("realm.json", "zitadel-export")   # the same for a file (its head only)
"""

from __future__ import annotations

import dataclasses
import io
import re

from transforms.sources import registry
from transforms.sources.declaration import declared_flags
from transforms.sources.input_stream import DepthGuard, InputReadError, open_input
from transforms.sources.registry import kinds
from transforms.sources.source_parts import ANY_FILE, Shape

__all__ = [
    "shapes",
    "readers",
    "identify",
    "wrong_shape",
    "reader_shape",
    "shape_problem",
    "read_head",
    "text_shape",
    "sql_dump",
    "sql_dump_problem",
    "any_file_reader",
]

HEAD_BYTES = 1 << 16
_RECORDS = 8  # records looked at: one of the expected shape among them is enough to go on

# The shape of no source: our own import bodies, which only push sends.
_IMPORT_BODY = Shape(what="a ZITADEL import body", takes="push --body sends it as it is")


def shapes() -> dict[str, Shape]:
    """Every shape a file may have, by key: the import body's and each source's (registry), each
    saying what reads it (the command and flag its source declares, unless it says otherwise)."""
    found = {"import-body": _IMPORT_BODY}
    for kind in kinds():
        for key, shape in kind.shapes.shapes.items():
            found[key] = shape if shape.takes else dataclasses.replace(shape, takes=registry.takes(key))
    return found


def readers() -> dict[str, tuple[str, ...]]:
    """The shapes each reader takes (its expected key → shape keys, the one naming it first)."""
    return {reader: taken for kind in kinds() for reader, taken in kind.shapes.readers.items()}


def _identify_record(keys: dict[str, str]) -> tuple[str, str] | None:
    """(shape, evidence) for one JSON object's top-level keys (key → its value's first parse
    event, ``string``, ``start_array``, ...), or None when nothing marks it: the import body's
    keys first, then each source's marks in their rank (``FileShapes.rank``)."""
    for key in ("dataOrgs", "data_orgs"):
        if key in keys:
            return "import-body", f'a top-level "{key}"'
    for kind in sorted(kinds(), key=lambda k: k.shapes.rank):
        found = kind.shapes.identify(keys)
        if found is not None:
            return found
    return None


def _first_objects(head: bytes) -> list[dict[str, str]]:
    """The top-level keys of the first JSON objects in ``head``: of the document or of each
    concatenated value (NDJSON), or of the first elements of a top-level array. A key whose value
    the head cuts off is still listed; a parse error ends the list."""
    import ijson

    objects: list[dict[str, str]] = []
    base: str | None = None
    current: dict[str, str] | None = None
    pending: str | None = None
    events = ijson.parse(DepthGuard(io.BytesIO(head)), multiple_values=True)
    try:
        for prefix, event, value in events:
            if base is None:
                if event not in ("start_map", "start_array"):
                    break
                base = "item" if event == "start_array" else ""
            if pending is not None and current is not None:
                current[pending] = event
                pending = None
            if base == "" and prefix == "users.item" and event == "map_key":
                objects[0][f"{_USERS_ITEM}{value}"] = "string"  # e.g. firebase auth:export
            if prefix != base:
                continue
            if event == "start_map":
                current = {}
                objects.append(current)
            elif event == "map_key" and current is not None:
                pending = str(value)
            elif event == "end_map" and len(objects) >= _RECORDS:
                break
    except ijson.JSONError:
        pass  # the head ends inside a value, or the file is damaged further on
    if pending is not None and current is not None:
        current[pending] = ""
    return objects


# Stands in the top-level keys for "the records of a top-level users array have this key".
_USERS_ITEM = "\x00users[]."


def identify(head: bytes) -> tuple[str, str] | None:
    """(shape, evidence) of the first object that shows one, or None."""
    for keys in _first_objects(head):
        found = _identify_record(keys)
        if found is not None:
            return found
    return None


def reader_shape(reader: str) -> Shape:
    """The shape that names the reader ``reader`` (a key of :func:`readers`) in words: its own, or,
    for a reader of several layouts named apart from them, its first layout's."""
    known = shapes()
    return known.get(reader) or known[readers()[reader][0]]


def wrong_shape(head: bytes, expected: str) -> str | None:
    """Why a file whose head is ``head`` is not what the ``expected`` reader (a key of :func:`readers`)
    takes, in words, or None when it may be: its first objects show another shape and none of
    them shows an expected one."""
    marked = [_identify_record(keys) for keys in _first_objects(head)]
    marks = [m for m in marked if m is not None]
    if not marks or any(shape in readers()[expected] for shape, _ in marks):
        return None
    shape, evidence = marks[0]
    known = shapes()
    found, wanted = known[shape], reader_shape(expected)
    return f"looks like {found.what} ({evidence}), not {wanted.what}; {found.takes}"


def text_shape(head: bytes) -> str | None:
    """What a head that is not JSON is, when a source knows its text export (Firebase's CSV):
    ``"looks like a Firebase Auth CSV export; migrate firebase --users reads it"``."""
    for kind in kinds():
        for text in kind.shapes.text:
            if text.matches(head):
                return f"looks like {text.what}; {shapes()[text.shape].takes}"
    return None


def read_head(path: str, limit: int = HEAD_BYTES) -> tuple[bytes, bool]:
    """At most ``limit`` bytes (64 KiB) of the file's text (decompressed, UTF-8) and whether that is
    all of it.

    Damage after the first bytes ends the head early (the reader reports it); OSError and
    InputReadError before any byte are the caller's to report."""
    head = b""
    complete = False
    try:
        with open_input(path) as stream:
            while len(head) < limit:
                piece = stream.read(limit - len(head))
                if not piece:
                    complete = True
                    break
                head += piece
    except InputReadError:
        if not head:
            raise
    return head, complete


def shape_problem(path: str, expected: str) -> str | None:
    """:func:`wrong_shape` for a file, reading its head; None also when it cannot be read (the
    reader says why)."""
    try:
        head, _ = read_head(path)
    except (OSError, InputReadError, ValueError):
        return None
    return wrong_shape(head, expected)


_SQL_LINES = 40  # lines of the head looked at for a SQL dump's marks
_SQL_MARKS = (
    (re.compile(r"--\s*(MySQL|MariaDB) dump", re.I), "'-- MySQL dump' at its start, mysqldump's"),
    (
        re.compile(r"--\s*PostgreSQL database dump", re.I),
        "'-- PostgreSQL database dump' at its start, pg_dump's",
    ),
    (re.compile(r"/\*!\d{5} SET ", re.I), "mysqldump's '/*!40101 SET' lines"),
    (re.compile(r"CREATE\s+TABLE\b", re.I), "a 'CREATE TABLE' statement"),
    (re.compile(r"INSERT\s+INTO\b", re.I), "an 'INSERT INTO' statement"),
    (re.compile(r"COPY\s+\S+.*\bFROM\s+stdin\b", re.I), "a 'COPY ... FROM stdin' block, pg_dump's"),
)


def sql_dump(head: bytes) -> str | None:
    """What marks ``head`` as a SQL dump or script (``"a 'CREATE TABLE' statement"``), or None."""
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    if text.lstrip()[:1] in ("{", "["):
        return None
    for line in text.splitlines()[:_SQL_LINES]:
        line = line.strip()
        for pattern, what in _SQL_MARKS:
            if pattern.match(line):
                return what
    return None


def sql_dump_problem(head: bytes) -> str | None:
    """The refusal of a SQL dump, saying what to export instead, or None when ``head`` is not one."""
    dump = sql_dump(head)
    if dump is None:
        return None
    return (
        f"looks like a SQL dump ({dump}), which no source reads: export the users' table as a CSV "
        "file with a header instead (PostgreSQL: \\copy (select ...) to 'users.csv' csv header; "
        "MySQL: mysql --batch -e 'select ...' > users.tsv; SQL Server: bcp or sqlcmd -s, -W); "
        f"{any_file_reader()}"
    )


def any_file_reader() -> str:
    """What reads a table of users, from the registry: each source that reads any file (its shapes
    are ``ANY_FILE``; a mapping names its columns), with its flag of the files its workers read."""
    names = [
        f"migrate {description.name} {flag.flag} reads it with a mapping (docs/{description.name}.md)"
        for description in registry.descriptions()
        if description.kind.shapes is ANY_FILE
        for flag in declared_flags(description.add_arguments)
        if flag.reads is not None and flag.reads[0]
    ]
    return " or ".join(names) if names else "no source reads a table of users"
