"""The launcher's first look at an input file (transforms/sources/input_sniff.py), on real files."""

from __future__ import annotations

import pytest

from transforms.common.errors import ConfigError
from transforms.sources.input_sniff import check_readable, describe_head


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"<!DOCTYPE html><html>", "HTML"),
        (b"PK\x03\x04rest", "ZIP"),
        (b"\x1f\x8b\x08\x00", "gzip"),
        (bytes(range(200)), "binary data (first bytes 00 01 02"),
        ("[]".encode("utf-16-le"), "without a byte-order mark"),
        (b"email,name\na@b.c,Ann\n", "text that is not JSON (starts 'email,name"),
    ],
)
def test_describe_head(data, words):
    assert words in describe_head(data)


@pytest.mark.parametrize(
    "data",
    [
        b"[]",
        b'{"user_id": 1}\n',
        b'\xef\xbb\xbf{"a": 1}',
        b'{"a": "\\ud800"}\n{"b": 1}\n',
        b'[{"a": ' + b"1" * 70000 + b"}]",  # the first value is longer than the head: undecided
        b"not json\n" + b'{"a": 1}\n',  # a bad first line, a good second one
    ],
)
def test_check_readable_accepts_files_with_a_value(tmp_path, data):
    path = tmp_path / "f.json"
    path.write_bytes(data)
    check_readable(str(path), "--users")


@pytest.mark.parametrize(
    ("data", "allow_empty", "words"),
    [
        (b"", False, r"empty \(0 bytes\)"),
        (b"garbage\nmore garbage\n", False, "not one JSON record"),
        (b"[garbage]", False, "not one JSON record"),
    ],
)
def test_check_readable_refuses_files_without_a_value(tmp_path, data, allow_empty, words):
    path = tmp_path / "f.json"
    path.write_bytes(data)
    with pytest.raises(ConfigError, match=words):
        check_readable(str(path), "--users", allow_empty=allow_empty)


def test_empty_file_allowed_where_an_empty_export_is_legitimate(tmp_path):
    path = tmp_path / "passwords.json"
    path.write_bytes(b"")
    check_readable(str(path), "--passwords", allow_empty=True)
