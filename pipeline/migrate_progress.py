"""``migrate``'s live line on a terminal: bytes read of the whole input, users parsed, rate and ETA,
then each later stage as it runs (README "Live progress").

The readers and body writers keep their numbers in ``transforms/common/live_tally.py``, plain
memory of the process they run in; this line polls it every 0.5 s (the same ``LiveLine`` helper as
push's line). That works where the pipeline runs in this process: the FnApiRunner in memory or in
threads, the default. With worker processes (``--direct_running_mode=multi_processing``, Dataflow
or any other ``--runner``) the numbers are out of reach and no line is shown rather than a line
that stands still. Nothing is printed when stderr is not a terminal, or with ``--quiet``; after
Ctrl-C or SIGTERM the line stops (the interruption's one line follows on a row of its own).

The line is written to a copy of the terminal's stderr taken before the run, because
``beam_run.run_pipeline`` points fd 2 at a capture file while the pipeline runs.

Example::

    with live_line(["users.json", "passwords.json"], pipeline_args, quiet=False):
        result = run_pipeline(pipeline, tmp_dir)

    migrate: read 412.3/970.1 MB (42%)  users 421,888  11,902 users/s  ETA 0:47
    migrate: read 970.1/970.1 MB (100%)  users 1,000,000  writing 620,000  58,112 users/s  ETA 0:06
    migrate: read 970.1/970.1 MB (100%)  users 1,000,000  written 999,412  done in 1:31
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TextIO

from pipeline import signals
from transforms.common import live_tally
from transforms.common.progress import LiveLine

__all__ = ["MigrateProgress", "input_bytes", "in_process", "live_line"]

# What each stage is called while it runs, and when the run is over.
_RUNNING = {
    live_tally.CONVERTED: "converting",
    live_tally.CHECKED: "checking duplicates",
    live_tally.BATCHED: "batching",
    live_tally.WRITTEN: "writing",
}
_DONE = {
    live_tally.CONVERTED: "converted",
    live_tally.CHECKED: "checked",
    live_tally.BATCHED: "batched",
    live_tally.WRITTEN: "written",
}


def input_bytes(patterns: Sequence[str]) -> int | None:
    """The size of every file ``patterns`` match (local or gs://, globs expanded; a ``.gz`` in its
    compressed bytes, as the readers count it); None when they cannot be listed."""
    from apache_beam.io.filesystems import FileSystems

    try:
        results = FileSystems.match(list(patterns))
    except Exception:  # Beam wraps every backend error in BeamIOError; the line then shows no total
        return None
    seen: dict[str, int] = {}
    for result in results:
        for meta in result.metadata_list:
            if not meta.path.endswith("/"):
                seen[meta.path] = meta.size_in_bytes
    return sum(seen.values())


def in_process(pipeline_args: list[str]) -> bool:
    """Whether the pipeline runs in this process (where ``live_tally`` can be read)."""
    from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

    options = PipelineOptions(pipeline_args)
    return (
        options.view_as(StandardOptions).runner in (None, "FnApiRunner")
        and options.view_as(DirectOptions).direct_running_mode != "multi_processing"
    )


def _terminal(stream: TextIO) -> int | None:
    """The file descriptor of ``stream`` when it is a terminal."""
    try:
        return stream.fileno() if stream.isatty() else None
    except (AttributeError, OSError, ValueError):  # a test's capture object has no descriptor
        return None


@contextlib.contextmanager
def live_line(input_paths: Sequence[str], pipeline_args: list[str], quiet: bool) -> Iterator[None]:
    """Show the line for the length of the ``with`` block when it can be true (module docstring)."""
    live_tally.reset()
    fd = None if quiet else _terminal(sys.stderr)
    if fd is None or not in_process(pipeline_args):
        yield
        return
    stream = os.fdopen(os.dup(fd), "w", encoding="utf-8", errors="replace")
    try:
        with MigrateProgress(input_bytes(input_paths), stream, enabled=True):
            yield
    finally:
        stream.close()


class MigrateProgress(LiveLine):
    """The line itself: reads ``live_tally`` and says how far the run is (module docstring)."""

    def __init__(self, total_bytes: int | None, stream: TextIO, enabled: bool, interval: float | None = None):
        super().__init__(stream, enabled, "migrate-progress", interval)
        self._total = total_bytes
        self._stage_seen: dict[str, tuple[float, int]] = {}  # stage → (first seen, users then)
        self._width = 0
        self._outcome: str | None = None

    def __exit__(self, *exc: object) -> None:
        self._outcome = "done" if not exc or exc[0] is None else "stopped"
        super().__exit__(*exc)

    def _emit(self, final: bool = False) -> None:
        # After Ctrl-C or SIGTERM the interruption's one line is all stderr shows (pipeline/signals.py):
        # the line only ends its row, so that the interruption's line starts on a row of its own.
        if signals.received() is None:
            super()._emit(final)
        elif final:
            self._stream.write("\n")
            self._stream.flush()

    def line(self) -> str:
        read, stages = live_tally.snapshot()
        parsed = stages.get(live_tally.PARSED, 0)
        text = f"migrate: read {_amount(read, self._total)}  users {parsed:,}  " + self._tail(read, stages)
        # The line is rewritten in place: pad over the end of a longer line before it.
        self._width = max(self._width, len(text))
        return text.ljust(self._width)

    def _tail(self, read: int, stages: dict[str, int]) -> str:
        later = [stage for stage in _RUNNING if stages.get(stage)]
        stage = later[-1] if later else None
        now = time.monotonic()
        elapsed = now - self._start
        if self._outcome is not None:
            done = f"{_DONE[stage]} {stages[stage]:,}  " if stage else ""
            return f"{done}{self._outcome} in {int(elapsed) // 60}:{int(elapsed) % 60:02d}"
        parsed = stages.get(live_tally.PARSED, 0)
        if stage is None:  # still reading: the ETA from the bytes left
            _, eta = self.rate_and_eta(read, max((self._total or 0) - read, 0)) if self._total else (0, "?")
            return f"{parsed / max(elapsed, 1e-6):,.0f} users/s  ETA {eta}"
        count = stages[stage]
        since, base = self._stage_seen.setdefault(stage, (now, count))
        rate = (count - base) / max(now - since, 1e-6)
        left = max(parsed - count, 0)
        eta = f"{int(left / rate) // 60}:{int(left / rate) % 60:02d}" if rate > 0 else "?"
        return f"{_RUNNING[stage]} {count:,}  {rate:,.0f} users/s  ETA {eta}"


def _amount(read: int, total: int | None) -> str:
    """``1.2/3.4 MB (35%)``, in the unit that suits the total; without a total, what was read."""
    scale = total if total else read
    unit, size = next(
        (u, s) for u, s in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3), ("B", 1)) if scale >= s or s == 1
    )
    digits = 0 if size == 1 else 1
    if not total:
        return f"{read / size:,.{digits}f} {unit}"
    return f"{read / size:,.{digits}f}/{total / size:,.{digits}f} {unit} ({100 * read // total}%)"
