"""Two scheduled nights under faults: what fails, what is sent twice (docs/sync.md#unknown-outcomes).

The scenario of tests/scenarios/test_sync_faults.py at a larger size: day 1 imports ``--users`` Auth0 users
(the last tenth blocked at the source, imported with --include-blocked), day 2 changes them in every
way a live source does (names, hashes, e-mails and their verified flags, phones, metadata; users
blocked, unblocked, removed and new). Each night runs against the test server
(tests/standins/zitadel_server.py) with ``--rate`` of the calls failing with one fault kind
(``503`` before the work, ``drop``: the connection closed with no answer, ``504_after``: a gateway's
504 after the work, ``deadline_after``: ZITADEL's own 504 ``context deadline exceeded`` after the
work; ``503+drop+deadline_after``: those kinds mixed in one run), on the import, the user service
and the management paths. Printed per kind:
the nights' exit statuses, the change calls that failed, the effects beyond those of the same two
nights without faults (a password written twice, a state change or phone removal repeated,
metadata set again by a change call), the calls refused because their effect was already there,
and the users whose day-2 password is not held.

    .venv/bin/python benchmarks/fault_nights.py --users 3000
    .venv/bin/python benchmarks/fault_nights.py --users 3000 --code /path/to/another/checkout
    .venv/bin/python benchmarks/fault_nights.py --kinds 503+drop+deadline_after,deadline_after
"""

from __future__ import annotations

import argparse
import contextlib
import io
import pathlib
import re
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent

__all__ = ["main"]


def _quiet(run, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        return run(*args), out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=3000, help="day 1's users (default 3000)")
    parser.add_argument("--rate", type=float, default=0.3, help="share of calls that fail (default 0.3)")
    parser.add_argument("--kinds", default="503,drop,504_after", help="fault kinds, one run each")
    parser.add_argument(
        "--code", help="another checkout whose pipeline/ and transforms/ to measure (default this one)"
    )
    args = parser.parse_args(argv)
    sys.path[:0] = [
        args.code or str(REPO),
        str(REPO),
        str(REPO / "tests" / "helpers"),
        str(REPO / "tests" / "standins"),
    ]
    from zitadel_fixtures import PAT, hash_pool
    from zitadel_server import ZitadelServer

    from tests.scenarios import test_sync_faults as scenario
    from tests.scenarios.test_sync_nights import Day

    hashes = hash_pool(4)
    import pipeline.migrate_options as options

    flags = ["--include-blocked", "--on-removed=deactivate", "--quiet"]
    if "--max-blocks" in pathlib.Path(options.__file__).read_text():
        flags += ["--max-removals=20%", "--max-blocks=25%"]
    else:  # code from before the guards were split: one guard counted removals and blocks together
        flags += ["--max-removals=1000000"]  # a count: a percentage of an empty state is 0

    def nights(fault: str | None) -> dict:
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="fault-nights-"))
        (tmp / "token").write_text(PAT)
        with ZitadelServer(tokens={PAT}) as server:
            night = Day(tmp, server, tmp / "token")
            if fault:
                kinds = tuple(fault.split("+"))  # "503+drop+deadline_after": the kinds mixed in one run
                server.faults.randomize(args.rate, kinds=kinds, paths=scenario._PATHS, seed=37)

            def run(*day) -> tuple[int, str]:
                return _quiet(lambda: night.run(*day, *flags))

            rc1, _ = run(*scenario._day1(hashes, args.users))
            scenario.age_events(server)
            rc2, out = run(*scenario._day2(hashes, args.users))
            server.faults.clear()
            failed = sum(
                int(m) for m in re.findall(r"  calls planned \d+ = confirmed \d+ \+ failed (\d+)", out)
            )
            profiles, passwords = scenario._day2(hashes, args.users)
            wanted = {p["user_id"]: pw["passwordHash"] for p, pw in zip(profiles, passwords, strict=True)}
            with server.state.lock:
                held = {
                    uid: (user.get("hashedPassword") or {}).get("value")
                    for uid, (_, user) in server.state.users.items()
                }
            return {
                "rc": (rc1, rc2),
                "failed": failed,
                "effects": scenario._effects(server),
                "already": len(scenario._already_answers(server)),
                "old_hash": sum(1 for uid, h in wanted.items() if uid in held and held[uid] != h),
                "fired": len(server.faults.fired),
            }

    clean = nights(None)
    print(
        f"{args.users} users (+{args.users // 10} new on day 2), {args.rate:.0%} of calls failing; code: {args.code or REPO}"
    )
    print(
        f"{'fault':<24} {'faults':>7} {'night rc':>9} {'calls failed':>13} {'effects twice':>14} {'already':>8} {'old hash':>9}"
    )
    print(
        f"{'none':<24} {0:>7} {str(clean['rc']):>9} {clean['failed']:>13} {0:>14} {clean['already']:>8} {clean['old_hash']:>9}"
    )
    for kind in args.kinds.split(","):
        got = nights(kind)
        extra = got["effects"] - clean["effects"]
        twice = sum(extra.values())
        print(
            f"{kind:<24} {got['fired']:>7} {str(got['rc']):>9} {got['failed']:>13} {twice:>14} "
            f"{got['already']:>8} {got['old_hash']:>9}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
