"""transforms/sync/compare.py: one run compared with its state, through the real Beam transform.

A state of four users and today's export: one unchanged, one renamed, one new, one gone
(``--on-removed=deactivate``), and one whose record was dead-lettered today (left alone, and its
dead letter says so).
"""

from __future__ import annotations

import glob
import os

import apache_beam as beam
import orjson
from apache_beam.testing.util import assert_that, equal_to

from transforms.common.records import dead_letter, decode_rows, encode_rows
from transforms.files.spill import read_spill
from transforms.sources.registry import kind
from transforms.sync.change_records import OnRemoved
from transforms.sync.compare import CompareWithState, SourceUsers, SyncOptions, change_shard_name
from transforms.sync.state import encode_shard
from transforms.sync.state_records import INACTIVE, quick_digest, state_record


def _entry(user_id: str, last: str) -> dict:
    user = {
        "userName": user_id,
        "profile": {"firstName": "Given", "lastName": last},
        "email": {"email": f"{user_id}@example.com", "isEmailVerified": True},
        # With a password and a verified e-mail the user is active, not initial: deactivated when gone.
        "hashedPassword": {"value": "$2a$10$" + "x" * 53},
    }
    return {"userId": user_id, "user": user}


def _state(entry: dict) -> dict:
    return state_record(entry, [], blocked=False, quick=quick_digest(orjson.dumps(entry), b""))


def test_unchanged_changed_new_gone_and_dead_lettered_users(tmp_path):
    shard = tmp_path / "shard.ndjson.gz"
    state = [_state(_entry(u, "Old")) for u in ("same", "renamed", "gone", "unreadable")]
    shard.write_bytes(encode_shard(state))
    today = [_entry("same", "Old"), _entry("renamed", "New"), _entry("new", "New")]
    rows = [
        [[0, i], entry, [], {"user_id": entry["userId"]}, "auth0-profile"] for i, entry in enumerate(today)
    ]
    letter = dead_letter((0, 9), "malformed-record", "bad", "auth0-profile", {"user_id": "unreadable"})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    options = SyncOptions(
        org_id="1",
        source="auth0",
        records=kind("auth0").records,
        partitions=1,
        on_removed=OnRemoved.DEACTIVATE,
    )
    with beam.Pipeline() as p:
        dead = p | "Dead" >> beam.Create([letter])
        rows_in = p | beam.Create([(0, encode_rows(rows))])
        out = SourceUsers(rows_in, dead) | CompareWithState(options, {0: str(shard)}, str(tmp))
        notes = out.dead | beam.Map(lambda d: orjson.loads(d[1]).get("sync", "")[:38])
        assert_that(notes, equal_to(["user 'unreadable' is in the sync state"]), label="DeadLetterNoted")
        assert_that(out.changes, equal_to([os.path.join(str(tmp), change_shard_name(0))]), label="Changes")
    (new_path,) = glob.glob(str(tmp / "sync-new-*.pkl"))
    assert [row[2] for row in decode_rows(read_spill(new_path))] == ["new"]
    changes = [orjson.loads(line) for line in (tmp / change_shard_name(0)).read_bytes().splitlines()]
    assert [(c["userId"], c["kind"]) for c in changes] == [("renamed", "changed"), ("gone", "removed")]
    renamed, gone = changes
    assert renamed["calls"][0]["call"] == "UpdateHumanUser" and renamed["fields"] == ["profile"]
    assert renamed["calls"][0]["body"]["profile"]["familyName"] == "New"
    assert gone["policy"] == "deactivate" and gone["calls"] == [{"call": "DeactivateUser"}]
    assert gone["state"]["b"] == INACTIVE and gone["state"]["g"] == 1 and "g" not in gone["previous"]
