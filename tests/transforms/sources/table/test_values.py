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
