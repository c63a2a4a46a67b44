"""The Flex Template's entry (flex_template/launch.py, pipeline/flex_entry.py): its parameters are
the CLI's flags (flex_template/metadata.json, written by pipeline/flex_metadata.py), secrets go in by
reference only, and the template's entry point runs the bundled sample (the arguments of
`./run_local.sh`) writing the same bodies as the CLI."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

import pytest
from repo_files import ROOT

from pipeline import cli, flex_entry
from transforms.sources.registry import descriptions as sources

# The sources the template offers: those whose description has a template part (transforms/sources/registry.py).
SOURCES = tuple(source.name for source in sources() if source.flex is not None)
PARAMS = flex_entry.load_parameters()


def _command_actions(source: str) -> dict[str, argparse.Action]:
    parser = cli.build_parser()
    current = parser
    for name in ("migrate", source):
        action = next(a for a in current._actions if isinstance(a, argparse._SubParsersAction))
        current = action.choices[name]
    return {flag: a for flag, a in current._option_string_actions.items() if flag.startswith("--")}


ACTIONS = {source: _command_actions(source) for source in SOURCES}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def test_metadata_has_the_documented_fields():
    document = json.loads(flex_entry.METADATA.read_text(encoding="utf-8"))
    assert document["name"] and document["description"]
    for param in document["parameters"]:
        assert set(param) <= {"name", "label", "helpText", "isOptional", "regexes", "customMetadata"}
        assert param["label"] and param["helpText"], param["name"]
        assert re.fullmatch(r"[a-z][a-z0-9_]*", param["name"])
        for regex in param.get("regexes", []):
            re.compile(regex)
    required = {name for name, param in PARAMS.items() if not param["isOptional"]}
    assert required == {"source", "org", "output"}


@pytest.mark.parametrize("name", sorted(set(PARAMS) - {"source"}))
def test_every_parameter_is_a_flag_of_a_migrate_command(name):
    actions = [ACTIONS[source][_flag(name)] for source in SOURCES if _flag(name) in ACTIONS[source]]
    assert actions, f"{name} is no flag of any migrate command"
    is_bool = PARAMS[name].get("customMetadata", {}).get("kind") == "bool"
    for action in actions:
        assert isinstance(action, argparse._StoreTrueAction) == is_bool, name
        assert (action.nargs == 0) == is_bool
    if is_bool:
        assert PARAMS[name]["regexes"] == ["^(true|false)$"]


# Flags deliberately not template parameters (docs/flex-template.md, "Left out on purpose"): the
# shared ones, and each source's own (its description's FlexPart.left_out).
LEFT_OUT = set(flex_entry.LEFT_OUT)
LEFT_OUT_OF = {s.name: set(s.flex.left_out) for s in sources() if s.flex is not None}
_ONLY = re.compile(r"\(--[a-z-]+; ([a-z0-9]+(?:, [a-z0-9]+)*) only\)$")


def test_the_metadata_matches_the_registry_of_sources():
    """flex_template/metadata.json is a file Dataflow reads as it is: what it offers is held to
    the sources' descriptions here (and the entry takes its list of sources from it)."""
    assert flex_entry.metadata_problems() == []
    assert flex_entry.template_sources() == list(SOURCES)


def test_a_metadata_that_drifts_from_the_registry_is_named(tmp_path):
    document = json.loads(flex_entry.METADATA.read_text(encoding="utf-8"))
    forgotten, *kept = reversed(SOURCES)
    for param in document["parameters"]:
        if param["name"] == "source":
            param["regexes"] = [f"^({'|'.join(reversed(kept))})$"]
    own = next(name for name in PARAMS if _sources_of(name) == {forgotten})  # that source's own flag
    document["parameters"] = [p for p in document["parameters"] if p["name"] != own]
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    problems = flex_entry.metadata_problems(path)
    assert any(p.startswith(f"source offers {list(reversed(kept))}") for p in problems), problems
    assert f"{own}: a flag of a source the template offers, not a parameter" in problems


def _sources_of(name: str) -> set[str]:
    """The commands a parameter's help text says it is for (all of them when it names none)."""
    found = _ONLY.search(PARAMS[name]["helpText"])
    return set(found.group(1).split(", ")) if found else set(SOURCES)


@pytest.mark.parametrize("source", SOURCES)
def test_the_parameters_are_each_commands_flags(source):
    """Each command's flags are template parameters (but those left out on purpose), and each
    parameter's help text names exactly the commands that have its flag."""
    flags = {flag[2:].replace("-", "_") for flag in ACTIONS[source]}
    # Left out: those of the shared ones the command has (a source without hashes has no
    # --zitadel-config or --bcrypt-*), and its own.
    assert flags - set(PARAMS) == (LEFT_OUT & flags) | LEFT_OUT_OF.get(source, set())
    for name in set(PARAMS) - {"source"}:
        assert (name in flags) == (source in _sources_of(name)), (source, name)
    assert PARAMS["source"]["regexes"] == [f"^({'|'.join(flex_entry.template_sources())})$"]


@pytest.mark.parametrize("name", sorted(set(PARAMS) - {"source"}))
def test_a_parameter_of_fixed_choices_offers_the_flags_choices(name):
    for source in SOURCES:
        action = ACTIONS[source].get(_flag(name))
        if action is not None and action.choices:
            assert PARAMS[name]["regexes"] == [f"^({'|'.join(action.choices)})$"], (source, name)


def test_no_parameter_holds_a_secret_value():
    for source in SOURCES:
        for flag in ACTIONS[source]:
            name = flag[2:].replace("-", "_")
            if name in PARAMS and re.search(r"token|secret|key", name):
                # Only references: a file path that the launcher mounts.
                assert name.endswith("_file") and name in flex_entry.SECRET_FILE_PARAMETERS, name
                assert PARAMS[name]["regexes"][0].startswith("^/"), name


def test_parameter_names_do_not_collide_with_beam_options():
    assert not {"--" + name for name in PARAMS} & cli._beam_flags()


def test_input_and_output_parameters_take_cloud_storage_paths():
    for name in (
        *("users", "passwords", "mfa", "realm", "roles_file", "output", "dead_letter", "state"),
        *("hash_config", "input", "mapping"),
    ):
        (regex,) = PARAMS[name]["regexes"]
        assert re.match(regex, "gs://my-bucket/exports/users-*.json"), name
        assert not re.match(regex, "/tmp/users.json"), name


# The arguments of `./run_local.sh` (run mode), as the CLI takes them and as template parameters.
SAMPLE = {
    "org": "123456789",
    "users": "examples/auth0/users.json",
    "passwords": "examples/auth0/passwords.json",
    "mfa": "examples/auth0/mfa.json",
    "idp_map": "google-oauth2=276402541098127105",
    "metadata": "true",
    "batch_size": "20",
}


def test_sample_values_pass_the_template_regexes():
    for name, value in SAMPLE.items():
        if name in ("users", "passwords", "mfa"):
            value = "gs://bucket/" + value
        assert all(re.match(regex, value) for regex in PARAMS[name].get("regexes", [])), name


def test_template_runs_the_sample_like_the_cli(tmp_path):
    cli_dir, flex_dir = tmp_path / "cli", tmp_path / "flex"
    cli_dir.mkdir()
    flex_dir.mkdir()
    cli_argv = ["migrate", "auth0"] + [
        f"--org={SAMPLE['org']}",
        f"--users={ROOT / SAMPLE['users']}",
        f"--passwords={ROOT / SAMPLE['passwords']}",
        f"--mfa={ROOT / SAMPLE['mfa']}",
        f"--idp-map={SAMPLE['idp_map']}",
        "--metadata",
        f"--output={cli_dir / 'importBody.json'}",
        f"--dead-letter={cli_dir / 'dead-letter.ndjson'}",
        f"--batch-size={SAMPLE['batch_size']}",
    ]
    assert cli.main(cli_argv) == 0
    params = dict(SAMPLE, source="auth0", output=str(flex_dir / "importBody.json"))
    params["dead_letter"] = str(flex_dir / "dead-letter.ndjson")
    for name in ("users", "passwords", "mfa"):
        params[name] = str(ROOT / SAMPLE[name])
    # As the launcher runs it: the file named by FLEX_TEMPLATE_PYTHON_PY_FILE, parameters as
    # --name=value, plus a Beam option (the default runner, named).
    argv = [f"--{name}={value}" for name, value in params.items()] + ["--runner=DirectRunner"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "flex_template" / "launch.py"), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # The manifest records the run (its paths, its time); the bodies and dead letters are compared.
    bodies = sorted(p.name for p in cli_dir.glob("importBody-*-of-*.json"))
    assert len(bodies) == 2 and bodies == sorted(p.name for p in flex_dir.glob("importBody-*-of-*.json"))
    for name in [*bodies, "dead-letter.ndjson"]:
        assert (cli_dir / name).read_bytes() == (flex_dir / name).read_bytes(), name


# The samples of examples/firebase and examples/table (their README's commands) as CLI flags and as
# template parameters, a repeated flag given once per value.
NEW_SAMPLES = {
    "firebase": {
        "users": "examples/firebase/users.json",
        "idp_map": "google.com=276402541098127105,github.com=276402541098127106",
        "metadata": "true",
    },
    # A source without hashes: no hash or layout parameters, its own on/off flags.
    "okta": {"users": "examples/okta/okta-users.csv", "trust_email": "true", "metadata": "true"},
    "table": {
        "input": "examples/table/supabase_auth_users.csv",
        "mapping": "examples/table/supabase.mapping.json",
        "map": "display_name=raw_user_meta_data.full_name;metadata=raw_app_meta_data.plan,created_at",
        "project_id": "276402541098127200",
        "create_project": "Sample",
        "include_blocked": "true",
    },
}
_PATHS = ("users", "input", "mapping")


@pytest.mark.parametrize("source", sorted(NEW_SAMPLES))
def test_template_runs_each_new_sources_sample_like_the_cli(tmp_path, source):
    sample = dict(NEW_SAMPLES[source], org="123456789", batch_size="2")
    for name, value in sample.items():
        shown = "gs://bucket/" + value if name in _PATHS else value
        assert all(re.match(regex, shown) for regex in PARAMS[name].get("regexes", [])), name
    local = {name: str(ROOT / value) if name in _PATHS else value for name, value in sample.items()}
    cli_argv = ["migrate", source]
    for name, value in local.items():
        if PARAMS[name].get("customMetadata", {}).get("kind") == "bool":
            cli_argv.append(_flag(name))
        else:
            separator = PARAMS[name].get("customMetadata", {}).get("separator")
            parts = value.split(separator) if separator else [value]
            cli_argv += [f"{_flag(name)}={part}" for part in parts]
    cli_dir, flex_dir = tmp_path / "cli", tmp_path / "flex"
    assert cli.main([*cli_argv, f"--output={cli_dir / 'importBody.json'}"]) == 0
    params = dict(local, source=source, output=str(flex_dir / "importBody.json"))
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "flex_template" / "launch.py"),
            *(f"--{k}={v}" for k, v in params.items()),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in cli_dir.iterdir() if not p.name.endswith(".manifest.json"))
    assert len([n for n in names if n.startswith("importBody-")]) >= 2, names
    assert names == sorted(p.name for p in flex_dir.iterdir() if not p.name.endswith(".manifest.json"))
    for name in names:
        assert (cli_dir / name).read_bytes() == (flex_dir / name).read_bytes(), name


def _refused(argv: list[str], capsys) -> str:
    assert flex_entry.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("zitadel-beam: error: ")
    return err


BASE = ["--source=auth0", "--org=1", "--output=out/importBody.json"]


def test_an_unknown_parameter_is_refused(capsys):
    err = _refused([*BASE, "--orgg=1"], capsys)
    assert "unknown template parameter orgg" in err


def test_an_unknown_source_is_refused(capsys):
    err = _refused(["--source=nosuchsource", "--org=1"], capsys)
    assert f"source must be one of {', '.join(SOURCES)}" in err


@pytest.mark.parametrize("source", SOURCES)
def test_a_parameter_of_another_sources_command_is_refused(source, capsys):
    """A template parameter the chosen command does not take is refused, not passed on (the
    command would take an unknown flag for a Beam option)."""
    flags = {flag[2:].replace("-", "_") for flag in ACTIONS[source]}
    others = sorted(set(PARAMS) - flags - {"source"})
    assert others, source  # every offered source lacks some other source's flag
    err = _refused([f"--source={source}", "--org=1", f"--{others[0]}=x"], capsys)
    assert f"template parameter {others[0]} is not a flag of migrate {source}" in err


JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl"


@pytest.mark.parametrize(
    "arg",
    [
        f"--token_file={JWT}",
        "--token_file=dGhpcy1pcy1hLXRva2Vu",
        "--key_file=-----BEGIN PRIVATE KEY-----",
        '--key_file={"type": "serviceaccount", "private_key": "x"}',
        "--client_secret_file=s3cr3t-value",
        f"--push_url=https://example.com/{JWT}",
    ],
)
def test_an_inline_secret_is_refused_without_being_printed(arg, capsys):
    err = _refused([*BASE, arg], capsys)
    value = arg.partition("=")[2]
    assert value not in err and value[:12] not in err
    assert arg[2:].partition("=")[0] in err


def test_a_secret_value_given_as_an_unknown_parameter_is_not_printed(capsys):
    err = _refused([*BASE, f"--token={JWT}"], capsys)
    assert JWT[:12] not in err and "unknown template parameter token" in err


def test_parameters_become_the_cli_argv():
    argv = [
        "--source=keycloak",
        "--org=1",
        "--realm=gs://b/realm.json",
        "--output=gs://b/out/importBody.json",
        "--client_project=web=11,api=22",
        "--include_disabled=false",
        "--metadata=true",
        "--token_file=/secrets/zitadel/token",
        "--project=my-project",
        "--region",
        "europe-west1",
    ]
    assert flex_entry.template_argv(argv, environ={}) == [
        "migrate",
        "keycloak",
        "--org=1",
        "--realm=gs://b/realm.json",
        "--output=gs://b/out/importBody.json",
        "--client-project=web=11",
        "--client-project=api=22",
        "--metadata",
        "--token-file=/secrets/zitadel/token",
        "--project=my-project",
        "--region",
        "europe-west1",
    ]


def test_the_scheduled_launch_body_passes_the_regexes_and_the_entry_point():
    body = json.loads((ROOT / "flex_template" / "launch-body.example.json").read_text(encoding="utf-8"))
    params = body["launchParameter"]["parameters"]
    for name, value in params.items():
        assert all(re.match(regex, value) for regex in PARAMS[name].get("regexes", [])), name
    argv = flex_entry.template_argv([f"--{name}={value}" for name, value in params.items()])
    assert argv[:2] == ["migrate", "auth0"]
    assert "--key-file=/secrets/zitadel/sa-key.json" in argv and "--push-verify" in argv
    # The CLI's own parser takes the result (nothing unknown, every value of the right type).
    known, rest = cli.build_parser().parse_known_args(argv)
    assert rest == [] and known.batch_size == 5000 and known.idp_map == ["google-oauth2=276402541098127105"]


def test_workers_get_the_images_setup_file():
    base = ["--source=auth0", "--org=1", "--output=gs://b/importBody.json"]
    image = {"FLEX_TEMPLATE_PYTHON_SETUP_FILE": "/template/setup.py"}
    assert flex_entry.template_argv(base, environ=image)[-1] == "--setup_file=/template/setup.py"
    given = flex_entry.template_argv([*base, "--setup_file=/elsewhere/setup.py"], environ=image)
    assert [arg for arg in given if arg.startswith("--setup_file")] == ["--setup_file=/elsewhere/setup.py"]
    assert not any(arg.startswith("--setup_file") for arg in flex_entry.template_argv(base, environ={}))


def test_keycloak_parameters_parse_as_the_keycloak_command():
    params = {
        "source": "keycloak",
        "org": "1",
        "realm": "gs://acme-export/realm.json",
        "realm_name": "acme",
        "output": "gs://acme-import/out/importBody.json",
        "project_id": "22",
        "client_project": "web=11",
        "include_builtin_roles": "true",
        "on_removed": "report",
    }
    for name, value in params.items():
        assert all(re.match(regex, value) for regex in PARAMS[name].get("regexes", [])), name
    argv = flex_entry.template_argv([f"--{name}={value}" for name, value in params.items()], environ={})
    known, rest = cli.build_parser().parse_known_args(argv)
    assert rest == [] and known.realm_name == "acme" and known.client_project == ["web=11"]
    assert known.include_builtin_roles is True and known.project_id == "22"
