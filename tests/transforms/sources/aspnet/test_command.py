"""``migrate aspnet`` (transforms/sources/aspnet/): the mapping of one AspNetUsers row, and the CLI
end to end on the bundled sample (examples/aspnet/: ASP.NET Core Identity as SSMS saves it, with
its AspNetUserLogins, AspNetUserTokens and AspNetUserClaims) and on the same users as psql's
``\\copy`` writes them and an Identity 2 table (tests/data/aspnet/): field by field, every hash
verified against its documented password (docs/export-formats/samples/aspnet-passwords.md), the
authenticator key compared by its TOTP codes, and two ``--state`` nights in which a user locked out
at the source is deactivated in ZITADEL."""

from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import json
import re
import struct
import time
from pathlib import Path

import passwap_rules
import pytest
from repo_files import ROOT
from zitadel_fixtures import PAT, leaked_secrets
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.common.reasons import Reason
from transforms.hashing.policy import OnUnsupportedHash, load_policy
from transforms.mapping.validate import ValidationOptions
from transforms.sources.aspnet import table_of
from transforms.sources.aspnet.mapping import AspnetOptions, MappedUser, Refusal, Side, canonical, map_row

SAMPLE = ROOT / "examples" / "aspnet"
DATA = ROOT / "tests" / "data" / "aspnet"
VERIFIERS = ROOT / "tests" / "data" / "zitadel-config" / "verifiers-enabled.yaml"
ORG = "123456789"
AMY, BO, CY = (
    "5b2f0c7e-3a41-4f8e-9d61-2c7b1e0a9f31",
    "8c1d4e2f-6b7a-4c3d-8e9f-0a1b2c3d4e5f",
    "9d2e5f3a-7c8b-4d4e-9f0a-1b2c3d4e5f6a",
)
DI, ED, FOX = (
    "ae3f6a4b-8d9c-4e5f-8a1b-2c3d4e5f6a7b",
    "bf4a7b5c-9e0d-4f6a-9b2c-3d4e5f6a7b8c",
    "c05b8c6d-0f1e-4a7b-8c3d-4e5f6a7b8c9d",
)
ANNA, BERT, CLEO = (
    "0a6b9c7d-1f2e-4b8c-9d4e-5f6a7b8c9d0e",
    "1b7c0d8e-2a3f-4c9d-8e5f-6a7b8c9d0e1f",
    "2c8d1e9f-3b4a-4dae-9f6a-7b8c9d0e1f2a",
)
# docs/export-formats/samples/aspnet-passwords.md
PASSWORDS = {
    AMY: "Amy#Core2025",
    BO: "Bo-legacy-v3!",
    CY: "Cy compat v2",
    DI: "Di-locked-9",
    ED: "Ed-lockout-disabled",
    ANNA: "Identity2-Anna!",
    BERT: "Identity2-Bert?",
}
AMY_KEY = "OYW65GLFAGPSHPQSR5RQAYT7XV2KCX53"
SIDE = [
    f"--logins={SAMPLE / 'AspNetUserLogins.csv'}",
    f"--tokens={SAMPLE / 'AspNetUserTokens.csv'}",
    f"--claims={SAMPLE / 'AspNetUserClaims.csv'}",
    f"--zitadel-config={VERIFIERS}",  # ZITADEL's default verifies bcrypt only; these are PBKDF2
]
NOW = time.time()


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on the bundled sample (tests/pipeline/test_migrate.py syncs with it)."""
    return [f"--users={SAMPLE / 'AspNetUsers.csv'}", *SIDE]


# --------------------------------------------------------------------------- one row


def _row(**cells: str) -> dict[str, str]:
    base = {
        "Id": "u1",
        "UserName": "ann",
        "Email": "ann@example.com",
        "EmailConfirmed": "1",
        "LockoutEnabled": "1",
    }
    return canonical({**base, **cells})


def _map(cells: dict[str, str], side: Side | None = None, **options) -> MappedUser | Refusal:
    return map_row(cells, side or Side(), AspnetOptions(now=NOW, **options))


def _user(cells: dict[str, str], side: Side | None = None, **options) -> dict:
    mapped = _map(cells, side, **options)
    assert isinstance(mapped, MappedUser), mapped
    return mapped.entry["user"]  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("end", "enabled", "locked"),
    [
        ("9999-12-31 23:59:59.9999999 +00:00", "1", True),  # DateTimeOffset.MaxValue, SQL Server
        ("infinity", "t", True),  # the same through Npgsql
        ("2126-03-01 10:00:00.000", "True", True),  # Identity 2's LockoutEndDateUtc: UTC, no offset
        ("2126-01-01T00:00:00Z", "1", True),
        ("2126-01-01 00:00:00+00", "0", False),  # LockoutEnabled off: never locked
        ("2025-01-01 08:00:00.0000000 +00:00", "1", False),  # a lockout that ended
        ("NULL", "1", False),
    ],
)
def test_locked_out_is_identitys_rule_lockout_enabled_and_an_end_not_before_now(end, enabled, locked):
    cells = _row(LockoutEnd=end, LockoutEnabled=enabled)
    refused = _map(cells)
    assert isinstance(refused, Refusal) == locked
    if locked:
        assert isinstance(refused, Refusal) and refused.reason == Reason.BLOCKED and refused.locked
    written = _map(cells, include_blocked=True)
    assert isinstance(written, MappedUser) and written.locked is locked


def test_an_unreadable_lockout_end_or_bit_is_a_dead_letter_with_its_reason():
    late = _map(_row(LockoutEnd="1/1/2126 12:00:00 AM +00:00"))  # PowerShell's culture-bound text
    assert (
        isinstance(late, Refusal) and late.reason == Reason.INVALID_FIELD_TYPE and "LockoutEnd" in late.detail
    )
    odd = _map(_row(EmailConfirmed="maybe"))
    assert isinstance(odd, Refusal) and odd.reason == Reason.INVALID_FIELD_TYPE


@pytest.mark.parametrize(
    ("text", "phone", "cause"),
    [
        ("+49 151 12345004", "+4915112345004", None),
        ("0049 (151) 123-45004", "+4915112345004", None),  # 00: the international prefix
        ("+1 555 0100", "+15550100", None),
        ("015112345005", None, "no-country-code"),  # no region to guess it from
        ("(555) 010-0100", None, "no-country-code"),
        ("+49 151 123 ext 4", None, "not-e164"),
    ],
)
def test_phone_numbers_are_carried_as_e164_or_counted(text, phone, cause):
    mapped = _map(_row(PhoneNumber=text, PhoneNumberConfirmed="t"))
    assert isinstance(mapped, MappedUser)
    user = mapped.entry["user"]
    assert isinstance(user, dict)
    assert user.get("phone") == ({"phone": phone, "isPhoneVerified": True} if phone else None)
    assert mapped.phone_cause == cause
    assert ("phone-dropped" in mapped.notes) is (cause is not None)


def test_verified_flags_booleans_of_every_tool_and_null():
    for yes, no in (("1", "0"), ("t", "f"), ("True", "False"), ("true", "NULL")):
        user = _user(_row(EmailConfirmed=yes, PhoneNumber="+15550100", PhoneNumberConfirmed=no))
        assert user["email"] == {"email": "ann@example.com", "isEmailVerified": True}
        assert user["phone"]["isPhoneVerified"] is False
    fallback = _user(_row(Email="NULL"), email_fallback="{id}@users.invalid")
    assert fallback["email"] == {"email": "u1@users.invalid", "isEmailVerified": False}


def test_columns_are_read_by_name_whatever_their_case_or_underscores():
    cells = canonical({"id": "u9", "user_name": "zed", "EMAIL": "z@example.com", "email_confirmed": "t"})
    assert cells == {"Id": "u9", "UserName": "zed", "Email": "z@example.com", "EmailConfirmed": "t"}
    assert _user(cells)["email"]["isEmailVerified"] is True


def test_names_from_the_apps_columns_before_claims_and_the_rest_as_metadata():
    side = Side(
        claims=[
            ("http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname", "Annie"),
            ("http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname", "Lee"),
            ("locale", "de-CH"),
            ("role", "admin"),
            ("role", "editor"),
        ]
    )
    mapped = _map(_row(FirstName="Ann", WarehouseId="7"), side, metadata=True)
    assert isinstance(mapped, MappedUser)
    user = mapped.entry["user"]
    assert isinstance(user, dict)
    assert user["profile"] == {"firstName": "Ann", "lastName": "Lee", "preferredLanguage": "de"}
    metadata = {m["key"]: base64.b64decode(m["value"]).decode() for m in mapped.metadata}
    assert metadata == {"WarehouseId": "7", "role": '["admin","editor"]'}
    assert mapped.claims_used == 4  # surname, locale, and both role claims (givenname: a column won)
    display = _user(_row(), Side(claims=[("name", "Mary Ann Lee")]))
    assert display["profile"] == {"firstName": "Mary Ann", "lastName": "Lee", "displayName": "Mary Ann Lee"}
    assert _user(_row())["profile"] == {"firstName": "ann", "lastName": "ann"}  # no names: the UserName


def test_the_authenticator_key_is_the_totp_secret_only_when_two_factor_is_on():
    key = {("[AspNetUserStore]", "AuthenticatorKey"): "oyw6 5glf agps hpqs r5rq ayt7 xv2k cx53"}
    on = _map(_row(TwoFactorEnabled="1"), Side(tokens=key))
    assert isinstance(on, MappedUser) and on.entry["user"]["otpCode"] == AMY_KEY  # type: ignore[index]
    off = _map(_row(TwoFactorEnabled="0"), Side(tokens=key))
    assert isinstance(off, MappedUser) and "otpCode" not in off.entry["user"]  # type: ignore[operator]
    assert off.otp_not_carried == ["two-factor-off"]
    # Identity 2's TwoFactorEnabled: e-mail or SMS codes, no key to carry.
    none = _map(_row(TwoFactorEnabled="1"))
    assert isinstance(none, MappedUser) and none.otp_not_carried == ["no-authenticator-key"]
    protected = {("[AspNetUserStore]", "AuthenticatorKey"): "CfDJ8N+protected=="}
    bad = _map(_row(TwoFactorEnabled="1"), Side(tokens=protected))
    assert isinstance(bad, MappedUser) and bad.otp_not_carried == ["not-base32"]


def test_hashes_the_target_refuses_follow_on_unsupported_hash():
    # aspnetcore's own test vector: v3 HMAC-SHA512 with 50 iterations, under ZITADEL's 1000.
    weak = "AQAAAAIAAAAyAAAAEOMwvh3+FZxqkdMBz2ekgGhwQ4B6pZWND6zgESBuWiHw"
    policy = load_policy(str(VERIFIERS))
    validation = ValidationOptions(
        allowed_hash_families=("bcrypt", "argon2", "pbkdf2", "other"), hash_policy=policy
    )
    refused = _map(_row(PasswordHash=weak), validation=validation)
    assert isinstance(refused, Refusal) and refused.reason == Reason.HASH_OUT_OF_LIMITS
    kept = _map(
        _row(PasswordHash=weak),
        validation=validation,
        on_unsupported_hash=OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD,
    )
    assert isinstance(kept, MappedUser) and "hashedPassword" not in kept.entry["user"]  # type: ignore[operator]
    assert kept.dropped_hash is not None and kept.dropped_hash.reason == Reason.HASH_OUT_OF_LIMITS


def test_tables_are_told_by_their_header():
    assert table_of(b"Id,UserName,NormalizedUserName,Email,LockoutEnd\r\n") == "core"
    assert table_of(b"\xef\xbb\xbfId,Email,LockoutEndDateUtc,UserName\n") == "identity2"
    assert table_of(b"LoginProvider,ProviderKey,ProviderDisplayName,UserId\n") == "logins"
    assert table_of(b"user_id,login_provider,name,value\n") == "tokens"
    assert table_of(b"Id,UserId,ClaimType,ClaimValue\n") == "claims"
    assert table_of(b"5b2f0c7e,amy@example.com,AMY@EXAMPLE.COM\n") is None  # bcp: no header


# --------------------------------------------------------------------------- the command


def _run(tmp_path: Path, users: Path, *args: str) -> tuple[int, dict | None]:
    output = tmp_path / "out" / "importBody.json"
    code = main(["migrate", "aspnet", f"--org={ORG}", f"--users={users}", f"--output={output}", *args])
    manifest = tmp_path / "out" / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _org(tmp_path: Path, manifest: dict) -> dict:
    return json.loads((tmp_path / "out" / manifest["bodies"][0]["path"]).read_text())["dataOrgs"]["orgs"][0]


def _dead(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "out" / "importBody.dead-letter.ndjson"
    letters = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return {d["record"]["id"]: d["reason"] for d in letters}


def _totp(key: bytes, at: float) -> str:
    """RFC 6238 as ASP.NET's AuthenticatorTokenProvider computes it: HMAC-SHA1, 30 s, 6 digits."""
    digest = hmac.new(key, struct.pack(">Q", int(at) // 30), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return f"{(struct.unpack('>I', digest[offset : offset + 4])[0] & 0x7FFFFFFF) % 1_000_000:06d}"


def _aspnet_base32(text: str) -> bytes:
    """aspnetcore's Base32.FromBase32: upper-cased, '=' trimmed, RFC 4648 letters."""
    bits = "".join(f"{'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.index(c):05b}" for c in text.rstrip("=").upper())
    return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits) - 7, 8))


def test_the_sample_converts_field_by_field_and_every_hash_verifies(tmp_path, capsys):
    code, manifest = _run(
        tmp_path,
        SAMPLE / "AspNetUsers.csv",
        *SIDE,
        "--idp-map=Google=281234567890",
        "--metadata",
    )
    assert code == 0 and manifest is not None
    assert manifest["invariant"]["holds"] is True
    assert manifest["invariant"]["text"].startswith("users read 6 = written 5 + dead-lettered 1")
    assert _dead(tmp_path) == {DI: Reason.BLOCKED}  # LockoutEnd DateTimeOffset.MaxValue
    users = {u["userId"]: u["user"] for u in _org(tmp_path, manifest)["humanUsers"]}
    for user_id, user in users.items():
        if user_id != FOX:
            assert passwap_rules.verify(user["hashedPassword"]["value"], PASSWORDS[user_id]), user_id
            assert not passwap_rules.verify(user["hashedPassword"]["value"], PASSWORDS[user_id] + "x")
    amy = users[AMY]
    assert amy["userName"] == "amy@example.com"
    assert amy["profile"] == {"firstName": "Amy", "lastName": "Adams"}  # given_name, family_name claims
    assert amy["email"] == {"email": "amy@example.com", "isEmailVerified": True}
    assert amy["phone"] == {"phone": "+4915112345004", "isPhoneVerified": True}
    assert amy["hashedPassword"]["value"].startswith("$pbkdf2-sha512$100000$")  # v3, .NET 7+
    # The TOTP secret gives the codes the source's authenticator gave, now and around it.
    for at in (NOW - 30, NOW, NOW + 30, 1_700_000_000):
        assert _totp(base64.b32decode(amy["otpCode"]), at) == _totp(_aspnet_base32(AMY_KEY), at)
    assert "idps" not in amy  # Microsoft: no --idp-map for it
    bo = users[BO]
    assert bo["userName"] == "bo" and bo["profile"] == {"firstName": "bo", "lastName": "bo"}
    assert bo["email"] == {"email": "bo@example.com", "isEmailVerified": False}
    assert bo["hashedPassword"]["value"].startswith("$pbkdf2-sha256$10000$")  # v3, ASP.NET Core 2-6
    cy = users[CY]
    assert cy["profile"]["firstName"] == "Cy"  # the long givenname claim URI
    assert cy["hashedPassword"]["value"].startswith("$pbkdf2$1000$")  # v2
    assert "phone" not in cy  # 015112345005: no country code, counted
    assert users[ED]["email"]["isEmailVerified"] is True  # a future LockoutEnd, LockoutEnabled 0
    fox = users[FOX]
    assert "hashedPassword" not in fox
    assert fox["idps"] == [
        {
            "configId": "281234567890",
            "externalUserId": "109876543210987654321",
            "displayName": "fox@example.com",
        }
    ]
    assert _org(tmp_path, manifest).get("userMetadata") is None  # no custom column, every claim a name
    counts = manifest["counts"]
    assert counts["aspnet.layout.core"] == 6
    assert counts["aspnet.with_password.aspnet-identity-v3"] == 3
    assert counts["aspnet.with_password.aspnet-identity-v2"] == 1
    assert counts["aspnet.without_password"] == 1
    assert counts["users_with_otp"] == 1
    assert counts["aspnet.phone_not_carried.no-country-code"] == 1
    assert counts["aspnet.idp_links.linked.Google"] == 1
    assert counts["aspnet.idp_links.unmapped.Microsoft"] == 1
    assert counts["aspnet.claims_used"] == 3
    # Every side-table row is of a user read (di's too: read, then dead-lettered).
    assert manifest["side_rows"] == {"logins": 2, "tokens": 2, "claims": 3}
    assert [counts[f"aspnet.side_rows.{table}"] for table in ("logins", "tokens", "claims")] == [2, 2, 3]
    assert manifest["fields_not_carried"] == {
        f"aspnet.{name}": 5
        for name in (
            "AccessFailedCount",
            "ConcurrencyStamp",
            "NormalizedEmail",
            "NormalizedUserName",
            "SecurityStamp",
        )
    }
    assert manifest["second_factors_not_carried"] == {"aspnet.otp.recovery-codes": 1}
    out, err = capsys.readouterr()
    assert "phone not carried (no-country-code)" in out
    assert leaked_secrets(out + err) == []


def test_psql_copy_of_the_same_table_gives_the_same_users(tmp_path):
    bodies = []
    for name, users in (
        ("ssms", SAMPLE / "AspNetUsers.csv"),
        ("psql", DATA / "core-AspNetUsers-postgres.csv"),
    ):
        code, manifest = _run(tmp_path / name, users, *SIDE, "--idp-map=Google=1")
        assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
        bodies.append(_org(tmp_path / name, manifest)["humanUsers"])
        assert _dead(tmp_path / name) == {DI: Reason.BLOCKED}  # "infinity" in psql's text
    assert bodies[0] == bodies[1]


def test_an_identity2_table_and_its_logins(tmp_path):
    logins = f"--logins={DATA / 'identity2-AspNetUserLogins.csv'}"
    code, manifest = _run(
        tmp_path,
        DATA / "identity2-AspNetUsers.csv",
        logins,
        "--idp-map=Google=77",
        f"--zitadel-config={VERIFIERS}",
    )
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    assert _dead(tmp_path) == {BERT: Reason.BLOCKED}  # LockoutEndDateUtc 2126
    users = {u["userId"]: u["user"] for u in _org(tmp_path, manifest)["humanUsers"]}
    anna = users[ANNA]
    assert anna["email"] == {"email": "anna@example.com", "isEmailVerified": True}
    assert anna["phone"] == {"phone": "+15550100", "isPhoneVerified": True}
    assert passwap_rules.verify(anna["hashedPassword"]["value"], PASSWORDS[ANNA])  # "version 0"
    assert users[CLEO]["idps"][0]["externalUserId"] == "104417582936475812345"
    assert manifest["counts"]["aspnet.layout.identity2"] == 3
    assert manifest["fields_not_carried"] == {"aspnet.AccessFailedCount": 2, "aspnet.SecurityStamp": 2}
    code, manifest = _run(
        tmp_path / "all",
        DATA / "identity2-AspNetUsers.csv",
        "--include-blocked",
        f"--zitadel-config={VERIFIERS}",
    )
    assert code == 0 and manifest is not None
    users = {u["userId"]: u["user"] for u in _org(tmp_path / "all", manifest)["humanUsers"]}
    assert users[BERT]["userName"] == "bert" and users[BERT]["email"]["isEmailVerified"] is False
    assert passwap_rules.verify(users[BERT]["hashedPassword"]["value"], PASSWORDS[BERT])
    assert manifest["counts"]["aspnet.locked_written"] == 1
    assert manifest["counts"]["cannot_sign_in.aspnet"] == 1  # cleo without --logins


def test_custom_columns_are_counted_or_metadata(tmp_path, capsys):
    users = tmp_path / "AspNetUsers.csv"
    users.write_text(
        "Id,FirstName,LastName,WarehouseId,UserName,NormalizedUserName,Email,EmailConfirmed,PasswordHash,"
        "LockoutEnd,LockoutEnabled\n"
        "u1,Wes,Ware,42,wes,WES,wes@example.com,1,NULL,NULL,1\n"
    )
    code, manifest = _run(tmp_path, users, f"--logins={SAMPLE / 'AspNetUserLogins.csv'}")
    assert code == 0 and manifest is not None
    assert manifest["counts"]["unknown_field.aspnet.WarehouseId"] == 1
    # The sample's logins are of other users: read, not used, and said.
    assert manifest["side_rows"] == {"logins": 2} and "aspnet.side_rows.logins" not in manifest["counts"]
    summary = capsys.readouterr().out
    assert re.search(r"not used \(no user of that UserId read, or the row did not read\) +2\n", summary)
    (wes,) = _org(tmp_path, manifest)["humanUsers"]
    assert wes["user"]["profile"] == {"firstName": "Wes", "lastName": "Ware"}
    code, manifest = _run(tmp_path / "meta", users, "--metadata")
    assert code == 0 and manifest is not None
    (entry,) = _org(tmp_path / "meta", manifest)["userMetadata"]
    assert entry["key"] == "WarehouseId" and base64.b64decode(entry["value"]) == b"42"


def test_a_mysql_batch_table_tab_separated(tmp_path):
    """``mysql --batch``: tabs, NULL as text, tinyint(1) bits, datetime(6) without an offset (UTC)."""
    users, claims = tmp_path / "AspNetUsers.tsv", tmp_path / "AspNetUserClaims.tsv"
    users.write_text(
        "Id\tUserName\tNormalizedUserName\tEmail\tEmailConfirmed\tPasswordHash\tPhoneNumber\t"
        "PhoneNumberConfirmed\tLockoutEnd\tLockoutEnabled\n"
        "m1\tmia\tMIA\tmia@example.com\t1\tNULL\t0044 20 7946 0958\t0\tNULL\t1\n"
        "m2\tmo\tMO\tmo@example.com\t0\tNULL\tNULL\t0\t2126-01-01 00:00:00.000000\t1\n"
    )
    claims.write_text("Id\tUserId\tClaimType\tClaimValue\n1\tm1\tgiven_name\tMia\n")
    code, manifest = _run(tmp_path, users, f"--claims={claims}")
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    assert _dead(tmp_path) == {"m2": Reason.BLOCKED}
    (mia,) = _org(tmp_path, manifest)["humanUsers"]
    assert mia["user"]["profile"]["firstName"] == "Mia"
    assert mia["user"]["email"] == {"email": "mia@example.com", "isEmailVerified": True}
    assert mia["user"]["phone"] == {"phone": "+442079460958", "isPhoneVerified": False}


@pytest.mark.parametrize(
    ("flag", "content", "said"),
    [
        (
            "--users",
            "LoginProvider,ProviderKey,UserId\nGoogle,1,u1\n",
            "it looks like an AspNetUserLogins table",
        ),
        ("--users", "u1,ann,ANN,ann@example.com\n", "no header names its columns (bcp writes none)"),
        (
            "--users",
            "Id,UserName,NormalizedUserName,Email,LockoutEnd\nu1,x,X,CfDJ8AbCdEf,\n",
            "ProtectPersonalData",
        ),
        ("--tokens", "Id,UserId,ClaimType,ClaimValue\n1,u1,name,Ann\n", "not an AspNetUserTokens table"),
    ],
)
def test_a_file_that_is_not_the_table_a_flag_names_is_one_line(tmp_path, capsys, flag, content, said):
    other = tmp_path / "file.csv"
    other.write_text(content)
    users = other if flag == "--users" else SAMPLE / "AspNetUsers.csv"
    code, _ = _run(tmp_path, users, *([f"{flag}={other}"] if flag != "--users" else []))
    assert code == 2
    assert said in capsys.readouterr().err


def test_the_other_readers_refuse_the_table_naming_migrate_aspnet(tmp_path, capsys):
    out = tmp_path / "out" / "importBody.json"
    assert (
        main(["migrate", "auth0", "--org=1", f"--users={SAMPLE / 'AspNetUsers.csv'}", f"--output={out}"]) == 2
    )
    assert "migrate aspnet --users reads it" in capsys.readouterr().err


def _night_file(path: Path, locked: set[str]) -> Path:
    rows = list(csv.DictReader((SAMPLE / "AspNetUsers.csv").open(newline="")))
    for row in rows:
        if row["Id"] in locked:
            row["LockoutEnabled"] = "1"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_push_verify_and_state_nights_deactivate_a_user_locked_at_the_source(tmp_path, monkeypatch, capsys):
    token = tmp_path / "token"
    token.write_text(PAT)
    state = tmp_path / "state"
    with ZitadelServer(tokens={PAT}, hash_verifiers=("bcrypt", "pbkdf2")) as server:

        def night(users: Path) -> int:
            flags = (f"--state={state}", f"--push-url={server.url}", f"--token-file={token}")
            return _run(tmp_path, users, *SIDE, *flags)[0]

        assert night(SAMPLE / "AspNetUsers.csv") == 0
        assert server.user_ids(ORG) == {AMY, BO, CY, ED, FOX}
        monkeypatch.setenv("ZITADEL_TOKEN", PAT)
        manifest = tmp_path / "out" / "importBody.manifest.json"
        assert main(["verify", "--url", server.url, "--manifest", str(manifest)]) == 0
        assert server.state.user_states[ED] == "active"  # imported with its password
        # ed's lockout (until 2126) comes into force: LockoutEnabled turned on at the source.
        assert night(_night_file(tmp_path / "day2" / "AspNetUsers.csv", {ED})) == 0
        assert server.state.user_states[ED] == "inactive"
        assert server.state.user_states[AMY] == "active"
    out, err = capsys.readouterr()
    assert leaked_secrets(out + err) == []
