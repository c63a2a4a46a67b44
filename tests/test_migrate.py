"""pipeline/migrate.py: the pipeline every user source shares after its reader, and the run's checks."""

from __future__ import annotations

import apache_beam as beam
import pytest

from pipeline.layout import output_layout
from pipeline.migrate import build_pipeline, run_migration
from pipeline.migrate_options import CommonArgs
from transforms.common.errors import ConfigError


def _common(output: str, **flags) -> CommonArgs:
    return CommonArgs(
        org_id="1",
        output=output,
        timeout="5m0s",
        multiline=False,
        batch_size=10,
        dead_letter=None,
        strict=False,
        metadata=False,
        bcrypt_min_cost=10,
        bcrypt_max_cost=16,
        **flags,
    )


def _empty_source(pipeline, tmp_dir):
    return {
        "rows": pipeline | "Rows" >> beam.Create([]),
        "dead": pipeline | "Dead" >> beam.Create([]),
    }


def test_the_pipeline_is_built_not_run_with_its_labelled_steps(tmp_path):
    output = str(tmp_path / "importBody.json")
    layout = output_layout(output, None)
    pipeline = build_pipeline(_empty_source, _common(output), layout, [])
    labels = {t.unique_name for t in pipeline.to_runner_api().components.transforms.values()}
    assert {"Rows", "Dead", "ToBodies", "AllDeadLetters", "DeadLetters"} <= labels
    assert not (tmp_path / "importBody.manifest.json").exists()


def test_state_with_a_source_that_cannot_sync_is_refused_before_anything_is_written(tmp_path):
    output = str(tmp_path / "out" / "importBody.json")
    with pytest.raises(ConfigError, match="migrate zitadel cannot sync"):
        run_migration(
            source_name="zitadel",
            add_source=_empty_source,
            common=_common(output, state=str(tmp_path / "state")),
            pipeline_args=[],
            input_paths=[],
            summary_lines=lambda counts: [],
            invariant=lambda counts: (True, ""),
        )
    assert not (tmp_path / "out").exists()
