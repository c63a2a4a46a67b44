"""pipeline/run_outputs.py: a run's lock and work folder, its final bodies, dead letters and manifest."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest

from pipeline.layout import output_layout
from pipeline.run_outputs import finalize_outputs, finalize_passwordless, open_outputs, write_manifest
from transforms.common.errors import ConfigError
from transforms.files.locks import lock_path_for
from transforms.files.sinks import dead_shard_name
from transforms.output.batching import body_temp_name


def _open(tmp_path):
    layout = output_layout(str(tmp_path / "out" / "importBody.json"), None)
    return open_outputs(layout, [], command="migrate test", break_lock=False)


def test_open_takes_the_lock_and_a_private_work_folder_and_close_gives_both_back(tmp_path):
    run = _open(tmp_path)
    lock = lock_path_for(run.layout.output)
    assert os.path.exists(lock)
    assert os.path.isdir(run.layout.tmp_dir) and run.layout.tmp_dir.startswith(str(tmp_path / "out"))
    assert stat.S_IMODE(os.stat(run.layout.tmp_dir).st_mode) == 0o700
    with pytest.raises(ConfigError):  # a second run on the same output
        _open(tmp_path)
    run.close()
    assert not os.path.exists(lock) and not os.path.exists(run.layout.tmp_dir)


def test_a_file_at_an_output_name_that_no_earlier_run_wrote_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "importBody.json").write_text("someone else's\n")
    with pytest.raises(ConfigError, match="importBody.json"):
        _open(tmp_path)
    assert not os.path.exists(lock_path_for(str(tmp_path / "out" / "importBody.json")))


def test_finalize_names_the_bodies_in_order_and_joins_the_dead_letter_shards(tmp_path):
    run = _open(tmp_path)
    try:
        tmp = run.layout.tmp_dir
        for key, users, data in (((1, 0), 3, b"second\n"), ((0, 5), 2, b"first\n")):
            digest = hashlib.sha256(data).hexdigest()
            with open(os.path.join(tmp, body_temp_name(key, users, digest)), "wb") as handle:
                handle.write(data)
        with open(os.path.join(tmp, dead_shard_name(1)), "wb") as handle:
            handle.write(b'{"a":1}\n{"b":2}\n')
        bodies, count, sha = finalize_outputs(run)
        path, passwordless, passwordless_sha = finalize_passwordless(run)
    finally:
        run.close()
    assert [(b["path"], b["users"], b["after"]) for b in bodies] == [
        ("importBody-00001-of-00002.json", 2, []),
        ("importBody-00002-of-00002.json", 3, []),
    ]
    assert (tmp_path / "out" / "importBody-00001-of-00002.json").read_bytes() == b"first\n"
    assert bodies[0]["sha256"] == hashlib.sha256(b"first\n").hexdigest()
    dead = (tmp_path / "out" / "importBody.dead-letter.ndjson").read_bytes()
    assert (count, sha) == (2, hashlib.sha256(dead).hexdigest())
    assert (path, passwordless, passwordless_sha) == (
        str(tmp_path / "out" / "importBody.passwordless.ndjson"),
        0,
        None,
    )


def test_the_manifest_is_written_whole_and_private(tmp_path):
    path = tmp_path / "importBody.manifest.json"
    write_manifest(str(path), {"version": 1, "bodies": []})
    assert json.loads(path.read_text()) == {"version": 1, "bodies": []}
    assert path.read_text().endswith("\n") and stat.S_IMODE(path.stat().st_mode) == 0o600
