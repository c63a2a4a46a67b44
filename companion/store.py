"""The companion's store: the users whose legacy hash waits for their next sign-in.

Two local files (docs/companion.md#store), both mode 0600:

- the **store** (``--store PATH``), NDJSON written by ``migrate --legacy-hashes``, by ``migrate
  --old-system-store`` (lines of form ``old-system``: ids and login names only) or by hand, one
  user a line::

      {"id": "<ZITADEL user id>", "form": "firebase-scrypt", "hash": "<as exported>",
       "params": {"salt": "...", "signer_key": "...", "salt_separator": "...", "rounds": 8,
                  "mem_cost": 14},
       "login_names": ["user1@test.com"]}

  The service only reads it.
- the **removals** (``PATH.removed``), NDJSON the service appends to, one line a user it no longer
  needs to verify: ``{"id": "...", "at": "2026-11-27T07:00:00Z", "outcome": "migrated"}``. Every line
  is flushed and fsync'd before the answer that follows it, so a removal survives a restart; a
  user listed there is not loaded again.
- the **unanswered checks** (``PATH.unanswered``, mode 0600), NDJSON the service appends to when
  the old system did not answer a check: ``{"id": "...", "at": "...", "why": "timed out"}``
  (``why`` is a fixed phrase); ``status`` counts them per day.

Example::

    store = Store.open("legacy.ndjson")
    record = store.find(user_id="1234") or store.find(login_name="user1@test.com")
    store.remove(record["id"])
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import os
import stat
import threading
from collections.abc import Mapping

import orjson

__all__ = ["OLD_SYSTEM_FORM", "Record", "Store", "StoreError", "StoreStatus", "Imported", "import_files"]

Record = dict[str, object]  # one line of the store (or of the removals), as JSON gives it

_MAX_LINE = 64 * 1024
OLD_SYSTEM_FORM = "old-system"  # a user checked against the old system, not a kept hash


class StoreError(ValueError):
    """The store cannot be used; one line naming the file and line, never a value."""


def _removed_path(path: str) -> str:
    return path + ".removed"


def _unanswered_path(path: str) -> str:
    return path + ".unanswered"


def _append(path: str, line: Record, durable: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, orjson.dumps(line) + b"\n")
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_private(path: str) -> None:
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        raise StoreError(f"{path}: mode {mode:04o} lets others read it; it holds hashes: chmod 600 {path}")


def _read_lines(path: str) -> list[tuple[int, Record]]:
    records: list[tuple[int, Record]] = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            if len(line) > _MAX_LINE:
                raise StoreError(f"{path}:{number}: line longer than {_MAX_LINE} bytes")
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise StoreError(f"{path}:{number}: not a JSON object") from None
            if not isinstance(value, dict) or not isinstance(value.get("id"), str) or not value["id"]:
                raise StoreError(f'{path}:{number}: not a JSON object with an "id"')
            records.append((number, value))
    return records


class Store:
    """The records still waiting, indexed by user id and by login name (lower-cased)."""

    def __init__(
        self,
        path: str,
        records: Mapping[str, Record],
        removed: list[Record],
        unanswered: list[Record] | None = None,
    ):
        self.path = path
        self._records = dict(records)
        self._removed = removed
        self._unanswered = unanswered or []
        self._by_name: dict[str, str | None] = {}
        for user_id, record in self._records.items():
            names = record.get("login_names")
            for name in names if isinstance(names, list) else []:
                if isinstance(name, str) and name:
                    key = name.casefold()
                    # A name two users share is ambiguous: neither is found by it.
                    self._by_name[key] = None if key in self._by_name else user_id
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str) -> Store:
        """Load the store and its removals; StoreError when it is missing, unreadable or not 0600."""
        if not os.path.isfile(path):
            raise StoreError(f"{path}: no such file (the store migrate --legacy-hashes writes)")
        _check_private(path)
        records: dict[str, Record] = {}
        for number, record in _read_lines(path):
            user_id = str(record["id"])  # _read_lines checked it is a non-empty string
            if user_id in records:
                raise StoreError(f"{path}:{number}: user id listed twice")
            records[user_id] = record
        removed: list[Record] = []
        removed_path = _removed_path(path)
        if os.path.exists(removed_path):
            _check_private(removed_path)
            removed = [line for _, line in _read_lines(removed_path)]
        unanswered: list[Record] = []
        if os.path.exists(_unanswered_path(path)):
            _check_private(_unanswered_path(path))
            unanswered = [line for _, line in _read_lines(_unanswered_path(path))]
        total = len(records)
        for line in removed:
            records.pop(str(line["id"]), None)
        store = cls(path, records, removed, unanswered)
        store.total = total
        return store

    total = 0  # users the store file lists, waiting or not

    def count(self, form: str) -> int:
        """Waiting users of one form (``old-system``: those checked against the old system)."""
        with self._lock:
            return sum(1 for record in self._records.values() if record.get("form") == form)

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def find(self, user_id: str | None = None, login_name: str | None = None) -> Record | None:
        """The waiting record of the user named by id or by login name, or None."""
        with self._lock:
            if user_id:
                return self._records.get(user_id)
            if login_name:
                found = self._by_name.get(login_name.casefold())
                return self._records.get(found) if found else None
            return None

    def remove(self, user_id: str, outcome: str = "migrated") -> None:
        """Record that ``user_id`` needs no more checks; durable before it returns."""
        line: Record = {"id": user_id, "at": _now(), "outcome": outcome}
        with self._lock:
            if user_id not in self._records:
                return
            _append(_removed_path(self.path), line, durable=True)
            del self._records[user_id]
            self._removed.append(line)

    def note_unanswered(self, user_id: str, why: str) -> None:
        """Record that the old system did not answer a check of ``user_id`` (``why``: a fixed phrase)."""
        line: Record = {"id": user_id, "at": _now(), "why": why}
        with self._lock:
            _append(_unanswered_path(self.path), line, durable=False)
            self._unanswered.append(line)

    def status(self) -> StoreStatus:
        """Users waiting, users removed, and per day (UTC): removals, users still waiting at the
        day's end, and checks the old system did not answer."""
        with self._lock:
            per_day = collections.Counter(str(line.get("at", ""))[:10] for line in self._removed)
            unanswered = collections.Counter(str(line.get("at", ""))[:10] for line in self._unanswered)
            days = sorted(set(per_day) | set(unanswered))
            waiting_after: dict[str, int] = {}
            left = self.total or len(self._records) + len(self._removed)
            for day in days:
                left -= per_day.get(day, 0)
                waiting_after[day] = left
            return StoreStatus(
                len(self._records),
                len(self._removed),
                {day: per_day.get(day, 0) for day in days},
                waiting_after,
                {day: unanswered.get(day, 0) for day in days},
                sum(1 for record in self._records.values() if record.get("form") == OLD_SYSTEM_FORM),
            )


@dataclasses.dataclass(frozen=True)
class Imported:
    """What ``import_files`` did with one file: users added, users the store already listed."""

    path: str
    added: int
    already: int


def import_files(path: str, files: list[str]) -> list[Imported]:
    """Append the users of ``files`` (store files ``migrate --legacy-hashes`` or
    ``--old-system-store`` wrote, mode 0600) to the store at ``path`` (created 0600), each user
    once: a user the store lists, waiting or moved (``PATH.removed``), is not added again, so a
    migrated user never waits twice. Every file is read and checked before anything is written;
    the appended lines are fsync'd. A running ``serve`` sees them when it starts again."""
    known: set[str] = set()
    if os.path.exists(path):
        _check_private(path)
        known = {str(record["id"]) for _, record in _read_lines(path)}
        if os.path.exists(_removed_path(path)):
            known |= {str(record["id"]) for _, record in _read_lines(_removed_path(path))}
    done: list[Imported] = []
    lines: list[bytes] = []
    for name in files:
        if os.path.abspath(name) == os.path.abspath(path):
            raise StoreError(f"{name}: is the store itself")
        if not os.path.isfile(name):
            raise StoreError(f"{name}: no such file")
        _check_private(name)
        records = _read_lines(name)
        added = 0
        for _, record in records:
            user_id = str(record["id"])
            if user_id in known:
                continue
            known.add(user_id)
            lines.append(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
            added += 1
        done.append(Imported(name, added, len(records) - added))
    if lines:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, b"".join(lines))
            os.fsync(fd)
        finally:
            os.close(fd)
    return done


@dataclasses.dataclass(frozen=True)
class StoreStatus:
    waiting: int
    migrated: int
    per_day: dict[str, int]  # "2026-11-27" -> users removed that day
    waiting_after: dict[str, int] = dataclasses.field(default_factory=dict)  # day -> still waiting at its end
    unanswered: dict[str, int] = dataclasses.field(
        default_factory=dict
    )  # day -> checks the old system left unanswered
    old_system: int = 0  # of the users waiting, those checked against the old system (form old-system)
