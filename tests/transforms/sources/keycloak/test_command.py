"""``migrate keycloak`` end to end (transforms/sources/keycloak/command.py): the CLI on real and generated realms.

Reference files are read from ``tests/data`` (the zitadel-tools conformance pair and the
real-world exports; origins in ``tests/data/README.md``).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import orjson
import pytest
from keycloak_fixtures import DATA, REALWORLD, REFERENCE, make_user, need, split_export_files

from pipeline.cli import main
from transforms.mapping.validate import Reason
from transforms.sources.keycloak.read import FILE_SOURCE, SOURCE


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on a small realm (tests/pipeline/test_migrate.py syncs with it): users
    without a hash, which the default config admits."""
    realm = tmp_path / "realm.json"
    realm.write_text(json.dumps({"realm": "acme", "users": [make_user(n, credentials=[]) for n in (1, 2)]}))
    return [f"--realm={realm}"]


# --------------------------------------------------------------------------- the CLI


def _run_cli(tmp_path: Path, *args: str) -> tuple[int, dict | None]:
    output = tmp_path / "out" / "importBody.json"
    if not any(arg.startswith("--zitadel-config") for arg in args):
        # The target enables pbkdf2 and argon2 (ZITADEL's default is bcrypt only; see test_hash_policy).
        args = (f"--zitadel-config={DATA / 'zitadel-config' / 'verifiers-enabled.yaml'}", *args)
    code = main(["migrate", "keycloak", "--org=123", f"--output={output}", *args])
    manifest_path = tmp_path / "out" / "importBody.manifest.json"
    return code, (json.loads(manifest_path.read_text()) if manifest_path.exists() else None)


def test_conformance_with_zitadel_tools_reference(tmp_path):
    realm = need(REFERENCE / "realm.json")
    code, manifest = _run_cli(tmp_path, f"--realm={realm}", "--timeout=30m0s")
    assert code == 0
    got = json.loads((tmp_path / "out" / "importBody.json").read_text())
    assert got == json.loads((REFERENCE / "referenceOutput.json").read_text())
    assert manifest["invariant"]["holds"] is True


def test_cli_split_export_end_to_end(tmp_path):
    users = split_export_files(tmp_path / "exp", "acme", [4, 4, 3])
    code, manifest = _run_cli(tmp_path, f"--realm={tmp_path / 'exp'}", "--batch-size=5")
    assert code == 0
    assert manifest["counts"]["keycloak.users_read"] == 11
    assert manifest["counts"]["keycloak.with_password.pbkdf2-sha256"] == 11
    assert manifest["invariant"]["holds"] is True
    written = []
    for body in manifest["bodies"]:
        doc = json.loads((tmp_path / "out" / body["path"]).read_text())
        written += [u["userId"] for u in doc["dataOrgs"]["orgs"][0]["humanUsers"]]
    assert written == [u["id"] for u in users]  # input order across files and bodies


@pytest.mark.parametrize(
    "content,message",
    [
        (b'{"realm": "a", "enabled": true}', 'no "users" array'),
        (b'{"realm": "a", "roles": {"realm": [{"name": "x"', "not valid JSON"),
        (b'[{"realm": "a", "users": []}, {"realm": "b", "users": []}]', "--realm-name"),
    ],
)
def test_cli_unusable_realm_is_one_error_line(tmp_path, capsys, content, message):
    (tmp_path / "realm.json").write_bytes(content)
    code, _ = _run_cli(tmp_path, f"--realm={tmp_path / 'realm.json'}")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("zitadel-beam: error: --realm:") and message in err[0]


def test_cli_missing_realm_is_one_error_line(tmp_path, capsys):
    code, _ = _run_cli(tmp_path, f"--realm={tmp_path / 'nope.json'}")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no such file" in err[0]


def test_cli_truncated_users_array_is_a_dead_letter(tmp_path):
    text = orjson.dumps({"realm": "r", "users": [make_user(i) for i in range(3)]})
    (tmp_path / "realm.json").write_bytes(text[: text.index(b'"id-2"')])
    code, manifest = _run_cli(tmp_path, f"--realm={tmp_path / 'realm.json'}")
    assert code == 0
    assert manifest["dead_letters_by_reason"] == {FILE_SOURCE: {Reason.UNREADABLE_INPUT: 1}}
    assert manifest["counts"]["users_written"] == 2 and manifest["invariant"]["holds"] is True
    line = json.loads((tmp_path / "out" / "importBody.dead-letter.ndjson").read_text().splitlines()[0])
    assert "JSON syntax error after user 2" in line["detail"]


# Numbers read off each file (tests/scenarios/test_realworld.py verifies their passwords).
_REALWORLD = {
    "jhipster-split-users-0.json": (2, {}, {"pbkdf2-sha256": 2}),
    "jhipster-split-users-0-legacy-hashedSaltedValue.json": (2, {}, {"pbkdf2-sha256": 2}),
    "lakekeeper-iceberg-realm-argon2.json": (2, {"service-account": 5}, {"argon2id": 2}),
    "strimzi-kafka-authz-realm.json": (
        2,
        {"service-account": 22, "plaintext-password": 1},
        {"pbkdf2-sha256": 2},
    ),
    "renku-renga-realm-legacy-pbkdf2-sha1.json": (1, {"service-account": 2}, {"pbkdf2-sha1": 1}),
}


@pytest.mark.parametrize("name", sorted(_REALWORLD))
def test_realworld_files_convert_without_crashing(tmp_path, name):
    path = need(REALWORLD / name)
    written, dead, algorithms = _REALWORLD[name]
    code, manifest = _run_cli(tmp_path, f"--realm={path}")
    assert code == 0
    counts = manifest["counts"]
    assert counts["users_written"] == written
    assert manifest["dead_letters_by_reason"].get(SOURCE, {}) == dead
    assert {
        k.split(".", 2)[2]: v for k, v in counts.items() if k.startswith("keycloak.with_password.")
    } == algorithms
    assert manifest["invariant"]["holds"] is True


def test_cli_split_export_from_gcs(tmp_path, gcs_emulator):
    """The same reader on gs:// (FileSystems + the in-process emulator): a split export's files."""
    users = split_export_files(tmp_path / "exp", "acme", [3, 2])
    for path in sorted((tmp_path / "exp").iterdir()):
        gcs_emulator.blob(f"exp/{path.name}").upload_from_filename(str(path))
    code, manifest = _run_cli(tmp_path, f"--realm=gs://{gcs_emulator.name}/exp/")
    assert code == 0
    assert manifest["counts"]["users_written"] == len(users)
    assert [os.path.basename(p) for p in manifest["realm_files"]] == [
        "acme-users-0.json",
        "acme-users-1.json",
    ]


def test_cli_brokered_users_and_fields_not_carried(tmp_path, capsys):
    realm = tmp_path / "realm.json"
    password = {
        "type": "password",
        "secretData": json.dumps(
            {"value": base64.b64encode(b"\0" * 32).decode(), "salt": base64.b64encode(b"s" * 16).decode()}
        ),
        "credentialData": json.dumps({"hashIterations": 27500, "algorithm": "pbkdf2-sha256"}),
    }
    users = [
        {
            "id": "1",
            "username": "ann",
            "email": "ann@example.com",
            "enabled": True,
            "federatedIdentities": [
                {"identityProvider": "google", "userId": "g-1", "userName": "ann@gmail.com"}
            ],
            "requiredActions": ["VERIFY_EMAIL"],
            "groups": ["/staff"],
        },
        {
            "id": "2",
            "username": "bob",
            "email": "bob@example.com",
            "enabled": True,
            "federatedIdentities": [{"identityProvider": "corp", "userId": "c-2"}],
            "credentials": [{"type": "otp", "secretData": "{}"}],
            "shoeSize": 44,
        },
        {
            "id": "3",
            "username": "cid",
            "email": "cid@example.com",
            "enabled": True,
            "credentials": [password],
            "realmRoles": ["admin"],
        },
    ]
    realm.write_text(json.dumps({"realm": "acme", "users": users}))
    code, manifest = _run_cli(tmp_path, f"--realm={realm}", "--idp-map=google=301")
    assert code == 0
    written = json.loads((tmp_path / "out" / "importBody.json").read_text())["dataOrgs"]["orgs"][0][
        "humanUsers"
    ]
    by_id = {u["userId"]: u["user"] for u in written}
    assert by_id["1"]["idps"] == [
        {"configId": "301", "externalUserId": "g-1", "displayName": "ann@gmail.com"}
    ]
    assert "idps" not in by_id["2"] and "hashedPassword" in by_id["3"]
    assert manifest["counts"]["keycloak.idp_links.linked.google"] == 1
    assert manifest["counts"]["keycloak.idp_links.unmapped.corp"] == 1
    assert manifest["cannot_sign_in_yet"] == 1  # bob: unmapped alias, no password
    assert manifest["fields_not_carried"] == {"keycloak.groups": 1, "keycloak.realmRoles": 1}
    assert manifest["second_factors_not_carried"] == {"keycloak.otp.no-secret": 1}
    assert manifest["required_actions_not_carried"] == {"keycloak.VERIFY_EMAIL": 1}
    assert manifest["unknown_fields"] == {"keycloak.shoeSize": 1}
    out = capsys.readouterr().out
    for text in (
        "no --idp-map, not linked: corp",
        "cannot sign in yet (no password, no IdP link)",
        "map their IdP alias with --idp-map, or send password-reset mails",
        "keycloak.VERIFY_EMAIL",
    ):
        assert text in out


def test_cli_idp_map_config_error(tmp_path, capsys):
    realm = tmp_path / "realm.json"
    realm.write_text(json.dumps({"realm": "acme", "users": []}))
    code, _ = _run_cli(tmp_path, f"--realm={realm}", "--idp-map=google")
    assert code == 2
    assert "expected ALIAS=IDP_ID" in capsys.readouterr().err
