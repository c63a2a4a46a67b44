"""UsersToBodies (transforms/output/bodies.py): duplicates, batching and remainders in TestPipeline."""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
import orjson
import pytest
from apache_beam.testing.util import assert_that, equal_to
from beam_fixtures import h, pipeline

from transforms.common.records import encode_rows
from transforms.mapping.validate import Reason
from transforms.output.bodies import BodySpec, UsersToBodies


def _dead_key(element):
    sortkey, line = element
    letter = orjson.loads(line)
    record = letter["record"]
    key = (record.get("user_id") or record.get("email") or "") if isinstance(record, dict) else record
    return letter["source"], letter["reason"], key


def row(index: int, user_id: str, user_name: str, password: str | None = None, companions=()):
    user = {
        "userName": user_name,
        "profile": {"firstName": "F", "lastName": "L"},
        "email": {"email": f"{user_name}@example.com"},
    }
    if password:
        user["hashedPassword"] = {"value": password}
    record = {"user_id": user_id, "email": f"{user_name}@example.com"}
    return [[0, index], {"userId": user_id, "user": user}, [], record, "auth0-profile", list(companions)]


def _body_summary(path: str):
    data = json.loads(Path(path).read_bytes())
    org = data["dataOrgs"]["orgs"][0]
    return org["orgId"], data["timeout"], tuple(u["userId"] for u in org["humanUsers"])


def test_users_to_bodies_duplicates_and_batching(tmp_path):
    rows = [
        row(0, "u0", "ann", h(0)),
        row(1, "u1", "bob"),
        row(
            2, "u0", "carl", companions=[[[1, 5], "auth0-password", {"email": "carl@example.com"}]]
        ),  # id taken
        row(3, "u3", "ANN"),  # user name taken, compared case-insensitively
        row(4, "u4", "dan"),
        row(5, "u5", "eve"),
        row(6, "u6", "fay"),
    ]
    # Each partition's users, sorted into input order, fill whole bodies; the remainders of all
    # partitions are merged in input order and cut again.
    elements = [
        (0, encode_rows([rows[6], rows[0], rows[3]])),
        (1, encode_rows([rows[2], rows[5]])),
        (2, encode_rows([rows[4], rows[1]])),
    ]
    with pipeline() as p:
        out = p | beam.Create(elements) | UsersToBodies(BodySpec("42", "5m0s", 2), str(tmp_path))
        bodies = out.bodies | "ReadBodies" >> beam.Map(_body_summary)
        dead = out.dead | "DeadKeys" >> beam.Map(_dead_key)
        assert_that(
            bodies,
            equal_to(
                [
                    ("42", "5m0s", ("u0", "u6")),  # partition 0 (u3 lost its user name)
                    ("42", "5m0s", ("u1", "u4")),  # partition 2
                    ("42", "5m0s", ("u5",)),  # partition 1's remainder (u2 lost its id)
                ]
            ),
            label="Bodies",
        )
        assert_that(
            dead,
            equal_to(
                [
                    ("auth0-profile", Reason.DUPLICATE_USER_ID, "u0"),
                    ("auth0-password", Reason.PROFILE_REJECTED, "carl@example.com"),
                    ("auth0-profile", Reason.DUPLICATE_USERNAME, "u3"),
                ]
            ),
            label="Duplicates",
        )


def test_users_to_bodies_full_partitions_and_remainders(tmp_path):
    rows = [row(i, f"u{i}", f"name{i}") for i in range(7)]
    elements = [(0, encode_rows(rows[:4])), (1, encode_rows(rows[4:]))]
    with pipeline() as p:
        out = p | beam.Create(elements) | UsersToBodies(BodySpec("1", "30m0s", 3), str(tmp_path))
        bodies = out.bodies | beam.Map(lambda path: _body_summary(path)[2])
        # partition 0 fills one body (u0-u2) and leaves u3; partition 1 fills one (u4-u6)
        assert_that(bodies, equal_to([("u0", "u1", "u2"), ("u4", "u5", "u6"), ("u3",)]), label="Bodies")
        assert_that(out.dead, equal_to([]), label="NoDuplicates")


def test_users_to_bodies_rejects_batch_size_zero(tmp_path):
    with pytest.raises(ValueError, match="batch_size"):
        with pipeline() as p:
            _ = p | beam.Create([]) | UsersToBodies(BodySpec("1", "5m0s", 0), str(tmp_path))


def test_users_to_bodies_remainders_merge_across_partitions(tmp_path):
    rows = [row(i, f"u{i}", f"name{i}", h(i) if i % 2 else None) for i in range(5)]
    elements = [(part, encode_rows([rows[i] for i in range(5) if i % 3 == part])) for part in range(3)]
    with pipeline() as p:
        out = p | beam.Create(elements) | UsersToBodies(BodySpec("1", "5m0s", 4), str(tmp_path))
        bodies = out.bodies | beam.Map(lambda path: _body_summary(path)[2])
        assert_that(bodies, equal_to([("u0", "u1", "u2", "u3"), ("u4",)]), label="InputOrderAcrossPartitions")
