"""The parts of a source's description that code below the command line reads (no argparse here).

A source is described once, in its package: ``transforms/sources/<name>/source.py`` exports a
:class:`SourceKind`, and ``command.py`` wraps it with its command (``declaration.SourceDescription``,
found by ``registry.py``). Who reads what:

- the scheduled sync (``transforms/sync/compare.py``) asks a user record whether it is blocked at
  the source and which ids a dead-lettered one would have had (:class:`UserRecordKind`, by the
  ``source`` value the reader writes into rows and dead letters);
- the launcher's first look at a file (``input_shape``, ``input_sniff``) tells one export from
  another (:class:`FileShapes`: the shapes a source's exports have, which of them each of its
  readers takes, and how a file's first records show them);
- the summary and manifest (``pipeline/report.py``) rename the source's counters of second factors
  and required actions not carried.

Example (a source whose users are NDJSON lines ``{"uid": .., "locked": true}``)::

    KIND = SourceKind(
        name="toy",
        records={"toy-user": UserRecordKind(blocked=_locked, ids=_uid)},
        shapes=FileShapes(
            shapes={"toy-users": Shape(what="a toy export")},  # "migrate toy --users reads it"
            readers={"toy-users": ("toy-users",)},
            identify=_toy_marks,  # top-level keys → ("toy-users", 'records with "uid"') or None
            rank=40,
        ),
    )
    missing_parts(KIND)  # [] when whole; else the parts missing, by name
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from transforms.common.reasons import Reason

if TYPE_CHECKING:
    import apache_beam as beam

    from transforms.common.records import DeadLetter, PartitionRows
    from transforms.mapping.roles import RoleEntry
    from transforms.sources.source_counters import SourceCounters

__all__ = [
    "NAME",
    "UserRecordKind",
    "UNREADABLE_FILE",
    "user_records",
    "Shape",
    "TextShape",
    "FileShapes",
    "ANY_FILE",
    "SourceKind",
    "missing_parts",
    "ReadUsers",
]

# A source's name: the word after ``migrate`` and the prefix of its counters.
NAME = re.compile(r"[a-z][a-z0-9]{1,19}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class UserRecordKind:
    """One kind of record a source's reader writes (its ``source`` value), as the sync reads it.

    ``blocked(record_json)``: blocked or disabled at the source (the row's original record bytes).
    ``ids(record, realm)``: the ids a dead-lettered record would have had; None when it cannot be
    told (then no removal is made, docs/sync.md). ``reason``/``flag``: why a new user blocked at
    the source is refused, and the flag that imports it anyway (then deactivates it)."""

    blocked: Callable[[bytes], bool]
    ids: Callable[[dict, str | None], list[str] | None]
    reason: str = Reason.BLOCKED
    flag: str = "--include-blocked"


def never_blocked(record_json: bytes) -> bool:
    """A record that is not one user's (a file that did not read): never blocked."""
    return False


def no_ids(record: dict, realm: str | None) -> list[str] | None:
    """A record whose users cannot be told (a file that did not read)."""
    return None


# A file that did not read: which users it held cannot be told.
UNREADABLE_FILE = UserRecordKind(blocked=never_blocked, ids=no_ids)


def user_records(
    counters: SourceCounters,
    *,
    blocked: Callable[[bytes], bool],
    ids: Callable[[dict, str | None], list[str] | None],
    reason: str = Reason.BLOCKED,
    flag: str = "--include-blocked",
) -> dict[str, UserRecordKind]:
    """The ``records`` of a reader of one-user records: its users' (``counters.source``) and the
    unreadable rest of a file (``counters.file_source``), whose users cannot be told."""
    return {
        counters.source: UserRecordKind(blocked=blocked, ids=ids, reason=reason, flag=flag),
        counters.file_source: UNREADABLE_FILE,
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class Shape:
    """What a file of this shape is, and what reads it (the refusal of another reader names it)."""

    what: str  # "a Keycloak realm export"
    # What reads it, in words; "" (the default): the command and flag that read it, from the
    # source's description ("migrate keycloak --realm reads it"; ``registry.takes``).
    takes: str = ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class TextShape:
    """An export that is not JSON, told from its first bytes (Firebase's CSV)."""

    what: str  # "a Firebase Auth CSV export"
    shape: str  # the key of the Shape whose ``takes`` says what reads it
    matches: Callable[[bytes], bool]


@dataclasses.dataclass(frozen=True, kw_only=True)
class FileShapes:
    """The files a source reads, and how a file's first records show them.

    ``identify(keys)`` looks at one JSON object's top-level keys (key → its value's first parse
    event: ``string``, ``start_array``, ...; ``"\\x00users[].<key>"`` stands for a key of the
    records of a top-level ``users`` array) and answers ``(shape, evidence)`` or None. Sources are
    asked in ``rank`` order (lower first): a source whose marks are broad (Auth0's profile keys)
    ranks after the ones whose marks are narrow (a realm's ``"realm"``)."""

    shapes: Mapping[str, Shape]  # shape key → what it is and what reads it
    readers: Mapping[str, tuple[str, ...]]  # a reader's expected key → the shapes it takes
    identify: Callable[[Mapping[str, str]], tuple[str, str] | None]
    rank: int
    text: tuple[TextShape, ...] = ()


def no_marks(keys: Mapping[str, str]) -> tuple[str, str] | None:
    return None


# A source that reads any file (a table of users): no shape of its own, none it refuses.
ANY_FILE = FileShapes(shapes={}, readers={}, identify=no_marks, rank=1000)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SourceKind:
    """The part of a source's description read below the command line (see the module docstring).

    ``records`` is empty for a source that cannot sync (``migrate zitadel``); every source whose
    rows are users has one entry per ``source`` value its reader writes into rows and into dead
    letters that carry one user's record (password or MFA records never decide whether a user is
    gone, so they have none). ``second_factors`` and ``required_actions``: counter prefix → the
    name prefix the manifest lists them under (``"keycloak.otp_not_carried."`` →
    ``"keycloak.otp."``)."""

    name: str
    records: Mapping[str, UserRecordKind]
    shapes: FileShapes
    second_factors: Mapping[str, str] = dataclasses.field(default_factory=dict)
    required_actions: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def syncs(self) -> bool:
        return bool(self.records)


def missing_parts(kind: SourceKind) -> list[str]:
    """The parts of ``kind`` that are missing or malformed, each named (``[]``: it is whole)."""
    problems: list[str] = []
    if not isinstance(kind.name, str) or not NAME.fullmatch(kind.name):
        problems.append(f"name ({kind.name!r} is not 2 to 20 lower-case letters and digits)")
    if not isinstance(kind.records, Mapping):
        problems.append("records (the record kinds the sync reads; {} when it cannot sync)")
    else:
        for source, record in kind.records.items():
            if (
                not isinstance(record, UserRecordKind)
                or not callable(record.blocked)
                or not callable(record.ids)
            ):
                problems.append(f"records[{source!r}] (blocked and ids, callables)")
            elif not record.flag.startswith("--"):
                problems.append(f"records[{source!r}].flag (the flag that imports a blocked user)")
    shapes = kind.shapes
    if not isinstance(shapes, FileShapes):
        problems.append("shapes (the file shapes it reads and how they are told)")
        return problems
    if not callable(shapes.identify):
        problems.append("shapes.identify (how a file's first records show its shapes)")
    for reader, taken in shapes.readers.items():
        unknown = [key for key in taken if key not in shapes.shapes]
        if not taken or unknown:
            problems.append(f"shapes.readers[{reader!r}] (shapes it takes, of shapes.shapes)")
    for text in shapes.text:
        if text.shape not in shapes.shapes or not callable(text.matches):
            problems.append(f"shapes.text {text.what!r} (a shape of shapes.shapes and a matcher)")
    return problems


class ReadUsers(NamedTuple):
    """What a source's read transform returns (as Beam's ``WriteResult`` names its outputs).

    ``roles`` is None unless the source was asked for roles (``--project-id``): then it holds each
    bundle's role entries, which ``transforms.output.grants.ResolveRoles`` turns into the catalogue.
    """

    rows: beam.PCollection[PartitionRows]  # (partition, encoded rows or their spill file's path)
    dead: beam.PCollection[DeadLetter]  # (sortkey, dead-letter line)
    roles: beam.PCollection[list[RoleEntry]] | None = None
