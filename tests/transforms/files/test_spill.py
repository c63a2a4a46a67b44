"""transforms/files/spill.py: intermediate data as files in the run's temporary folder."""

from __future__ import annotations

import os
import stat

from transforms.files.spill import load_blob, read_spill, read_spill_head, spill_parts, write_spill

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


def test_spill_parts_packs_each_partition_and_empties_the_dict(tmp_path):
    from transforms.common.records import encoded_row, pack_rows

    def row(position: int, user_id: str):
        return encoded_row(
            file_index=0,
            position=position,
            user_id=user_id,
            name_key=user_id,
            entry_json=b"{}",
            metadata_json=b"[]",
            password="",
            source="test",
            record_json=b"{}",
            companions_json=b"[]",
            grants=(),
        )

    rows = {2: [row(1, "u1")], 5: [row(2, "u2")]}
    expected = {part: pack_rows(list(items)) for part, items in rows.items()}
    in_memory = dict(rows)
    assert dict(spill_parts(in_memory, None, lambda part: "unused")) == expected
    assert in_memory == {}
    on_disk = dict(spill_parts(dict(rows), str(tmp_path), lambda part: f"src-p{part:03d}.pkl"))
    assert sorted(os.listdir(tmp_path)) == ["src-p002.pkl", "src-p005.pkl"]
    assert {part: read_spill(path) for part, path in on_disk.items()} == expected
    assert stat.S_IMODE(os.stat(on_disk[2]).st_mode) == 0o600
