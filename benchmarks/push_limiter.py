"""Push's pace against targets with a capacity: the adaptive default vs ``--concurrency 1`` vs the
best fixed ``--concurrency N`` of a sweep.

Each run starts the stand-in server in its own process (tests/standins/zitadel_server.py, so it
does not share the client's GIL) with ``--workers K`` and a per-user cost, pushes the same
manifest, and reads what the server saw from the summary it prints on SIGINT
(tests/standins/capacity.py): every call's arrival, every refusal (429/503). Times are medians of
``--repeat`` runs of the sending itself (the push's own clock, after the checks every pace
shares); "refused late" counts refusals after the first ``--settle`` seconds (scaled
down from the issue's 30 s to the length of these runs); "peak rate" is the most calls that
arrived in any ``--window`` seconds, refused ones included (the target's own burst allowance lets
a short window run above its rate); "after r/s" is the mean rate of calls arriving after the
first ``--settle`` seconds: the sustained rate the target saw.

The issue asks for 100k users in bodies of 5000 (20 bodies); the default keeps its 20 bodies but
with 1000 users each, because the client's own per-user work (reading and validating every user,
about 0.2 ms on a shared 2-core machine) would otherwise outweigh a per-user cost small enough
for a sweep to take minutes. ``--users 100000 --per-body 5000`` runs the issue's shape.

    .venv/bin/python benchmarks/push_limiter.py                      # K = 1, 4, 16 and a rate limit
    .venv/bin/python benchmarks/push_limiter.py --workers 4 --repeat 1
    .venv/bin/python benchmarks/push_limiter.py --cases user-v2     # one call per user (user service v2)

The user-v2 case pushes through the user service v2 (one create call per user, each user a slot
of the limiter) to a server without the admin API whose calls cost ``--user-cost-ms`` and which
answers 429 with ``Retry-After`` past ``--rate-limit`` calls a second.
"""

from __future__ import annotations

import argparse
import bisect
import io
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "helpers"), str(REPO / "tests" / "standins")]

from zitadel_fixtures import write_manifest  # noqa: E402 - after the sys.path set-up above

from transforms.output.manifest import load_manifest  # noqa: E402 - after the sys.path set-up above
from transforms.push.api_choice import ADMIN_IMPORT, USER_V2  # noqa: E402 - after the sys.path set-up above
from transforms.push.engine import push_manifest  # noqa: E402 - after the sys.path set-up above
from transforms.zitadel_api.credentials import Credentials  # noqa: E402 - after the sys.path set-up above

__all__ = ["main"]

TOKEN = "bench-token-not-a-secret"


def _start_server(token_file: str, flags: list[str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "standins" / "zitadel_server.py"), "--token-file", token_file]
        + flags,
        stdout=subprocess.PIPE,
        text=True,
    )
    url = proc.stdout.readline().strip() if proc.stdout else ""
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit("the test server did not start")
    return proc, url


def _stop_server(proc: subprocess.Popen) -> dict:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    for line in reversed(out.strip().splitlines()):
        if line.startswith('{"capacity"'):
            return json.loads(line)["capacity"]
    return {"arrivals": [], "refusals": []}


def _peak_rate(times: list[float], window: float) -> float:
    best = 0
    for i, start in enumerate(times):
        best = max(best, bisect.bisect_right(times, start + window, lo=i) - i)
    return best / window


def _run_once(
    manifest: pathlib.Path,
    token_file: str,
    flags: list[str],
    concurrency: int | None,
    settle: float,
    window: float,
    max_rate: float | None,
    api: str = ADMIN_IMPORT,
) -> dict:
    proc, url = _start_server(token_file, flags)
    try:
        results = tempfile.mkdtemp(prefix="push-limiter-")
        started = time.monotonic()
        report = push_manifest(
            load_manifest(str(manifest)),
            url,
            Credentials("token", token=TOKEN),
            results_dir=results,
            concurrency=concurrency,
            max_rate=max_rate,
            max_attempts=20,
            api=api,
            progress=False,
            stream=io.StringIO(),
        )
        wall = report.seconds  # the sending, after the checks every pace shares (precheck, probe)
    finally:
        seen = _stop_server(proc)
    expected = sum(b.users for b in report.bodies)
    calls = len(seen["arrivals"])
    late = sum(1 for t, _ in seen["refusals"] if t > started + settle)
    late_calls = sum(1 for t in seen["arrivals"] if t > started + settle)
    arrivals = sorted(seen["arrivals"])
    after = [t for t in arrivals if t > arrivals[0] + settle] if arrivals else []
    span = after[-1] - (arrivals[0] + settle) if after else 0.0
    return {
        "sustained": len(after) / span if span > 0 else 0.0,
        "wall": wall,
        "ok": report.ok and report.failed == 0 and report.created + report.present == expected,
        "calls": calls,
        "refused": len(seen["refusals"]),
        "late_share": late / late_calls if late_calls else 0.0,
        "peak_rate": _peak_rate(sorted(seen["arrivals"]), window),
        "settled": report.limiter.limit if report.limiter else 0,
    }


def _median(runs: list[dict]) -> dict:
    middle = sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]
    return {
        **middle,
        "wall": statistics.median(r["wall"] for r in runs),
        "ok": all(r["ok"] for r in runs),
        "late_share": max(r["late_share"] for r in runs),
        "peak_rate": max(r["peak_rate"] for r in runs),
        "sustained": max(r["sustained"] for r in runs),
    }


def _row(label: str, result: dict, best: float, one: float) -> str:
    return (
        f"{label:<23} {result['wall']:>7.2f} {result['wall'] / best:>8.2f} {one / result['wall']:>8.2f} "
        f"{result['calls']:>6} {result['refused']:>8} {100 * result['late_share']:>9.1f}% "
        f"{result['peak_rate']:>9.1f} {result['sustained']:>9.1f} {result['settled']:>8}  {'yes' if result['ok'] else 'NO'}"
    )


HEADER = (
    f"{'pace':<23} {'wall s':>7} {'x best':>8} {'x c=1':>8} {'calls':>6} {'refused':>8} "
    f"{'late ref':>10} {'peak r/s':>9} {'after r/s':>9} {'settled':>8}  ok"
)


def _case(
    args: argparse.Namespace,
    title: str,
    manifest: pathlib.Path,
    token_file: str,
    flags: list[str],
    levels: list[int],
    max_rate: float | None = None,
    api: str = ADMIN_IMPORT,
) -> None:
    # Interleaved: each repeat runs every pace once, so a machine that slows down mid-case slows
    # them all alike.
    paces: list[int | None] = [*levels, None]
    runs: dict[int | None, list[dict]] = {pace: [] for pace in paces}
    for _ in range(args.repeat):
        for pace in paces:
            runs[pace].append(
                _run_once(manifest, token_file, flags, pace, args.settle, args.window, max_rate, api)
            )

    print(f"\n{title}")
    fixed = {level: _median(runs[level]) for level in levels}
    adaptive = _median(runs[None])
    best_level = min(fixed, key=lambda level: fixed[level]["wall"])
    best, one = fixed[best_level]["wall"], fixed[min(levels)]["wall"]
    print(HEADER)
    print(_row("adaptive", adaptive, best, one))
    for level, result in fixed.items():
        mark = " (best)" if level == best_level else ""
        print(_row(f"--concurrency {level}{mark}", result, best, one))
    sys.stdout.flush()


def _user_v2_case(args: argparse.Namespace, work: pathlib.Path, token_file: str) -> None:
    """One call per user (the user service v2 create path) against a rate-limited target whose
    calls cost ``--user-cost-ms`` each: one call at a time is below the limit, a few are above."""
    users = int(args.rate_limit * args.rate_seconds)  # about --rate-seconds of calls at the limit
    manifest, _ = write_manifest(work / "user-v2", users=users, bodies=2, metadata=False)
    flags = ["--no-admin-api", "--org", "123", "--workers", "16", "--rate-limit", f"{args.rate_limit:g}"]
    flags += ["--per-user-delay-ms", f"{args.user_cost_ms:g}"]
    title = (
        f"user-v2: one create call per user, {args.user_cost_ms:g} ms per call, K = 16, "
        f"rate limit {args.rate_limit:g} calls/s: {users} users"
    )
    _case(args, title, manifest, token_file, flags, _levels(args, [1, 2, 3, 4, 8]), api=USER_V2)


def _levels(args: argparse.Namespace, default: list[int]) -> list[int]:
    """The fixed concurrencies a case sweeps: ``--levels`` where given (a long run sweeps less)."""
    return [int(level) for level in args.levels.split(",") if level] if args.levels else default


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20_000, help="users in all (default 20000)")
    parser.add_argument("--per-body", type=int, default=1000, help="users per body (default 1000)")
    parser.add_argument(
        "--workers", default="1,4,16", help="the targets' K, comma-separated (default 1,4,16)"
    )
    parser.add_argument(
        "--work-seconds",
        type=float,
        default=3.0,
        help="the target's total work at K workers (default 3 s): the per-user cost is K x this / users",
    )
    parser.add_argument(
        "--queue", type=int, default=None, help="calls waiting beyond K; 503 past it (default: any)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per setting; the median is shown (default 3)"
    )
    parser.add_argument(
        "--settle", type=float, default=3.0, help="seconds after which refusals count as late (default 3)"
    )
    parser.add_argument(
        "--window", type=float, default=2.0, help="seconds over which the peak rate is taken (default 2)"
    )
    parser.add_argument(
        "--rate-limit", type=float, default=20.0, help="the rate-limited case's calls/s (0: skip it)"
    )
    parser.add_argument(
        "--cases", default="workers,rate,user-v2", help="which cases to run (default workers,rate,user-v2)"
    )
    parser.add_argument(
        "--user-cost-ms", type=float, default=100.0, help="the user-v2 case's cost of one create call (ms)"
    )
    parser.add_argument(
        "--rate-seconds",
        type=float,
        default=10.0,
        help="how long the rate-limited cases send at the limit (default 10 s; 60 with --settle 30 "
        "measures the issue's 'after its first 30 s' as it is written)",
    )
    parser.add_argument(
        "--levels",
        default="",
        help="the fixed --concurrency values every case sweeps (default: each case's own)",
    )
    args = parser.parse_args(argv)
    cases = set(args.cases.split(","))
    work = pathlib.Path(tempfile.mkdtemp(prefix="push-limiter-"))
    token_file = str(work / "token")
    pathlib.Path(token_file).write_text(TOKEN)
    bodies = -(-args.users // args.per_body)
    manifest, _ = write_manifest(work / "bodies", users=args.users, bodies=bodies, metadata=False)
    print(
        f"{args.users} users in {bodies} bodies of {args.per_body}; {os.cpu_count()} cores; median of {args.repeat}"
    )
    for k in (int(k) for k in args.workers.split(",") if k and "workers" in cases):
        cost_ms = 1000.0 * k * args.work_seconds / args.users
        flags = ["--workers", str(k), "--per-user-delay-ms", f"{cost_ms:g}"]
        flags += ["--queue", str(args.queue)] if args.queue is not None else []
        levels = _levels(args, sorted({1, max(1, k // 2), k, 2 * k}))
        _case(
            args,
            f"K = {k} workers, {cost_ms:g} ms per user (ideal {args.work_seconds:g} s)",
            manifest,
            token_file,
            flags,
            levels,
        )
    if args.rate_limit and "user-v2" in cases:
        _user_v2_case(args, work, token_file)
    if args.rate_limit and "rate" in cases:
        small = work / "small"
        users = int(args.rate_limit * args.rate_seconds * 50)  # --rate-seconds of calls, 50 users each
        small_manifest, _ = write_manifest(small, users=users, bodies=users // 50, metadata=False)
        flags = ["--workers", "16", "--per-user-delay-ms", "1", "--rate-limit", f"{args.rate_limit:g}"]
        title = f"rate limit {args.rate_limit:g} calls/s, K = 16: {users} users in bodies of 50"
        _case(args, title, small_manifest, token_file, flags, _levels(args, [1, 2, 4, 8, 16]))
        _case(
            args,
            title + ", --max-rate 19",
            small_manifest,
            token_file,
            flags,
            _levels(args, [16]),
            max_rate=args.rate_limit * 0.95,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
