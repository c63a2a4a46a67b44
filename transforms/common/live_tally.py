"""A process-local side channel for ``migrate``'s live line: how far the readers are, and how many
users each later stage has handled so far.

Beam's counters reach the launcher only when a run on the in-process runner has ended; these
numbers are plain memory of this process, updated by the readers and the body writers as they go
and read by the launcher's line (``pipeline/migrate_progress.py``) while the pipeline runs. On a
runner whose workers are other processes the launcher never sees them, and shows no line. Updates
come per 256 KiB read, per 4,096 records, per partition or per body, never per user, so that
keeping them costs nothing measurable (README "Live progress").

Bytes are kept per *unit* of reading, ``(path, start)`` (a whole file, or a byte range of a large
one), as the furthest position reached: a unit that is read twice (the layout sniff reads a
file's first megabyte, then the reader reads it all) counts once. A gzip file counts in
compressed bytes, so that the total is the files' sizes.

Example::

    live_tally.reset()                                  # the launcher, as the pipeline starts
    live_tally.reached("users.json", 0, 262144)         # a reader: unit (path, 0) is 256 KiB in
    live_tally.add(live_tally.PARSED, 4096)             # 4,096 more users parsed
    read, stages = live_tally.snapshot()                # (262144, {"parsed": 4096})
"""

from __future__ import annotations

import threading

__all__ = [
    "PARSED",
    "CONVERTED",
    "CHECKED",
    "BATCHED",
    "WRITTEN",
    "STAGES",
    "reset",
    "reached",
    "add",
    "snapshot",
]

# Users seen by each stage, in the order the stages run (the line names the furthest one reached).
# user records parsed, mapped and validated (Auth0 profiles, Keycloak and Firebase users, table records)
PARSED = "parsed"
CONVERTED = "converted"  # users joined with their password records, hashes converted (Auth0)
CHECKED = "checked"  # users whose ids and names were checked for duplicates
BATCHED = "batched"  # users placed in bodies
WRITTEN = "written"  # users in bodies written
STAGES = (PARSED, CONVERTED, CHECKED, BATCHED, WRITTEN)

_lock = threading.Lock()
_reached: dict[tuple[str, int], int] = {}
_stages: dict[str, int] = {}


def reset() -> None:
    """Forget everything: a new run starts."""
    with _lock:
        _reached.clear()
        _stages.clear()


def reached(path: str, start: int, done: int) -> None:
    """The unit of ``path`` starting at byte ``start`` has had ``done`` bytes read (or more)."""
    key = (path, start)
    with _lock:
        if done > _reached.get(key, 0):
            _reached[key] = done


def add(stage: str, users: int) -> None:
    """``users`` more users went through ``stage``."""
    if users:
        with _lock:
            _stages[stage] = _stages.get(stage, 0) + users


def snapshot() -> tuple[int, dict[str, int]]:
    """``(bytes read, {stage: users})`` so far."""
    with _lock:
        return sum(_reached.values()), dict(_stages)
