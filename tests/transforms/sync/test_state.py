"""transforms/sync/state.py: generations, the pointer written last, refusal of a moved state."""

from __future__ import annotations

import os
import stat

import pytest

from transforms.common.errors import ConfigError
from transforms.sync.state import POINTER_NAME, UNKNOWN_NAME, StateStore


def _rec(user_id: str, name: str = "n") -> dict:
    return {"id": user_id, "n": name, "q": "", "f": {}, "b": ""}


def test_commit_writes_changed_shards_then_the_pointer_and_reads_back(tmp_path):
    store = StateStore(str(tmp_path / "state"))
    assert store.read_pointer() is None
    first = store.commit(None, {0: {"a": _rec("a")}, 3: {"b": _rec("b")}}, users_delta=2)
    assert first["generation"] == 1 and first["users"] == 2 and set(first["shards"]) == {"0", "3"}
    assert store.read_shard(first, 3) == {"b": _rec("b")}
    assert store.read_shard(first, 5) == {}
    # Generation 2 rewrites only partition 3; partition 0 keeps pointing at generation 1.
    second = store.commit(first, {3: {"b": _rec("b", "renamed")}})
    assert second["shards"]["0"] == first["shards"]["0"] and second["shards"]["3"].startswith("gen-000002/")
    assert store.read_shard(store.read_pointer(), 3)["b"]["n"] == "renamed"
    for path in (tmp_path / "state").rglob("*"):
        if path.is_file():
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


def test_a_crash_before_the_pointer_leaves_the_old_state_whole(tmp_path, monkeypatch):
    store = StateStore(str(tmp_path / "state"))
    first = store.commit(None, {1: {"a": _rec("a")}}, users_delta=1)
    real_write = store._write

    def crash_on_pointer(path: str, data: bytes) -> None:
        if path.endswith(POINTER_NAME):
            raise OSError(28, "No space left on device")
        real_write(path, data)

    monkeypatch.setattr(store, "_write", crash_on_pointer)
    with pytest.raises(OSError):
        store.commit(first, {1: {"a": _rec("a", "lost")}})
    monkeypatch.undo()
    again = StateStore(str(tmp_path / "state"))
    assert again.read_pointer() == first
    assert again.read_shard(first, 1)["a"]["n"] == "n"
    # The next commit goes on from the old generation.
    assert again.commit(first, {1: {"a": _rec("a", "kept")}})["generation"] == 2


def test_a_commit_on_a_moved_state_is_refused(tmp_path):
    store = StateStore(str(tmp_path / "state"))
    first = store.commit(None, {1: {"a": _rec("a")}}, users_delta=1)
    store.commit(first, {1: {"a": _rec("a", "b")}})
    with pytest.raises(ConfigError, match="moved on"):
        store.commit(first, {1: {"a": _rec("a", "c")}})


def test_old_generations_are_removed_once_no_pointer_names_them(tmp_path):
    store = StateStore(str(tmp_path / "state"))
    pointer = None
    for n in range(4):
        pointer = store.commit(pointer, {2: {"a": _rec("a", str(n))}})
    folders = sorted(p.name for p in (tmp_path / "state").iterdir() if p.name.startswith("gen-"))
    assert folders == ["gen-000003", "gen-000004"]  # the current one and the one before


def test_a_pointer_that_is_not_ours_is_one_line(tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / POINTER_NAME).write_text('{"version": 99}')
    with pytest.raises(ConfigError, match="not a zitadel-beam state pointer"):
        StateStore(str(tmp_path / "state")).read_pointer()


def test_links_in_the_state_folder_are_never_written_or_deleted_through(tmp_path):
    store = StateStore(str(tmp_path / "state"))
    first = store.commit(None, {1: {"a": _rec("a")}}, users_delta=1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "part-00001.ndjson.gz").write_bytes(b"not ours")
    # The next generation's folder exists as a link to someone else's folder: refused.
    (tmp_path / "state" / "gen-000002").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="symbolic link"):
        store.commit(first, {1: {"a": _rec("a", "b")}})
    assert (elsewhere / "part-00001.ndjson.gz").read_bytes() == b"not ours"
    assert store.read_pointer() == first
    # A linked folder is not collected either, however old its name.
    (tmp_path / "state" / "gen-000002").unlink()
    (tmp_path / "state" / "gen-000000").symlink_to(elsewhere)
    second = store.commit(first, {1: {"a": _rec("a", "c")}})
    third = store.commit(second, {1: {"a": _rec("a", "d")}})
    assert third["generation"] == 3
    assert (elsewhere / "part-00001.ndjson.gz").read_bytes() == b"not ours"


def test_users_with_an_unknown_outcome_are_kept_beside_the_pointer_and_removed_when_none(tmp_path):
    store = StateStore(str(tmp_path / "state"))
    assert store.read_unknown() == {}
    store.write_unknown({"b": 2.5, "a": 1.0})
    assert store.read_unknown() == {"a": 1.0, "b": 2.5}
    assert store.read_pointer() is None  # a file of its own: no generation is written for it
    store.write_unknown({})
    assert not (tmp_path / "state" / UNKNOWN_NAME).exists()
    (tmp_path / "state" / UNKNOWN_NAME).write_text("[1, 2]")
    with pytest.raises(ConfigError, match=UNKNOWN_NAME):
        store.read_unknown()


def test_the_unknown_outcomes_file_round_trips_on_gcs_emulator(gcs_emulator):
    from repo_files import GCS_BUCKET

    store = StateStore(f"gs://{GCS_BUCKET}/sync/unknown")
    assert store.read_unknown() == {}
    store.write_unknown({"auth0|1": 1764136800.25})
    assert gcs_emulator.blob(f"sync/unknown/{UNKNOWN_NAME}").exists()
    assert store.read_unknown() == {"auth0|1": 1764136800.25}
    store.write_unknown({})
    assert not gcs_emulator.blob(f"sync/unknown/{UNKNOWN_NAME}").exists()
