"""The validation rules added for real-world inputs: plaintext passwords, OTP secrets, IdP links
(tables, no pipeline). The hash families push accepts are in test_body_check.py."""
from __future__ import annotations

import copy

import pytest

from transforms.validate import Reason, ValidationOptions, otp_problem, validate_user

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
