"""``migrate supabase`` end to end (transforms/sources/supabase/command.py) and its mapping
(transforms/sources/supabase/mapping.py, read.py): the CLI on the bundled sample (examples/supabase/, psql's
``\\copy ... csv header`` of auth.users, auth.identities and auth.mfa_factors) field by field, every
carried hash verified against its documented password (docs/export-formats/samples/
supabase-passwords.md), Studio's CSV and JSON giving the same bodies, the refusals, push and verify
against the stand-in, and two ``--state`` nights in which a banned user is deactivated and a
soft-deleted one is removed."""

from __future__ import annotations

import csv
import datetime
import json
from pathlib import Path

from passwap_rules import verify
from repo_files import ROOT
from zitadel_fixtures import PAT, leaked_secrets
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.common.reasons import Reason
from transforms.hashing.policy import OnUnsupportedHash
from transforms.sources import supabase as sb
from transforms.sources.supabase.mapping import (
    ANONYMOUS,
    DELETED,
    MappedUser,
    Refusal,
    SupabaseOptions,
    map_user,
)

SAMPLE = ROOT / "examples" / "supabase"
USERS, IDENTITIES, FACTORS = (
    SAMPLE / "auth-users.csv",
    SAMPLE / "auth-identities.csv",
    SAMPLE / "mfa-factors.csv",
)
STUDIO = ROOT / "docs" / "export-formats" / "samples"
ORG = "123456789"
ALICE, BOB, CAROL, DAVE = (
    "6f1c2a3e-8d4b-4c1e-9a57-0b2d3e4f5a61",
    "a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d",
    "1e2d3c4b-5a69-4788-97a6-b5c4d3e2f101",
    "d4c3b2a1-0f9e-4d8c-b7a6-958473625140",
)
ERIN, FRANK, GUEST, HEIDI, IVAN = (
    "e1e2e3e4-e5e6-4e7e-8e9e-aeb0c0d0e0f0",
    "f0f1f2f3-f4f5-4f6f-8f9f-a0b0c0d0e0f1",
    "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
    "4a5b6c7d-8e9f-4a0b-8c1d-2e3f4a5b6c7d",
    "7c6b5a49-3827-4165-9f8e-7d6c5b4a3921",
)
# docs/export-formats/samples/supabase-passwords.md: the password of each sample hash.
PASSWORDS = {
    ALICE: "Sunflower-Alice-2024",
    BOB: "bob pass phrase 9",
    DAVE: "Dave!Banned#1",
    ERIN: "Grüße-Erin-∑",
}
ARGON2 = "SystemDefaults:\n  PasswordHasher:\n    Verifiers: [argon2]\n"


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on the bundled sample (tests/pipeline/test_migrate.py syncs with it)."""
    return [f"--users={USERS}", f"--identities={IDENTITIES}", f"--mfa-factors={FACTORS}"]


def _run(tmp_path: Path, *args: str, users: Path = USERS) -> tuple[int, dict | None]:
    output = tmp_path / "out" / "importBody.json"
    code = main(["migrate", "supabase", f"--org={ORG}", f"--users={users}", f"--output={output}", *args])
    manifest = tmp_path / "out" / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _org(tmp_path: Path, manifest: dict) -> dict:
    return json.loads((tmp_path / "out" / manifest["bodies"][0]["path"]).read_text())["dataOrgs"]["orgs"][0]


def _dead(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "out" / "importBody.dead-letter.ndjson"
    letters = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return {d["record"]["id"]: d["reason"] for d in letters}


def _config(tmp_path: Path) -> str:
    path = tmp_path / "zitadel.yaml"
    path.write_text(ARGON2)
    return f"--zitadel-config={path}"


def test_the_sample_converts_field_by_field_and_every_hash_verifies(tmp_path):
    code, manifest = _run(
        tmp_path,
        f"--identities={IDENTITIES}",
        f"--mfa-factors={FACTORS}",
        "--idp-map=google=3001",
        "--idp-map=github=3002",
        "--metadata",
        _config(tmp_path),
    )
    assert code == 0 and manifest is not None
    assert manifest["invariant"]["holds"] is True
    assert manifest["invariant"]["text"].startswith("users read 9 = written 5 + dead-lettered 4")
    assert _dead(tmp_path) == {
        DAVE: Reason.BLOCKED,  # banned until 2124
        FRANK: DELETED,  # soft-deleted: obfuscated e-mail, NULL hash
        GUEST: ANONYMOUS,
        HEIDI: Reason.MISSING_EMAIL,  # phone-only, no --email-fallback
    }
    org = _org(tmp_path, manifest)
    users = {u["userId"]: u["user"] for u in org["humanUsers"]}
    alice = users[ALICE]
    assert alice["userName"] == "alice@example.com"
    assert alice["profile"] == {"firstName": "Alice", "lastName": "Example", "displayName": "Alice Example"}
    assert alice["email"] == {"email": "alice@example.com", "isEmailVerified": True}
    assert alice["phone"] == {"phone": "+4915112345001", "isPhoneVerified": True}  # stored without '+'
    assert alice["otpCode"] == "TOCPDLHIPDVLLI6M6NINIBMTHY3FQ3X6"  # the verified TOTP factor
    assert users[BOB]["email"] == {"email": "bob@example.com", "isEmailVerified": False}  # unconfirmed
    assert "otpCode" not in users[ERIN]  # its factor is unverified and encrypted: counted
    carol = users[CAROL]
    assert "hashedPassword" not in carol  # encrypted_password ''
    assert carol["idps"] == [
        {"configId": "3001", "externalUserId": "107691503500061507151", "displayName": "carol@example.com"}
    ]
    erin = users[ERIN]
    assert erin["userName"] == "erin-gh"  # preferred_username of raw_user_meta_data
    assert erin["profile"]["firstName"] == "Erin" and erin["profile"]["lastName"] == "Müller"
    assert erin["idps"] == [
        {"configId": "3002", "externalUserId": "583231", "displayName": "erin@example.com"}
    ]
    assert users[IVAN]["email"]["isEmailVerified"] is False and "hashedPassword" not in users[IVAN]
    for user_id, password in PASSWORDS.items():
        if user_id in users:  # dave is banned
            assert verify(users[user_id]["hashedPassword"]["value"], password), user_id
            assert not verify(users[user_id]["hashedPassword"]["value"], password + "x"), user_id
    metadata = {(m["id"], m["key"]) for m in org["userMetadata"]}
    assert metadata == {(ALICE, "plan"), (CAROL, "picture"), (CAROL, "avatar_url"), (ERIN, "app.tenant")}
    counts = manifest["counts"]
    assert counts["supabase.with_password.bcrypt"] == 2 and counts["supabase.with_password.argon2id"] == 1
    assert counts["supabase.without_password"] == 2 and counts["cannot_sign_in.supabase"] == 1  # ivan
    assert counts["supabase.otp_not_carried.unverified"] == 1
    assert counts["supabase.idp_links.linked.google"] == 1 and counts["supabase.idp_links.linked.github"] == 1
    assert counts["supabase.side_rows.identities"] == 9 and counts["supabase.side_rows.mfa_factors"] == 2
    assert counts["supabase.phone_plus_added"] == 1 and counts["not_carried.supabase.invited_at"] == 1
    assert not [name for name in counts if name.startswith("unknown_field.supabase")]  # all 35 columns known


def test_studio_csv_and_json_give_the_bodies_psql_gives(tmp_path):
    bodies = []
    forms = [
        (USERS, IDENTITIES),
        (STUDIO / "supabase-auth-users-studio.csv", IDENTITIES),  # NULL written as 'null', CRLF
        (STUDIO / "supabase-auth-users-studio.json", STUDIO / "supabase-auth-identities-studio.json"),
    ]
    for number, (users, identities) in enumerate(forms):
        out = tmp_path / str(number)
        code, manifest = _run(
            out,
            f"--identities={identities}",
            "--idp-map=google=3001",
            "--include-blocked",
            _config(tmp_path),
            users=users,
        )
        assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
        assert manifest["counts"]["supabase.banned_written"] == 1
        org = _org(out, manifest)
        bodies.append(sorted(json.dumps(u, sort_keys=True) for u in org["humanUsers"]))
    assert bodies[0] == bodies[1] == bodies[2] and len(bodies[0]) == 6


def test_import_without_password_and_email_fallback_carry_heidi(tmp_path):
    code, manifest = _run(
        tmp_path, "--email-fallback={id}@users.invalid", "--on-unsupported-hash=import-without-password"
    )
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    heidi = {u["userId"]: u["user"] for u in _org(tmp_path, manifest)["humanUsers"]}[HEIDI]
    assert heidi["userName"] == "+4915112345002" and "hashedPassword" not in heidi  # $fbscrypt$
    assert heidi["email"] == {"email": f"{HEIDI}@users.invalid", "isEmailVerified": False}
    assert heidi["phone"] == {"phone": "+4915112345002", "isPhoneVerified": True}
    counts = manifest["counts"]
    assert counts["supabase.password_dropped.unsupported-hash"] == 1
    # erin's argon2: ZITADEL's default verifiers are bcrypt only
    assert counts["supabase.password_dropped.hash-verifier-disabled"] == 1


def _row(**cells: str) -> dict[str, str]:
    base = {"id": "u1", "email": "Ann@Example.com", "encrypted_password": "", "raw_user_meta_data": "{}"}
    return {**base, **cells}


def test_map_user_states_and_fields():
    options = SupabaseOptions()
    past = "2020-01-01 00:00:00+00"
    future = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).isoformat()
    assert isinstance(map_user(_row(banned_until=past), options), MappedUser)  # a past ban is over
    refused = map_user(_row(banned_until=future), options)
    assert isinstance(refused, Refusal) and refused.reason == Reason.BLOCKED
    assert isinstance(map_user(_row(banned_until="infinity"), options), Refusal)
    assert isinstance(map_user(_row(banned_until=future), SupabaseOptions(include_blocked=True)), MappedUser)
    deleted = map_user(_row(deleted_at=past), options)
    assert isinstance(deleted, Refusal) and deleted.reason == DELETED
    anonymous = map_user(_row(is_anonymous="true"), options)
    assert isinstance(anonymous, Refusal) and anonymous.reason == ANONYMOUS
    ann = map_user(
        _row(raw_user_meta_data='{"given_name": "Ann", "family_name": "Lee", "name": "A L"}'), options
    )
    assert isinstance(ann, MappedUser)
    assert ann.entry["user"] == {
        "userName": "ann@example.com",  # lower-cased as Supabase does
        "profile": {"firstName": "Ann", "lastName": "Lee", "displayName": "A L"},
        "email": {"email": "ann@example.com", "isEmailVerified": False},
    }
    local = map_user(_row(phone="0612345678"), options)  # not E.164 digits: dropped, counted
    assert isinstance(local, MappedUser) and "phone" not in local.entry["user"] and not local.phone_plus
    assert local.notes == ["phone-dropped"]
    bad = map_user(_row(raw_user_meta_data="{not json"), options)
    assert isinstance(bad, MappedUser) and bad.notes == [sb.INVALID_METADATA]


def test_encrypted_hashes_and_bcrypt_below_the_minimum_cost_are_never_imported():
    encrypted = '{"key_id":"k1","alg":"aes-gcm-hkdf","data":"3q2+7w0V","nonce":"AAECAwQFBgcICQoL"}'
    refused = map_user(_row(encrypted_password=encrypted), SupabaseOptions())
    assert isinstance(refused, Refusal) and refused.reason == Reason.UNSUPPORTED_HASH
    assert "k1" not in refused.detail and "3q2" not in refused.detail
    dropped = map_user(
        _row(encrypted_password=encrypted),
        SupabaseOptions(on_unsupported_hash=OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD),
    )
    assert isinstance(dropped, MappedUser) and "hashedPassword" not in dropped.entry["user"]
    # Supabase's own test vector (internal/crypto/password_test.go TestBcrypt, MIT): cost 4.
    cost4 = "$2y$04$mIJxfrCaEI3GukZe11CiXublhEFanu5.ododkll1WphfSp6pn4zIu"
    low = map_user(_row(encrypted_password=cost4), SupabaseOptions())
    assert isinstance(low, Refusal) and low.reason == Reason.BCRYPT_COST
    assert verify(cost4, "test")


def test_otp_factors_each_counted_by_cause():
    secret = "TOCPDLHIPDVLLI6M6NINIBMTHY3FQ3X6"
    factors = [
        {"factor_type": "totp", "status": "verified", "secret": secret, "created_at": "2024"},
        {"factor_type": "totp", "status": "verified", "secret": "JBSWY3DPEHPK3PXP", "created_at": "2023"},
        {"factor_type": "phone", "status": "verified", "secret": "", "created_at": ""},
        {"factor_type": "totp", "status": "verified", "secret": '{"key_id":"k"}', "created_at": ""},
    ]
    mapped = map_user(_row(), SupabaseOptions(), factors=factors)
    assert isinstance(mapped, MappedUser) and mapped.entry["user"]["otpCode"] == secret  # the newest
    assert sorted(mapped.otp_not_carried) == ["encrypted", "phone", "superseded"]


def test_a_sql_dump_and_other_tables_are_refused_in_one_line(tmp_path, capsys):
    dump = tmp_path / "auth.sql"
    dump.write_text("--\n-- PostgreSQL database dump\n--\nCOPY auth.users (instance_id, id) FROM stdin;\n")
    assert _run(tmp_path, users=dump)[0] == 2
    err = capsys.readouterr().err
    assert "a SQL dump" in err and "\\copy (select * from auth.users)" in err
    assert _run(tmp_path, users=IDENTITIES)[0] == 2
    assert "auth.identities" in capsys.readouterr().err
    out = tmp_path / "o" / "importBody.json"
    assert (
        main(
            [
                "migrate",
                "auth0",
                "--org=1",
                f"--users={STUDIO / 'supabase-auth-users-studio.json'}",
                f"--output={out}",
            ]
        )
        == 2
    )
    assert "migrate supabase --users reads it" in capsys.readouterr().err


def _night_file(path: Path, **changes: dict[str, str]) -> Path:
    rows = list(csv.DictReader(USERS.open(newline="")))
    for row in rows:
        row.update(changes.get(row["id"], {}))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_push_verify_and_state_nights_deactivate_a_banned_user_and_remove_a_deleted_one(
    tmp_path, monkeypatch, capsys
):
    token = tmp_path / "token"
    token.write_text(PAT)
    state = tmp_path / "state"
    with ZitadelServer(tokens={PAT}) as server:

        def night(users: Path) -> int:
            flags = [f"--state={state}", f"--push-url={server.url}", f"--token-file={token}"]
            flags += ["--on-removed=deactivate", "--max-removals=5", f"--identities={IDENTITIES}"]
            return _run(tmp_path, *flags, users=users)[0]

        assert night(USERS) == 0
        assert server.user_ids(ORG) == {ALICE, BOB, CAROL, IVAN}  # erin: argon2 not enabled
        monkeypatch.setenv("ZITADEL_TOKEN", PAT)
        manifest = tmp_path / "out" / "importBody.manifest.json"
        assert main(["verify", "--url", server.url, "--manifest", str(manifest)]) == 0
        banned = {"banned_until": "2124-01-01 00:00:00+00"}
        deleted = {"deleted_at": "2026-01-01 00:00:00+00", "encrypted_password": ""}
        assert night(_night_file(tmp_path / "day2" / "auth-users.csv", **{ALICE: banned, BOB: deleted})) == 0
        assert server.state.user_states[ALICE] == "inactive"
        # Gone at Supabase: --on-removed=deactivate (bob, unconfirmed, is initial: locked, docs/sync.md).
        assert server.state.user_states[BOB] in ("inactive", "locked")
        assert server.state.user_states[CAROL] in ("active", "initial")
    out, err = capsys.readouterr()
    assert leaked_secrets(out + err) == []


def test_one_row_object_a_line_and_damaged_side_rows_are_read_and_counted(tmp_path):
    rows = json.loads((STUDIO / "supabase-auth-users-studio.json").read_text())
    users = tmp_path / "users.ndjson"
    users.write_text("".join(json.dumps(row) + "\n" for row in rows))  # select row_to_json(u) ...
    identities = json.loads((STUDIO / "supabase-auth-identities-studio.json").read_text())
    side = tmp_path / "identities.ndjson"
    side.write_text("".join(json.dumps(row) + "\n" for row in identities) + '{"user_id": \n')
    factors = tmp_path / "factors.csv"
    factors.write_text(FACTORS.read_text() + ",,,totp,verified,,,JBSWY3DPEHPK3PXP,,,,,\n")  # no user_id
    code, manifest = _run(
        tmp_path, f"--identities={side}", f"--mfa-factors={factors}", "--idp-map=google=3001", users=users
    )
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    users_written = {u["userId"]: u["user"] for u in _org(tmp_path, manifest)["humanUsers"]}
    assert set(users_written) == {ALICE, BOB, CAROL, IVAN}
    assert users_written[CAROL]["idps"][0]["externalUserId"] == "107691503500061507151"
    assert users_written[ALICE]["otpCode"] == "TOCPDLHIPDVLLI6M6NINIBMTHY3FQ3X6"
    counts = manifest["counts"]
    assert counts["supabase.files.ndjson"] == 1
    assert counts["supabase.side_rows.identities"] == len(identities) + 1
    assert counts["supabase.side_unreadable.identities"] == 1  # the cut last line
    assert (
        counts["supabase.side_rows.mfa_factors"] == 3 and counts["supabase.side_unreadable.mfa_factors"] == 1
    )


def test_legacy_hashes_keep_fbscrypt_for_the_companion_which_verifies_it(tmp_path, capsys):
    from companion.verifiers import verify as companion_verify

    store = tmp_path / "legacy.ndjson"
    keep = [f"--legacy-hashes={store}", "--on-unsupported-hash=import-without-password"]
    code, manifest = _run(tmp_path, *keep, "--email-fallback={id}@users.invalid")
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    (record,) = [json.loads(line) for line in store.read_text().splitlines()]
    assert record["id"] == HEIDI and record["form"] == "firebase-scrypt"
    assert record["login_names"] == sorted({"+4915112345002", f"{HEIDI}@users.invalid"})
    assert record["params"]["rounds"] == 8 and record["params"]["mem_cost"] == 14
    # Supabase's own vector (internal/crypto/password_test.go TestFirebaseScrypt, MIT).
    assert companion_verify(record, "mytestpassword") and not companion_verify(record, "mytestpassword!")
    assert store.stat().st_mode & 0o777 == 0o600
    reset = [json.loads(line) for line in (tmp_path / "out" / "importBody.passwordless.ndjson").open()]
    assert [(r["id"], r["reason"]) for r in reset] == [(ERIN, Reason.HASH_VERIFIER_DISABLED)]
    assert leaked_secrets(capsys.readouterr().out) == []
    assert _run(tmp_path / "again", f"--legacy-hashes={tmp_path / 'other.ndjson'}")[0] == 2
    assert "--on-unsupported-hash=import-without-password" in capsys.readouterr().err
