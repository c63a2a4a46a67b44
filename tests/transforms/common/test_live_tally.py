"""transforms/common/live_tally.py: what the readers report as read is the inputs' size (local,
.gz in compressed bytes, byte ranges, gs://), a first look at a file does not count, and the
stages add up."""

from __future__ import annotations

import gzip
import json

from transforms.common import live_tally
from transforms.sources import json_units
from transforms.sources.input_stream import open_input


def _ndjson(users: int) -> bytes:
    return b"".join(
        json.dumps({"user_id": f"auth0|{i}", "email": f"user{i}@example.com"}).encode() + b"\n"
        for i in range(users)
    )


def _read_all(path: str) -> None:
    with open_input(path, progress=True) as stream:
        while stream.read(1 << 16):
            pass


def test_units_count_once_at_their_furthest_position_and_stages_add_up():
    live_tally.reset()
    live_tally.reached("a.json", 0, 100)
    live_tally.reached("a.json", 0, 40)  # a second, shorter read of the same unit
    live_tally.reached("a.json", 1000, 30)
    live_tally.reached("b.json", 0, 7)
    live_tally.add(live_tally.PARSED, 4096)
    live_tally.add(live_tally.PARSED, 5)
    live_tally.add(live_tally.WRITTEN, 0)
    assert live_tally.snapshot() == (137, {live_tally.PARSED: 4101})
    live_tally.reset()
    assert live_tally.snapshot() == (0, {})


def test_a_plain_and_a_gzip_file_read_to_the_end_count_their_size_on_disk(tmp_path):
    plain = tmp_path / "users.json"
    plain.write_bytes(_ndjson(20_000))
    packed = tmp_path / "users.json.gz"
    packed.write_bytes(gzip.compress(_ndjson(30_000)))
    live_tally.reset()
    _read_all(str(plain))
    assert live_tally.snapshot()[0] == plain.stat().st_size
    _read_all(str(packed))
    assert live_tally.snapshot()[0] == plain.stat().st_size + packed.stat().st_size


def test_a_first_look_does_not_count_and_byte_ranges_add_up_to_the_file(tmp_path):
    path = tmp_path / "users.json"
    path.write_bytes(_ndjson(5_000))
    size = path.stat().st_size
    live_tally.reset()
    with open_input(str(path)) as stream:  # a sniff, as the launcher and the planner do
        stream.read(1 << 20)
    assert live_tally.snapshot()[0] == 0
    units = json_units.plan_units(json_units.InputFile(0, str(path), size), range_bytes=size // 3)
    assert len(units) > 2
    users = sum(1 for unit in units for _ in json_units.read_unit(unit))
    assert users == 5_000
    assert live_tally.snapshot()[0] == size


def test_a_gs_object_counts_its_stored_size(gcs_emulator):
    data = gzip.compress(_ndjson(10_000))
    gcs_emulator.blob("in/users.json.gz").upload_from_string(data)
    live_tally.reset()
    _read_all(f"gs://{gcs_emulator.name}/in/users.json.gz")
    assert live_tally.snapshot()[0] == len(data)
