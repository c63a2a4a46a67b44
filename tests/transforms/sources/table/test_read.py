"""The table reader on real files, in a TestPipeline (transforms/sources/table/read.py)."""

from __future__ import annotations

import apache_beam as beam
import orjson
from apache_beam.testing.util import assert_that, equal_to
from beam_fixtures import h, pipeline

from transforms.common.reasons import Reason
from transforms.common.records import decode_rows
from transforms.files.spill import load_blob
from transforms.sources.table import read
from transforms.sources.table.accounting import SOURCE
from transforms.sources.table.mapping import TableOptions
from transforms.sources.table.read import ReadTableUsers, TableFile
from transforms.sources.table.spec import load_spec


def _rows(rows):
    return rows | "Rows" >> beam.FlatMap(
        lambda kv: [(r[0], r[1], r[2], orjson.loads(r[8])["id"]) for r in decode_rows(load_blob(kv[1]))]
    )


def _dead(dead):
    return dead | "Dead" >> beam.Map(
        lambda d: (d[0], orjson.loads(d[1])["reason"], orjson.loads(d[1])["source"])
    )


def test_csv_and_ndjson_files_keep_their_sort_keys_and_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(read, "CHUNK_RECORDS", 2)  # several flushes per file
    (tmp_path / "a.csv").write_text(
        "ID,E-Mail,Hash\n"
        + "".join(f"c{n},c{n}@example.com,{h(n)}\n" for n in range(5))
        + ",x@example.com,\n"
    )
    ndjson = b"\n".join(orjson.dumps({"ID": f"j{n}", "E-Mail": f"j{n}@example.com"}) for n in range(3))
    (tmp_path / "b.ndjson").write_bytes(ndjson + b"\n{broken\n")
    files = [
        TableFile(0, str(tmp_path / "a.csv"), 0, True),
        TableFile(1, str(tmp_path / "b.ndjson"), len(ndjson), False),
    ]
    spill = tmp_path / "spill"
    spill.mkdir()
    spec = load_spec(None, ["id=ID", "email=E-Mail", "password_hash=Hash"])
    offsets = [0, len(orjson.dumps({"ID": "j0", "E-Mail": "j0@example.com"})) + 1]
    offsets.append(offsets[1] * 2)
    with pipeline() as p:
        out = p | ReadTableUsers(files, TableOptions(spec=spec), 4, str(spill))
        assert_that(
            _rows(out.rows),
            equal_to(
                [(0, n, f"c{n}", f"c{n}") for n in range(5)]
                + [(1, offsets[n], f"j{n}", f"j{n}") for n in range(3)]
            ),
            label="rows",
        )
        assert_that(
            _dead(out.dead),
            equal_to(
                [
                    ((0, 5), Reason.MISSING_USER_ID, SOURCE),
                    ((1, len(ndjson) + 1), Reason.MALFORMED_JSON, SOURCE),
                ]
            ),
            label="dead",
        )


def test_roles_become_the_projects_role_list(tmp_path):
    (tmp_path / "a.json").write_bytes(
        orjson.dumps(
            [
                {"id": "1", "mail": "a@example.com", "roles": ["admin", "viewer"]},
                {"id": "2", "mail": "b@example.com", "roles": ["viewer"]},
                {"id": "3", "mail": "", "roles": ["ghost"]},  # dead-lettered: its role is not listed
            ]
        )
    )
    spill = tmp_path / "spill"
    spill.mkdir()
    spec = load_spec(None, ["id=id", "email=mail", "roles=roles"])
    files = [TableFile(0, str(tmp_path / "a.json"), 100, False)]
    with pipeline() as p:
        out = p | ReadTableUsers(files, TableOptions(spec=spec), 2, str(spill), project="2873423")
        keys = out.roles | "Keys" >> beam.FlatMap(lambda entries: [e[1] for e in entries])
        assert_that(keys, equal_to(["admin", "viewer"]), label="roles")
        grants = out.rows | "Grants" >> beam.FlatMap(
            lambda kv: [(r[2], r[10]) for r in decode_rows(load_blob(kv[1]))]
        )
        assert_that(
            grants,
            equal_to([("1", (("2873423", ("admin", "viewer")),)), ("2", (("2873423", ("viewer",)),))]),
            label="grants",
        )
