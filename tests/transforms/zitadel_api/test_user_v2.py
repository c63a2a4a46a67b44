"""The user service v2 create and list requests (transforms/zitadel_api/user_v2.py), checked
against ZITADEL's published schema (the vendored descriptors)."""

from __future__ import annotations

import schema_check_v2

from transforms.zitadel_api.user_v2 import ADD_HUMAN_PATH, add_human_request, list_users_request, owner_of


def test_an_import_entry_becomes_one_add_human_request_the_schema_accepts():
    entry = {
        "user_id": "auth0|1",
        "user": {
            "user_name": "ada@example.com",
            "profile": {"first_name": "Ada", "last_name": "L", "preferred_language": "en"},
            "email": {"email": "ada@example.com", "is_email_verified": False},
            "phone": {"phone": "+41791234567", "is_phone_verified": True},
            "hashed_password": {"value": "$2b$10$" + "a" * 53},
            "password_change_required": True,
            "idps": [{"config_id": "idp", "external_user_id": "g1", "display_name": "ada"}],
            "otp_code": "JBSWY3DPEHPK3PXP",
        },
    }
    request = add_human_request("123", entry, [{"id": "auth0|1", "key": "k", "value": "e30="}])
    assert request == {
        "userId": "auth0|1",
        "username": "ada@example.com",
        "organization": {"orgId": "123"},
        "profile": {"givenName": "Ada", "familyName": "L", "preferredLanguage": "en"},
        "email": {"email": "ada@example.com", "returnCode": {}},
        "phone": {"phone": "+41791234567", "isVerified": True},
        "hashedPassword": {"hash": "$2b$10$" + "a" * 53, "changeRequired": True},
        "idpLinks": [{"idpId": "idp", "userId": "g1", "userName": "ada"}],
        "totpSecret": "JBSWY3DPEHPK3PXP",
        "metadata": [{"key": "k", "value": "e30="}],
    }
    assert schema_check_v2.checker().check("POST", ADD_HUMAN_PATH, request) == []


def test_list_users_requests_meet_the_schema_and_answers_name_their_org():
    request = list_users_request(org_id="123", user_ids=["a", "b"], user_name="x", offset=1000, limit=500)
    assert schema_check_v2.checker().check("POST", "/v2/users", request) == []
    assert owner_of({"user": {"details": {"resourceOwner": "123"}}}) == "123"
    assert owner_of({}) == ""
