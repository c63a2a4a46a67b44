"""The same users pushed both ways: the admin import vs the user service v2 (``push --api``).

The test server (tests/standins/zitadel_server.py, in its own process so it does not share the GIL
with the client) spends ``--per-call-ms`` on every call (the round trip, authentication, the
gateway) and ``--per-user-ms`` on every user it creates, either way. The admin import pays the
per-call cost once per body; the user service once per user. Each cell is a fresh server and a
fresh ledger; the figure is the median of ``--repeat`` runs:

- users/s: users / the push's wall time (probe included);
- calls/user: the HTTP requests the client made (probe included) / users.

    .venv/bin/python benchmarks/push_api.py                              # 10k users, c = 1, 4, 16
    .venv/bin/python benchmarks/push_api.py --users 2000 --repeat 1      # a quick look
"""

from __future__ import annotations

import argparse
import io
import os
import pathlib
import statistics
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
ORG = "123"


def _start_server(token_file: str, args: argparse.Namespace, admin: bool) -> tuple[subprocess.Popen, str]:
    command = [
        sys.executable,
        str(REPO / "tests" / "standins" / "zitadel_server.py"),
        "--token-file",
        token_file,
    ]
    command += ["--per-user-delay-ms", str(args.per_user_ms), "--per-call-delay-ms", str(args.per_call_ms)]
    if not admin:  # a v5 server: the org exists before anything is pushed
        command += ["--no-admin-api", "--org", ORG]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip() if proc.stdout else ""
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit("the test server did not start")
    return proc, url


def _run_once(
    manifest: pathlib.Path, token_file: str, args: argparse.Namespace, api: str, level: int
) -> tuple[float, float, bool]:
    proc, url = _start_server(token_file, args, admin=api == "admin-import")
    try:
        results = tempfile.mkdtemp(prefix=f"push-api-{api}-c{level}-")
        started = time.monotonic()
        report = push_manifest(
            load_manifest(str(manifest)), url, Credentials("token", token=TOKEN), results_dir=results,
            concurrency=level, progress=False, stream=io.StringIO(), api=api,
        )  # fmt: skip
        wall = time.monotonic() - started
        return (
            args.users / wall,
            report.stats.requests / args.users,
            report.ok and report.created == args.users,
        )
    finally:
        proc.terminate()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000, help="users (default 10000)")
    parser.add_argument(
        "--users-per-body", type=int, default=1000, help="users per import body (default 1000)"
    )
    parser.add_argument("--per-user-ms", type=float, default=1.0, help="server work per user (default 1 ms)")
    parser.add_argument("--per-call-ms", type=float, default=5.0, help="server cost per call (default 5 ms)")
    parser.add_argument("--concurrency", default="1,4,16", help="comma-separated levels (default 1,4,16)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per cell; the median is shown (default 3)"
    )
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="push-api-")
    token_file = os.path.join(work, "token")
    pathlib.Path(token_file).write_text(TOKEN)
    bodies = -(-args.users // args.users_per_body)
    manifest, _ = write_manifest(pathlib.Path(work) / "bodies", users=args.users, bodies=bodies, org_id=ORG)
    print(
        f"{args.users} users in {bodies} bodies; server: {args.per_call_ms:g} ms per call, "
        f"{args.per_user_ms:g} ms per user; median of {args.repeat}"
    )
    print(f"{'api':>12} {'concurrency':>11} {'users/s':>8} {'calls/user':>10}  ok")
    for api in ("admin-import", "user-v2"):
        for level in (int(c) for c in args.concurrency.split(",")):
            runs = [_run_once(manifest, token_file, args, api, level) for _ in range(args.repeat)]
            rate = statistics.median(r[0] for r in runs)
            calls = statistics.median(r[1] for r in runs)
            print(
                f"{api:>12} {level:>11} {rate:>8.0f} {calls:>10.3f}  {'yes' if all(r[2] for r in runs) else 'NO'}"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
