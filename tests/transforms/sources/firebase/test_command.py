"""``migrate firebase`` end to end (transforms/sources/firebase/command.py): the CLI on the sample exports,
compressed and on gs://, hostile values, push and verify against the stand-in, and ``--state`` nights.

The sample export (``tests/data/firebase/``, written by ``examples/firebase/make_sample.py``) holds
six users with known values; its origin is in ``tests/data/README.md``.
"""

from __future__ import annotations

import base64
import gzip
import json
import shutil
from pathlib import Path

import pytest
from repo_files import DATA_DIR, ROOT
from zitadel_fixtures import PAT, leaked_secrets
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.mapping.validate import Reason
from transforms.sources.firebase.mapping import CSV_COLUMNS

DATA = DATA_DIR / "firebase"
ORG = "123456789"
SAMPLE_IDS = ["fb-ann-0001", "fb-bo-0002", "fb-cy-0003", "fb-dee-0004", "fb-eve-0005", "fb-fay-0006"]
SECRET_KEY = "c2lnbmVyLWtleS1zZWNyZXQtdmFsdWUtZm9yLXRlc3Rz"
SECRET_SEPARATOR = "Bw=="


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on the bundled sample (tests/pipeline/test_migrate.py syncs with it)."""
    return [f"--users={ROOT}/examples/firebase/users.json"]


def _run(tmp_path: Path, users: str, *args: str) -> tuple[int, dict | None]:
    output = tmp_path / "out" / "importBody.json"
    code = main(["migrate", "firebase", f"--org={ORG}", f"--users={users}", f"--output={output}", *args])
    manifest = tmp_path / "out" / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _written(tmp_path: Path, manifest: dict) -> list[dict]:
    users = []
    for body in manifest["bodies"]:
        doc = json.loads((tmp_path / "out" / body["path"]).read_text())
        users += doc["dataOrgs"]["orgs"][0]["humanUsers"]
    return users


def _dead(tmp_path: Path) -> list[dict]:
    path = tmp_path / "out" / "importBody.dead-letter.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("name", ["users.json", "users.csv"])
def test_the_sample_export_converts_with_every_user_accounted(tmp_path, capsys, name):
    code, manifest = _run(
        tmp_path,
        str(DATA / name),
        "--metadata",
        "--idp-map=google.com=300",
        "--idp-map=apple.com=301",
    )
    assert code == 0 and manifest is not None
    counts = manifest["counts"]
    assert manifest["invariant"]["holds"] is True
    written = {u["userId"]: u["user"] for u in _written(tmp_path, manifest)}
    # dee is disabled, eve has no e-mail: both dead-lettered with their reason.
    assert sorted(written) == ["fb-ann-0001", "fb-bo-0002", "fb-cy-0003", "fb-fay-0006"]
    assert {d["record"]["localId"]: d["reason"] for d in _dead(tmp_path)} == {
        "fb-dee-0004": Reason.DISABLED,
        "fb-eve-0005": Reason.MISSING_EMAIL,
    }
    assert counts["firebase.users_read"] == 6 and counts["users_written"] == 4
    assert written["fb-bo-0002"]["idps"] == [
        {"configId": "300", "externalUserId": "109876543210", "displayName": "bo@gmail.example"}
    ]
    assert written["fb-bo-0002"]["phone"] == {"phone": "+41790000002"}
    assert written["fb-cy-0003"]["profile"]["displayName"] == "Cy, Example"
    assert all("hashedPassword" not in u and "password" not in u for u in written.values())
    # Firebase scrypt hashes: imported without, listed for a reset.
    passwordless = (tmp_path / "out" / "importBody.passwordless.ndjson").read_text().splitlines()
    assert [json.loads(line)["id"] for line in passwordless] == ["fb-ann-0001", "fb-bo-0002"]
    assert counts["firebase.password_dropped.unsupported-hash"] == 2
    metadata = json.loads((tmp_path / "out" / _written_path(manifest)).read_text())["dataOrgs"]["orgs"][0]
    values = {(m["id"], m["key"]): base64.b64decode(m["value"]).decode() for m in metadata["userMetadata"]}
    assert values == {
        ("fb-ann-0001", "role"): '"admin"',
        ("fb-ann-0001", "tier"): "2",
        ("fb-fay-0006", "plan"): '"pro"',
    }
    if name == "users.json":  # the CSV layout has no apple.com columns and no mfaInfo
        assert written["fb-fay-0006"]["idps"][0]["configId"] == "301"
        assert counts["firebase.mfa.phone"] == 1 and counts["firebase.mfa.totp"] == 1
    out = capsys.readouterr().out
    assert "Firebase scrypt hash not importable, reset needed" in out
    sample = (DATA / name).read_text()
    hashes = [
        u["passwordHash"]
        for u in json.loads((DATA / "users.json").read_text())["users"]
        if "passwordHash" in u
    ]
    body_text = "".join((tmp_path / "out" / b["path"]).read_text() for b in manifest["bodies"])
    assert all(h in sample and h not in body_text and h not in out for h in hashes)


def _written_path(manifest: dict) -> str:
    return manifest["bodies"][0]["path"]


def test_the_auth_import_example_of_firebase_tools_readme_reads(tmp_path):
    """23 columns with spaces after the commas, an HMAC_SHA1 hash (origin: tests/data/README.md)."""
    example = DATA / "firebase-tools-readme-import-example.csv"
    code, manifest = _run(tmp_path, str(example), "--idp-map=facebook.com=500")
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"]
    (user,) = _written(tmp_path, manifest)
    assert user == {
        "userId": "111",
        "user": {
            "userName": "test@test.org",
            "profile": {"firstName": "Test User", "lastName": "Test User", "displayName": "Test User"},
            "email": {"email": "test@test.org"},
            "idps": [{"configId": "500", "externalUserId": "123", "displayName": "test@test.org"}],
        },
    }
    assert manifest["counts"]["firebase.password_dropped.unsupported-hash"] == 1


def test_dead_letter_policy_refuses_users_with_a_firebase_hash(tmp_path):
    code, manifest = _run(tmp_path, str(DATA / "users.json"), "--on-unsupported-hash=dead-letter")
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"]
    reasons = {d["record"]["localId"]: d["reason"] for d in _dead(tmp_path)}
    assert reasons["fb-ann-0001"] == reasons["fb-bo-0002"] == Reason.UNSUPPORTED_HASH
    assert not (tmp_path / "out" / "importBody.passwordless.ndjson").exists()


def test_gz_files_and_globs_read_json_and_csv_together(tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    with gzip.open(folder / "part-1.json.gz", "wb") as handle:
        handle.write((DATA / "users.json").read_bytes())
    shutil.copy(DATA / "users.csv", folder / "part-2.csv")
    code, manifest = _run(
        tmp_path, str(folder / "part-*"), "--include-disabled", "--email-fallback={id}@u.example.com"
    )
    assert code == 0 and manifest is not None
    assert manifest["counts"]["firebase.files.json"] == 1 and manifest["counts"]["firebase.files.csv"] == 1
    assert manifest["counts"]["firebase.users_read"] == 12
    # The same users twice: the second copies are duplicates, dead-lettered and counted.
    assert [u["userId"] for u in _written(tmp_path, manifest)] == SAMPLE_IDS
    dead = _dead(tmp_path)
    assert len(dead) == 6 and {d["reason"] for d in dead} <= {
        Reason.DUPLICATE_USER_ID,
        Reason.DUPLICATE_USERNAME,
    }
    assert manifest["invariant"]["holds"] is True
    assert [f["format"] for f in manifest["firebase_files"]] == ["json", "csv"]


def test_gs_input_through_the_emulator(tmp_path, gcs_emulator):
    gcs_emulator.blob("fb/users.csv").upload_from_filename(str(DATA / "users.csv"))
    code, manifest = _run(tmp_path, f"gs://{gcs_emulator.name}/fb/users.csv")
    assert code == 0 and manifest is not None
    assert manifest["counts"]["users_written"] == 4 and manifest["invariant"]["holds"]


def test_hostile_values_are_dead_lettered_with_a_reason_and_the_summary_adds_up(tmp_path):
    users = [
        {"localId": "ok-1", "email": "ok1@example.com"},
        {"email": "no-id@example.com"},
        {"localId": 17, "email": "number@example.com"},
        {"localId": "x" * 300, "email": "long@example.com"},
        {"localId": "bad-claims", "email": "claims@example.com", "customAttributes": "{nope"},
        {"localId": "list-claims", "email": "list@example.com", "customAttributes": "[1,2]"},
        {"localId": "bad-mail", "email": "not an address"},
        "a string",
        {"localId": "ok-2", "email": "ok2@example.com", "mfaInfo": "junk", "providerUserInfo": 5},
    ]
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"users": users}))
    code, manifest = _run(tmp_path, str(path), "--metadata")
    assert code == 0 and manifest is not None
    assert [u["userId"] for u in _written(tmp_path, manifest)] == ["ok-1", "ok-2"]
    reasons = [d["reason"] for d in _dead(tmp_path)]
    assert reasons == [
        Reason.MISSING_USER_ID,
        Reason.INVALID_USER_ID,
        Reason.INVALID_USER_ID,
        Reason.MALFORMED_JSON,
        Reason.MALFORMED_JSON,
        Reason.INVALID_EMAIL,
        Reason.NOT_AN_OBJECT,
    ]
    counts = manifest["counts"]
    assert counts["firebase.users_read"] == 9 == counts["users_written"] + len(reasons)
    assert manifest["invariant"]["holds"] is True


def test_a_csv_with_short_rows_and_a_json_cut_midway_keep_what_reads(tmp_path):
    csv_path = tmp_path / "users.csv"
    csv_path.write_text((DATA / "users.csv").read_text() + "short,row,true\n")
    code, manifest = _run(tmp_path, str(csv_path))
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"]
    assert _dead(tmp_path)[-1]["reason"] == Reason.UNREADABLE_INPUT
    json_path = tmp_path / "cut.json"
    json_path.write_text('{"users": [{"localId": "a", "email": "a@example.com"}, {"localId": "b", "ema')
    code, manifest = _run(tmp_path / "second", str(json_path))
    assert manifest is not None and manifest["counts"]["firebase.unreadable_files"] == 1
    assert manifest["counts"]["users_written"] == 1 and manifest["invariant"]["holds"]


def test_hash_config_is_recorded_without_its_keys(tmp_path, capsys):
    config = tmp_path / "hash_config.txt"
    config.write_text(
        "hash_config {\n  algorithm: SCRYPT,\n"
        f"  base64_signer_key: {SECRET_KEY},\n  base64_salt_separator: {SECRET_SEPARATOR},\n"
        "  rounds: 8,\n  mem_cost: 14,\n}\n"
    )
    code, manifest = _run(tmp_path, str(DATA / "users.json"), f"--hash-config={config}")
    assert code == 0 and manifest is not None
    assert manifest["firebase_hash_config"] == {
        "algorithm": "SCRYPT",
        "rounds": 8,
        "mem_cost": 14,
        "signer_key_given": True,
        "salt_separator_given": True,
    }
    out, err = capsys.readouterr()
    assert "SCRYPT" in out
    written = "".join(p.read_text() for p in (tmp_path / "out").iterdir() if p.is_file())
    assert leaked_secrets(out + err + written, [SECRET_KEY]) == []


def test_hash_config_on_gs_as_the_flex_template_passes_it(tmp_path, gcs_emulator):
    gcs_emulator.blob("fb/users.csv").upload_from_filename(str(DATA / "users.csv"))
    gcs_emulator.blob("fb/hash_config.txt").upload_from_string(
        "hash_config {\n  algorithm: SCRYPT,\n  rounds: 8,\n  mem_cost: 14,\n}\n"
    )
    bucket = f"gs://{gcs_emulator.name}/fb"
    code, manifest = _run(tmp_path, f"{bucket}/users.csv", f"--hash-config={bucket}/hash_config.txt")
    assert code == 0 and manifest is not None
    assert manifest["firebase_hash_config"]["rounds"] == 8
    assert manifest["firebase_hash_config"]["signer_key_given"] is False


def test_hash_config_is_an_input_the_run_never_writes(tmp_path, capsys):
    config = tmp_path / "out" / "importBody.json"
    config.parent.mkdir()
    config.write_text("hash_config {\n  algorithm: SCRYPT,\n}\n")
    code, _ = _run(tmp_path, str(DATA / "users.json"), f"--hash-config={config}")
    assert code == 2 and "--hash-config" in capsys.readouterr().err
    assert config.read_text().startswith("hash_config")


@pytest.mark.parametrize(
    "content,message",
    [
        ('{"realm": "acme", "users": [{"id": "1", "username": "ann"}]}', "migrate keycloak --realm reads it"),
        ('{"user_id": "auth0|1", "email": "a@example.com"}\n', "migrate auth0 --users reads it"),
        ('[{"localId": "1"}]', "a JSON array, not a Firebase Auth export"),
        ('{"accounts": []}', 'no "users" array'),
        # A header row: a table, not auth:export's headerless CSV (its columns would be read by position).
        ("email,password\nann@example.com,x\n", "header row (email, password), not a Firebase Auth CSV"),
        ("ann@example.com,x\n", "first line has 2 columns"),
        ("", "the file is empty"),
    ],
)
def test_files_that_are_not_a_firebase_export_are_one_error_line(tmp_path, capsys, content, message):
    path = tmp_path / "input.json"
    path.write_text(content)
    code, _ = _run(tmp_path, str(path))
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["users.json", "users.csv"])
def test_the_other_readers_refuse_a_firebase_export_naming_migrate_firebase(tmp_path, capsys, name):
    out = tmp_path / "out" / "importBody.json"
    assert main(["migrate", "auth0", "--org=1", f"--users={DATA / name}", f"--output={out}"]) == 2
    assert "migrate firebase --users reads it" in capsys.readouterr().err
    if name == "users.json":
        assert main(["migrate", "keycloak", "--org=1", f"--realm={DATA / name}", f"--output={out}"]) == 2
        assert "migrate firebase --users reads it" in capsys.readouterr().err


def test_push_and_verify_against_the_stand_in(tmp_path, monkeypatch, capsys):
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    with ZitadelServer(tokens={PAT}) as server:
        code, manifest = _run(
            tmp_path,
            str(DATA / "users.json"),
            "--metadata",
            "--idp-map=google.com=300",
            f"--push-url={server.url}",
            f"--token-file={token_file}",
        )
        assert code == 0 and manifest is not None
        assert server.user_ids(ORG) == {"fb-ann-0001", "fb-bo-0002", "fb-cy-0003", "fb-fay-0006"}
        monkeypatch.setenv("ZITADEL_TOKEN", PAT)
        manifest_path = tmp_path / "out" / "importBody.manifest.json"
        assert main(["verify", "--url", server.url, "--manifest", str(manifest_path)]) == 0
    out, err = capsys.readouterr()
    assert leaked_secrets(out + err) == []


# --------------------------------------------------------------------------- --state nights


def _fb_user(n: int, **extra) -> dict:
    user = {
        "localId": f"fb-{n}",
        "email": f"user{n}@example.com",
        "emailVerified": True,
        "displayName": f"User {n}",
        "customAttributes": json.dumps({"n": n}),
    }
    user.update(extra)
    return {k: v for k, v in user.items() if v is not None}


def _csv(users: list[dict]) -> str:
    """The users as firebase auth:export writes a CSV (the columns of docs/firebase.md)."""
    lines = []
    for user in users:
        claims = user.get("customAttributes", "")
        values = {
            "localId": user["localId"],
            "email": user.get("email", ""),
            "emailVerified": "true" if user.get("emailVerified") else "false",
            "displayName": user.get("displayName", ""),
            "phoneNumber": user.get("phoneNumber", ""),
            "disabled": "true" if user.get("disabled") else "",
            "customAttributes": '"' + claims.replace('"', '""') + '"' if claims else "",
        }
        lines.append(",".join(values.get(column, "") for column in CSV_COLUMNS) + ",\n")
    return "".join(lines)


def _night(tmp_path: Path, server: ZitadelServer, users: list[dict], n: int, fmt: str, *extra: str) -> int:
    export = tmp_path / f"night-{n}" / f"users.{fmt}"
    export.parent.mkdir(parents=True)
    export.write_text(json.dumps({"users": users}) if fmt == "json" else _csv(users))
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    return main(
        [
            "migrate",
            "firebase",
            f"--org={ORG}",
            f"--users={export}",
            f"--output={tmp_path / 'out' / 'importBody.json'}",
            f"--state={tmp_path / 'state'}",
            "--metadata",
            "--max-removals=50%",
            "--max-blocks=50%",
            f"--push-url={server.url}",
            f"--token-file={token_file}",
            *extra,
        ]
    )


def test_state_nights_follow_the_export_changed_disabled_and_removed_users(tmp_path, capsys):
    with ZitadelServer(tokens={PAT}) as server:
        day1 = [_fb_user(n) for n in range(1, 6)]
        day1[1]["passwordHash"], day1[1]["salt"] = "aGFzaA==", "c2FsdA=="
        assert _night(tmp_path, server, day1, 1, "json") == 0
        assert server.user_ids(ORG) == {f"fb-{n}" for n in range(1, 6)}
        day2 = [
            _fb_user(1, displayName="Renamed One"),
            _fb_user(2, disabled=True),
            # 3 is gone from the export
            _fb_user(4, email="moved@example.com", emailVerified=False),
            _fb_user(5, customAttributes=json.dumps({"n": 50})),
            _fb_user(6),
        ]
        capsys.readouterr()
        assert _night(tmp_path, server, day2, 2, "json", "--on-removed=deactivate") == 0
        users = {uid: u for uid, (_, u) in server.state.users.items()}
        states = server.state.user_states
        assert users["fb-1"]["profile"]["displayName"] == "Renamed One"
        # Users without a password are in ZITADEL's initial state, which cannot be deactivated:
        # the sync locks them instead (docs/sync.md), as for the other sources' blocked users.
        assert (states["fb-2"], states["fb-3"]) == ("locked", "locked")
        assert users["fb-4"]["email"] == {"email": "moved@example.com"}
        assert base64.b64decode(server.state.metadata[("fb-5", "n")]).decode() == "50"
        assert "fb-6" in users and "hashedPassword" not in users["fb-2"]
        calls = len(server.v2.calls)
        assert _night(tmp_path, server, day2, 3, "json", "--on-removed=deactivate") == 0
        assert len(server.v2.calls) == calls  # nothing changed: nothing sent
        # The same users as a CSV export: another layout of the same data changes nothing.
        assert _night(tmp_path, server, day2, 4, "csv", "--on-removed=deactivate") == 0
        assert len(server.v2.calls) == calls
        # fb-2 enabled again: unlocked; fb-6 gone and removals only listed (the default).
        day5 = [{k: v for k, v in u.items() if k != "disabled"} for u in day2[:-1]]
        assert _night(tmp_path, server, day5, 5, "csv") == 0
        assert server.state.user_states["fb-2"] != "locked"
        assert server.state.user_states.get("fb-6") not in ("inactive", "locked", "removed")


def test_the_hint_for_users_who_cannot_sign_in_names_idp_map(tmp_path, capsys):
    """`migrate firebase` has --idp-map: the hint for users without a password or link names it."""
    export = tmp_path / "users.json"
    export.write_text(json.dumps({"users": [_fb_user(1), _fb_user(2)]}))
    code, manifest = _run(tmp_path, str(export))
    assert code == 0 and manifest is not None
    summary = capsys.readouterr().out
    assert "  map their IdP alias with --idp-map, or send password-reset mails" in summary
