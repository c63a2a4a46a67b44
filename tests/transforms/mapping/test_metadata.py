"""The shared metadata limits: which entries ZITADEL takes, their base64, the count left out."""

from __future__ import annotations

import base64

import pytest

from transforms.mapping.metadata import json_value, metadata_fits, metadata_within_limits, text_value


@pytest.mark.parametrize(
    ("key", "value", "fits"),
    [
        ("k", b"v", True),
        ("k" * 200, b"v", True),  # the longest key
        ("k" * 201, b"v", False),
        ("", b"v", False),  # ZITADEL refuses an empty key
        ("k", b"", False),  # and an empty value
        ("k", b"x" * 500_000, True),  # the largest value
        ("k", b"x" * 500_001, False),
        ("é" * 200, b"v", True),  # the key's limit counts characters, not bytes
    ],
)
def test_metadata_fits_zitadel_limits(key, value, fits):
    assert metadata_fits(key, value) is fits


def test_within_limits_keeps_order_encodes_and_counts_the_rest():
    pairs = [("a", b"1"), ("k" * 201, b"2"), ("b", b"x" * 500_001), ("c", "é".encode()), ("", b"3")]
    entries, dropped = metadata_within_limits(iter(pairs))  # any iterable, read once
    assert entries == [
        {"key": "a", "value": base64.b64encode(b"1").decode()},
        {"key": "c", "value": base64.b64encode("é".encode()).decode()},
    ]
    assert dropped == 3


def test_within_limits_of_nothing():
    assert metadata_within_limits([]) == ([], 0)


def test_json_value_sorts_keys_so_equal_objects_give_equal_bytes():
    assert json_value({"b": 2, "a": [1, None]}) == b'{"a":[1,null],"b":2}'
    assert json_value({"b": 2, "a": 1}) == json_value({"a": 1, "b": 2})
    assert json_value("gold") == b'"gold"'


def test_text_value_is_utf8_and_keeps_a_lone_surrogate():
    assert text_value("Zoë") == "Zoë".encode()
    assert text_value("\ud800") == b"\xed\xa0\x80"
