"""Making and running a Beam pipeline for the launchers, and the one line a full disk becomes.

For ``pipeline/migrate.py`` and a source that runs itself (``document_run.py``): ``make_pipeline`` picks the
runner (the in-process FnApiRunner when none is given, docs/runners.md#local), ``run_pipeline``
runs and waits while a signal can still stop it (pipeline/signals.py), and
``raise_output_failure`` turns a full disk, a file-size limit or a quota into one ConfigError
line instead of a traceback.

Example::

    pipeline = make_pipeline(pipeline_args)       # add the steps, then:
    try:
        result = run_pipeline(pipeline, layout.tmp_dir)
    except BaseException as err:
        raise_output_failure(err, layout)         # ConfigError when the disk was full
        raise
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from pipeline import signals
from pipeline.layout import OutputLayout
from transforms.common.errors import ConfigError
from transforms.files.storage import is_remote

if TYPE_CHECKING:
    import apache_beam as beam
    from apache_beam.runners.runner import PipelineResult

__all__ = ["make_pipeline", "run_pipeline", "raise_output_failure"]


def make_pipeline(pipeline_args: list[str]) -> beam.Pipeline:
    """A pipeline on the runner ``--runner`` names; ConfigError (one line) for an unknown one."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

    options = PipelineOptions(pipeline_args)
    runner_name = options.view_as(StandardOptions).runner
    if runner_name in (None, "FnApiRunner"):
        # The plain DirectRunner tries to download Prism first and falls back to a far slower
        # runner (docs/runners.md#local); the FnApiRunner is what "the local runner" means here.
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        options.view_as(StandardOptions).runner = None
        return beam.Pipeline(runner=FnApiRunner(), options=options)
    try:
        return beam.Pipeline(options=options)
    except ValueError as err:  # e.g. an unknown --runner: Beam lists the valid ones
        raise ConfigError(f"--runner: {str(err).splitlines()[0]}") from None


def run_pipeline(pipeline: beam.Pipeline, work_dir: str | None = None) -> PipelineResult:
    """Run and wait; a signal stops it (pipeline/signals.py), whatever the runner is doing.

    With a local ``work_dir``, stderr is captured in it while the pipeline runs (worker
    processes print a failing step's traceback there) and shown afterwards unless the run ends
    in a one-line report (a full disk, an interruption).
    """
    captured = os.path.join(work_dir, "stderr.txt") if work_dir and not is_remote(work_dir) else None
    if captured and not signals.capture_stderr(captured):
        captured = None
    replay = True
    try:
        result = pipeline.run()
        result.wait_until_finish()
    except BaseException as err:
        replay = not (signals.received() or _no_space(err))
        raise
    finally:
        if captured:
            signals.restore_stderr(captured, replay)
    return result


_NO_SPACE = re.compile(
    r"\[Errno (?:28|27|122)\][^\n\\\[\]'\"]*|No space left on device|File too large|Disk quota exceeded"
)


def _no_space(err: BaseException) -> str | None:
    """The cause, when ``err`` is a full disk, a file-size limit or a quota (Beam wraps a worker's
    OSError in a RuntimeError holding its text, so the text is searched too)."""
    if isinstance(err, OSError) and err.errno in (27, 28, 122):
        return f"[Errno {err.errno}] {err.strerror}"
    found = _NO_SPACE.search(str(err).split("\n", 1)[0] + " " + repr(err)[:2000])
    return found.group(0).strip() if found else None


def raise_output_failure(err: BaseException, layout: OutputLayout) -> None:
    """A full disk (or a file-size or quota limit) while writing: one ConfigError line, no traceback.

    Beam reports a worker's OSError as a RuntimeError holding its traceback text, so the text is
    searched as well as the exception itself.
    """
    if isinstance(err, ConfigError) or signals.received():
        return
    cause = _no_space(err)
    if cause is None:
        return
    raise ConfigError(
        f"--output {layout.output!r}: writing failed ({cause[:160]}): free space or raise the limit, then "
        "run again; nothing was kept (no manifest)"
    ) from None
