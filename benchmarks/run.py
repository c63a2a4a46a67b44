"""Benchmark: the Beam pipeline (through the CLI) against the plain single-process baseline.

    python benchmarks/run.py --users 100000 1000000 --repeat 3
    python benchmarks/run.py --source keycloak --users 100000 1000000 --repeat 3
    python benchmarks/run.py --users 5000000 --modes multi --no-baseline
    python benchmarks/run.py --users 1000000 --before ../zitadel-beam-v1 --modes single multi

For each size it generates (once, cached under benchmarks/data/) a synthetic Auth0 export or
Keycloak realm, then runs, interleaved so that machine noise hits all alike, ``--repeat`` times
each:

- ``baseline``: benchmarks/baseline_<source>.py, the plain single-process converter;
- ``single``: ``zitadel-beam migrate auth0`` on the FnApiRunner, in-process;
- ``multi``: the same with ``--direct_running_mode=multi_processing --direct_num_workers=2``;
- with ``--roles`` (Auth0): ``<mode>+roles``, the same run carrying every user's
  ``app_metadata.roles`` as project roles and grants (``--project-id``, docs/roles.md);
- with ``--table`` (Auth0): ``<mode>+table``, ``migrate table`` on one CSV of the same users with
  their newest hashes (benchmarks/gen_table.py, generated once beside the export); with
  ``--table-only``, only those (and, with ``--before``, ``<mode>+table@before``);
- with ``--before DIR`` (another checkout of this project, e.g. ``git worktree add DIR <commit>``):
  ``single@before`` / ``multi@before``, the same commands run from that checkout's code with this
  checkout's interpreter, interleaved with the others, so a change is measured before and after
  in one run on the same noise.

It reports the median wall time, users/s and peak RSS (the sum over the whole process tree,
sampled every 50 ms, so worker processes count), the ratios to the baseline, and checks that the
pipeline's bodies are byte-identical to the baseline's (sha256). This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = sys.executable
sys.path.insert(0, HERE)
from gen_table import MAPPING as TABLE_MAPPING  # noqa: E402  (benchmarks/ is not a package)


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


def measure(cmd: list[str], cwd: str = ROOT) -> tuple[float, int, str, float]:
    """Run cmd in ``cwd``; return (wall seconds, peak tree RSS in MiB, stdout, CPU seconds).

    CPU seconds are user + system time of the command and every process it waited for (Beam's
    workers): on a machine other work keeps busy they move far less than the wall time does.

    ``python -m pipeline`` imports the ``pipeline`` package of ``cwd`` (the current directory
    comes first on ``sys.path``), which is how ``--before`` runs another checkout's code.
    """
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{err.decode()[-2000:]}")
    return wall, peak[0] // 1024, out.decode(), cpu


def ensure_data(source: str, n: int, split: int = 0) -> list[str]:
    """The input files of a synthetic export of ``n`` users (generated once).

    For a split Keycloak export the one "file" returned is the export directory.
    """
    if source == "auth0":
        out = os.path.join(HERE, "data", f"auth0-{n}")
        files = [os.path.join(out, "users.json"), os.path.join(out, "passwords.json")]
        generate = [PY, os.path.join(HERE, "gen_auth0.py"), "--users", str(n), "--out", out]
        if not all(os.path.exists(f) for f in files):
            subprocess.run(generate, check=True)
        return files
    out = os.path.join(HERE, "data", f"keycloak-split{split}-{n}" if split else f"keycloak-{n}")
    generate = [PY, os.path.join(HERE, "gen_keycloak.py"), "--users", str(n), "--out", out]
    if split:
        generate += ["--split", str(split)]
    if not os.path.exists(os.path.join(out, "acme-realm.json")):
        subprocess.run(generate, check=True)
    return [out] if split else [os.path.join(out, "acme-realm.json")]


def ensure_table(auth0_files: list[str], n: int) -> str:
    """The CSV of the same users as the Auth0 export (benchmarks/gen_table.py, generated once)."""
    out = os.path.join(HERE, "data", f"table-{n}")
    path = os.path.join(out, "users.csv")
    if not os.path.exists(path):
        generate = [PY, os.path.join(HERE, "gen_table.py"), "--auth0", os.path.dirname(auth0_files[0])]
        subprocess.run([*generate, "--out", out], check=True)
    return path


def input_size(files: list[str]) -> int:
    total = 0
    for path in files:
        if os.path.isdir(path):
            total += sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path))
        else:
            total += os.path.getsize(path)
    return total


def commands(
    source: str,
    files: list[str],
    work: str,
    modes: list[str],
    baseline: bool,
    before: str | None = None,
    roles: bool = False,
    table: str | None = None,
    table_only: bool = False,
) -> dict[str, tuple[str, list[str]]]:
    """Each run's name → (working directory, command)."""
    if source == "auth0":
        inputs = [f"--users={files[0]}", f"--passwords={files[1]}"]
    else:
        inputs = [f"--realm={files[0]}"]
    out: dict[str, tuple[str, list[str]]] = {}
    if baseline:
        out["baseline"] = (
            ROOT,
            [
                PY,
                os.path.join(HERE, f"baseline_{source}.py"),
                "--org=123",
                *inputs,
                f"--output={work}/baseline/importBody.json",
            ],
        )
    trees = [("", ROOT)] + ([("@before", os.path.abspath(before))] if before else [])
    for mode in modes:
        extra = (
            ["--direct_running_mode=multi_processing", "--direct_num_workers=2"] if mode == "multi" else []
        )
        for suffix, tree in trees if not table_only else ():
            out[mode + suffix] = (
                tree,
                [
                    PY,
                    "-m",
                    "pipeline",
                    "migrate",
                    source,
                    "--org=123",
                    *inputs,
                    f"--output={work}/{mode + suffix}/importBody.json",
                    *extra,
                ],
            )
        for suffix, tree in trees if table else ():  # the same users as one CSV (gen_table.py)
            out[mode + "+table" + suffix] = (
                tree,
                [
                    PY,
                    "-m",
                    "pipeline",
                    "migrate",
                    "table",
                    "--org=123",
                    f"--input={table}",
                    *TABLE_MAPPING,
                    f"--output={work}/{mode}+table{suffix}/importBody.json",
                    *extra,
                ],
            )
        if roles:
            out[mode + "+roles"] = (
                ROOT,
                [
                    PY,
                    "-m",
                    "pipeline",
                    "migrate",
                    source,
                    "--org=123",
                    *inputs,
                    f"--output={work}/{mode}+roles/importBody.json",
                    "--project-id=2873423",
                    "--create-project=Benchmark",
                    "--roles-from=app_metadata.roles",
                    *extra,
                ],
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=["auth0", "keycloak"], default="auth0")
    parser.add_argument("--users", type=int, nargs="+", default=[100_000])
    parser.add_argument(
        "--split",
        type=int,
        default=0,
        help="keycloak: a split export with this many users per file (no baseline)",
    )
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the baseline (it holds every record in memory: ~9 GB per 1M Auth0 users)",
    )
    parser.add_argument("--modes", nargs="+", default=["single", "multi"], choices=["single", "multi"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument(
        "--roles",
        action="store_true",
        help="auth0: also run each mode carrying the users' roles as grants (<mode>+roles)",
    )
    parser.add_argument(
        "--table",
        action="store_true",
        help="auth0: also run each mode as migrate table on a CSV of the same users (<mode>+table)",
    )
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="with --table: only the migrate table runs (and their @before runs)",
    )
    parser.add_argument(
        "--before",
        metavar="DIR",
        help="another checkout of this project: also run its code (runs named <mode>@before)",
    )
    args = parser.parse_args()
    results = []
    for n in args.users:
        files = ensure_data(args.source, n, args.split)
        size_mb = input_size(files) / 2**20
        work = os.path.join(HERE, "results", f"{args.source}-{n}")
        cmds = commands(
            args.source,
            files,
            work,
            args.modes,
            not (args.no_baseline or args.split),
            args.before,
            args.roles and args.source == "auth0",
            ensure_table(files, n) if args.table and args.source == "auth0" else None,
            args.table_only and args.table,
        )
        runs: dict[str, list[tuple[float, int, float]]] = {name: [] for name in cmds}
        digests: dict[str, list[str]] = {}
        for _ in range(args.repeat):
            for name, (cwd, cmd) in cmds.items():
                shutil.rmtree(os.path.join(work, name), ignore_errors=True)
                wall, rss, out, cpu = measure(cmd, cwd)
                runs[name].append((wall, rss, cpu))
                if name == "baseline":
                    digests[name] = json.loads(out.strip().splitlines()[-1])["sha256"]
                else:
                    with open(os.path.join(work, name, "importBody.manifest.json")) as handle:
                        digests[name] = [b["sha256"] for b in json.load(handle)["bodies"]]
                print(f"  {n:>9,} {name:<14} {wall:7.1f} s {cpu:7.1f} CPU s {rss:7,} MiB", file=sys.stderr)
        reference = "baseline" if "baseline" in runs else next(iter(runs))
        base_wall = statistics.median(w for w, _, _ in runs[reference])
        base_rss = statistics.median(r for _, r, _ in runs[reference])
        base_cpu = statistics.median(c for _, _, c in runs[reference])
        label = f"{args.source} (split, {args.split:,} users a file)" if args.split else args.source
        print(
            f"\n{label} {n:,} users ({size_mb:,.0f} MB of input), median of {args.repeat}; ratios to {reference}:"
        )
        print(
            f"{'run':<14}{'wall s':>9}{'CPU s':>9}{'users/s':>11}{'peak RSS MiB':>14}{'wall ratio':>12}"
            f"{'CPU ratio':>11}{'RSS ratio':>11}  same bodies"
        )
        for name, values in runs.items():
            wall = statistics.median(w for w, _, _ in values)
            rss = statistics.median(r for _, r, _ in values)
            cpu = statistics.median(c for _, _, c in values)
            # A +roles run writes one more body (the authorizations) and grants, a +table run reads
            # another source (no locale, nickname): not comparable.
            # A +table@before run is compared with its +table run.
            if "+table@" in name:
                same = digests[name] == digests[name.split("@")[0]]
            else:
                same = (
                    digests[name] == digests[reference] if not name.endswith(("+roles", "+table")) else "n/a"
                )
            print(
                f"{name:<14}{wall:9.1f}{cpu:9.1f}{n / wall:11,.0f}{rss:14,}{wall / base_wall:12.2f}"
                f"{cpu / base_cpu:11.2f}{rss / base_rss:11.2f}  {same}"
            )
            results.append(
                {
                    "source": label,
                    "users": n,
                    "input_mb": round(size_mb),
                    "run": name,
                    "wall_s": round(wall, 2),
                    "peak_rss_mib": rss,
                    "reference": reference,
                    "wall_ratio": round(wall / base_wall, 3),
                    "rss_ratio": round(rss / base_rss, 3),
                    "same_bodies": same,
                    "cpu_s": round(cpu, 2),
                    "cpu_ratio": round(cpu / base_cpu, 3),
                    "walls": [round(w, 2) for w, _, _ in values],
                    "cpus": [round(c, 2) for _, _, c in values],
                }
            )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
