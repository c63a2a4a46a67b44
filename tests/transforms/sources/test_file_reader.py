"""The shared reader of file-based sources on real files, in a TestPipeline
(transforms/sources/file_reader.py): a toy source's part (a CSV of users with a status, as an
identity provider's user export is; or a JSON array) is all a source writes, and the reader
does the rest: gzip, UTF-16, chunks, the dead letters of records, of users that cannot be encoded
and of a file's unreadable rest, and the counters."""

from __future__ import annotations

import collections
import gzip
import inspect
import io
import json
import tokenize

import apache_beam as beam
import orjson
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.common import counters
from transforms.common.reasons import Reason
from transforms.common.records import NAMESPACE, SortKey, decode_rows
from transforms.files.spill import load_blob
from transforms.sources import json_units
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    UserRow,
    csv_records,
    encode_user,
    guarded_records,
)
from transforms.sources.json_units import InputFile


# --- a toy source's whole reader part: what a new source writes ---------------------------------
class _StatusPart(RecordPart[InputFile]):
    """Rows ``id,email,status`` → users; a DEPROVISIONED user is dead-lettered."""

    name, source, file_source = "toy", "toy-user", "toy-file"
    read, unreadable = "toy.users_read", "toy.unreadable_files"

    def split(self, unit, open_stream):
        if unit.path.endswith((".json", ".json.gz")):
            return guarded_records(open_stream(), _users, lambda position: {"position": position})
        return csv_records(open_stream())

    def convert(self, record: Record, sortkey: SortKey, counts: collections.Counter[str]):
        user = record.value
        assert isinstance(user, dict)
        if user.get("status") == "DEPROVISIONED":
            return Rejected("deprovisioned", f"user {user['id']} is deprovisioned", user)
        entry = {"userId": user["id"], "user": {"userName": user["email"], "email": {"email": user["email"]}}}
        counts["toy.users_mapped"] += 1
        row = encode_user(
            sortkey,
            source=self.source,
            user_id=user["id"],
            entry=entry,
            metadata=(),
            password="",
            record_json=orjson.dumps(user),
        )
        return UserRow(user["id"], row)


# ------------------------------------------------------------------------------------------------


def _users(guard):
    """ijson's Python backend: it reads integers beyond 64 bits, which no JSON output carries
    (the C backend refuses them as a syntax error)."""
    import ijson

    return ijson.get_backend("python").items(guard, "item", use_float=True)


def _code_lines(source: str) -> int:
    """Lines holding code: not blank, not a comment, not a docstring."""
    lines = set()
    previous = tokenize.INDENT
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        docstring = token.type == tokenize.STRING and previous in (tokenize.INDENT, tokenize.NEWLINE)
        if (
            token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT)
            and not docstring
        ):
            lines.add(token.start[0])
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token.type
    return len(lines)


def _sortkeys(rows):
    return rows | "SortKeys" >> beam.FlatMap(
        lambda kv: [(r[0], r[1], r[2]) for r in decode_rows(load_blob(kv[1]))]
    )


def _dead(dead):
    return dead | "Dead" >> beam.Map(
        lambda d: (
            d[0],
            orjson.loads(d[1])["reason"],
            orjson.loads(d[1])["source"],
            orjson.loads(d[1])["record"],
        )
    )


def _run(files, build):
    """Run a pipeline; the counters it reported."""
    p = test_pipeline.TestPipeline()
    build(p | ReadSourceFiles(files, _StatusPart(), partitions=3, chunk=2))
    result = p.run()
    result.wait_until_finish()
    query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    return {c.key.metric.name: c.committed for c in query["counters"]}


def test_a_sources_part_is_a_small_declaration():
    assert _code_lines(inspect.getsource(_StatusPart)) <= 30


def test_csv_plain_gzip_and_utf16_are_read_in_chunks_with_their_sort_keys(tmp_path):
    rows = "id,email,status\nu1,a@example.com,ACTIVE\nu2,b@example.com,DEPROVISIONED\nu3,c@example.com\n"
    (tmp_path / "a.csv").write_text(rows + "u4,d@example.com,ACTIVE\n")
    (tmp_path / "b.csv.gz").write_bytes(gzip.compress(b"id,email,status\nv1,e@example.com,ACTIVE\n"))
    (tmp_path / "c.csv").write_bytes("id,email,status\nw1,f@example.com,STAGED\n".encode("utf-16"))
    files = json_units.match_inputs([str(tmp_path / "*")])

    def build(out):
        expected = [(0, 0, "u1"), (0, 3, "u4"), (1, 0, "v1"), (2, 0, "w1")]
        assert_that(_sortkeys(out.rows), equal_to(expected), label="rows")
        dead = [
            (
                (0, 1),
                "deprovisioned",
                "toy-user",
                {"id": "u2", "email": "b@example.com", "status": "DEPROVISIONED"},
            ),
            ((0, 2), Reason.MALFORMED_CSV, "toy-user", {"id": "u3", "email": "c@example.com"}),
        ]
        assert_that(_dead(out.dead), equal_to(dead), label="dead")

    counts = _run(files, build)
    assert counts["toy.users_read"] == 6
    assert counts["toy.users_mapped"] == 4
    assert counts[counters.INPUTS_DECODED + "utf-16-le"] == 1


def test_a_cut_gzip_keeps_the_records_before_the_cut_and_dead_letters_the_rest(tmp_path):
    text = "id,email,status\n" + "".join(f"u{n},u{n}@example.com,ACTIVE\n" for n in range(3000))
    packed = gzip.compress(text.encode())
    (tmp_path / "cut.csv.gz").write_bytes(packed[: len(packed) * 2 // 3])
    files = json_units.match_inputs([str(tmp_path / "cut.csv.gz")])

    def build(out):
        letters = _dead(out.dead) | "Kinds" >> beam.Map(lambda d: (d[1], d[2], sorted(d[3])))
        assert_that(
            letters, equal_to([(Reason.UNREADABLE_INPUT, "toy-file", ["file", "position"])]), label="dead"
        )

    counts = _run(files, build)
    read = counts["toy.users_read"]
    assert 0 < read < 3000
    assert counts[f"{counters.INPUTS_PARTIAL}0"] == read
    assert counts["toy.unreadable_files"] == 1


def test_json_users_too_deep_unencodable_and_a_syntax_error_each_end_in_a_dead_letter(tmp_path):
    deep = "[" * 600 + "]" * 600
    users = [
        '{"id": "j1", "email": "j1@example.com"}',
        '{"id": "j2", "email": "j2@example.com", "x": ' + deep + "}",
        '{"id": "j3", "email": "j3@example.com", "n": 123456789012345678901234567890}',  # beyond 64 bits
        '{"id": "j4", "email": "j4@example.com"}',
    ]
    (tmp_path / "a.json").write_text("[" + ",".join(users) + "]")
    (tmp_path / "b.json").write_text('[{"id": "k1", "email": "k1@example.com"}, {"id": ')
    files = json_units.match_inputs([str(tmp_path / "a.json"), str(tmp_path / "b.json")])

    def build(out):
        assert_that(_sortkeys(out.rows), equal_to([(0, 0, "j1"), (0, 3, "j4"), (1, 0, "k1")]), label="rows")
        dead = [
            ((0, 1), Reason.TOO_DEEP, "toy-user", {"position": 1}),
            ((0, 2), Reason.UNREADABLE_INPUT, "toy-user", {"unencodable_record": True, "position": 2}),
            ((1, 1), Reason.UNREADABLE_INPUT, "toy-file", {"file": files[1].path, "position": 1}),
        ]
        assert_that(_dead(out.dead), equal_to(dead), label="dead")

    counts = _run(files, build)
    assert counts["toy.users_read"] == 5
    assert counts["toy.unreadable_files"] == 1


def test_the_syntax_error_names_the_file_and_the_users_read(tmp_path):
    (tmp_path / "b.json").write_text('[{"id": "k1", "email": "k1@example.com"}, {"id": ')
    files = json_units.match_inputs([str(tmp_path / "b.json")])

    def build(out):
        details = out.dead | beam.Map(lambda d: orjson.loads(d[1])["detail"].split(" (")[0])
        assert_that(details, equal_to(["b.json: JSON syntax error after user 1"]))

    _run(files, build)


@pytest.mark.parametrize("empty", ["[]", "id,email,status\n"])
def test_an_empty_file_reports_zero_users_read(tmp_path, empty):
    name = "e.json" if empty.startswith("[") else "e.csv"
    (tmp_path / name).write_text(empty)
    files = json_units.match_inputs([str(tmp_path / name)])
    counts = _run(files, lambda out: assert_that(_sortkeys(out.rows), equal_to([])))
    assert counts["toy.users_read"] == 0


def test_records_keep_their_json_text(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps([{"id": "a", "email": "a@example.com", "n": 1.5}]))
    files = json_units.match_inputs([str(tmp_path / "a.json")])

    def build(out):
        records = out.rows | beam.FlatMap(
            lambda kv: [orjson.loads(r[8]) for r in decode_rows(load_blob(kv[1]))]
        )
        assert_that(records, equal_to([{"id": "a", "email": "a@example.com", "n": 1.5}]))

    _run(files, build)
