"""pipeline/migrate.py: the pipeline every user source shares after its reader, and the run's checks."""

from __future__ import annotations

import json

import apache_beam as beam
import pytest
from keycloak_fixtures import make_user, write_json
from repo_files import ROOT

from pipeline.cli import main
from pipeline.layout import output_layout
from pipeline.migrate import build_pipeline, run_migration
from pipeline.migrate_options import CommonArgs
from transforms.common.errors import ConfigError
from transforms.sources.registry import syncing_names
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


def test_the_refusal_names_every_command_that_can_sync(tmp_path):
    output = str(tmp_path / "out" / "importBody.json")
    with pytest.raises(ConfigError) as refused:
        run_migration(
            source_name="zitadel",
            add_source=_empty_source,
            common=_common(output, state=str(tmp_path / "state")),
            pipeline_args=[],
            input_paths=[],
            summary_lines=lambda counts: [],
            invariant=lambda counts: (True, ""),
        )
    # In the registry's order (the command line's); no command reaches this (migrate zitadel has
    # no --state flag), so the order is the one place it differs from the text before the registry.
    assert str(refused.value) == (
        "--state: migrate zitadel cannot sync (auth0, keycloak, table and firebase can)"
    )


# Each command the refusal names, on a sample of its own, as a user runs it.
SYNC_SAMPLES = {
    "auth0": [
        f"--users={ROOT}/examples/auth0/users.json",
        f"--passwords={ROOT}/examples/auth0/passwords.json",
    ],
    "keycloak": ["--realm={tmp}/realm.json"],  # written by the test
    "firebase": [f"--users={ROOT}/examples/firebase/users.json"],
    "table": [
        f"--input={ROOT}/examples/table/supabase_auth_users.csv",
        f"--mapping={ROOT}/examples/table/supabase.mapping.json",
    ],
}


@pytest.mark.parametrize("source", syncing_names())
def test_every_command_the_refusal_names_syncs(tmp_path, source):
    assert set(SYNC_SAMPLES) == set(syncing_names())
    state = tmp_path / "state"
    output = tmp_path / "out" / "importBody.json"
    users = [make_user(n, credentials=[]) for n in (1, 2)]  # no hash: the default config admits them
    write_json(tmp_path / "realm.json", {"realm": "acme", "users": users})
    sample = [arg.replace("{tmp}", str(tmp_path)) for arg in SYNC_SAMPLES[source]]
    argv = ["migrate", source, "--org=1", *sample, f"--output={output}", f"--state={state}"]
    assert main(argv) == 0
    sync = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())["sync"]
    assert sync["state"] == str(state) and sync["counts"]["new"] > 0, sync
