"""pipeline/layout.py: where a migrate run writes, derived from --output and --dead-letter."""

from __future__ import annotations

import pytest

from pipeline.layout import output_layout, passwordless_path, planned_outputs


@pytest.mark.parametrize(
    "output, dead_letter, stem, ext, manifest, dead, tmp",
    [
        (
            "out/importBody.json",
            None,
            "out/importBody",
            ".json",
            "out/importBody.manifest.json",
            "out/importBody.dead-letter.ndjson",
            "out/.importBody.zitadel-beam-tmp",
        ),
        (
            "bodies",
            "dl.ndjson",
            "bodies",
            "",
            "bodies.manifest.json",
            "dl.ndjson",
            ".bodies.zitadel-beam-tmp",
        ),
        (
            "gs://b/run/u.json",
            None,
            "gs://b/run/u",
            ".json",
            "gs://b/run/u.manifest.json",
            "gs://b/run/u.dead-letter.ndjson",
            "gs://b/run/.u.zitadel-beam-tmp",
        ),
        (
            ".hidden",
            None,
            ".hidden",
            "",
            ".hidden.manifest.json",
            ".hidden.dead-letter.ndjson",
            "..hidden.zitadel-beam-tmp",
        ),
    ],
)
def test_output_layout_derives_every_name_from_the_output(
    output, dead_letter, stem, ext, manifest, dead, tmp
):
    layout = output_layout(output, dead_letter)
    assert (layout.output, layout.stem, layout.ext) == (output, stem, ext)
    assert (layout.manifest, layout.dead_letter, layout.tmp_dir) == (manifest, dead, tmp)


def test_numbered_bodies_and_the_passwordless_list_sit_beside_the_output():
    layout = output_layout("out/importBody.json", None)
    assert layout.numbered(3, 12) == "out/importBody-00003-of-00012.json"
    assert passwordless_path(layout) == "out/importBody.passwordless.ndjson"


def test_planned_outputs_name_everything_a_run_may_write():
    planned = planned_outputs("out/importBody.json", "dl/x.ndjson")
    assert planned["--output"] == "out/importBody.json"
    assert planned["--dead-letter"] == "dl/x.ndjson"
    assert planned["--output (its manifest)"] == "out/importBody.manifest.json"
    assert planned["--output (its lock)"] == "out/importBody.lock"
    assert planned["--output (its work folder)"].startswith("out/.importBody.json")
    assert set(planned) >= {
        "--output (its numbered bodies)",
        "--output (its push ledger)",
        "--output (its change files)",
    }
