"""Benchmark: the Beam pipeline (through the CLI) against the plain single-process baseline.

    python benchmarks/run.py --users 100000 1000000 --repeat 3
    python benchmarks/run.py --users 1000000 --modes single multi --repeat 3

For each size it generates (once, cached under benchmarks/data/) a synthetic Auth0 export,
then runs, interleaved so that machine noise hits all alike, ``--repeat`` times each:

- ``baseline``: benchmarks/baseline_auth0.py, one process, orjson, no Beam;
- ``single``: ``zitadel-beam migrate auth0`` on the FnApiRunner, in-process;
- ``multi``: the same with ``--direct_running_mode=multi_processing --direct_num_workers=2``.

It reports the median wall time, users/s and peak RSS (the sum over the whole process tree,
sampled every 50 ms, so worker processes count), the ratios to the baseline, and checks that the
pipeline's bodies are byte-identical to the baseline's (sha256). This is a benchmark, not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = sys.executable


def _tree_rss_kb(root_pid: int) -> int:
    """Sum of VmRSS over root_pid and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as handle:
                ppid, value = 0, 0
                for line in handle:
                    if line.startswith("PPid:"):
                        ppid = int(line.split()[1])
                    elif line.startswith("VmRSS:"):
                        value = int(line.split()[1])
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(name))
        rss[int(name)] = value
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def measure(cmd: list[str]) -> tuple[float, int, str]:
    """Run cmd; return (wall seconds, peak tree RSS in MiB, stdout)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.monotonic() - started
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{err.decode()[-2000:]}")
    return wall, peak[0] // 1024, out.decode()


def ensure_data(n: int) -> str:
    out = os.path.join(HERE, "data", f"auth0-{n}")
    if not os.path.exists(os.path.join(out, "passwords.json")):
        subprocess.run([PY, os.path.join(HERE, "gen_auth0.py"), "--users", str(n), "--out", out], check=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[100_000])
    parser.add_argument("--modes", nargs="+", default=["single", "multi"], choices=["single", "multi"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    results = []
    for n in args.users:
        data = ensure_data(n)
        users, passwords = os.path.join(data, "users.json"), os.path.join(data, "passwords.json")
        size_mb = (os.path.getsize(users) + os.path.getsize(passwords)) / 2**20
        work = os.path.join(HERE, "results", f"auth0-{n}")
        commands = {
            "baseline": [PY, os.path.join(HERE, "baseline_auth0.py"), "--org=123", f"--users={users}",
                         f"--passwords={passwords}", f"--output={work}/baseline/importBody.json"],
        }
        for mode in args.modes:
            extra = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"] if mode == "multi" else []
            commands[mode] = [PY, "-m", "pipeline", "migrate", "auth0", "--org=123", f"--users={users}",
                              f"--passwords={passwords}", f"--output={work}/{mode}/importBody.json", *extra]
        runs: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
        digests: dict[str, list[str]] = {}
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                shutil.rmtree(os.path.join(work, name), ignore_errors=True)
                wall, rss, out = measure(cmd)
                runs[name].append((wall, rss))
                if name == "baseline":
                    digests[name] = json.loads(out.strip().splitlines()[-1])["sha256"]
                else:
                    with open(os.path.join(work, name, "importBody.manifest.json")) as handle:
                        digests[name] = [b["sha256"] for b in json.load(handle)["bodies"]]
                print(f"  {n:>9,} {name:<8} {wall:7.1f} s {rss:7,} MiB", file=sys.stderr)
        base_wall = statistics.median(w for w, _ in runs["baseline"])
        base_rss = statistics.median(r for _, r in runs["baseline"])
        print(f"\n{n:,} users ({size_mb:,.0f} MB of input), median of {args.repeat}:")
        print(f"{'run':<10}{'wall s':>9}{'users/s':>11}{'peak RSS MiB':>14}{'wall ratio':>12}{'RSS ratio':>11}  same bodies")
        for name, values in runs.items():
            wall = statistics.median(w for w, _ in values)
            rss = statistics.median(r for _, r in values)
            same = digests[name] == digests["baseline"]
            print(f"{name:<10}{wall:9.1f}{n / wall:11,.0f}{rss:14,}{wall / base_wall:12.2f}{rss / base_rss:11.2f}  {same}")
            results.append({"users": n, "run": name, "wall_s": round(wall, 2), "peak_rss_mib": rss,
                            "wall_ratio": round(wall / base_wall, 3), "rss_ratio": round(rss / base_rss, 3),
                            "same_bodies": same, "walls": [round(w, 2) for w, _ in values]})
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
