"""pipeline/sources.py and pipeline/source_description.py: a source is described once.

A toy source, built here and registered through the registry alone (no shared module edited),
gets its command, its place in the first look at files, and its record kind in the sync: it is
migrated, pushed to the test server, and synced for two nights with ``--state``, where a user
locked at the toy source is deactivated in ZITADEL. A description missing a part is refused when
it is registered, naming the part.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

import apache_beam as beam
import orjson
import pytest
from apache_beam.metrics import Metrics
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline import cli, sources
from pipeline.migrate import run_migration
from pipeline.migrate_options import add_common_arguments, common_args
from pipeline.report import shared_summary_lines, users_lines
from pipeline.source_description import SourceDescription
from transforms.common.accounting import reader_invariant
from transforms.common.records import (
    NAMESPACE,
    dead_letter,
    encoded_row,
    pack_rows,
    partition_of,
    user_name_key,
)
from transforms.sources.registry import SourceDescriptionError, kind, kinds
from transforms.sources.source_parts import FileShapes, ReadUsers, Shape, SourceKind, UserRecordKind

ORG = "123456789"

# ------------------------------------------------------------------ the toy source, whole

# The toy's export: NDJSON lines {"uid", "mail", "pw" (bcrypt), "locked"}.
_TOY_USER = "toy-user"
_READ, _MAPPED = "toy.users_read", "toy.users_mapped"


def _locked(record_json: bytes) -> bool:
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("locked") is True


def _uid(record: dict, realm: str | None) -> list[str] | None:
    uid = record.get("uid")
    return [uid] if isinstance(uid, str) and uid else None


def _toy_marks(keys: Mapping[str, str]) -> tuple[str, str] | None:
    return ("toy-users", 'records with "uid" and "mail"') if "uid" in keys and "mail" in keys else None


TOY_KIND = SourceKind(
    name="toy",
    records={_TOY_USER: UserRecordKind(blocked=_locked, ids=_uid, reason="locked", flag="--include-locked")},
    shapes=FileShapes(
        shapes={"toy-users": Shape(what="a toy export", takes="migrate toy --users reads it")},
        readers={"toy-users": ("toy-users",)},
        identify=_toy_marks,
        rank=40,
    ),
)


class _ReadToyFn(beam.DoFn):
    def process(self, path: str):
        read, mapped = Metrics.counter(NAMESPACE, _READ), Metrics.counter(NAMESPACE, _MAPPED)
        parts: dict[int, list] = {}
        lines = Path(path).read_bytes().splitlines()
        for position, line in enumerate(lines):
            record = orjson.loads(line)
            read.inc()
            if not record.get("mail"):
                yield beam.pvalue.TaggedOutput(
                    "dead", dead_letter((0, position), "missing-email", "no mail", _TOY_USER, record)
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
                source=_TOY_USER,
                record_json=line,
                companions_json=b"",
                grants=(),
            )
            parts.setdefault(partition_of(record["uid"]), []).append(row)
        for part, rows in parts.items():
            yield part, pack_rows(rows)


class _ReadToy(beam.PTransform):
    def __init__(self, path: str):
        super().__init__()
        self._path = path

    def expand(self, pbegin):
        read = (
            pbegin
            | "ToyFile" >> beam.Create([self._path])
            | "ReadToy" >> beam.ParDo(_ReadToyFn()).with_outputs("dead", main="rows")
        )
        return ReadUsers(read.rows, read.dead)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--users", required=True, help="the toy export (NDJSON)")
    parser.add_argument("--include-locked", action="store_true", help="import users locked at the toy")
    add_common_arguments(parser)


def _summary_lines(counts: Mapping[str, int]) -> list[tuple[str, object]]:
    return [("users read", counts.get(_READ, 0)), *users_lines(counts), *shared_summary_lines(counts, "toy")]


def _invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    return reader_invariant(
        counts,
        read=counts.get(_READ, 0),
        noun="users",
        source=_TOY_USER,
        passed=counts.get(_MAPPED, 0),
        passed_label="mapped",
        refused_label="locked",
    )


def _run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    from transforms.sources.input_sniff import check_readable

    check_readable(known_args.users, "--users", expected="toy-users")
    return run_migration(
        source_name="toy",
        add_source=lambda pipeline, tmp_dir: pipeline | "Toy" >> _ReadToy(known_args.users),
        common=common_args(known_args),
        pipeline_args=pipeline_args,
        input_paths=[known_args.users],
        summary_lines=_summary_lines,
        invariant=_invariant,
        sync_source={"include_blocked": known_args.include_locked, "realm": None},
        input_names={0: known_args.users},
    )


TOY = SourceDescription(
    name="toy",
    help="toy export → import bodies",
    add_arguments=_add_arguments,
    run=_run,
    summary_lines=_summary_lines,
    invariant=_invariant,
    kind=TOY_KIND,
    flex=None,
    files={"users": "--users"},
    worker_files=("users",),
)


@pytest.fixture
def toy():
    sources.register(TOY)
    try:
        yield TOY
    finally:
        sources.unregister("toy")


# ------------------------------------------------------------------ the registry


def test_the_built_in_sources_are_registered_in_the_order_of_the_help():
    assert [s.name for s in sources.sources()] == ["auth0", "keycloak", "table", "firebase", "zitadel"]
    assert [k.name for k in kinds()] == ["auth0", "keycloak", "table", "firebase", "zitadel"]
    for source in sources.sources():
        assert source.kind is kind(source.name)
    assert [s.name for s in sources.sources() if s.kind.syncs] == ["auth0", "keycloak", "table", "firebase"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"run": None}, "run (a function)"),
        ({"add_arguments": "not callable"}, "add_arguments (a function)"),
        ({"help": " "}, "help (the command's one line)"),
        ({"invariant": None}, "invariant (a source of users"),
        ({"summary_lines": None}, "summary_lines (a source of users"),
        ({"kind": None}, "kind (its SourceKind"),
        ({"kind": dataclasses.replace(TOY_KIND, name="other")}, "kind (named 'other', not 'toy')"),
        ({"kind": dataclasses.replace(TOY_KIND, records=None)}, "kind.records"),
        ({"kind": dataclasses.replace(TOY_KIND, shapes=None)}, "kind.shapes (the file shapes"),
        (
            {
                "kind": dataclasses.replace(
                    TOY_KIND, records={_TOY_USER: UserRecordKind(blocked=None, ids=_uid)}
                )
            },
            "kind.records['toy-user'] (blocked and ids",
        ),
        (
            {
                "kind": dataclasses.replace(
                    TOY_KIND, shapes=dataclasses.replace(TOY_KIND.shapes, identify=None)
                )
            },
            "kind.shapes.identify",
        ),
        (
            {
                "kind": dataclasses.replace(
                    TOY_KIND, shapes=dataclasses.replace(TOY_KIND.shapes, readers={"toy-users": ("csv",)})
                )
            },
            "kind.shapes.readers['toy-users']",
        ),
        ({"flex": "yes"}, "flex (a FlexPart"),
        ({"files": ["--users"]}, "files (dest → flag"),
        ({"worker_files": ("input",)}, "worker_files (dests among files)"),
    ],
)
def test_a_description_missing_a_part_is_refused_when_registered_naming_the_part(change, named):
    broken = dataclasses.replace(TOY, **change)
    with pytest.raises(SourceDescriptionError, match="source 'toy': missing or malformed: ") as refused:
        sources.register(broken)
    assert named in str(refused.value)
    assert "toy" not in [s.name for s in sources.sources()]
    assert "toy" not in [k.name for k in kinds()]


def test_a_name_or_a_record_kind_already_taken_is_refused():
    with pytest.raises(SourceDescriptionError, match="'auth0': a source of that name is registered"):
        sources.register(sources.get("auth0"))
    stolen = dataclasses.replace(
        TOY, kind=dataclasses.replace(TOY_KIND, records={"auth0-profile": TOY_KIND.records[_TOY_USER]})
    )
    with pytest.raises(SourceDescriptionError, match="auth0-profile already belong to source 'auth0'"):
        sources.register(stolen)


# ------------------------------------------------------------------ the toy, end to end


def _write_toy(path: Path, users: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(u) + "\n" for u in users))
    return path


def _toy_users(locked: frozenset[int] = frozenset()) -> list[dict]:
    pw = hash_pool(1)[0]  # a cost the target accepts (10)
    users = [
        {"uid": f"toy-{n}", "mail": f"toy{n}@example.com", "pw": pw, "locked": n in locked} for n in (1, 2, 3)
    ]
    return users + [{"uid": "toy-4", "mail": "", "pw": pw}]  # dead-lettered: no mail


def test_a_toy_source_registered_alone_migrates_pushes_and_syncs(toy, tmp_path, capsys):
    export = _write_toy(tmp_path / "day1" / "toy.ndjson", _toy_users())
    token = tmp_path / "token"
    token.write_text(PAT)
    # Its command exists, with its own flags and the shared ones, handing unknown ones to Beam.
    (command,) = [c for c in cli.commands() if c.path == ("migrate", "toy")]
    assert command.help == "toy export → import bodies" and command.hands_to_beam

    # migrate, then push
    out = tmp_path / "plain" / "importBody.json"
    assert cli.main(["migrate", "toy", f"--org={ORG}", f"--users={export}", f"--output={out}"]) == 0
    manifest = json.loads((tmp_path / "plain" / "importBody.manifest.json").read_text())
    assert manifest["source"] == "toy"
    assert manifest["invariant"]["holds"], manifest["invariant"]
    assert manifest["invariant"]["text"].startswith("users read 4 = written 3 + dead-lettered 1")
    printed = capsys.readouterr().out
    assert "zitadel-beam migrate toy" in printed and "missing-email (toy-user)" in printed
    with ZitadelServer(tokens={PAT}) as server:
        manifest_path = tmp_path / "plain" / "importBody.manifest.json"
        assert (
            cli.main(["push", f"--manifest={manifest_path}", f"--url={server.url}", f"--token-file={token}"])
            == 0
        )
        with server.state.lock:
            assert sorted(server.state.users) == ["toy-1", "toy-2", "toy-3"]

    # Two nights with --state: toy-2 is locked at the toy on night 2, and ZITADEL deactivates it.
    state = tmp_path / "state"
    with ZitadelServer(tokens={PAT}) as server:

        def night(export: Path, *extra: str) -> int:
            return cli.main(
                [
                    "migrate",
                    "toy",
                    f"--org={ORG}",
                    f"--users={export}",
                    f"--output={tmp_path / 'night' / 'importBody.json'}",
                    f"--state={state}",
                    f"--push-url={server.url}",
                    f"--token-file={token}",
                    *extra,
                ]
            )

        assert night(export) == 0
        assert server.state.user_states["toy-2"] in ("active", "initial")
        day2 = _write_toy(tmp_path / "day2" / "toy.ndjson", _toy_users(locked=frozenset({2})))
        assert night(day2, "--max-blocks=1") == 0
        assert server.state.user_states["toy-2"] == "inactive"
        assert server.state.user_states["toy-1"] in ("active", "initial")
        sync = json.loads((tmp_path / "night" / "importBody.manifest.json").read_text())["sync"]
        assert sync, "the night's manifest records its sync"


def test_the_toys_shape_is_told_apart_by_the_other_readers(toy, tmp_path, capsys):
    from transforms.sources.input_shape import shape_problem

    export = _write_toy(tmp_path / "toy.ndjson", _toy_users())
    argv = ["migrate", "auth0", f"--org={ORG}", f"--users={export}", "--passwords=none"]
    assert cli.main([*argv, f"--output={tmp_path / 'out' / 'importBody.json'}"]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            'looks like a toy export (records with "uid" and "mail"), not an Auth0 user export; '
            "migrate toy --users reads it"
        )
    )
    assert shape_problem(str(export), "toy-users") is None
    assert shape_problem(str(export), "keycloak-realm") is not None


def test_the_toys_files_are_guarded_like_the_built_in_sources(toy, tmp_path, capsys):
    """Its description's files: never written by the run, and gs:// on a remote runner."""
    export = _write_toy(tmp_path / "toy.ndjson", _toy_users())
    assert cli.main(["migrate", "toy", f"--org={ORG}", f"--users={export}", f"--output={export}"]) == 2
    assert "--users" in capsys.readouterr().err
    remote = ["--runner=DataflowRunner", "--temp_location=gs://b/tmp", "--output=gs://b/out/importBody.json"]
    assert cli.main(["migrate", "toy", f"--org={ORG}", f"--users={export}", *remote]) == 2
    assert f"--users '{export}' is not on Cloud Storage" in capsys.readouterr().err
