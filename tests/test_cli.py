"""pipeline/cli.py: the command table, and unknown flags reported without their values."""

from __future__ import annotations

import importlib

import pytest

from pipeline.cli import COMMANDS, build_parser, main, unknown_flags


@pytest.mark.parametrize("path, module", [(path, module) for path, module, _ in COMMANDS])
def test_every_command_has_its_help_and_its_module(path, module, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_known_args([*path, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: zitadel-beam {' '.join(path)}")
    assert importlib.import_module(module).add_arguments is not None


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
