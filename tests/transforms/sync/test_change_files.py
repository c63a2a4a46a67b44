"""transforms/sync/change_files.py: final names of the change files, the manifest section, the summary."""

from __future__ import annotations

import hashlib
import os

import orjson

from transforms.sync.change_files import change_file_name, finalize_changes, sync_manifest, sync_summary_lines
from transforms.sync.compare import change_shard_name


def test_shards_get_final_names_and_manifest_entries(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    lines = [
        {"userId": "a", "kind": "changed", "calls": [{"call": "UpdateHumanUser"}, {"call": "RemovePhone"}]},
        {"userId": "b", "kind": "removed", "calls": []},
    ]
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    (tmp / change_shard_name(3)).write_bytes(data)
    stem = str(tmp_path / "out" / "importBody")
    os.makedirs(tmp_path / "out")
    checked: list[list[str]] = []
    entries = finalize_changes(str(tmp), stem, str(tmp_path / "out"), checked.append)
    assert checked == [[]]  # no earlier change files to replace
    assert entries == [
        {
            "path": change_file_name("importBody", 1, 1),
            "users": 2,
            "calls": 2,
            "kinds": {"changed": 1, "removed": 1},
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    ]
    assert (tmp_path / "out" / "importBody.changes-00001-of-00001.ndjson").read_bytes() == data


def test_manifest_section_and_summary_lines_read_the_sync_counters():
    counts = {
        "sync.new": 2,
        "sync.changed": 1,
        "sync.changed_fields.profile": 1,
        "sync.removed.held": 3,
        "x": 9,
    }
    section = sync_manifest(
        counts, "/state", {"generation": 4, "partitions": 8, "users": 10}, "report", 5, []
    )
    assert section["base_generation"] == 4 and section["partitions"] == 8 and section["users_in_state"] == 10
    assert section["counts"] == {"new": 2, "changed": 1, "changed_fields.profile": 1, "removed.held": 3}
    lines = dict(sync_summary_lines(counts))
    assert lines["sync: new (to bodies)"] == 2 and lines["  profile"] == 1
    assert lines["  of them held back (an unreadable user record)"] == 3
