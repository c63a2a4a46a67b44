"""Instance moves through a bucket (GCS emulator on 127.0.0.1): export with ``gcsOutput``, split from
gs://, and ``push --gcs-document`` (``dataOrgsv1Gcs``: detached on the server, verify is the proof)."""

from __future__ import annotations

import json

import orjson
import pytest
from zitadel_fixtures import PAT, leaked_secrets, make_export
from zitadel_server import ZitadelServer

from pipeline.cli import main

SERVICE_ACCOUNT = {
    "type": "service_account",
    "project_id": "test-project",
    "client_email": "mover@test.iam",
    "private_key_id": "k1",
    "private_key": "-----BEGIN PRIVATE KEY-----\nMIIfake\n-----END PRIVATE KEY-----\n",
}


@pytest.fixture(name="servers")
def servers_fixture():
    source, target = ZitadelServer(tokens={PAT}).start(), ZitadelServer(tokens={PAT}).start()
    try:
        yield source, target
    finally:
        source.wait_detached()
        target.wait_detached()
        source.stop()
        target.stop()


@pytest.fixture(name="account")
def account_fixture(tmp_path):
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(SERVICE_ACCOUNT))
    return path


def test_server_side_export_to_gcs_then_split_and_push_from_gs(
    gcs_emulator, servers, account, monkeypatch, capsys, tmp_path
):
    source, target = servers
    bucket = gcs_emulator
    source.import_data({"dataOrgsv1": make_export((3, 9), ghost_grants=0), "timeout": "1m"})
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    stored = {}
    store = source.gcs_store
    monkeypatch.setattr(source, "gcs_store", lambda b, p, a, d: (stored.update(account=a), store(b, p, a, d)))
    rc = main(
        [
            "export",
            f"--url={source.url}",
            "--with-passwords",
            f"--gcs-output=gs://{bucket.name}/exports/export.json",
            f"--service-account={account}",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "the server wrote the document to gs://zb-test/exports/export.json" in out
    assert json.loads(stored["account"]) == SERVICE_ACCOUNT  # sent base64-encoded, arrived intact
    assert SERVICE_ACCOUNT["private_key"] not in out + err

    rc = main(
        [
            "migrate",
            "zitadel",
            f"--export=gs://{bucket.name}/exports/export.json",
            f"--output=gs://{bucket.name}/bodies/importBody.json",
            "--batch-size=4",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    rc = main(
        [
            "push",
            f"--url={target.url}",
            f"--manifest=gs://{bucket.name}/bodies/importBody.manifest.json",
            f"--results={tmp_path}/results",
            "--verify",
            "--quiet",
            "--concurrency=2",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert target.user_ids() == source.user_ids() and len(target.user_ids()) == 12


def test_push_gcs_document_is_detached_and_verified(gcs_emulator, servers, account, monkeypatch, capsys):
    _, target = servers
    doc = make_export((2, 6), ghost_grants=0)
    gcs_emulator.blob("exports/export.json").upload_from_string(orjson.dumps(doc))
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    rc = main(
        [
            "push",
            f"--url={target.url}",
            f"--gcs-document=gs://{gcs_emulator.name}/exports/export.json",
            f"--service-account={account}",
            "--verify",
            "--wait=20s",
            "--poll-interval=0.1",
            "--quiet",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert "detached import" in out and "verify: ok, every user was added" in out
    [entry] = target.gcs_imports
    assert entry["bucket"] == gcs_emulator.name and entry["path"] == "exports/export.json"
    assert len(target.user_ids()) == 8
    assert not leaked_secrets(out + err, [SERVICE_ACCOUNT["private_key"]])


def test_push_gcs_document_reports_users_that_never_arrive(
    gcs_emulator, servers, account, monkeypatch, capsys
):
    _, target = servers
    doc = make_export((3,), ghost_grants=0)
    gcs_emulator.blob("e.json").upload_from_string(orjson.dumps(doc))
    target.faults.drop_user(doc["orgs"][0]["humanUsers"][1]["userId"])
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    rc = main(
        [
            "push",
            f"--url={target.url}",
            f"--gcs-document=gs://{gcs_emulator.name}/e.json",
            f"--service-account={account}",
            "--verify",
            "--wait=1s",
            "--poll-interval=0.2",
            "--quiet",
        ]
    )
    out, _ = capsys.readouterr()
    assert rc == 1 and "1 missing" in out and doc["orgs"][0]["humanUsers"][1]["userId"] in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--gcs-document=gs://bucket-only"], "must be gs://BUCKET/PATH"),
        (["--gcs-document=gs://b/p.json"], "needs --service-account"),
    ],
)
def test_push_gcs_document_flags(servers, monkeypatch, capsys, args, message):
    _, target = servers
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    rc = main(["push", f"--url={target.url}", *args])
    assert rc == 2 and message in capsys.readouterr().err


def test_service_account_must_be_a_key_file(servers, tmp_path, monkeypatch, capsys):
    _, target = servers
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"type": "authorized_user"}))
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    rc = main(["push", f"--url={target.url}", "--gcs-document=gs://b/p.json", f"--service-account={bad}"])
    assert rc == 2 and "not a service-account key file" in capsys.readouterr().err


def test_copy_with_a_gcs_work_dir_resumes(gcs_emulator, servers, monkeypatch, capsys, tmp_path):
    source, target = servers
    source.import_data({"dataOrgsv1": make_export((2, 7), ghost_grants=0), "timeout": "1m"})
    monkeypatch.setenv("ZITADEL_SOURCE_TOKEN", PAT)
    monkeypatch.setenv("ZITADEL_TARGET_TOKEN", PAT)
    args = [
        "copy",
        f"--source-url={source.url}",
        f"--target-url={target.url}",
        "--with-passwords",
        f"--work-dir=gs://{gcs_emulator.name}/move",
        f"--results={tmp_path}/ledger",
        "--batch-size=3",
        "--quiet",
    ]
    assert main(args) == 0, capsys.readouterr()
    names = {b.name for b in gcs_emulator.list_blobs(prefix="move/")}
    assert {"move/export.json", "move/importBody.manifest.json"} <= names
    assert target.user_ids() == source.user_ids()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "reusing gs://zb-test/move/export.json" in out and "skipped" in out
