"""transforms/common/errors.py: ConfigError, reported by the command line as one readable line with
exit status 2, and one_line, the first line of an error's message."""

from __future__ import annotations

from pipeline.cli import main
from transforms.common.errors import ConfigError, one_line


def test_one_line_is_the_first_line_cut_to_its_limit_or_the_type_name():
    assert one_line(ValueError("first\nsecond")) == "first"
    assert one_line(ValueError("x" * 500)) == "x" * 200
    assert one_line(ValueError("x" * 500), 300) == "x" * 300
    assert one_line(KeyError()) == "KeyError"


def test_a_config_error_is_an_exception_with_its_message():
    assert issubclass(ConfigError, Exception)
    assert str(ConfigError("--users 'x.json': no such file")) == "--users 'x.json': no such file"


def test_the_cli_prints_a_config_error_as_one_line_and_exits_2(tmp_path, capfd):
    output = tmp_path / "out" / "importBody.json"
    argv = ["migrate", "auth0", "--org=1", f"--users={tmp_path / 'missing.json'}", "--passwords=none"]
    rc = main([*argv, f"--output={output}"])
    err = capfd.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("zitadel-beam: error: "), err
    assert "missing.json" in lines[0]
    assert not output.parent.exists() or not any(output.parent.iterdir())
