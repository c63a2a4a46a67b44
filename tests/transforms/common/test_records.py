"""Rows between stages (transforms/common/records.py): one named constructor, the blob and its claims."""

from __future__ import annotations

import orjson
import pytest

from transforms.common.records import (
    claims_size,
    dead_letter,
    decode_claims,
    decode_rows,
    encode_row,
    encode_rows,
    encoded_row,
    intern_tallies,
    pack_rows,
    partition_of,
)

ENTRY = {"userId": "u1", "user": {"userName": "Ann", "email": {"email": "ann@example.com"}}}


def _row(**fields):
    base = dict(
        file_index=0,
        position=7,
        user_id="u1",
        name_key="ann",
        entry_json=b"{}",
        metadata_json=b"",
        password="",
        source="auth0-profile",
        record_json=b"{}",
        companions_json=b"",
        grants=(),
    )
    return encoded_row(**{**base, **fields})


def test_encode_row_fills_the_optional_tail():
    (
        file_index,
        position,
        user_id,
        name_key,
        entry_json,
        meta,
        password,
        source,
        record,
        companions,
        grants,
        tallies,
        passwordless,
    ) = encode_row([[2, 9], ENTRY, [{"key": "k", "value": "dg=="}], {"id": 1}, "keycloak"])
    assert (file_index, position, user_id, name_key, source) == (2, 9, "u1", "ann", "keycloak")
    assert orjson.loads(entry_json) == ENTRY and orjson.loads(record) == {"id": 1}
    assert meta == b'{"id":"u1","key":"k","value":"dg=="}'
    assert (password, companions, grants, tallies, passwordless) == ("", b"", (), (), b"")


def test_intern_tallies_shares_one_tuple_per_list_of_names():
    first = intern_tallies(["cannot_sign_in.x", "notes.email-fallback"])
    assert intern_tallies(("cannot_sign_in.x", "notes.email-fallback")) is first
    assert intern_tallies([]) == ()
    blob = pack_rows([_row(tallies=first), _row(position=8, tallies=intern_tallies(list(first)))])
    one, two = decode_rows(blob)
    assert one[11] is two[11]  # pickled once, one object again after the round trip


@pytest.mark.parametrize(
    ("user", "given", "expected"),
    [
        ({"hashedPassword": {"value": "x"}}, None, "hash"),
        ({"password": "secret"}, None, "password"),
        ({"password": "secret"}, "", "password"),
        ({"hashedPassword": {"value": "x"}}, "bcrypt", "bcrypt"),
        ({}, None, ""),
    ],
)
def test_encode_row_password_slot(user, given, expected):
    entry = {"userId": "u1", "user": {"userName": "a", **user}}
    row = [[0, 0], entry, [], {}, "s", [], given] if given is not None else [[0, 0], entry, [], {}, "s"]
    (_, _, _, _, _, _, password, _, _, _, _, _, _) = encode_row(row)
    assert password == expected


def test_encode_row_keeps_companions_and_grants():
    grants = (("p1", ("a",)),)
    row = [[0, 0], ENTRY, [], {}, "s", [[[1, 2], "auth0-password", {"e": 1}]], "bcrypt", grants]
    (_, _, _, _, _, _, _, _, _, companions, row_grants, _, _) = encode_row(row)
    assert orjson.loads(companions) == [[[1, 2], "auth0-password", {"e": 1}]] and row_grants == grants


def test_a_blob_carries_rows_and_their_claims_apart():
    rows = [_row(), _row(position=8, user_id="", name_key="bob")]
    blob = pack_rows(rows)
    assert decode_rows(blob) == rows
    assert decode_claims(blob[: claims_size(blob[:8])]) == [("u1", "ann", 0, 7), ("", "bob", 0, 8)]
    assert decode_rows(encode_rows([[[0, 7], ENTRY, [], {}, "s"]]))[0][:4] == (0, 7, "u1", "ann")


def test_dead_letter_and_partition_are_stable():
    assert dead_letter([1, 2], "blocked", "d", "auth0-profile", {"a": 1}) == (
        (1, 2),
        b'{"reason":"blocked","detail":"d","source":"auth0-profile","record":{"a":1}}',
    )
    assert partition_of("ann@example.com", 32) == partition_of("ann@example.com", 32) < 32
