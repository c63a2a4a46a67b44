"""The toy source, whole: an installed plugin's source as docs/adding-a-source.md describes one.

Its export is NDJSON lines ``{"uid", "mail", "pw" (bcrypt), "locked"}``. A distribution offers it
through the entry point group ``zitadel_beam.sources`` (``toy = toy_source.command:DESCRIPTION``);
tests/transforms/sources/test_registry.py installs it that way (a ``*.dist-info`` on the path of a
CLI subprocess) and registers it in-process with ``registry.register``. It declares no shared flag
group: it gets neither the hash flags, nor ``--multiline``, nor the role or IdP flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.common.accounting import reader_invariant, users_lines
from transforms.common.records import (
    NAMESPACE,
    dead_letter,
    encoded_row,
    pack_rows,
    partition_of,
    user_name_key,
)
from transforms.sources.declaration import (
    FlagParser,
    Flags,
    Plan,
    SourceDescription,
    SourceSettings,
    file_flag,
)
from transforms.sources.source_parts import FileShapes, ReadUsers, Shape, SourceKind, UserRecordKind

NAME = "toy"
USER = f"{NAME}-user"  # the source of its rows and dead letters
READ, MAPPED = f"{NAME}.users_read", f"{NAME}.users_mapped"


def _locked(record_json: bytes) -> bool:
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("locked") is True


def _uid(record: dict, realm: str | None) -> list[str] | None:
    uid = record.get("uid")
    return [uid] if isinstance(uid, str) and uid else None


def _marks(keys: Mapping[str, str]) -> tuple[str, str] | None:
    return (f"{NAME}-users", 'records with "uid" and "mail"') if "uid" in keys and "mail" in keys else None


KIND = SourceKind(
    name=NAME,
    records={USER: UserRecordKind(blocked=_locked, ids=_uid, reason="locked", flag="--include-locked")},
    shapes=FileShapes(
        shapes={f"{NAME}-users": Shape(what="a toy export")},
        readers={f"{NAME}-users": (f"{NAME}-users",)},
        identify=_marks,
        rank=40,
    ),
)


class _ReadToyFn(beam.DoFn):
    """One export file → packed rows by partition, and dead letters (users without mail)."""

    def __init__(self, read_locked: bool):
        self._read_locked = read_locked

    def process(self, path: str):
        read, mapped = Metrics.counter(NAMESPACE, READ), Metrics.counter(NAMESPACE, MAPPED)
        parts: dict[int, list] = {}
        for position, line in enumerate(Path(path).read_bytes().splitlines()):
            record = orjson.loads(line)
            read.inc()
            if not record.get("mail"):
                yield beam.pvalue.TaggedOutput(
                    "dead", dead_letter((0, position), "missing-email", "no mail", USER, record)
                )
                continue
            if record.get("locked") and not self._read_locked:
                yield beam.pvalue.TaggedOutput(
                    "dead", dead_letter((0, position), "locked", "locked at the toy", USER, record)
                )
                continue
            mapped.inc()
            user = {
                "userName": record["mail"],
                "profile": {"firstName": "Toy", "lastName": record["uid"]},
                "email": {"email": record["mail"], "isEmailVerified": True},
                "hashedPassword": {"value": record["pw"]},
            }
            row = encoded_row(
                file_index=0,
                position=position,
                user_id=record["uid"],
                name_key=user_name_key(record["mail"]),
                entry_json=orjson.dumps({"userId": record["uid"], "user": user}),
                metadata_json=b"",
                password="bcrypt",
                source=USER,
                record_json=line,
                companions_json=b"",
                grants=(),
            )
            parts.setdefault(partition_of(record["uid"]), []).append(row)
        for part, rows in parts.items():
            yield part, pack_rows(rows)


class ReadToyUsers(beam.PTransform):
    """The toy export's file → ``ReadUsers(rows, dead)``."""

    def __init__(self, path: str, read_locked: bool):
        super().__init__()
        self._path, self._read_locked = path, read_locked

    def expand(self, pbegin):
        read = (
            pbegin
            | "ToyFile" >> beam.Create([self._path])
            | "ReadToy" >> beam.ParDo(_ReadToyFn(self._read_locked)).with_outputs("dead", main="rows")
        )
        return ReadUsers(read.rows, read.dead)


def add_arguments(parser: FlagParser) -> None:
    file_flag(parser, "--users", reads=f"{NAME}-users", required=True, help="the toy export (NDJSON)")
    parser.add_argument("--include-locked", action="store_true", help="import users locked at the toy")


def plan(flags: Flags, settings: SourceSettings) -> Plan:
    from transforms.sources.input_sniff import check_readable

    check_readable(flags.users, "--users", expected=f"{NAME}-users")
    return Plan(
        read=lambda pipeline, tmp_dir: pipeline | "Toy" >> ReadToyUsers(flags.users, settings.read_blocked),
        input_paths=[flags.users],
        input_names={0: flags.users},
    )


def summary_lines(counts: Mapping[str, int]) -> list[tuple[str, int | str]]:
    return [("users read", counts.get(READ, 0)), *users_lines(counts)]


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    return reader_invariant(
        counts,
        read=counts.get(READ, 0),
        noun="users",
        source=USER,
        passed=counts.get(MAPPED, 0),
        passed_label="mapped",
        refused_label="locked",
    )


DESCRIPTION = SourceDescription(
    kind=KIND,
    help="toy export → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=invariant,
)
