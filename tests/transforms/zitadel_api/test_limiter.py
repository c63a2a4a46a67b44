"""The push's limiter (transforms/zitadel_api/limiter.py): its decisions, on a fake clock, and push
against the stand-in's capacity model (tests/standins/capacity.py) over real sockets: every user
lands exactly once with no failure, whatever the target's workers, queue or rate limit."""

from __future__ import annotations

import json

import pytest
from zitadel_fixtures import PAT, fast_client, write_manifest
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.output.manifest import load_manifest
from transforms.push import engine as push_engine
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.limiter import INITIAL, Limiter, outcome_of

TOKEN = Credentials("token", token=PAT)


class FakeClock:
    """Time that moves only when the limiter sleeps (or the test says so)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _limiter(clock: FakeClock, **options) -> Limiter:
    return Limiter(clock=clock, sleep=clock.sleep, **options)


def _fill(limiter: Limiter) -> int:
    """Take every slot the limit allows; how many that was."""
    taken = 0
    while limiter.try_acquire():
        taken += 1
    return taken


@pytest.mark.parametrize(
    "status, outcome",
    [(200, "ok"), (429, "throttled"), (503, "overloaded"), (504, "overloaded"), (502, "overloaded")]
    + [(0, "other"), (400, "other"), (500, "other")],
)
def test_what_each_answer_tells_the_limiter(status, outcome):
    assert outcome_of(status) == outcome


def test_it_starts_low_and_doubles_per_round_while_the_per_user_time_stays_flat():
    clock = FakeClock()
    limiter = _limiter(clock)
    assert _fill(limiter) == INITIAL == 4
    for _ in range(4):
        limiter.record(200, 1.0, users=1000)
    assert limiter.limit == 8 and limiter.probing
    assert _fill(limiter) == 4  # four more slots opened
    for _ in range(8):
        limiter.record(200, 1.1, users=1000)
    assert limiter.limit == 16


def test_it_does_not_grow_while_the_limit_is_not_in_use():
    limiter = _limiter(FakeClock(), initial=4)
    assert limiter.try_acquire()  # one of four slots in use
    for _ in range(10):
        limiter.record(200, 1.0, users=100)
    assert limiter.limit == 4


def test_rising_per_user_time_cuts_the_limit_and_ends_the_doubling():
    limiter = _limiter(FakeClock(), initial=16)
    _fill(limiter)
    limiter.record(200, 1.0, users=1000)  # 1 ms per user: the best
    limiter.record(200, 3.0, users=1000)  # 3 ms: calls are queueing at the target
    assert limiter.limit == 17 * 2 // 3  # cut in proportion (tolerance 2 / ratio 3)
    assert not limiter.probing
    before = limiter.limit
    limiter.record(200, 1.0, users=1000)  # flat again: one more per round trip, not per answer
    assert limiter.limit == before


@pytest.mark.parametrize("status", [503, 502, 504])
def test_overload_answers_halve_the_limit(status):
    clock = FakeClock()
    limiter = _limiter(clock, initial=8)
    limiter.record(status, 0.1)
    assert limiter.limit == 4 and not limiter.probing
    for _ in range(5):
        clock.now += 1.0  # each a call sent after the last cut
        limiter.record(status, 0.1)
    assert limiter.limit == 1  # never below one


@pytest.mark.parametrize("status", [503, 200])
def test_calls_sent_before_a_cut_do_not_cut_again(status):
    """A full window of answers to calls sent before the limit was cut (they queued at the
    target under the old limit) cuts it once, as TCP cuts once a window, not once per answer."""
    clock = FakeClock()
    limiter = _limiter(clock, initial=32)
    _fill(limiter)
    limiter.record(200, 1.0, users=1000)  # 1 ms per user: the best
    clock.now += 0.5
    limiter.record(status, 4.0, users=1000)  # sent 4 s ago: overloaded, or 4 ms per user (queueing)
    cut = limiter.limit
    assert cut < 32
    for _ in range(20):  # the rest of the window: sent before the cut, answered after it
        clock.now += 0.01
        limiter.record(status, 4.0, users=1000)
    assert limiter.limit == cut
    clock.now += 5.0
    limiter.record(status, 4.0, users=1000)  # sent after the cut and still slow: cut again
    assert limiter.limit < cut


def test_429_pauses_every_attempt_for_retry_after_and_caps_the_rate():
    clock = FakeClock()
    limiter = _limiter(clock)
    for _ in range(10):  # ten attempts within the last second
        limiter.admit()
    limiter.record(429, 0.01, retry_after=3.0)
    limiter.admit(retry=True)
    assert clock.slept[0] == pytest.approx(3.0)
    stats = limiter.stats()
    assert stats.rate_cap == pytest.approx(9.0) and stats.refused == 1 and stats.retried == 1
    start = clock.now
    for _ in range(9):
        limiter.admit()
    assert clock.now - start >= 8 / 9.0 - 1e-9  # at most nine a second from now on


def test_max_rate_spaces_attempts_without_a_burst():
    clock = FakeClock()
    limiter = _limiter(clock, max_rate=5.0)
    for _ in range(11):
        limiter.admit()
    assert clock.now - 100.0 == pytest.approx(2.0)  # the first at once, then one every 0.2 s


def test_the_limit_never_exceeds_the_maximum():
    limiter = _limiter(FakeClock(), maximum=3)
    for _ in range(10):
        _fill(limiter)
        limiter.record(200, 1.0)
    assert limiter.limit == 3 and _fill(limiter) == 0


def test_a_fixed_limit_never_moves_nor_pauses_but_keeps_max_rate():
    clock = FakeClock()
    limiter = _limiter(clock, fixed=3, max_rate=10.0)
    assert _fill(limiter) == 3 and not limiter.probing
    limiter.record(503, 1.0)
    limiter.record(429, 1.0, retry_after=30.0)
    limiter.record(200, 100.0)
    assert limiter.limit == 3
    limiter.admit()
    assert sum(clock.slept) < 1.0  # no Retry-After pause: the transport's retries do that
    assert limiter.stats().refused == 2


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        Limiter(fixed=0)
    with pytest.raises(ValueError):
        Limiter(max_rate=0.0)


# -- push against a target with a capacity ----------------------------------------------------


def _push(server: ZitadelServer, manifest, **options):
    client = fast_client(server.url, TOKEN, max_attempts=8)
    return push_engine.push_manifest(
        load_manifest(str(manifest)), server.url, TOKEN, progress=False, client=client, **options
    )


@pytest.mark.parametrize(
    "capacity",
    [
        {"workers": 1, "per_user_cost": 0.0002, "queue": 2},
        {"workers": 4, "per_user_cost": 0.0002, "queue": 2},
        {"workers": 16, "per_user_cost": 0.0001},
    ],
    ids=["K1-queue2", "K4-queue2", "K16"],
)
def test_adaptive_push_lands_every_user_once_whatever_the_workers(tmp_path, capacity):
    manifest, ids = write_manifest(tmp_path, users=1200, bodies=24, metadata=False)
    with ZitadelServer(tokens={PAT}) as server:
        server.capacity.configure(**capacity)
        report = _push(server, manifest, concurrency=None)
        assert report.ok and report.failed == 0 and report.created == 1200
        assert server.user_ids("123") == set(ids)
        assert sum(n for *_, n in server.state.import_log) >= 1200  # refused calls did no work
        if capacity["workers"] > 1:
            assert server.capacity.peak_busy > 1  # it went past one body at a time


def test_adaptive_push_against_a_rate_limit_lands_every_user_once(tmp_path):
    manifest, ids = write_manifest(tmp_path, users=300, bodies=60, metadata=False)
    with ZitadelServer(tokens={PAT}) as server:
        server.capacity.configure(workers=8, per_user_cost=0.001, rate=20.0, burst=5)
        report = _push(server, manifest, concurrency=None)
        assert report.ok and report.failed == 0 and server.user_ids("123") == set(ids)


def test_max_rate_keeps_the_target_under_its_limit(tmp_path):
    manifest, ids = write_manifest(tmp_path, users=40, bodies=20, metadata=False)
    with ZitadelServer(tokens={PAT}) as server:
        # A little burst at the server: requests sent 1/8 s apart may arrive closer (scheduling).
        server.capacity.configure(workers=8, rate=10.0, burst=3)
        report = _push(server, manifest, concurrency=None, max_rate=8.0)
        assert report.ok and server.user_ids("123") == set(ids)
        assert server.capacity.refused[429] == 0 and server.capacity.peak_rate(2.0) <= 10.0


def test_after_order_is_kept_at_any_concurrency(tmp_path):
    manifest, ids = write_manifest(
        tmp_path, users=400, bodies=16, metadata=False, body_orgs=[{"org": {"name": "Acme"}}]
    )
    with ZitadelServer(tokens={PAT}) as server:
        server.capacity.configure(workers=8, per_user_cost=0.0005)
        report = _push(server, manifest, concurrency=None)
        assert report.ok and server.user_ids("123") == set(ids)
        log = sorted(server.state.import_log)
        org_body_end = log[0][1]
        assert log[0][4] == 0 and all(start >= org_body_end for start, *_ in log[1:])


def test_concurrency_n_means_exactly_n_through_the_cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    manifest, ids = write_manifest(tmp_path, users=300, bodies=12, metadata=False)
    with ZitadelServer(tokens={PAT}) as server:
        server.capacity.configure(workers=16, per_user_cost=0.001)
        rc = main(["push", "--url", server.url, "--manifest", str(manifest), "--concurrency", "3", "--quiet"])
        assert rc == 0, capsys.readouterr().err
        assert server.user_ids("123") == set(ids)
        assert server.capacity.peak_busy == 3


@pytest.mark.parametrize(
    "flags", [["--concurrency", "0"], ["--max-concurrency", "0"], ["--max-rate", "0"], ["--max-rate", "-1"]]
)
def test_bad_pace_flags_are_a_configuration_error(tmp_path, monkeypatch, capsys, flags):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    manifest, _ = write_manifest(tmp_path, users=2, bodies=1)
    assert main(["push", "--url", "http://127.0.0.1:9", "--manifest", str(manifest), *flags]) == 2
    assert "must be" in capsys.readouterr().err


def test_progress_and_table_show_the_pace_and_quiet_stays_quiet(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    manifest, ids = write_manifest(tmp_path, users=60, bodies=6, metadata=False)
    with ZitadelServer(tokens={PAT}) as server:
        server.capacity.configure(workers=4, per_user_cost=0.001)
        server.faults.inject("429")
        server.faults.inject("503")
        rc = main(["push", "--url", server.url, "--manifest", str(manifest)])
        out, err = capsys.readouterr()
        assert rc == 0 and server.user_ids("123") == set(ids)
        assert "concurrency " in err and "(adaptive, peak " in err and "req/s" in err
        assert "pace: settled at concurrency " in out and "refused 2, retried 2" in out
        rc = main(
            [
                "push",
                "--url",
                server.url,
                "--manifest",
                str(manifest),
                "--quiet",
                "--results",
                str(tmp_path / "r2"),
            ]
        )
        out, err = capsys.readouterr()
        assert rc == 0 and err == "" and "pace: settled at concurrency " in out and "(fixed)" not in out


# -- bodies that fit the deadline ---------------------------------------------------------------


def _parts(manifest, index: int) -> list[dict]:
    path = str(manifest)[: -len(".manifest.json")] + f".results/body-{index:05d}.json"
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)["parts"]


def test_a_body_that_would_not_fit_its_timeout_is_split_before_it_is_sent(tmp_path):
    # 400 users at 4 ms each take 1.6 s; the bodies' timeout is 1 s.
    manifest, ids = write_manifest(tmp_path, users=1200, bodies=3, timeout="1s", metadata=False)
    with ZitadelServer(tokens={PAT}) as server:
        server.faults.per_user_delay = 0.004
        report = _push(server, manifest, concurrency=1)
        assert report.ok and server.user_ids("123") == set(ids)
        assert server.added_event_counts() == {uid: 1 for uid in ids}
    assert _parts(manifest, 0)[0]["outcome"] == "deadline-exceeded"  # nothing learnt yet
    for index in (1, 2):  # learnt: split before sending, no server deadline
        parts = _parts(manifest, index)
        assert {p["outcome"] for p in parts} == {"ok"} and len(parts) > 1
        assert sum(p["users"] for p in parts) == 400 and max(p["users"] for p in parts) <= 200


def test_a_run_stopped_between_split_parts_resumes_exactly(tmp_path):
    manifest, ids = write_manifest(tmp_path, users=1200, bodies=3, timeout="1s", metadata=False)
    with ZitadelServer(tokens={PAT}) as server:
        server.faults.per_user_delay = 0.004
        server.faults.silent_after(6, "drop")  # gone inside the second body's parts
        first = _push(server, manifest, concurrency=1)
        assert not first.ok and first.fatal and "stopped answering" in first.fatal
        second = first.bodies[1]
        assert second.status in ("failed", "not-sent") and first.bodies[2].status == "not-sent"
        assert "ok" in {p["outcome"] for p in second.parts}  # stopped between its parts
        server.faults.clear()
        again = _push(server, manifest, concurrency=None)
        assert again.ok and server.user_ids("123") == set(ids)
        assert server.added_event_counts() == {uid: 1 for uid in ids}  # nothing created twice
        assert again.created + again.present == 1200  # each user counted once, skipped body too
        assert [b.status for b in again.bodies] == ["skipped", "done", "done"]
