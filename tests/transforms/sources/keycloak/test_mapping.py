"""One Keycloak user → a humanUsers entry or a rejection (transforms/sources/keycloak/mapping.py)."""

from __future__ import annotations

import base64

import pytest
from keycloak_fixtures import make_user, pbkdf2_credential

from transforms.hashing.policy import OnUnsupportedHash
from transforms.mapping.ids import keycloak_user_id
from transforms.mapping.validate import Reason
from transforms.sources.keycloak.mapping import (
    KeycloakOptions,
    MappedUser,
    Rejection,
    attribute_metadata,
    fields_not_carried,
    idp_links,
    map_user,
    other_credential_types,
    unknown_fields,
)

# --------------------------------------------------------------------------- mapping


def test_map_user_reference_shape():
    mapped = map_user(make_user(1), KeycloakOptions())
    assert isinstance(mapped, MappedUser)
    assert mapped.password == "pbkdf2-sha256"
    user = mapped.entry["user"]
    assert mapped.entry["userId"] == "id-1"
    assert user["userName"] == "user1"
    assert user["profile"] == {"firstName": "First1", "lastName": "Last1"}
    assert user["email"] == {"email": "user1@example.com", "isEmailVerified": True}
    assert user["hashedPassword"]["value"].startswith("$pbkdf2-sha256$1000$")


def test_map_user_name_fallbacks_and_unverified_email():
    mapped = map_user(make_user(2, firstName="", lastName=None, emailVerified=False), KeycloakOptions())
    assert mapped.entry["user"]["profile"] == {"firstName": "user2", "lastName": "user2"}
    assert mapped.entry["user"]["email"] == {"email": "user2@example.com"}  # protojson omits false


def test_map_user_phone_and_language_from_attributes():
    user = make_user(
        3, attributes={"phoneNumber": ["+41791234567"], "phoneNumberVerified": ["true"], "locale": ["de-CH"]}
    )
    mapped = map_user(user, KeycloakOptions())
    assert mapped.entry["user"]["phone"] == {"phone": "+41791234567", "isPhoneVerified": True}
    assert mapped.entry["user"]["profile"]["preferredLanguage"] == "de"
    bad_phone = map_user(make_user(4, attributes={"phone_number": ["079 123 45 67"]}), KeycloakOptions())
    assert "phone" not in bad_phone.entry["user"] and bad_phone.notes == ["phone-dropped"]


def test_attribute_metadata_single_and_multi_valued():
    entries, dropped = attribute_metadata(
        {
            "dept": ["sales"],
            "groups": ["a", "b"],
            "empty": [],
            "blank": [""],  # an empty value: ZITADEL refuses it (value at least 1 byte)
            "bare": "",
            "x" * 201: ["v"],
        }
    )
    decoded = {e["key"]: base64.b64decode(e["value"]) for e in entries}
    assert decoded == {"dept": b"sales", "groups": b'["a","b"]'}
    assert dropped == 1
    with_flag = map_user(make_user(5, attributes={"dept": ["sales"]}), KeycloakOptions(metadata=True))
    assert [e["key"] for e in with_flag.metadata] == ["dept"]
    assert map_user(make_user(5, attributes={"dept": ["sales"]}), KeycloakOptions()).metadata == []


@pytest.mark.parametrize(
    "extra,options,reason",
    [
        ({"enabled": False}, KeycloakOptions(), Reason.DISABLED),
        ({"enabled": None}, KeycloakOptions(), Reason.DISABLED),
        ({"serviceAccountClientId": "client", "email": None}, KeycloakOptions(), Reason.SERVICE_ACCOUNT),
        (
            {"serviceAccountClientId": "client"},
            KeycloakOptions(include_disabled=True),
            Reason.SERVICE_ACCOUNT,
        ),
        ({"email": ""}, KeycloakOptions(), Reason.MISSING_EMAIL),
        ({"email": "not-an-address"}, KeycloakOptions(), Reason.INVALID_EMAIL),
        ({"username": ""}, KeycloakOptions(), Reason.INVALID_USERNAME),
        (
            {"credentials": [{"type": "password", "secretData": "{broken", "credentialData": "{}"}]},
            KeycloakOptions(),
            Reason.UNSUPPORTED_HASH,
        ),
        (
            {
                "credentials": [
                    {
                        "type": "password",
                        "secretData": '{"value":"x","salt":"y"}',
                        "credentialData": '{"hashIterations":1,"algorithm":"sha512-custom"}',
                    }
                ]
            },
            KeycloakOptions(),
            Reason.UNSUPPORTED_HASH,
        ),
        (
            {"credentials": [{"type": "password", "value": "plaintext"}]},
            KeycloakOptions(),
            Reason.PLAINTEXT_PASSWORD,
        ),
    ],
)
def test_map_user_rejections(extra, options, reason):
    result = map_user(make_user(6, **extra), options)
    assert isinstance(result, Rejection)
    assert result.reason == reason and result.detail


def test_map_user_include_disabled_and_not_an_object():
    assert isinstance(
        map_user(make_user(7, enabled=False), KeycloakOptions(include_disabled=True)), MappedUser
    )
    assert map_user(["not", "a", "user"], KeycloakOptions()).reason == Reason.NOT_AN_OBJECT


def test_map_user_unsupported_hash_can_import_without_password():
    user = make_user(8, credentials=[{"type": "password", "secretData": "{broken", "credentialData": "{}"}])
    mapped = map_user(user, KeycloakOptions(on_unsupported_hash=OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD))
    assert isinstance(mapped, MappedUser)
    assert "hashedPassword" not in mapped.entry["user"] and mapped.password is None
    assert mapped.dropped_hash.reason == Reason.UNSUPPORTED_HASH


def test_map_user_federated_imports_without_password():
    mapped = map_user(make_user(9, federationLink="ldap-provider-id"), KeycloakOptions())
    assert mapped.federated and mapped.password is None
    assert "hashedPassword" not in mapped.entry["user"]


def test_first_password_credential_wins_and_others_are_counted():
    otp = {"type": "otp", "secretData": "{}", "credentialData": "{}"}
    second = pbkdf2_credential("other", 2000)
    user = make_user(10, credentials=[otp, pbkdf2_credential("pw10"), second, {"type": "webauthn"}])
    mapped = map_user(user, KeycloakOptions())
    assert mapped.entry["user"]["hashedPassword"]["value"].startswith("$pbkdf2-sha256$1000$")
    # OTP devices are converted or counted by cause (tests/transforms/mapping/test_otp.py), not as "other".
    assert other_credential_types(user["credentials"]) == ["webauthn"]
    assert mapped.otp_not_carried == ["no-secret"] and "otpCode" not in mapped.entry["user"]


def test_user_without_id_gets_an_id_derived_from_realm_and_username():
    user = make_user(11)
    del user["id"]
    mapped = map_user(user, KeycloakOptions(), "acme")
    # Stable across runs and case-insensitive, like Keycloak's usernames (README "User ids").
    assert mapped.entry["userId"] == keycloak_user_id("acme", "USER11")
    assert mapped.entry["userId"] != map_user(user, KeycloakOptions(), "other").entry["userId"]
    assert mapped.derived_id and "derived-id" in mapped.notes


@pytest.mark.parametrize(
    "template, extra, want",
    [
        # (--email-fallback, user fields, e-mail written or dead-letter reason)
        (None, {}, Reason.MISSING_EMAIL),
        ("{username}@users.example.com", {}, "user5@users.example.com"),
        ("{id}@ids.example.com", {}, "id-5@ids.example.com"),
        ("{username}@users.example.com", {"username": "ann lee"}, Reason.INVALID_EMAIL_FALLBACK),
        ("{username}@users.example.com", {"emailVerified": True}, "user5@users.example.com"),
    ],
)
def test_email_fallback(template, extra, want):
    user = make_user(5, **extra)
    del user["email"]
    mapped = map_user(user, KeycloakOptions(email_fallback=template), "acme")
    if want.startswith(("missing", "invalid")):
        assert isinstance(mapped, Rejection) and mapped.reason == want
        assert "--email-fallback" in mapped.detail  # names the flag (and the template when set)
        return
    # Always unverified: nobody confirmed a made-up address.
    assert mapped.entry["user"]["email"] == {"email": want}
    assert mapped.email_fallback and "email-fallback" in mapped.notes


def test_map_user_non_string_id_is_rejected():
    assert map_user(make_user(12, id=12), KeycloakOptions()).reason == Reason.INVALID_USER_ID


# --------------------------------------------------------------------------- brokered users, fields


@pytest.mark.parametrize(
    "identities, links, outcomes",
    [
        (
            [{"identityProvider": "google", "userId": "g-1", "userName": "ann@gmail.com"}],
            [{"configId": "77", "externalUserId": "g-1", "displayName": "ann@gmail.com"}],
            [("linked", "google")],
        ),
        (
            [{"identityProvider": "google", "userId": " g-2 "}],
            [{"configId": "77", "externalUserId": "g-2", "displayName": "ann@example.com"}],
            [("linked", "google")],
        ),
        ([{"identityProvider": "Corp SAML", "userId": "x"}], [], [("unmapped", "corp_saml")]),
        (
            [{"identityProvider": "google", "userId": ""}, "junk"],
            [],
            [("invalid", "google"), ("invalid", "unknown")],
        ),
        (None, [], []),
    ],
)
def test_idp_links_table(identities, links, outcomes):
    user = {"email": "ann@example.com", "username": "ann", "federatedIdentities": identities}
    assert idp_links(user, {"google": "77"}) == (links, outcomes)


@pytest.mark.parametrize(
    "user, metadata, not_carried, unknown",
    [
        (
            {
                "id": "1",
                "requiredActions": ["UPDATE_PASSWORD"],
                "realmRoles": ["r"],
                "groups": [],
                "notBefore": 0,
            },
            False,
            ["realmRoles"],  # required actions are counted by name (tests/transforms/mapping/test_otp.py)
            [],
        ),
        (
            {"attributes": {"a": ["1"]}, "clientRoles": {"app": ["x"]}, "federationLink": "ldap-1"},
            False,
            ["attributes", "clientRoles", "federationLink"],
            [],
        ),
        ({"attributes": {"a": ["1"]}}, True, [], []),
        (
            {"totp": False, "access": {"manage": True}, "favouriteColour": "blue", "my key!": 1},
            False,
            [],
            ["favouriteColour", "my_key_"],
        ),
    ],
)
def test_fields_not_carried_table(user, metadata, not_carried, unknown):
    assert sorted(fields_not_carried(user, metadata)) == not_carried
    assert sorted(unknown_fields(user)) == unknown
