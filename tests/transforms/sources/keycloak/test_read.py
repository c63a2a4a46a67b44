"""The streaming reader on real files, in a TestPipeline (transforms/sources/keycloak/read.py)."""

from __future__ import annotations

import apache_beam as beam
import orjson
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to
from keycloak_fixtures import make_user, split_export_files, write_json

from transforms.common.records import decode_rows
from transforms.files.spill import load_blob
from transforms.mapping.validate import Reason
from transforms.sources.keycloak.mapping import KeycloakOptions
from transforms.sources.keycloak.read import FILE_SOURCE, SOURCE, ReadKeycloakUsers
from transforms.sources.keycloak.realm_files import plan_realm_sources

# --------------------------------------------------------------------------- the reader


def _sortkeys(rows):
    return rows | "SortKeys" >> beam.FlatMap(lambda kv: [(r[0], r[1]) for r in decode_rows(load_blob(kv[1]))])


def _dead_reasons(dead):
    return dead | "Reasons" >> beam.Map(
        lambda d: (d[0], orjson.loads(d[1])["reason"], orjson.loads(d[1])["source"])
    )


def test_reader_split_export_in_parallel_files(tmp_path):
    split_export_files(tmp_path, "acme", [5, 3, 4])
    # One disabled user in the last file, to see a dead letter keep its sort key.
    doc = orjson.loads((tmp_path / "acme-users-2.json").read_bytes())
    doc["users"][1]["enabled"] = False
    write_json(tmp_path / "acme-users-2.json", doc)
    sources = plan_realm_sources(str(tmp_path))
    expected_rows = [(0, i) for i in range(5)] + [(1, i) for i in range(3)] + [(2, 0), (2, 2), (2, 3)]
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(sources, KeycloakOptions(), partitions=4, chunk_users=2)
        assert_that(_sortkeys(out.rows), equal_to(expected_rows), label="rows")
        assert_that(_dead_reasons(out.dead), equal_to([((2, 1), Reason.DISABLED, SOURCE)]), label="dead")


def test_reader_spills_blobs_to_tmp_dir(tmp_path):
    write_json(tmp_path / "realm.json", {"realm": "r", "users": [make_user(i) for i in range(30)]})
    spill = tmp_path / "spill"
    spill.mkdir()
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(
            plan_realm_sources(str(tmp_path / "realm.json")),
            KeycloakOptions(),
            partitions=2,
            tmp_dir=str(spill),
            chunk_users=10,
        )
        paths = out.rows | "Paths" >> beam.Map(
            lambda kv: isinstance(kv[1], str) and kv[1].startswith(str(spill))
        )
        assert_that(paths, lambda got: _check(got and all(got)), label="spill paths")
        assert_that(_sortkeys(out.rows), equal_to([(0, i) for i in range(30)]), label="rows")


def test_reader_emits_few_large_elements(tmp_path):
    write_json(tmp_path / "realm.json", {"realm": "r", "users": [make_user(i) for i in range(50)]})
    sources = plan_realm_sources(str(tmp_path / "realm.json"))
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(sources, KeycloakOptions(), partitions=3, chunk_users=20)
        # 50 users in chunks of 20 → at most 3 flushes × 3 partitions elements.
        sizes = out.rows | beam.combiners.Count.Globally()
        assert_that(sizes, lambda got: _check(got[0] <= 9), label="few elements")
        assert_that(_sortkeys(out.rows), equal_to([(0, i) for i in range(50)]), label="all rows")


def _check(condition: bool) -> None:
    if not condition:
        raise AssertionError("condition failed")


def test_reader_multi_realm_array_reads_the_chosen_realm(tmp_path):
    path = write_json(
        tmp_path / "all.json",
        [
            {"realm": "master", "users": [make_user(1)]},
            {"realm": "acme", "users": [make_user(2), make_user(3)]},
        ],
    )
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(plan_realm_sources(str(path), "acme"), KeycloakOptions(), partitions=2)
        ids = out.rows | beam.FlatMap(lambda kv: [r[2] for r in decode_rows(kv[1])])
        assert_that(ids, equal_to(["id-2", "id-3"]))


def test_reader_truncated_users_array_dead_letters_the_rest(tmp_path):
    text = orjson.dumps({"realm": "r", "users": [make_user(i) for i in range(3)]})
    cut = text.index(b'"id-2"')
    (tmp_path / "realm.json").write_bytes(text[:cut])
    sources = plan_realm_sources(str(tmp_path / "realm.json"))  # the top level is fine
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(sources, KeycloakOptions(), partitions=2)
        assert_that(_sortkeys(out.rows), equal_to([(0, 0), (0, 1)]), label="rows")
        assert_that(
            _dead_reasons(out.dead),
            equal_to([((0, 2), Reason.UNREADABLE_INPUT, FILE_SOURCE)]),
            label="dead",
        )


def test_reader_bad_credential_json_is_a_dead_letter_not_a_crash(tmp_path):
    users = [
        make_user(0),
        make_user(1, credentials=[{"type": "password", "secretData": '{"value":', "credentialData": "]"}]),
        "not a user",
    ]
    write_json(tmp_path / "realm.json", {"realm": "r", "users": users})
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(
            plan_realm_sources(str(tmp_path / "realm.json")), KeycloakOptions(), partitions=2
        )
        assert_that(_sortkeys(out.rows), equal_to([(0, 0)]), label="rows")
        assert_that(
            _dead_reasons(out.dead),
            equal_to([((0, 1), Reason.UNSUPPORTED_HASH, SOURCE), ((0, 2), Reason.NOT_AN_OBJECT, SOURCE)]),
            label="dead",
        )


def test_reader_integer_overflow_ends_the_file_with_a_dead_letter(tmp_path):
    """yajl rejects integers beyond 64 bits as a syntax error: earlier users are kept."""
    good = orjson.dumps(make_user(0))
    huge = orjson.dumps(make_user(1)).replace(
        b'"enabled":true', b'"enabled":true,"notBefore":123456789012345678901234567890'
    )
    (tmp_path / "realm.json").write_bytes(b'{"realm":"r","users":[' + good + b"," + huge + b"]}")
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(
            plan_realm_sources(str(tmp_path / "realm.json")), KeycloakOptions(), partitions=2
        )
        assert_that(_sortkeys(out.rows), equal_to([(0, 0)]), label="rows")
        assert_that(
            _dead_reasons(out.dead),
            equal_to([((0, 1), Reason.UNREADABLE_INPUT, FILE_SOURCE)]),
            label="dead",
        )
