"""transforms/files/guards.py: inputs are never written; a run replaces only the earlier run's own files.

tests/scenarios/test_outputs_guarded.py runs the same rules through the commands; these call them directly.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from transforms.common.errors import ConfigError
from transforms.files.guards import (
    check_inputs_untouched,
    check_owned,
    owned_digests,
    previous_manifest,
    sha256_of,
)


def _refused(inputs, outputs) -> str:
    with pytest.raises(ConfigError) as err:
        check_inputs_untouched(inputs, outputs)
    return str(err.value)


def test_an_output_that_is_an_input_is_refused_naming_both_flags(tmp_path):
    users = tmp_path / "users.json"
    users.write_bytes(b"[]")
    line = _refused({"--users": [str(users)]}, {"--output": str(users)})
    assert line == (
        f"--output {str(users)!r} is the input --users {str(users)!r}: inputs are never written; choose another --output"
    )


def test_the_same_file_by_another_name_is_refused(tmp_path):
    users = tmp_path / "users.json"
    users.write_bytes(b"[]")
    (tmp_path / "hard.json").hardlink_to(users)
    (tmp_path / "soft.json").symlink_to(users)
    for other in ("hard.json", "soft.json", "./sub/../users.json"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        assert "is the input --users" in _refused(
            {"--users": [str(users)]}, {"--output": str(tmp_path / other)}
        )


def test_an_output_a_glob_would_read_is_refused_before_it_exists(tmp_path):
    pattern = str(tmp_path / "export" / "*.json")
    line = _refused({"--users": [pattern]}, {"manifest (from --output)": str(tmp_path / "export" / "x.json")})
    assert f"would be read as --users {pattern!r}" in line
    assert line.endswith("choose another manifest")
    # Globs match component by component, like glob: another folder or suffix is fine.
    check_inputs_untouched({"--users": [pattern]}, {"--output": str(tmp_path / "export" / "sub" / "x.json")})
    check_inputs_untouched({"--users": [pattern]}, {"--output": str(tmp_path / "export" / "x.ndjson")})


def test_an_output_inside_a_realm_folder_is_refused(tmp_path):
    realm = tmp_path / "realm"
    realm.mkdir()
    assert "is inside the folder --realm" in _refused(
        {"--realm": [str(realm)]}, {"--output": str(realm / "importBody.json")}
    )
    # A folder given to a flag that reads files is not a folder of inputs.
    check_inputs_untouched({"--users": [str(realm)]}, {"--output": str(realm / "importBody.json")})


def test_different_files_and_empty_entries_pass(tmp_path):
    check_inputs_untouched(
        {"--users": [str(tmp_path / "users.json"), ""], "--passwords": []},
        {"--output": str(tmp_path / "importBody.json"), "--dead-letter": ""},
    )
    check_inputs_untouched({"--users": ["gs://b/in/*.json"]}, {"--output": "gs://b/out/importBody.json"})
    with pytest.raises(ConfigError):
        check_inputs_untouched({"--users": ["gs://b/in/*.json"]}, {"--output": "gs://b/in/importBody.json"})


def test_sha256_of(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"abc")
    assert sha256_of(str(path)) == hashlib.sha256(b"abc").hexdigest()
    assert sha256_of(str(tmp_path / "missing")) is None


def test_previous_manifest(tmp_path):
    path = tmp_path / "importBody.manifest.json"
    assert previous_manifest(str(path)) is None
    path.write_text(json.dumps({"tool": "zitadel-beam 1.0", "bodies": []}))
    assert previous_manifest(str(path)) == {"tool": "zitadel-beam 1.0", "bodies": []}
    for other in ('{"tool": "something-else"}', "[1]", "not json"):
        path.write_text(other)
        with pytest.raises(ConfigError, match="is not a manifest this tool wrote: it is never replaced"):
            previous_manifest(str(path))
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(ConfigError, match="symbolic link"):
        previous_manifest(str(path))


def test_owned_digests_resolves_every_file_the_manifest_lists(tmp_path):
    manifest_path = str(tmp_path / "importBody.manifest.json")
    manifest = {
        "bodies": [{"path": "importBody.json", "sha256": "aa"}, {"path": "", "sha256": "ignored"}],
        "dead_letter": {"path": "importBody.dead.ndjson"},
        "passwordless": {"path": "/abs/pw.ndjson", "sha256": "cc"},
        "sync": {"changes": [{"path": "changes/1.ndjson", "sha256": "dd"}]},
    }
    assert owned_digests(manifest, manifest_path) == {
        os.path.realpath(tmp_path / "importBody.json"): "aa",
        os.path.realpath(tmp_path / "importBody.dead.ndjson"): None,
        os.path.realpath("/abs/pw.ndjson"): "cc",
        os.path.realpath(tmp_path / "changes" / "1.ndjson"): "dd",
    }
    assert owned_digests(None, manifest_path) == {}
    gcs = owned_digests({"bodies": [{"path": "b.json", "sha256": "ee"}]}, "gs://bkt/out/m.json")
    assert gcs == {"gs://bkt/out/b.json": "ee"}


def test_check_owned_replaces_only_unchanged_files_of_the_earlier_run(tmp_path):
    body = tmp_path / "importBody.json"
    dead = tmp_path / "importBody.dead.ndjson"
    stranger = tmp_path / "importBody.passwordless.ndjson"
    body.write_bytes(b"body")
    dead.write_bytes(b"dead")
    owned = {
        os.path.realpath(body): hashlib.sha256(b"body").hexdigest(),
        os.path.realpath(dead): None,  # listed without a digest: accepted by name
    }
    paths = [str(body), str(dead), str(tmp_path / "not-there.json")]
    check_owned(paths, owned, {})
    body.write_bytes(b"edited by hand")
    with pytest.raises(ConfigError, match="changed since the earlier run's manifest recorded it"):
        check_owned(paths, owned, {})
    stranger.write_bytes(b"someone's")
    with pytest.raises(ConfigError) as err:
        check_owned([str(stranger)], owned, {str(stranger): "--passwordless"})
    assert str(err.value).startswith(f"--passwordless {str(stranger)!r} exists and was not written")
    assert "no earlier manifest of this output names it" in str(err.value)
    assert stranger.read_bytes() == b"someone's" and body.read_bytes() == b"edited by hand"
