"""companion/store.py: the store's format, its 0600 rule, lookups and durable removals."""

from __future__ import annotations

import json
import os
import time

import pytest

from companion.store import Store, StoreError


def _write(path, lines, mode=0o600):
    path.write_text("".join(line if isinstance(line, str) else json.dumps(line) + "\n" for line in lines))
    os.chmod(path, mode)
    return path


def test_finds_by_id_and_by_login_name_without_case(tmp_path):
    store = Store.open(
        str(_write(tmp_path / "s", [{"id": "1", "form": "f", "login_names": ["Ana@Example.com"]}]))
    )
    assert store.find(user_id="1")["id"] == "1"
    assert store.find(login_name="ana@example.COM")["id"] == "1"
    assert store.find(login_name="other") is None
    assert store.find() is None


def test_a_login_name_two_users_share_finds_neither(tmp_path):
    lines = [{"id": "1", "login_names": ["same"]}, {"id": "2", "login_names": ["same"]}]
    store = Store.open(str(_write(tmp_path / "s", lines)))
    assert store.find(login_name="same") is None
    assert store.find(user_id="2")["id"] == "2"


def test_removals_are_appended_durably_and_skip_the_user_after_a_reopen(tmp_path):
    path = _write(tmp_path / "s", [{"id": "1"}, {"id": "2"}, "\n"])
    store = Store.open(str(path))
    store.remove("1")
    store.remove("1")  # once only
    store.remove("unknown")
    removed = (tmp_path / "s.removed").read_text().splitlines()
    assert [json.loads(line)["id"] for line in removed] == ["1"]
    assert oct((tmp_path / "s.removed").stat().st_mode & 0o777) == "0o600"
    again = Store.open(str(path))
    assert (len(again), again.find(user_id="1")) == (1, None)
    status = again.status()
    assert (status.waiting, status.migrated, sum(status.per_day.values())) == (1, 1, 1)
    assert path.read_text().count('"id"') == 2  # the store itself is never written


@pytest.mark.parametrize(
    ("lines", "mode", "message"),
    [
        ([{"id": "1"}], 0o644, "chmod 600"),
        (["not json\n"], 0o600, "s:1: not a JSON object"),
        ([{"form": "x"}], 0o600, 's:1: not a JSON object with an "id"'),
        ([{"id": "1"}, {"id": "1"}], 0o600, "s:2: user id listed twice"),
    ],
)
def test_bad_stores_fail_with_one_line_naming_no_value(tmp_path, lines, mode, message):
    path = _write(tmp_path / "s", lines, mode)
    with pytest.raises(StoreError, match=message):
        Store.open(str(path))


def test_a_missing_store_says_what_writes_it(tmp_path):
    with pytest.raises(StoreError, match="legacy-hashes"):
        Store.open(str(tmp_path / "none"))


def test_unanswered_checks_and_the_days_waiting_count_in_the_status(tmp_path):
    lines = [{"id": str(n), "form": "old-system", "login_names": [f"u{n}"]} for n in range(4)] + [
        {"id": "h", "form": "x"}
    ]
    path = _write(tmp_path / "s", lines)
    removed = [{"id": "0", "at": "2026-11-27T08:00:00Z"}, {"id": "1", "at": "2026-11-28T08:00:00Z"}]
    _write(tmp_path / "s.removed", removed)
    store = Store.open(str(path))
    assert (store.total, len(store), store.count("old-system")) == (5, 3, 2)
    store.note_unanswered("2", "no answer (timed out)")
    assert oct((tmp_path / "s.unanswered").stat().st_mode & 0o777) == "0o600"
    _write(tmp_path / "s.unanswered", [*map(json.loads, (tmp_path / "s.unanswered").read_text().splitlines()),
                                       {"id": "3", "at": "2026-11-27T09:00:00Z", "why": "rate-limited"}])  # fmt: skip
    status = Store.open(str(path)).status()
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert (
        status.per_day["2026-11-27"],
        status.waiting_after["2026-11-27"],
        status.unanswered["2026-11-27"],
    ) == (1, 4, 1)
    assert (
        status.per_day["2026-11-28"],
        status.waiting_after["2026-11-28"],
        status.unanswered["2026-11-28"],
    ) == (1, 3, 0)
    assert (status.per_day[today], status.waiting_after[today], status.unanswered[today]) == (0, 3, 1)
    assert "timed out" in (tmp_path / "s.unanswered").read_text() and status.waiting == 3


def test_import_joins_files_each_user_once_and_never_a_moved_one_again(tmp_path):
    from companion.store import Imported, import_files

    hashes = _write(tmp_path / "legacy", [{"id": "1", "form": "firebase-scrypt", "hash": "h1"}])
    waiting = _write(tmp_path / "waiting", [{"id": "2", "form": "old-system", "login_names": ["bo"]}])
    store = tmp_path / "store"
    assert import_files(str(store), [str(hashes), str(waiting)]) == [
        Imported(str(hashes), 1, 0),
        Imported(str(waiting), 1, 0),
    ]
    assert oct(store.stat().st_mode & 0o777) == "0o600"
    opened = Store.open(str(store))
    opened.remove("1")  # moved: a later import does not make it wait again
    again = _write(tmp_path / "next", [{"id": "1", "form": "old-system"}, {"id": "3", "form": "old-system"}])
    assert import_files(str(store), [str(again), str(waiting)]) == [
        Imported(str(again), 1, 1),
        Imported(str(waiting), 0, 1),
    ]
    reopened = Store.open(str(store))
    assert (len(reopened), reopened.status().old_system, reopened.total) == (2, 2, 3)
    assert reopened.find(login_name="BO")["id"] == "2"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda tmp: [str(_write(tmp / "w", [{"id": "1"}], mode=0o644))], "lets others read it"),
        (lambda tmp: [str(tmp / "missing")], "no such file"),
        (lambda tmp: [str(tmp / "store")], "is the store itself"),
        (
            lambda tmp: [str(_write(tmp / "w", [{"id": "2"}])), str(_write(tmp / "bad", ["not json\n"]))],
            "bad:1",
        ),
    ],
)
def test_import_checks_every_file_before_it_writes(tmp_path, setup, message):
    from companion.store import import_files

    store = _write(tmp_path / "store", [{"id": "1", "form": "old-system"}])
    before = store.read_bytes()
    with pytest.raises(StoreError, match=message):
        import_files(str(store), setup(tmp_path))
    assert store.read_bytes() == before
