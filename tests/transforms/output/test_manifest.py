"""transforms/output/manifest.py: reading manifests, and the recount every migrate run ends with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_files import ROOT

from pipeline.cli import main
from pipeline.preflight import check_written
from transforms.output.manifest import (
    MANIFEST_VERSION,
    ExportFields,
    ListedFile,
    UserFields,
    body_manifest_name,
    build_manifest,
    load_manifest,
    recount,
    results_dir_for,
)


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


# --- build_manifest: the schema both manifests a migrate run writes follow ---------------------
def _shared(tmp: str) -> dict:
    return {
        "manifest_path": f"{tmp}/importBody.manifest.json",
        "timeout": "5m0s",
        "batch_size": 10,
        "bodies": [{"path": "importBody.json", "users": 2, "sha256": "ab", "after": []}],
        "dead_letter": ListedFile(f"{tmp}/importBody.dead-letter.ndjson", 1, "cd"),
        "counts": {"users_written": 2},
        "holds": True,
        "invariant": "3 read = 2 written + 1 dead-lettered",
        "seconds": 1.23456,
        "hash_fields": {"password_hashes": {"bcrypt": 2}, "zitadel_config": ""},
    }


def test_build_manifest_of_a_user_migration_in_its_documented_order():
    manifest = build_manifest(
        source="keycloak",
        org_id="123",
        dead_letters_by_reason={"keycloak-user": {"duplicate": 1}},
        users=UserFields(
            not_carried={"fields_not_carried": {}, "cannot_sign_in_yet": 0},
            passwordless=ListedFile("/elsewhere/p.ndjson", 0, None),
            email_fallback=1,
            derived_ids=2,
            control_chars_removed=3,
        ),
        extra={"realm_files": ["realm.json"]},
        sync={"generation": 1},
        authorizations={},
        **_shared("/out"),
    )
    assert list(manifest) == [
        "version", "tool", "source", "org_id", "timeout", "batch_size", "bodies", "dead_letter",
        "counts", "dead_letters_by_reason", "invariant", "seconds", "password_hashes",
        "zitadel_config", "fields_not_carried", "cannot_sign_in_yet", "passwordless",
        "email_fallback", "derived_ids", "control_chars_removed", "realm_files", "sync",
    ]  # fmt: skip
    assert manifest["version"] == MANIFEST_VERSION and manifest["tool"] == "zitadel-beam"
    assert manifest["dead_letter"] == {"path": "importBody.dead-letter.ndjson", "count": 1, "sha256": "cd"}
    assert manifest["passwordless"] == {"path": "/elsewhere/p.ndjson", "count": 0}  # no file: no sha256
    assert manifest["invariant"] == {"holds": True, "text": "3 read = 2 written + 1 dead-lettered"}
    assert manifest["seconds"] == 1.235 and manifest["derived_ids"] == 2


def test_build_manifest_of_a_zitadel_export_in_its_documented_order():
    manifest = build_manifest(
        source="zitadel",
        org_id=None,
        dead_letters_by_reason={"zitadel-export": {"bad": 1}},
        export=ExportFields(path="export.json", size=999, org_ids=["1", "2"], plan_seconds=0.4444),
        **_shared("gs://b/out"),
    )
    assert list(manifest) == [
        "version", "tool", "source", "export", "export_bytes", "org_id", "org_ids", "timeout",
        "batch_size", "bodies", "dead_letter", "counts", "dead_letters_by_reason", "invariant",
        "seconds", "plan_seconds", "password_hashes", "zitadel_config",
    ]  # fmt: skip
    assert (manifest["org_id"], manifest["org_ids"], manifest["export_bytes"]) == (None, ["1", "2"], 999)
    assert manifest["plan_seconds"] == 0.444
    assert manifest["dead_letter"]["path"] == "importBody.dead-letter.ndjson"


def test_a_source_key_keeps_its_place_and_authorizations_appear_when_given():
    manifest = build_manifest(
        source="auth0",
        org_id="1",
        dead_letters_by_reason={},
        extra={"timeout": "1m0s", "mine": 1},
        authorizations={"roles": 2},
        **_shared("out"),
    )
    assert list(manifest)[4] == "timeout" and manifest["timeout"] == "1m0s"
    assert list(manifest)[-2:] == ["mine", "authorizations"] and manifest["authorizations"] == {"roles": 2}


@pytest.mark.parametrize(
    "path, results",
    [
        ("out/importBody.manifest.json", "out/importBody.results"),
        ("importBody.manifest.json", "importBody.results"),
        ("out/other.json", "out/other.json.results"),
        ("gs://b/run/importBody.manifest.json", "importBody.results"),
    ],
)
def test_the_results_folder_follows_the_manifest(path, results):
    assert results_dir_for(path) == results


@pytest.mark.parametrize(
    "body, name",
    [
        ("bodies/first.json", "first.push.manifest.json"),
        ("gs://b/run/importBody-00001-of-00002.json", "importBody-00001-of-00002.push.manifest.json"),
        ("plain", "plain.push.manifest.json"),
    ],
)
def test_a_push_of_bodies_writes_its_manifest_in_the_current_folder(body, name):
    assert body_manifest_name(body) == name
