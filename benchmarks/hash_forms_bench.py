"""Benchmark: per-value cost of forms.to_passwap against convert.parse_hash on the same run.

    python benchmarks/hash_forms_bench.py --values 200000 --repeat 5

A ``migrate table`` run will call ``to_passwap`` once per user where ``migrate auth0`` calls
``parse_hash`` (its password export's bcrypt strings). Timed, interleaved ``--repeat`` times:

- ``parse_hash``: convert.parse_hash over bcrypt strings (the baseline: what the Auth0 path pays);
- ``to_passwap <form>``: detection and rewrite over values of that form (bcrypt, Django pbkdf2,
  ASP.NET Core Identity v3, argon2, sha512crypt, an unrecognised value).

It prints the median microseconds per value and the ratio to the baseline. Values are distinct
(one salt byte varies) so no cache can help. This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from transforms.hashing.convert import parse_hash  # noqa: E402 - after the path is set
from transforms.hashing.forms import to_passwap  # noqa: E402

_CRYPT = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _values(count: int) -> dict[str, list[str]]:
    def crypt(i: int, width: int) -> str:
        return "".join(_CRYPT[(i >> (6 * k)) % 64] for k in range(width))

    v3 = [
        bytes([1, 0, 0, 0, 2, 0, 1, 0x86, 0xA0, 0, 0, 0, 16]) + i.to_bytes(16, "big") + bytes(32)
        for i in range(count)
    ]
    return {
        "bcrypt": [f"$2b$10${crypt(i, 22)}{'a' * 31}" for i in range(count)],
        "django-pbkdf2-sha256": [f"pbkdf2_sha256$600000${crypt(i, 22)}${'A' * 43}=" for i in range(count)],
        "aspnet-identity-v3": [base64.b64encode(raw).decode() for raw in v3],
        "argon2": [
            f"$argon2id$v=19$m=65536,t=3,p=4${crypt(i, 22).replace('.', 'A')}${'A' * 43}"
            for i in range(count)
        ],
        "sha512crypt": [f"$6$rounds=656000${crypt(i, 16)}${'a' * 86}" for i in range(count)],
        "unrecognised": [f"{crypt(i, 20)}-not-a-hash" for i in range(count)],
    }


def _time(function, values: list[str]) -> float:
    start = time.perf_counter()
    for value in values:
        function(value)
    return (time.perf_counter() - start) / len(values) * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=200_000, help="values per form")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds; the median is reported")
    args = parser.parse_args(argv)
    values = _values(args.values)
    for form, items in values.items():  # every value is what the form says (a broken set would time refusals)
        assert all(to_passwap(v).encoded for v in items[:100]) or form == "unrecognised", form
    timings: dict[str, list[float]] = {"parse_hash bcrypt (baseline)": []}
    for _ in range(args.repeat):
        timings["parse_hash bcrypt (baseline)"].append(_time(parse_hash, values["bcrypt"]))
        for form, items in values.items():
            timings.setdefault(f"to_passwap {form}", []).append(_time(to_passwap, items))
    baseline = statistics.median(timings["parse_hash bcrypt (baseline)"])
    print(f"{'':34} {'µs/value':>9} {'x baseline':>10}")
    for name, runs in timings.items():
        median = statistics.median(runs)
        print(f"{name:34} {median:9.2f} {median / baseline:10.2f}")


if __name__ == "__main__":
    main()
