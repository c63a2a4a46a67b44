"""pipeline/beam_run.py: the runner chosen, a pipeline run to the end, a full disk as one line."""

from __future__ import annotations

import errno

import apache_beam as beam
import pytest

from pipeline.beam_run import make_pipeline, raise_output_failure, run_pipeline
from pipeline.layout import output_layout
from transforms.common.errors import ConfigError

LAYOUT = output_layout("out/importBody.json", None)


def test_no_runner_means_the_in_process_runner_and_the_pipeline_runs(tmp_path):
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    pipeline = make_pipeline([])
    assert isinstance(pipeline.runner, FnApiRunner)
    _ = pipeline | "Numbers" >> beam.Create([1, 2, 3]) | "Double" >> beam.Map(lambda n: n * 2)
    result = run_pipeline(pipeline, str(tmp_path))
    assert result.state == "DONE"


def test_an_unknown_runner_is_one_config_line():
    with pytest.raises(ConfigError) as err:
        make_pipeline(["--runner=NoSuchRunner"])
    assert str(err.value).startswith("--runner:") and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "err",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        OSError(errno.EFBIG, "File too large"),
        # Beam's wrapping of a worker's OSError: the cause is only in the text.
        RuntimeError("Traceback ...\nOSError: [Errno 28] No space left on device: '/out/x'"),
    ],
)
def test_a_full_disk_becomes_one_line_naming_the_output(err):
    with pytest.raises(ConfigError) as raised:
        raise_output_failure(err, LAYOUT)
    text = str(raised.value)
    assert text.startswith("--output 'out/importBody.json': writing failed (")
    assert "nothing was kept (no manifest)" in text and "\n" not in text


@pytest.mark.parametrize(
    "err",
    [ValueError("a bug"), OSError(errno.EACCES, "Permission denied"), ConfigError("--x: already one line")],
)
def test_other_failures_are_left_to_the_caller(err):
    assert raise_output_failure(err, LAYOUT) is None
