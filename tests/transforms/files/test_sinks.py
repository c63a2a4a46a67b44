"""transforms/files/sinks.py: dead letters as private NDJSON shards, in a deterministic order."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import apache_beam as beam
import orjson
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from transforms.common.records import NAMESPACE, dead_letter
from transforms.files.sinks import DEAD_SHARDS, WriteDeadLetterShards, dead_shard_name


def test_names():
    assert dead_shard_name(3) == "dead-003.ndjson"


def test_dead_letters_are_written_to_private_shards_in_input_order(tmp_path):
    letters = [
        dead_letter(
            (file_index, position), reason, "detail", "auth0-users", {"n": file_index * 1000 + position}
        )
        for file_index in range(3)
        for position in range(40)
        for reason in (["malformed-json"] if position % 3 else ["invalid-email"])
    ]
    # Given out of order: the shards come back in input order all the same.
    shuffled = letters[::-1]
    pipeline = beam.Pipeline(runner=FnApiRunner())
    _ = pipeline | beam.Create(shuffled, reshuffle=False) | WriteDeadLetterShards(str(tmp_path))
    result = pipeline.run()
    result.wait_until_finish()
    shards = sorted(Path(tmp_path).iterdir())
    assert 1 < len(shards) <= DEAD_SHARDS
    assert {p.name for p in shards} <= {dead_shard_name(i) for i in range(DEAD_SHARDS)}
    seen = []
    for shard in shards:
        assert stat.S_IMODE(os.stat(shard).st_mode) == 0o600
        numbers = [orjson.loads(line)["record"]["n"] for line in shard.read_bytes().splitlines()]
        assert numbers == sorted(numbers)
        seen += numbers
    assert sorted(seen) == sorted(orjson.loads(line)["record"]["n"] for _, line in letters)
    query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    counters = {c.key.metric.name: c.committed for c in query["counters"]}
    assert counters == {
        "dead_letter.auth0-users.malformed-json": 78,
        "dead_letter.auth0-users.invalid-email": 42,
    }
