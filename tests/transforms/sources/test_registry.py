"""transforms/sources/registry.py: sources are found, not listed, and a plugin is one of them.

The built-in sources are the packages under transforms/sources/ that have a ``command.py``; a plugin
is an installed distribution's entry point of the group ``zitadel_beam.sources``. The toy source
(tests/helpers/toy_plugin/toy_source/, outside the package tree) is installed as a plugin for a
CLI subprocess (a ``*.dist-info`` with its ``entry_points.txt`` on ``PYTHONPATH``: importlib.metadata
finds it as it finds any installed distribution) and runs end to end: ``migrate``, ``--help``,
``push`` to the test server, two ``--state`` nights where a user locked at the toy is deactivated in
ZITADEL. Registered in-process, its shape is told apart by the other readers and its files are
guarded like the built-in sources'. A description missing a part is refused, naming the part.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_files import ROOT
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline import cli
from transforms.sources import registry
from transforms.sources.declaration import FlexPart
from transforms.sources.registry import SourceDescriptionError, kind, kinds
from transforms.sources.source_parts import UserRecordKind

ORG = "123456789"
PLUGIN = Path(__file__).resolve().parents[2] / "helpers" / "toy_plugin"

sys.path.insert(0, str(PLUGIN))  # in-process, the toy is registered the way its tests would
from toy_source import command as toy_command  # noqa: E402 - after its folder is on the path

TOY = toy_command.DESCRIPTION


@pytest.fixture
def toy():
    registry.register(TOY)
    try:
        yield TOY
    finally:
        registry.unregister("toy")


# ------------------------------------------------------------------ the registry


def test_the_built_in_sources_are_the_packages_that_have_a_command():
    packages = sorted(path.parent.name for path in (ROOT / "transforms" / "sources").glob("*/command.py"))
    assert [d.name for d in registry.descriptions()] == packages
    assert [k.name for k in kinds()] == packages
    for description in registry.descriptions():
        assert description.kind is kind(description.name)
        assert description.kind.name == description.name  # the package's name, written once
    assert registry.syncing_names() == tuple(d.name for d in registry.descriptions() if d.kind.syncs)


def test_each_shape_says_which_command_and_flag_read_it():
    from transforms.sources.input_shape import shapes

    for key, shape in shapes().items():
        assert shape.takes, key
    for description in registry.descriptions():
        for key in description.kind.shapes.shapes:
            taken = registry.takes(key)
            assert not taken or taken.startswith(f"migrate {description.name} --"), (key, taken)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"plan": None}, "plan (a source of users"),
        ({"add_arguments": "not callable"}, "add_arguments (a function)"),
        ({"help": " "}, "help (the command's one line)"),
        ({"invariant": None}, "invariant (a source of users"),
        ({"summary_lines": None}, "summary_lines (a source of users"),
        ({"kind": None}, "kind (its SourceKind"),
        ({"kind": dataclasses.replace(toy_command.KIND, records=None)}, "kind.records"),
        ({"kind": dataclasses.replace(toy_command.KIND, shapes=None)}, "kind.shapes (the file shapes"),
        (
            {
                "kind": dataclasses.replace(
                    toy_command.KIND,
                    records={toy_command.USER: UserRecordKind(blocked=None, ids=toy_command._uid)},
                )
            },
            "kind.records['toy-user'] (blocked and ids",
        ),
        (
            {
                "kind": dataclasses.replace(
                    toy_command.KIND,
                    shapes=dataclasses.replace(toy_command.KIND.shapes, readers={"toy-users": ("csv",)}),
                )
            },
            "kind.shapes.readers['toy-users']",
        ),
        ({"flex": "yes"}, "flex (a FlexPart"),
        ({"groups": {"hashes"}}, "groups (a frozenset of FlagGroup)"),
    ],
)
def test_a_description_missing_a_part_is_refused_when_registered_naming_the_part(change, named):
    broken = dataclasses.replace(TOY, **change)
    with pytest.raises(
        SourceDescriptionError, match="source '?toy'?: missing or malformed: |source None"
    ) as refused:
        registry.register(broken)
    assert named in str(refused.value)
    assert "toy" not in [d.name for d in registry.descriptions()]


def test_a_name_or_a_record_kind_already_taken_is_refused():
    with pytest.raises(SourceDescriptionError, match="'auth0': a source of that name is registered"):
        registry.register(registry.get("auth0"))
    profile = next(iter(kind("auth0").records))
    stolen = dataclasses.replace(
        TOY,
        kind=dataclasses.replace(
            toy_command.KIND, records={profile: toy_command.KIND.records[toy_command.USER]}
        ),
    )
    with pytest.raises(SourceDescriptionError, match=f"{profile} already belong to source 'auth0'"):
        registry.register(stolen)


# ------------------------------------------------------------------ the toy, a plugin, end to end


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


def _install(site: Path) -> dict[str, str]:
    """The toy installed as a distribution is: its package and a ``*.dist-info`` naming its entry
    point, in a folder on the path; the environment of a CLI subprocess that sees it."""
    shutil.copytree(PLUGIN / "toy_source", site / "toy_source")
    info = site / "toy_source-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-source\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{registry.ENTRY_POINTS}]\ntoy = toy_source.command:DESCRIPTION\n"
    )
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_toy_source_installed_as_a_plugin_migrates_pushes_and_syncs(tmp_path):
    env = _install(tmp_path / "site")
    export = _write_toy(tmp_path / "day1" / "toy.ndjson", _toy_users())
    token = tmp_path / "token"
    token.write_text(PAT)

    # Its command is listed, with its own flags and the shared ones of the groups it declares (none).
    listed = _cli(env, "migrate", "--help")
    assert listed.returncode == 0 and "toy export → import bodies" in listed.stdout
    own = _cli(env, "migrate", "toy", "--help").stdout
    for flag in ("--users", "--include-locked", "--org", "--output", "--state", "--push-url"):
        assert flag in own, flag
    for flag in ("--multiline", "--zitadel-config", "--on-unsupported-hash", "--project-id", "--idp-map"):
        assert flag not in own, flag

    # migrate, then push
    out = tmp_path / "plain" / "importBody.json"
    ran = _cli(env, "migrate", "toy", f"--org={ORG}", f"--users={export}", f"--output={out}")
    assert ran.returncode == 0, ran.stderr
    manifest = json.loads((tmp_path / "plain" / "importBody.manifest.json").read_text())
    assert manifest["source"] == "toy"
    assert manifest["invariant"]["holds"], manifest["invariant"]
    assert manifest["invariant"]["text"].startswith("users read 4 = written 3 + dead-lettered 1")
    assert "zitadel-beam migrate toy" in ran.stdout and "missing-email (toy-user)" in ran.stdout
    with ZitadelServer(tokens={PAT}) as server:
        manifest_path = tmp_path / "plain" / "importBody.manifest.json"
        pushed = _cli(
            env, "push", f"--manifest={manifest_path}", f"--url={server.url}", f"--token-file={token}"
        )
        assert pushed.returncode == 0, pushed.stderr
        with server.state.lock:
            assert sorted(server.state.users) == ["toy-1", "toy-2", "toy-3"]

    # Two nights with --state: toy-2 is locked at the toy on night 2, and ZITADEL deactivates it.
    state = tmp_path / "state"
    with ZitadelServer(tokens={PAT}) as server:

        def night(export: Path, *extra: str) -> subprocess.CompletedProcess:
            return _cli(
                env,
                "migrate",
                "toy",
                f"--org={ORG}",
                f"--users={export}",
                f"--output={tmp_path / 'night' / 'importBody.json'}",
                f"--state={state}",
                f"--push-url={server.url}",
                f"--token-file={token}",
                *extra,
            )

        first = night(export)
        assert first.returncode == 0, first.stderr
        assert server.state.user_states["toy-2"] in ("active", "initial")
        day2 = _write_toy(tmp_path / "day2" / "toy.ndjson", _toy_users(locked=frozenset({2})))
        second = night(day2, "--max-blocks=1")
        assert second.returncode == 0, second.stderr
        assert server.state.user_states["toy-2"] == "inactive"
        assert server.state.user_states["toy-1"] in ("active", "initial")
        sync = json.loads((tmp_path / "night" / "importBody.manifest.json").read_text())["sync"]
        assert sync, "the night's manifest records its sync"


def test_a_plugin_that_is_not_a_description_is_refused_naming_it(tmp_path):
    env = _install(tmp_path / "site")
    points = tmp_path / "site" / "toy_source-0.1.dist-info" / "entry_points.txt"
    points.write_text(f"[{registry.ENTRY_POINTS}]\ntoy = toy_source.command:KIND\n")
    ran = _cli(env, "migrate", "--help")
    assert ran.returncode != 0
    assert "source 'toy': the entry point toy_source.command:KIND is not a SourceDescription" in ran.stderr


# ------------------------------------------------------------------ the toy, registered in-process


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
    """The flags it marks as naming files: never written by the run, and gs:// on a remote runner."""
    (command,) = [c for c in cli.commands() if c.path == ("migrate", "toy")]
    assert command.files == {"users": "--users"} and command.worker_files == ("users",)
    export = _write_toy(tmp_path / "toy.ndjson", _toy_users())
    assert cli.main(["migrate", "toy", f"--org={ORG}", f"--users={export}", f"--output={export}"]) == 2
    assert "--users" in capsys.readouterr().err
    remote = ["--runner=DataflowRunner", "--temp_location=gs://b/tmp", "--output=gs://b/out/importBody.json"]
    assert cli.main(["migrate", "toy", f"--org={ORG}", f"--users={export}", *remote]) == 2
    assert f"--users '{export}' is not on Cloud Storage" in capsys.readouterr().err


def test_a_source_that_cannot_sync_is_refused_with_state_naming_those_that_can(tmp_path, capsys):
    cannot = dataclasses.replace(TOY, kind=dataclasses.replace(toy_command.KIND, name="nosync", records={}))
    registry.register(cannot)
    try:
        export = _write_toy(tmp_path / "toy.ndjson", _toy_users())
        argv = ["migrate", "nosync", f"--org={ORG}", f"--users={export}", f"--state={tmp_path / 'state'}"]
        assert cli.main([*argv, f"--output={tmp_path / 'out' / 'importBody.json'}"]) == 2
    finally:
        registry.unregister("nosync")
    can = registry.syncing_names()
    assert (
        f"--state: migrate nosync cannot sync ({', '.join(can[:-1])} and {can[-1]} can)"
        in capsys.readouterr().err
    )
    assert "nosync" not in can and set(can) == {d.name for d in registry.descriptions() if d.kind.syncs}


def test_a_flex_part_is_a_flex_part():
    assert isinstance(dataclasses.replace(TOY, flex=FlexPart()).flex, FlexPart)
