"""Planning and streaming Firebase export files (transforms/sources/firebase/files.py)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from repo_files import DATA_DIR

from transforms.sources.firebase.files import (
    CSV,
    JSON,
    FirebaseInputError,
    detect_format,
    iter_csv_users,
    iter_json_users,
    plan_firebase_files,
)
from transforms.sources.firebase.source import firebase_csv
from transforms.sources.input_shape import identify
from transforms.sources.input_stream import DepthGuard, open_input
from transforms.sources.registry import add_kind, remove_kind
from transforms.sources.source_parts import ANY_FILE, SourceKind

DATA = DATA_DIR / "firebase"


@pytest.mark.parametrize(
    "head,expected",
    [(b'  {"users": []}', JSON), (b"\xef\xbb\xbf[", CSV), (b"[{}]", JSON), (b"uid,a@b.c,true", CSV)],
)
def test_the_format_is_told_from_the_first_byte(head, expected):
    # A byte-order mark is removed before this is asked (input_stream); here it is just a byte.
    assert detect_format(head) == expected


def test_plan_expands_globs_and_reads_gz(tmp_path):
    (tmp_path / "a.json.gz").write_bytes(gzip.compress((DATA / "users.json").read_bytes()))
    (tmp_path / "b.csv").write_bytes((DATA / "users.csv").read_bytes())
    files = plan_firebase_files([str(tmp_path / "*")])
    assert [(f.index, Path(f.path).name, f.format) for f in files] == [
        (0, "a.json.gz", JSON),
        (1, "b.csv", CSV),
    ]


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(FirebaseInputError, match="no such file"):
        plan_firebase_files([str(tmp_path / "none-*.json")])


def test_a_table_with_a_header_is_refused_naming_the_source_that_reads_any_table(tmp_path):
    (tmp_path / "t.csv").write_text("id,email,status\nu1,a@example.com,ACTIVE\n")
    with pytest.raises(
        FirebaseInputError, match=r"migrate table --input reads it with a mapping \(docs/table.md\)"
    ):
        plan_firebase_files([str(tmp_path / "t.csv")])


def test_the_table_reader_is_read_from_the_registry(tmp_path):
    # A second source reading any file (a plugin) is named beside the table, without an edit here.
    other = SourceKind(name="sheets", records={}, shapes=ANY_FILE)
    add_kind(other)
    try:
        (tmp_path / "t.csv").write_text("id,email\nu1,a@example.com\n")
        with pytest.raises(FirebaseInputError, match="migrate table --input .* or migrate sheets --input"):
            plan_firebase_files([str(tmp_path / "t.csv")])
    finally:
        remove_kind("sheets")


def test_json_users_stream_in_order():
    with open_input(str(DATA / "users.json")) as handle:
        ids = [u["localId"] for u in iter_json_users(DepthGuard(handle))]
    assert ids == [u["localId"] for u in json.loads((DATA / "users.json").read_text())["users"]]


def test_csv_users_stream_with_short_rows_as_lists_and_blank_lines_skipped(tmp_path):
    path = tmp_path / "users.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (DATA / "users.csv").read_bytes() + b"\n\nonly,three,cols\n")
    with open_input(str(path)) as handle:
        users = list(iter_csv_users(handle))
    assert [u["localId"] for u in users[:-1]] == [
        f"fb-{n}" for n in ("ann-0001", "bo-0002", "cy-0003", "dee-0004", "eve-0005", "fay-0006")
    ]
    assert users[-1] == ["only", "three", "cols"]


def test_input_shape_names_a_firebase_export():
    shape, _ = identify((DATA / "users.json").read_bytes()[:65536])
    assert shape == "firebase-users"
    assert identify(b'[{"localId": "1", "email": "a@example.com"}]') == (
        "firebase-users",
        'records with "localId"',
    )
    assert firebase_csv((DATA / "users.csv").read_bytes())
    assert not firebase_csv(b"email,password\n") and not firebase_csv(io.BytesIO().getvalue())


def test_a_utf16_csv_with_a_byte_order_mark_reads_like_utf8(tmp_path):
    path = tmp_path / "users.csv"
    path.write_bytes((DATA / "users.csv").read_text().encode("utf-16"))  # BOM + UTF-16-LE
    (planned,) = plan_firebase_files([str(path)])
    assert planned.format == CSV
    with open_input(str(path)) as handle:
        assert len(list(iter_csv_users(handle))) == 6
