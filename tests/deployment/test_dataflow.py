"""What the README promises for Dataflow, checked up to the point a network would be needed.

The migrate pipeline is built with DataflowRunner options and submitted with Beam's ``--dry_run``:
the runner translates the graph into a Dataflow job, runs Beam's stager on ``--setup_file`` (it
builds this project's sdist, as it would before uploading it), and stops before calling the
Dataflow service. Cloud Storage calls Beam makes while validating ``--temp_location`` go to the
in-process emulator. See docs/runners.md.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from repo_files import GCS_BUCKET, ROOT, source_copy


def _dataflow_args(tmp_path: Path) -> list[str]:
    return [
        "--runner=DataflowRunner",
        "--project=test-project",
        "--region=europe-west1",
        f"--temp_location=gs://{GCS_BUCKET}/tmp",
        f"--staging_location=gs://{GCS_BUCKET}/staging",
        # A copy: the stager builds an sdist beside setup.py (build/, *.egg-info).
        f"--setup_file={source_copy(tmp_path / 'source') / 'setup.py'}",
        "--dry_run=True",
        "--job_name=zitadel-beam-dry-run",
    ]


def test_migrate_job_graph_builds_for_dataflow_and_setup_file_packages(gcs_emulator, tmp_path, monkeypatch):
    from apache_beam.runners.portability import stager

    from pipeline.layout import output_layout
    from pipeline.migrate import build_pipeline
    from pipeline.migrate_options import CommonArgs
    from pipeline.preflight import spill_dir
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources import json_units
    from transforms.sources.auth0.options import Auth0Options
    from transforms.sources.auth0.read import ReadAuth0Users

    built: list[tuple[str, list[str]]] = []
    original = stager.Stager._build_setup_package

    def recording(*args, **kwargs):
        path = original(*args, **kwargs)
        with tarfile.open(path) as sdist:  # read now: the stager's temp folder goes away
            built.append((path, sdist.getnames()))
        return path

    monkeypatch.setattr(stager.Stager, "_build_setup_package", staticmethod(recording))
    args = _dataflow_args(tmp_path)
    profiles = json_units.match_inputs([str(ROOT / "examples/auth0/users.json")], 0, "--users")
    options = Auth0Options(
        email_verified=False,
        include_blocked=False,
        metadata=False,
        validation=ValidationOptions(10, 16, ("bcrypt",)),
        idp_map=(),
    )
    output = f"gs://{GCS_BUCKET}/out/importBody.json"
    common = CommonArgs(
        org_id="123",
        output=output,
        timeout="5m0s",
        multiline=False,
        batch_size=5000,
        dead_letter=None,
        strict=False,
        metadata=False,
        bcrypt_min_cost=10,
        bcrypt_max_cost=16,
    )
    layout = output_layout(output, None)
    tmp_dir = spill_dir(args, layout.tmp_dir)
    assert tmp_dir == f"gs://{GCS_BUCKET}/tmp/zitadel-beam/zitadel-beam-dry-run"

    def add_source(pipeline, tmp):
        return pipeline | "ReadAuth0" >> ReadAuth0Users(profiles, [], options, NUM_PARTITIONS, tmp, [])

    result = build_pipeline(add_source, common, layout, args).run()
    steps = {step.name for step in result.job.proto.steps} | {
        t.unique_name for t in result.job.proto_pipeline.components.transforms.values()
    }
    assert any("ReadAuth0" in name for name in steps)
    assert any("ToBodies" in name for name in steps)
    assert any("DeadLetters" in name for name in steps)
    # The stager built the package Dataflow workers would install, with both packages in it.
    assert len(built) == 1 and built[0][0].endswith(".tar.gz")
    names = built[0][1]
    assert any(n.endswith("/pipeline/preflight.py") for n in names)
    assert any(n.endswith("/transforms/push/engine.py") for n in names)
    assert any(n.endswith("/setup.py") for n in names)
