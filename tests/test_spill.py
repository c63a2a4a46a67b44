"""transforms/files/spill.py: intermediate data as files in the run's temporary folder."""

from __future__ import annotations

import os
import stat

from transforms.files.spill import load_blob, read_spill, read_spill_head, write_spill

BLOB = bytes(range(256)) * 64


def test_a_local_spill_round_trips_privately(tmp_path):
    path = write_spill(str(tmp_path), "parse-0-000001-p007.pkl", BLOB)
    assert path == os.path.join(str(tmp_path), "parse-0-000001-p007.pkl")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # it holds password hashes
    assert read_spill(path) == BLOB
    assert read_spill_head(path, 10) == BLOB[:10]
    assert sorted(os.listdir(tmp_path)) == ["parse-0-000001-p007.pkl"]  # no temporary left


def test_a_retried_bundle_overwrites_its_own_file(tmp_path):
    write_spill(str(tmp_path), "chunk-3.pkl", b"first attempt, longer")
    path = write_spill(str(tmp_path), "chunk-3.pkl", b"retry")
    assert read_spill(path) == b"retry"


def test_load_blob_takes_the_blob_or_its_path(tmp_path):
    path = write_spill(str(tmp_path), "x.pkl", BLOB)
    assert load_blob(BLOB) is BLOB
    assert load_blob(path) == BLOB


def test_a_gcs_spill_round_trips(gcs_emulator):
    folder = f"gs://{gcs_emulator.name}/tmp/run-1"
    path = write_spill(folder, "join-p001.pkl", BLOB)
    assert path == f"{folder}/join-p001.pkl"
    assert read_spill(path) == BLOB
    assert read_spill_head(path, 3) == BLOB[:3]
    assert load_blob(path) == BLOB
    assert gcs_emulator.blob("tmp/run-1/join-p001.pkl").download_as_bytes() == BLOB
