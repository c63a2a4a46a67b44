"""The shapes that flow between the stages of every migrate pipeline.

Sources (Auth0, Keycloak, ...) turn input files into **user rows**, grouped into large elements
``(partition, rows_blob)`` so that Beam moves a few hundred big values instead of millions of
small ones. A source builds rows as lists::

    [sortkey, entry, metadata, record, source, companions]

- ``sortkey``: ``[file_index, position]``, where the record sits in the input (file order of the
  sorted glob matches, then byte offset or element index). Bodies list users in sortkey order,
  which makes batches deterministic and keeps zitadel-tools' order for a single body.
- ``entry``: the ``humanUsers`` entry, ``{"userId": ..., "user": {...}}``, already validated.
- ``metadata``: ``[{"key": str, "value": base64 str}, ...]`` for the org's ``userMetadata``.
- ``record``: the original input record, kept so a later stage can still dead-letter it.
- ``source``: e.g. ``auth0-profile``.
- ``companions``: ``[[sortkey, source, record], ...]``, other input records that belong to this
  user (Auth0: its password record) and are dead-lettered with it if a later stage rejects it.
- optional: ``password`` (the hash's verifier), then ``grants`` (:data:`Grants`).

``encode_rows`` turns them into a blob of :data:`EncodedRow` tuples whose JSON is rendered once,
here: later stages only join bytes and never parse a user again (re-parsing every row in each
stage cost more than the whole join).

Dead letters are ``(sortkey, line)`` pairs where ``line`` is one NDJSON line (bytes, no newline)
``{"reason", "detail", "source", "record"}``.
"""

from __future__ import annotations

import gc
import pickle
import zlib
from collections.abc import Iterable
from typing import Any, Literal

import orjson

__all__ = [
    "Grants",
    "NAMESPACE",
    "NUM_PARTITIONS",
    "SortKey",
    "DeadLetter",
    "PartitionRows",
    "partition_of",
    "dead_letter",
    "encode_rows",
    "decode_rows",
    "decode_claims",
    "claims_size",
    "pack_rows",
    "encode_row",
    "encoded_row",
    "EncodedRow",
    "user_name_key",
    "intern_tallies",
    "no_gc",
]

# A user's grants: ((project id, (sorted, unique keys)), ...) sorted by project id. This is what
# rows carry (the ``grants`` of :func:`encoded_row`) and what a later comparison can fingerprint
# (transforms/mapping/roles.py decides them).
Grants = tuple[tuple[str, tuple[str, ...]], ...]

# Beam metrics namespace for every counter the run summary reads.
NAMESPACE = "zitadel_beam"

# Hash partitions of the join key: enough to keep both cores (and Dataflow workers) busy with
# large elements, few enough that per-element overhead stays negligible.
NUM_PARTITIONS = 32

SortKey = tuple[int, int]

# The element types at the boundaries of the public PTransforms (declared with Beam's type hints,
# so a step wired to the wrong output fails when the pipeline is built, not inside a worker).
# A dead letter: (sort key, the NDJSON line). Plain tuples on the wire: they pickle smaller and
# faster than NamedTuples, and each is unpacked into named locals where it is read.
DeadLetter = tuple[SortKey, bytes]
# One partition's rows: (partition, a rows blob from encode_rows/pack_rows or a spill file's path).
PartitionRows = tuple[int, bytes | str]


def partition_of(key: str, partitions: int = NUM_PARTITIONS) -> int:
    """A stable partition for ``key`` (Python's ``hash`` differs per process, crc32 does not)."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % partitions


def dead_letter(
    sortkey: SortKey, reason: str, detail: str, source: str, record: Any
) -> tuple[SortKey, bytes]:
    """One dead-letter element: the reason first, then the record exactly as it was read.

    ``record`` may be an ``orjson.Fragment`` holding already-encoded JSON.
    """
    line = orjson.dumps({"reason": reason, "detail": detail, "source": source, "record": record})
    first, second = sortkey  # a list after a pickling round trip: the key must be a tuple
    return (first, second), line


# One user, encoded (built by ``encoded_row``; read by unpacking it into locals of these names):
#   (file_index, position, user_id, name_key, entry_json, metadata_json, password, source,
#    record_json, companions_json, grants, tallies, passwordless)
# - ``name_key``: the user name as ZITADEL compares it (``user_name_key``);
# - ``metadata_json``: the org-level ``userMetadata`` items of this user without brackets, b"" for none;
# - ``password``: the ZITADEL verifier of the user's hash, "password" for a plaintext password, ""
#   for none (truthy = has a password; the bodies stage counts written hashes by verifier from it);
# - ``record_json``: the input record; ``companions_json``: ``[[sortkey, source, record], ...]``, b"" for none;
# - ``grants``: ``((project id, (sorted unique role keys)), ...)`` sorted by project
#   (transforms/mapping/roles.py ``Grants``), () for none; the bodies render them as ``userGrants``
#   (transforms/output/grants.py). Sources give them as the row's 8th item.
# - ``tallies``: the counter names this user adds one to once it is written (cannot sign in yet,
#   notes, fields not carried, hash forms, ...), () for none; ``passwordless``: its line of the
#   passwordless list (``{"id", "email", "reason"}``), b"" for none. They travel with the row so
#   that only users written are counted and listed, after de-duplication
#   (transforms/output/written.py counts them).
# A plain tuple, not a NamedTuple: every row is pickled and unpickled at least twice per run, and a
# NamedTuple pickles through Python-level calls per row (measured here on 11-field rows: 2.6x the
# pickling and 1.5x the unpickling time of a plain tuple).
EncodedRow = tuple[int, int, str, str, bytes, bytes, str, str, bytes, bytes, "Grants", tuple[str, ...], bytes]


def encoded_row(
    *,
    file_index: int,
    position: int,
    user_id: str,
    name_key: str,
    entry_json: bytes,
    metadata_json: bytes,
    password: str,
    source: str,
    record_json: bytes,
    companions_json: bytes,
    grants: Grants,
    tallies: tuple[str, ...] = (),
    passwordless: bytes = b"",
) -> EncodedRow:
    """The one place a row is built, by field name (see ``EncodedRow``)."""
    return (
        file_index,
        position,
        user_id,
        name_key,
        entry_json,
        metadata_json,
        password,
        source,
        record_json,
        companions_json,
        grants,
        tallies,
        passwordless,
    )


# The optional tail of a source row: companions, password, grants.
_SOURCE_ROW_DEFAULTS: tuple[Any, ...] = ((), None, ())


_INTERNED: dict[tuple[str, ...], tuple[str, ...]] = {}


def intern_tallies(names: Iterable[str]) -> tuple[str, ...]:
    """A row's ``tallies`` as a tuple shared by every row with the same names: a rows blob pickles
    it once (pickle refers back to an object it has already written), and counting them at the
    bodies keys on a few distinct tuples."""
    key = tuple(names)
    if not key:
        return ()
    shared = _INTERNED.get(key)
    if shared is None:
        shared = key
        if len(_INTERNED) < 100_000:
            _INTERNED[key] = key
    return shared


def user_name_key(user_name: Any) -> str:
    """ZITADEL compares login names case-insensitively: "Ann" and "ann" collide on import."""
    return str(user_name or "").casefold()


def encode_row(row: list[Any]) -> EncodedRow:
    """A source row (``[sortkey, entry, metadata, record, source, companions?, password?, grants?]``,
    see the module docstring) → its ``EncodedRow``."""
    sortkey, entry, metadata, record, source, companions, password, grants = (
        *row,
        *_SOURCE_ROW_DEFAULTS[len(row) - 5 :],
    )
    file_index, position = sortkey
    user = entry["user"]
    if password is None:
        password = "hash" if "hashedPassword" in user else ""
    if not password and "password" in user:
        password = "password"
    user_id = entry.get("userId") or ""
    meta = orjson.dumps([{"id": user_id, **item} for item in metadata])[1:-1] if metadata else b""
    return encoded_row(
        file_index=file_index,
        position=position,
        user_id=user_id,
        name_key=user_name_key(user.get("userName")),
        entry_json=orjson.dumps(entry),
        metadata_json=meta,
        password=password,
        source=source,
        record_json=orjson.dumps(record),
        companions_json=orjson.dumps(companions) if companions else b"",
        grants=grants or (),
    )


def encode_rows(rows: list[list[Any]]) -> bytes:
    """A blob of source rows, encoded (see ``pack_rows``)."""
    return pack_rows([encode_row(row) for row in rows])


def pack_rows(rows: list[EncodedRow]) -> bytes:
    """A blob of encoded rows: an 8-byte length, the pickled ``(user_id, name_key, sortkey)``
    claims, then the pickled rows. The claims are read on their own by the de-duplication step,
    which would otherwise unpickle every user's JSON just to look at two strings.

    Pickle is used for speed (bytes are copied, not re-encoded); it only ever carries data that
    our own previous stage produced, never input files.
    """
    claims = pickle.dumps(
        [
            (user_id, name_key, file_index, position)
            for (file_index, position, user_id, name_key, _, _, _, _, _, _, _, _, _) in rows
        ],
        protocol=pickle.HIGHEST_PROTOCOL,
    )
    return len(claims).to_bytes(8, "little") + claims + pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)


def decode_rows(blob: bytes) -> list[EncodedRow]:
    size = int.from_bytes(blob[:8], "little")
    return pickle.loads(memoryview(blob)[8 + size :])


def decode_claims(blob: bytes) -> list[tuple[str, str, int, int]]:
    """``(user_id, name_key, file_index, position)`` of each row in a blob (or its first part)."""
    size = int.from_bytes(blob[:8], "little")
    return pickle.loads(memoryview(blob)[8 : 8 + size])


def claims_size(head: bytes) -> int:
    """How many bytes of a blob ``decode_claims`` needs, from its first 8 bytes."""
    return 8 + int.from_bytes(head[:8], "little")


class no_gc:
    """Pause Python's cyclic garbage collector inside a heavy DoFn call.

    Decoding a blob creates hundreds of thousands of small dicts; with the collector on, every
    allocation burst rescans the whole heap (measured: orjson.loads of row blobs took 5x longer).
    Nothing in these steps creates reference cycles, so reference counting frees everything.
    """

    def __enter__(self) -> no_gc:
        self._was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        if self._was_enabled:
            gc.enable()
        return False
