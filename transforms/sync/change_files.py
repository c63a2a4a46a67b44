"""Change files of a sync run: final names, the manifest's ``sync`` section, the summary lines.

The compare step (``transforms/sync/compare.py``) writes one change shard per state partition into the
run's temporary folder. When the pipeline has finished, they get their final names beside the
bodies, ``<stem>.changes-00001-of-00003.ndjson`` (mode 0600: they hold password hashes), and the
manifest lists each with its users, calls and sha256, so push can refuse a file edited after
review (docs/sync.md#change-files).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import NotRequired, TypedDict

import orjson

from transforms.common import counters
from transforms.files.storage import is_remote, relative_path
from transforms.sync.change_records import OnRemoved
from transforms.sync.state import StatePointer

__all__ = [
    "ChangeFileEntry",
    "SyncSection",
    "finalize_changes",
    "existing_change_files",
    "sync_manifest",
    "sync_summary_lines",
    "change_file_name",
]


class ChangeFileEntry(TypedDict):
    """One change file in the manifest's ``sync.changes`` list."""

    path: str  # relative to the manifest
    users: int
    calls: int
    kinds: dict[str, int]  # change kind -> users
    sha256: str


class SyncSection(TypedDict):
    """The manifest's ``sync`` section (:func:`sync_manifest`)."""

    state: str
    base_generation: int
    partitions: int | None
    users_in_state: int
    on_removed: str
    max_removals: int
    changes: list[ChangeFileEntry]
    counts: dict[str, int]
    # The roles catalogue's digest, once a run with --project-id wrote it (pipeline/migrate.py).
    authorizations_sha256: NotRequired[str]


def change_file_name(stem: str, index: int, total: int) -> str:
    return f"{stem}.changes-{index:05d}-of-{total:05d}.ndjson"


def existing_change_files(stem: str) -> list[str]:
    """Files at the names a run's change files take (any ``<stem>.changes-N-of-M.ndjson``)."""
    from apache_beam.io.filesystems import FileSystems

    pattern = f"{stem}.changes-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].ndjson"
    if is_remote(stem):
        return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    import glob

    return sorted(glob.glob(glob.escape(stem) + pattern[len(stem) :]))


def finalize_changes(
    tmp_dir: str, stem: str, manifest_dir: str, check_replaceable: Callable[[list[str]], None]
) -> list[ChangeFileEntry]:
    """Rename the change shards to their final names; return their manifest entries.

    An earlier run's change files are replaced or deleted only when ``check_replaceable`` (the
    run's guard: the earlier manifest names them with a sha256 that still matches) allows it;
    left in place they would be applied twice.
    """
    from apache_beam.io.filesystems import FileSystems

    from transforms.sync.compare import CHANGE_PREFIX

    found = sorted(
        m.path for m in FileSystems.match([FileSystems.join(tmp_dir, CHANGE_PREFIX + "*")])[0].metadata_list
    )
    total = len(found)
    finals = [change_file_name(stem, i + 1, total) for i in range(total)]
    existing = existing_change_files(stem)
    check_replaceable(existing)
    stale = [path for path in existing if path not in finals]
    if stale:
        FileSystems.delete(stale)
    entries: list[ChangeFileEntry] = []
    for path, final in zip(found, finals, strict=True):
        with FileSystems.open(path, compression_type="uncompressed") as handle:
            data = handle.read()
        users = calls = 0
        kinds: dict[str, int] = {}
        for line in data.splitlines():
            if line:
                change = orjson.loads(line)
                users += 1
                calls += len(change.get("calls") or [])
                kinds[change["kind"]] = kinds.get(change["kind"], 0) + 1
        entries.append(
            {
                "path": relative_path(manifest_dir, final),
                "users": users,
                "calls": calls,
                "kinds": dict(sorted(kinds.items())),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    if found:
        FileSystems.rename(found, finals)
    return entries


def sync_manifest(
    counts: Mapping[str, int],
    store_root: str,
    pointer: StatePointer | None,
    on_removed: OnRemoved,
    max_removals: int,
    changes: list[ChangeFileEntry],
) -> SyncSection:
    """The manifest's ``sync`` section: where the state is, which generation this run compared
    with (push commits on top of exactly that one), the change files and the counts."""
    return {
        "state": store_root,
        "base_generation": (pointer or {}).get("generation", 0),
        "partitions": int((pointer or {}).get("partitions", 0)) or None,
        "users_in_state": int((pointer or {}).get("users", 0)),
        "on_removed": on_removed,
        "max_removals": max_removals,
        "changes": changes,
        "counts": {
            k[len(counters.SYNC) :]: v for k, v in sorted(counts.items()) if k.startswith(counters.SYNC)
        },
    }


def sync_summary_lines(counts: Mapping[str, int]) -> list[tuple[str, int | str]]:
    def get(name: str) -> int:
        return counts.get(name, 0)

    lines: list[tuple[str, int | str]] = [
        ("", ""),
        ("sync: new (to bodies)", get(counters.SYNC_NEW)),
        ("sync: unchanged (nothing sent)", get(counters.SYNC_UNCHANGED)),
        ("sync: changed", get(counters.SYNC_CHANGED)),
    ]
    for name, value in sorted(counts.items()):
        if name.startswith(counters.SYNC_CHANGED_FIELDS):
            lines.append((f"  {name.rsplit('.', 1)[1]}", value))
    for name, value in sorted(counts.items()):
        if name.startswith(counters.SYNC_NOT_APPLIED):
            lines.append((f"  not applicable to an existing user: {name.rsplit('.', 1)[1]}", value))
    lines += [
        ("sync: to deactivate (blocked at the source)", get(counters.SYNC_DEACTIVATE)),
        ("sync: to lock (blocked at the source, initial users)", get(counters.SYNC_LOCK)),
        ("sync: to reactivate or unlock", get(counters.SYNC_REACTIVATE)),
    ]
    for policy, label in _REMOVED_LABELS.items():
        if get(counters.SYNC_REMOVED + policy):
            lines.append(
                (label if label.startswith("  ") else f"sync: {label}", get(counters.SYNC_REMOVED + policy))
            )
    lines += [
        ("sync: dead-lettered today, left alone", get(counters.SYNC_LEFT_ALONE_DEAD_LETTERED)),
        ("sync: calls planned (the change files)", get(counters.SYNC_CALLS)),
    ]
    for name, value in sorted(counts.items()):
        if name.startswith(counters.SYNC_PLANNED):
            lines.append((f"  {name.removeprefix(counters.SYNC_PLANNED)}", value))
    return lines


# What the removed users' lines say, in the order printed (compare.py counts them).
_REMOVED_LABELS = {
    "report": "gone from the export: reported only",
    "deactivate": "gone from the export: to deactivate",
    "lock": "gone from the export: to lock (initial users)",
    "delete": "gone from the export: to delete",
    "already-inactive": "gone from the export: already deactivated",
    "already-locked": "gone from the export: already locked",
    "held": "  of them held back (an unreadable user record)",
}
