"""Writing outputs that hold password hashes: private files, dead-letter shards, final renames.

Local files are created with mode 0600 under a fresh name and renamed into place, never through a
link (``transforms/files/storage.py`` ``open_private``); ``gs://`` objects go through Beam's FileSystems,
where access is the bucket's IAM. The dead-letter shards and the final file keep a
deterministic order (input order within a shard, shards in order).

Example::

    dead | 'WriteDeadLetters' >> WriteDeadLetterShards(tmp_dir)
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.common import counters
from transforms.common.records import NAMESPACE, DeadLetter, SortKey, no_gc
from transforms.files.storage import open_private

__all__ = [
    "open_private",
    "WriteDeadLetterShards",
    "DEAD_SHARDS",
    "dead_shard_name",
]

_LOGGER = logging.getLogger(__name__)

DEAD_SHARDS = 8


def dead_shard_name(shard: int) -> str:
    return f"dead-{shard:03d}.ndjson"


def _shard_of(sortkey: SortKey) -> int:
    return (sortkey[0] * 1_000_003 + sortkey[1]) % DEAD_SHARDS


def _with_shard(letter: DeadLetter) -> tuple[int, DeadLetter]:
    return _shard_of(letter[0]), letter


class _WriteDeadShardFn(beam.DoFn):
    """Write one shard of dead letters in input order and count them by source and reason."""

    def __init__(self, tmp_dir: str):
        self._tmp_dir = tmp_dir

    def process(self, element: tuple[int, Iterable[DeadLetter]]) -> Iterator[str]:
        from apache_beam.io.filesystems import FileSystems

        shard, letters = element
        with no_gc():
            items = sorted(letters, key=lambda kv: (kv[0][0], kv[0][1]))
            counts: dict[str, int] = {}
            path = FileSystems.join(self._tmp_dir, dead_shard_name(shard))
            with open_private(path) as handle:
                for _, line in items:
                    handle.write(line + b"\n")
                    letter = orjson.loads(line)
                    name = counters.dead_letter(letter["source"], letter["reason"])
                    counts[name] = counts.get(name, 0) + 1
        for name, count in counts.items():
            Metrics.counter(NAMESPACE, name).inc(count)
        yield path


@beam.typehints.with_input_types(DeadLetter)
@beam.typehints.with_output_types(str)
class WriteDeadLetterShards(beam.PTransform):
    """Dead letters ``(sortkey, line)`` → up to ``DEAD_SHARDS`` NDJSON files in ``tmp_dir``."""

    def __init__(self, tmp_dir: str):
        super().__init__()
        self._tmp_dir = tmp_dir

    def expand(self, dead: beam.PCollection[DeadLetter]) -> beam.PCollection[str]:
        return (
            dead
            | "ShardDeadLetters" >> beam.Map(_with_shard)
            | "GroupDeadLetters" >> beam.GroupByKey()
            | "WriteDeadShards" >> beam.ParDo(_WriteDeadShardFn(self._tmp_dir))
        )
