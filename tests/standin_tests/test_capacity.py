"""The stand-in's capacity model (tests/standins/capacity.py), over real sockets: beyond K workers
calls wait (never more than K served at once), a full queue is answered 503, a rate limit 429 with
``Retry-After``; the standalone server takes the same settings as flags."""

from __future__ import annotations

import concurrent.futures as cf
import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request

from repo_files import STANDINS
from zitadel_fixtures import PAT, make_user
from zitadel_server import ZitadelServer


def _import(url: str, first: int, users: int) -> tuple[int, dict[str, str]]:
    """One import call of ``users`` users (raw HTTP, no retries): its status and headers."""
    body = {
        "dataOrgs": {
            "orgs": [{"orgId": "123", "humanUsers": [make_user(f"u{first + i:05d}") for i in range(users)]}]
        },
        "timeout": "1m",
    }
    request = urllib.request.Request(
        url + "/admin/v1/import",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {PAT}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers)
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers)


def _overlap(log: list[tuple]) -> int:
    """The most imports the server had in progress at once (from its import log)."""
    events = sorted([(start, 1) for start, *_ in log] + [(end, -1) for _, end, *_ in log])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def test_beyond_k_workers_calls_wait_and_are_all_served():
    with ZitadelServer(tokens={PAT}) as server:
        server.capacity.configure(workers=2, per_user_cost=0.01)
        with cf.ThreadPoolExecutor(6) as pool:
            statuses = list(pool.map(lambda i: _import(server.url, i * 10, 10)[0], range(6)))
        assert statuses == [200] * 6
        assert len(server.user_ids("123")) == 60
        assert server.capacity.peak_busy == 2 and server.capacity.served == 6
        assert server.capacity.peak_waiting >= 1  # some calls queued for a worker
        assert _overlap(server.state.import_log) <= 2  # never more than K imports at work


def test_a_full_queue_is_answered_503_and_refused_calls_do_no_work():
    with ZitadelServer(tokens={PAT}) as server:
        server.capacity.configure(workers=1, per_user_cost=0.02, queue=1)
        with cf.ThreadPoolExecutor(6) as pool:
            statuses = list(pool.map(lambda i: _import(server.url, i * 10, 10)[0], range(6)))
        refused = statuses.count(503)
        assert refused >= 1 and statuses.count(200) + refused == 6
        assert server.capacity.refused[503] == refused
        assert len(server.user_ids("123")) == 10 * statuses.count(200)
        assert server.capacity.peak_waiting <= 1


def test_a_rate_limit_answers_429_with_retry_after():
    with ZitadelServer(tokens={PAT}) as server:
        server.capacity.configure(rate=2.0, burst=2)
        answers = [_import(server.url, i, 1) for i in range(5)]
        assert [status for status, _ in answers[:2]] == [200, 200]
        refused = [headers for status, headers in answers if status == 429]
        assert refused and all(int(h["Retry-After"]) >= 1 for h in refused)
        assert server.capacity.refused[429] == len(refused)
        assert len(server.user_ids("123")) == 5 - len(refused)
        assert server.capacity.peak_rate(10.0) == 0.5  # every call counts, refused ones too


def test_token_calls_are_outside_the_capacity():
    with ZitadelServer(tokens={PAT}) as server:
        server.capacity.configure(rate=1.0, burst=1)
        assert not server.capacity.applies("/oauth/v2/token")
        assert server.capacity.applies("/v2/users/human") and server.capacity.applies("/admin/v1/import")


def test_the_standalone_server_takes_capacity_flags(tmp_path):
    token_file = tmp_path / "pat"
    token_file.write_text(PAT)
    proc = subprocess.Popen(
        [sys.executable, str(STANDINS / "zitadel_server.py"), "--token-file", str(token_file)]
        + ["--workers", "1", "--queue", "0", "--rate-limit", "1", "--per-user-delay-ms", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A test worker process may ignore SIGINT, and an ignored signal stays ignored across exec:
        # the server gets the default, so the SIGINT below stops it as it stops at a terminal.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        first, second = _import(url, 0, 1), _import(url, 1, 1)
        assert first[0] == 200
        assert second[0] == 429 and second[1]["Retry-After"] == "1"
        proc.send_signal(signal.SIGINT)  # it says what it saw, as its last line
        out, _ = proc.communicate(timeout=10)
        summary = json.loads(out.strip().splitlines()[-1])["capacity"]
        assert summary["served"] == 1 and [status for _, status in summary["refusals"]] == [429]
        assert len(summary["arrivals"]) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
