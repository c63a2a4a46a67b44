"""transforms/sources/firebase/legacy_hashes.py: migrate firebase --legacy-hashes, its checks and what it leaves alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_files import DATA_DIR

from pipeline.cli import main

DATA = DATA_DIR / "firebase"
VECTOR = DATA / "scrypt-readme"


def _migrate(tmp_path: Path, *args: str) -> int:
    output = tmp_path / "out" / "importBody.json"
    return main(
        ["migrate", "firebase", "--org=1", f"--users={VECTOR / 'users.csv'}", f"--output={output}", *args]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--legacy-hashes={store}"], "--legacy-hashes needs --hash-config"),
        (
            ["--legacy-hashes={store}", "--hash-config={bad_config}"],
            "--hash-config has no base64_signer_key",
        ),
        (["--legacy-hashes={existing}", f"--hash-config={VECTOR / 'hash_config.txt'}"], "is never replaced"),
    ],
)
def test_flag_problems_fail_fast_in_one_line(tmp_path, capsys, args, message):
    existing = tmp_path / "existing.ndjson"
    existing.write_text("{}\n")
    bad_config = tmp_path / "hash_config.txt"
    bad_config.write_text("hash_config {\n  algorithm: SCRYPT,\n  rounds: 8,\n  mem_cost: 14,\n}\n")
    filled = [a.format(store=tmp_path / "s.ndjson", existing=existing, bad_config=bad_config) for a in args]
    assert _migrate(tmp_path, *filled) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing ran
    assert existing.read_text() == "{}\n"
    assert "jxspr8Ki0RYycVU8" not in err


def test_without_the_flag_nothing_changes(tmp_path, capsys):
    assert _migrate(tmp_path, f"--hash-config={VECTOR / 'hash_config.txt'}") == 0
    out = capsys.readouterr().out
    assert "kept for sign-in verification" not in out
    manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
    assert "legacy_hashes" not in manifest
    reset = (tmp_path / "out" / "importBody.passwordless.ndjson").read_text().splitlines()
    assert [json.loads(line)["reason"] for line in reset] == ["unsupported-hash"]


def test_the_store_holds_the_vector_and_the_reset_list_is_gone(tmp_path, capsys):
    store = tmp_path / "out" / "legacy.ndjson"
    assert _migrate(tmp_path, f"--hash-config={VECTOR / 'hash_config.txt'}", f"--legacy-hashes={store}") == 0
    out = capsys.readouterr().out
    assert "kept for sign-in verification: 1" in out
    assert "imported without password" not in out
    assert not (tmp_path / "out" / "importBody.passwordless.ndjson").exists()
    (record,) = [json.loads(line) for line in store.read_text().splitlines()]
    assert record["form"] == "firebase-scrypt"
    assert record["params"]["rounds"] == 8 and record["params"]["mem_cost"] == 14
    from companion.verifiers import verify

    assert verify(record, "user1password")
    manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
    assert manifest["legacy_hashes"]["path"] == "legacy.ndjson"
    assert manifest["passwordless"]["count"] == 0
    # Run again into another output: the existing store is refused, never replaced.
    before = store.read_bytes()
    output = tmp_path / "again" / "importBody.json"
    code = main(
        ["migrate", "firebase", "--org=1", f"--users={VECTOR / 'users.csv'}", f"--output={output}",
         f"--hash-config={VECTOR / 'hash_config.txt'}", f"--legacy-hashes={store}"]
    )  # fmt: skip
    assert code == 2 and store.read_bytes() == before


def test_the_admin_import_is_refused_because_zitadel_cannot_set_an_initial_users_password(tmp_path, capsys):
    from zitadel_fixtures import PAT
    from zitadel_server import ZitadelServer

    token = tmp_path / "pat"
    token.write_text(PAT)
    with ZitadelServer(tokens={PAT}) as server:
        code = _migrate(
            tmp_path, f"--hash-config={VECTOR / 'hash_config.txt'}", f"--legacy-hashes={tmp_path / 's.ndjson'}",
            f"--push-url={server.url}", f"--token-file={token}", "--api=admin-import",
        )  # fmt: skip
        assert server.state.import_calls == 0
    err = capsys.readouterr().err
    assert code == 2 and "push with --api=user-v2" in err and "Errors" not in err
    assert not (tmp_path / "s.ndjson").exists()
