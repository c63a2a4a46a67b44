"""pipeline/flex_metadata.py: flex_template/metadata.json is written from the sources' descriptions.

Dataflow reads the committed file; it must be what ``python -m pipeline.flex_metadata`` writes, and
a source added to the registry (the toy plugin, tests/helpers/toy_plugin) becomes a template source
with its flags as parameters without an edit to the file by hand.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from pipeline import flex_metadata
from transforms.sources import registry
from transforms.sources.declaration import FlexPart

PLUGIN = Path(__file__).resolve().parents[1] / "helpers" / "toy_plugin"


def test_the_committed_file_is_what_the_command_writes():
    committed = flex_metadata.METADATA.read_text(encoding="utf-8")
    assert committed == flex_metadata.render(flex_metadata.generate()), (
        "flex_template/metadata.json differs from the sources' descriptions: run python -m pipeline.flex_metadata"
    )
    assert flex_metadata.main(["--check"]) == 0


def test_check_names_a_file_that_drifted(tmp_path, capsys):
    drifted = tmp_path / "metadata.json"
    document = json.loads(flex_metadata.METADATA.read_text(encoding="utf-8"))
    document["parameters"] = document["parameters"][:-1]
    drifted.write_text(flex_metadata.render(document), encoding="utf-8")
    assert flex_metadata.main(["--check", f"--output={drifted}"]) == 1
    assert "differs from the sources' descriptions" in capsys.readouterr().out
    assert flex_metadata.main([f"--output={drifted}"]) == 0
    assert drifted.read_text(encoding="utf-8") == flex_metadata.METADATA.read_text(encoding="utf-8")


def test_the_source_parameter_offers_the_sources_with_a_template_part():
    document = flex_metadata.generate()
    (source,) = [p for p in document["parameters"] if p["name"] == "source"]
    offered = [d.name for d in registry.descriptions() if d.flex is not None]
    assert source["regexes"] == [f"^({'|'.join(offered)})$"]
    names = [p["name"] for p in document["parameters"]]
    assert names[:2] == ["source", "org"] and len(names) == len(set(names))


@pytest.fixture
def toy_in_the_template():
    sys.path.insert(0, str(PLUGIN))
    try:
        from toy_source import command

        toy = dataclasses.replace(command.DESCRIPTION, flex=FlexPart(labels={"users": "Toy export"}))
        registry.register(toy)
        yield toy
    finally:
        registry.unregister("toy")
        sys.path.remove(str(PLUGIN))


def test_a_plugin_with_a_template_part_gets_its_parameters(toy_in_the_template):
    params = {p["name"]: p for p in flex_metadata.generate()["parameters"]}
    assert "|toy)$" in params["source"]["regexes"][0]
    assert params["users"]["label"].endswith(", or Toy export")
    assert params["users"]["regexes"] == [flex_metadata.GCS_PATH]  # a file its workers read
    assert (
        params["include_locked"]["helpText"] == "import users locked at the toy (--include-locked; toy only)"
    )
    assert params["include_locked"]["customMetadata"] == {"kind": "bool"}
    # It declares no shared group: the hash and layout flags are not its parameters.
    assert "toy" not in params["on_unsupported_hash"]["helpText"]
    assert params["state"]["helpText"].endswith("(--state)")  # every source's, toy's too
