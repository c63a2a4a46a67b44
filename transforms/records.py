"""The shapes that flow between the stages of every migrate pipeline.

Sources (Auth0, Keycloak, ...) turn input files into **user rows**, grouped into large elements
``(partition, rows_blob)`` so that Beam moves a few hundred big values instead of millions of
small ones. ``rows_blob`` is the orjson encoding of a list of rows; each row is::

    [sortkey, entry, metadata, record, source]

- ``sortkey``: ``[file_index, position]``, where the record sits in the input (file order of the
  sorted glob matches, then byte offset or element index). Bodies list users in sortkey order,
  which makes batches deterministic and keeps zitadel-tools' order for a single body.
- ``entry``: the ``humanUsers`` entry, ``{"userId": ..., "user": {...}}``, already validated.
- ``metadata``: ``[{"key": str, "value": base64 str}, ...]`` for the org's ``userMetadata``.
- ``record``: the original input record, kept so a later stage can still dead-letter it.
- ``source``: e.g. ``auth0-profile``.

Dead letters are ``(sortkey, line)`` pairs where ``line`` is one NDJSON line (bytes, no newline)
``{"reason", "detail", "source", "record"}``.
"""
from __future__ import annotations

import zlib
from typing import Any

import orjson

__all__ = [
    "NAMESPACE",
    "NUM_PARTITIONS",
    "SortKey",
    "partition_of",
    "dead_letter",
    "encode_rows",
    "decode_rows",
]

# Beam metrics namespace for every counter the run summary reads.
NAMESPACE = "zitadel_beam"

# Hash partitions of the join key: enough to keep both cores (and Dataflow workers) busy with
# large elements, few enough that per-element overhead stays negligible.
NUM_PARTITIONS = 32

SortKey = tuple[int, int]


def partition_of(key: str, partitions: int = NUM_PARTITIONS) -> int:
    """A stable partition for ``key`` (Python's ``hash`` differs per process, crc32 does not)."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % partitions


def dead_letter(sortkey: SortKey, reason: str, detail: str, source: str, record: Any) -> tuple[SortKey, bytes]:
    """One dead-letter element: the reason first, then the record exactly as it was read."""
    line = orjson.dumps({"reason": reason, "detail": detail, "source": source, "record": record})
    return (tuple(sortkey), line)


def encode_rows(rows: list[list[Any]]) -> bytes:
    return orjson.dumps(rows)


def decode_rows(blob: bytes) -> list[list[Any]]:
    return orjson.loads(blob)
