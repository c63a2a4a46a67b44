"""A push under faults that lose answers: how many users end failed or unknown that ZITADEL holds.

The scenario of tests/scenarios/test_user_v2_faults.py at a larger size: ``--users`` Auth0 users
with metadata, social IdP links, phones and TOTP secrets, migrated once, then pushed against the
test server (tests/standins/zitadel_server.py) with ``--rate`` of the calls failing with a random
kind of ``--kinds`` (default: ``503`` before the work, ``drop``: the connection closed before the
work, ``deadline_after``: ZITADEL's own HTTP 504 ``{"code": 4, "message": "context deadline
exceeded"}`` *after* the work), through the user service v2 and through the admin import
(``--batch-size`` users per body), each with verify. Printed per API: the push's exit status, users created / present / failed / unknown,
the users the server holds exactly once as the fault-free admin import holds them (metadata, links,
TOTP, phone), the create events beyond one per user, the faults fired, and the first failure line.

    .venv/bin/python benchmarks/unknown_outcomes.py --users 2000
    .venv/bin/python benchmarks/unknown_outcomes.py --users 2000 --code /path/to/another/checkout
"""

from __future__ import annotations

import argparse
import contextlib
import io
import pathlib
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=2000, help="Auth0 users (default 2000)")
    parser.add_argument("--rate", type=float, default=0.3, help="share of calls that fail (default 0.3)")
    parser.add_argument("--kinds", default="503,drop,deadline_after", help="fault kinds, mixed at random")
    parser.add_argument("--apis", default="user-v2,admin-import", help="the push APIs, one run each")
    parser.add_argument("--seed", type=int, default=49, help="the faults' random seed (default 49)")
    parser.add_argument("--batch-size", type=int, default=50, help="users per body (default 50)")
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
    import zitadel_user_v2_create as creation
    from zitadel_fixtures import PAT, fast_client
    from zitadel_server import ZitadelServer

    from pipeline.cli import main as cli
    from tests.scenarios import test_user_v2_rich_auth0 as rich
    from transforms.output.manifest import load_manifest
    from transforms.push import engine as push_engine
    from transforms.zitadel_api.credentials import Credentials

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="unknown-outcomes-"))
    ids = rich._export(tmp / "export", args.users)
    out = tmp / "out"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = cli(["migrate", "auth0", f"--org={rich.ORG}", *rich._inputs(tmp / "export"),
                  f"--output={out / 'importBody.json'}", f"--batch-size={args.batch_size}", "--quiet"])  # fmt: skip
    if rc != 0:
        print(f"migrate failed ({rc})", file=sys.stderr)
        return 1
    manifest = load_manifest(str(out / "importBody.manifest.json"))

    def push(server, creds, api: str, results: pathlib.Path):
        client = fast_client(server.url, creds, max_attempts=6)  # the default --max-attempts
        return push_engine.push_manifest(
            manifest, server.url, creds, progress=False, client=client, api=api, verify=True,
            results_dir=str(results),
        )  # fmt: skip

    with ZitadelServer(tokens={PAT}) as clean:  # the reference: a fault-free admin import
        assert push(clean, Credentials("token", token=PAT), "admin-import", tmp / "clean").ok
        expected = {uid: creation.stored_user(clean, uid) for uid in ids}
    kinds = tuple(args.kinds.split(","))
    print(
        f"{args.users} Auth0 users, {args.rate:.0%} of calls failing ({'/'.join(kinds)}); code: {args.code or REPO}"
    )
    print(f"{'api':<13} {'rc':>3} {'created':>8} {'present':>8} {'failed':>7} {'unknown':>8} "
          f"{'held as ref':>12} {'added twice':>12} {'faults':>7} {'seconds':>8}  first failure")  # fmt: skip
    for api in args.apis.split(","):
        if api == "user-v2":
            server = rich._v5()
            creds = Credentials("token", token=rich.ORG_TOKEN)
            paths: tuple[str, ...] = ("/v2/users*",)
        else:
            server = ZitadelServer(tokens={PAT}).start()
            creds = Credentials("token", token=PAT)
            paths = ("/admin/v1/import",)
        try:
            server.faults.randomize(args.rate, kinds=kinds, paths=paths, seed=args.seed)
            started = time.monotonic()
            with contextlib.redirect_stderr(io.StringIO()):
                report = push(server, creds, api, tmp / api)
            seconds = time.monotonic() - started
            fired = len(server.faults.fired)
            server.faults.clear()
            # The user service makes active what the import leaves initial (same_but_state).
            alike = creation.same_but_state if api == "user-v2" else (lambda a, b: a == b)
            held = sum(
                1
                for uid in ids
                if uid in server.state.users and alike(creation.stored_user(server, uid), expected[uid])
            )
            twice = sum(n - 1 for n in server.added_event_counts().values())
            unknown = getattr(report, "unknown", 0)
            line = "" if report.ok else report.failure_line()[:160]
            print(
                f"{api:<13} {0 if report.ok else 1:>3} {report.created:>8} {report.present:>8} "
                f"{report.failed:>7} {unknown:>8} {held:>12} {twice:>12} {fired:>7} {seconds:>8.1f}  {line}"
            )
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
