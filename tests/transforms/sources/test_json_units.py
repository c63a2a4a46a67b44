"""Input files (transforms/sources/json_units.py): layout detection, byte ranges, gzip, BOM, blank lines."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from transforms.sources.json_units import (
    ARRAY,
    EMPTY,
    NDJSON,
    STREAM,
    InputFile,
    match_inputs,
    plan_units,
    read_unit,
    sniff_layout,
)

RECORDS = [{"i": i, "email": f"user{i}@example.com", "pad": "x" * (i * 7 % 23)} for i in range(40)]


def read_all(path: Path, range_bytes: int = 32 << 20) -> tuple[list, list]:
    """(units, [(position, value, error)]) for one file."""
    (file,) = match_inputs([str(path)])
    units = plan_units(file, range_bytes=range_bytes)
    out = []
    for unit in units:
        out += [(pos, value, error) for pos, _raw, value, error in read_unit(unit)]
    return units, out


def values(records) -> list:
    return [value for _, value, _ in records]


@pytest.mark.parametrize(
    "content, layout",
    [
        (b'{"a": 1}\n{"a": 2}\n', NDJSON),
        (b'\n\n  {"a": 1}\n', NDJSON),
        (b'\xef\xbb\xbf{"a": 1}\n', NDJSON),
        (b'[{"a": 1}, {"a": 2}]', ARRAY),
        (b'\xef\xbb\xbf  [\n{"a": 1}\n]', ARRAY),
        (b'{\n  "a": 1\n}\n{"a": 2}', STREAM),
        (b"", EMPTY),
        (b" \n\t\n", EMPTY),
        (b"garbage\n", NDJSON),  # every line becomes a malformed-json dead letter
    ],
)
def test_sniff_layout(tmp_path, content, layout):
    path = tmp_path / "f.json"
    path.write_bytes(content)
    assert sniff_layout(str(path)) == layout
    gz = tmp_path / "f.json.gz"
    gz.write_bytes(gzip.compress(content))
    assert sniff_layout(str(gz)) == layout


def _ndjson(records, newline=b"\n") -> bytes:
    return b"".join(json.dumps(r).encode() + newline for r in records)


@pytest.mark.parametrize("range_bytes", [1, 2, 7, 13, 64, 100, 1 << 20])
@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("trailing_newline", [True, False], ids=["eol", "no-eol"])
def test_ranges_read_every_record_exactly_once(tmp_path, range_bytes, newline, trailing_newline):
    data = _ndjson(RECORDS, newline)
    if not trailing_newline:
        data = data[: -len(newline)]
    path = tmp_path / "users.json"
    path.write_bytes(data)
    units, records = read_all(path, range_bytes)
    assert len(units) == (-(-len(data) // range_bytes) if len(data) > range_bytes else 1)
    assert values(records) == RECORDS
    assert all(error is None for _, _, error in records)
    # positions are byte offsets of each line
    assert [pos for pos, _, _ in records] == [data.index(json.dumps(r).encode()) for r in RECORDS]


def test_range_boundaries_on_line_starts(tmp_path):
    line = b'{"a":1}\n'  # 8 bytes: every range of 8 starts exactly on a line
    path = tmp_path / "f.json"
    path.write_bytes(line * 10)
    units, records = read_all(path, 8)
    assert len(units) == 10
    assert [pos for pos, _, _ in records] == list(range(0, 80, 8))


def test_ranges_with_blank_lines_bom_and_bad_lines(tmp_path):
    data = b"\xef\xbb\xbf" + b'{"a": 1}\n\n   \n{"a": 2\n{"a": 3}\n\n'
    path = tmp_path / "f.json"
    path.write_bytes(data)
    for range_bytes in (1, 3, 5, 1000):
        _, records = read_all(path, range_bytes)
        assert [(v, e is not None) for _, v, e in records] == [
            ({"a": 1}, False),
            (None, True),
            ({"a": 3}, False),
        ]
        assert records[0][0] == 0


def test_malformed_line_keeps_its_raw_text(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b'{"a": 1}\n  {"broken": \n')
    (file,) = match_inputs([str(path)])
    (unit,) = plan_units(file)
    got = list(read_unit(unit))
    assert got[1][1] == b'{"broken":' and got[1][2] is None and "not valid JSON" in got[1][3]
    assert got[0][1] == b'{"a": 1}'


@pytest.mark.parametrize("suffix, compress", [(".json", False), (".json.gz", True)])
@pytest.mark.parametrize("layout", ["ndjson", "array", "stream"])
def test_layouts_plain_and_gzip(tmp_path, layout, suffix, compress):
    if layout == "ndjson":
        data = _ndjson(RECORDS)
    elif layout == "array":
        data = json.dumps(RECORDS, indent=1).encode()
    else:
        data = b"\n".join(json.dumps(r, indent=2).encode() for r in RECORDS)
    path = tmp_path / f"users{suffix}"
    path.write_bytes(gzip.compress(data) if compress else data)
    units, records = read_all(path, range_bytes=16)
    # gzip files, arrays and streams are never split; positions are element indexes for them
    assert (len(units) == 1) == (compress or layout != "ndjson")
    assert values(records) == RECORDS
    if layout != "ndjson":
        assert [pos for pos, _, _ in records] == list(range(len(RECORDS)))


def test_array_syntax_error_ends_the_file_with_one_error(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b'[{"a": 1}, {"a": 2}, {"a": ]')
    _, records = read_all(path)
    assert values(records)[:2] == [{"a": 1}, {"a": 2}]
    assert records[2][0] == 2 and records[2][1] is None and "syntax error" in records[2][2]


def test_empty_file_yields_nothing(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b"")
    units, records = read_all(path)
    assert records == [] and units[0].layout == EMPTY


def test_match_inputs_orders_and_indexes(tmp_path):
    for name in ("b.json", "a.json", "c.json.gz"):
        (tmp_path / name).write_bytes(b"{}\n")
    files = match_inputs([str(tmp_path / "*.json*"), str(tmp_path / "a.json")], first_index=5)
    assert [(f.index, Path(f.path).name) for f in files] == [
        (5, "a.json"),
        (6, "b.json"),
        (7, "c.json.gz"),
        (8, "a.json"),
    ]
    assert all(isinstance(f, InputFile) and f.size > 0 for f in files)


@pytest.mark.parametrize("pattern", ["missing.json", "nothing-*.json"])
def test_match_inputs_fails_fast_with_one_line(tmp_path, pattern):
    with pytest.raises(FileNotFoundError) as err:
        match_inputs([str(tmp_path / pattern)], what="--users")
    assert "--users" in str(err.value) and "\n" not in str(err.value)


# --------------------------------------------------------------------------- real-world files


@pytest.fixture
def realworld(data_dir):
    path = data_dir / "realworld" / "auth0"
    return path


@pytest.mark.parametrize(
    "name, layout, count",
    [
        ("zitadel-tools-auth0-passwords-multiline-2023.json", STREAM, 2),
        ("clerk-auth0-password-export-v1.1-array.json", ARRAY, None),
        ("clerk-auth0-users-api-shape.json", ARRAY, None),
    ],
)
def test_realworld_files(realworld, name, layout, count):
    path = realworld / name
    units, records = read_all(path, range_bytes=64)
    assert [u.layout for u in units] == [layout]
    assert all(error is None for _, _, error in records)
    expected = count if count is not None else len(json.loads(path.read_bytes()))
    assert len(records) == expected
    assert all(isinstance(v, dict) and "email" in v for v in values(records))
