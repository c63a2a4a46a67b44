"""User rows → deterministic import bodies on disk (or gs://), plus dead-letter shards.

Shape of the work::

    rows (partition, blob) ─┬─ Claims ─ GroupByKey ─ FindDuplicates ──────────┐ (side input)
                            └─ GroupByKey ─ ChunkPartition ─► full bodies       │
                                              │      └─► remainder ─ GroupByKey(0) ─ ChunkRemainders ─► bodies
                                              └─► dead letters (duplicates) ◄─┘
    bodies ─ WriteBody ─► temporary files named by (first sortkey, users, sha256)

A user id or user name (case-folded) claimed by several rows is kept for the first row in input
order; the others become ``duplicate-user-id`` / ``duplicate-username`` dead letters. Each
partition's users, in input order, fill bodies of exactly ``batch_size``; what is left over in
every partition is merged in input order and chunked again, so a run writes at most one
partly-filled body per ~partition and a small input gives one body in zitadel-tools' order.

The launcher (``pipeline/migrate.py``) renames the temporary files to their final names once the
pipeline has finished, because a body's index ``-00001-of-00042`` needs the total count.

Example::

    out = rows | 'ToBodies' >> UsersToBodies(BodySpec('123', '5m0s', 5000, False), tmp_dir)
    out['bodies']  # PCollection of temporary body paths
    out['dead']    # duplicates as dead letters
"""
from __future__ import annotations

import dataclasses
import gc
import hashlib
import logging
from typing import Any, Iterable, Iterator

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.records import NAMESPACE, dead_letter, decode_rows, encode_rows, partition_of
from transforms.sinks import open_private
from transforms.validate import Reason

__all__ = ["BodySpec", "UsersToBodies", "render_body", "body_temp_name", "parse_body_temp_name", "plan_chunks"]

_LOGGER = logging.getLogger(__name__)
_DEAD = "dead"
_REMAINDER = "remainder"
_ID, _NAME = 0, 1


@dataclasses.dataclass(frozen=True)
class BodySpec:
    """What every body of a run shares."""

    org_id: str
    timeout: str
    batch_size: int
    multiline: bool = False


def render_body(spec: BodySpec, rows: list[list[Any]]) -> bytes:
    """The ImportDataRequest for ``rows`` (already in order): ``dataOrgs`` + ``timeout``."""
    org: dict[str, Any] = {"orgId": spec.org_id, "humanUsers": [row[1] for row in rows]}
    metadata = [
        {"id": row[1].get("userId", ""), **item} for row in rows for item in row[2]
    ]
    if metadata:
        org["userMetadata"] = metadata
    body = {"dataOrgs": {"orgs": [org]}, "timeout": spec.timeout}
    if spec.multiline:
        return orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n"
    return orjson.dumps(body) + b"\n"


def plan_chunks(rows: list[list[Any]], size: int) -> tuple[list[list[list[Any]]], list[list[Any]]]:
    """Split sorted rows into full chunks of ``size`` and the remainder."""
    full = len(rows) - len(rows) % size
    return [rows[i:i + size] for i in range(0, full, size)], rows[full:]


def body_temp_name(first_sortkey: tuple[int, int], users: int, sha256: str) -> str:
    return f"body-{first_sortkey[0]:06d}-{first_sortkey[1]:015d}-{users}-{sha256}.json"


def parse_body_temp_name(name: str) -> tuple[tuple[int, int], int, str]:
    """Inverse of ``body_temp_name``: ``((file, position), users, sha256)``."""
    _, file_index, position, users, rest = name.split("-", 4)
    return (int(file_index), int(position)), int(users), rest.split(".", 1)[0]


def _sortkey(row: list[Any]) -> tuple[int, int]:
    return row[0][0], row[0][1]


def _user_name_key(entry: dict[str, Any]) -> str:
    # ZITADEL compares login names case-insensitively, so "Ann" and "ann" collide on import.
    return str(entry["user"].get("userName", "")).casefold()


class _ClaimsFn(beam.DoFn):
    """Each row claims its user id and user name, grouped by a hash of the claimed value."""

    def process(self, element: tuple[int, bytes]) -> Iterator[tuple[int, bytes]]:
        _, blob = element
        claims: dict[int, list[list[Any]]] = {}
        for row in decode_rows(blob):
            entry = row[1]
            if entry.get("userId"):
                claims.setdefault(partition_of("i" + entry["userId"]), []).append([_ID, entry["userId"], row[0]])
            claims.setdefault(partition_of("n" + _user_name_key(entry)), []).append([_NAME, _user_name_key(entry), row[0]])
        for part, items in claims.items():
            yield part, orjson.dumps(items)


class _FindDuplicatesFn(beam.DoFn):
    """The rows that lose a claim: ``(sortkey, (reason, detail))`` for all but the first."""

    def process(self, element: tuple[int, Iterable[bytes]]):
        _, blobs = element
        first: dict[tuple[int, str], list[int]] = {}
        losers: dict[tuple[int, int], tuple[str, str]] = {}
        items = [item for blob in blobs for item in orjson.loads(blob)]
        items.sort(key=lambda c: (c[2][0], c[2][1]))
        for kind, value, sortkey in items:
            key = (kind, value)
            if key not in first:
                first[key] = sortkey
                continue
            if kind == _ID:
                reason, detail = Reason.DUPLICATE_USER_ID, f"user_id {value!r} already used by an earlier record"
            else:
                reason, detail = Reason.DUPLICATE_USERNAME, f"userName {value!r} already used by an earlier record"
            losers.setdefault((sortkey[0], sortkey[1]), (reason, detail))
        yield from losers.items()


class _ChunkPartitionFn(beam.DoFn):
    """Sort a partition's rows, drop duplicates, emit full chunks and the remainder."""

    def __init__(self, batch_size: int):
        self._batch_size = batch_size

    def process(self, element: tuple[int, Iterable[bytes]], losers: dict):
        _, blobs = element
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            rows = [row for blob in blobs for row in decode_rows(blob)]
            rows.sort(key=_sortkey)
            kept = []
            for row in rows:
                lost = losers.get(_sortkey(row))
                if lost is None:
                    kept.append(row)
                    continue
                yield beam.pvalue.TaggedOutput(_DEAD, dead_letter(_sortkey(row), lost[0], lost[1], row[4], row[3]))
                for sortkey, source, record in row[5]:
                    yield beam.pvalue.TaggedOutput(_DEAD, dead_letter(
                        sortkey, Reason.PROFILE_REJECTED, f"its user was dead-lettered ({lost[0]})", source, record))
            full, rest = plan_chunks(kept, self._batch_size)
            for chunk in full:
                yield encode_rows(chunk)
            if rest:
                yield beam.pvalue.TaggedOutput(_REMAINDER, (0, encode_rows(rest)))
        finally:
            if gc_was_enabled:
                gc.enable()


class _ChunkRemaindersFn(beam.DoFn):
    """All partitions' remainders, merged in input order, cut into bodies again."""

    def __init__(self, batch_size: int):
        self._batch_size = batch_size

    def process(self, element: tuple[int, Iterable[bytes]]) -> Iterator[bytes]:
        _, blobs = element
        rows = [row for blob in blobs for row in decode_rows(blob)]
        rows.sort(key=_sortkey)
        full, rest = plan_chunks(rows, self._batch_size)
        for chunk in full + ([rest] if rest else []):
            yield encode_rows(chunk)


class _WriteBodyFn(beam.DoFn):
    """Render a chunk as an import body and write it (mode 0600) under the temporary folder."""

    def __init__(self, spec: BodySpec, tmp_dir: str):
        self._spec = spec
        self._tmp_dir = tmp_dir

    def setup(self):
        self._users = Metrics.counter(NAMESPACE, "users_written")
        self._with_pw = Metrics.counter(NAMESPACE, "users_with_password")
        self._metadata = Metrics.counter(NAMESPACE, "metadata_written")
        self._bodies = Metrics.counter(NAMESPACE, "bodies_written")

    def process(self, blob: bytes) -> Iterator[str]:
        from apache_beam.io.filesystems import FileSystems

        rows = decode_rows(blob)
        data = render_body(self._spec, rows)
        digest = hashlib.sha256(data).hexdigest()
        name = body_temp_name(_sortkey(rows[0]), len(rows), digest)
        path = FileSystems.join(self._tmp_dir, name)
        with open_private(path) as handle:
            handle.write(data)
        self._users.inc(len(rows))
        self._with_pw.inc(sum(1 for r in rows if "hashedPassword" in r[1]["user"]))
        self._metadata.inc(sum(len(r[2]) for r in rows))
        self._bodies.inc()
        yield path


class UsersToBodies(beam.PTransform):
    """``(partition, rows_blob)`` → ``{'bodies': temp body paths, 'dead': duplicate dead letters}``."""

    def __init__(self, spec: BodySpec, tmp_dir: str):
        super().__init__()
        if spec.batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._spec = spec
        self._tmp_dir = tmp_dir

    def expand(self, rows):
        losers = (
            rows
            | "Claims" >> beam.ParDo(_ClaimsFn())
            | "GroupClaims" >> beam.GroupByKey()
            | "FindDuplicates" >> beam.ParDo(_FindDuplicatesFn())
        )
        chunks = (
            rows
            | "GroupRows" >> beam.GroupByKey()
            | "ChunkPartitions" >> beam.ParDo(
                _ChunkPartitionFn(self._spec.batch_size), losers=beam.pvalue.AsDict(losers)
            ).with_outputs(_DEAD, _REMAINDER, main="full")
        )
        merged = (
            chunks[_REMAINDER]
            | "GroupRemainders" >> beam.GroupByKey()
            | "ChunkRemainders" >> beam.ParDo(_ChunkRemaindersFn(self._spec.batch_size))
        )
        bodies = (
            (chunks.full, merged)
            | "AllChunks" >> beam.Flatten()
            | "WriteBodies" >> beam.ParDo(_WriteBodyFn(self._spec, self._tmp_dir))
        )
        return {"bodies": bodies, "dead": chunks[_DEAD]}
