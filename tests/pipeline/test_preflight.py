"""pipeline/preflight.py: a remote runner with a path its workers cannot reach fails in seconds.

Every command that takes paths is run as a user would (``python -m pipeline``), with
``--runner=DataflowRunner`` and one local path: it must exit 2 quickly with one line on stderr
naming the flag and ``gs://``. No network is touched: the check happens before any client.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pytest
from busy_machine import assert_within_pace

from pipeline import preflight
from pipeline.source_command import input_flags
from transforms.common.errors import ConfigError
from transforms.sources.registry import get

DATAFLOW = ["--runner=DataflowRunner", "--project=p", "--region=europe-west1", "--temp_location=gs://b/tmp"]
BOUND_SECONDS = 20.0  # what the issue asks; the check itself takes well under a second


def _help_seconds(args: list[str], tmp_path: Path) -> float:
    """The baseline on a busy machine: the same command's ``--help`` (the same start-up and
    imports, no check, no network)."""
    done, seconds = _run([*args[:2], "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    return seconds


def _run(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess, float]:
    token = tmp_path / "token"
    token.write_text("not-a-real-token\n")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    return done, time.monotonic() - started


# (command line without runner flags, the flag whose local path must be named)
LOCAL_PATH_CASES = [
    (["migrate", "auth0", "--org=1", "--users=users.json", "--output=gs://b/o.json"], "--users"),
    (["migrate", "auth0", "--org=1", "--users=gs://b/users.json", "--output=out/o.json"], "--output"),
    (
        [
            "migrate",
            "auth0",
            "--org=1",
            "--users=gs://b/u.json",
            "--output=gs://b/o.json",
            "--dead-letter=d.ndjson",
        ],
        "--dead-letter",
    ),
    (
        [
            "migrate",
            "auth0",
            "--org=1",
            "--users=gs://b/u.json",
            "--passwords=p.json",
            "--output=gs://b/o.json",
        ],
        "--passwords",
    ),
    (["migrate", "keycloak", "--org=1", "--realm=realm.json", "--output=gs://b/o.json"], "--realm"),
    (
        ["migrate", "keycloak", "--org=1", "--realm=gs://b/realm.json"],
        "--output",
    ),  # default ./importBody.json
    (["migrate", "zitadel", "--export=export.json", "--output=gs://b/o.json"], "--export"),
    (
        ["migrate", "table", "--org=1", "--input=users.csv", "--map=id=id", "--output=gs://b/o.json"],
        "--input",
    ),
    (["migrate", "zitadel", "--export=gs://b/export.json", "--output=o.json"], "--output"),
    (["push", "--url=http://127.0.0.1:9", "--token-file=token", "--manifest=m.json"], "--manifest"),
    (["push", "--url=http://127.0.0.1:9", "--token-file=token", "--body=b.json"], "--body"),
    (
        ["push", "--url=http://127.0.0.1:9", "--token-file=token", "--manifest=gs://b/m.json", "--results=r"],
        "--results",
    ),
    (["verify", "--url=http://127.0.0.1:9", "--token-file=token", "--manifest=m.json"], "--manifest"),
    (["export", "--url=http://127.0.0.1:9", "--token-file=token", "--output=export.json"], "--output"),
    (
        ["copy", "--source-url=http://127.0.0.1:9", "--target-url=http://127.0.0.1:9", "--work-dir=w"],
        "--work-dir",
    ),
    (["copy", "--source-url=http://127.0.0.1:9", "--target-url=http://127.0.0.1:9"], "--work-dir"),  # default
    (
        ["push", "--url=http://127.0.0.1:9", "--token-file=token", "--gcs-document=export.json"],
        "--gcs-document",
    ),
]


@pytest.mark.parametrize(
    "args,flag", LOCAL_PATH_CASES, ids=[" ".join(a[:2]) + " " + f for a, f in LOCAL_PATH_CASES]
)
def test_remote_runner_with_local_path_exits_2_naming_gs(tmp_path, args, flag):
    done, seconds = _run(args + DATAFLOW, tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"zitadel-beam: error: {flag} ")
    assert "gs://" in lines[0] and "DataflowRunner" in lines[0]
    assert_within_pace(seconds, BOUND_SECONDS, lambda: _help_seconds(args, tmp_path), "the refusal")
    assert not list(tmp_path.glob("**/*.json")), "nothing may be written"


def test_remote_runner_without_temp_location_exits_2(tmp_path):
    args = [
        "migrate",
        "auth0",
        "--org=1",
        "--users=gs://b/u.json",
        "--output=gs://b/o.json",
        "--runner=DataflowRunner",
        "--project=p",
        "--region=r",
    ]
    done, seconds = _run(args, tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "zitadel-beam: error: DataflowRunner needs --temp_location=gs://BUCKET/tmp "
        "(spill files and staging go there; docs/runners.md)"
    )
    assert_within_pace(seconds, BOUND_SECONDS, lambda: _help_seconds(args, tmp_path), "the refusal")


def test_dataflow_without_its_client_is_one_line(monkeypatch):
    monkeypatch.setattr(preflight, "dataflow_client_installed", lambda: False)
    args = ["--runner=DataflowRunner", "--temp_location=gs://b/t"]
    with pytest.raises(
        ConfigError, match=r"DataflowRunner needs Beam's gcp extra .*pip install '\.\[dataflow\]'"
    ):
        preflight.check_paths(_ns(users="gs://b/u.json", output="gs://b/o.json"), args)
    preflight.check_paths(
        _ns(users="gs://b/u.json", output="gs://b/o.json"),
        ["--runner=FlinkRunner", "--temp_location=gs://b/t"],
    )


def test_remote_runner_with_local_temp_location_exits_2(tmp_path):
    args = [
        "migrate",
        "auth0",
        "--org=1",
        "--users=gs://b/u.json",
        "--output=gs://b/o.json",
        "--runner=DataflowRunner",
        "--temp_location=/tmp/x",
    ]
    done, _ = _run(args, tmp_path)
    assert done.returncode == 2
    assert "--temp_location '/tmp/x'" in done.stderr and "gs://" in done.stderr


def _ns(**values) -> argparse.Namespace:
    """The flags of ``migrate auth0`` as the CLI gives them, with the files its description reads."""
    files, worker_files = input_flags(get("auth0"))
    return argparse.Namespace(_files=files, _worker_files=worker_files, **values)


@pytest.mark.parametrize(
    "runner,remote",
    [
        (None, False),
        ("DirectRunner", False),
        ("FnApiRunner", False),
        ("PrismRunner", False),
        ("direct", False),
        ("apache_beam.runners.direct.direct_runner.BundleBasedDirectRunner", False),
        ("SwitchingDirectRunner", False),
        ("InteractiveRunner", False),
        ("DataflowRunner", True),
        ("dataflow", True),
        ("FlinkRunner", True),
        ("PortableRunner", True),
        ("SparkRunner", True),
        ("my.company.CustomRunner", True),
        ("NoSuchRunner", False),
    ],
)
def test_runs_remotely(runner, remote):
    args = [f"--runner={runner}"] if runner else []
    assert preflight.runs_remotely(args) is remote


def test_local_runner_accepts_local_paths():
    preflight.check_paths(_ns(users="u.json", output="o.json", passwords=None), ["--runner=DirectRunner"])
    assert preflight.spill_dir(["--runner=DirectRunner"], "out/.tmp") == "out/.tmp"


def test_passwords_none_is_not_a_path():
    args = ["--runner=DataflowRunner", "--temp_location=gs://b/t"]
    preflight.check_paths(_ns(users="gs://b/u.json", output="gs://b/o.json", passwords="none"), args)
    with pytest.raises(ConfigError, match="--passwords 'p.json'"):
        preflight.check_paths(_ns(users="gs://b/u.json", output="gs://b/o.json", passwords="p.json"), args)


def test_remote_spill_goes_under_temp_location_per_run():
    args = ["--runner=DataflowRunner", "--temp_location=gs://b/tmp/"]
    first = preflight.spill_dir(args, "out/.tmp")
    second = preflight.spill_dir(args, "out/.tmp")
    assert first.startswith("gs://b/tmp/zitadel-beam/") and second.startswith("gs://b/tmp/zitadel-beam/")
    assert first != second
    assert preflight.spill_dir(args + ["--job_name=move-1"], "out/.tmp") == "gs://b/tmp/zitadel-beam/move-1"


def test_local_runner_list_matches_beam():
    from apache_beam.options.pipeline_options import StandardOptions

    assert set(StandardOptions.LOCAL_RUNNERS) <= set(preflight.LOCAL_RUNNERS)
    extra = set(preflight.LOCAL_RUNNERS) - set(StandardOptions.LOCAL_RUNNERS)
    assert extra == {"InteractiveRunner"}
    known = set(StandardOptions.KNOWN_RUNNER_NAMES)
    assert known == set(preflight.LOCAL_RUNNERS) | set(preflight.REMOTE_RUNNERS)


def test_planned_outputs_use_the_names_their_owners_write():
    from pipeline.cli import build_parser
    from pipeline.preflight import _outputs
    from transforms.push.instance_moves import COPY_EXPORT_NAME as EXPORT_NAME
    from transforms.push.instance_moves import COPY_LOCK_NAME as LOCK_NAME
    from transforms.push.ledger import DEAD_LETTER_NAME
    from transforms.push.verification import MISSING_NAME
    from transforms.sync.apply import CHANGES_DEAD_LETTER
    from transforms.sync.state import POINTER_NAME

    parser = build_parser()
    push, _ = parser.parse_known_args(["push", "--manifest=out/importBody.manifest.json", "--url=https://z"])
    planned = _outputs(push)
    for name in (DEAD_LETTER_NAME, MISSING_NAME, CHANGES_DEAD_LETTER):
        assert planned[f"--results (its {name})"] == f"out/importBody.results/{name}"
    assert planned["--results (its lock)"] == "out/importBody.results.lock"
    copy, _ = parser.parse_known_args(
        ["copy", "--work-dir=w", "--source-url=https://a", "--target-url=https://b"]
    )
    planned = _outputs(copy)
    assert planned[f"--work-dir (its {EXPORT_NAME})"] == f"w/{EXPORT_NAME}"
    assert planned["--work-dir (its manifest)"] == "w/importBody.manifest.json"
    assert planned["--work-dir (its lock)"] == f"w/{LOCK_NAME}"
    migrate, _ = parser.parse_known_args(
        ["migrate", "auth0", "--org=1", "--users=u.json", "--state=gs://b/s"]
    )
    assert _outputs(migrate)["--state (its pointer)"] == f"gs://b/s/{POINTER_NAME}"
