"""Benchmark: what one legacy password check costs the companion, against a bcrypt check of cost 10.

    python benchmarks/companion_verify.py --checks 20 --repeat 5

Timed, interleaved ``--repeat`` times, ``--checks`` checks each (a right password every time, so
every check does the whole work):

- ``bcrypt cost 10``: ``bcrypt.checkpw`` of a cost-10 hash (the baseline: a check ZITADEL's own
  default-cost verifier makes on every sign-in);
- ``firebase-scrypt``: companion.verifiers on Firebase's published vector (N = 2^14, r = 8, p = 1,
  then AES-256-CTR: tests/data/firebase/scrypt-readme);
- ``django-bcrypt-sha256``, ``wordpress-bcrypt``: the project's cost-10 vectors.

It prints the median milliseconds per check and the ratio to the baseline. This is a benchmark,
not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import bcrypt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from companion.verifiers import verify  # noqa: E402 - after the path is set

DATA = os.path.join(ROOT, "tests", "data")


def _firebase() -> dict:
    config = {}
    with open(os.path.join(DATA, "firebase", "scrypt-readme", "hash_config.txt")) as handle:
        for line in handle:
            if ":" in line:
                key, value = line.split(":", 1)
                config[key.strip()] = value.strip().rstrip(",")
    with open(os.path.join(DATA, "firebase", "scrypt-readme", "users.csv")) as handle:
        fields = handle.read().split(",")
    params = {
        "salt": fields[4],
        "signer_key": config["base64_signer_key"],
        "salt_separator": config["base64_salt_separator"],
        "rounds": int(config["rounds"]),
        "mem_cost": int(config["mem_cost"]),
    }
    return {"form": "firebase-scrypt", "hash": fields[3], "params": params}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with open(os.path.join(DATA, "hash_forms_vectors.json")) as handle:
        refused = {v["form"]: v["value"] for v in json.load(handle)["refused"]}
    cost10 = bcrypt.hashpw(b"l\xc3\xa8tmein", bcrypt.gensalt(10))
    cases = {
        "bcrypt cost 10": lambda: bcrypt.checkpw(b"l\xc3\xa8tmein", cost10),
        "firebase-scrypt": lambda: verify(_firebase(), "user1password"),
        "django-bcrypt-sha256": lambda: verify(
            {"form": "django-bcrypt-sha256", "hash": refused["django-bcrypt-sha256"]}, "lètmein"
        ),
        "wordpress-bcrypt": lambda: verify(
            {"form": "wordpress-bcrypt", "hash": refused["wordpress-bcrypt"]}, "lètmein"
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, check in cases.items():
            start = time.perf_counter()
            for _ in range(args.checks):
                assert check(), name
            times[name].append((time.perf_counter() - start) / args.checks * 1000)
    base = statistics.median(times["bcrypt cost 10"])
    print(f"{'check':<24}{'median ms':>10}{'min':>8}{'max':>8}{'ratio':>8}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<24}{median:>10.1f}{min(values):>8.1f}{max(values):>8.1f}{median / base:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
