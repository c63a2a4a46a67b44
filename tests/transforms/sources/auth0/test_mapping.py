"""Auth0 record → humanUsers entry (transforms/sources/auth0/mapping.py): zitadel-tools' fallbacks as tables."""

from __future__ import annotations

import base64
import json

import pytest

from transforms.sources.auth0.mapping import (
    map_profile,
    metadata_entries,
    normalise_email,
    password_date,
    password_oid,
    pick_profile,
)

HASH = "$2b$10$CSZ2JarG4XYbGa.JkfpqnO2wrlbfp5eb5LScHSGo9XGeZ.a.Ic54S"


def user_of(profile, password_hash=None, flag=False):
    return map_profile({"user_id": "auth0|1", "email": "ann@example.com", **profile}, password_hash, flag)[
        "user"
    ]


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    "profile, user_name",
    [
        ({"username": "ann"}, "ann"),
        ({}, "ann@example.com"),
        ({"username": ""}, "ann@example.com"),
        ({"username": "  "}, "ann@example.com"),
        ({"username": None}, "ann@example.com"),
        ({"username": " ann "}, "ann"),
    ],
)
def test_user_name_falls_back_to_email(profile, user_name):
    assert user_of(profile)["userName"] == user_name


@pytest.mark.parametrize(
    "profile, first, last",
    [
        ({"given_name": "Ann", "family_name": "Lee", "name": "Ann B. Lee"}, "Ann", "Lee"),
        ({"name": "Ann Lee"}, "Ann Lee", "Ann Lee"),
        ({"given_name": "Ann", "name": "Ann Lee"}, "Ann", "Ann Lee"),
        ({"family_name": "Lee", "name": "Ann Lee"}, "Ann Lee", "Lee"),
        ({"username": "ann"}, "ann", "ann"),
        ({"given_name": "Ann", "username": "ann"}, "Ann", "ann"),
        ({}, "ann@example.com", "ann@example.com"),
        ({"given_name": "", "family_name": " ", "name": ""}, "ann@example.com", "ann@example.com"),
        ({"given_name": 5, "family_name": ["x"]}, "ann@example.com", "ann@example.com"),
    ],
    ids=[
        "all",
        "name-only",
        "given+name",
        "family+name",
        "username",
        "given+username",
        "email",
        "blank",
        "not-strings",
    ],
)
def test_first_and_last_name_fallbacks(profile, first, last):
    person = user_of(profile)["profile"]
    assert (person["firstName"], person["lastName"]) == (first, last)


def test_last_name_falls_back_to_first_name_when_nothing_else():
    # family_name, name and userName all empty (an entry validation then rejects for the e-mail)
    entry = map_profile({"user_id": "u", "email": "", "given_name": "Ann"}, None, False)
    assert entry["user"]["profile"]["lastName"] == "Ann"


@pytest.mark.parametrize(
    "profile, expected",
    [
        ({"name": "Ann Lee", "nickname": "annie"}, {"displayName": "Ann Lee", "nickName": "annie"}),
        ({"nickname": "annie"}, {"nickName": "annie"}),
        ({"name": "Ann Lee"}, {"displayName": "Ann Lee"}),
        ({"name": "", "nickname": ""}, {}),
    ],
)
def test_display_and_nick_name(profile, expected):
    person = user_of(profile)["profile"]
    assert {k: person[k] for k in ("displayName", "nickName") if k in person} == expected


@pytest.mark.parametrize(
    "locale, expected",
    [
        ("fr-FR", "fr-FR"),  # reduced to "fr" by validation (tests/transforms/mapping/test_validate.py)
        ("", None),
        (None, None),
    ],
)
def test_locale_copied_for_validation(locale, expected):
    assert user_of({"locale": locale})["profile"].get("preferredLanguage") == expected


# --------------------------------------------------------------------------- e-mail, phone, password


@pytest.mark.parametrize(
    "source, flag, expected",
    [
        (True, False, {"email": "ann@example.com", "isEmailVerified": True}),
        (False, False, {"email": "ann@example.com"}),
        (None, False, {"email": "ann@example.com"}),
        ("true", False, {"email": "ann@example.com"}),  # only a JSON true counts
        (False, True, {"email": "ann@example.com", "isEmailVerified": True}),
        (None, True, {"email": "ann@example.com", "isEmailVerified": True}),
    ],
)
def test_email_verified_kept_unless_flag(source, flag, expected):
    profile = {} if source is None else {"email_verified": source}
    assert user_of(profile, flag=flag)["email"] == expected


def test_email_text_kept_as_written_but_trimmed():
    entry = map_profile({"user_id": "u", "email": "  Ann.Lee@Example.COM "}, None, False)
    assert entry["user"]["email"]["email"] == "Ann.Lee@Example.COM"
    assert entry["user"]["userName"] == "Ann.Lee@Example.COM"


@pytest.mark.parametrize(
    "profile, expected",
    [
        ({"phone_number": "+49123", "phone_verified": True}, {"phone": "+49123", "isPhoneVerified": True}),
        ({"phone_number": "+49123", "phone_verified": False}, {"phone": "+49123"}),
        ({"phone_number": "+49123"}, {"phone": "+49123"}),
        ({"phone_number": ""}, None),
        ({"phone_number": None, "phone_verified": True}, None),
        ({}, None),
    ],
)
def test_phone_only_when_non_empty(profile, expected):
    assert user_of(profile).get("phone") == expected


def test_hashed_password_present_or_omitted():
    assert user_of({}, HASH)["hashedPassword"] == {"value": HASH}
    assert "hashedPassword" not in user_of({}, None)


def test_full_entry_shape_and_key_order():
    entry = map_profile(
        {
            "user_id": "auth0|60425dc43519d90068f82973",
            "email": "john@example.com",
            "username": "johndoe",
            "given_name": "John",
            "family_name": "Doe",
            "nickname": "johnny",
            "name": "John Doe",
            "locale": "en-US",
            "phone_number": "+1234567890",
            "phone_verified": True,
            "email_verified": True,
        },
        HASH,
        False,
    )
    assert json.dumps(entry) == json.dumps(
        {
            "userId": "auth0|60425dc43519d90068f82973",
            "user": {
                "userName": "johndoe",
                "profile": {
                    "firstName": "John",
                    "lastName": "Doe",
                    "nickName": "johnny",
                    "displayName": "John Doe",
                    "preferredLanguage": "en-US",
                },
                "email": {"email": "john@example.com", "isEmailVerified": True},
                "phone": {"phone": "+1234567890", "isPhoneVerified": True},
                "hashedPassword": {"value": HASH},
            },
        }
    )


def test_missing_user_id_gives_no_user_id_key():
    assert "userId" not in map_profile({"email": "a@b.co"}, None, False)


# --------------------------------------------------------------------------- join helpers


@pytest.mark.parametrize(
    "value, key",
    [
        ("Ann@Example.COM", "ann@example.com"),
        ("  ann@example.com\t", "ann@example.com"),
        ("STRASSE@EXAMPLE.DE", "strasse@example.de"),
        ("straße@example.de", "strasse@example.de"),  # case-folded, not just lower-cased
        (None, ""),
        (42, ""),
        ("", ""),
    ],
)
def test_normalise_email(value, key):
    assert normalise_email(value) == key


@pytest.mark.parametrize(
    "record, oid",
    [
        ({"_id": {"$oid": "60425dc4"}}, "60425dc4"),
        ({"_ID": {"$oid": "60425dc4"}}, "60425dc4"),
        ({"_id": "60425dc4"}, "60425dc4"),
        ({"_id": "auth0|60425dc4"}, "60425dc4"),
        ({"_id": {"$oid": "auth0|60425dc4"}}, "60425dc4"),
        ({"_id": ""}, ""),
        ({}, ""),
    ],
)
def test_password_oid(record, oid):
    assert password_oid(record) == oid


@pytest.mark.parametrize(
    "record, date",
    [
        ({"password_set_date": {"$date": "2021-03-05T16:35:16.775Z"}}, "2021-03-05T16:35:16.775Z"),
        ({"password_set_date": "2021-03-05T16:35:16.775Z"}, "2021-03-05T16:35:16.775Z"),
        ({"last_password_reset": {"$date": "2022-01-01T00:00:00.000Z"}}, "2022-01-01T00:00:00.000Z"),
        ({}, ""),
    ],
)
def test_password_date(record, date):
    assert password_date(record) == date


@pytest.mark.parametrize(
    "record, candidates, picked",
    [
        ({"_id": {"$oid": "b"}}, ["auth0|a", "auth0|b"], 1),  # the id decides
        ({"_id": "auth0|b"}, ["google-oauth2|b", "auth0|a"], 0),  # ... by its suffix
        ({"_id": {"$oid": "zzz"}}, ["auth0|a"], 0),  # a single profile with the e-mail
        ({}, ["auth0|a"], 0),
        ({"_id": {"$oid": "zzz"}}, ["google-oauth2|1", "auth0|a"], 1),  # the only database user
        ({"_id": {"$oid": "zzz"}}, ["auth0|a", "auth0|b"], None),  # ambiguous
        ({"_id": {"$oid": "zzz"}}, ["google-oauth2|1", "github|2"], None),
        ({}, [], None),  # orphan
    ],
)
def test_pick_profile(record, candidates, picked):
    assert pick_profile(password_oid(record), candidates) == picked


# --------------------------------------------------------------------------- metadata


def _decoded(entries):
    return {e["key"]: json.loads(base64.b64decode(e["value"])) for e in entries}


def test_metadata_top_level_keys_as_base64_json():
    entries, dropped = metadata_entries(
        {
            "user_metadata": {"plan": "pro", "prefs": {"b": 2, "a": 1}},
            "app_metadata": {"roles": ["admin"], "plan": "legacy"},
        }
    )
    assert dropped == 0
    assert [e["key"] for e in entries] == ["plan", "prefs", "roles", "app_metadata.plan"]
    assert _decoded(entries) == {
        "plan": "pro",
        "prefs": {"a": 1, "b": 2},
        "roles": ["admin"],
        "app_metadata.plan": "legacy",
    }
    # keys sorted inside values, so the same record always gives the same bytes
    assert base64.b64decode(entries[1]["value"]) == b'{"a":1,"b":2}'


@pytest.mark.parametrize(
    "profile", [{}, {"user_metadata": None}, {"user_metadata": "text"}, {"app_metadata": []}]
)
def test_no_metadata(profile):
    assert metadata_entries(profile) == ([], 0)


def test_metadata_limits_drop_and_count():
    entries, dropped = metadata_entries(
        {
            "user_metadata": {
                "": 1,
                "k" * 201: 1,
                "k" * 200: 1,
                "big": "x" * 500_000,  # 500002 bytes of JSON
                "fits": "x" * 499_998,  # exactly 500000
            }
        }
    )
    assert [e["key"] for e in entries] == ["k" * 200, "fits"]
    assert dropped == 3
