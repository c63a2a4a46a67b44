"""CSV tables: BOM, quoted newlines, cell counts, encodings (transforms/sources/table/csv_rows.py)."""

from __future__ import annotations

import gzip

import pytest

from transforms.common.reasons import Reason
from transforms.sources.csv_rows import MAX_CELL, read_csv
from transforms.sources.input_stream import InputReadError, open_input


def _read(path, delimiter=","):
    with open_input(str(path)) as stream:
        header, rows = read_csv(stream, delimiter)
        return header, list(rows)


def test_bom_quoted_newlines_quotes_and_blank_lines(tmp_path):
    path = tmp_path / "users.csv"
    path.write_bytes(
        b'\xef\xbb\xbf Id ,Email,Name\r\n1,a@example.com,"Ann\r\nLee"\r\n\r\n2,b@example.com,"Bob ""B"", Jr"\r\n'
    )
    header, rows = _read(path)
    assert header == ["Id", "Email", "Name"]
    assert rows == [
        (0, {"Id": "1", "Email": "a@example.com", "Name": "Ann\r\nLee"}, None),
        (1, {"Id": "2", "Email": "b@example.com", "Name": 'Bob "B", Jr'}, None),
    ]


def test_rows_with_the_wrong_cell_count_are_malformed(tmp_path):
    path = tmp_path / "users.csv"
    path.write_text("id,email\n1,a@example.com,extra\n2\n3,c@example.com\n")
    _, rows = _read(path)
    assert [(p, problem[0] if problem else None) for p, _, problem in rows] == [
        (0, Reason.MALFORMED_CSV),
        (1, Reason.MALFORMED_CSV),
        (2, None),
    ]
    assert rows[0][1] == {"id": "1", "email": "a@example.com", "_extra_cells": "extra"}


def test_utf16_with_bom_and_gzip_and_tabs(tmp_path):
    path = tmp_path / "users.tsv.gz"
    path.write_bytes(gzip.compress("id\temail\n1\tä@example.com\n".encode("utf-16")))
    header, rows = _read(path, "\t")
    assert header == ["id", "email"] and rows == [(0, {"id": "1", "email": "ä@example.com"}, None)]


def test_a_cut_gzip_keeps_the_rows_before_the_cut(tmp_path):
    body = "id,email\n" + "".join(f"{n},u{n}@example.com\n" for n in range(5000))
    path = tmp_path / "users.csv.gz"
    path.write_bytes(gzip.compress(body.encode())[:-200])
    with open_input(str(path)) as stream:
        _, rows = read_csv(stream)
        seen = []
        with pytest.raises(InputReadError):
            for row in rows:
                seen.append(row)
    assert len(seen) > 1000 and seen[-1][2] is None


def test_a_row_with_bytes_that_are_not_utf8_is_malformed_and_the_next_rows_are_read(tmp_path):
    path = tmp_path / "users.csv"
    path.write_bytes(b"id,email\n1,a@example.com\n2,\xff\xfe@x\n3,c@example.com\n")
    _, rows = _read(path)
    assert rows[0] == (0, {"id": "1", "email": "a@example.com"}, None)
    assert rows[1][1] == {"id": "2", "email": "\ufffd\ufffd@x"}
    assert rows[1][2] is not None and rows[1][2][0] == Reason.MALFORMED_CSV
    # The detail says what the file may be and what to do about it.
    assert rows[1][2][1].startswith("row 2 holds bytes that are not UTF-8 (a file saved as Windows-1252")
    assert "--encoding=cp1252" in rows[1][2][1]
    assert rows[2] == (2, {"id": "3", "email": "c@example.com"}, None)


def test_an_empty_file_has_no_header(tmp_path):
    path = tmp_path / "users.csv"
    path.write_text("\n\n")
    assert _read(path) == ([], [])


def test_a_cell_over_the_limit_is_malformed_and_reading_goes_on(tmp_path):
    path = tmp_path / "users.csv"
    path.write_text("id,email\n1,a@example.com\n2," + "x" * (MAX_CELL + 10) + "\n3,c@example.com\n")
    _, rows = _read(path)
    assert rows[0][2] is None and rows[1][2][0] == Reason.MALFORMED_CSV and rows[1][1] == {}
    assert rows[-1][1] == {"id": "3", "email": "c@example.com"}
