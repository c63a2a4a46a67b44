"""transforms/mapping/fields.py: counting the source fields an import does not carry."""

from __future__ import annotations

import collections

import pytest

from transforms.mapping.fields import (
    MAX_UNKNOWN_FIELD_NAMES,
    FieldTally,
    counter_safe,
    present,
    unknown_fields,
)


@pytest.mark.parametrize("value", [None, "", [], {}, 0, False])
def test_empty_values_are_not_present(value):
    assert not present(value)


@pytest.mark.parametrize("value", ["x", [1], {"a": 1}, 1, True, 0.5, " "])
def test_values_that_hold_something_are_present(value):
    assert present(value)


@pytest.mark.parametrize(
    "name, safe",
    [
        ("google-oauth2", "google-oauth2"),
        (" Google OAuth2 ", "google_oauth2"),
        ("samlp/Acme Corp!", "samlp_acme_corp_"),
        ("x" * 100, "x" * 40),
        ("", "unknown"),
        ("!!!", "_"),
        (None, "unknown"),
        (42, "unknown"),
    ],
)
def test_counter_safe(name, safe):
    assert counter_safe(name) == safe


def test_unknown_fields_are_counter_safe_names_of_extra_keys():
    known = frozenset({"email", "name"})
    assert unknown_fields({"email": 1, "name": 2}, known) == []
    assert sorted(unknown_fields({"email": 1, "shoe size": 2, "x" * 80: 3, "": 4}, known)) == sorted(
        ["shoe_size", "x" * 60, "_"]
    )


def _counted(tally: FieldTally, records: list[tuple[dict, tuple[str, ...]]]) -> collections.Counter[str]:
    """What the users of ``records`` add once written (each counter name of a user counts one)."""
    counts: collections.Counter[str] = collections.Counter()
    for record, extra in records:
        counts.update(tally.names(record, extra))
    return counts


def test_field_tally_names_each_users_fields_not_carried_and_unknown_names():
    tally = FieldTally("auth0", frozenset({"email", "picture"}), frozenset({"picture", "nickname"}))
    counts = _counted(
        tally,
        [
            ({"email": "a@b.co", "picture": "p.png", "shoe": 4}, ()),
            ({"email": "c@b.co", "picture": "", "shoe": 5}, ()),  # an empty picture is not had
            ({"email": "d@b.co", "nickname": "d"}, ("identities",)),
            ({"shoe": 1, "email": "e@b.co", "picture": "q.png"}, ()),  # another key order
        ],
    )
    assert dict(counts) == {
        "not_carried.auth0.picture": 2,
        "not_carried.auth0.nickname": 1,
        "not_carried.auth0.identities": 1,
        "unknown_field.auth0.shoe": 3,
    }


def test_field_tally_gives_one_shared_tuple_per_outcome():
    """Rows with the same names carry the same tuple (a rows blob pickles it once)."""
    tally = FieldTally("auth0", frozenset({"email"}), frozenset({"picture"}))
    first = tally.names({"email": "a@b.co", "picture": "p.png"})
    assert tally.names({"picture": "q.png", "email": "c@b.co"}) is first
    assert tally.names({"email": "d@b.co"}) == ()


def test_field_tally_names_at_most_the_limit_then_other():
    tally = FieldTally("keycloak", frozenset(), frozenset())
    counts = _counted(tally, [({f"f{i:04d}": 1}, ()) for i in range(MAX_UNKNOWN_FIELD_NAMES + 5)])
    named = [k for k in counts if k != "unknown_field.keycloak.other"]
    assert len(named) == MAX_UNKNOWN_FIELD_NAMES
    assert counts["unknown_field.keycloak.other"] == 5


def test_an_unknown_key_holding_null_or_nothing_is_not_data():
    tally = FieldTally("table", frozenset({"id"}), frozenset())
    assert tally.names({"id": 1, "totp_secret": None, "note": ""}) == ()
    # the same layout with a value: counted, and the cached layout does not hide it
    assert tally.names({"id": 2, "totp_secret": "ABC", "note": ""}) == ("unknown_field.table.totp_secret",)
    assert tally.names({"id": 3, "totp_secret": None, "note": "x"}) == ("unknown_field.table.note",)
    assert tally.names({"id": 4, "totp_secret": False, "note": 0}) == (
        "unknown_field.table.note",
        "unknown_field.table.totp_secret",
    )
