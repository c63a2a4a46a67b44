"""Benchmark: a nightly ``migrate --state`` against a plain ``migrate`` of the same export.

    python benchmarks/sync_bench.py --users 1000000 --repeat 3 --changed 0.01

Set-up (once per size, not timed): the synthetic Auth0 export of benchmarks/gen_auth0.py is day 1;
``migrate --state`` of day 1 writes its bodies, and the state is committed as if push had
confirmed every user (``transforms.sync.apply.commit_state`` with every body user confirmed, the
same code push runs). Day 2 is day 1 with ``--changed`` of the profiles given a new
``given_name``, in the same file layout.

Timed, interleaved ``--repeat`` times so machine noise hits both alike:

- ``plain``: ``migrate auth0`` of day 2 (no state: every user into bodies);
- ``sync``: ``migrate auth0 --state`` of day 2 (the state is not changed: migrate never commits).

It reports median wall time and peak RSS (process tree, sampled every 50 ms) with the ratios
sync/plain, and checks the outcome: the sync run's change files hold exactly the changed users,
and a ``--state`` run of day 1 (nothing changed) writes no body, no change file, and plans no call.
This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys

import orjson

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from run import PY, ensure_data, measure  # noqa: E402 - benchmarks/run.py, after the path is set


def _day2(day1: list[str], out: str, fraction: float) -> tuple[list[str], int]:
    """Day 1's files with every ``1/fraction``-th valid profile renamed; returns files and count."""
    os.makedirs(out, exist_ok=True)
    users, passwords = day1
    target = os.path.join(out, "users.json")
    step = max(1, round(1 / fraction)) if fraction > 0 else 0
    changed = 0
    with open(users, "rb") as src, open(target, "wb") as dst:
        for index, line in enumerate(src):
            if step and index % step == 0:
                try:
                    profile = orjson.loads(line)
                except orjson.JSONDecodeError:
                    profile = None
                if isinstance(profile, dict) and profile.get("user_id") and profile.get("email"):
                    profile["given_name"] = "Changed" + str(profile.get("given_name", ""))
                    line = orjson.dumps(profile) + b"\n"
                    changed += 1
            dst.write(line)
    return [target, passwords], changed


def _migrate(files: list[str], output: str, state: str | None) -> list[str]:
    cmd = [
        PY,
        "-m",
        "pipeline",
        "migrate",
        "auth0",
        "--org=123",
        f"--users={files[0]}",
        f"--passwords={files[1]}",
        f"--output={output}",
    ]
    return cmd + ([f"--state={state}"] if state else [])


def _commit_all(manifest_path: str) -> int:
    """Commit the state of a manifest as if push had confirmed every user of its bodies."""
    from transforms.output.manifest import load_manifest, read_body
    from transforms.sync.apply import SyncReport, commit_state

    manifest = load_manifest(manifest_path)
    confirmed = {}
    for ref in manifest.bodies:
        body = json.loads(read_body(ref))
        confirmed[ref.index] = {
            u["userId"] for org in body["dataOrgs"]["orgs"] for u in org.get("humanUsers") or []
        }
    report = SyncReport([], 0.0, 0)
    commit_state(manifest, confirmed, [], report)
    return sum(len(v) for v in confirmed.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--changed", type=float, default=0.01, help="fraction of profiles changed on day 2")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    day1 = ensure_data("auth0", args.users)
    work = os.path.join(HERE, "results", f"sync-{args.users}")
    shutil.rmtree(work, ignore_errors=True)
    state = os.path.join(work, "state")
    wall, rss, _, _ = measure(_migrate(day1, f"{work}/day1/importBody.json", state))
    committed = _commit_all(f"{work}/day1/importBody.manifest.json")
    print(
        f"set-up: day 1 with --state {wall:.1f} s, {rss:,} MiB; state committed: {committed:,} users",
        file=sys.stderr,
    )
    day2, changed = _day2(day1, os.path.join(work, "day2-input"), args.changed)

    # Nothing changed: day 1 again writes nothing and plans no call.
    measure(_migrate(day1, f"{work}/same/importBody.json", state))
    with open(f"{work}/same/importBody.manifest.json") as handle:
        same = json.load(handle)
    nothing = (
        not same["bodies"]
        and not same["sync"]["changes"]
        and same["sync"]["counts"].get("calls", 0) == 0
        and not [n for n in os.listdir(f"{work}/same") if ".changes-" in n or n == "importBody.json"]
    )
    print(
        f"day 1 again: bodies {len(same['bodies'])}, change files {len(same['sync']['changes'])}, "
        f"calls {same['sync']['counts'].get('calls', 0)} -> {'nothing written or sent' if nothing else 'UNEXPECTED'}",
        file=sys.stderr,
    )

    runs: dict[str, list[tuple[float, int]]] = {"plain": [], "sync": []}
    for _ in range(args.repeat):
        for name in runs:
            out = f"{work}/{name}"
            shutil.rmtree(out, ignore_errors=True)
            wall, rss, _, _ = measure(
                _migrate(day2, f"{out}/importBody.json", state if name == "sync" else None)
            )
            runs[name].append((wall, rss))
            print(f"  {args.users:>9,} {name:<6} {wall:7.1f} s {rss:7,} MiB", file=sys.stderr)
    with open(f"{work}/sync/importBody.manifest.json") as handle:
        synced = json.load(handle)
    change_users = sum(c["users"] for c in synced["sync"]["changes"])
    plain_wall = statistics.median(w for w, _ in runs["plain"])
    plain_rss = statistics.median(r for _, r in runs["plain"])
    print(f"\nAuth0 {args.users:,} users, {changed:,} changed ({args.changed:.1%}), median of {args.repeat}:")
    print(f"{'run':<8}{'wall s':>9}{'peak RSS MiB':>14}{'wall ratio':>12}{'RSS ratio':>11}")
    results = []
    for name, values in runs.items():
        wall = statistics.median(w for w, _ in values)
        rss = statistics.median(r for _, r in values)
        print(f"{name:<8}{wall:9.1f}{rss:14,}{wall / plain_wall:12.2f}{rss / plain_rss:11.2f}")
        results.append(
            {
                "run": name,
                "users": args.users,
                "wall_s": round(wall, 2),
                "peak_rss_mib": rss,
                "wall_ratio": round(wall / plain_wall, 3),
                "rss_ratio": round(rss / plain_rss, 3),
                "walls": [round(w, 2) for w, _ in values],
            }
        )
    print(
        f"sync run: {change_users:,} users in change files (expected {changed:,}), "
        f"unchanged {synced['sync']['counts'].get('unchanged', 0):,}, bodies {len(synced['bodies'])}"
    )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                {
                    "runs": results,
                    "changed": changed,
                    "change_users": change_users,
                    "nothing_changed_run_writes_nothing": nothing,
                },
                handle,
                indent=2,
            )


if __name__ == "__main__":
    main()
