"""The validation rules added for real-world inputs: plaintext passwords, OTP secrets, IdP links,
and the hash families push accepts from foreign bodies (tables, no pipeline)."""
from __future__ import annotations

import copy

import pytest

from transforms.body_check import PUSH_VALIDATION
from transforms.validate import Reason, ValidationOptions, hash_problem, otp_problem, validate_user

BASE = {"userId": "1", "user": {"userName": "a@b.co", "profile": {"firstName": "A", "lastName": "B"},
                                "email": {"email": "a@b.co"}}}
BCRYPT = "$2b$10$" + "a" * 53
LINK = {"configId": "123", "externalUserId": "998725698151649400000", "displayName": "Ann"}


def with_user(**fields) -> dict:
    entry = copy.deepcopy(BASE)
    entry["user"].update(fields)
    return entry


@pytest.mark.parametrize("fields", [
    {"password": "zero-password", "passwordChangeRequired": True},
    {"otpCode": "JBSWY3DPEHPK3PXP"},
    {"otpCode": "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP===="},
    {"idps": [LINK]},
    {"idps": [{"configId": "1", "externalUserId": "x"}]},  # displayName optional
    {"idps": []},
])
def test_accepted(fields):
    assert validate_user(with_user(**fields), ValidationOptions()).reason is None


@pytest.mark.parametrize("fields, reason", [
    ({"password": ""}, Reason.INVALID_PASSWORD),
    ({"password": "x" * 201}, Reason.INVALID_PASSWORD),
    ({"password": "pw", "hashedPassword": {"value": BCRYPT}}, Reason.INVALID_PASSWORD),
    ({"otpCode": "jbswy3dp ehpk3pxp!"}, Reason.INVALID_OTP_SECRET),
    ({"otpCode": "ABC"}, Reason.INVALID_OTP_SECRET),  # too short to be a TOTP secret
    ({"otpCode": 12345678901234567}, Reason.INVALID_OTP_SECRET),
    ({"idps": {"configId": "1"}}, Reason.INVALID_IDP_LINK),
    ({"idps": [{"configId": "", "externalUserId": "x"}]}, Reason.INVALID_IDP_LINK),
    ({"idps": [{"configId": "1", "externalUserId": "x" * 201}]}, Reason.INVALID_IDP_LINK),
    ({"idps": [{"configId": "1", "externalUserId": "x", "displayName": 5}]}, Reason.INVALID_IDP_LINK),
    ({"idps": ["junk"]}, Reason.INVALID_IDP_LINK),
])
def test_rejected(fields, reason):
    assert validate_user(with_user(**fields), ValidationOptions()).reason == reason


def test_otp_detail_never_shows_the_secret():
    assert "JBSWY3DP" not in otp_problem("JBSWY3DP!")[1]


@pytest.mark.parametrize("value, push_ok", [
    ("$6$rounds=5000$salt$" + "a" * 86, True),  # sha512 crypt
    ("$5$salt$" + "a" * 43, True),  # sha256 crypt
    ("$1$salt$" + "a" * 22, True),  # md5crypt
    ("$P$" + "B" * 31, True),  # phpass
    ("$scrypt$ln=16,r=8,p=1$c2FsdA$aGFzaA", True),
    ("$2b$04$" + "a" * 53, True),  # bcrypt cost 4: push checks the format only by default
    ("plain-text", False),
    ("$sha1$1$x$y", False),
])
def test_push_accepts_every_family_the_server_verifies(value, push_ok):
    assert (hash_problem(value, PUSH_VALIDATION) is None) is push_ok
    if value.startswith(("$6$", "$1$", "$P$")):
        assert hash_problem(value, ValidationOptions()) is not None  # never from an Auth0 export
