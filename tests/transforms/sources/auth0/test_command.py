"""``zitadel-beam migrate auth0`` end to end on temporary files (in-process and as a subprocess)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import stat
import subprocess
import sys
from pathlib import Path

import bcrypt
import pytest
from repo_files import ROOT

from pipeline.cli import main
from transforms.mapping.validate import Reason

REPO = ROOT


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on the bundled sample (tests/pipeline/test_migrate.py syncs with it)."""
    return [f"--users={ROOT}/examples/auth0/users.json", f"--passwords={ROOT}/examples/auth0/passwords.json"]


B64 = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


# --------------------------------------------------------------------------- helpers


def fake_bcrypt(rng: random.Random, cost: int = 10) -> str:
    """Pattern-valid bcrypt string (the pipeline checks the format, never the hash itself)."""
    return f"$2b${cost:02d}$" + "".join(rng.choice(B64) for _ in range(53))


def write_ndjson(path: Path, records, gz: bool = False) -> Path:
    data = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records).encode()
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def run_cli(*args: str) -> int:
    return main(["migrate", "auth0", *args])


def migrate(tmp: Path, users: Path, passwords: Path, *flags: str, name: str = "out/importBody.json"):
    """Run in-process; returns (rc, output path, manifest dict)."""
    output = tmp / name
    rc = run_cli("--org=123", f"--users={users}", f"--passwords={passwords}", f"--output={output}", *flags)
    manifest_path = output.with_name(output.stem + ".manifest.json")
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    return rc, output, manifest


def body_users(manifest: dict, directory: Path) -> list[dict]:
    users = []
    for body in manifest["bodies"]:
        data = json.loads((directory / body["path"]).read_bytes())
        users += data["dataOrgs"]["orgs"][0]["humanUsers"]
    return users


def dead_letters(manifest: dict, directory: Path) -> list[dict]:
    text = (directory / manifest["dead_letter"]["path"]).read_text()
    return [json.loads(line) for line in text.splitlines()]


def plain_users(n: int, seed: int = 7):
    """``n`` valid profiles with one password record each, plus their hashes by user id."""
    rng = random.Random(seed)
    profiles, passwords, hashes = [], [], {}
    for i in range(n):
        oid = f"{i:024x}"
        email = f"user{i}@example.com"
        profiles.append(
            {
                "user_id": f"auth0|{oid}",
                "email": email,
                "given_name": f"Given{i}",
                "family_name": f"Family{i}",
                "email_verified": i % 2 == 0,
            }
        )
        hashes[f"auth0|{oid}"] = fake_bcrypt(rng)
        passwords.append(
            {
                "_id": {"$oid": oid},
                "email": email,
                "passwordHash": hashes[f"auth0|{oid}"],
                "password_set_date": {"$date": "2021-03-05T16:35:16.775Z"},
            }
        )
    return profiles, passwords, hashes


# --------------------------------------------------------------------------- conformance


@pytest.fixture
def reference(data_dir):
    ref = data_dir / "zitadel-tools" / "auth0"
    return ref


CONFORMANCE_FLAGS = ("--org=123", "--timeout=30m0s", "--email-verified")


def test_conformance_with_zitadel_tools(reference, tmp_path, capsys):
    output = tmp_path / "importBody.json"
    rc = main(
        [
            "migrate",
            "auth0",
            *CONFORMANCE_FLAGS,
            f"--users={reference / 'users.json'}",
            f"--passwords={reference / 'passwords.json'}",
            f"--output={output}",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert json.loads(output.read_bytes()) == json.loads((reference / "referenceOutput.json").read_bytes())
    assert "users written" in captured.out and captured.err == ""


def test_conformance_as_subprocess_and_byte_identical_rerun(reference, tmp_path):
    outputs = []
    for i, command in enumerate(
        [[str(REPO / ".venv" / "bin" / "zitadel-beam")], [sys.executable, "-m", "pipeline"]]
    ):
        if not Path(command[0]).exists():
            command = [sys.executable, "-m", "pipeline"]
        output = tmp_path / f"run{i}" / "importBody.json"
        proc = subprocess.run(
            [
                *command,
                "migrate",
                "auth0",
                *CONFORMANCE_FLAGS,
                f"--users={reference / 'users.json'}",
                f"--passwords={reference / 'passwords.json'}",
                f"--output={output}",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        outputs.append(output.read_bytes())
    assert json.loads(outputs[0]) == json.loads((reference / "referenceOutput.json").read_bytes())
    assert outputs[0] == outputs[1]


# --------------------------------------------------------------------------- the synthetic export


@pytest.fixture(scope="module")
def real_hash():
    return "correct horse battery staple", bcrypt.hashpw(
        b"correct horse battery staple", bcrypt.gensalt(10)
    ).decode()


def synthetic_export(tmp: Path, real_hash: str):
    """Profiles and password records covering every Auth0 dead-letter reason and fix-up."""
    profiles, passwords, hashes = plain_users(20)
    rng = random.Random(99)
    extra_profiles = [
        # joined on the e-mail trimmed and case-folded; the output keeps the profile's text
        {
            "user_id": "auth0|aaa000000000000000000001",
            "email": "Mixed.Case@Example.COM",
            "name": "Mixed Case",
        },
        # real bcrypt hash for a known password
        {"user_id": "auth0|aaa000000000000000000002", "email": "real@example.com", "email_verified": True},
        # no password record: imported without hashedPassword
        {"user_id": "google-oauth2|1234", "email": "social@example.com", "name": "Social User"},
        # fixed, counted: phone without "+", long language tag
        {
            "user_id": "auth0|aaa000000000000000000003",
            "email": "phone@example.com",
            "phone_number": "0049 123",
            "locale": "en-u-rg-uszzzz",
        },
        {"user_id": "auth0|aaa000000000000000000004", "email": "lang@example.com", "locale": "123"},
        # dead letters
        {"user_id": "auth0|aaa000000000000000000005", "email": "blocked@example.com", "blocked": True},
        {"name": "No Id"},  # neither user_id nor e-mail (with an e-mail the id is derived)
        {"user_id": "auth0|aaa000000000000000000006"},
        {"user_id": "auth0|aaa000000000000000000007", "email": "not an e-mail"},
        {"user_id": "auth0|000000000000000000000000", "email": "dup-id@example.com"},  # user0's id again
        {"user_id": "auth0|aaa000000000000000000008", "email": "x@example.com", "username": "GIVEN-DUP"},
        {"user_id": "auth0|aaa000000000000000000009", "email": "y@example.com", "username": "given-dup"},
        {"user_id": "auth0|aaa00000000000000000000a", "email": "badhash@example.com"},
        {"user_id": "auth0|aaa00000000000000000000b", "email": "lowcost@example.com"},
        {"user_id": "auth0|aaa00000000000000000000c", "email": "amb@example.com", "username": "amb1"},
        {"user_id": "auth0|aaa00000000000000000000d", "email": "Amb@example.com", "username": "amb2"},
        {"user_id": "auth0|aaa00000000000000000000e", "email": "x" * 190 + "@e.co", "given_name": "n" * 201},
        {"user_id": "auth0|" + "f" * 200, "email": "longid@example.com"},
        {"user_id": "auth0|aaa00000000000000000000f", "email": "longname@example.com", "username": "u" * 201},
        {
            "user_id": "auth0|aaa000000000000000000010",
            "email": "lastname@example.com",
            "family_name": "l" * 201,
        },
    ]
    mixed_hash, old_hash, new_hash = fake_bcrypt(rng), fake_bcrypt(rng), fake_bcrypt(rng)
    extra_passwords = [
        {
            "_id": {"$oid": "aaa000000000000000000001"},
            "email": "  mixed.case@example.com ",
            "passwordHash": mixed_hash,
        },
        {"_id": {"$oid": "aaa000000000000000000002"}, "email": "real@example.com", "passwordHash": real_hash},
        # two records for one e-mail: the newest wins, the older is dead-lettered
        {
            "_id": {"$oid": "aaa000000000000000000003"},
            "email": "phone@example.com",
            "passwordHash": new_hash,
            "password_set_date": {"$date": "2023-01-01T00:00:00.000Z"},
        },
        {
            "_id": {"$oid": "aaa000000000000000000003"},
            "email": "phone@example.com",
            "passwordHash": old_hash,
            "password_set_date": {"$date": "2020-01-01T00:00:00.000Z"},
        },
        {
            "_id": {"$oid": "ffffffffffffffffffffffff"},
            "email": "nobody@example.com",
            "passwordHash": fake_bcrypt(rng),
        },
        {
            "_id": {"$oid": "aaa00000000000000000000a"},
            "email": "badhash@example.com",
            "passwordHash": "$2b$10$short",
        },
        {
            "_id": {"$oid": "aaa00000000000000000000b"},
            "email": "lowcost@example.com",
            "passwordHash": fake_bcrypt(rng, 4),
        },
        {
            "_id": {"$oid": "ffffffffffffffffffffff00"},
            "email": "amb@example.com",
            "passwordHash": fake_bcrypt(rng),
        },
        {
            "_id": {"$oid": "aaa000000000000000000005"},
            "email": "blocked@example.com",
            "passwordHash": fake_bcrypt(rng),
        },
        {"email": "", "passwordHash": fake_bcrypt(rng)},
        {"_id": {"$oid": "aaa000000000000000000004"}, "email": "lang@example.com"},
    ]
    hashes.update(
        {
            "auth0|aaa000000000000000000001": mixed_hash,
            "auth0|aaa000000000000000000002": real_hash,
            "auth0|aaa000000000000000000003": new_hash,
        }
    )
    users = write_ndjson(tmp / "users.json", profiles + extra_profiles + ["{not json", "[1, 2]"])
    pws = write_ndjson(tmp / "passwords.json", passwords + extra_passwords)
    return users, pws, hashes


EXPECTED_DEAD = sorted(
    [
        ("auth0-profile", Reason.MALFORMED_JSON),
        ("auth0-profile", Reason.NOT_AN_OBJECT),
        ("auth0-profile", Reason.BLOCKED),
        ("auth0-password", Reason.PROFILE_REJECTED),  # the blocked user's password
        ("auth0-profile", Reason.MISSING_USER_ID),
        ("auth0-profile", Reason.MISSING_EMAIL),
        ("auth0-profile", Reason.INVALID_EMAIL),
        ("auth0-profile", Reason.DUPLICATE_USER_ID),
        ("auth0-profile", Reason.DUPLICATE_USERNAME),
        ("auth0-profile", Reason.INVALID_HASH),
        ("auth0-password", Reason.PROFILE_REJECTED),  # ... and the bad hash's record
        ("auth0-profile", Reason.BCRYPT_COST),
        ("auth0-password", Reason.PROFILE_REJECTED),  # ... and the low cost's record
        ("auth0-profile", Reason.INVALID_FIRST_NAME),
        ("auth0-profile", Reason.INVALID_LAST_NAME),
        ("auth0-profile", Reason.INVALID_USERNAME),
        ("auth0-profile", Reason.INVALID_USER_ID),
        ("auth0-password", Reason.PASSWORD_SUPERSEDED),
        ("auth0-password", Reason.ORPHAN_PASSWORD),
        ("auth0-password", Reason.AMBIGUOUS_PASSWORD),
        ("auth0-password", Reason.MISSING_EMAIL),
        ("auth0-password", Reason.MISSING_PASSWORD_HASH),
    ]
)


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory, real_hash):
    """One run over the synthetic export, shared by the assertions below."""
    tmp = tmp_path_factory.mktemp("synthetic")
    users, pws, hashes = synthetic_export(tmp, real_hash[1])
    output = tmp / "out" / "importBody.json"
    rc = run_cli("--org=123", f"--users={users}", f"--passwords={pws}", f"--output={output}")
    manifest = json.loads((tmp / "out" / "importBody.manifest.json").read_text())
    return {"rc": rc, "dir": tmp / "out", "manifest": manifest, "hashes": hashes, "users": users, "pws": pws}


def test_synthetic_dead_letters_by_reason(synthetic_run):
    run = synthetic_run
    assert run["rc"] == 0
    letters = dead_letters(run["manifest"], run["dir"])
    assert sorted((d["source"], d["reason"]) for d in letters) == EXPECTED_DEAD
    assert all(set(d) == {"reason", "detail", "source", "record"} and d["detail"] for d in letters)
    malformed = next(d for d in letters if d["reason"] == Reason.MALFORMED_JSON)
    assert malformed["record"] == "{not json"
    blocked = next(d for d in letters if d["reason"] == Reason.BLOCKED)
    assert blocked["record"] == {
        "user_id": "auth0|aaa000000000000000000005",
        "email": "blocked@example.com",
        "blocked": True,
    }
    # the older of the two password records is the one dead-lettered
    superseded = next(d for d in letters if d["reason"] == Reason.PASSWORD_SUPERSEDED)
    assert superseded["record"]["password_set_date"] == {"$date": "2020-01-01T00:00:00.000Z"}
    # the first record in input order keeps the id / user name
    dup_id = next(d for d in letters if d["reason"] == Reason.DUPLICATE_USER_ID)
    assert dup_id["record"]["email"] == "dup-id@example.com"
    dup_name = next(d for d in letters if d["reason"] == Reason.DUPLICATE_USERNAME)
    assert dup_name["record"]["username"] == "given-dup"
    # hashes never appear in the detail text
    secrets = [
        d["record"]["passwordHash"]
        for d in letters
        if isinstance(d["record"], dict) and "passwordHash" in d["record"]
    ]
    secrets += [h for h in synthetic_run["hashes"].values()] + ["$2b$10$short"]
    assert not any(secret in d["detail"] for d in letters for secret in secrets if secret)


KEYCLOAK_ONLY = {Reason.UNSUPPORTED_HASH, Reason.PLAINTEXT_PASSWORD, Reason.DISABLED, Reason.SERVICE_ACCOUNT}
# Codes only push's validation of foreign bodies produces (tests/pipeline/test_push.py, test_validate.py).
NOT_FROM_AUTH0 = {Reason.INVALID_PASSWORD, Reason.INVALID_IDP_LINK}
# The user service path's own limit (tests/transforms/push/test_user_v2_sender.py).
NOT_FROM_AUTH0 |= {Reason.HASH_TOO_LONG_FOR_USER_V2}
# A table's own reasons, exercised in tests/transforms/sources/table/test_command.py.
NOT_FROM_AUTH0 |= {Reason.INVALID_FIELD_TYPE, Reason.BAD_PATH, Reason.MALFORMED_CSV}


def test_every_auth0_reason_code_is_exercised():
    from tests.scenarios.test_auth0_mfa_idps import MFA_REASONS  # exercised by the --mfa samples there
    from tests.transforms.sources.auth0.test_hashes import (
        HASH_REASONS,  # exercised by the hash-per-user export there
    )

    codes = {v for k, v in vars(Reason).items() if k.isupper()}
    covered = {reason for _, reason in EXPECTED_DEAD} | {Reason.UNREADABLE_INPUT}  # see test_unreadable_input
    covered |= {Reason.TOO_DEEP}  # see tests/scenarios/test_hostile_inputs.py
    covered |= {Reason.CONTROL_CHARACTERS, Reason.INVALID_EMAIL_FALLBACK}  # see test_bulk_import_shape
    assert codes - KEYCLOAK_ONLY - NOT_FROM_AUTH0 == covered | MFA_REASONS | HASH_REASONS


def test_unreadable_input(tmp_path):
    users = tmp_path / "u.json"
    users.write_text('[{"user_id": "auth0|1", "email": "a@example.com"}, {"user_id": ')
    rc, output, manifest = migrate(tmp_path, users, write_ndjson(tmp_path / "p.json", []))
    assert rc == 0 and manifest["counts"]["users_written"] == 1
    (letter,) = dead_letters(manifest, output.parent)
    assert letter["reason"] == Reason.UNREADABLE_INPUT and letter["source"] == "auth0-profile"
    assert letter["record"] == {"file": str(users), "position": 1}
    assert manifest["invariant"]["holds"] is True


def test_synthetic_summary_invariant_from_manifest(synthetic_run):
    manifest = synthetic_run["manifest"]
    counts = manifest["counts"]
    dead_profiles = sum(manifest["dead_letters_by_reason"].get("auth0-profile", {}).values())
    dead_passwords = sum(manifest["dead_letters_by_reason"].get("auth0-password", {}).values())
    assert counts["auth0.profiles_read"] == 20 + 20 + 2
    assert counts["auth0.profiles_read"] == counts["users_written"] + dead_profiles
    assert counts["auth0.passwords_read"] == counts["users_with_password"] + dead_passwords
    assert counts["users_written"] == sum(b["users"] for b in manifest["bodies"])
    assert manifest["dead_letter"]["count"] == len(EXPECTED_DEAD) == dead_profiles + dead_passwords
    assert counts["notes.phone-dropped"] == 1 and counts["notes.language-dropped"] == 1
    assert counts["auth0.password_conflicts"] == 1
    assert manifest["invariant"]["holds"] is True


def test_synthetic_users_keep_their_exact_hashes(synthetic_run, real_hash):
    users = {u["userId"]: u["user"] for u in body_users(synthetic_run["manifest"], synthetic_run["dir"])}
    got = {uid: u["hashedPassword"]["value"] for uid, u in users.items() if "hashedPassword" in u}
    assert got == synthetic_run["hashes"]
    password, _ = real_hash
    assert bcrypt.checkpw(
        password.encode(), users["auth0|aaa000000000000000000002"]["hashedPassword"]["value"].encode()
    )
    assert not bcrypt.checkpw(
        b"wrong", users["auth0|aaa000000000000000000002"]["hashedPassword"]["value"].encode()
    )


def test_synthetic_fixups_and_join(synthetic_run):
    users = {u["userId"]: u["user"] for u in body_users(synthetic_run["manifest"], synthetic_run["dir"])}
    assert users["auth0|aaa000000000000000000001"]["email"] == {"email": "Mixed.Case@Example.COM"}
    assert "hashedPassword" not in users["google-oauth2|1234"]
    phone_user = users["auth0|aaa000000000000000000003"]
    assert "phone" not in phone_user and phone_user["profile"]["preferredLanguage"] == "en"
    assert "preferredLanguage" not in users["auth0|aaa000000000000000000004"]["profile"]
    assert users["auth0|000000000000000000000000"]["email"] == {
        "email": "user0@example.com",
        "isEmailVerified": True,
    }
    assert users["auth0|000000000000000000000001"]["email"] == {
        "email": "user1@example.com"
    }  # source's false kept
    # a single body keeps the input order, as zitadel-tools does
    assert len(synthetic_run["manifest"]["bodies"]) == 1
    order = list(users)
    assert order[:3] == [
        "auth0|000000000000000000000000",
        "auth0|000000000000000000000001",
        "auth0|000000000000000000000002",
    ]


def test_outputs_are_private_files(synthetic_run):
    directory = synthetic_run["dir"]
    files = sorted(p.name for p in directory.iterdir())
    assert files == ["importBody.dead-letter.ndjson", "importBody.json", "importBody.manifest.json"]
    for name in files:
        assert stat.S_IMODE(os.stat(directory / name).st_mode) == 0o600, name


def test_strict_exits_1_with_dead_letters(synthetic_run, tmp_path, capsys):
    rc, _, manifest = migrate(tmp_path, synthetic_run["users"], synthetic_run["pws"], "--strict")
    assert rc == 1
    assert "--strict" in capsys.readouterr().err
    assert manifest["dead_letter"]["count"] == len(EXPECTED_DEAD)  # outputs are still written


def test_strict_exits_0_when_clean_and_beam_flags_pass_through(tmp_path):
    profiles, passwords, _ = plain_users(3)
    rc, output, manifest = migrate(
        tmp_path,
        write_ndjson(tmp_path / "u.json", profiles),
        write_ndjson(tmp_path / "p.json", passwords),
        "--strict",
        "--direct_running_mode=in_memory",
        "--direct_num_workers=1",
    )
    assert rc == 0 and manifest["dead_letter"]["count"] == 0


def test_include_blocked(tmp_path):
    profiles = [{"user_id": "auth0|1", "email": "b@example.com", "blocked": True}]
    rc, output, manifest = migrate(
        tmp_path,
        write_ndjson(tmp_path / "u.json", profiles),
        write_ndjson(tmp_path / "p.json", []),
        "--include-blocked",
    )
    assert rc == 0 and manifest["counts"]["users_written"] == 1


# --------------------------------------------------------------------------- layouts and globs


LAYOUT_PROFILES, LAYOUT_PASSWORDS, _ = plain_users(12, seed=3)


def _write_layout(path: Path, records, layout: str) -> Path:
    if layout == "ndjson":
        return write_ndjson(path, records)
    if layout == "ndjson-crlf-bom-blank":
        data = "\ufeff" + "".join(json.dumps(r) + "\r\n\r\n" for r in records)
        path.write_bytes(data.encode())
        return path
    if layout == "array":
        path.write_text(json.dumps(records, indent=2))
        return path
    if layout == "stream":  # several lines per record (what zitadel-tools' --multiline was for)
        path.write_text("\n".join(json.dumps(r, indent=2) for r in records))
        return path
    if layout == "ndjson.gz":
        return write_ndjson(path.with_suffix(".json.gz"), records, gz=True)
    if layout == "array.gz":
        gz = path.with_suffix(".json.gz")
        gz.write_bytes(gzip.compress(json.dumps(records).encode(), mtime=0))
        return gz
    raise AssertionError(layout)


@pytest.fixture(scope="module")
def ndjson_body(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("baseline")
    rc, output, _ = migrate(
        tmp, write_ndjson(tmp / "u.json", LAYOUT_PROFILES), write_ndjson(tmp / "p.json", LAYOUT_PASSWORDS)
    )
    assert rc == 0
    return output.read_bytes()


@pytest.mark.parametrize("layout", ["ndjson-crlf-bom-blank", "array", "stream", "ndjson.gz", "array.gz"])
def test_input_layouts_give_the_same_body(layout, tmp_path, ndjson_body):
    users = _write_layout(tmp_path / "users.json", LAYOUT_PROFILES, layout)
    pws = _write_layout(tmp_path / "passwords.json", LAYOUT_PASSWORDS, layout)
    rc, output, manifest = migrate(tmp_path, users, pws)
    assert rc == 0
    assert manifest["dead_letter"]["count"] == 0
    assert output.read_bytes() == ndjson_body


def test_globbed_inputs_mixing_layouts(tmp_path, ndjson_body):
    parts = tmp_path / "export"
    parts.mkdir()
    write_ndjson(parts / "users-1.json", LAYOUT_PROFILES[:4])
    _write_layout(parts / "users-2.json", LAYOUT_PROFILES[4:9], "array.gz")
    write_ndjson(parts / "users-3.json", LAYOUT_PROFILES[9:])
    write_ndjson(parts / "passwords-a.json", LAYOUT_PASSWORDS[6:], gz=True)
    _write_layout(parts / "passwords-b.json", LAYOUT_PASSWORDS[:6], "array")
    parts_gz = parts / "passwords-a.json"
    parts_gz.rename(parts / "passwords-a.json.gz")
    rc, output, manifest = migrate(tmp_path, parts / "users-*", parts / "passwords-*")
    assert rc == 0
    assert manifest["counts"]["auth0.profiles_read"] == 12 and manifest["counts"]["users_with_password"] == 12
    assert output.read_bytes() == ndjson_body  # same users in the same order


def test_multiline_output_and_timeout_normalised(tmp_path, ndjson_body):
    rc, output, manifest = migrate(
        tmp_path,
        write_ndjson(tmp_path / "u.json", LAYOUT_PROFILES),
        write_ndjson(tmp_path / "p.json", LAYOUT_PASSWORDS),
        "--multiline",
        "--timeout=30m",
    )
    assert rc == 0
    text = output.read_text()
    assert text.count("\n") > 50
    body = json.loads(text)
    assert body["timeout"] == "30m0s" and manifest["timeout"] == "30m0s"
    assert body["dataOrgs"] == json.loads(ndjson_body)["dataOrgs"]
    assert json.loads(ndjson_body)["timeout"] == "5m0s"  # the default


def test_metadata_flag(tmp_path):
    profiles = [
        {
            "user_id": "auth0|1",
            "email": "m@example.com",
            "user_metadata": {"plan": "pro"},
            "app_metadata": {"roles": ["admin"]},
        }
    ]
    rc, output, manifest = migrate(
        tmp_path,
        write_ndjson(tmp_path / "u.json", profiles),
        write_ndjson(tmp_path / "p.json", []),
        "--metadata",
    )
    assert rc == 0
    org = json.loads(output.read_bytes())["dataOrgs"]["orgs"][0]
    assert [(m["id"], m["key"]) for m in org["userMetadata"]] == [("auth0|1", "plan"), ("auth0|1", "roles")]
    assert manifest["counts"]["metadata_written"] == 2
    rc, output, _ = migrate(tmp_path, tmp_path / "u.json", tmp_path / "p.json", name="plain/importBody.json")
    assert "userMetadata" not in json.loads(output.read_bytes())["dataOrgs"]["orgs"][0]


# --------------------------------------------------------------------------- batches


def test_several_batches_manifest_and_byte_identical_rerun(tmp_path):
    profiles, passwords, hashes = plain_users(23, seed=5)
    users = write_ndjson(tmp_path / "u.json", profiles)
    pws = write_ndjson(tmp_path / "p.json", passwords)
    runs = []
    # the second run uses worker processes: same files, and the counts still come back
    for name, flags in (
        ("a", ()),
        ("b", ("--direct_running_mode=multi_processing", "--direct_num_workers=2")),
    ):
        rc, output, manifest = migrate(
            tmp_path, users, pws, "--batch-size=5", *flags, name=f"{name}/importBody.json"
        )
        assert rc == 0
        runs.append((output.parent, manifest))
    directory, manifest = runs[0]
    total = len(manifest["bodies"])
    assert total >= 5
    assert [b["path"] for b in manifest["bodies"]] == [
        f"importBody-{i:05d}-of-{total:05d}.json" for i in range(1, total + 1)
    ]
    assert not (directory / "importBody.json").exists()
    for body in manifest["bodies"]:
        data = (directory / body["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == body["sha256"]
        parsed = json.loads(data)
        assert len(parsed["dataOrgs"]["orgs"][0]["humanUsers"]) == body["users"] <= 5
        assert parsed["timeout"] == "5m0s" and parsed["dataOrgs"]["orgs"][0]["orgId"] == "123"
        assert stat.S_IMODE(os.stat(directory / body["path"]).st_mode) == 0o600
    got = body_users(manifest, directory)
    assert sorted(u["userId"] for u in got) == sorted(hashes)
    assert {u["userId"]: u["user"]["hashedPassword"]["value"] for u in got} == hashes
    assert manifest["counts"]["bodies_written"] == total
    # deterministic: a second run gives the same files, byte for byte
    other_dir, other = runs[1]
    assert other["bodies"] == manifest["bodies"] and other["counts"] == manifest["counts"]
    for body in manifest["bodies"]:
        assert (directory / body["path"]).read_bytes() == (other_dir / body["path"]).read_bytes()


def test_rerun_in_place_replaces_stale_outputs(tmp_path):
    profiles, passwords, _ = plain_users(7, seed=11)
    users = write_ndjson(tmp_path / "u.json", profiles)
    pws = write_ndjson(tmp_path / "p.json", passwords)
    rc, output, manifest = migrate(tmp_path, users, pws, "--batch-size=2")
    assert rc == 0 and len(manifest["bodies"]) >= 4
    rc, output, manifest = migrate(tmp_path, users, pws)
    assert rc == 0
    assert sorted(p.name for p in output.parent.iterdir()) == [
        "importBody.dead-letter.ndjson",
        "importBody.json",
        "importBody.manifest.json",
    ]
    assert manifest["bodies"][0]["users"] == 7
    rc, output, manifest = migrate(tmp_path, users, pws, "--batch-size=3")
    assert rc == 0
    assert sorted(p.name for p in output.parent.iterdir() if "-of-" in p.name) == [
        b["path"] for b in manifest["bodies"]
    ]
    assert not output.exists()


def test_custom_dead_letter_path(tmp_path):
    dead = tmp_path / "rejects" / "dead.ndjson"
    profiles = [{"user_id": "auth0|1", "email": "a@example.com"}, '{"bad"']
    rc, output, manifest = migrate(
        tmp_path,
        write_ndjson(tmp_path / "u.json", profiles),
        write_ndjson(tmp_path / "p.json", []),
        f"--dead-letter={dead}",
    )
    assert rc == 0
    assert [json.loads(line)["reason"] for line in dead.read_text().splitlines()] == [Reason.MALFORMED_JSON]
    assert stat.S_IMODE(os.stat(dead).st_mode) == 0o600
    assert manifest["dead_letter"] == {
        "path": str(dead),
        "count": 1,
        "sha256": hashlib.sha256(dead.read_bytes()).hexdigest(),
    }
    assert not output.with_name("importBody.dead-letter.ndjson").exists()


def test_empty_inputs_write_no_body(tmp_path):
    (tmp_path / "u.json").write_bytes(b"[]")
    (tmp_path / "p.json").write_bytes(b"")  # an empty password export is legitimate
    rc, output, manifest = migrate(tmp_path, tmp_path / "u.json", tmp_path / "p.json")
    assert rc == 0 and manifest["bodies"] == [] and not output.exists()
    assert manifest["counts"].get("users_written", 0) == 0


def test_empty_users_file_is_refused(tmp_path):
    # An empty (0-byte) users export is almost always a mistake: docs/inputs.md.
    (tmp_path / "u.json").write_bytes(b"")
    (tmp_path / "p.json").write_bytes(b"")
    rc, output, manifest = migrate(tmp_path, tmp_path / "u.json", tmp_path / "p.json")
    assert rc == 2 and manifest is None and not output.exists()


def test_corrupt_first_ndjson_line_does_not_lose_the_file(tmp_path):
    profiles = ['{"user_id": "auth0|0", "email": "broken@exa'] + [
        {"user_id": f"auth0|{i}", "email": f"u{i}@example.com"} for i in range(1, 4)
    ]
    rc, output, manifest = migrate(
        tmp_path, write_ndjson(tmp_path / "u.json", profiles), write_ndjson(tmp_path / "p.json", [])
    )
    assert rc == 0
    assert manifest["counts"].get("users_written", 0) == 3
    assert [d["reason"] for d in dead_letters(manifest, output.parent)] == [Reason.MALFORMED_JSON]


# --------------------------------------------------------------------------- command-line errors


@pytest.fixture
def inputs(tmp_path):
    profiles, passwords, _ = plain_users(1)
    return write_ndjson(tmp_path / "u.json", profiles), write_ndjson(tmp_path / "p.json", passwords)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--users={tmp}/missing.json"], "--users"),
        (["--passwords={tmp}/nothing-*.json"], "--passwords"),
        (["--timeout=abc"], "--timeout"),
        (["--timeout="], "--timeout"),
        (["--batch-size=0"], "--batch-size"),
        (["--batch-size=many"], "--batch-size"),
        (["--bogus-flag"], "--bogus-flag"),
        (["--org="], "--org"),
        (["--org=a b"], "--org"),
        (["--bcrypt-min-cost=12", "--bcrypt-max-cost=11"], "bcrypt"),
        (["--output={tmp}/dir/"], "--output"),
        (["--output={tmp}"], "is a directory"),
        (["--output={tmp}/u.json/body.json"], "is a file, not a folder"),  # parent is a file
        (["--dead-letter={tmp}/u.json/dead.ndjson"], "--dead-letter"),
        (["--users={tmp}"], "is a directory"),
        (["--runner=NoSuchRunner"], "--runner"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_flags_give_one_error_line_and_exit_2(flags, message, inputs, tmp_path, capsys):
    users, pws = inputs
    base = {
        "--org": "--org=123",
        "--users": f"--users={users}",
        "--passwords": f"--passwords={pws}",
        "--output": f"--output={tmp_path / 'o.json'}",
    }
    given = [f.format(tmp=tmp_path) for f in flags]
    for flag in given:
        base.pop(flag.split("=")[0], None)
    rc = main(["migrate", "auth0", *base.values(), *given])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("zitadel-beam: error: "), err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "o.manifest.json").exists()


def test_missing_org_and_command(capsys):
    for argv in (["migrate", "auth0"], ["migrate"], []):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("zitadel-beam: error: "), err


@pytest.mark.parametrize("flag", ["--timeout=abc", "--users=/does/not/exist.json", "--nope"])
def test_bad_flags_as_subprocess(flag, inputs, tmp_path):
    users, pws = inputs
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "migrate",
            "auth0",
            "--org=1",
            f"--users={users}",
            f"--passwords={pws}",
            f"--output={tmp_path / 'o.json'}",
            flag,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("zitadel-beam: error: "), proc.stderr
    assert proc.stdout == ""


def test_ndjson_byte_ranges_through_the_pipeline(tmp_path, monkeypatch, ndjson_body):
    """Tiny byte ranges (records straddle every boundary) give the same body as whole files."""
    from transforms.sources import json_units

    planned = []
    real_plan = json_units.plan_units

    def tiny_ranges(file, range_bytes=json_units.RANGE_BYTES):
        units = real_plan(file, range_bytes=37)
        planned.append(len(units))
        return units

    monkeypatch.setattr(json_units, "plan_units", tiny_ranges)  # the FnApiRunner runs DoFns in-process
    rc, output, manifest = migrate(
        tmp_path,
        write_ndjson(tmp_path / "u.json", LAYOUT_PROFILES),
        write_ndjson(tmp_path / "p.json", LAYOUT_PASSWORDS),
    )
    assert rc == 0
    assert len(planned) == 2 and min(planned) > 20
    assert manifest["counts"]["auth0.profiles_read"] == len(LAYOUT_PROFILES)
    assert output.read_bytes() == ndjson_body


def test_realworld_management_api_profiles(data_dir, tmp_path):
    ref = data_dir / "realworld" / "auth0"
    users, pws = ref / "clerk-auth0-users-api-shape.json", ref / "clerk-auth0-password-export-v1.1-array.json"
    rc, output, manifest = migrate(tmp_path, users, pws, "--metadata")
    assert rc == 0
    profiles = json.loads(users.read_bytes())
    blocked = {p["user_id"] for p in profiles if p.get("blocked") is True}
    written = {u["userId"] for u in body_users(manifest, output.parent)}
    assert written.isdisjoint(blocked)
    reasons = [d["reason"] for d in dead_letters(manifest, output.parent) if d["source"] == "auth0-profile"]
    assert reasons.count(Reason.BLOCKED) == len(blocked)
    assert manifest["invariant"]["holds"] is True
    assert manifest["counts"]["auth0.profiles_read"] == len(profiles) == len(written) + len(reasons)


def test_earlier_outputs_are_replaced_private(tmp_path, capsys):
    """An earlier run's own files (named in its manifest, sha256 unchanged) are replaced, mode 0600;
    files at those names that no manifest names are refused in tests/scenarios/test_outputs_guarded.py."""
    out = tmp_path / "out"
    profiles, passwords, _ = plain_users(2)
    users, pws = write_ndjson(tmp_path / "u.json", profiles), write_ndjson(tmp_path / "p.json", passwords)
    assert migrate(tmp_path, users, pws)[0] == 0
    for name in ("importBody.json", "importBody.manifest.json", "importBody.dead-letter.ndjson"):
        os.chmod(out / name, 0o644)
    rc, output, manifest = migrate(tmp_path, users, pws)
    assert rc == 0 and json.loads(output.read_bytes())["dataOrgs"]["orgs"][0]["orgId"] == "123"
    for name in ("importBody.json", "importBody.manifest.json", "importBody.dead-letter.ndjson"):
        assert stat.S_IMODE(os.stat(out / name).st_mode) == 0o600, name
    printed = capsys.readouterr().out
    assert "profiles read" in printed and "[ok]" in printed


# --------------------------------------------------------------------------- bulk-import shape


BULK = REPO / "tests" / "data" / "auth0-bulk" / "bulk-import-shape.json"


@pytest.mark.parametrize(
    "flags, written, dead",
    [
        # (extra flags, userNames written, dead-letter reasons) — every one of the 5 profiles accounted.
        (
            [],
            ["Ann.Lee@Example.com", "bo@example.com"],
            {Reason.MISSING_EMAIL: 1, Reason.MISSING_USER_ID: 1, Reason.CONTROL_CHARACTERS: 1},
        ),
        (
            ["--email-fallback={username}@users.example.test"],
            ["Ann.Lee@Example.com", "bo@example.com", "carol"],
            {Reason.MISSING_USER_ID: 1, Reason.CONTROL_CHARACTERS: 1},
        ),
        (
            ["--email-fallback={username} x@users.example.test"],
            ["Ann.Lee@Example.com", "bo@example.com"],
            {Reason.INVALID_EMAIL_FALLBACK: 1, Reason.MISSING_USER_ID: 1, Reason.CONTROL_CHARACTERS: 1},
        ),
    ],
    ids=["default", "fallback", "fallback-invalid"],
)
def test_bulk_import_shape(tmp_path, flags, written, dead):
    from transforms.mapping.ids import auth0_user_id

    runs = []
    for attempt in ("a", "b"):  # two runs: the derived ids must not change
        rc, _, manifest = migrate(
            tmp_path, BULK, Path("none"), "--metadata", *flags, name=f"{attempt}/importBody.json"
        )
        assert rc == 0 and manifest["invariant"]["holds"]
        runs.append(
            (body_users(manifest, tmp_path / attempt), dead_letters(manifest, tmp_path / attempt), manifest)
        )
    users, letters, manifest = runs[0]
    assert users == runs[1][0]
    assert sorted(u["user"]["userName"] for u in users) == sorted(written)
    reasons: dict[str, int] = {}
    for letter in letters:
        reasons[letter["reason"]] = reasons.get(letter["reason"], 0) + 1
    assert reasons == dead
    assert len(users) + len(letters) == 5  # every person in one place
    by_name = {u["user"]["userName"]: u for u in users}
    ann, bo = by_name["Ann.Lee@Example.com"], by_name["bo@example.com"]
    # Ids derived from the trimmed, case-folded e-mail; the bulk-import hashes kept.
    assert ann["userId"] == auth0_user_id("ann.lee@example.com")
    assert bo["userId"] == auth0_user_id("bo@example.com")
    assert bcrypt.checkpw(b"ann-password", ann["user"]["hashedPassword"]["value"].encode())
    assert bcrypt.checkpw(b"bo-password", bo["user"]["hashedPassword"]["value"].encode())
    # Metadata is written against the derived id, never an empty one.
    meta_ids = {
        m["id"]
        for body in manifest["bodies"]
        for m in json.loads((tmp_path / "a" / body["path"]).read_bytes())["dataOrgs"]["orgs"][0].get(
            "userMetadata", []
        )
    }
    assert meta_ids == {ann["userId"]}
    # Control characters removed from free-text names, counted.
    assert bo["user"]["profile"]["displayName"] == "Bo Chen" and bo["user"]["profile"]["nickName"] == "bo"
    assert manifest["control_chars_removed"] == 1
    assert manifest["derived_ids"] == 2
    if "carol" in by_name:
        assert by_name["carol"]["userId"] == "legacy-17"
        assert by_name["carol"]["user"]["email"] == {"email": "carol@users.example.test"}  # unverified
        assert "hashedPassword" not in by_name["carol"]["user"]
    assert manifest["email_fallback"] == (1 if "carol" in by_name else 0)
    for letter in letters:
        if letter["reason"] == Reason.MISSING_EMAIL:
            assert "--email-fallback" in letter["detail"]
        if letter["reason"] == Reason.INVALID_EMAIL_FALLBACK:
            assert "{username} x@users.example.test" in letter["detail"]
        if letter["reason"] == Reason.CONTROL_CHARACTERS:
            assert letter["detail"] == "email contains control character U+0000"


def test_email_fallback_template_errors_are_one_line(tmp_path, capsys):
    rc, _, manifest = migrate(tmp_path, BULK, Path("none"), "--email-fallback={name}@x.test")
    assert rc == 2 and manifest is None
    assert "unknown placeholder {name}" in capsys.readouterr().err
