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


def test_field_tally_counts_users_per_field_and_unknown_names():
    tally = FieldTally("auth0", frozenset({"email", "picture"}), frozenset({"picture", "nickname"}))
    counts: collections.Counter[str] = collections.Counter()
    tally.count({"email": "a@b.co", "picture": "p.png", "shoe": 4})
    tally.count({"email": "c@b.co", "picture": "", "shoe": 5})  # an empty picture is not had
    tally.count({"email": "d@b.co", "nickname": "d"}, extra=("identities",))
    tally.count({"shoe": 1, "email": "e@b.co", "picture": "q.png"})  # another key order
    tally.flush(counts)
    assert dict(counts) == {
        "not_carried.auth0.picture": 2,
        "not_carried.auth0.nickname": 1,
        "not_carried.auth0.identities": 1,
        "unknown_field.auth0.shoe": 3,
    }
    tally.flush(counts)  # flushed counts are not added twice
    assert counts["unknown_field.auth0.shoe"] == 3


def test_field_tally_names_at_most_the_limit_then_other():
    tally = FieldTally("keycloak", frozenset(), frozenset())
    counts: collections.Counter[str] = collections.Counter()
    for i in range(MAX_UNKNOWN_FIELD_NAMES + 5):
        tally.count({f"f{i:04d}": 1})
    tally.flush(counts)
    named = [k for k in counts if k != "unknown_field.keycloak.other"]
    assert len(named) == MAX_UNKNOWN_FIELD_NAMES
    assert counts["unknown_field.keycloak.other"] == 5
