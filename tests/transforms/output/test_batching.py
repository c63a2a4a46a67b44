"""Import bodies from fragments (transforms/output/batching.py): the same bytes as encoding the dict."""

from __future__ import annotations

import orjson
import pytest

from transforms.common.records import encoded_row
from transforms.output.batching import (
    BodySpec,
    body_temp_name,
    fragment_of,
    parse_body_temp_name,
    plan_bodies,
    plan_chunks,
    render_fragments,
    to_fragment,
)

USERS = [{"userId": f"u{i}", "user": {"userName": f"n{i}"}} for i in range(3)]


def test_render_fragments_equals_encoding_the_whole_request():
    rows = [
        [[0, 0], USERS[0], [{"key": "k", "value": "dg=="}], {}, "s"],
        [[0, 1], USERS[1], [], {}, "s", [], "", (("p1", ("admin",)),)],
        [[0, 2], USERS[2], [], {}, "s"],
    ]
    body = render_fragments(BodySpec("42", "5m0s", 10), [to_fragment(r) for r in rows])
    expected = {
        "dataOrgs": {
            "orgs": [
                {
                    "orgId": "42",
                    "humanUsers": USERS,
                    "userMetadata": [{"id": "u0", "key": "k", "value": "dg=="}],
                    "userGrants": [{"userId": "u1", "projectId": "p1", "roleKeys": ["admin"]}],
                }
            ]
        },
        "timeout": "5m0s",
    }
    assert body == orjson.dumps(expected) + b"\n"
    multiline = render_fragments(BodySpec("42", "5m0s", 10, multiline=True), [to_fragment(r) for r in rows])
    assert orjson.loads(multiline) == expected and multiline.count(b"\n") > 1


def test_fragment_of_takes_the_named_fields():
    row = encoded_row(
        file_index=3,
        position=4,
        user_id="u",
        name_key="n",
        entry_json=b"{}",
        metadata_json=b"m",
        password="bcrypt",
        source="s",
        record_json=b"r",
        companions_json=b"",
        grants=(),
    )
    assert fragment_of(row, b"g") == (3, 4, b"{}", b"m", "bcrypt", b"g")


@pytest.mark.parametrize(("items", "size", "full", "rest"), [(5, 2, 2, 1), (4, 2, 2, 0), (1, 3, 0, 1)])
def test_plan_chunks(items, size, full, rest):
    chunks, remainder = plan_chunks(list(range(items)), size)
    assert [len(c) for c in chunks] == [size] * full and len(remainder) == rest


def test_plan_bodies_fills_partitions_then_merges_remainders_in_input_order():
    def frag(position):
        return (0, position, b"{}", b"", "", b"")

    bodies = plan_bodies({0: [frag(5), frag(0), frag(2)], 1: [frag(1), frag(3)]}, 2)
    assert [[f[1] for f in body] for body in bodies] == [[0, 2], [1, 3], [5]]


def test_body_temp_name_round_trips():
    name = body_temp_name((2, 123), 40, "ab" * 32)
    assert parse_body_temp_name(name) == ((2, 123), 40, "ab" * 32)
