"""gs:// round trip on gcp-storage-emulator (127.0.0.1) through Beam's FileSystems and the real
google-cloud-storage client, with no credential wait (see tests/conftest.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
import time

from apache_beam.internal.gcp import auth as beam_auth
from busy_machine import assert_within_pace, timed

from pipeline.cli import main
from transforms.mapping.validate import Reason

B64 = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _hash(i: int) -> str:
    return "$2b$10$" + B64[i % 64] + B64[(i // 64) % 64] + B64[:51]


def _ndjson(records) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)


def test_gcs_round_trip(gcs_emulator, capsys, caplog, monkeypatch):
    bucket = gcs_emulator
    # Beam keeps the credentials it found per process: look them up again, in this test.
    monkeypatch.setattr(beam_auth._Credentials, "_credentials_init", False)
    profiles = [
        {"user_id": f"auth0|{i}", "email": f"user{i}@example.com", "name": f"User {i}"} for i in range(11)
    ]
    passwords = [
        {"_id": {"$oid": str(i)}, "email": f"USER{i}@example.com", "passwordHash": _hash(i)}
        for i in range(10)
    ]
    passwords.append({"_id": {"$oid": "x"}, "email": "orphan@example.com", "passwordHash": _hash(99)})
    # two profile files, one gzip-compressed, matched by a gs:// glob; passwords as a JSON array
    bucket.blob("in/users-1.json").upload_from_string(_ndjson(profiles[:6] + [b"{broken"]))
    bucket.blob("in/users-2.json.gz").upload_from_string(gzip.compress(_ndjson(profiles[6:])))
    bucket.blob("in/passwords.json").upload_from_string(json.dumps(passwords))

    rc = main(
        [
            "migrate",
            "auth0",
            "--org=123",
            f"--users=gs://{bucket.name}/in/users-*",
            f"--passwords=gs://{bucket.name}/in/passwords.json",
            f"--output=gs://{bucket.name}/out/importBody.json",
            "--batch-size=4",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 0, captured.err

    names = sorted(b.name for b in bucket.list_blobs(prefix="out/"))
    manifest = json.loads(bucket.blob("out/importBody.manifest.json").download_as_bytes())
    total = len(manifest["bodies"])
    assert total >= 3
    assert names == sorted(
        ["out/importBody.manifest.json", "out/importBody.dead-letter.ndjson"]
        + [f"out/importBody-{i:05d}-of-{total:05d}.json" for i in range(1, total + 1)]
    )
    users = []
    for body in manifest["bodies"]:
        data = bucket.blob(f"out/{body['path']}").download_as_bytes()
        assert hashlib.sha256(data).hexdigest() == body["sha256"]
        humans = json.loads(data)["dataOrgs"]["orgs"][0]["humanUsers"]
        assert len(humans) == body["users"] <= 4
        users += humans
    assert {u["userId"]: u["user"].get("hashedPassword", {}).get("value") for u in users} == {
        **{f"auth0|{i}": _hash(i) for i in range(10)},
        "auth0|10": None,
    }

    dead = [
        json.loads(line)
        for line in bucket.blob("out/importBody.dead-letter.ndjson").download_as_text().splitlines()
    ]
    assert sorted((d["source"], d["reason"]) for d in dead) == [
        ("auth0-password", Reason.ORPHAN_PASSWORD),
        ("auth0-profile", Reason.MALFORMED_JSON),
    ]
    dead_bytes = bucket.blob("out/importBody.dead-letter.ndjson").download_as_bytes()
    assert manifest["dead_letter"] == {
        "path": "importBody.dead-letter.ndjson",
        "count": 2,
        "sha256": hashlib.sha256(dead_bytes).hexdigest(),
    }
    counts = manifest["counts"]
    assert counts["auth0.profiles_read"] == 12 == counts["users_written"] + 1
    # no temporary objects left behind
    assert not [b.name for b in bucket.list_blobs() if "zitadel-beam-tmp" in b.name]

    # No credential wait, checked at its cause rather than by the clock (a busy machine slows the
    # emulator far more than the local run): Beam found the fixture's credentials at its first
    # look-up. A look-up that fails is retried with backoff for ~20 s, then connects anonymously.
    found = beam_auth._Credentials._credentials
    assert found is not None, "Beam connected anonymously"
    assert found.get_google_auth_credentials().client_id == "test.apps.googleusercontent.com"
    assert not [r.getMessage() for r in caplog.records if "before retrying" in r.getMessage()]


def test_gcs_missing_input_is_one_error_line(gcs_emulator, capsys, tmp_path):
    started = time.monotonic()
    rc = main(
        [
            "migrate",
            "auth0",
            "--org=1",
            f"--users=gs://{gcs_emulator.name}/nothing/users-*.json",
            f"--passwords=gs://{gcs_emulator.name}/nothing/p.json",
            f"--output=gs://{gcs_emulator.name}/o.json",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("zitadel-beam: error: ") and "--users" in err, err
    elapsed = time.monotonic() - started

    def same_on_local_files() -> None:  # the baseline: the same refusal with no storage to ask
        args = [
            f"--users={tmp_path}/users-*.json",
            f"--passwords={tmp_path}/p.json",
            f"--output={tmp_path}/o.json",
        ]
        assert main(["migrate", "auth0", "--org=1", *args]) == 2

    assert_within_pace(
        elapsed, 30, lambda: timed(same_on_local_files), "the refusal"
    )  # Beam's retries: ~120 s


def test_gcs_inputs_get_the_same_first_look_encodings_and_gzip_checks(gcs_emulator, capsys):
    """docs/inputs.md on gs://: a file holding no JSON is refused before the run (exit 2, one
    line), a UTF-16 file with BOM is decoded and counted, a cut .gz keeps what was read and
    exits 1."""
    bucket = gcs_emulator
    profiles = [{"user_id": f"auth0|{i}", "email": f"user{i}@example.com"} for i in range(5)]
    bucket.blob("in/page.json").upload_from_string(b"<!DOCTYPE html><html><head><title>403</title>")
    bucket.blob("in/utf16.json").upload_from_string(json.dumps(profiles).encode("utf-16"))
    packed = gzip.compress(
        _ndjson({"user_id": f"auth0|{i}", "email": f"u{i}@example.com"} for i in range(3000))
    )
    bucket.blob("in/cut.json.gz").upload_from_string(packed[: len(packed) // 2])

    def run(name: str, out: str) -> int:
        return main(
            [
                "migrate",
                "auth0",
                "--org=123",
                f"--users=gs://{bucket.name}/in/{name}",
                "--passwords=none",
                f"--output=gs://{bucket.name}/{out}/importBody.json",
            ]
        )

    assert run("page.json", "a") == 2
    err = capsys.readouterr().err
    assert "page.json: not one JSON record could be read: looks like HTML" in err
    assert not list(bucket.list_blobs(prefix="a/"))

    assert run("utf16.json", "b") == 0
    manifest = json.loads(bucket.blob("b/importBody.manifest.json").download_as_bytes())
    assert manifest["counts"]["users_written"] == 5 and manifest["counts"]["inputs.decoded.utf-16-le"] == 1

    assert run("cut.json.gz", "c") == 1
    assert "cut.json.gz was cut short or is damaged" in capsys.readouterr().err
    manifest = json.loads(bucket.blob("c/importBody.manifest.json").download_as_bytes())
    assert manifest["invariant"]["holds"] and 0 < manifest["counts"]["users_written"] < 3000
    assert manifest["counts"]["dead_letter.auth0-profile.unreadable-input"] == 1
