"""The launcher's first look at table files (transforms/sources/table/files.py)."""

from __future__ import annotations

import json

import pytest

from transforms.common.errors import ConfigError
from transforms.sources.csv_rows import delimiter_flag, detect_delimiter, joined_by, not_utf8
from transforms.sources.table.files import delimiters, plan_table_files
from transforms.sources.table.spec import load_spec

SPEC = load_spec(None, ["id=id", "email=email"])


def _file(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize(
    "line, delimiter",
    [("id,email", ","), ("id;email;name", ";"), ("id\temail", "\t"), ("id|email", "|"), ("email", ",")],
)
def test_detect_delimiter(line, delimiter):
    assert detect_delimiter(line) == delimiter


def test_delimiter_flag_takes_names_as_shells_pass_them():
    assert [delimiter_flag(t) for t in (";", "tab", "\\t", "TAB", "pipe")] == [";", "\t", "\t", "\t", "|"]
    with pytest.raises(ValueError, match="give one character, or one of tab"):
        delimiter_flag(";;")


def test_joined_by_and_not_utf8():
    assert joined_by("id;name;email", ["id", "email"]) == ";"
    assert joined_by("id", ["id"]) is None
    assert not_utf8(b"id,name\n1,Zo\xeb\n2,M\xfcller\n", True) == (2, 0xEB, 2)
    assert not_utf8("id,name\n1,Zoë\n".encode(), True) is None
    assert not_utf8("1,Zoë".encode()[:-1], False) is None  # a character cut by the head's end


def test_csv_files_get_their_detected_delimiter_and_json_wrappers_their_items(tmp_path):
    _file(tmp_path, "a.csv", b"id;email\n1;a@example.com\n")
    _file(tmp_path, "b.json", json.dumps({"data": [{"id": 2, "email": "b@example.com"}]}).encode())
    files = plan_table_files(str(tmp_path / "*"), spec=SPEC)
    assert [(f.csv, f.delimiter, f.delimiter_detected, f.items) for f in files] == [
        (True, ";", True, None),
        (False, ",", False, "data.item"),
    ]
    assert delimiters(files) == ["';' (detected)"]


@pytest.mark.parametrize(
    "name, data, flags, message",
    [
        ("a.csv", b"id;email\n1;a@x\n", {"delimiter": ","}, "joined by ';': --delimiter=';'"),
        ("a.csv", b"id,email\n1,a@x\n", {"delimiter": "tabs"}, "--delimiter 'tabs': give one character"),
        ("a.csv", b"id,name\n1,Zo\xeb\n2,\xe9\n", {}, "not UTF-8"),
        ("a.csv", b"id,email\n", {"encoding": "nope"}, "--encoding 'nope'"),
        ("a.json", b'[{"id": 1, "email": "a@x"}]', {"encoding": "cp1252"}, "only CSV files"),
        ("a.json", b'{"users": [{"localId": "1", "email": "a@x"}]}', {}, "migrate firebase --users reads it"),
    ],
)
def test_files_refused_before_the_run(tmp_path, name, data, flags, message):
    path = _file(tmp_path, name, data)
    with pytest.raises(ConfigError) as caught:
        plan_table_files(path, spec=SPEC, **flags)
    assert message in str(caught.value)


def test_one_stray_byte_is_left_to_its_rows_dead_letter(tmp_path):
    path = _file(tmp_path, "a.csv", b"id,email\n1,\xff@example.com\n2,b@example.com\n")
    assert len(plan_table_files(path, spec=SPEC)) == 1
