"""Second factors and forced password changes (transforms/mapping/otp.py), unit by unit and end to end.

Every written ``otpCode`` is checked the way a user would notice a mistake: the codes an
authenticator app shows for the SOURCE secret (with the parameters Keycloak or Auth0 used) must
equal the codes ZITADEL computes from the written ``otpCode`` (HMAC-SHA1, 6 digits, 30 s), at
fixed times. Codes come from ``_totp`` below, a test-side RFC 6238 implementation with hmac and
hashlib (pinned to the RFC's own test vectors), independent of the code under test.

Realm files are in tests/data/keycloak-otp and the Auth0 bulk-import file in
tests/data/auth0-bulk (origins in tests/data/README.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path

import pytest
from repo_files import DATA_DIR

from pipeline.cli import main
from transforms.mapping.ids import auth0_user_id
from transforms.mapping.otp import (
    KEYCLOAK_DEFAULT_POLICY,
    OtpPolicy,
    auth0_mfa_factors,
    keycloak_otp,
    realm_policy,
    required_actions,
)
from transforms.sources.keycloak.realm_files import plan_realm_sources

DATA = DATA_DIR
KC = DATA / "keycloak-otp"
AUTH0_FILE = DATA / "auth0-bulk" / "bulk-import-mfa-factors.json"
CONFIG = DATA / "zitadel-config" / "verifiers-enabled.yaml"  # the target verifies pbkdf2

# Unix times at which codes are compared: the epoch, RFC 6238's own times, today, the far future.
TIMES = (0, 59, 1_111_111_109, 1_234_567_890, 1_700_000_000, 2_000_000_000, 20_000_000_000)
_DIGESTS = {"HmacSHA1": hashlib.sha1, "HmacSHA256": hashlib.sha256, "HmacSHA512": hashlib.sha512}


def _totp(key: bytes, at: int, digits: int = 6, period: int = 30, algorithm: str = "HmacSHA1") -> str:
    """RFC 6238 (TOTP over RFC 4226's HOTP with dynamic truncation)."""
    mac = hmac.new(key, (at // period).to_bytes(8, "big"), _DIGESTS[algorithm]).digest()
    offset = mac[-1] & 0x0F
    number = int.from_bytes(mac[offset : offset + 4], "big") & 0x7FFFFFFF
    return str(number % 10**digits).zfill(digits)


def _zitadel_codes(otp_code: str) -> list[str]:
    """What ZITADEL accepts for the written secret: base32-decoded, SHA-1, 6 digits, 30 s."""
    key = base64.b32decode(otp_code + "=" * (-len(otp_code) % 8))
    return [_totp(key, t) for t in TIMES]


@pytest.mark.parametrize(
    "algorithm, key, vectors",
    [
        # RFC 6238 Appendix B (8 digits; the seeds are ASCII digits, 20/32 bytes long).
        (
            "HmacSHA1",
            b"12345678901234567890",
            {59: "94287082", 1111111109: "07081804", 1234567890: "89005924", 20000000000: "65353130"},
        ),
        ("HmacSHA256", b"12345678901234567890123456789012", {59: "46119246", 2000000000: "90698825"}),
    ],
)
def test_the_test_side_totp_matches_rfc_6238(algorithm, key, vectors):
    for at, code in vectors.items():
        assert _totp(key, at, 8, 30, algorithm) == code


# --------------------------------------------------------------------------- Keycloak, unit


def _otp(value: str, **data) -> dict:
    """An OTP credential as current Keycloak exports hold it; a parameter given as None is left out."""
    params = {"subType": "totp", "digits": 6, "counter": 0, "period": 30, "algorithm": "HmacSHA1", **data}
    params = {k: v for k, v in params.items() if v is not None}
    return {
        "type": "otp",
        "createdDate": 1,
        "secretData": json.dumps({"value": value}),
        "credentialData": json.dumps(params),
    }


@pytest.mark.parametrize(
    "credential, policy, cause",
    [
        (_otp("abcdefghij0123456789", subType="hotp"), KEYCLOAK_DEFAULT_POLICY, "hotp"),
        (
            _otp("abcdefghij0123456789", algorithm="HmacSHA512"),
            KEYCLOAK_DEFAULT_POLICY,
            "algorithm-HmacSHA512",
        ),
        (_otp("abcdefghij0123456789", digits=8), KEYCLOAK_DEFAULT_POLICY, "digits-8"),
        (_otp("abcdefghij0123456789", period=60), KEYCLOAK_DEFAULT_POLICY, "period-60"),
        (_otp("abcdefghij0123456789", digits=None), OtpPolicy(digits=8), "digits-8"),  # the realm's
        (_otp("abcdefghij0123456789", period=None), None, "realm-policy-unknown"),  # never a guess
        (_otp("", secretEncoding=None), KEYCLOAK_DEFAULT_POLICY, "no-secret"),
        (_otp("not base32 !", secretEncoding="BASE32"), KEYCLOAK_DEFAULT_POLICY, "unreadable-secret"),
        (_otp("abcdefghij0123456789", secretEncoding="HEX"), KEYCLOAK_DEFAULT_POLICY, "encoding-HEX"),
        (_otp("short"), KEYCLOAK_DEFAULT_POLICY, "secret-length"),  # 5 bytes: 8 base32 characters
        ({"type": "otp", "secretData": "{", "credentialData": "{}"}, KEYCLOAK_DEFAULT_POLICY, "no-secret"),
    ],
)
def test_keycloak_refused_variants_write_nothing_and_name_the_cause(credential, policy, cause):
    assert keycloak_otp([credential], policy) == (None, [cause])


def test_keycloak_plain_value_takes_every_parameter_from_the_realm_policy():
    credential = {"type": "otp", "value": "abcdefghij0123456789"}
    secret, causes = keycloak_otp([credential], KEYCLOAK_DEFAULT_POLICY)
    assert causes == [] and _zitadel_codes(secret) == [_totp(b"abcdefghij0123456789", t) for t in TIMES]
    assert keycloak_otp([credential], OtpPolicy(period=60)) == (None, ["period-60"])


def test_keycloak_newest_usable_device_wins_and_refused_ones_keep_their_cause():
    old = {**_otp("olderDeviceSecret123"), "createdDate": 100}
    new = {**_otp("newerDeviceSecret123"), "createdDate": 200}
    hotp = {**_otp("newestButHotpSecret1", subType="hotp"), "createdDate": 300}
    secret, causes = keycloak_otp([new, hotp, old, {"type": "password"}], KEYCLOAK_DEFAULT_POLICY)
    assert _zitadel_codes(secret) == [_totp(b"newerDeviceSecret123", t) for t in TIMES]
    assert sorted(causes) == ["hotp", "superseded"]


def test_realm_policy_and_required_actions():
    assert realm_policy({"otpPolicyDigits": 8, "otpPolicyAlgorithm": "HmacSHA256", "other": 1}) == OtpPolicy(
        algorithm="HmacSHA256", digits=8
    )
    assert realm_policy({}) == KEYCLOAK_DEFAULT_POLICY == OtpPolicy("totp", "HmacSHA1", 6, 30)
    assert required_actions(
        {"requiredActions": ["VERIFY_EMAIL", "UPDATE_PASSWORD", "webauthn-register"]}
    ) == (
        True,
        ["VERIFY_EMAIL", "webauthn-register"],
    )
    assert required_actions({"requiredActions": [7, "a b"]}) == (False, ["7", "a_b"])


# --------------------------------------------------------------------------- Auth0, unit


@pytest.mark.parametrize(
    "factors, written, causes",
    [
        ([{"totp": {"secret": "JBSWY3DPEHPK3PXP"}}], "JBSWY3DPEHPK3PXP", []),
        ([{"totp": {"secret": "jbsw y3dp ehpk 3pxp"}}], "JBSWY3DPEHPK3PXP", []),  # as apps show it
        ([{"totp": {"secret": "JBSWY3DPEHPK3PX1"}}], None, ["totp-invalid-secret"]),  # 1 is not base32
        ([{"totp": {"secret": "JBSWY3DP"}}], None, ["totp-invalid-secret"]),  # too short to be a key
        ([{"totp": {}}], None, ["totp-invalid-secret"]),
        (
            [{"totp": {"secret": "JBSWY3DPEHPK3PXP"}}, {"totp": {"secret": "GEZDGNBVGY3TQOJQ"}}],
            "JBSWY3DPEHPK3PXP",
            ["totp-additional"],
        ),
        ([{"phone": {"value": "+41790000001"}}, {"email": {"value": "a@b.co"}}], None, ["phone", "email"]),
        ([{"phone": {}, "email": {}}, "totp", {"webauthn": {}}], None, ["invalid", "invalid", "webauthn"]),
        ({"totp": {"secret": "JBSWY3DPEHPK3PXP"}}, None, ["invalid"]),
        (None, None, []),
    ],
)
def test_auth0_mfa_factors(factors, written, causes):
    assert auth0_mfa_factors(factors) == (written, causes)


# --------------------------------------------------------------------------- Keycloak, end to end


def _migrate_keycloak(tmp: Path, realm: Path, *args: str) -> tuple[int, dict, dict, str]:
    out = tmp / "out" / "importBody.json"
    code = main(
        [
            "migrate",
            "keycloak",
            "--org=123",
            f"--realm={realm}",
            f"--output={out}",
            f"--zitadel-config={CONFIG}",
            *args,
        ]
    )
    manifest = json.loads(out.with_name("importBody.manifest.json").read_text())
    users = {u["userName"]: u for u in (e["user"] for e in _written(out))}
    return code, manifest, users, ""


def _written(out: Path) -> list[dict]:
    return json.loads(out.read_bytes())["dataOrgs"]["orgs"][0]["humanUsers"]


def _source_users(realm: Path) -> tuple[dict, dict]:
    doc = json.loads(realm.read_text())
    return doc, {u["username"]: u for u in doc["users"]}


def _keycloak_source_codes(credential: dict, realm: dict) -> list[str]:
    """The codes Keycloak accepts for ``credential``, read here independently of transforms/mapping/otp.py:
    the key is secretData.value's UTF-8 bytes, its base32 decoding with secretEncoding BASE32, or
    (the deprecated representation) hashedSaltedValue, base64-decoded when config.base64Encoded says so;
    parameters the credential leaves out are the realm's otpPolicy*."""
    if "credentialData" in credential:
        data = json.loads(credential["credentialData"])
        value = json.loads(credential["secretData"])["value"]
        key = base64.b32decode(value) if data.get("secretEncoding") == "BASE32" else value.encode()
    else:
        data = credential
        value = credential["hashedSaltedValue"]
        key = (
            base64.b64decode(value)
            if credential["config"].get("base64Encoded") == ["true"]
            else value.encode()
        )
    algorithm = data.get("algorithm") or realm["otpPolicyAlgorithm"]
    digits = data.get("digits") or realm["otpPolicyDigits"]
    period = data.get("period") or realm["otpPolicyPeriod"]
    return [_totp(key, t, digits, period, algorithm) for t in TIMES]


@pytest.fixture(scope="module")
def keycloak_current(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kc-otp")
    return (
        *_migrate_keycloak(tmp, KC / "realm-otp-current.json")[:3],
        *_source_users(KC / "realm-otp-current.json"),
    )


def test_keycloak_written_secrets_give_the_source_codes(keycloak_current):
    code, manifest, users, realm, source = keycloak_current
    assert code == 0 and manifest["invariant"]["holds"], manifest["invariant"]["text"]
    # ann: the layout without secretEncoding; bo: secretEncoding BASE32; cy: the newer of two devices; ida:
    # a credential without algorithm/digits/period (the realm's policy); jo: no password.
    expected = ("ann", "bo", "cy", "ida", "jo")
    for name in expected:
        otps = [c for c in source[name]["credentials"] if c["type"] == "otp"]
        newest = max(otps, key=lambda c: c["createdDate"])
        assert _zitadel_codes(users[name]["otpCode"]) == _keycloak_source_codes(newest, realm), name
        if len(otps) > 1:
            older = min(otps, key=lambda c: c["createdDate"])
            assert _zitadel_codes(users[name]["otpCode"]) != _keycloak_source_codes(older, realm)
    assert sorted(n for n, u in users.items() if "otpCode" in u) == sorted(expected)
    assert manifest["counts"]["users_with_otp"] == len(expected)


def test_keycloak_refused_devices_are_counted_and_would_have_failed(keycloak_current):
    _, manifest, users, realm, source = keycloak_current
    for name in ("dee", "eve", "fay", "gus"):
        assert "otpCode" not in users[name] and "hashedPassword" in users[name], name  # password kept
    # Had the secret been written, ZITADEL's codes would not be the ones the user's app shows.
    for name in ("eve", "fay", "gus"):
        (otp,) = [c for c in source[name]["credentials"] if c["type"] == "otp"]
        key = json.loads(otp["secretData"])["value"].encode()
        zitadel = [_totp(key, t) for t in TIMES]
        assert zitadel != _keycloak_source_codes(otp, realm), name
    assert manifest["second_factors_not_carried"] == {
        "keycloak.otp.algorithm-HmacSHA256": 1,
        "keycloak.otp.digits-8": 1,
        "keycloak.otp.hotp": 1,
        "keycloak.otp.period-60": 1,
        "keycloak.otp.superseded": 1,
    }
    assert manifest["counts"]["keycloak.otp_not_carried.algorithm-HmacSHA256"] == 1


def test_keycloak_update_password_becomes_password_change_required(keycloak_current):
    _, manifest, users, _, source = keycloak_current
    assert users["hal"]["passwordChangeRequired"] is True and "hashedPassword" in users["hal"]
    forced = [n for n, u in source.items() if "UPDATE_PASSWORD" in u["requiredActions"]]
    assert sorted(forced) == ["hal", "jo"]
    # jo has no password to change: the action is counted, not written.
    assert "passwordChangeRequired" not in users["jo"] and "hashedPassword" not in users["jo"]
    assert [n for n, u in users.items() if u.get("passwordChangeRequired")] == ["hal"]
    assert manifest["counts"]["keycloak.password_change_required"] == 1
    assert manifest["required_actions_not_carried"] == {
        "keycloak.CONFIGURE_TOTP": 1,
        "keycloak.TERMS_AND_CONDITIONS": 1,
        "keycloak.UPDATE_PASSWORD": 1,
        "keycloak.VERIFY_EMAIL": 1,
    }
    assert "keycloak.requiredActions" not in manifest["fields_not_carried"]


def test_keycloak_summary_lists_what_did_not_arrive(tmp_path, capsys):
    code, *_ = _migrate_keycloak(tmp_path, KC / "realm-otp-current.json")
    out = capsys.readouterr().out
    assert code == 0
    for text in (
        "users written with OTP (otpCode)",
        "users with passwordChangeRequired (UPDATE_PASSWORD)",
        "second factors not carried (re-enrol), by cause",
        "keycloak.otp.algorithm-HmacSHA256",
        "required actions not carried (users)",
        "keycloak.CONFIGURE_TOTP",
    ):
        assert text in out, text
    assert "other credentials not converted: otp" not in out


@pytest.mark.parametrize("name", ["realm-otp-legacy.json", "realm-otp-policy-sha256.json"])
def test_keycloak_legacy_layout_and_realm_policy(tmp_path, name):
    code, manifest, users, _ = _migrate_keycloak(tmp_path, KC / name)
    realm, source = _source_users(KC / name)
    assert code == 0 and manifest["invariant"]["holds"]
    carried = {}
    for user_name, user in source.items():
        otps = [c for c in user["credentials"] if c["type"] in ("otp", "totp", "hotp")]
        (otp,) = otps
        kind = json.loads(otp["credentialData"]).get("subType") if "credentialData" in otp else otp["type"]
        algorithm = (json.loads(otp["credentialData"]) if "credentialData" in otp else otp).get(
            "algorithm"
        ) or realm["otpPolicyAlgorithm"]
        carried[user_name] = kind == "totp" and algorithm == "HmacSHA1"
        if carried[user_name]:
            assert _zitadel_codes(users[user_name]["otpCode"]) == _keycloak_source_codes(otp, realm), (
                user_name
            )
        else:
            assert "otpCode" not in users[user_name], user_name
    assert manifest["counts"].get("users_with_otp", 0) == sum(carried.values())
    lost = sum(manifest["second_factors_not_carried"].values())
    assert lost == len(carried) - sum(carried.values())
    # The legacy realm's refused device is its HOTP one; the other realm's, the credential that
    # took the realm's HmacSHA256 (neither a default nor "unknown").
    cause = "hotp" if "legacy" in name else "algorithm-HmacSHA256"
    assert manifest["second_factors_not_carried"] == {f"keycloak.otp.{cause}": 1}


def test_keycloak_split_export_takes_the_policy_of_its_realm_file(tmp_path):
    realm, source = _source_users(KC / "realm-otp-policy-sha256.json")
    users = realm.pop("users")
    export = tmp_path / "export"  # outputs go beside it: a run never writes into its --realm folder
    export.mkdir()
    (export / "sha256realm-realm.json").write_text(json.dumps(realm))
    (export / "sha256realm-users-0.json").write_text(json.dumps({"realm": "sha256realm", "users": users}))
    (source_file,) = plan_realm_sources(str(export))
    assert source_file.otp_policy == OtpPolicy(algorithm="HmacSHA256")
    code, manifest, written, _ = _migrate_keycloak(tmp_path / "run", export)
    assert code == 0 and manifest["second_factors_not_carried"] == {"keycloak.otp.algorithm-HmacSHA256": 1}
    assert "otpCode" not in written["kim"] and "otpCode" in written["lou"]
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "sha256realm-users-0.json").write_text(json.dumps({"realm": "sha256realm", "users": users}))
    assert plan_realm_sources(str(alone))[0].otp_policy is None  # not read: never guessed
    array = tmp_path / "realms.json"
    array.write_text(json.dumps([{**realm, "users": users}]))
    assert plan_realm_sources(str(array))[0].otp_policy is None  # a multi-realm array: not read


# --------------------------------------------------------------------------- Auth0, end to end


def _migrate_auth0(tmp: Path, users: Path, *args: str) -> tuple[int, dict, dict, list[dict]]:
    out = tmp / "out" / "importBody.json"
    code = main(
        ["migrate", "auth0", "--org=9", f"--users={users}", "--passwords=none", f"--output={out}", *args]
    )
    manifest = json.loads(out.with_name("importBody.manifest.json").read_text())
    written = {u["user"]["email"]["email"]: u for u in _written(out)}
    dead_file = out.with_name("importBody.dead-letter.ndjson")
    dead = [json.loads(line) for line in dead_file.read_text().splitlines()] if dead_file.exists() else []
    return code, manifest, written, dead


def test_auth0_bulk_import_totp_factors_give_the_source_codes(tmp_path, capsys):
    code, manifest, written, _ = _migrate_auth0(tmp_path, AUTH0_FILE)
    assert code == 0 and manifest["invariant"]["holds"], manifest["invariant"]["text"]
    profiles = {p["email"]: p for p in json.loads(AUTH0_FILE.read_text())}
    with_totp = 0
    for email, profile in profiles.items():
        secrets = [f["totp"]["secret"] for f in profile.get("mfa_factors", []) if "totp" in f]
        valid = [s for s in secrets if set(s) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")]
        user = written[email]["user"]
        if valid:  # Auth0: the base32 secret's bytes are the key, SHA-1, 6 digits, 30 s
            with_totp += 1
            assert _zitadel_codes(user["otpCode"]) == [_totp(base64.b32decode(valid[0]), t) for t in TIMES]
        else:
            assert "otpCode" not in user, email
    counts = manifest["counts"]
    assert counts["auth0.mfa_factors.totp"] == counts["users_with_otp"] == with_totp
    assert manifest["second_factors_not_carried"] == {
        "auth0.mfa_factors.email": 1,
        "auth0.mfa_factors.phone": 2,
        "auth0.mfa_factors.totp-invalid-secret": 1,
    }
    assert f"mfa_factors totp {with_totp}" in manifest["invariant"]["text"]
    assert "auth0.mfa_factors" not in json.dumps(manifest["unknown_fields"])
    out = capsys.readouterr().out
    assert "mfa_factors totp secrets read (bulk-import)" in out and "auth0.mfa_factors.phone" in out


def test_auth0_mfa_export_record_wins_over_the_profile_factor(tmp_path):
    profiles = json.loads(AUTH0_FILE.read_text())
    # A second profile with ann's e-mail and no user_id: the same derived id, a duplicate.
    profiles.append({**profiles[0], "name": "Ann Again"})
    users = tmp_path / "users.json"
    users.write_text(json.dumps(profiles))
    ann = auth0_user_id("ann@example.com")
    mfa = tmp_path / "mfa.json"
    mfa.write_text(json.dumps({"user_id": ann, "type": "otp", "otp_secret": "GEZDGNBVGY3TQOJQ"}) + "\n")
    code, manifest, written, dead = _migrate_auth0(tmp_path, users, f"--mfa={mfa}")
    assert code == 0 and manifest["invariant"]["holds"], manifest["invariant"]["text"]
    assert _zitadel_codes(written["ann@example.com"]["user"]["otpCode"]) == [
        _totp(base64.b32decode("GEZDGNBVGY3TQOJQ"), t) for t in TIMES
    ]
    otp_dead = sorted(d["reason"] for d in dead if d["source"] == "auth0-mfa")
    # ann's own factor gives way to the export record; the duplicate's factor goes with it.
    assert otp_dead == ["otp-superseded", "profile-rejected"]
    assert "MFA records 1 + mfa_factors totp 3 = OTP written 2" in manifest["invariant"]["text"]
