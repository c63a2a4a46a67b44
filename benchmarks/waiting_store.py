"""Benchmark: what ``--old-system-store`` adds to a migrate run (transforms/output/waiting.py).

    python benchmarks/waiting_store.py --users 100000 --repeat 3

On the synthetic Auth0 export of benchmarks/gen_auth0.py read without its hash export
(``--passwords=none``: every database user is written without a password, the case the flag is
for), runs ``migrate auth0`` without the flag (the baseline) and with it, interleaved so that
machine noise hits both alike, and prints the median wall and CPU seconds of each, their ratio,
and the users the store holds. This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile

from run import PY, ROOT, ensure_data, measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    users_file = ensure_data("auth0", args.users)[0]
    times: dict[str, list[tuple[float, float]]] = {"baseline": [], "--old-system-store": []}
    stored = 0
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.repeat):
            for mode in times:
                out = os.path.join(tmp, f"{round_}-{mode.strip('-')}")
                cmd = [PY, "-m", "pipeline", "migrate", "auth0", "--org=1", f"--users={users_file}",
                       "--passwords=none", f"--output={out}/importBody.json", "--quiet"]  # fmt: skip
                if mode != "baseline":
                    cmd.append(f"--old-system-store={out}/waiting.ndjson")
                wall, _, _, cpu = measure(cmd, cwd=ROOT)
                times[mode].append((wall, cpu))
                if mode != "baseline":
                    with open(f"{out}/waiting.ndjson", "rb") as handle:
                        stored = sum(1 for _ in handle)
                shutil.rmtree(out)
    base_wall = statistics.median(wall for wall, _ in times["baseline"])
    base_cpu = statistics.median(cpu for _, cpu in times["baseline"])
    print(f"{args.users} users, {args.repeat} interleaved rounds; the store holds {stored} users")
    print(f"{'run':<22}{'median wall s':>14}{'ratio':>8}{'median CPU s':>14}{'ratio':>8}")
    for mode, runs in times.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{mode:<22}{wall:>14.2f}{wall / base_wall:>7.2f}x{cpu:>14.2f}{cpu / base_cpu:>7.2f}x")


if __name__ == "__main__":
    main()
