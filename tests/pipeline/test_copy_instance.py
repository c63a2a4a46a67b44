"""``zitadel-beam export`` and ``copy``: one test-server instance into another, verified."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest
from zitadel_fixtures import PAT, leaked_secrets, make_export
from zitadel_server import ZitadelServer

from pipeline.cli import main

SOURCE_PAT = PAT + "-source"
TARGET_PAT = PAT + "-target"


def _normalised(export: dict) -> dict:
    """An export with every list sorted: instances may list the same things in another order."""

    def norm(value):
        if isinstance(value, dict):
            # push drops hashedPassword.algorithm (the server reads it from the hash; transforms/output/body_check.py)
            return {k: norm(v) for k, v in sorted(value.items()) if k != "algorithm" or "value" not in value}
        if isinstance(value, list):
            return sorted(
                (norm(v) for v in value), key=lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS)
            )
        return value

    return norm(export)


@pytest.fixture(name="instances")
def instances_fixture():
    source = ZitadelServer(tokens={SOURCE_PAT}).start()
    target = ZitadelServer(tokens={TARGET_PAT}).start()
    try:
        yield source, target
    finally:
        source.stop()
        target.stop()


def _seed(server: ZitadelServer, doc: dict) -> None:
    answer = server.import_data({"dataOrgsv1": doc, "timeout": "5m0s"})
    assert not answer.get("errors"), answer["errors"][:3]


def _token_files(tmp_path: Path) -> tuple[Path, Path]:
    source, target = tmp_path / "source.pat", tmp_path / "target.pat"
    source.write_text(SOURCE_PAT)
    target.write_text(TARGET_PAT)
    return source, target


def test_copy_moves_users_metadata_and_grants_and_resumes(instances, tmp_path, capsys):
    source, target = instances
    _seed(source, make_export((4, 60, 7), ghost_grants=0))
    source_pat, target_pat = _token_files(tmp_path)
    work = tmp_path / "work"
    args = [
        "copy",
        f"--source-url={source.url}",
        f"--target-url={target.url}",
        f"--source-token-file={source_pat}",
        f"--target-token-file={target_pat}",
        "--with-passwords",
        f"--work-dir={work}",
        "--batch-size=25",
        "--concurrency=2",
        "--quiet",
    ]
    rc = main(args)
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert "verify: ok, every user was added" in out and "machine users 3/3 added" in out
    assert leaked_secrets(out + err, [SOURCE_PAT, TARGET_PAT]) == []

    request = {"responseOutput": True, "withPasswords": True}
    assert _normalised(target.export(request)) == _normalised(source.export(request))
    assert len(target.user_ids()) == 71 and len(target.state.machines) == 3
    assert (
        sum(len(target.user_records(o)) for o in target.state.orgs)
        == sum(len(source.user_records(o)) for o in source.state.orgs)
        > 0
    )
    assert target.state.metadata == source.state.metadata
    assert (work / "export.json").stat().st_mode & 0o777 == 0o600

    # The same command again: the export is reused, every body is skipped through the ledger.
    calls = target.state.import_calls
    exports = sum(1 for path, _ in source.requests if path == "/admin/v1/export")
    rc = main(args)
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert "reusing" in out and "is current, reused" in out
    assert target.state.import_calls == calls
    assert sum(1 for path, _ in source.requests if path == "/admin/v1/export") == exports


def test_copy_without_passwords_and_a_selected_org(instances, tmp_path, capsys):
    source, target = instances
    doc = make_export((3, 4, 2), ghost_grants=0)
    _seed(source, doc)
    keep = doc["orgs"][2]["orgId"]
    source_pat, target_pat = _token_files(tmp_path)
    rc = main(
        [
            "copy",
            f"--source-url={source.url}",
            f"--target-url={target.url}",
            f"--source-token-file={source_pat}",
            f"--target-token-file={target_pat}",
            f"--org-ids={keep}",
            f"--work-dir={tmp_path}/w",
            "--quiet",
        ]
    )
    out, err = capsys.readouterr()
    # Org 2 has a member from org 0, which is not exported: a dead letter, and the rest goes.
    assert rc == 0, out + err
    assert set(target.state.orgs) == {keep}
    assert all("hashedPassword" not in user for _, user in target.state.users.values())
    dead = (tmp_path / "w/importBody.dead-letter.ndjson").read_text().splitlines()
    assert [json.loads(line)["reason"] for line in dead] == ["user-not-in-export"]


def test_copy_fails_fast_on_a_bad_target_credential(instances, tmp_path, capsys, monkeypatch):
    source, target = instances
    monkeypatch.setenv("ZITADEL_SOURCE_TOKEN", SOURCE_PAT)
    monkeypatch.setenv("ZITADEL_TARGET_TOKEN", "wrong")
    rc = main(
        ["copy", f"--source-url={source.url}", f"--target-url={target.url}", f"--work-dir={tmp_path}/w"]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "authentication failed" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "w").exists()  # nothing exported before both instances answered


def test_copy_needs_credentials_per_side(instances, tmp_path, capsys, monkeypatch):
    source, target = instances
    monkeypatch.delenv("ZITADEL_SOURCE_TOKEN", raising=False)
    monkeypatch.delenv("ZITADEL_TARGET_TOKEN", raising=False)
    monkeypatch.setenv("ZITADEL_TOKEN", SOURCE_PAT)  # not used by copy: one token for two instances
    rc = main(["copy", f"--source-url={source.url}", f"--target-url={target.url}"])
    err = capsys.readouterr().err
    assert rc == 2 and "source: no credentials" in err and "--source-token-file" in err


def test_export_command_writes_a_private_counted_document(instances, tmp_path, capsys):
    source, _ = instances
    _seed(source, make_export((2, 5), ghost_grants=0))
    source_pat, _ = _token_files(tmp_path)
    out_path = tmp_path / "e/export.json"
    rc = main(
        [
            "export",
            f"--url={source.url}",
            f"--token-file={source_pat}",
            "--with-passwords",
            f"--output={out_path}",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "2 org(s), 7 human and 2 machine user(s)" in out
    assert out_path.stat().st_mode & 0o777 == 0o600
    assert all(
        "hashedPassword" in u["user"]
        for o in json.loads(out_path.read_text())["orgs"]
        for u in o["humanUsers"]
    )
    assert not leaked_secrets(out)


def test_export_rejects_an_answer_that_is_not_an_export(instances, tmp_path, capsys, monkeypatch):
    source, _ = instances
    monkeypatch.setattr(source, "export", lambda request: {"orgs": {"not": "a list"}})
    monkeypatch.setenv("ZITADEL_TOKEN", SOURCE_PAT)
    rc = main(["export", f"--url={source.url}", f"--output={tmp_path}/x.json"])
    err = capsys.readouterr().err
    assert rc == 2 and "not a complete export document" in err and "Traceback" not in err
    assert not os.path.exists(tmp_path / "x.json")
