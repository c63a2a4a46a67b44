"""pipeline/migrate_report.py: a finished run's summary, its exit status, and what it checks first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.layout import output_layout
from pipeline.migrate_options import CommonArgs
from pipeline.migrate_report import FinishedRun, partial_input_lines, report_and_push
from pipeline.run_outputs import write_manifest
from transforms.common import counters
from transforms.output.manifest import ListedFile, build_manifest


def _common(**flags) -> CommonArgs:
    return CommonArgs(
        org_id="1",
        output="out/importBody.json",
        timeout="5m0s",
        multiline=False,
        batch_size=10,
        dead_letter=None,
        strict=flags.pop("strict", False),
        metadata=False,
        bcrypt_min_cost=10,
        bcrypt_max_cost=16,
        **flags,
    )


def _finished(tmp_path: Path, *, holds=True, dead=0, counts=None, **flags) -> FinishedRun:
    """A run that wrote no body: its manifest on disk, so that the recount agrees."""
    layout = output_layout(str(tmp_path / "importBody.json"), None)
    counts = dict(counts or {})
    manifest = build_manifest(
        manifest_path=layout.manifest,
        source="auth0",
        org_id="1",
        timeout="5m0s",
        batch_size=10,
        bodies=[],
        dead_letter=ListedFile(layout.dead_letter, dead, "0" * 64),
        counts=counts,
        dead_letters_by_reason={},
        holds=holds,
        invariant="0 read = 0 written",
        seconds=0.5,
        hash_fields={},
    )
    write_manifest(layout.manifest, manifest)
    return FinishedRun(
        source_name="auth0",
        common=_common(**flags),
        layout=layout,
        counts=counts,
        hash_fields={},
        holds=holds,
        invariant_text="0 read = 0 written",
        bodies=[],
        dead_count=dead,
        elapsed=0.5,
        passwordless_path=str(tmp_path / "importBody.passwordless.ndjson"),
        passwordless_count=0,
        sync=None,
        roles=None,
    )


def _rows(counts):
    return [("users read", counts.get("read", 0))]


def test_a_clean_run_prints_its_summary_and_exits_0(tmp_path, capsys):
    assert report_and_push(_finished(tmp_path, counts={"read": 3}), _rows, {}) == 0
    out = capsys.readouterr().out
    assert out.startswith("zitadel-beam migrate auth0: summary\n")
    assert "users read" in out and "bodies written" in out
    assert "accounting: 0 read = 0 written [ok]" in out
    assert f"manifest: {tmp_path / 'importBody.manifest.json'}" in out


def test_a_broken_accounting_exits_3(tmp_path, capsys):
    assert report_and_push(_finished(tmp_path, holds=False), _rows, {}) == 3
    assert "[BROKEN]" in capsys.readouterr().out


def test_a_manifest_that_disagrees_with_the_bodies_exits_3(tmp_path, capsys):
    done = _finished(tmp_path)
    raw = json.loads(Path(done.layout.manifest).read_text())
    raw["counts"]["bodies_written"] = 2
    Path(done.layout.manifest).write_text(json.dumps(raw))
    assert report_and_push(done, _rows, {}) == 3
    assert "disagree" in capsys.readouterr().err


def test_dead_letters_fail_only_with_strict(tmp_path, capsys):
    # Users compared with a sync's state count as users not lost (no body written).
    compared = {counters.SYNC_ROWS_NOT_IMPORTED: 3}
    assert report_and_push(_finished(tmp_path, dead=2, counts=compared), _rows, {}) == 0
    assert report_and_push(_finished(tmp_path, dead=2, counts=compared, strict=True), _rows, {}) == 1
    assert "--strict: 2 record(s) dead-lettered" in capsys.readouterr().err


def test_a_run_that_dead_lettered_every_user_exits_1(tmp_path, capsys):
    assert report_and_push(_finished(tmp_path, dead=2), _rows, {}) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "zitadel-beam: no user was written: every user read was dead-lettered (2 dead letters"
    )
    assert report_and_push(_finished(tmp_path), _rows, {}) == 0  # nothing read, nothing lost


def test_a_cut_input_fails_unless_allowed(tmp_path, capsys):
    counts = {"inputs.partial.1": 5}
    assert report_and_push(_finished(tmp_path, counts=counts), _rows, {1: "users.json.gz"}) == 1
    assert "users.json.gz was cut short or is damaged: 5 records" in capsys.readouterr().err
    assert report_and_push(_finished(tmp_path, counts=counts, allow_partial=True), _rows, {}) == 0


@pytest.mark.parametrize(
    "counts, names, lines",
    [
        ({}, {}, []),
        ({"inputs.read": 4}, {0: "a.json"}, []),
        ({"inputs.partial.0": 2}, {0: "a.json"}, ["a.json was cut short or is damaged: 2 records"]),
        ({"inputs.partial.3": 1}, {}, ["input file #3 was cut short or is damaged: 1 records"]),
    ],
)
def test_partial_input_lines_name_each_cut_file(counts, names, lines):
    found = partial_input_lines(counts, names)
    assert [line.split(" were read")[0] for line in found] == lines
