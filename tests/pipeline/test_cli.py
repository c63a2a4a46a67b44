"""pipeline/cli.py: the command table, and unknown flags reported without their values, with the
flag that was probably meant."""

from __future__ import annotations

import pytest
from repo_files import ZITADEL_TOOLS

from pipeline.cli import build_parser, commands, main, suggest, unknown_flags
from transforms.sources.registry import descriptions


@pytest.mark.parametrize("command", commands(), ids=lambda c: " ".join(c.path))
def test_every_command_has_its_help_and_its_run(command, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_known_args([*command.path, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: zitadel-beam {' '.join(command.path)}")
    assert callable(command.run)


def test_each_source_has_its_migrate_command_then_come_the_others():
    """Each source's migrate command comes from its description, in the registry's order."""
    sources = [("migrate", d.name) for d in descriptions()]
    assert [c.path for c in commands()] == [
        *sources,
        ("push",),
        ("verify",),
        ("export",),
        ("copy",),
        ("companion",),
    ]
    assert [c.path for c in commands() if c.hands_to_beam] == sources


@pytest.mark.parametrize(
    "given, shown",
    [
        (["--tokn=SECRET"], "unrecognized arguments: --tokn (values not shown)"),
        (["--x", "SECRET"], "unrecognized arguments: --x (and 1 value, not shown)"),
        (["--x", "a", "b"], "unrecognized arguments: --x (and 2 values, not shown)"),
        (["--x"], "unrecognized arguments: --x"),
    ],
)
def test_unknown_flags_never_show_a_value(given, shown):
    assert unknown_flags(given) == shown


def test_a_bad_command_line_is_exit_2_and_one_line(capsys):
    assert main(["push", "--manifest=m.json", "--url=https://z", "--token=SECRET"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SECRET" not in err


MARK = "v4lue-S3CRET-marker"


@pytest.mark.parametrize(
    "flag, known, meant",
    [
        ("--verify", ["--push-verify", "--push-url", "--verbose"], "--push-verify"),
        ("--realm-file", ["--realm", "--realm-name"], "--realm"),
        ("--org-id", ["--org", "--org-ids"], "--org"),
        ("--token", ["--token-file", "--url"], "--token-file"),
        ("--pasword", ["--passwords", "--users"], "--passwords"),
        ("--temp-location", ["--temp_location", "--template_location"], "--temp_location"),
        ("--users-file", ["--key-file", "--realm"], None),  # 0.73: not close enough
        ("--frobnicate", ["--org", "--output"], None),
    ],
)
def test_suggest(flag, known, meant):
    assert suggest(flag, known) == meant


def test_the_command_s_own_flags_come_before_beam_s():
    # --verify is as close to Beam's --s3_verify as to --push-verify; the command's flag wins.
    assert suggest("--verify", ["--push-verify"], ["--s3_verify"]) == "--push-verify"
    assert suggest("--runer", ["--org"], ["--runner"]) == "--runner"


def test_unknown_flags_name_the_meant_flag_never_a_value():
    assert unknown_flags([f"--verfy={MARK}"], ["--verify"]) == (
        "unrecognized arguments: --verfy (values not shown); did you mean --verify?"
    )
    assert unknown_flags(["--tokn", MARK, "--realm-file"], ["--token", "--realm"]) == (
        "unrecognized arguments: --tokn --realm-file (and 1 value, not shown); "
        "did you mean --token (for --tokn), --realm (for --realm-file)?"
    )


def _auth0(tmp_path, *extra):
    return [
        "migrate",
        "auth0",
        f"--users={ZITADEL_TOOLS / 'auth0/users.json'}",
        "--passwords=none",
        f"--output={tmp_path}/out/importBody.json",
        *extra,
    ]


@pytest.mark.parametrize(
    "argv, hint",
    [
        (
            lambda t: _auth0(t, "--org=1", "--verify"),
            "unrecognized arguments: --verify; did you mean --push-verify?",
        ),
        (lambda t: _auth0(t, "--org=1", f"--push-verfy={MARK}"), "did you mean --push-verify?"),
        # Beam's own flags are suggested for a migrate command too.
        (lambda t: _auth0(t, "--org=1", "--temp-location", MARK), "did you mean --temp_location?"),
        (
            lambda t: ["migrate", "keycloak", "--org=1", f"--realm-file={MARK}", f"--output={t}/o.json"],
            "unrecognized arguments: --realm-file (values not shown); did you mean --realm?",
        ),
        (
            lambda t: _auth0(t, f"--org-id={MARK}"),
            "the following arguments are required: --org; --org-id is unknown: did you mean --org?",
        ),
        (
            lambda t: ["push", "--url=http://127.0.0.1:9", "--manifest=m.json", "--token", MARK],
            "unrecognized arguments: --token (and 1 value, not shown); did you mean --token-file?",
        ),
    ],
)
def test_a_misspelt_flag_is_named_with_the_one_meant(argv, hint, tmp_path, capsys):
    rc = main(argv(tmp_path))
    out, err = capsys.readouterr()
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("zitadel-beam: error: ") and hint in err, err
    assert MARK not in out + err
    assert not (tmp_path / "out").exists()


def test_a_beam_flag_is_no_misspelling_of_a_missing_one(tmp_path, capsys):
    # --region is Beam's (Dataflow), not a misspelt --org: only the missing flag is named.
    assert main(_auth0(tmp_path, "--region=europe-west1")) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("the following arguments are required: --org")


# A flag refused before any file is read: the command answers without importing Beam.
_REFUSED_EARLY = {
    ("migrate", "auth0"): ["--org=not an id", "--users=u.json", "--passwords=p.json"],
    ("migrate", "keycloak"): ["--org=not an id", "--realm=r.json"],
    ("migrate", "table"): ["--org=1", "--input=u.csv", "--map=id=id", "--output=o.json"],
    ("migrate", "firebase"): ["--org=not an id", "--users=u.json"],
    ("migrate", "zitadel"): ["--export=e.json", "--timeout=forever"],
    ("push",): ["--url=http://127.0.0.1:9", "--token-file=/nonexistent/token", "--manifest=m.json"],
}


@pytest.mark.parametrize("command", commands(), ids=lambda c: " ".join(c.path))
def test_help_and_early_refusals_start_without_beam(command, tmp_path):
    """Beam's import is most of a start (about 2 s of 2.2): ``--help`` and a refused flag answer
    without it, so a configuration error is one line at once, and the import waits for a pipeline."""
    import subprocess
    import sys

    cases = [[*command.path, "--help"]]
    if command.path in _REFUSED_EARLY:
        cases.append([*command.path, *_REFUSED_EARLY[command.path]])
    for argv in cases:
        script = (
            "import sys\nfrom pipeline.cli import main\n"
            f"try:\n    code = main({argv!r})\nexcept SystemExit as done:\n    code = done.code\n"
            "print('beam imported' if 'apache_beam' in sys.modules else 'no beam', code, file=sys.stderr)\n"
        )
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("no beam"), (argv, done.stderr[-2000:])
        assert last.split()[-1] == ("0" if argv[-1] == "--help" else "2"), (argv, done.stderr[-2000:])
