"""Reading one mapped field of a record, types checked (transforms/sources/table/values.py)."""

from __future__ import annotations

import pytest

from transforms.common.reasons import Reason
from transforms.sources.table.spec import FieldPath
from transforms.sources.table.values import ValueProblem, Values, role_list


def _path(text: str, **kind) -> FieldPath:
    return FieldPath(text, tuple(text.split(".")), **kind)


@pytest.mark.parametrize(
    "record, path, expected",
    [
        ({"id": 7}, "id", "7"),
        ({"id": " a "}, "id", "a"),
        ({"id": None}, "id", ""),
        ({}, "id", ""),
        ({"meta": '{"name": " Ann "}'}, "meta.name", "Ann"),  # a CSV column holding JSON
        ({"meta": {"name": "Ann"}}, "meta.name", "Ann"),
        ({"meta": {}}, "meta.name", ""),
        ({"meta": ""}, "meta.name", ""),
    ],
)
def test_text(record, path, expected):
    assert Values(record).text(_path(path)) == expected


@pytest.mark.parametrize(
    "record, path, reason, words",
    [
        ({"id": True}, "id", Reason.INVALID_FIELD_TYPE, "id is true/false, not text"),
        ({"id": 1.5}, "id", Reason.INVALID_FIELD_TYPE, "is a number"),
        ({"id": ["a"]}, "id", Reason.INVALID_FIELD_TYPE, "is a list"),
        ({"meta": [1]}, "meta.name", Reason.BAD_PATH, "meta is a list, not an object"),
        ({"meta": "plain"}, "meta.name", Reason.BAD_PATH, "meta is a string, not an object"),
        ({"m": {"a": 3}}, "m.a.b", Reason.BAD_PATH, "m.a is a number"),
        ({"meta": "{broken"}, "meta.name", Reason.MALFORMED_JSON, "column 'meta' does not hold valid JSON"),
    ],
)
def test_text_problems(record, path, reason, words):
    with pytest.raises(ValueProblem) as err:
        Values(record).text(_path(path))
    assert err.value.reason == reason and words in err.value.detail


@pytest.mark.parametrize(
    "value, expected",
    [(True, True), (False, False), (None, False), (1, True), (0, False), ("t", True), ("F", False)]
    + [("Yes", True), ("no", False), ("", False), (" TRUE ", True)],
)
def test_flag(value, expected):
    assert Values({"v": value}).flag(_path("v")) is expected


@pytest.mark.parametrize("value", ["maybe", 2, 1.0, [True], {"a": 1}])
def test_flag_problems(value):
    with pytest.raises(ValueProblem) as err:
        Values({"v": value}).flag(_path("v"))
    assert err.value.reason == Reason.INVALID_FIELD_TYPE and "present(v)" in err.value.detail


@pytest.mark.parametrize(
    "value, expected", [("2024-01-01", True), ("", False), (None, False), (False, False)]
)
def test_present(value, expected):
    assert Values({"v": value}).flag(_path("v", present=True)) is expected


@pytest.mark.parametrize(
    "value, expected", [(True, False), (False, True), ("f", True), ("", False), (None, False)]
)
def test_not_is_true_only_for_a_false_value(value, expected):
    assert Values({"v": value}).flag(_path("v", negate=True)) is expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (["b", "a", "a", " "], ("a", "b")),
        ('["x", "y"]', ("x", "y")),
        ("{admin,editor}", ("admin", "editor")),
        ("viewer; editor", ("editor", "viewer")),
        ("", ()),
        (None, ()),
    ],
)
def test_roles(value, expected):
    assert Values({"r": value}).roles(_path("r")) == expected


@pytest.mark.parametrize("value", [[1, 2], {"a": "b"}, "[broken", 5])
def test_roles_problems(value):
    with pytest.raises(ValueProblem):
        Values({"r": value}).roles(_path("r"))


def test_role_list_keeps_a_broken_array_as_text():
    assert role_list("[oops") == "[oops"


def test_present_items_skip_empty_values():
    values = Values({"a": "x", "b": "", "c": {"d": 3}, "e": []})
    paths = (_path("a"), _path("b"), _path("c.d"), _path("e"), _path("z"))
    assert list(values.present_items(paths)) == [("a", "x"), ("c.d", 3)]


# --------------------------------------------------------------------------- expressions

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def _read(flag: str, record: dict, key: str, null: str | None = None) -> object:
    from transforms.sources.table.spec import load_spec

    path = load_spec(None, ["id=id", "email=email", flag]).fields[key]
    values = Values(record, null, NOW)
    return values.flag(path) if key in ("blocked", "email_verified", "phone_verified") else values.text(path)


COGNITO = {
    "Username": "u1",
    "Attributes": [{"Name": "sub", "Value": "u1"}, {"Name": "email", "Value": "a@b.co"}],
    "Enabled": False,
    "UserStatus": "FORCE_CHANGE_PASSWORD",
}


@pytest.mark.parametrize(
    "flag, expected",
    [
        ("phone=Attributes[Name=email].Value", "a@b.co"),
        ("phone=Attributes[Name=phone_number].Value", ""),  # no such element: absent
        ("phone=Attributes[Name=email].Nothing", ""),
    ],
)
def test_a_list_element_by_key(flag, expected):
    assert _read(flag, COGNITO, "phone") == expected


def test_a_list_element_in_a_csv_column_holding_json():
    record = {"attrs": '[{"Name": "email", "Value": "c@d.co"}]'}
    assert _read("phone=attrs[Name=email].Value", record, "phone") == "c@d.co"


def test_a_selector_through_something_not_a_list_is_a_bad_path():
    with pytest.raises(ValueProblem) as err:
        _read("phone=Attributes[Name=email].Value", {"Attributes": {"email": "x"}}, "phone")
    assert err.value.reason == Reason.BAD_PATH and "not a list" in err.value.detail


@pytest.mark.parametrize(
    "record, expected",
    [
        ({"UserStatus": "FORCE_CHANGE_PASSWORD"}, True),
        ({"UserStatus": "reset_required"}, True),  # case does not matter
        ({"UserStatus": "CONFIRMED"}, False),
        ({}, False),
        ({"UserStatus": None}, False),
    ],
)
def test_in_compares_as_text(record, expected):
    assert _read("blocked=in(UserStatus,FORCE_CHANGE_PASSWORD,RESET_REQUIRED)", record, "blocked") is expected


def test_in_reads_numbers_and_flags_as_text():
    assert _read("blocked=in(code,2,3)", {"code": 2}, "blocked") is True
    assert _read("blocked=in(banned,true)", {"banned": True}, "blocked") is True


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2126-01-01 00:00:00+00", True),  # PostgreSQL
        ("9999-12-31 23:59:59.9999999 +00:00", True),  # SQL Server's DateTimeOffset.MaxValue
        ("2126-03-01 10:00:00.000", True),  # Identity 2's datetime, UTC by convention
        ("infinity", True),  # Npgsql's MaxValue
        ("-infinity", False),
        ("2025-01-01 08:00:00+00", False),
        ("2027-01-15T09:00:00+02:00", False),  # 07:00 UTC: an hour before NOW
        ("2027-01-15T09:00:00Z", True),
        ("2027-01-15", False),
        (1_800_000_001, True),  # epoch seconds
        (1_799_999_999_000, False),  # epoch milliseconds
        ("1800000001000", True),  # milliseconds as text
        (1_800_000_000.5, True),
        ("", False),
        (None, False),
    ],
)
def test_after_now(value, expected):
    assert _read("blocked=after_now(LockoutEnd)", {"LockoutEnd": value}, "blocked") is expected


@pytest.mark.parametrize("value", ["next tuesday", "2027-13-01", True, {"a": 1}])
def test_after_now_of_something_not_a_date_is_a_problem_naming_the_path(value):
    with pytest.raises(ValueProblem) as err:
        _read("blocked=after_now(LockoutEnd)", {"LockoutEnd": value}, "blocked")
    assert err.value.reason == Reason.INVALID_FIELD_TYPE and err.value.detail.startswith(
        "LockoutEnd is not a date"
    )


@pytest.mark.parametrize(
    "enabled, end, expected",
    [("t", "infinity", True), ("f", "infinity", False), ("t", "", False), ("1", "2025-01-01", False)],
)
def test_all_of_tests_and_paths(enabled, end, expected):
    record = {"LockoutEnabled": enabled, "LockoutEnd": end}
    assert _read("blocked=all(LockoutEnabled,after_now(LockoutEnd))", record, "blocked") is expected


def test_any_and_not():
    assert _read("blocked=any(banned,locked)", {"banned": "false", "locked": "true"}, "blocked") is True
    assert _read("blocked=any(banned,locked)", {"banned": "false"}, "blocked") is False
    assert _read("blocked=not(in(status,active))", {"status": "ACTIVE"}, "blocked") is False
    assert _read("blocked=all(not(active),present(x))", {"active": "f", "x": 1}, "blocked") is True
    assert _read("blocked=all(not(active),present(x))", {"x": 1}, "blocked") is False  # absent: not a no


@pytest.mark.parametrize(
    "record, expected",
    [
        ({"p": "a@x.co", "v": "a@x.co,b@x.co"}, True),
        ({"p": "A@x.co", "v": "b@x.co|a@x.co"}, True),  # compared without case
        ({"p": "\t+4915112345678", "v": "\t+4915112345678"}, True),  # Clerk's TAB formula guard
        ({"p": "a@x.co", "v": ["b@x.co", "a@x.co"]}, True),  # a JSON list
        ({"p": "a@x.co", "v": '["a@x.co"]'}, True),  # a JSON array as text
        ({"p": "a@x.co", "v": "b@x.co"}, False),
        ({"p": "a@x.co", "v": ""}, False),
        ({"p": "", "v": ""}, False),
    ],
)
def test_among(record, expected):
    assert _read("email_verified=among(p,v)", record, "email_verified") is expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ("jessica@example.com|jessica@harkonnen.example", "jessica@example.com"),
        (" a@x.co , b@x.co", "a@x.co"),
        ("a@x.co;b@x.co", "a@x.co"),
        (["", "a@x.co", "b@x.co"], "a@x.co"),
        ("a@x.co", "a@x.co"),
        ("", ""),
        (None, ""),
        ([], ""),
    ],
)
def test_first_of_several(value, expected):
    assert _read("phone=first(emails)", {"emails": value}, "phone") == expected


def test_null_text_is_absent():
    record = {"PhoneNumber": "NULL", "meta": '{"x": "NULL"}'}
    assert _read("phone=PhoneNumber", record, "phone", null="NULL") == ""
    assert _read("phone=meta.x", record, "phone", null="NULL") == ""
    assert _read("phone=PhoneNumber", record, "phone") == "NULL"  # only when the mapping says so
    assert _read("blocked=after_now(PhoneNumber)", record, "blocked", null="NULL") is False
