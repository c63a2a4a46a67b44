"""The push's precheck: a manifest and its bodies must agree before anything is sent."""

from __future__ import annotations

import io

import pytest
from zitadel_fixtures import write_manifest

from transforms.common.errors import ConfigError
from transforms.output.manifest import load_manifest
from transforms.push.precheck import precheck


def test_a_manifest_that_matches_its_bodies_passes_silently(tmp_path):
    manifest, _ = write_manifest(tmp_path, users=6, bodies=2)
    stream = io.StringIO()
    precheck(load_manifest(str(manifest)), stream)
    assert stream.getvalue() == ""


def test_a_missing_body_is_refused_before_anything_is_sent(tmp_path):
    manifest, _ = write_manifest(tmp_path, users=6, bodies=2)
    loaded = load_manifest(str(manifest))
    (tmp_path / loaded.bodies[1].name).unlink()
    with pytest.raises(ConfigError, match="listed in .* but not found; nothing was sent"):
        precheck(loaded, io.StringIO())


def test_a_numbered_body_the_manifest_does_not_list_is_refused(tmp_path):
    manifest, _ = write_manifest(tmp_path, users=6, bodies=2)
    loaded = load_manifest(str(manifest))
    stray = tmp_path / loaded.bodies[0].name.replace("-00001-of-", "-00003-of-")
    stray.write_bytes((tmp_path / loaded.bodies[0].name).read_bytes())
    with pytest.raises(
        ConfigError, match=f"{stray.name} lies beside the bodies but the manifest does not list it"
    ):
        precheck(loaded, io.StringIO())
