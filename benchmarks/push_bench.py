"""Push throughput against the test server: wall time of ``--concurrency 1, 2, 4`` vs the ideal.

The test server (tests/standins/zitadel_server.py, in its own process so it does not share the GIL with the
client) spends ``--delay-ms`` per imported user, like the hosted endpoint's ~60 ms/user but faster.
The ideal wall time at concurrency c is the server's total work / c = users × delay / c.

    .venv/bin/python benchmarks/push_bench.py                       # 4 bodies × 5000 users, 2 ms
    .venv/bin/python benchmarks/push_bench.py --bodies 8 --concurrency 1,2,4,8
"""

from __future__ import annotations

import argparse
import io
import os
import pathlib
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "helpers"), str(REPO / "tests" / "standins")]

from zitadel_fixtures import write_manifest  # noqa: E402 - after the sys.path set-up above

from transforms.output.manifest import load_manifest  # noqa: E402 - after the sys.path set-up above
from transforms.push.engine import push_manifest  # noqa: E402 - after the sys.path set-up above
from transforms.zitadel_api.credentials import Credentials  # noqa: E402 - after the sys.path set-up above

__all__ = ["main"]

TOKEN = "bench-token-not-a-secret"


def _start_server(token_file: str, delay_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "tests" / "standins" / "zitadel_server.py"),
            "--token-file",
            token_file,
            "--per-user-delay-ms",
            str(delay_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = proc.stdout.readline().strip() if proc.stdout else ""
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit("the test server did not start")
    return proc, url


def _run_once(
    manifest: pathlib.Path, token_file: str, delay_ms: float, concurrency: int
) -> tuple[float, bool]:
    proc, url = _start_server(token_file, delay_ms)
    try:
        results = tempfile.mkdtemp(prefix=f"push-bench-c{concurrency}-")
        started = time.monotonic()
        report = push_manifest(
            load_manifest(str(manifest)),
            url,
            Credentials("token", token=TOKEN),
            results_dir=results,
            concurrency=concurrency,
            progress=False,
            stream=io.StringIO(),
        )
        return time.monotonic() - started, report.ok and report.created == report.bodies[0].users * len(
            report.bodies
        )
    finally:
        proc.terminate()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=4, help="number of bodies (default 4)")
    parser.add_argument("--users-per-body", type=int, default=5000, help="users per body (default 5000)")
    parser.add_argument("--delay-ms", type=float, default=2.0, help="server work per user in ms (default 2)")
    parser.add_argument("--concurrency", default="1,2,4", help="comma-separated levels (default 1,2,4)")
    args = parser.parse_args(argv)
    levels = [int(c) for c in args.concurrency.split(",")]
    work = tempfile.mkdtemp(prefix="push-bench-")
    token_file = os.path.join(work, "token")
    pathlib.Path(token_file).write_text(TOKEN)
    users = args.bodies * args.users_per_body
    manifest, _ = write_manifest(pathlib.Path(work) / "bodies", users=users, bodies=args.bodies)
    server_time = users * args.delay_ms / 1000.0
    print(
        f"{args.bodies} bodies × {args.users_per_body} users, {args.delay_ms:g} ms/user "
        f"(server work {server_time:.1f} s)"
    )
    print(
        f"{'concurrency':>11} {'wall s':>8} {'ideal s':>8} {'of ideal':>9} {'speed-up':>9} {'users/s':>8}  ok"
    )
    base = None
    for level in levels:
        wall, ok = _run_once(manifest, token_file, args.delay_ms, level)
        base = base or wall
        ideal = server_time / level
        print(
            f"{level:>11} {wall:>8.2f} {ideal:>8.2f} {ideal / wall:>9.2f} {base / wall:>9.2f} "
            f"{users / wall:>8.0f}  {'yes' if ok else 'NO'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
