"""``migrate clerk`` (transforms/sources/clerk/): the mapping's rules one by one, each Clerk hasher's
digest verified against its documented password, the TOTP secret compared by its codes, and the CLI
end to end on the bundled samples (examples/clerk/: the Dashboard CSV and the support ticket's JSON,
whose passwords are in docs/export-formats/samples/clerk-passwords.md), field by field."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import struct
from pathlib import Path

import pytest
from passwap_rules import verify
from repo_files import ROOT
from zitadel_fixtures import PAT, leaked_secrets
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.common.reasons import Reason
from transforms.hashing.forms import to_passwap
from transforms.hashing.policy import OnUnsupportedHash
from transforms.sources.clerk.mapping import (
    ClerkOptions,
    MappedUser,
    Refusal,
    clerk_hash,
    map_user,
    text,
    values,
)

CSV = ROOT / "examples" / "clerk" / "clerk-users.csv"
JSON = ROOT / "examples" / "clerk" / "clerk-support-export.json"
ALL_VERIFIERS = ROOT / "tests" / "data" / "zitadel-config" / "verifiers-enabled.yaml"
TOTP_SECRET = "CYU4EQT4Y2RIVKKKK675WNTJNEZBUVJP"  # clerk-passwords.md
# Each sample digest's documented password (docs/export-formats/samples/clerk-passwords.md).
PASSWORDS = {
    "user_2mXqA1bcrypt0TotpPhone01": "Clerk-bcrypt-Pw1!",
    "user_2mXqB2argon2idMultiMail2": "argon2id:Sécurité-2",
    "user_2mXqC3clerkPbkdf2Sha2563": "pbkdf2-clerk-3",
    "user_2mXqD4djangoPbkdf2Sha254": "django-pbkdf2-4",
    "user_2mXqE5clerkPbkdf2Sha1005": "sha1-hex-5",
    "user_2mXqF6md5InsecureLegacy6": "md5-legacy-6",
    "user_2gQPH11rXtJguHjsx7VtUo8QGh2": "ticket-bcrypt-1",
    "user_2gYfKk1Qq0argon2iLegacy004": "argon2i-legacy-4",
    "user_2gZgLl2Rr1phpassWordPres05": "test12345",
}


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on the bundled CSV (tests/pipeline/test_migrate.py syncs with it)."""
    return [
        f"--users={CSV}",
        f"--zitadel-config={ALL_VERIFIERS}",
        "--on-unsupported-hash=import-without-password",
    ]


def _sample_records(path: Path) -> dict[str, dict]:
    if path.suffix == ".json":
        return {r["id"]: r for r in json.loads(path.read_text())}
    import csv

    return {r["id"]: r for r in csv.DictReader(path.open(encoding="utf-8"))}


def _totp(secret: str, at: int) -> str:
    """RFC 6238 with ZITADEL's parameters (HMAC-SHA1, 6 digits, 30 s)."""
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    digest = hmac.new(key, struct.pack(">Q", at // 30), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return f"{(int.from_bytes(digest[offset : offset + 4], 'big') & 0x7FFFFFFF) % 1_000_000:06d}"


# --------------------------------------------------------------------------- cells


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("\t+4915112345678", "+4915112345678"),  # the guard Clerk puts before every phone
        ("\t=cmd", "=cmd"),
        ("\t-x", "-x"),
        ("\t@handle", "@handle"),
        ("\t\t+1", "\t+1"),  # exactly one TAB: the guard of a value that starts with a TAB
        ("+4915112345678", "+4915112345678"),  # not guarded (a JSON export): as it is
        ("Amelia", "Amelia"),
    ],
)
def test_the_formula_guard_is_stripped_exactly(cell, expected):
    assert text(cell) == expected.strip() or text(cell) == expected


def test_multi_valued_cells_split_on_comma_pipe_and_semicolon():
    assert values("a@x.com,b@x.com") == ["a@x.com", "b@x.com"]
    assert values("a@x.com|b@x.com") == ["a@x.com", "b@x.com"]
    assert values("\t+1555;\t+1666") == ["+1555", "+1666"]
    assert values(["a@x.com", "a@x.com", ""]) == ["a@x.com"]
    assert values(None) == [] and values("") == []


def _mapped(record: dict, **options) -> MappedUser:
    mapped = map_user(record, ClerkOptions(**options))
    assert isinstance(mapped, MappedUser), mapped
    return mapped


def test_the_primary_address_is_verified_only_when_it_is_in_the_verified_list():
    base = {"id": "user_1", "primary_email_address": "ann@example.com", "unverified_email_addresses": ""}
    verified = _mapped({**base, "verified_email_addresses": "old@example.com,ANN@example.com"})
    assert verified.entry["user"]["email"] == {"email": "ann@example.com", "isEmailVerified": True}
    other = _mapped({**base, "verified_email_addresses": "old@example.com"})
    assert other.entry["user"]["email"]["isEmailVerified"] is False
    phone = _mapped(
        {**base, "primary_phone_number": "\t+14155550123", "verified_phone_numbers": "\t+14155550999"}
    )
    assert phone.entry["user"]["phone"] == {"phone": "+14155550123", "isPhoneVerified": False}


def test_a_json_export_without_verified_lists_is_unverified_unless_trusted():
    record = {
        "id": "user_1",
        "email_addresses": "ann@example.com|ann@work.example",
        "phone_numbers": "+33612345678",
    }
    mapped = _mapped(record)
    assert mapped.entry["user"]["email"] == {"email": "ann@example.com", "isEmailVerified": False}
    assert mapped.entry["user"]["phone"]["isPhoneVerified"] is False
    assert (
        "clerk.primary_email_chosen" in mapped.counts and "clerk.other_emails_not_carried" in mapped.tallies
    )
    trusted = _mapped(record, trust_email=True, trust_phone=True)
    assert trusted.entry["user"]["email"]["isEmailVerified"] is True
    assert trusted.entry["user"]["phone"]["isPhoneVerified"] is True


def test_banned_and_locked_users_are_blocked_unless_included():
    for flag in ({"banned": True}, {"locked": "true"}):
        record = {"id": "user_1", "primary_email_address": "ann@example.com", **flag}
        refused = map_user(record, ClerkOptions())
        assert isinstance(refused, Refusal) and refused.reason == Reason.BLOCKED
        assert "clerk.blocked_written" in _mapped(record, include_blocked=True).tallies


def test_external_accounts_become_idp_links_for_mapped_providers():
    record = {
        "id": "user_1",
        "primary_email_address": "ann@example.com",
        "external_accounts": [
            {"provider": "oauth_google", "provider_user_id": "1089", "email_address": "ann@gmail.com"},
            {"provider": "oauth_github", "provider_user_id": "42"},
        ],
    }
    mapped = _mapped(record, idp_map=(("oauth_google", "idp-7"),))
    assert mapped.entry["user"]["idps"] == [
        {"configId": "idp-7", "externalUserId": "1089", "displayName": "ann@gmail.com"}
    ]
    assert "clerk.idp_links.linked.oauth_google" in mapped.counts
    assert "clerk.idp_links.unmapped.oauth_github" in mapped.counts


def test_the_totp_secret_gives_the_same_codes_in_zitadel():
    mapped = _mapped(
        {"id": "u", "primary_email_address": "a@example.com", "totp_secret": TOTP_SECRET.lower()}
    )
    written = mapped.entry["user"]["otpCode"]
    for at in (0, 1_700_000_000, 1_800_000_015):
        assert _totp(written, at) == _totp(TOTP_SECRET, at)
    bad = _mapped({"id": "u", "primary_email_address": "a@example.com", "totp_secret": "not base32!"})
    assert "otpCode" not in bad.entry["user"] and bad.tallies == ["clerk.otp_not_carried.unreadable-secret"]


# --------------------------------------------------------------------------- hashes


@pytest.mark.parametrize("path", [CSV, JSON], ids=["csv", "json"])
def test_every_digest_zitadel_verifies_verifies_its_documented_password(path):
    checked = 0
    for user_id, record in _sample_records(path).items():
        if user_id not in PASSWORDS:
            continue
        converted, outcome = clerk_hash(record["password_digest"], record["password_hasher"], None)
        assert outcome is not None and outcome.encoded is not None, (user_id, converted)
        assert verify(outcome.encoded, PASSWORDS[user_id]), user_id
        assert not verify(outcome.encoded, PASSWORDS[user_id] + "x"), user_id
        checked += 1
    assert checked == (6 if path == CSV else 3)


def test_clerks_pbkdf2_forms_are_read_by_their_hasher_not_by_their_django_look():
    records = _sample_records(CSV)
    for user_id in ("user_2mXqC3clerkPbkdf2Sha2563", "user_2mXqE5clerkPbkdf2Sha1005"):
        digest = records[user_id]["password_digest"]
        detected = to_passwap(digest)  # the prefix says Django: a hash that does not verify
        assert detected.encoded is None or not verify(detected.encoded, PASSWORDS[user_id])
        _, outcome = clerk_hash(digest, records[user_id]["password_hasher"], None)
        assert outcome is not None and verify(outcome.encoded or "", PASSWORDS[user_id])


@pytest.mark.parametrize(
    ("hasher", "digest", "reason"),
    [
        ("scrypt_firebase", "aGFzaA==$c2FsdA==$a2V5$Bw==$8$14", Reason.UNSUPPORTED_HASH),
        ("bcrypt_sha256_django", "bcrypt_sha256$$2b$12$" + "a" * 53, Reason.UNSUPPORTED_HASH),
        ("sha256", "6f" * 32, Reason.UNSUPPORTED_HASH),
        ("pbkdf2_sha512", "pbkdf2_sha512$1000$salt$abcd", Reason.UNSUPPORTED_HASH),
        ("bcrypt", "$2b$10$short", Reason.INVALID_HASH),
        ("pbkdf2_sha1", "pbkdf2_sha1$10000$salt$not-hex", Reason.INVALID_HASH),
        ("pbkdf2_sha256", "pbkdf2_sha256$100$!!$!!", Reason.INVALID_HASH),
        ("", "6f" * 32, Reason.UNSUPPORTED_HASH),  # no hasher: bcrypt only when it looks like one
    ],
)
def test_digests_zitadel_cannot_verify_take_the_unsupported_hash_path(hasher, digest, reason):
    record = {
        "id": "u",
        "primary_email_address": "a@example.com",
        "password_digest": digest,
        "password_hasher": hasher,
    }
    refused = map_user(record, ClerkOptions())
    assert isinstance(refused, Refusal) and refused.reason == reason
    assert digest not in refused.detail
    kept = _mapped(record, on_unsupported_hash=OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD)
    assert "hashedPassword" not in kept.entry["user"] and kept.dropped is not None


def test_the_awscognito_marker_is_no_hash_the_user_comes_without_password():
    record = {
        "id": "u",
        "primary_email_address": "a@example.com",
        "password_digest": "awscognito#eu-west-1_abc#client#sub",
        "password_hasher": "awscognito",
    }
    mapped = _mapped(record)
    assert "hashedPassword" not in mapped.entry["user"] and "clerk.awscognito_no_password" in mapped.counts


# --------------------------------------------------------------------------- the command


def _run(tmp_path: Path, *args: str) -> tuple[int, dict | None, dict, dict[str, str]]:
    out = tmp_path / "out"
    code = main(["migrate", "clerk", "--org=1", f"--output={out / 'importBody.json'}", *args])
    manifest_path = out / "importBody.manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    org = {}
    if manifest is not None and manifest["bodies"]:
        org = json.loads((out / manifest["bodies"][0]["path"]).read_text())["dataOrgs"]["orgs"][0]
    dead_path = out / "importBody.dead-letter.ndjson"
    dead = [json.loads(line) for line in dead_path.read_text().splitlines()] if dead_path.exists() else []
    return code, manifest, org, {d["record"]["id"]: d["reason"] for d in dead}


def test_the_dashboard_csv_converts_field_by_field_and_its_hashes_verify(tmp_path, capsys):
    code, manifest, org, dead = _run(tmp_path, f"--users={CSV}", f"--zitadel-config={ALL_VERIFIERS}")
    assert manifest is not None and manifest["invariant"]["holds"] is True
    assert manifest["invariant"]["text"].startswith("users read 8 = written 7 + dead-lettered 1")
    assert code == 0  # dead letters do not fail the run (--strict does)
    assert dead == {"user_2mXqH8scryptFirebase0008": Reason.UNSUPPORTED_HASH}
    users = {u["userId"]: u["user"] for u in org["humanUsers"]}
    amelia = users["user_2mXqA1bcrypt0TotpPhone01"]
    assert amelia["userName"] == "amelia"
    assert amelia["profile"] == {"firstName": "Amelia", "lastName": "Brandt"}
    assert amelia["email"] == {"email": "amelia.brandt@example.com", "isEmailVerified": True}
    assert amelia["phone"] == {"phone": "+4915112345678", "isPhoneVerified": True}  # TAB guard stripped
    assert _totp(amelia["otpCode"], 1_750_000_000) == _totp(TOTP_SECRET, 1_750_000_000)
    bastien = users["user_2mXqB2argon2idMultiMail2"]
    assert bastien["userName"] == "bastien@example.fr"  # no username: the primary e-mail
    assert bastien["profile"]["lastName"] == "Lefèvre" and bastien["email"]["isEmailVerified"] is True
    dmitri = users["user_2mXqD4djangoPbkdf2Sha254"]
    assert dmitri["phone"] == {"phone": "+14155550123", "isPhoneVerified": False}  # only unverified
    grace = users["user_2mXqG7oauthOnlyNoPasswd7"]
    assert grace["email"] == {"email": "grace.unverified@example.org", "isEmailVerified": False}
    assert "hashedPassword" not in grace and grace["profile"]["firstName"] == "Grace"
    for user_id, password in PASSWORDS.items():
        if user_id in users:
            assert verify(users[user_id]["hashedPassword"]["value"], password), user_id
    counts = manifest["counts"]
    assert counts["clerk.users_read"] == 8 and counts["users_written"] == 7
    assert counts["clerk.password_hasher.pbkdf2_sha1"] == 1 and counts["clerk.no_password_in_export"] == 1
    assert counts["clerk.other_emails_not_carried"] == 1 and counts["cannot_sign_in.clerk"] == 1
    assert not [name for name in counts if name.startswith(("unknown_field.clerk", "not_carried.clerk"))]
    assert "password_hasher pbkdf2_sha256" in capsys.readouterr().out


def test_the_support_json_carries_metadata_and_lists_the_passwordless(tmp_path):
    code, manifest, org, dead = _run(
        tmp_path,
        f"--users={JSON}",
        f"--zitadel-config={ALL_VERIFIERS}",
        "--metadata",
        "--on-unsupported-hash=import-without-password",
    )
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True and dead == {}
    users = {u["userId"]: u["user"] for u in org["humanUsers"]}
    assert len(users) == 6
    jessica = users["user_2gRua7G8WRYBglzXE5sxRbIRkfJ"]  # "a|b": the first, unverified, never "a|b"
    assert jessica["email"] == {"email": "jessica@example.com", "isEmailVerified": False}
    assert "hashedPassword" not in jessica and jessica["phone"]["phone"] == "+33612345678"
    assert users["user_2gXEmg00DCV77CHNO4aa3q8ZYRf"]["profile"] == {"firstName": "vlad", "lastName": "vlad"}
    leto = users["user_2gYfKk1Qq0argon2iLegacy004"]
    assert leto["otpCode"] == TOTP_SECRET
    for user_id in (
        "user_2gQPH11rXtJguHjsx7VtUo8QGh2",
        "user_2gYfKk1Qq0argon2iLegacy004",
        "user_2gZgLl2Rr1phpassWordPres05",
    ):
        assert verify(users[user_id]["hashedPassword"]["value"], PASSWORDS[user_id]), user_id
    metadata = {(m["id"], m["key"]): base64.b64decode(m["value"]).decode() for m in org["userMetadata"]}
    assert metadata == {
        ("user_2gQPH11rXtJguHjsx7VtUo8QGh2", "public_metadata.plan"): "pro",
        ("user_2gQPH11rXtJguHjsx7VtUo8QGh2", "private_metadata.stripe_customer"): "cus_Q1",
        ("user_2gRua7G8WRYBglzXE5sxRbIRkfJ", "unsafe_metadata.theme"): "dark",
        ("user_2gYfKk1Qq0argon2iLegacy004", "public_metadata.roles"): '["admin","billing"]',
        ("user_2gZgLl2Rr1phpassWordPres05", "private_metadata.wp_user_id"): "42",
    }
    listed = (tmp_path / "out" / "importBody.passwordless.ndjson").read_text().splitlines()
    assert sorted(json.loads(line)["id"] for line in listed) == [
        "user_2gRua7G8WRYBglzXE5sxRbIRkfJ",
        "user_2gXEmg00DCV77CHNO4aa3q8ZYRf",
    ]
    counts = manifest["counts"]
    assert counts["clerk.password_dropped.unsupported-hash"] == 2
    assert counts["clerk.primary_email_chosen"] == 1
    # username/totp_secret/password_* null for users without: not counted as data
    assert not [name for name in counts if name.startswith("unknown_field.clerk")]


def test_the_cli_export_envelope_with_banned_users_and_external_accounts(tmp_path):
    export = tmp_path / "clerk-export.json"
    users = [
        {
            "id": "user_A",
            "primary_email_address": "ann@example.com",
            "verified_email_addresses": ["ann@example.com"],
            "unverified_email_addresses": [],
            "external_accounts": [{"provider": "oauth_google", "provider_user_id": "1089"}],
            "public_metadata": {},
        },
        {"id": "user_B", "primary_email_address": "bo@example.com", "banned": True},
    ]
    export.write_text(json.dumps({"clerkMigrate": 1, "source": "clerk", "users": users}, indent=1))
    code, manifest, org, dead = _run(tmp_path, f"--users={export}", "--idp-map=oauth_google=idp-7")
    assert manifest is not None and manifest["invariant"]["holds"] is True
    assert dead == {"user_B": Reason.BLOCKED}
    (ann,) = org["humanUsers"]
    assert ann["user"]["idps"] == [{"configId": "idp-7", "externalUserId": "1089", "displayName": "1089"}]
    assert ann["user"]["email"]["isEmailVerified"] is True
    code, manifest, org, dead = _run(tmp_path, f"--users={export}", "--include-blocked")
    assert code == 0 and dead == {} and len(org["humanUsers"]) == 2
    assert manifest is not None and manifest["counts"]["clerk.blocked_written"] == 1


def test_other_readers_refuse_clerk_exports_naming_migrate_clerk(tmp_path, capsys):
    out = tmp_path / "out" / "importBody.json"
    assert main(["migrate", "auth0", "--org=1", f"--users={JSON}", f"--output={out}"]) == 2
    assert "migrate clerk --users reads it" in capsys.readouterr().err


@pytest.mark.parametrize(
    "content",
    ['[{"user_id": "auth0|1", "email": "a@example.com"}]', "login,email\nann,ann@example.com\n"],
)
def test_a_file_that_is_not_a_clerk_export_is_one_line(tmp_path, capsys, content):
    other = tmp_path / "users.txt"
    other.write_text(content)
    code, *_ = _run(tmp_path, f"--users={other}")
    assert code == 2
    err = capsys.readouterr().err
    assert "Auth0" in err or "not a Clerk user export" in err


def test_an_argon2_hash_below_the_targets_memory_limit_is_refused_with_the_limit_to_change():
    from transforms.hashing.policy import load_policy

    digest = "$argon2id$v=19$m=64,t=4,p=8$Z2liZXJyaXNo$" + "A" * 43  # Clerk's example's parameters
    refused, outcome = clerk_hash(digest, "argon2id", load_policy(str(ALL_VERIFIERS)))
    assert refused.reason == Reason.HASH_OUT_OF_LIMITS and "MinMemory" in refused.detail
    assert outcome is not None and outcome.encoded is None


def test_a_csv_with_a_bom_and_columns_beyond_clerks_counts_them_as_not_carried(tmp_path):
    export = tmp_path / "clerk.csv"
    export.write_text(
        "\ufeffid,first_name,last_name,username,primary_email_address,verified_email_addresses,"
        "password_digest,password_hasher,created_at,banned,shoe_size\n"
        "user_1,Ann,Lee,,ann@example.com,ann@example.com,,,2024-01-01,false,38\n"
        "user_2,Bo,Ek,,bo@example.com,,,,,true,\n",
        encoding="utf-8",
    )
    code, manifest, org, dead = _run(tmp_path, f"--users={export}")
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    assert [u["userId"] for u in org["humanUsers"]] == ["user_1"] and dead == {"user_2": Reason.BLOCKED}
    counts = manifest["counts"]
    assert counts["not_carried.clerk.created_at"] == 1 and counts["unknown_field.clerk.shoe_size"] == 1


def test_push_and_state_nights_deactivate_a_user_banned_at_clerk(tmp_path, capsys):
    token = tmp_path / "token"
    token.write_text(PAT)
    state = tmp_path / "state"
    amelia = "user_2mXqA1bcrypt0TotpPhone01"  # bcrypt: active once imported
    banned = tmp_path / "day2" / "clerk-users.csv"
    banned.parent.mkdir()
    lines = CSV.read_text(encoding="utf-8").splitlines()
    banned.write_text(
        "\n".join(
            [lines[0] + ",banned"]
            + [f"{line},{'true' if line.startswith(amelia) else ''}" for line in lines[1:]]
        )
        + "\n",
        encoding="utf-8",
    )
    with ZitadelServer(tokens={PAT}) as server:

        def night(users: Path) -> int:
            flags = (f"--state={state}", f"--push-url={server.url}", f"--token-file={token}")
            # ZITADEL's default verifies bcrypt only: the others come without a password, listed.
            return _run(
                tmp_path, f"--users={users}", "--on-unsupported-hash=import-without-password", *flags
            )[0]

        assert night(CSV) == 0
        assert len(server.user_ids("1")) == 8
        assert server.state.user_states[amelia] == "active"
        assert night(banned) == 0
        assert server.state.user_states[amelia] == "inactive"
        assert server.state.user_states["user_2mXqC3clerkPbkdf2Sha2563"] in ("active", "initial")
    out, err = capsys.readouterr()
    assert leaked_secrets(out + err) == []
