"""The three ways a push starts, on the same target: ``push``, ``migrate --push-url`` and ``copy``.

All three run one push entry (pipeline/push_entry.py) with the same defaults (the adaptive pace),
so their sending should take the same time; before it, ``migrate --push-url`` and ``copy`` sent
one body at a time. Each run starts a fresh stand-in server (tests/standins/zitadel_server.py) in
its own process with ``--workers K`` imports served at once and a per-user cost, and times the
sending as the push's own table reports it (its ``total`` row's seconds: the same table for the
three commands, after the checks and the probe every entry shares).

- ``push``: ``migrate auth0`` writes the bodies of a generated Auth0 export (not timed), then
  ``push --manifest`` sends them;
- ``migrate --push-url``: the same export, converted and sent in one command;
- ``copy``: a source instance is loaded with the same bodies first (not timed), then ``copy``
  exports it and sends its users to a fresh target in bodies of the same size.

Runs are interleaved (push, migrate, copy, push, ...) ``--repeat`` times; the table gives medians
and each median's ratio to push's.

    .venv/bin/python benchmarks/push_entries.py                     # 20,000 users, 80 bodies, K=16
    .venv/bin/python benchmarks/push_entries.py --users 5000 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pipeline"]
TOKEN = "bench-token-0123456789"
ORG = "123456789"
TOTAL = re.compile(r"^total\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(ok|FAILED)$", re.M)


def _start_server(token_file: pathlib.Path, flags: list[str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "tests" / "standins" / "zitadel_server.py"),
            "--token-file",
            str(token_file),
        ]
        + flags,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = proc.stdout.readline().strip() if proc.stdout else ""
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit("the test server did not start")
    return proc, url


def _stop_server(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(CLI + argv, cwd=REPO, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout + done.stderr


def _sending(output: str, users: int, what: str) -> float:
    """The push table's total seconds (the last table in ``output``), after checking that every
    user of the bodies (``users``: the generator dead-letters a few on purpose) was created."""
    rows = TOTAL.findall(output)
    if not rows:
        raise SystemExit(f"{what}: no push table in its output:\n{output[-2000:]}")
    total, created, present, failed, _requests, seconds, status = rows[-1]
    if status != "ok" or int(failed) or int(created) + int(present) != users or int(total) != users:
        raise SystemExit(f"{what}: not every user was created: {rows[-1]}")
    return float(seconds)


class Bench:
    def __init__(self, args: argparse.Namespace, work: pathlib.Path):
        self.args = args
        self.work = work
        self.token_file = work / "token"
        self.token_file.write_text(TOKEN)
        os.chmod(self.token_file, 0o600)
        self.server_flags = ["--workers", str(args.workers), "--per-user-delay-ms", f"{args.user_cost_ms:g}"]
        users, passwords = work / "users.json", work / "passwords.json"
        subprocess.run(
            [
                sys.executable,
                str(REPO / "benchmarks" / "gen_auth0.py"),
                "--users",
                str(args.users),
                "--out",
                str(work),
            ],
            check=True,
            capture_output=True,
        )
        self.source = [
            f"--users={users}",
            f"--passwords={passwords}",
            f"--org={ORG}",
            f"--batch-size={args.per_body}",
        ]
        self.manifest = work / "bodies" / "importBody.manifest.json"
        _run(
            ["migrate", "auth0", *self.source, f"--output={work / 'bodies' / 'importBody.json'}", "--quiet"],
            "migrate",
        )
        self.users = json.loads(self.manifest.read_text())["counts"]["users_written"]

    def push(self, n: int) -> float:
        proc, url = _start_server(self.token_file, self.server_flags)
        try:
            out = _run(
                [
                    "push",
                    f"--url={url}",
                    f"--token-file={self.token_file}",
                    f"--manifest={self.manifest}",
                    f"--results={self.work / f'push-{n}.results.ndjson'}",
                    "--quiet",
                ],
                "push",
            )
        finally:
            _stop_server(proc)
        return _sending(out, self.users, "push")

    def migrate(self, n: int) -> float:
        proc, url = _start_server(self.token_file, self.server_flags)
        try:
            out = _run(
                [
                    "migrate",
                    "auth0",
                    *self.source,
                    f"--output={self.work / f'migrate-{n}' / 'importBody.json'}",
                    f"--push-url={url}",
                    f"--token-file={self.token_file}",
                    "--quiet",
                ],
                "migrate --push-url",
            )
        finally:
            _stop_server(proc)
        return _sending(out, self.users, "migrate --push-url")

    def copy(self, n: int) -> float:
        source, source_url = _start_server(self.token_file, ["--workers", "16"])
        target, target_url = _start_server(self.token_file, self.server_flags)
        try:
            _run(
                [
                    "push",
                    f"--url={source_url}",
                    f"--token-file={self.token_file}",
                    f"--manifest={self.manifest}",
                    f"--results={self.work / f'load-{n}.results.ndjson'}",
                    "--quiet",
                ],
                "loading the source instance",
            )
            out = _run(
                [
                    "copy",
                    f"--source-url={source_url}",
                    f"--target-url={target_url}",
                    f"--source-token-file={self.token_file}",
                    f"--target-token-file={self.token_file}",
                    f"--work-dir={self.work / f'copy-{n}'}",
                    f"--batch-size={self.args.per_body}",
                    "--quiet",
                ],
                "copy",
            )
        finally:
            _stop_server(source)
            _stop_server(target)
        return _sending(out, self.users, "copy")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--per-body", type=int, default=250, help="users per body (default 250: 80 bodies)")
    parser.add_argument("--workers", type=int, default=16, help="imports the target serves at once (K)")
    parser.add_argument("--user-cost-ms", type=float, default=1.0, help="the target's cost per user imported")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--entries",
        default="push,migrate,copy",
        help="which entries to run, comma-separated (push is the base)",
    )
    args = parser.parse_args(argv)
    wanted = set(args.entries.split(","))
    with tempfile.TemporaryDirectory(prefix="push-entries-") as tmp:
        bench = Bench(args, pathlib.Path(tmp))
        entries = {"push": bench.push, "migrate --push-url": bench.migrate, "copy": bench.copy}
        entries = {name: run for name, run in entries.items() if name.split()[0] in wanted | {"push"}}
        times: dict[str, list[float]] = {name: [] for name in entries}
        for n in range(args.repeat):
            for name, run in entries.items():
                times[name].append(run(n))
            print(f"run {n + 1}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in times.items()), flush=True)
    base = statistics.median(times["push"])
    print(
        f"\n{args.users} users in bodies of {args.per_body}, target K={args.workers}, "
        f"{args.user_cost_ms:g} ms per user, {args.repeat} interleaved runs; no pace flag"
    )
    print(f"{'entry':<20} {'median s':>9} {'runs':>24} {'/ push':>7}")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"{name:<20} {median:>9.1f} {' '.join(f'{r:.1f}' for r in runs):>24} {median / base:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
