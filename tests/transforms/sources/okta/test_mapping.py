"""One Okta export row → its entry (transforms/sources/okta/mapping.py)."""

from __future__ import annotations

import base64

import pytest

from transforms.common.reasons import Reason
from transforms.sources.okta.mapping import MappedUser, OktaOptions, Refusal, map_row

ROW = {"id": "00u1", "status": "ACTIVE", "login": "ann", "email": "ann@example.com"}


def _user(row: dict, **options) -> dict:
    mapped = map_row(row, OktaOptions(**options))
    assert isinstance(mapped, MappedUser), mapped
    return mapped.entry["user"]  # type: ignore[return-value]


def test_names_fall_back_to_the_display_name_then_the_login():
    assert _user({**ROW, "displayName": "Ann Marie Lee"})["profile"] == {
        "firstName": "Ann Marie",
        "lastName": "Lee",
        "displayName": "Ann Marie Lee",
    }
    assert _user(ROW)["profile"] == {"firstName": "ann", "lastName": "ann"}
    assert (
        _user({**ROW, "firstName": "A", "lastName": "L", "displayName": "X Y"})["profile"]["lastName"] == "L"
    )


def test_language_prefers_preferred_language_then_locale():
    assert _user({**ROW, "locale": "de_CH"})["profile"]["preferredLanguage"] == "de"
    assert (
        _user({**ROW, "preferredLanguage": "fr-FR", "locale": "de_CH"})["profile"]["preferredLanguage"]
        == "fr"
    )


def test_phone_mobile_before_primary_spaces_removed():
    assert _user({**ROW, "mobilePhone": "+41 (79) 000-00.01", "primaryPhone": "+1"})["phone"] == {
        "phone": "+41790000001",
        "isPhoneVerified": False,
    }
    assert _user({**ROW, "primaryPhone": "+33 1 23"})["phone"]["phone"] == "+33123"
    mapped = map_row({**ROW, "mobilePhone": "0612345678"}, OktaOptions())
    assert isinstance(mapped, MappedUser) and "phone" not in mapped.entry["user"]  # type: ignore[operator]
    assert mapped.notes == ["phone-dropped"]


@pytest.mark.parametrize("status", ["SUSPENDED", "LOCKED_OUT", "DEPROVISIONED", "suspended"])
def test_blocked_statuses_are_refused_unless_read(status):
    refused = map_row({**ROW, "status": status}, OktaOptions())
    assert isinstance(refused, Refusal) and refused.reason == Reason.BLOCKED
    read = map_row({**ROW, "status": status}, OktaOptions(include_blocked=True))
    assert isinstance(read, MappedUser) and read.status == status.upper()


def test_a_row_without_id_login_or_email_is_refused_with_its_reason():
    assert map_row({**ROW, "id": ""}, OktaOptions()).reason == Reason.MISSING_USER_ID  # type: ignore[union-attr]
    assert map_row({"id": "00u1"}, OktaOptions()).reason == Reason.INVALID_USERNAME  # type: ignore[union-attr]
    no_mail = {"id": "00u1", "login": "ann"}
    assert map_row(no_mail, OktaOptions()).reason == Reason.MISSING_EMAIL  # type: ignore[union-attr]
    fallback = _user(no_mail, email_fallback="{id}@users.invalid", trust_email=True)
    assert fallback["email"] == {"email": "00u1@users.invalid", "isEmailVerified": False}


def test_the_login_is_the_user_name_and_the_email_stands_in_when_it_is_missing():
    assert _user(ROW)["userName"] == "ann"
    assert _user({**ROW, "login": ""})["userName"] == "ann@example.com"


def test_metadata_holds_the_cells_zitadel_has_no_field_for():
    mapped = map_row(
        {**ROW, "department": "R&D", "githubHandle": " ann ", "title": ""}, OktaOptions(metadata=True)
    )
    assert isinstance(mapped, MappedUser)
    assert {m["key"]: base64.b64decode(m["value"]) for m in mapped.metadata} == {
        "department": b"R&D",
        "githubHandle": b"ann",
    }
    assert map_row({**ROW, "department": "R&D"}, OktaOptions()).metadata == []  # type: ignore[union-attr]


def test_metadata_over_zitadel_limits_is_dropped_and_counted():
    mapped = map_row({**ROW, "k" * 201: "x", "big": "v" * 500_001, "ok": "y"}, OktaOptions(metadata=True))
    assert isinstance(mapped, MappedUser)
    assert [m["key"] for m in mapped.metadata] == ["ok"] and mapped.metadata_dropped == 2
