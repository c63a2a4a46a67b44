"""transforms/common/errors.py and its re-export pipeline/errors.py: ConfigError, reported by the
command line as one readable line with exit status 2."""

from __future__ import annotations

import pipeline.errors
import transforms.common.errors
from pipeline.cli import main
from transforms.common.errors import ConfigError


def test_one_class_for_the_launcher_and_the_engines():
    assert pipeline.errors.ConfigError is transforms.common.errors.ConfigError
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
