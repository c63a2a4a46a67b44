"""The sync state: what the target holds, per user, as generations of shards and a pointer.

Layout under ``--state`` (a local folder or a ``gs://`` prefix; docs/sync.md#state)::

    CURRENT.json                  the pointer: generation, partition count, shard of each partition
    gen-000007/part-00003.ndjson.gz   state records (transforms/sync/state_records.py) sorted by id

A commit writes the shards of the partitions that changed into a new generation folder, then
the pointer, last: a crash at any moment leaves the old pointer (old state, whole) or the new
one (new state, whole). Partitions that did not change keep pointing at older shards, so a
night with 1% changes writes about 1% of the state. Files no pointer refers to any more (the
current one or the one before) are removed after the commit.

Beside them, ``UNKNOWN_OUTCOMES.json`` names the users whose last ``UpdateHumanUser`` got no answer
(``{"version": 1, "users": {user id: Unix seconds it was sent}}``): the next run reads them back
before it sends them again (docs/sync.md#unknown-outcomes). It is written before the pointer and
only ever names too many users, never too few.

A user's partition is ``records.partition_of(user_id, partitions)``, the same hash the pipeline
uses, so the comparison is a join by partition and no worker ever holds more than one shard.

Example::

    store = StateStore("gs://bucket/sync/acme")
    pointer = store.read_pointer()          # None before the first commit
    records = store.read_shard(pointer, 3)  # {user id: state record}
    store.commit(pointer, {3: records})
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import posixpath
import time
from collections.abc import Iterable, Mapping
from typing import TypedDict, cast

import orjson

from transforms.common.errors import ConfigError
from transforms.files.storage import is_gcs
from transforms.sync.change_records import StateRecord

__all__ = [
    "StateStore",
    "POINTER_NAME",
    "UNKNOWN_NAME",
    "STATE_VERSION",
    "STATE_PARTITIONS",
    "encode_shard",
    "decode_shard",
]

_LOGGER = logging.getLogger(__name__)

POINTER_NAME = "CURRENT.json"
UNKNOWN_NAME = "UNKNOWN_OUTCOMES.json"
STATE_VERSION = 1


class StatePointer(TypedDict, total=False):
    """``CURRENT.json``: which shard holds each partition of the committed generation."""

    version: int  # STATE_VERSION
    generation: int  # 0 before the first commit
    partitions: int
    shards: dict[str, str]  # partition (as text) -> shard path relative to the state root
    users: int
    committed_at: str
    previous_shards: list[str]  # the generation before's, kept until the next commit
    authorizations_sha256: str  # the roles body the target holds (docs/roles.md)


# Partitions of a new state. A state keeps the count it was made with (in its pointer).
STATE_PARTITIONS = 32


def _join(folder: str, name: str) -> str:
    return posixpath.join(folder, name) if is_gcs(folder) else os.path.join(folder, name)


def encode_shard(records: Iterable[StateRecord]) -> bytes:
    """Records as gzip'ed NDJSON, sorted by id (deterministic bytes for the same records)."""
    lines = sorted(orjson.dumps(r) for r in records)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=3, mtime=0) as handle:
        for line in lines:
            handle.write(line)
            handle.write(b"\n")
    return buffer.getvalue()


def read_raw(path: str) -> bytes:
    """A state file's bytes as stored (no decompression by file name)."""
    if is_gcs(path):
        from apache_beam.io.filesystems import FileSystems

        with FileSystems.open(path, compression_type="uncompressed") as handle:
            return handle.read()
    with open(path, "rb") as handle:
        return handle.read()


def decode_shard(data: bytes) -> dict[str, StateRecord]:
    records: dict[str, StateRecord] = {}
    for line in gzip.decompress(data).splitlines():
        if line:
            record = orjson.loads(line)
            records[record["id"]] = record
    return records


class StateStore:
    """Reads and commits the state under one ``--state`` folder or prefix."""

    def __init__(self, root: str) -> None:
        root = root.rstrip("/") if root not in ("/", "") else root
        if not root:
            raise ConfigError("--state must name a folder (local or gs://)")
        self.root = root

    # --- files ------------------------------------------------------------------------------
    def _read(self, path: str) -> bytes | None:
        """``read_raw``, or None when the file is not there."""
        if is_gcs(path):
            from apache_beam.io.filesystems import FileSystems

            if not FileSystems.exists(path):
                return None
        try:
            return read_raw(path)
        except FileNotFoundError:
            return None

    def _write(self, path: str, data: bytes) -> None:
        """A whole file, or none of it: temp + fsync + rename locally; one object upload on gs://."""
        if is_gcs(path):
            from apache_beam.io.filesystems import FileSystems

            # Uncompressed: the shard is gzip already (AUTO would compress a .gz name again).
            with FileSystems.create(
                path, mime_type="application/octet-stream", compression_type="uncompressed"
            ) as handle:
                handle.write(data)
            return
        from transforms.files.storage import write_atomic

        folder = os.path.dirname(path)
        if os.path.islink(folder) and os.path.abspath(folder) != os.path.abspath(self.root):
            # A generation folder is the tool's own: one that is a link was not made by it.
            raise ConfigError(f"--state: {folder!r} is a symbolic link: the tool never writes through a link")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        write_atomic(path, data)  # a link at the file's name is replaced, never written through

    def path(self, relative: str) -> str:
        return _join(self.root, relative)

    # --- pointer ----------------------------------------------------------------------------
    def read_pointer(self) -> StatePointer | None:
        """The committed state's pointer, or None when nothing was committed yet."""
        raw = self._read(self.path(POINTER_NAME))
        if raw is None:
            return None
        try:
            pointer = orjson.loads(raw)
            if not isinstance(pointer, dict) or pointer.get("version") != STATE_VERSION:
                raise ValueError("unknown version")
            int(pointer["partitions"])
            dict(pointer["shards"])
        except (ValueError, KeyError, TypeError) as err:
            raise ConfigError(
                f"--state {self.root!r}: {POINTER_NAME} is not a zitadel-beam state pointer ({err})"
            ) from None
        return cast(StatePointer, pointer)  # its version, partitions and shards checked above

    @staticmethod
    def partitions(pointer: StatePointer | None) -> int:
        return int(pointer["partitions"]) if pointer else STATE_PARTITIONS

    def shard_paths(self, pointer: StatePointer | None) -> dict[int, str]:
        """``{partition: full path}`` of the shards the pointer names (empty partitions have none)."""
        if not pointer:
            return {}
        return {int(p): self.path(rel) for p, rel in pointer["shards"].items()}

    def read_shard(self, pointer: StatePointer | None, partition: int) -> dict[str, StateRecord]:
        path = self.shard_paths(pointer).get(partition)
        if path is None:
            return {}
        data = self._read(path)
        if data is None:
            raise ConfigError(f"--state {self.root!r}: shard {path!r} named by {POINTER_NAME} is missing")
        return decode_shard(data)

    # --- unknown outcomes --------------------------------------------------------------------
    def read_unknown(self) -> dict[str, float]:
        """User id → when its ``UpdateHumanUser`` with an unknown outcome was sent (empty: none)."""
        raw = self._read(self.path(UNKNOWN_NAME))
        if raw is None:
            return {}
        try:
            users = orjson.loads(raw)["users"]
            return {str(uid): float(at) for uid, at in users.items()}
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ConfigError(f"--state {self.root!r}: {UNKNOWN_NAME} cannot be read ({err})") from None

    def write_unknown(self, users: Mapping[str, float]) -> None:
        """Replace the list of users with an unknown outcome (removed when there is none)."""
        path = self.path(UNKNOWN_NAME)
        if users:
            data = orjson.dumps(
                {"version": 1, "users": dict(sorted(users.items()))}, option=orjson.OPT_INDENT_2
            )
            self._write(path, data + b"\n")
        elif self._read(path) is not None:
            from apache_beam.io.filesystems import FileSystems

            FileSystems.delete([path])

    # --- commit -----------------------------------------------------------------------------
    def commit(
        self,
        base: StatePointer | None,
        shards: Mapping[int, Mapping[str, StateRecord]],
        users_delta: int = 0,
        extra: StatePointer | None = None,
    ) -> StatePointer:
        """Write ``shards`` (partition → all its records) as a new generation, then the pointer.

        ``extra``: pointer fields to set (e.g. ``authorizations_sha256``, the roles body the target
        holds); the base's are kept otherwise. Refuses when the committed pointer is no longer
        ``base`` (another run committed since).
        """
        current = self.read_pointer()
        if (current or {}).get("generation") != (base or {}).get("generation"):
            raise ConfigError(
                f"--state {self.root!r}: the state moved on (generation "
                f"{(current or {}).get('generation')}, this run started from "
                f"{(base or {}).get('generation')}): run migrate again"
            )
        carried: StatePointer = {}
        if base and "authorizations_sha256" in base:
            carried["authorizations_sha256"] = base["authorizations_sha256"]
        extras = carried.copy()
        extras.update(extra or {})
        if not shards and extras == carried:
            return base.copy() if base else self._empty_pointer()
        generation = int((base or {}).get("generation", 0)) + 1
        folder = f"gen-{generation:06d}"
        relative = dict((base or {}).get("shards") or {})
        for partition, records in sorted(shards.items()):
            name = f"{folder}/part-{partition:05d}.ndjson.gz"
            if records:
                self._write(self.path(name), encode_shard(records.values()))
                relative[str(partition)] = name
            else:
                relative.pop(str(partition), None)
        pointer: StatePointer = {
            "version": STATE_VERSION,
            "generation": generation,
            "partitions": self.partitions(base),
            "shards": dict(sorted(relative.items(), key=lambda kv: int(kv[0]))),
            "users": int((base or {}).get("users", 0)) + users_delta,
            "committed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "previous_shards": sorted(set((base or {}).get("shards", {}).values())),
        }
        pointer.update(extras)
        self._write(self.path(POINTER_NAME), orjson.dumps(pointer, option=orjson.OPT_INDENT_2) + b"\n")
        self._collect(pointer)
        return pointer

    def _empty_pointer(self) -> StatePointer:
        return {"version": STATE_VERSION, "generation": 0, "partitions": STATE_PARTITIONS, "shards": {}}

    def _collect(self, pointer: StatePointer) -> None:
        """Remove shards neither this pointer nor the one before refers to (best effort)."""
        keep = set(pointer["shards"].values()) | set(pointer.get("previous_shards") or [])
        try:
            from apache_beam.io.filesystems import FileSystems

            found = FileSystems.match([self.path("gen-*/part-*.ndjson.gz")])[0].metadata_list
        except Exception as err:  # cleanup only: the commit already happened
            _LOGGER.warning("state cleanup skipped: %s", err)
            return
        prefix = self.root.rstrip("/") + "/"
        stale = [
            m.path
            for m in found
            if m.path[len(prefix) :].replace(os.sep, "/") not in keep
            # Never delete through a link: only the generation folders the tool made are its own.
            and (is_gcs(m.path) or not (os.path.islink(m.path) or os.path.islink(os.path.dirname(m.path))))
        ]
        if stale:
            try:
                FileSystems.delete(stale)
            except Exception as err:  # cleanup only
                _LOGGER.warning("state cleanup: %s", err)
        if not is_gcs(self.root):
            for name in os.listdir(self.root):
                folder = os.path.join(self.root, name)
                if (
                    name.startswith("gen-")
                    and not os.path.islink(folder)
                    and os.path.isdir(folder)
                    and not os.listdir(folder)
                ):
                    os.rmdir(folder)


def acquire_state_lock(root: str, what: str, break_lock: bool = False):
    """One run per state: ``transforms/files/locks.py``'s lock at ``<state>/LOCK`` (local or gs://),
    naming its holder; ``LockHeld`` (one line, exit 2) when another run holds it."""
    from transforms.files.locks import acquire_lock

    store = StateStore(root)
    if not is_gcs(store.root):
        os.makedirs(store.root, mode=0o700, exist_ok=True)
    return acquire_lock(store.path("LOCK"), what=f"{what} --state={store.root}", break_lock=break_lock)
