"""The shared planner (transforms/sources/input_plan.py): files matched, heads read, the wrong kind
refused from every registered source's shapes, SQL dumps refused saying what to export instead.

A source registered here the way a plugin is (``lookalike``, with a JSON mark and a CSV header of
its own) shows that a new source's files are refused by every other reader without any of them
naming it: the refusals loop over the registered readers, and the command line is run for each
built-in source whose planner this is."""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from repo_files import ROOT

from pipeline.cli import main
from transforms.common.errors import ConfigError
from transforms.sources import registry
from transforms.sources.declaration import Plan, SourceDescription, file_flag
from transforms.sources.input_plan import (
    LookedFile,
    any_file_reader,
    file_problem,
    head_problem,
    look_at_inputs,
    plan_inputs,
    sql_dump,
)
from transforms.sources.input_shape import readers
from transforms.sources.source_parts import FileShapes, Shape, SourceKind, TextShape

# ------------------------------------------------------------------ a source registered as a plugin


def _marks(keys: Mapping[str, str]) -> tuple[str, str] | None:
    return ("lookalike-users", 'records with "lookalike_id"') if "lookalike_id" in keys else None


def _csv(head: bytes) -> bool:
    return head.lstrip(b"\xef\xbb\xbf").startswith(b"lookalike_id,")


def _add_arguments(parser) -> None:
    file_flag(parser, "--users", reads="lookalike-users", required=True, help="its export")


def _plan(flags, settings) -> Plan:
    raise AssertionError("never planned here")


LOOKALIKE = SourceDescription(
    kind=SourceKind(
        name="lookalike",
        records={},
        shapes=FileShapes(
            shapes={"lookalike-users": Shape(what="a lookalike export")},
            readers={"lookalike-users": ("lookalike-users",)},
            identify=_marks,
            rank=5,
            text=(TextShape(what="a lookalike CSV export", shape="lookalike-users", matches=_csv),),
        ),
    ),
    help="a source registered by this test",
    add_arguments=_add_arguments,
    plan=_plan,
    summary_lines=lambda counts: [],
    invariant=lambda counts: (True, ""),
)
TAKES = "migrate lookalike --users reads it"
JSON_HEAD = b'[{"lookalike_id": "l1", "email": "ann@example.com", "user_id": "x"}]\n'
CSV_HEAD = b"lookalike_id,email,first_name\nl1,ann@example.com,Ann\n"


@pytest.fixture
def lookalike():
    registry.register(LOOKALIKE)
    try:
        yield LOOKALIKE
    finally:
        registry.unregister("lookalike")


def _other_readers() -> list[str]:
    return [reader for reader in readers() if not reader.startswith("lookalike")]


def test_a_registered_sources_json_is_refused_by_every_other_reader(lookalike):
    for reader in _other_readers():
        problem = head_problem(JSON_HEAD, reader)
        assert problem is not None and problem.startswith(
            'looks like a lookalike export (records with "lookalike_id")'
        )
        assert problem.endswith(TAKES), problem
    assert head_problem(JSON_HEAD, "lookalike-users") is None


def test_a_registered_sources_csv_is_refused_by_every_other_reader_not_by_the_reader_of_any_file(lookalike):
    for reader in _other_readers():
        problem = head_problem(CSV_HEAD, reader)
        assert problem is not None and problem.startswith("looks like a lookalike CSV export, not "), reader
        assert problem.endswith(TAKES)
    assert head_problem(CSV_HEAD, "lookalike-users") is None
    # The table reads what it is given a mapping for: another system's users table too.
    assert head_problem(CSV_HEAD, None) is None and head_problem(JSON_HEAD, None) is None


def test_without_the_source_registered_its_files_are_left_to_the_readers():
    assert all(head_problem(CSV_HEAD, reader) is None for reader in [*readers(), None])


# ------------------------------------------------------------------ SQL dumps

DUMPS = {
    "mysqldump": b"-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)\n--\n-- Host: localhost\n",
    "pg_dump": b"--\n-- PostgreSQL database dump\n--\n\nSET statement_timeout = 0;\n",
    "mysql conditional": b"/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n",
    "create table": b"\xef\xbb\xbfCREATE TABLE users (id int, email text);\n",
    "insert into": b"insert into users (id, email) values (1, 'ann@example.com');\n",
    "copy from stdin": b"SET search_path = public;\nCOPY public.users (id, email) FROM stdin;\n1\tann@x\n",
    "sql server script": b"USE [app]\nGO\nSET ANSI_NULLS ON\nGO\nCREATE TABLE [dbo].[Users](\n",
}


@pytest.mark.parametrize("name", DUMPS)
def test_a_sql_dump_is_refused_by_every_reader_saying_what_to_export(name):
    for reader in [*readers(), None]:
        problem = head_problem(DUMPS[name], reader)
        assert problem is not None and problem.startswith(f"looks like a SQL dump ({sql_dump(DUMPS[name])})")
        for advice in ("csv header", "mysql --batch", "bcp or sqlcmd -s, -W"):
            assert advice in problem
        assert problem.endswith(any_file_reader())
    assert "--input reads it with a mapping" in any_file_reader()  # the registered reader of any file


@pytest.mark.parametrize(
    "head",
    [
        b"id,email,note\n1,ann@example.com,INSERT INTO is how she learned SQL\n",
        b'[{"sql": "CREATE TABLE users (id int)"}]',
        b"id;sql\n1;CREATE TABLE x\n",
    ],
)
def test_a_file_that_mentions_sql_is_not_a_dump(head):
    assert sql_dump(head) is None


# ------------------------------------------------------------------ matching and heads


def test_files_are_matched_in_order_with_their_heads(tmp_path):
    for name in ("b.csv", "a.csv.gz"):
        data = b"id,email\n1,ann@example.com\n"
        (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    looked = look_at_inputs(str(tmp_path / "*.csv*"), flag="--users", reader=None, first_index=3)
    assert [(one.file.index, Path(one.file.path).name) for one in looked] == [(3, "a.csv.gz"), (4, "b.csv")]
    assert all(one.head == b"id,email\n1,ann@example.com\n" and one.complete for one in looked)
    (planned,) = plan_inputs([str(tmp_path / "b.csv")], flag="--users", reader=None)
    assert (planned.index, planned.path, planned.size) == (0, looked[1].file.path, 27)


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize(
    "setup, expected",
    [
        (lambda d: str(d / "missing-*.csv"), "--users '{d}/missing-*.csv': no such file"),
        (lambda d: str(d), "is a directory, not a file"),
        (
            lambda d: _write(d / "e.csv", b""),
            "--users {d}/e.csv: the file is empty (0 bytes); hint",
        ),
        (
            lambda d: _write(d / "w.csv", b" \n"),
            "the file holds only white space; hint",
        ),
        (
            lambda d: _write(d / "x.gz", b"\x1f\x8b\x08\x00broken"),
            "--users {d}/x.gz: cannot be read (",
        ),
    ],
)
def test_a_file_that_cannot_be_used_is_one_line(tmp_path, setup, expected):
    pattern = setup(tmp_path)
    with pytest.raises(ConfigError) as err:
        look_at_inputs(pattern, flag="--users", reader=None, empty_hint="hint")
    assert expected.format(d=tmp_path) in str(err.value) and "\n" not in str(err.value)


def test_an_empty_file_is_kept_when_allowed_and_the_sources_check_runs_last(tmp_path):
    (tmp_path / "empty.json").write_bytes(b"")
    (tmp_path / "one.json").write_bytes(b'{"x": 1}\n')
    assert len(plan_inputs(str(tmp_path / "empty.json"), flag="--mfa", reader=None, allow_empty=True)) == 1
    seen: list[LookedFile] = []

    def check(looked: LookedFile) -> str | None:
        seen.append(looked)
        return "not what this source reads" if looked.head.startswith(b"{") else None

    with pytest.raises(ConfigError, match=r"^--users .*one.json: not what this source reads$"):
        plan_inputs(str(tmp_path / "*.json"), flag="--users", reader=None, allow_empty=True, check=check)
    assert [Path(one.file.path).name for one in seen] == ["one.json"]  # not asked of the empty file


def test_file_problem_reads_the_head_only_and_leaves_an_unreadable_file_to_its_reader(tmp_path):
    path = tmp_path / "dump.sql.gz"
    path.write_bytes(gzip.compress(DUMPS["pg_dump"] + b"x" * (1 << 20)))
    assert (file_problem(str(path), "keycloak-realm") or "").startswith("looks like a SQL dump")
    assert file_problem(str(tmp_path / "missing.json"), "keycloak-realm") is None


# ------------------------------------------------------------------ the command line, every planner

OKTA = ROOT / "examples" / "okta" / "okta-users.csv"


def _refused(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    return err[0]


# Each planner's command line, without the file: (command, flag).
COMMANDS = {
    "okta": (["migrate", "okta", "--org=1"], "--users"),
    "firebase": (["migrate", "firebase", "--org=1"], "--users"),
    "keycloak": (["migrate", "keycloak", "--org=1"], "--realm"),
    "table": (["migrate", "table", "--org=1", "--map=id=id", "--map=email=email"], "--input"),
    "auth0": (["migrate", "auth0", "--org=1", "--passwords=none"], "--users"),
    "zitadel": (["migrate", "zitadel"], "--export"),
}


@pytest.mark.parametrize("source", COMMANDS)
def test_every_source_refuses_a_sql_dump_before_writing_anything(tmp_path, capsys, source):
    dump = tmp_path / "users.sql"
    dump.write_bytes(DUMPS["mysqldump"] + b"CREATE TABLE `users` (\n")
    command, flag = COMMANDS[source]
    out = tmp_path / "out"
    line = _refused(capsys, [*command, f"{flag}={dump}", f"--output={out}/importBody.json"])
    assert line.startswith(f"zitadel-beam: error: {flag}") and "looks like a SQL dump" in line, line
    assert (
        "\\copy (select ...) to 'users.csv' csv header" in line and "--input reads it with a mapping" in line
    )
    assert not out.exists() or not any(out.rglob("*.json"))


# The table reads what it is given a mapping for (head_problem's reader of any file).
@pytest.mark.parametrize("source", [s for s in COMMANDS if s not in ("okta", "table")])
def test_every_other_source_refuses_an_okta_export_naming_migrate_okta(tmp_path, capsys, source):
    command, flag = COMMANDS[source]
    line = _refused(capsys, [*command, f"{flag}={OKTA}", f"--output={tmp_path}/out/importBody.json"])
    assert "looks like an Okta user export (CSV)" in line and line.endswith(
        "migrate okta --users reads it"
    ), line


def test_okta_refuses_another_sources_json_naming_its_command(tmp_path, capsys):
    realm = tmp_path / "realm.json"
    realm.write_text(json.dumps({"realm": "acme", "users": [{"username": "ann"}]}))
    line = _refused(capsys, [*COMMANDS["okta"][0], f"--users={realm}", f"--output={tmp_path}/o/b.json"])
    assert line.endswith(
        'looks like a Keycloak realm export (a "realm" key), not an Okta user export (CSV); '
        "migrate keycloak --realm reads it"
    )


def test_a_table_with_login_and_email_columns_is_still_a_table(tmp_path, capsys):
    table = tmp_path / "users.csv"
    table.write_text("id,username,login,email,status\n1,ann,ann,ann@example.com,active\n")
    out = tmp_path / "out"
    code = main([*COMMANDS["table"][0], f"--input={table}", f"--output={out}/importBody.json"])
    assert code == 0, capsys.readouterr().err
