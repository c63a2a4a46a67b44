"""The import API's request rules (transforms/mapping/validate.py) as table tests, no pipeline."""

from __future__ import annotations

import copy

import bcrypt
import pytest

from transforms.mapping.validate import (
    CONTROL_CHARS_REMOVED,
    MAX_NAME,
    Reason,
    ValidationOptions,
    base_language,
    clean_text,
    control_char_problem,
    hash_problem,
    otp_problem,
    valid_email,
    validate_user,
)

OPTS = ValidationOptions()
B64 = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
SALT_AND_HASH = (B64 * 2)[:53]


def bcrypt_string(prefix: str = "2b", cost: str = "10", tail: str = SALT_AND_HASH) -> str:
    return f"${prefix}${cost}${tail}"


def entry(**changes) -> dict:
    """A valid humanUsers entry; ``changes`` maps dotted paths to values (None deletes)."""
    base = {
        "userId": "auth0|1",
        "user": {
            "userName": "ann@example.com",
            "profile": {"firstName": "Ann", "lastName": "Lee", "preferredLanguage": "en"},
            "email": {"email": "ann@example.com", "isEmailVerified": True},
            "phone": {"phone": "+4912345"},
            "hashedPassword": {"value": bcrypt_string()},
        },
    }
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = base
        for key in parents:
            node = node[key]
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return base


# --------------------------------------------------------------------------- accepted users


def test_valid_user_passes_unchanged():
    user = entry()
    before = copy.deepcopy(user)
    result = validate_user(user, OPTS)
    assert (result.reason, result.notes) == (None, [])
    assert user == before


@pytest.mark.parametrize(
    "changes",
    [
        {"userId": None},  # userId is optional for the import API
        {"user__phone": None},
        {"user__hashedPassword": None},
        {"user__profile__preferredLanguage": None},
        {"user__userName": "x" * MAX_NAME},
        {"user__profile__firstName": "F" * MAX_NAME, "user__profile__lastName": "L" * MAX_NAME},
        {"user__phone": {"phone": "+" + "1" * 49}},
    ],
    ids=["no-user-id", "no-phone", "no-password", "no-language", "username-200", "names-200", "phone-50"],
)
def test_edge_values_accepted(changes):
    result = validate_user(entry(**changes), OPTS)
    assert (result.reason, result.notes) == (None, [])


# --------------------------------------------------------------------------- rejections


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"userId": 123}, Reason.INVALID_USER_ID),
        ({"userId": "u" * (MAX_NAME + 1)}, Reason.INVALID_USER_ID),
        ({"user__userName": ""}, Reason.INVALID_USERNAME),
        ({"user__userName": None}, Reason.INVALID_USERNAME),
        ({"user__userName": "x" * (MAX_NAME + 1)}, Reason.INVALID_USERNAME),
        ({"user__profile__firstName": ""}, Reason.INVALID_FIRST_NAME),
        ({"user__profile__firstName": "F" * (MAX_NAME + 1)}, Reason.INVALID_FIRST_NAME),
        ({"user__profile__lastName": None}, Reason.INVALID_LAST_NAME),
        ({"user__profile__lastName": "L" * (MAX_NAME + 1)}, Reason.INVALID_LAST_NAME),
        ({"user__email": None}, Reason.MISSING_EMAIL),
        ({"user__email": {"email": ""}}, Reason.MISSING_EMAIL),
        ({"user__email": {"email": "not-an-address"}}, Reason.INVALID_EMAIL),
        ({"user__email": {"email": "ann@exa mple.com"}}, Reason.INVALID_EMAIL),
        ({"user__email": {"email": ("a" * 65) + "@example.com"}}, Reason.INVALID_EMAIL),
        ({"user__hashedPassword": {"value": "plain-text"}}, Reason.INVALID_HASH),
        ({"user__hashedPassword": {"value": ""}}, Reason.INVALID_HASH),
        ({"user__hashedPassword": {}}, Reason.INVALID_HASH),
        ({"user__hashedPassword": {"value": bcrypt_string(cost="09")}}, Reason.BCRYPT_COST),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_rejections(changes, reason):
    result = validate_user(entry(**changes), OPTS)
    assert result.reason == reason
    assert result.detail


def test_first_problem_wins_in_field_order():
    result = validate_user(entry(user__userName="", user__email={"email": "bad"}), OPTS)
    assert result.reason == Reason.INVALID_USERNAME


def test_hash_never_appears_in_detail():
    secret = "$2b$10$" + "!" * 53
    result = validate_user(entry(user__hashedPassword={"value": secret}), OPTS)
    assert result.reason == Reason.INVALID_HASH
    assert secret not in result.detail and "!!!" not in result.detail


# --------------------------------------------------------------------------- bcrypt


@pytest.mark.parametrize(
    "value, expected",
    [
        (bcrypt_string("2a"), None),
        (bcrypt_string("2b"), None),
        (bcrypt_string("2y"), None),
        (bcrypt_string(cost="16"), None),
        (bcrypt_string("2x"), Reason.INVALID_HASH),
        (bcrypt_string("2"), Reason.INVALID_HASH),
        (bcrypt_string(cost="1"), Reason.INVALID_HASH),  # cost must be two digits
        (bcrypt_string(tail=SALT_AND_HASH[:-1]), Reason.INVALID_HASH),  # 52 characters
        (bcrypt_string(tail=SALT_AND_HASH + "A"), Reason.INVALID_HASH),  # 54 characters
        (bcrypt_string(tail=SALT_AND_HASH[:-1] + "+"), Reason.INVALID_HASH),  # not bcrypt base64
        (bcrypt_string(cost="09"), Reason.BCRYPT_COST),
        (bcrypt_string(cost="17"), Reason.BCRYPT_COST),
        (bcrypt_string(cost="31"), Reason.BCRYPT_COST),
        (None, Reason.INVALID_HASH),
        (42, Reason.INVALID_HASH),
        (
            "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            Reason.INVALID_HASH,
        ),  # not from Auth0
        ("$pbkdf2-sha256$27500$c2FsdA==$aGFzaA==", Reason.INVALID_HASH),
        ("$1$salt$hash", Reason.INVALID_HASH),
    ],
    ids=lambda v: None if v is None or isinstance(v, str) and v.startswith("$") else repr(v)[:30],
)
def test_hash_problem_bcrypt_pattern_and_cost(value, expected):
    problem = hash_problem(value, OPTS)
    assert (problem[0] if problem else None) == expected


@pytest.mark.parametrize(
    "cost, low, high, expected",
    [
        ("04", 4, 31, None),
        ("04", 10, 16, Reason.BCRYPT_COST),
        ("10", 10, 10, None),
        ("11", 10, 10, Reason.BCRYPT_COST),
        ("31", 4, 31, None),
    ],
)
def test_bcrypt_cost_bounds_follow_options(cost, low, high, expected):
    problem = hash_problem(bcrypt_string(cost=cost), ValidationOptions(low, high))
    assert (problem[0] if problem else None) == expected


def test_real_bcrypt_hashes_match_the_pattern():
    for cost in (4, 10):
        value = bcrypt.hashpw(b"correct horse", bcrypt.gensalt(cost)).decode()
        assert hash_problem(value, ValidationOptions(4, 16)) is None


def test_other_families_accepted_only_when_allowed():
    opts = ValidationOptions(allowed_hash_families=("bcrypt", "argon2", "pbkdf2"))
    assert hash_problem("$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo", opts) is None
    assert hash_problem("$pbkdf2-sha256$27500$c2FsdA==$aGFzaA==", opts) is None
    assert hash_problem("$argon2id$v=19$broken", opts)[0] == Reason.INVALID_HASH
    assert (
        hash_problem(bcrypt_string(), ValidationOptions(allowed_hash_families=("argon2",)))[0]
        == Reason.INVALID_HASH
    )


# --------------------------------------------------------------------------- dropped fields


@pytest.mark.parametrize("phone", ["4912345", "", "+" + "1" * 50, None, 4912345])
def test_bad_phone_dropped_and_noted(phone):
    user = entry(user__phone={"phone": phone, "isPhoneVerified": True})
    result = validate_user(user, OPTS)
    assert (result.reason, result.notes) == (None, ["phone-dropped"])
    assert "phone" not in user["user"]


@pytest.mark.parametrize(
    "language, kept",
    [
        ("en", "en"),
        ("fr-FR", "fr"),
        ("en-u-rg-uszzzz", "en"),
        ("pt_BR", "pt"),
        ("DE", "de"),
        ("zh-Hant-TW", "zh"),
    ],
)
def test_language_reduced_to_base(language, kept):
    user = entry(user__profile__preferredLanguage=language)
    result = validate_user(user, OPTS)
    assert (result.reason, result.notes) == (None, [])
    assert user["user"]["profile"]["preferredLanguage"] == kept


@pytest.mark.parametrize("language", ["", "-", "123", "e", "abcdefghijk-x", "x-klingon", 7])
def test_language_without_valid_base_dropped_and_noted(language):
    user = entry(user__profile__preferredLanguage=language)
    result = validate_user(user, OPTS)
    assert (result.reason, result.notes) == (None, ["language-dropped"])
    assert "preferredLanguage" not in user["user"]["profile"]


def test_long_nickname_and_display_name_dropped():
    user = entry(user__profile__nickName="n" * 201, user__profile__displayName="d" * 201)
    result = validate_user(user, OPTS)
    assert result.reason is None
    assert sorted(result.notes) == ["displayname-dropped", "nickname-dropped"]
    assert set(user["user"]["profile"]) == {"firstName", "lastName", "preferredLanguage"}


def test_rejected_user_is_not_modified():
    user = entry(user__userName="", user__phone={"phone": "123"})
    before = copy.deepcopy(user)
    assert validate_user(user, OPTS).reason == Reason.INVALID_USERNAME
    assert user == before


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    "email, ok",
    [
        ("ann@example.com", True),
        ("Ann.Lee+tag@sub.example.co", True),
        ("a@b", True),
        ("", False),
        ("ann", False),
        ("ann@", False),
        ("@example.com", False),
        ("ann@-example.com", False),
        ("ann@example..com", False),
        ("a" * 64 + "@example.com", True),
        ("a" * 65 + "@example.com", False),
        ("a@" + ("b" * 63 + ".") * 4 + "com", False),  # over 254 characters
    ],
)
def test_valid_email(email, ok):
    assert valid_email(email) is ok


@pytest.mark.parametrize(
    "locale, base",
    [
        ("fr-FR", "fr"),
        ("en-u-rg-uszzzz", "en"),
        (" de ", "de"),
        ("und", "und"),
        ("", None),
        (None, None),
        (5, None),
        ("1a", None),
    ],
)
def test_base_language(locale, base):
    assert base_language(locale) == base


# --------------------------------------------------------------------------- text rules (README)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"userId": "auth0|1\x00"}, "userId"),
        ({"user__userName": "ann\x00@example.com"}, "userName"),
        ({"user__userName": "ann\tlee"}, "userName"),
        ({"user__userName": "ann\x7f"}, "userName"),
        ({"user__email": {"email": "ann@example.com\n"}}, "email"),
        ({"user__idps": [{"configId": "idp\x1b", "externalUserId": "1"}]}, "idps.configId"),
        ({"user__idps": [{"configId": "idp", "externalUserId": "1\r"}]}, "idps.externalUserId"),
    ],
    ids=[
        "user-id-nul",
        "username-nul",
        "username-tab",
        "username-del",
        "email-lf",
        "idp-config-esc",
        "idp-external-cr",
    ],
)
def test_control_characters_in_identity_fields_reject_the_user(changes, field):
    result = validate_user(entry(**changes), OPTS)
    assert result.reason == Reason.CONTROL_CHARACTERS
    assert result.detail.startswith(f"{field} contains control character U+")


@pytest.mark.parametrize(
    "field, value, cleaned",
    [
        ("firstName", "Ann\x00", "Ann"),
        ("lastName", "Lee\x01\x02", "Lee"),
        ("lastName", "van\tder\r\nLee", "van der Lee"),
        ("nickName", "\x1bannie\x7f", "annie"),
        ("displayName", "Ann Lee\n", "Ann Lee"),
        ("displayName", "\x00", None),  # optional: left out when nothing remains
        ("nickName", "\t", None),
    ],
)
def test_control_characters_removed_from_names(field, value, cleaned):
    user = entry(**{f"user__profile__{field}": value})
    result = validate_user(user, OPTS)
    assert (result.reason, result.notes) == (None, [CONTROL_CHARS_REMOVED])
    assert user["user"]["profile"].get(field) == cleaned


@pytest.mark.parametrize(
    "field, reason",
    [
        ("firstName", Reason.INVALID_FIRST_NAME),
        ("lastName", Reason.INVALID_LAST_NAME),
    ],
)
def test_name_empty_after_removal_is_rejected(field, reason):
    result = validate_user(entry(**{f"user__profile__{field}": "\x00\x00"}), OPTS)
    assert result.reason == reason


def test_control_characters_removed_from_idp_display_name():
    user = entry(user__idps=[{"configId": "idp", "externalUserId": "1", "displayName": "Ann\x00 Lee"}])
    result = validate_user(user, OPTS)
    assert (result.reason, result.notes) == (None, [CONTROL_CHARS_REMOVED])
    assert user["user"]["idps"][0]["displayName"] == "Ann Lee"


@pytest.mark.parametrize(
    "value, cleaned",
    [
        ("plain", "plain"),
        ("  spaced  ", "  spaced  "),  # nothing removed: left as the source had it
        ("a\x00b", "ab"),
        ("a\t\tb", "a b"),
        ("a\u0085b", "a\u0085b"),  # C1 controls are not C0: kept (ZITADEL stores them)
    ],
)
def test_clean_text(value, cleaned):
    assert clean_text(value) == cleaned


def test_control_char_problem_never_shows_the_value():
    assert control_char_problem("secret\x00value", "metadata key") == (
        Reason.CONTROL_CHARACTERS,
        "metadata key contains control character U+0000",
    )
    assert control_char_problem("fine", "userName") is None


# --- plaintext passwords, OTP secrets and IdP links (tables, no pipeline); the hash families
# push accepts are in test_body_check.py.
_LINK_BASE = {
    "userId": "1",
    "user": {
        "userName": "a@b.co",
        "profile": {"firstName": "A", "lastName": "B"},
        "email": {"email": "a@b.co"},
    },
}
_BCRYPT = "$2b$10$" + "a" * 53
_LINK = {"configId": "123", "externalUserId": "998725698151649400000", "displayName": "Ann"}


def _with_user(**fields) -> dict:
    entry = copy.deepcopy(_LINK_BASE)
    entry["user"].update(fields)
    return entry


@pytest.mark.parametrize(
    "fields",
    [
        {"password": "zero-password", "passwordChangeRequired": True},
        {"otpCode": "JBSWY3DPEHPK3PXP"},
        {"otpCode": "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP===="},
        {"idps": [_LINK]},
        {"idps": [{"configId": "1", "externalUserId": "x"}]},  # displayName optional
        {"idps": []},
    ],
)
def test_plaintext_otp_and_links_accepted(fields):
    assert validate_user(_with_user(**fields), ValidationOptions()).reason is None


@pytest.mark.parametrize(
    "fields, reason",
    [
        ({"password": ""}, Reason.INVALID_PASSWORD),
        ({"password": "x" * 201}, Reason.INVALID_PASSWORD),
        ({"password": "pw", "hashedPassword": {"value": _BCRYPT}}, Reason.INVALID_PASSWORD),
        ({"otpCode": "jbswy3dp ehpk3pxp!"}, Reason.INVALID_OTP_SECRET),
        ({"otpCode": "ABC"}, Reason.INVALID_OTP_SECRET),  # too short to be a TOTP secret
        ({"otpCode": 12345678901234567}, Reason.INVALID_OTP_SECRET),
        ({"idps": {"configId": "1"}}, Reason.INVALID_IDP_LINK),
        ({"idps": [{"configId": "", "externalUserId": "x"}]}, Reason.INVALID_IDP_LINK),
        ({"idps": [{"configId": "1", "externalUserId": "x" * 201}]}, Reason.INVALID_IDP_LINK),
        ({"idps": [{"configId": "1", "externalUserId": "x", "displayName": 5}]}, Reason.INVALID_IDP_LINK),
        ({"idps": ["junk"]}, Reason.INVALID_IDP_LINK),
    ],
)
def test_plaintext_otp_and_links_rejected(fields, reason):
    assert validate_user(_with_user(**fields), ValidationOptions()).reason == reason


def test_otp_detail_never_shows_the_secret():
    assert "JBSWY3DP" not in otp_problem("JBSWY3DP!")[1]
