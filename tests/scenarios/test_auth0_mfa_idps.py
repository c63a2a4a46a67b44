"""Auth0 MFA secrets (``--mfa``), social/enterprise logins (``--idp-map``) and bulk-import hashes.

The samples are written here: profiles, a password export, and an MFA export in two files (NDJSON
and a JSON array, matched by one glob), covering every way an MFA record or identity can end.
"""

from __future__ import annotations

import json
from pathlib import Path

import bcrypt
import pytest

from pipeline.cli import main
from pipeline.options import parse_idp_map
from transforms.common.errors import ConfigError
from transforms.mapping.validate import Reason
from transforms.sources.auth0.command import RESERVED_ALIASES
from transforms.sources.auth0.mapping import idp_links

# Reason codes these tests produce in the Auth0 pipeline (see tests/transforms/sources/auth0/test_command.py's coverage check).
MFA_REASONS = {Reason.UNKNOWN_USER, Reason.OTP_SUPERSEDED, Reason.INVALID_OTP_SECRET}

HASH = bcrypt.hashpw(b"pw", bcrypt.gensalt(10)).decode()
OTHER_HASH = bcrypt.hashpw(b"other", bcrypt.gensalt(10)).decode()


def _profile(uid: str, email: str, *providers: str, **extra) -> dict:
    identities = [
        {
            "provider": p,
            "user_id": uid.split("|", 1)[1] if p == uid.split("|")[0] else f"{p}-id",
            "connection": p,
            "isSocial": p != "auth0",
        }
        for p in providers
    ]
    return {
        "user_id": uid,
        "email": email,
        "given_name": "G",
        "family_name": "F",
        "email_verified": True,
        "identities": identities,
        **extra,
    }


PROFILES = [
    _profile("auth0|a1", "ann@example.com", "auth0", "google-oauth2"),  # password + OTP + a link
    _profile("google-oauth2|g2", "gus@example.com", "google-oauth2"),  # social only, no password
    _profile("auth0|a3", "sam@example.com", "auth0", "samlp", "github", "samlp"),  # samlp unmapped
    _profile("auth0|a4", "blocked@example.com", "auth0", blocked=True),  # its OTP: profile-rejected
    _profile("auth0|a5", "ANN@example.com ", "auth0", username="ann@example.com"),  # duplicate user name
    _profile(
        "auth0|a6",
        "bulk@example.com",
        "auth0",
        custom_password_hash={"algorithm": "bcrypt", "hash": {"value": OTHER_HASH}},
    ),
    _profile(
        "auth0|a7", "md5@example.com", custom_password_hash={"algorithm": "md5", "hash": {"value": "x"}}
    ),
]
PASSWORDS = [
    # version 1.1 layout: the e-mail only in identifiers[], last_password_reset as the date
    {
        "_id": {"$oid": "a1"},
        "version": "1.1",
        "passwordHash": HASH,
        "identifiers": [{"type": "email", "value": "ann@example.com", "verified": True}],
        "last_password_reset": {"$date": "2023-12-08T20:44:31.608Z"},
    },
    # a plain-string _id; beats a6's custom_password_hash
    {"_id": "auth0|a6", "email": "bulk@example.com", "passwordHash": HASH},
]
MFA_NDJSON = [
    {"user_id": "auth0|a1", "tenant": "t", "type": "otp", "otp_secret": "GEZDGNBVGY3TQOJQ"},  # superseded
    {"type": "recovery-code", "recovery_code": HASH},
    {"user_id": "auth0|nobody", "type": "otp", "otp_secret": "GEZDGNBVGY3TQOJQ"},  # unknown-user
    {"user_id": "auth0|a3", "type": "otp", "otp_secret": "not base32!"},  # invalid-otp-secret
]
MFA_ARRAY = [
    {"user_id": "auth0|a1", "tenant": "t", "type": "otp", "otp_secret": "jbsw y3dp ehpk 3pxp"},  # kept
    {"user_id": "auth0|a4", "type": "otp", "otp_secret": "JBSWY3DPEHPK3PXP"},  # blocked profile
    {"user_id": "auth0|a5", "type": "otp", "otp_secret": "JBSWY3DPEHPK3PXQ"},  # duplicate profile
    {"user_id": "auth0|a3", "type": "sms", "phone_number": "+100"},  # not importable
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mfa")
    (tmp / "users.json").write_text("".join(json.dumps(p) + "\n" for p in PROFILES))
    (tmp / "passwords.json").write_text("".join(json.dumps(p) + "\n" for p in PASSWORDS))
    (tmp / "mfa-1.json").write_text("".join(json.dumps(p) + "\n" for p in MFA_NDJSON))
    (tmp / "mfa-2.json").write_text(json.dumps(MFA_ARRAY, indent=2))
    out = tmp / "out" / "importBody.json"
    rc = main(
        [
            "migrate",
            "auth0",
            "--org=9",
            f"--users={tmp / 'users.json'}",
            f"--passwords={tmp / 'passwords.json'}",
            f"--mfa={tmp / 'mfa-*.json'}",
            "--idp-map=google-oauth2=301",
            "--idp-map=github=302",
            f"--output={out}",
        ]
    )
    manifest = json.loads(out.with_name("importBody.manifest.json").read_text())
    users = {
        u["userId"]: u["user"] for u in json.loads(out.read_bytes())["dataOrgs"]["orgs"][0]["humanUsers"]
    }
    dead = [
        json.loads(line) for line in out.with_name("importBody.dead-letter.ndjson").read_text().splitlines()
    ]
    return rc, manifest, users, dead


def test_otp_secret_is_set_on_its_user(run):
    rc, manifest, users, _ = run
    assert rc == 0 and manifest["invariant"]["holds"], manifest["invariant"]["text"]
    assert users["auth0|a1"]["otpCode"] == "JBSWY3DPEHPK3PXP"  # the later record, normalised
    assert users["auth0|a1"]["hashedPassword"] == {"value": HASH}  # v1.1 record, e-mail from identifiers
    assert [uid for uid, user in users.items() if "otpCode" in user] == ["auth0|a1"]
    counts = manifest["counts"]
    assert counts["auth0.mfa_read"] == 8 and counts["users_with_otp"] == 1
    assert (
        counts["auth0.mfa_not_importable.recovery-code"] == 1 and counts["auth0.mfa_not_importable.sms"] == 1
    )


def test_every_mfa_record_is_accounted_for(run):
    _, manifest, _, dead = run
    mfa = sorted((d["reason"], d["record"].get("user_id")) for d in dead if d["source"] == "auth0-mfa")
    assert mfa == [
        ("invalid-otp-secret", "auth0|a3"),
        ("otp-superseded", "auth0|a1"),
        ("profile-rejected", "auth0|a4"),
        ("profile-rejected", "auth0|a5"),
        ("unknown-user", "auth0|nobody"),
    ]
    assert (
        "MFA records 8 = OTP written 1 + not importable 2 + dead-lettered 5" in manifest["invariant"]["text"]
    )
    assert not any("GEZDGNBVGY3TQOJQ" in d["detail"] or "JBSWY3DP" in d["detail"] for d in dead)


def test_idp_links_are_built_and_unmapped_providers_reported(run):
    _, manifest, users, _ = run
    assert users["auth0|a1"]["idps"] == [
        {"configId": "301", "externalUserId": "google-oauth2-id", "displayName": "ann@example.com"}
    ]
    assert users["google-oauth2|g2"]["idps"] == [
        {"configId": "301", "externalUserId": "g2", "displayName": "gus@example.com"}
    ]
    assert "hashedPassword" not in users["google-oauth2|g2"]  # signs in through Google only
    assert [link["configId"] for link in users["auth0|a3"]["idps"]] == ["302"]
    counts = manifest["counts"]
    assert counts["auth0.identities.unmapped.samlp"] == 2
    assert (
        counts["auth0.identities.linked.google-oauth2"] == 2 and counts["auth0.identities.linked.github"] == 1
    )


def test_custom_password_hash_is_a_password_source(run):
    _, manifest, users, dead = run
    assert users["auth0|a6"]["hashedPassword"] == {"value": HASH}  # the password export wins
    # The profile's own hash, superseded by the export's record, has no line of its own (the
    # profile is written, not rejected): it is counted, and the accounting holds.
    assert [d for d in dead if d["source"] == "auth0-custom-hash"] == []
    assert manifest["counts"]["auth0.custom_hash_unused.superseded"] == 1
    assert manifest["invariant"]["holds"]
    # md5 converts now (md5plain); this one's value "x" is no digest at all: malformed.
    md5 = next(d for d in dead if d["source"] == "auth0-profile" and d["reason"] == Reason.INVALID_HASH)
    assert md5["record"]["user_id"] == "auth0|a7" and "md5" in md5["detail"]
    assert manifest["counts"]["auth0.custom_hashes_read"] == 1


def test_summary_shows_mfa_and_identities(tmp_path, capsys):
    (tmp_path / "u.json").write_text(json.dumps(PROFILES[:3]))
    (tmp_path / "m.json").write_text(json.dumps(MFA_ARRAY[:1] + MFA_NDJSON[1:2]))
    rc = main(
        [
            "migrate",
            "auth0",
            "--org=9",
            f"--users={tmp_path / 'u.json'}",
            "--passwords=none",
            f"--mfa={tmp_path / 'm.json'}",
            f"--output={tmp_path / 'o.json'}",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    for line in (
        "users written with OTP (otpCode)",
        "not importable: recovery-code",
        "no --idp-map, not linked: google-oauth2",
        "no --idp-map, not linked: samlp",
        "[ok]",
    ):
        assert line in out


@pytest.mark.parametrize(
    "values, expected",
    [
        (["google-oauth2=1", "github= 2 "], (("github", "2"), ("google-oauth2", "1"))),
        (["google-oauth2=1", "google-oauth2=1"], (("google-oauth2", "1"),)),
    ],
)
def test_parse_idp_map(values, expected):
    assert parse_idp_map(values) == expected


@pytest.mark.parametrize("values", [["google"], ["=1"], ["github="], ["auth0=1"], ["a=1", "a=2"]])
def test_parse_idp_map_rejects(values):
    with pytest.raises(ConfigError):
        parse_idp_map(values, RESERVED_ALIASES)


def test_idp_links_outcomes():
    profile = {
        "email": "x@example.com",
        "identities": [
            {"provider": "auth0", "user_id": "1"},
            {"provider": "github", "user_id": 123},
            {"provider": "github", "user_id": ""},
            {"provider": "Weird Provider!", "user_id": "z"},
            "junk",
        ],
    }
    links, outcomes = idp_links(profile, {"github": "7"})
    assert links == [{"configId": "7", "externalUserId": "123", "displayName": "x@example.com"}]
    assert outcomes == [
        ("database", "auth0"),
        ("linked", "github"),
        ("invalid", "github"),
        ("unmapped", "weird_provider_"),
        ("invalid", "unknown"),
    ]


def test_passwords_default_is_zitadel_tools_file_when_present(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "users.json").write_text(json.dumps(PROFILES[0]) + "\n")
    assert main(["migrate", "auth0", "--org=9", "--output=a/importBody.json"]) == 0
    assert json.loads(Path("a/importBody.manifest.json").read_text())["counts"]["users_with_password"] == 0
    assert "no --passwords and no ./passwords.json" in caplog.text
    (tmp_path / "passwords.json").write_text(json.dumps(PASSWORDS[0]) + "\n")
    assert main(["migrate", "auth0", "--org=9", "--output=b/importBody.json"]) == 0
    assert json.loads(Path("b/importBody.manifest.json").read_text())["counts"]["users_with_password"] == 1
    assert main(["migrate", "auth0", "--org=9", "--passwords=none", "--output=c/importBody.json"]) == 0
    assert json.loads(Path("c/importBody.manifest.json").read_text())["counts"]["users_with_password"] == 0


# --------------------------------------------------------------------------- fields not carried


from transforms.sources.auth0.mapping import fields_not_carried, unknown_fields  # noqa: E402 - imported where the tests that use it start


@pytest.mark.parametrize(
    "profile, metadata, not_carried, unknown",
    [
        (
            {
                "user_id": "auth0|1",
                "app_metadata": {"plan": "pro"},
                "user_metadata": {},
                "logins_count": 3,
                "last_login": "2024-01-01T00:00:00Z",
                "picture": "https://x/p.png",
            },
            False,
            ["app_metadata", "last_login", "logins_count", "picture"],
            [],
        ),
        (
            {"app_metadata": {"plan": "pro"}, "logins_count": 0, "multifactor": ["guardian"]},
            True,
            ["multifactor"],
            [],
        ),
        ({"blocked": True, "blocked_for": [], "email": "a@example.com"}, False, ["blocked"], ["blocked_for"]),
        ({"blocked": False, "shoe size": 44}, False, [], ["shoe_size"]),
    ],
)
def test_auth0_fields_not_carried_table(profile, metadata, not_carried, unknown):
    assert sorted(fields_not_carried(profile, metadata)) == not_carried
    assert sorted(unknown_fields(profile)) == unknown


def test_cli_social_only_users_cannot_sign_in_until_mapped(tmp_path, capsys):
    profiles = [
        {
            "user_id": "google-oauth2|1",
            "email": "gia@example.com",
            "logins_count": 9,
            "identities": [{"provider": "google-oauth2", "user_id": "1"}],
        },
        {
            "user_id": "github|2",
            "email": "gil@example.com",
            "favourite": "x",
            "identities": [{"provider": "github", "user_id": "2"}],
        },
    ]
    (tmp_path / "u.json").write_text(json.dumps(profiles))
    rc = main(
        [
            "migrate",
            "auth0",
            "--org=9",
            f"--users={tmp_path / 'u.json'}",
            "--passwords=none",
            "--idp-map=github=55",
            f"--output={tmp_path / 'o.json'}",
        ]
    )
    out = capsys.readouterr().out
    manifest = json.loads((tmp_path / "o.manifest.json").read_text())
    assert rc == 0
    assert manifest["cannot_sign_in_yet"] == 1  # gia: google-oauth2 is not mapped
    assert manifest["fields_not_carried"] == {"auth0.logins_count": 1}
    assert manifest["unknown_fields"] == {"auth0.favourite": 1}
    assert "map their IdP alias with --idp-map, or send password-reset mails" in out
