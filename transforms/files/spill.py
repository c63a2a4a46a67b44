"""Intermediate data as files in the run's temporary folder, with only their paths in Beam.

The heavy steps (parse, join, chunk) hand each other hundreds of megabytes. Passing those
bytes as Beam elements funnels every byte through the runner (on the local FnApiRunner: held
in the runner's memory for each GroupByKey, and copied to and from worker processes), which
cost more than the work itself. Writing a spill file per (unit, partition) and grouping the
paths keeps the runner's share tiny, lets worker processes do the I/O in parallel, and bounds
memory to one partition at a time. File names are deterministic, so a retried bundle simply
overwrites its own files. Local spills get mode 0600: they hold password hashes.

Example::

    path = write_spill(tmp_dir, "parse-0-000001-000000000000-p007.pkl", blob)
    blob = read_spill(path)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from transforms.common.records import EncodedRow, pack_rows
from transforms.files.storage import is_remote, open_private

__all__ = ["write_spill", "spill_parts", "read_spill", "read_spill_head", "load_blob"]


def write_spill(tmp_dir: str, name: str, data: bytes) -> str:
    from apache_beam.io.filesystems import FileSystems

    path = FileSystems.join(tmp_dir, name)
    with open_private(path) as handle:
        handle.write(data)
    return path


def spill_parts(
    parts: dict[int, list[EncodedRow]], tmp_dir: str | None, name: Callable[[int], str]
) -> Iterator[tuple[int, bytes | str]]:
    """A reader's rows so far, one blob per partition, or (with ``tmp_dir``) the path of its spill
    file named ``name(partition)``; the dict is emptied once every partition is out. A source's
    names are deterministic, so a retried bundle overwrites its own files."""
    for part, rows in parts.items():
        blob = pack_rows(rows)
        yield part, blob if tmp_dir is None else write_spill(tmp_dir, name(part), blob)
    parts.clear()


def read_spill(path: str) -> bytes:
    if not is_remote(path):
        with open(path, "rb") as handle:
            return handle.read()
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path) as handle:
        return handle.read()


def read_spill_head(path: str, size: int) -> bytes:
    """The first ``size`` bytes (e.g. a header that says how much more to read)."""
    if not is_remote(path):
        with open(path, "rb") as handle:
            return handle.read(size)
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path) as handle:
        return handle.read(size)


def load_blob(value: bytes | str) -> bytes:
    """A stage input that is either the blob itself or the path of its spill file."""
    return read_spill(value) if isinstance(value, str) else value
