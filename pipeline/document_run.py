"""The shared run's parts, for a source that cuts one document into bodies and runs itself.

A source of users is run by ``source_command.run_source``. A source whose one document is cut into
bodies as it is (its ``DocumentRun``: a ZITADEL export) runs itself, below the command line, with
the parts every run shares: where the outputs go and their lock, Beam, the final names, the
manifest, a signal waiting while the outputs are finalized, the check of what was written, the
summary table. :data:`LAUNCHER` hands them over; the source's package never imports ``pipeline``.

Example (what ``migrate <name>`` of such a source does)::

    description.document.run(known_args, pipeline_args, LAUNCHER)
"""

from __future__ import annotations

from pipeline import signals
from pipeline.beam_run import make_pipeline, raise_output_failure, run_pipeline
from pipeline.layout import output_layout
from pipeline.migrate_options import MAX_BATCH_SIZE
from pipeline.preflight import check_written
from pipeline.report import counters_from_result, summary_table
from pipeline.run_outputs import finalize_outputs, open_outputs, write_manifest
from transforms.sources.declaration import Launcher

__all__ = ["LAUNCHER"]

LAUNCHER = Launcher(
    max_batch_size=MAX_BATCH_SIZE,
    output_layout=output_layout,
    open_outputs=open_outputs,
    make_pipeline=make_pipeline,
    run_pipeline=run_pipeline,
    counters_from_result=counters_from_result,
    raise_output_failure=raise_output_failure,
    finalize_outputs=finalize_outputs,
    write_manifest=write_manifest,
    finishing=signals.finishing,
    check_written=check_written,
    summary_table=summary_table,
)
