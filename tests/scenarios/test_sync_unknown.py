"""No password written twice: a sync night whose calls lose their answers, then the next run.

Real CLI, real sockets: the test server's ``late`` fault applies a call only after the client gave
up on it (tests/standins/zitadel_server.py), so the client never learns that it landed. Every
password write at the server is a ``user.human.password.changed`` event; each user's day-2 hash
must be written exactly once however the nights go (docs/sync.md#unknown-outcomes).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline.cli import main
from tests.pipeline.test_signals import REPO, interrupt, start, wait_for
from tests.scenarios.test_sync_nights import Day, _held, _password, _profile
from transforms.sync import read_back

USERS = 40


@pytest.fixture
def night(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    with ZitadelServer(tokens={PAT}) as server:
        yield Day(tmp_path, server, token_file)


def age_events(server: ZitadelServer) -> None:
    """Date every event so far a day back: day 1 was yesterday, not a second ago (a password
    written within read_back.CLOCK_SLACK before a call counts as the call's)."""
    with server.state.lock:
        for event in server.state.events:
            event.created = "2026-01-01T00:00:00Z"


def _days() -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    hashes = hash_pool(4)
    profiles1 = [_profile(n) for n in range(1, USERS + 1)]
    passwords1 = [_password(n, hashes[n % 2]) for n in range(1, USERS + 1)]
    profiles2 = [_profile(n, family_name=f"New{n}") for n in range(1, USERS + 1)]
    passwords2 = [_password(n, hashes[2 + n % 2]) for n in range(1, USERS + 1)]
    return profiles1, passwords1, profiles2, passwords2


def _password_writes(server: ZitadelServer) -> dict[str, int]:
    with server.state.lock:
        counts: dict[str, int] = {}
        for event in server.state.events:
            if event.event_type == "user.human.password.changed":
                counts[event.aggregate_id] = counts.get(event.aggregate_id, 0) + 1
        return counts


def _assert_day2_held_once(night: Day, profiles2: list[dict], passwords2: list[dict]) -> None:
    held = _held(night.server)
    for profile, password in zip(profiles2, passwords2, strict=True):
        user = held[profile["user_id"]]["user"]
        assert user["hashedPassword"]["value"] == password["passwordHash"]
        assert user["profile"]["lastName"] == profile["family_name"]
    writes = _password_writes(night.server)
    assert writes == {p["user_id"]: 1 for p in profiles2}, "a password hash was written twice"


def _assert_calls_add_up(out: str) -> None:
    totals = re.findall(r"planned (\d+) = confirmed (\d+) \+ failed (\d+) \+ not sent (\d+)", out)
    assert totals, out
    for planned, confirmed, failed, not_sent in totals:
        assert int(planned) == int(confirmed) + int(failed) + int(not_sent)


def _push(night: Day, *extra: str) -> int:
    manifest = night.tmp / "out" / "importBody.manifest.json"
    return main(
        [
            "push",
            f"--url={night.server.url}",
            f"--manifest={manifest}",
            f"--token-file={night.token_file}",
            *extra,
        ]
    )


def _age_in_flight(out, seconds: float) -> None:
    """Date the writes the change ledgers hold in flight ``seconds`` earlier: the next push runs
    that much later (it reads such a user back no sooner than read_back.SETTLE after the write)."""
    for path in out.rglob("changes-ledger*.ndjson"):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for line in lines:
            if line.get("unknown_at") is not None:
                line["unknown_at"] -= seconds
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _unknown(night: Day) -> dict[str, float]:
    path = night.state / "UNKNOWN_OUTCOMES.json"
    return json.loads(path.read_text())["users"] if path.exists() else {}


@pytest.fixture(autouse=True)
def short_settle(monkeypatch):
    """The next run waits read_back.SETTLE after a write of unknown outcome before reading it
    back (docs/sync.md#late-landing): 10 s here, longer than the stalled server holds a call (6 s)."""
    monkeypatch.setattr(read_back, "SETTLE", 10.0)


@pytest.mark.parametrize("late_seconds", [0.0, 6.0], ids=["lands-at-once", "lands-6s-later"])
def test_a_night_that_stops_half_way_and_the_next_write_each_password_once(night, capsys, late_seconds):
    profiles1, passwords1, profiles2, passwords2 = _days()
    assert night.run(profiles1, passwords1) == 0
    age_events(night.server)  # day 1 was yesterday
    assert night.run(profiles2, passwords2, push=False) == 0
    # Half-way through, the server stops answering; the calls it still gets land after the
    # client gave up on them: at once, or when the server resumes, during the next night.
    night.server.faults.silent_after(15, kind="late", path="/v2/users/*")
    night.server.faults.late_seconds = late_seconds
    capsys.readouterr()
    rc = _push(night, "--quiet", "--max-attempts=2", "--request-timeout=0.5", "--concurrency=2")
    out = capsys.readouterr().out
    assert rc == 1 and "run push again" in out
    _assert_calls_add_up(out)
    assert re.search(r"outcome unknown \(read back before sending again\): [1-9]", out), out
    held = _held(night.server)
    day2 = {prof["user_id"]: pw["passwordHash"] for prof, pw in zip(profiles2, passwords2, strict=True)}
    if not late_seconds:
        landed_late = [
            uid for uid in _unknown(night) if held[uid]["user"]["hashedPassword"]["value"] == day2[uid]
        ]
        assert landed_late, "no call landed after the client gave up: the scenario did not happen"
    night.server.faults.clear()

    # The next night: same export, the server answers again.
    capsys.readouterr()
    assert night.run(profiles2, passwords2) == 0
    out = capsys.readouterr().out
    _assert_calls_add_up(out)
    _assert_day2_held_once(night, profiles2, passwords2)
    assert _unknown(night) == {}
    # Every user's state is right: one more night sends nothing at all.
    requests = len(night.server.v2_requests)
    assert night.run(profiles2, passwords2) == 0
    assert len(night.server.v2_requests) == requests


def test_a_504_after_the_effect_is_read_back_the_same_night_and_not_sent_again(night, capsys):
    profiles1, passwords1, profiles2, passwords2 = _days()
    assert night.run(profiles1, passwords1) == 0
    age_events(night.server)
    night.server.faults.inject("504_after", count=3, path="/v2/users/human/*")
    night.server.v2_requests.clear()
    capsys.readouterr()
    assert night.run(profiles2, passwords2) == 0
    _assert_calls_add_up(capsys.readouterr().out)
    assert night.server.faults.fired.count("504_after") == 3
    puts = [path for method, path, _ in night.server.v2_requests if method == "PUT"]
    assert len(puts) == USERS  # the three answered 504 were read back, not sent again
    _assert_day2_held_once(night, profiles2, passwords2)


def test_ctrl_c_during_a_write_then_push_again_writes_the_password_once(night, tmp_path):
    profiles1, passwords1, profiles2, passwords2 = _days()
    assert night.run(profiles1, passwords1) == 0
    age_events(night.server)
    assert night.run(profiles2, passwords2, push=False) == 0
    # The 6th change call hangs; the push is stopped while it waits, and the server does the
    # work once the process is gone.
    night.server.faults.silent_after(5, kind="late", path="/v2/users/*")
    night.server.faults.hang_seconds = 30.0
    manifest = tmp_path / "out" / "importBody.manifest.json"
    args = [
        "push",
        f"--url={night.server.url}",
        f"--manifest={manifest}",
        f"--token-file={night.token_file}",
        "--quiet",
        "--request-timeout=60",
        "--concurrency=1",  # one user at a time: exactly the 6th call is in flight at the stop
    ]
    proc = start(args, tmp_path)
    wait_for(lambda: "late" in night.server.faults.fired, proc)
    rc, _, err = interrupt(proc, signal.SIGINT, to_group=True)
    assert rc == 130, err[-2000:]
    night.server.faults.clear()
    deadline = time.monotonic() + 60  # the server applies the late call once it sees the socket close
    while sum(_password_writes(night.server).values()) < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sum(_password_writes(night.server).values()) == 6  # 5 answered, 1 landed after the stop
    _age_in_flight(tmp_path / "out", read_back.SETTLE)  # pushed again a minute later, not at once
    again = subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    _assert_calls_add_up(again.stdout)
    _assert_day2_held_once(night, profiles2, passwords2)
    requests = len(night.server.v2_requests)
    assert night.run(profiles2, passwords2) == 0  # the state is right: nothing left to send
    assert len(night.server.v2_requests) == requests
