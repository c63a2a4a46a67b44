"""Hashes the target's configuration refuses, end to end through the CLI.

migrate puts the refusal first in its summary with the one ``SystemDefaults.PasswordHasher`` block
that admits every hash of the run; a re-run with that block as ``--zitadel-config`` writes those
users. A run in which every user read was dead-lettered exits 1. push checks the manifest's hashes
against the configuration migrate recorded unless it is given its own.

The exports are vendored real-world files (tests/data/README.md): Keycloak 26's argon2 realm
(lakekeeper), a Keycloak realm with pbkdf2-sha256 users (strimzi), an Auth0 bulk-import file
(workos tool).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from keycloak_fixtures import REALWORLD
from zitadel_fixtures import PAT
from zitadel_server import ZitadelServer

from pipeline.cli import main

AUTH0 = REALWORLD.parent / "auth0"
LAKEKEEPER = REALWORLD / "lakekeeper-iceberg-realm-argon2.json"
STRIMZI = REALWORLD / "strimzi-kafka-authz-realm.json"


@pytest.fixture(autouse=True)
def _no_target_variables(monkeypatch):
    """ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_* of the machine would change the target's config."""
    import os

    for name in [n for n in os.environ if n.startswith("ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_")]:
        monkeypatch.delenv(name)


def _migrate(capsys, out: Path, *args: str) -> tuple[int, str, dict]:
    capsys.readouterr()
    code = main(["migrate", *args, "--org=123", f"--output={out / 'importBody.json'}"])
    captured = capsys.readouterr()
    manifest = json.loads((out / "importBody.manifest.json").read_text())
    return code, captured.out + captured.err, manifest


def _argon2_and_pbkdf2_realm(tmp_path: Path) -> Path:
    """Keycloak 26's argon2 realm plus the strimzi realm's two pbkdf2-sha256 users: one run that
    needs two verifiers and a limit."""
    realm = json.loads(LAKEKEEPER.read_text())
    strimzi = json.loads(STRIMZI.read_text())
    realm["users"] += [u for u in strimzi["users"] if u["username"] in ("alice", "bob")]
    path = tmp_path / "realm.json"
    path.write_text(json.dumps(realm))
    return path


def test_a_keycloak_26_realm_refused_says_so_first_and_the_block_admits_every_hash(tmp_path, capsys):
    realm = _argon2_and_pbkdf2_realm(tmp_path)
    code, text, manifest = _migrate(capsys, tmp_path / "first", "keycloak", f"--realm={realm}")
    # 4 users with a hash, 5 service accounts: nobody written is a failed run, not exit 0.
    assert code == 1
    assert "every user read was dead-lettered" in text
    assert manifest["refused_hashes"] == {"argon2": 2, "pbkdf2": 2}
    assert manifest["dead_letters_by_reason"]["keycloak-user"]["hash-verifier-disabled"] == 4
    lines = text.splitlines()
    assert lines[0].startswith("password hashes refused: 4 user(s) were dead-lettered")
    assert lines.index("zitadel-beam migrate keycloak: summary") > lines.index("  SystemDefaults:")
    block = manifest["zitadel_config_admitting_all"]
    # Both verifiers and the argon2 memory limit at once, not one refusal per try.
    assert block == (
        "SystemDefaults:\n  PasswordHasher:\n    Verifiers:\n      - argon2\n      - pbkdf2\n"
        "    Limits:\n      Argon2:\n        MinMemory: 7168\n"
    )
    assert "\n".join("  " + line for line in block.splitlines()) in text
    config = tmp_path / "zitadel.yaml"
    config.write_text(block)

    code, text, manifest = _migrate(
        capsys, tmp_path / "again", "keycloak", f"--realm={realm}", f"--zitadel-config={config}"
    )
    assert code == 0
    assert "refused_hashes" not in manifest and "password hashes refused" not in text
    assert manifest["counts"]["users_written"] == 4
    assert manifest["password_hashes"] == {"argon2": 2, "pbkdf2": 2}
    assert set(manifest["dead_letters_by_reason"]["keycloak-user"]) == {"service-account"}


def test_auth0_hashes_refused_by_a_limit_are_imported_without_password_then_admitted(tmp_path, capsys):
    users = AUTH0 / "workos-tool-auth0-bulk-import-custom_password_hash.json"  # bcrypt cost 10
    strict = tmp_path / "strict.yaml"
    strict.write_text("SystemDefaults:\n  PasswordHasher:\n    Limits:\n      Bcrypt:\n        MinCost: 12\n")
    args = ("auth0", f"--users={users}", "--passwords=none")
    code, text, manifest = _migrate(
        capsys,
        tmp_path / "first",
        *args,
        f"--zitadel-config={strict}",
        "--on-unsupported-hash=import-without-password",
    )
    assert code == 0  # the users were written, without their passwords
    written = manifest["counts"]["users_written"]
    assert written > 0 and manifest["refused_hashes"] == {"bcrypt": written}
    assert manifest["users_without_password_by_reason"] == {"bcrypt-cost-out-of-range": written}
    assert text.startswith(f"password hashes refused: {written} user(s) were imported without a password")
    block = manifest["zitadel_config_admitting_all"]
    # The target's MinCost 12 is above ZITADEL's default: the block states the 10 these hashes need.
    assert block.endswith("    Limits:\n      Bcrypt:\n        MinCost: 10\n")
    admitting = tmp_path / "zitadel.yaml"
    admitting.write_text(block)

    code, text, manifest = _migrate(capsys, tmp_path / "again", *args, f"--zitadel-config={admitting}")
    assert code == 0
    assert "refused_hashes" not in manifest and "password hashes refused" not in text
    assert manifest["password_hashes"] == {"bcrypt": written}
    assert manifest["users_without_password_by_reason"] == {}


# --------------------------------------------------------------------------- push (item 6)

_COVER = "the target's password hasher config does not cover this run"


def _push(
    capsys, caplog, server: ZitadelServer, manifest: Path, tmp_path: Path, *args: str
) -> tuple[int, str]:
    token = tmp_path / "pat"
    token.write_text(PAT)
    capsys.readouterr()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="transforms.hashing.summary"):
        code = main(
            [
                "push",
                f"--url={server.url}",
                f"--manifest={manifest}",
                f"--token-file={token}",
                "--quiet",
                *args,
            ]
        )
    warnings = [r.getMessage() for r in caplog.records if _COVER in r.getMessage()]
    return code, "\n".join(warnings)


def test_push_trusts_the_config_migrate_recorded(tmp_path, capsys, caplog):
    pbkdf2 = tmp_path / "pbkdf2.yaml"
    pbkdf2.write_text("SystemDefaults:\n  PasswordHasher:\n    Verifiers:\n      - pbkdf2\n")
    code, _, recorded = _migrate(
        capsys, tmp_path / "out", "keycloak", f"--realm={STRIMZI}", f"--zitadel-config={pbkdf2}"
    )
    assert code == 0 and recorded["password_hashes"] == {"pbkdf2": 2}
    assert "pbkdf2" in recorded["target_hash_policy"]["verifiers"]
    manifest = tmp_path / "out" / "importBody.manifest.json"
    with ZitadelServer(tokens={PAT}, hash_verifiers=("pbkdf2",)) as server:
        code, warnings = _push(capsys, caplog, server, manifest, tmp_path)
        assert code == 0 and warnings == ""
        assert len(server.state.users) == recorded["counts"]["users_written"] == 2

        # push's own config wins: one that lacks pbkdf2 still warns.
        bcrypt_only = tmp_path / "bcrypt.yaml"
        bcrypt_only.write_text("SystemDefaults:\n  PasswordHasher:\n    Verifiers: [bcrypt]\n")
        _, warnings = _push(capsys, caplog, server, manifest, tmp_path, f"--zitadel-config={bcrypt_only}")
        assert "verifier 'pbkdf2' is not enabled" in warnings

    # A manifest without the recorded config (written before it was recorded): ZITADEL's defaults.
    raw = json.loads(manifest.read_text())
    del raw["target_hash_policy"]
    manifest.write_text(json.dumps(raw))
    with ZitadelServer(tokens={PAT}, hash_verifiers=("pbkdf2",)) as server:
        _, warnings = _push(capsys, caplog, server, manifest, tmp_path, f"--results={tmp_path / 'r2'}")
    assert "verifier 'pbkdf2' is not enabled" in warnings
