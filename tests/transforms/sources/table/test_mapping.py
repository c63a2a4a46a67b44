"""One table record → a humanUsers entry or a rejection (transforms/sources/table/mapping.py)."""

from __future__ import annotations

import base64

import pytest
from beam_fixtures import h

from transforms.common.reasons import Reason
from transforms.hashing.policy import HashPolicy, OnUnsupportedHash
from transforms.mapping.validate import ValidationOptions
from transforms.sources.table.mapping import TableOptions, TableRejection, TableUser, map_record
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
