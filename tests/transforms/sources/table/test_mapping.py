"""One table record → a humanUsers entry or a rejection (transforms/sources/table/mapping.py)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from beam_fixtures import h
from passwap_rules import verify
from repo_files import DATA_DIR, ROOT

from pipeline.cli import main
from transforms.common.reasons import Reason
from transforms.hashing.policy import HashPolicy, OnUnsupportedHash
from transforms.mapping.validate import ValidationOptions
from transforms.sources.table.mapping import (
    CHANGE_WITHOUT_PASSWORD,
    TableOptions,
    TableRejection,
    TableUser,
    map_record,
)
from transforms.sources.table.spec import load_spec

FULL = [
    "id=id",
    "username=login",
    "email=mail",
    "email_verified=verified",
    "first_name=first",
    "last_name=last",
    "display_name=name",
    "phone=tel",
    "password_hash=hash",
    "metadata=plan,extra.tier",
    "roles=roles",
    "blocked=blocked",
]


def _options(flags=FULL, **kw) -> TableOptions:
    return TableOptions(spec=load_spec(None, flags), **kw)


def _record(**over) -> dict:
    record = {
        "id": "u1",
        "login": "ann",
        "mail": "ann@example.com",
        "verified": "true",
        "first": "Ann",
        "last": "Lee",
        "name": "Ann Lee",
        "tel": "+41791234567",
        "hash": h(1),
        "plan": "gold",
        "extra": '{"tier": 3}',
        "roles": "{admin,editor}",
        "blocked": "false",
    }
    record.update(over)
    return record


def test_every_field_lands_in_its_place():
    mapped = map_record(_record(), _options())
    assert isinstance(mapped, TableUser)
    assert mapped.entry == {
        "userId": "u1",
        "user": {
            "userName": "ann",
            "profile": {"firstName": "Ann", "lastName": "Lee", "displayName": "Ann Lee"},
            "email": {"email": "ann@example.com", "isEmailVerified": True},
            "phone": {"phone": "+41791234567"},
            "hashedPassword": {"value": h(1)},
        },
    }
    assert mapped.roles == ("admin", "editor")
    assert mapped.password == "bcrypt" and mapped.converted is not None
    assert [(m["key"], base64.b64decode(m["value"])) for m in mapped.metadata] == [
        ("plan", b"gold"),
        ("extra.tier", b"3"),
    ]


def test_fallbacks_follow_the_other_sources():
    mapped = map_record({"id": 5, "mail": "bob@example.com"}, _options(["id=id", "email=mail"]))
    assert isinstance(mapped, TableUser)
    assert mapped.entry == {
        "userId": "5",
        "user": {
            "userName": "bob@example.com",
            "profile": {"firstName": "bob@example.com", "lastName": "bob@example.com"},
            "email": {"email": "bob@example.com"},
        },
    }
    assert mapped.password is None


def test_display_name_fills_missing_names():
    mapped = map_record(_record(first="", last=""), _options())
    assert isinstance(mapped, TableUser)
    assert mapped.entry["user"]["profile"] == {
        "firstName": "Ann Lee",
        "lastName": "Ann Lee",
        "displayName": "Ann Lee",
    }


@pytest.mark.parametrize(
    "over, reason, user_id",
    [
        ({"id": ""}, Reason.MISSING_USER_ID, None),
        ({"id": None}, Reason.MISSING_USER_ID, None),
        ({"id": [1]}, Reason.INVALID_FIELD_TYPE, None),
        ({"verified": "maybe"}, Reason.INVALID_FIELD_TYPE, "u1"),
        ({"extra": "[1, 2]"}, Reason.BAD_PATH, "u1"),
        ({"extra": "{oops"}, Reason.MALFORMED_JSON, "u1"),
        ({"roles": {"a": 1}}, Reason.INVALID_FIELD_TYPE, "u1"),
        ({"hash": 12}, Reason.INVALID_FIELD_TYPE, "u1"),
        ({"hash": "$2a$10$short"}, Reason.INVALID_HASH, "u1"),
        ({"hash": "{SSHA}abc$x$y"}, Reason.UNSUPPORTED_SALTED_SHA, "u1"),
        ({"mail": ""}, Reason.MISSING_EMAIL, "u1"),
        ({"mail": "not-an-email"}, Reason.INVALID_EMAIL, "u1"),
        ({"blocked": "yes"}, Reason.BLOCKED, "u1"),
        ({"login": "a\x00b"}, Reason.CONTROL_CHARACTERS, "u1"),
    ],
)
def test_rejections_name_the_reason_and_keep_the_id(over, reason, user_id):
    mapped = map_record(_record(**over), _options())
    assert isinstance(mapped, TableRejection)
    assert (mapped.reason, mapped.user_id) == (reason, user_id)
    assert mapped.detail


def test_a_record_that_is_not_an_object_is_rejected():
    mapped = map_record(["id", "mail"], _options())
    assert isinstance(mapped, TableRejection) and mapped.reason == Reason.NOT_AN_OBJECT


def test_blocked_users_are_imported_with_include_blocked_and_say_so():
    mapped = map_record(_record(blocked="1"), _options(include_blocked=True))
    assert isinstance(mapped, TableUser) and mapped.blocked


def test_an_unverifiable_hash_is_dropped_under_import_without_password():
    options = _options(on_unsupported_hash=OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD)
    mapped = map_record(_record(hash="$2a$10$short"), options)
    assert isinstance(mapped, TableUser)
    assert "hashedPassword" not in mapped.entry["user"]
    assert mapped.dropped_hash is not None and mapped.dropped_hash.reason == Reason.INVALID_HASH


def test_the_targets_verifiers_decide_and_the_refusal_keeps_the_hash_for_the_report():
    md5crypt = "$1$saltsalt$qjXMvbEw8oaL.CzflDugX."
    policy = HashPolicy()  # ZITADEL's default: bcrypt only
    options = _options(
        validation=ValidationOptions(allowed_hash_families=("bcrypt", "other"), hash_policy=policy)
    )
    mapped = map_record(_record(hash=md5crypt), options)
    assert isinstance(mapped, TableRejection)
    assert mapped.reason == Reason.HASH_VERIFIER_DISABLED and mapped.refused is not None
    assert md5crypt not in mapped.detail


def test_email_fallback_and_email_verified_flag():
    flags = ["id=id", "email=mail", "username=login"]
    mapped = map_record(
        {"id": "9", "login": "zed"}, _options(flags, email_fallback="{username}@users.example.com")
    )
    assert isinstance(mapped, TableUser)
    assert mapped.entry["user"]["email"] == {"email": "zed@users.example.com"}
    assert mapped.notes == ["email-fallback"]
    mapped = map_record({"id": "9", "mail": "z@example.com"}, _options(flags, email_verified=True))
    assert isinstance(mapped, TableUser)
    assert mapped.entry["user"]["email"] == {"email": "z@example.com", "isEmailVerified": True}


# --------------------------------------------------------------------------- expressions, per-row hashes


def test_phone_verified_and_a_change_required_where_there_is_a_password():
    flags = [*FULL, "phone_verified=tel_ok", "password_change_required=in(status,FORCE_CHANGE_PASSWORD)"]
    mapped = map_record(_record(tel_ok="1", status="FORCE_CHANGE_PASSWORD"), _options(flags))
    assert isinstance(mapped, TableUser)
    user = mapped.entry["user"]
    assert user["phone"] == {"phone": "+41791234567", "isPhoneVerified": True}
    assert user["passwordChangeRequired"] is True and mapped.notes == []
    unverified = map_record(_record(tel_ok="0", status="CONFIRMED"), _options(flags))
    assert isinstance(unverified, TableUser)
    assert unverified.entry["user"]["phone"] == {"phone": "+41791234567"}
    assert "passwordChangeRequired" not in unverified.entry["user"]


def test_a_change_required_without_a_password_is_counted():
    flags = [*FULL, "password_change_required=in(status,FORCE_CHANGE_PASSWORD)"]
    mapped = map_record(_record(hash="", status="FORCE_CHANGE_PASSWORD"), _options(flags))
    assert isinstance(mapped, TableUser)
    assert "passwordChangeRequired" not in mapped.entry["user"]
    assert mapped.notes == [CHANGE_WITHOUT_PASSWORD]


def test_blocked_by_a_date_uses_the_runs_now():
    flags = [*FULL[:-1], "blocked=all(enabled,after_now(until))"]
    record = _record(enabled="t", until="2030-01-01T00:00:00Z")
    before = map_record(record, _options(flags, now=1_800_000_000.0))  # 2027: still locked
    assert isinstance(before, TableRejection) and before.reason == Reason.BLOCKED and before.blocked
    after = map_record(record, _options(flags, now=1_900_000_000.0))  # 2030-03: the lockout ended
    assert isinstance(after, TableUser) and not after.blocked


def test_a_per_row_hasher_and_its_refusal():
    flags = [*FULL, "password_hasher=hasher"]
    mapped = map_record(_record(hasher="bcrypt"), _options(flags))
    assert isinstance(mapped, TableUser) and mapped.entry["user"]["hashedPassword"] == {"value": h(1)}
    refused = map_record(_record(hash="ab" * 32, hasher="sha256"), _options(flags))
    assert isinstance(refused, TableRejection) and refused.reason == Reason.UNSUPPORTED_HASH
    assert refused.user_id == "u1" and "'sha256'" in refused.detail
    dropped = map_record(
        _record(hash="ab" * 32, hasher="sha256"),
        _options(flags, on_unsupported_hash=OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD),
    )
    assert isinstance(dropped, TableUser) and dropped.password is None
    assert dropped.dropped_hash is not None and dropped.dropped_hash.reason == Reason.UNSUPPORTED_HASH


def test_sql_null_text_is_no_password():
    mapped = map_record(
        _record(hash="NULL", tel="NULL"), TableOptions(spec=load_spec('{"null": "NULL"}', FULL))
    )
    assert isinstance(mapped, TableUser) and mapped.password is None and "phone" not in mapped.entry["user"]
    plain = map_record(_record(hash="NULL"), _options())  # without the option: a password in clear text
    assert isinstance(plain, TableRejection) and plain.reason == Reason.PLAINTEXT_PASSWORD


# --------------------------------------------------------------------------- the systems' own exports, end to end
# docs/export-formats/samples: each system's real layout; the mappings are docs/table.md's.

SAMPLES = ROOT / "docs" / "export-formats" / "samples"
ALL_VERIFIERS = DATA_DIR / "zitadel-config" / "verifiers-enabled.yaml"
CLERK_CSV = [
    "id=id",
    "email=primary_email_address",
    "email_verified=among(primary_email_address,verified_email_addresses)",
    "phone=primary_phone_number",
    "phone_verified=among(primary_phone_number,verified_phone_numbers)",
    "username=username",
    "first_name=first_name",
    "last_name=last_name",
    "password_hash=password_digest",
    "password_hasher=password_hasher",
]
CLERK_JSON = [
    "id=id",
    "email=first(email_addresses)",
    "phone=first(phone_numbers)",
    "username=username",
    "first_name=first_name",
    "last_name=last_name",
    "password_hash=password_digest",
    "password_hasher=password_hasher",
    "metadata=public_metadata,private_metadata,unsafe_metadata",
]
COGNITO = [
    "id=Username",
    "email=Attributes[Name=email].Value",
    "email_verified=Attributes[Name=email_verified].Value",
    "phone=Attributes[Name=phone_number].Value",
    "phone_verified=Attributes[Name=phone_number_verified].Value",
    "first_name=Attributes[Name=given_name].Value",
    "last_name=Attributes[Name=family_name].Value",
    "display_name=Attributes[Name=name].Value",
    "username=Attributes[Name=preferred_username].Value",
    "blocked=not(Enabled)",
    "password_change_required=in(UserStatus,FORCE_CHANGE_PASSWORD,RESET_REQUIRED)",
    "metadata=Attributes[Name=custom:department].Value",
]
ASPNET = {
    "id": "Id",
    "username": "UserName",
    "email": "Email",
    "email_verified": "EmailConfirmed",
    "phone": "PhoneNumber",
    "phone_verified": "PhoneNumberConfirmed",
    "password_hash": "PasswordHash",
    "blocked": "all(LockoutEnabled,after_now(LockoutEnd))",
    "null": "NULL",
}


def _migrate(tmp_path: Path, sample: str, *args: str) -> tuple[int, dict, dict[str, dict], list[dict]]:
    out = tmp_path / "out"
    code = main(
        [
            "migrate",
            "table",
            "--org=1",
            f"--output={out / 'importBody.json'}",
            f"--input={SAMPLES / sample}",
            f"--zitadel-config={ALL_VERIFIERS}",
            *args,
        ]
    )
    manifest = json.loads((out / "importBody.manifest.json").read_text())
    users = {
        entry["userId"]: entry["user"]
        for org in json.loads((out / "importBody.json").read_text())["dataOrgs"]["orgs"]
        for entry in org.get("humanUsers", [])
    }
    letters = out / "importBody.dead-letter.ndjson"
    dead = [json.loads(line) for line in letters.read_text().splitlines()] if letters.exists() else []
    return code, manifest, users, dead


def _passwords(name: str) -> dict[str, str]:
    """user → password of samples/<name>-passwords.md (its table's id or user column, then the password)."""
    text = (SAMPLES / f"{name}-passwords.md").read_text()
    rows = re.findall(r"^\|(.+)\|$", text, re.M)
    out = {}
    for row in rows:
        cells = [c.strip() for c in row.split("|")]
        secret = next((c.strip("`") for c in cells if c.startswith("`")), None)
        key = cells[1] if name == "clerk" else cells[0]
        if secret is not None:
            out[key] = secret
    return out


def _verifies(users: dict[str, dict], passwords: dict[str, str]) -> dict[str, bool]:
    return {
        user_id: verify(user["hashedPassword"]["value"], passwords[user_id])
        and not verify(user["hashedPassword"]["value"], passwords[user_id] + "x")
        for user_id, user in users.items()
        if "hashedPassword" in user
    }


def test_clerk_dashboard_csv(tmp_path):
    code, manifest, users, dead = _migrate(
        tmp_path, "clerk-dashboard-export.csv", *(f"--map={m}" for m in CLERK_CSV)
    )
    assert code == 0
    assert len(users) == 7 and [(d["reason"], d["record"]["id"]) for d in dead] == [
        ("unsupported-hash", "user_2mXqH8scryptFirebase0008")  # the companion's form, not ZITADEL's
    ]
    amelia = users["user_2mXqA1bcrypt0TotpPhone01"]
    assert amelia["userName"] == "amelia" and amelia["profile"] == {
        "firstName": "Amelia",
        "lastName": "Brandt",
    }
    assert amelia["email"] == {"email": "amelia.brandt@example.com", "isEmailVerified": True}
    assert amelia["phone"] == {"phone": "+4915112345678", "isPhoneVerified": True}  # the TAB guard removed
    # two verified addresses in one quoted cell: the primary is among them
    assert users["user_2mXqB2argon2idMultiMail2"]["email"] == {
        "email": "bastien@example.fr",
        "isEmailVerified": True,
    }
    assert users["user_2mXqD4djangoPbkdf2Sha254"]["phone"] == {"phone": "+14155550123"}  # unverified phone
    grace = users["user_2mXqG7oauthOnlyNoPasswd7"]
    assert grace["email"] == {"email": "grace.unverified@example.org"} and "hashedPassword" not in grace
    verified = _verifies(users, _passwords("clerk"))
    assert len(verified) == 6 and all(verified.values()), verified
    assert manifest["counts"]["table.mapped.password_hasher"] == 7


def test_clerk_support_json(tmp_path):
    code, manifest, users, dead = _migrate(
        tmp_path, "clerk-support-export.json", *(f"--map={m}" for m in CLERK_JSON)
    )
    assert code == 0
    assert sorted(d["reason"] for d in dead) == [
        "unsupported-hash",
        "unsupported-hash",
    ]  # bcrypt_sha256, sha256
    jessica = [d for d in dead if d["record"]["id"] == "user_2gRua7G8WRYBglzXE5sxRbIRkfJ"]
    assert jessica and "bcrypt_sha256" in jessica[0]["detail"]
    assert users["user_2gQPH11rXtJguHjsx7VtUo8QGh2"]["email"] == {
        "email": "paula@example.com"
    }  # not verified
    verified = _verifies(users, _passwords("clerk"))
    assert len(verified) == 3 and all(verified.values()), verified
    # "totp_secret": null and "username": null are no data: only the one real TOTP secret counts
    assert manifest["unknown_fields"] == {"table.totp_secret": 1}


def test_a_list_of_users_with_attribute_lists(tmp_path):
    """Users whose fields sit in a list of {Name, Value} pairs, as Cognito's are: the users of
    its list-users answer alone (``jq .Users``), a file ``migrate cognito`` does not claim (its
    whole answer is refused here, naming that command)."""
    listed = tmp_path / "users.json"
    listed.write_text(json.dumps(json.loads((SAMPLES / "cognito-list-users.json").read_text())["Users"]))
    code, manifest, users, dead = _migrate(tmp_path, str(listed), *(f"--map={m}" for m in COGNITO))
    assert code == 0
    assert [d["reason"] for d in dead] == ["blocked"] and dead[0]["record"]["record"]["Enabled"] is False
    alice = users["0c8e2f4a-6b1d-4a53-9f0e-3d2b7c1a9e01"]
    assert alice["userName"] == "alicem" and alice["profile"] == {"firstName": "Alice", "lastName": "Martin"}
    assert alice["email"] == {"email": "alice.martin@example.com", "isEmailVerified": True}
    assert alice["phone"] == {"phone": "+14155550101", "isPhoneVerified": True}
    assert users["1d9f3a5b-7c2e-4b64-a01f-4e3c8d2b0f12"]["email"] == {"email": "bob.unconfirmed@example.com"}
    assert users["62e48fa0-c273-40b9-b564-93d8c7a5e678"]["phone"] == {"phone": "+442079460958"}
    # Cognito exports no hashes: users it asks to change their password have none here, counted
    statuses = [
        u["UserStatus"] for u in json.loads((SAMPLES / "cognito-list-users.json").read_text())["Users"]
    ]
    changes = sum(s in ("FORCE_CHANGE_PASSWORD", "RESET_REQUIRED") for s in statuses)
    assert changes and manifest["counts"]["notes." + CHANGE_WITHOUT_PASSWORD] == changes


@pytest.mark.parametrize(
    "table", ["aspnetcore-AspNetUsers-postgres.csv", "aspnetcore-AspNetUsers-sqlserver.csv"]
)
def test_aspnet_users(tmp_path, table):
    mapping = tmp_path / "aspnet.json"
    mapping.write_text(json.dumps(ASPNET))
    code, manifest, users, dead = _migrate(tmp_path, table, f"--mapping={mapping}")
    assert code == 0
    # di: locked for ever (infinity / 9999-12-31); ed: a future LockoutEnd but LockoutEnabled off;
    # fox: a lockout that ended in 2025, and no password (external login only)
    assert [(d["reason"], d["record"]["id"]) for d in dead] == [
        ("blocked", "ae3f6a4b-8d9c-4e5f-8a1b-2c3d4e5f6a7b")
    ]
    assert "bf4a7b5c-9e0d-4f6a-9b2c-3d4e5f6a7b8c" in users
    fox = users["c05b8c6d-0f1e-4a7b-8c3d-4e5f6a7b8c9d"]
    assert "hashedPassword" not in fox and "phone" not in fox
    amy = users["5b2f0c7e-3a41-4f8e-9d61-2c7b1e0a9f31"]
    assert amy["phone"] == {"phone": "+49 151 12345004", "isPhoneVerified": True}
    assert amy["email"] == {"email": "amy@example.com", "isEmailVerified": True}
    assert users["8c1d4e2f-6b7a-4c3d-8e9f-0a1b2c3d4e5f"]["email"] == {"email": "bo@example.com"}
    names = {"amy": "5b2f0c7e", "bo": "8c1d4e2f", "cy": "9d2e5f3a", "ed": "bf4a7b5c"}
    by_id = {
        user_id: pw
        for name, pw in _passwords("aspnet").items()
        if name in names
        for user_id in users
        if user_id.startswith(names[name])
    }
    verified = _verifies({k: users[k] for k in by_id}, by_id)
    assert len(verified) == 4 and all(verified.values()), verified
