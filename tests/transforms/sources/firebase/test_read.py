"""The streaming reader on real files, in a TestPipeline (transforms/sources/firebase/read.py),
and the accounting it feeds (accounting.py)."""

from __future__ import annotations

import json

import apache_beam as beam
import orjson
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.common import counters
from transforms.common.records import decode_rows
from transforms.files.spill import load_blob
from transforms.mapping.validate import Reason
from transforms.sources.firebase import accounting as fb
from transforms.sources.firebase.files import plan_firebase_files
from transforms.sources.firebase.mapping import FirebaseOptions
from transforms.sources.firebase.read import ReadFirebaseUsers


def _sortkeys(rows):
    return rows | "SortKeys" >> beam.FlatMap(
        lambda kv: [(r[0], r[1], r[2]) for r in decode_rows(load_blob(kv[1]))]
    )


def _dead_reasons(dead):
    return dead | "Reasons" >> beam.Map(
        lambda d: (d[0], orjson.loads(d[1])["reason"], orjson.loads(d[1])["source"])
    )


def test_json_and_csv_files_in_chunks_keep_their_sort_keys_and_dead_letters(tmp_path):
    users = [{"localId": f"u{n}", "email": f"u{n}@example.com"} for n in range(5)]
    users[3]["disabled"] = True
    (tmp_path / "a.json").write_text(json.dumps({"users": users}))
    row = ",".join(["c1", "c1@example.com", "true"] + [""] * 25) + ",\n"
    (tmp_path / "b.csv").write_text(row + "too,few\n" + row.replace("c1", "c2"))
    files = plan_firebase_files([str(tmp_path / "*")])
    expected = [(0, 0, "u0"), (0, 1, "u1"), (0, 2, "u2"), (0, 4, "u4"), (1, 0, "c1"), (1, 2, "c2")]
    with test_pipeline.TestPipeline() as p:
        out = p | ReadFirebaseUsers(files, FirebaseOptions(), partitions=3, chunk_users=2)
        assert_that(_sortkeys(out.rows), equal_to(expected), label="rows")
        assert_that(
            _dead_reasons(out.dead),
            equal_to([((0, 3), Reason.DISABLED, fb.SOURCE), ((1, 1), Reason.UNREADABLE_INPUT, fb.SOURCE)]),
            label="dead",
        )


def test_a_value_nested_too_deep_is_one_users_dead_letter(tmp_path):
    deep = "[" * 600 + "]" * 600
    text = (
        '{"users": [{"localId": "a", "email": "a@example.com", "x": '
        + deep
        + '}, {"localId": "b", "email": "b@example.com"}]}'
    )
    (tmp_path / "deep.json").write_text(text)
    files = plan_firebase_files([str(tmp_path / "deep.json")])
    with test_pipeline.TestPipeline() as p:
        out = p | ReadFirebaseUsers(files, FirebaseOptions(), partitions=2)
        assert_that(_sortkeys(out.rows), equal_to([(0, 1, "b")]), label="rows")
        assert_that(_dead_reasons(out.dead), equal_to([((0, 0), Reason.TOO_DEEP, fb.SOURCE)]), label="dead")


def test_the_invariant_adds_up_and_names_a_gap():
    counts = {
        fb.USERS_READ: 5,
        fb.USERS_MAPPED: 4,
        counters.USERS_WRITTEN: 3,
        counters.dead_letter(fb.SOURCE, "disabled"): 1,
        counters.dead_letter(fb.SOURCE, "duplicate-user-id"): 1,
    }
    holds, text = fb.invariant(counts)
    assert holds and "users read 5 = written 3 + dead-lettered 2" in text
    holds, _ = fb.invariant({**counts, fb.USERS_READ: 6})
    assert not holds
