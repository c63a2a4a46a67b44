"""One Firebase user → a humanUsers entry (transforms/sources/firebase/mapping.py), in tables."""

from __future__ import annotations

import base64
import json

import pytest

from transforms.hashing.policy import OnUnsupportedHash
from transforms.mapping.validate import Reason
from transforms.sources.firebase.mapping import (
    CSV_COLUMNS,
    FirebaseOptions,
    MappedUser,
    Rejection,
    csv_user,
    custom_metadata,
    idp_links,
    map_user,
    mfa_kinds,
)

HASHED = {"passwordHash": "c2NyeXB0LWhhc2g=", "salt": "c2FsdA=="}


def _user(**extra) -> dict:
    user = {
        "localId": "uid-1",
        "email": "ann@example.com",
        "emailVerified": True,
        "displayName": "Ann Example",
    }
    user.update(extra)
    return {k: v for k, v in user.items() if v is not None}


def test_a_plain_user_maps_to_the_entry_with_every_field_it_carries():
    mapped = map_user(_user(phoneNumber="+41790000001"), FirebaseOptions())
    assert isinstance(mapped, MappedUser)
    assert mapped.entry == {
        "userId": "uid-1",
        "user": {
            "userName": "ann@example.com",
            "profile": {"firstName": "Ann Example", "lastName": "Ann Example", "displayName": "Ann Example"},
            "email": {"email": "ann@example.com", "isEmailVerified": True},
            "phone": {"phone": "+41790000001"},
        },
    }
    assert mapped.dropped_hash is None and mapped.metadata == []


def test_without_display_name_the_names_are_the_user_name_and_unverified_email_has_no_flag():
    mapped = map_user(_user(displayName=None, emailVerified=False), FirebaseOptions())
    assert isinstance(mapped, MappedUser)
    body = mapped.entry["user"]
    assert body["profile"] == {"firstName": "ann@example.com", "lastName": "ann@example.com"}
    assert body["email"] == {"email": "ann@example.com"}


@pytest.mark.parametrize(
    "local_id,reason",
    [
        (None, Reason.MISSING_USER_ID),
        ("", Reason.MISSING_USER_ID),
        (12345, Reason.INVALID_USER_ID),
        (" padded", Reason.INVALID_USER_ID),
        ("   ", Reason.INVALID_USER_ID),
        (["a"], Reason.INVALID_USER_ID),
        ("x" * 201, Reason.INVALID_USER_ID),
        ("bad\x00id", Reason.CONTROL_CHARACTERS),
    ],
)
def test_a_bad_local_id_is_refused_with_its_reason(local_id, reason):
    user = _user()
    user["localId"] = local_id
    if local_id is None:
        del user["localId"]
    mapped = map_user(user, FirebaseOptions())
    assert isinstance(mapped, Rejection) and mapped.reason == reason


def test_not_an_object_is_refused():
    assert map_user(["localId", "x"], FirebaseOptions()) == Rejection(
        Reason.NOT_AN_OBJECT, "user is not a JSON object"
    )


def test_disabled_users_are_refused_unless_included():
    refused = map_user(_user(disabled=True), FirebaseOptions())
    assert isinstance(refused, Rejection) and refused.reason == Reason.DISABLED
    included = map_user(_user(disabled=True), FirebaseOptions(include_disabled=True))
    assert isinstance(included, MappedUser) and included.disabled is True


def test_missing_email_is_refused_or_given_the_fallback_unverified():
    refused = map_user(_user(email=None), FirebaseOptions())
    assert isinstance(refused, Rejection) and refused.reason == Reason.MISSING_EMAIL
    mapped = map_user(_user(email=None), FirebaseOptions(email_fallback="{id}@users.example.com"))
    assert isinstance(mapped, MappedUser)
    assert mapped.entry["user"]["email"] == {"email": "uid-1@users.example.com"}
    assert mapped.entry["user"]["userName"] == "uid-1" and "email-fallback" in mapped.notes


def test_firebase_scrypt_hash_is_dropped_and_never_written_or_refused_by_policy():
    mapped = map_user(_user(**HASHED), FirebaseOptions())
    assert isinstance(mapped, MappedUser)
    assert mapped.dropped_hash is not None and mapped.dropped_hash.reason == Reason.UNSUPPORTED_HASH
    text = json.dumps(mapped.entry)
    assert "hashedPassword" not in text and HASHED["passwordHash"] not in text and HASHED["salt"] not in text
    refused = map_user(_user(**HASHED), FirebaseOptions(on_unsupported_hash=OnUnsupportedHash.DEAD_LETTER))
    assert isinstance(refused, Rejection) and refused.reason == Reason.UNSUPPORTED_HASH
    assert HASHED["passwordHash"] not in refused.detail


def test_provider_user_info_links_mapped_providers_and_counts_the_rest():
    infos = [
        {"providerId": "google.com", "rawId": "1098", "email": "ann@gmail.example"},
        {"providerId": "apple.com", "rawId": "000.abc.1", "displayName": "Ann"},
        {"providerId": "github.com", "rawId": "42"},
        {"providerId": "password", "rawId": "ann@example.com"},
        {"providerId": "phone", "rawId": "+41790000001"},
        {"providerId": "apple.com", "rawId": ""},
        "not an object",
    ]
    links, outcomes = idp_links(
        {"email": "ann@example.com", "providerUserInfo": infos}, {"google.com": "1", "apple.com": "2"}
    )
    assert links == [
        {"configId": "1", "externalUserId": "1098", "displayName": "ann@gmail.example"},
        {"configId": "2", "externalUserId": "000.abc.1", "displayName": "Ann"},
    ]
    # Providers are named as --idp-map takes them (google.com, not google_com).
    assert outcomes == [
        ("linked", "google.com"),
        ("linked", "apple.com"),
        ("unmapped", "github.com"),
        ("firebase", "password"),
        ("firebase", "phone"),
        ("invalid", "apple.com"),
        ("invalid", "unknown"),
    ]


def test_linked_users_carry_idps_in_the_entry():
    user = _user(providerUserInfo=[{"providerId": "google.com", "rawId": "1098"}])
    mapped = map_user(user, FirebaseOptions(idp_map=(("google.com", "77"),)))
    assert isinstance(mapped, MappedUser)
    assert mapped.entry["user"]["idps"] == [
        {"configId": "77", "externalUserId": "1098", "displayName": "ann@example.com"}
    ]


def test_custom_attributes_become_metadata_with_json_values():
    mapped = map_user(_user(customAttributes='{"role":"admin","tier":2}'), FirebaseOptions(metadata=True))
    assert isinstance(mapped, MappedUser)
    decoded = {m["key"]: base64.b64decode(m["value"]).decode() for m in mapped.metadata}
    assert decoded == {"role": '"admin"', "tier": "2"}


@pytest.mark.parametrize(
    "value,detail",
    [
        ("{not json", "customAttributes is not valid JSON"),
        ('["a"]', "customAttributes is not a JSON object"),
        ("42", "customAttributes is not a JSON object"),
        ({"role": "admin"}, "customAttributes is not a string of JSON"),
    ],
)
def test_bad_custom_attributes_are_refused_with_metadata_and_ignored_without(value, detail):
    refused = map_user(_user(customAttributes=value), FirebaseOptions(metadata=True))
    assert refused == Rejection(Reason.MALFORMED_JSON, detail)
    assert isinstance(map_user(_user(customAttributes=value), FirebaseOptions()), MappedUser)


def test_custom_metadata_drops_entries_beyond_zitadel_limits():
    entries, dropped = custom_metadata(json.dumps({"k" * 201: 1, "ok": "x" * 10, "big": "y" * 600_000}))
    assert [e["key"] for e in entries] == ["ok"] and dropped == 2


def test_mfa_info_is_counted_by_kind():
    infos = [{"phoneInfo": "+41790000001"}, {"totpInfo": {}}, {"emailInfo": {}}, "junk"]
    assert mfa_kinds({"mfaInfo": infos}) == ["phone", "totp", "email", "other"]
    assert mfa_kinds({"mfaInfo": "junk"}) == []


def test_a_csv_row_becomes_the_json_export_keys():
    row = [""] * (len(CSV_COLUMNS) + 1)  # the trailing comma firebase-tools writes
    values = {
        "localId": "uid-9",
        "email": "cy@example.com",
        "emailVerified": "true",
        "displayName": "Cy, Example",
        "github.com.rawId": "4242",
        "github.com.email": "cy@example.com",
        "phoneNumber": "+41790000009",
        "disabled": "true",
        "customAttributes": '{"a":1}',
    }
    for key, value in values.items():
        row[CSV_COLUMNS.index(key)] = value
    assert csv_user(row) == {
        "localId": "uid-9",
        "email": "cy@example.com",
        "emailVerified": True,
        "displayName": "Cy, Example",
        "phoneNumber": "+41790000009",
        "disabled": True,
        "customAttributes": '{"a":1}',
        "providerUserInfo": [{"providerId": "github.com", "rawId": "4242", "email": "cy@example.com"}],
    }


def test_an_older_csv_row_without_disabled_and_claims_still_reads():
    row = ["uid-1", "ann@example.com", "false"] + [""] * 23
    assert csv_user(row) == {"localId": "uid-1", "email": "ann@example.com", "emailVerified": False}
