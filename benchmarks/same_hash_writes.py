"""Same-hash password writes of a failed sync night followed by the next (docs/sync.md#unknown-outcomes).

Night 1 imports ``--users`` Auth0 users into the test server (tests/standins/zitadel_server.py);
day 2 gives every user a new password hash and family name. Night 2's push meets a server that
stops answering half-way: every change call after ``--answered`` is done only after the client gave
up on it (the stand-in's ``late`` fault; ``--late-seconds`` later still, a stalled server that
resumes during night 3), and the push stops. Night 3 runs the same export against
a server that answers again. Each password write is one ``user.human.password.changed`` event;
every user should get exactly one. Prints the writes beyond one per user (same-hash writes).
``--lost-answers P`` instead answers every change call but loses the answer of P of them (a 504
after the work, or the connection dropped after it), at random: the same night's retries.

    .venv/bin/python benchmarks/same_hash_writes.py --users 3000
    .venv/bin/python benchmarks/same_hash_writes.py --users 3000 --code /path/to/another/checkout
    .venv/bin/python benchmarks/same_hash_writes.py --users 3000 --lost-answers 0.01
    .venv/bin/python benchmarks/same_hash_writes.py --users 3000 --late-seconds 20
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import pathlib
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent

__all__ = ["main"]

ORG = "123456789"
TOKEN = "bench-token-not-a-secret"


def _export(folder: pathlib.Path, users: int, day: int, hashes: list[str]) -> tuple[str, str]:
    folder.mkdir(parents=True)
    profiles = folder / "users.json"
    passwords = folder / "passwords.json"
    with open(profiles, "w") as p, open(passwords, "w") as w:
        for n in range(1, users + 1):
            family = f"Family{n}" if day == 1 else f"New{n}"
            profile = {
                "user_id": f"auth0|{n:024d}",
                "email": f"user{n}@example.com",
                "email_verified": True,
                "given_name": f"Given{n}",
                "family_name": family,
            }
            p.write(json.dumps(profile) + "\n")
            hashed = hashes[(n % 2) + (0 if day == 1 else 2)]
            w.write(
                json.dumps(
                    {"_id": {"$oid": f"{n:024d}"}, "email": f"user{n}@example.com", "passwordHash": hashed}
                )
                + "\n"
            )
    return str(profiles), str(passwords)


def _quiet(run, *args):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return run(*args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=3000, help="users in the export (default 3000)")
    parser.add_argument(
        "--answered", type=int, default=0, help="change calls answered on night 2 (default users/2)"
    )
    parser.add_argument("--concurrency", type=int, default=4, help="push --concurrency (default 4)")
    parser.add_argument(
        "--code", help="another checkout whose pipeline/ and transforms/ to measure (default this one)"
    )
    parser.add_argument(
        "--lost-answers", type=float, default=0.0, help="instead of stopping: lose this share of the answers"
    )
    parser.add_argument(
        "--late-seconds",
        type=float,
        default=0.0,
        help="night 2's stalled calls land this long after their client gave up (default 0: at once)",
    )
    args = parser.parse_args(argv)
    sys.path[:0] = [args.code or str(REPO), str(REPO / "tests" / "helpers"), str(REPO / "tests" / "standins")]
    from zitadel_fixtures import hash_pool
    from zitadel_server import ZitadelServer

    from pipeline.cli import main as cli

    hashes = hash_pool(4)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="same-hash-"))
    (tmp / "token").write_text(TOKEN)
    out = tmp / "out" / "importBody.json"
    common = [f"--org={ORG}", f"--output={out}", f"--state={tmp / 'state'}"]
    push = [f"--token-file={tmp / 'token'}"]
    with ZitadelServer(tokens={TOKEN}) as server:
        users, pws = _export(tmp / "day1", args.users, 1, hashes)
        night1 = [
            "migrate",
            "auth0",
            f"--users={users}",
            f"--passwords={pws}",
            *common,
            f"--push-url={server.url}",
        ]
        assert _quiet(cli, [*night1, *push]) == 0, "night 1 failed"
        with server.state.lock:  # day 1 was yesterday
            for event in server.state.events:
                event.created = "2026-01-01T00:00:00Z"
        users, pws = _export(tmp / "day2", args.users, 2, hashes)
        night2 = ["migrate", "auth0", f"--users={users}", f"--passwords={pws}", *common]
        assert _quiet(cli, night2) == 0, "night 2's migrate failed"
        if args.lost_answers:
            server.faults.randomize(args.lost_answers, ("504_after", "drop_after"), ("/v2/users/human/*",))
        else:
            server.faults.silent_after(args.answered or args.users // 2, kind="late", path="/v2/users/*")
        server.faults.hang_seconds = 10.0
        server.faults.late_seconds = args.late_seconds
        manifest = out.with_name("importBody.manifest.json")
        rc2 = _quiet(
            cli,
            [
                "push",
                f"--url={server.url}",
                f"--manifest={manifest}",
                *push,
                "--quiet",
                "--max-attempts=2",
                "--request-timeout=0.5",
                f"--concurrency={args.concurrency}",
            ],
        )
        late = len(server.faults.fired)
        server.faults.clear()  # the server answers again
        rc3 = _quiet(cli, [*night2, f"--push-url={server.url}", *push])
        time.sleep(args.late_seconds + 1.0)  # a stalled call that lands after night 3 counts too
        with server.state.lock:
            writes: dict[str, int] = {}
            for event in server.state.events:
                if event.event_type == "user.human.password.changed":
                    writes[event.aggregate_id] = writes.get(event.aggregate_id, 0) + 1
            held = sum(
                1
                for _, user in server.state.users.values()
                if user.get("hashedPassword", {}).get("value") in hashes[2:]
            )
    twice = {uid: n for uid, n in writes.items() if n > 1}
    print(
        f"users {args.users}  night 2 push rc {rc2} (faults met: {late})  "
        f"night 3 rc {rc3}  users holding day 2's hash {held}  "
        f"same-hash writes {sum(n - 1 for n in twice.values())} (users {len(twice)})  "
        f"users with no write {args.users - len(writes)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
