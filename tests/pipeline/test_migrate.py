"""pipeline/migrate.py: the pipeline every user source shares after its reader, and the run's checks."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import apache_beam as beam
import pytest

from pipeline.cli import main
from pipeline.layout import output_layout
from pipeline.migrate import build_pipeline, run_migration
from pipeline.migrate_options import CommonArgs
from transforms.common.errors import ConfigError
from transforms.sources.registry import descriptions, syncing_names
from transforms.sources.source_parts import ReadUsers


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
    return ReadUsers(pipeline | "Rows" >> beam.Create([]), pipeline | "Dead" >> beam.Create([]))


def test_the_pipeline_is_built_not_run_with_its_labelled_steps(tmp_path):
    output = str(tmp_path / "importBody.json")
    layout = output_layout(output, None)
    pipeline = build_pipeline(_empty_source, _common(output), layout, [])
    labels = {t.unique_name for t in pipeline.to_runner_api().components.transforms.values()}
    assert {"Rows", "Dead", "ToBodies", "AllDeadLetters", "DeadLetters"} <= labels
    assert not (tmp_path / "importBody.manifest.json").exists()


# The sources whose records the sync cannot read (a ZITADEL export is cut as it is).
CANNOT_SYNC = [d.name for d in descriptions() if not d.kind.syncs]


@pytest.mark.parametrize("source", CANNOT_SYNC)
def test_state_with_a_source_that_cannot_sync_is_refused_before_anything_is_written(tmp_path, source):
    output = str(tmp_path / "out" / "importBody.json")
    with pytest.raises(ConfigError, match=f"migrate {source} cannot sync"):
        run_migration(
            source_name=source,
            add_source=_empty_source,
            common=_common(output, state=str(tmp_path / "state")),
            pipeline_args=[],
            input_paths=[],
            summary_lines=lambda counts: [],
            invariant=lambda counts: (True, ""),
        )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("source", CANNOT_SYNC)
def test_the_refusal_names_every_command_that_can_sync(tmp_path, source):
    output = str(tmp_path / "out" / "importBody.json")
    with pytest.raises(ConfigError) as refused:
        run_migration(
            source_name=source,
            add_source=_empty_source,
            common=_common(output, state=str(tmp_path / "state")),
            pipeline_args=[],
            input_paths=[],
            summary_lines=lambda counts: [],
            invariant=lambda counts: (True, ""),
        )
    # In the registry's order (the command line's): every source whose records the sync reads.
    can = syncing_names()
    assert str(refused.value) == (
        f"--state: migrate {source} cannot sync ({', '.join(can[:-1])} and {can[-1]} can)"
    )


def _sample(source: str, tmp_path: Path) -> list[str]:
    """The flags of a run of ``source`` on a sample of its own, from the source's own tests
    (``tests/transforms/sources/<name>/test_command.py``'s ``sync_sample``)."""
    return importlib.import_module(f"tests.transforms.sources.{source}.test_command").sync_sample(tmp_path)


@pytest.mark.parametrize("source", syncing_names())
def test_every_command_the_refusal_names_syncs(tmp_path, source):
    state = tmp_path / "state"
    output = tmp_path / "out" / "importBody.json"
    sample = _sample(source, tmp_path)
    argv = ["migrate", source, "--org=1", *sample, f"--output={output}", f"--state={state}"]
    assert main(argv) == 0
    sync = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())["sync"]
    assert sync["state"] == str(state) and sync["counts"]["new"] > 0, sync
