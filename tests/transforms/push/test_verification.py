"""``zitadel-beam verify``: the bodies' user ids against ``user.human.added`` events."""

from __future__ import annotations

import json

from zitadel_fixtures import PAT, leaked_secrets, write_manifest, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from pipeline.cli import main
from transforms.output.manifest import load_manifest
from transforms.push import engine as push_engine
from transforms.push import verification as verify_engine
from transforms.zitadel_api.credentials import Credentials

TOKEN = Credentials("token", token=PAT)


def test_verify_after_a_clean_push_finds_every_user(zitadel, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=30, bodies=3)
    assert push_engine.push_manifest(load_manifest(str(manifest)), zitadel.url, TOKEN, progress=False).ok
    report = verify_engine.verify_manifest(load_manifest(str(manifest)), zitadel.url, TOKEN, page_size=7)
    assert report.ok and report.created == 30 and report.missing == [] and report.unexpected == []
    assert report.missing_file is None


def test_verify_finds_a_user_the_server_silently_dropped(zitadel, tmp_path, monkeypatch, capsys):
    manifest, ids = write_manifest(tmp_path, users=25, bodies=2)
    zitadel.faults.drop_user(ids[17])
    pushed = push_engine.push_manifest(load_manifest(str(manifest)), zitadel.url, TOKEN, progress=False)
    assert pushed.ok and pushed.created == 25  # the import answer claimed success for everyone
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    rc = main(["verify", "--url", zitadel.url, "--manifest", str(manifest), "--page-size", "10"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert ids[17] in out and "1 missing" in out
    missing = (tmp_path / "importBody.results" / "verify-missing.ndjson").read_text().splitlines()
    assert [json.loads(line)["userId"] for line in missing] == [ids[17]]
    assert leaked_secrets(out + err) == []


def test_push_verify_flag_fails_the_run_when_a_user_is_missing(zitadel, tmp_path, monkeypatch, capsys):
    manifest, ids = write_manifest(tmp_path, users=12, bodies=1)
    zitadel.faults.drop_user(ids[0])
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    rc = main(["push", "--url", zitadel.url, "--manifest", str(manifest), "--verify", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 1 and "verify: 1 missing" in out


def test_users_added_another_way_are_unexpected_not_missing(zitadel, tmp_path):
    other, other_ids = write_manifest(tmp_path / "other", users=3, bodies=1, prefix="other|")
    manifest, ids = write_manifest(tmp_path / "main", users=8, bodies=2)
    elsewhere, _ = write_manifest(tmp_path / "elsewhere", users=4, bodies=1, prefix="x|", org_id="999")
    for path in (other, manifest, elsewhere):
        assert push_engine.push_manifest(load_manifest(str(path)), zitadel.url, TOKEN, progress=False).ok
    report = verify_engine.verify_manifest(load_manifest(str(manifest)), zitadel.url, TOKEN)
    assert report.ok and report.unexpected == sorted(other_ids)  # same org; org 999 filtered out
    assert "unexpected" in report.table()


def test_verify_reads_export_documents_and_several_orgs(zitadel, tmp_path):
    first, first_ids = write_manifest(
        tmp_path / "a", users=5, bodies=1, org_id="A", prefix="a|", body_orgs=[{"org": {"name": "A Inc"}}]
    )
    assert push_engine.push_manifest(load_manifest(str(first)), zitadel.url, TOKEN, progress=False).ok
    assert verify_engine.expected_users(load_manifest(str(first))) == {"A": first_ids}
    report = verify_engine.verify_manifest(load_manifest(str(first)), zitadel.url, TOKEN)
    assert [(o.org_id, o.created) for o in report.orgs] == [("A", 5)]
