"""transforms/output/manifest.py: reading manifests, and the recount every migrate run ends with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.preflight import check_written
from transforms.output.manifest import load_manifest, recount

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("migrated")
    rc = main(
        [
            "migrate",
            "auth0",
            "--org=123",
            f"--users={ROOT}/examples/auth0/users.json",
            f"--passwords={ROOT}/examples/auth0/passwords.json",
            f"--output={out}/importBody.json",
            "--batch-size=7",
        ]
    )
    assert rc == 0
    return out / "importBody.manifest.json"


def _copy_run(migrated: Path, tmp_path: Path) -> Path:
    for path in migrated.parent.iterdir():
        if path.is_file():
            (tmp_path / path.name).write_bytes(path.read_bytes())
    return tmp_path / migrated.name


def test_a_fresh_run_agrees_with_its_manifest(migrated):
    manifest = load_manifest(str(migrated))
    assert len(manifest.bodies) == 4 and manifest.total_users > 0
    assert recount(str(migrated)) == []
    assert check_written(str(migrated)) == 0


def _claim_other_user_count(raw: dict) -> None:
    raw["bodies"][0]["users"] += 1


def _claim_other_total(raw: dict) -> None:
    raw["counts"]["users_written"] += 5


def _claim_other_body_count(raw: dict) -> None:
    raw["counts"]["bodies_written"] = 9


@pytest.mark.parametrize(
    "tamper,expected",
    [
        (_claim_other_user_count, "users, the counters say"),
        (_claim_other_total, "users, the counters say"),
        (_claim_other_body_count, "bodies listed, the counters say 9"),
    ],
)
def test_a_manifest_that_disagrees_with_the_files_exits_3(migrated, tmp_path, capsys, tamper, expected):
    path = _copy_run(migrated, tmp_path)
    raw = json.loads(path.read_text())
    tamper(raw)
    path.write_text(json.dumps(raw))
    assert any(expected in problem for problem in recount(str(path)))
    assert check_written(str(path)) == 3
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and expected in err


def test_a_missing_or_changed_body_is_reported(migrated, tmp_path):
    path = _copy_run(migrated, tmp_path)
    bodies = json.loads(path.read_text())["bodies"]
    (tmp_path / bodies[0]["path"]).unlink()
    (tmp_path / bodies[1]["path"]).write_bytes(b'{"dataOrgs": {"orgs": []}}\n')
    problems = recount(str(path))
    assert len(problems) == 2  # the missing file and the changed one
    assert any("No such file" in p for p in problems)
    assert any("sha256" in p for p in problems)
