"""``zitadel-beam verify``: prove that the users of a manifest's bodies arrived.

Examples::

    ZITADEL_TOKEN=$(cat pat.txt) zitadel-beam verify --url=https://my.zitadel.cloud \\
        --manifest=out/importBody.manifest.json
    zitadel-beam push --url=... --manifest=... --verify        # the same check after a push

An import answer can list a user as created that never became visible (a lost write, a replica
behind), so verify does not trust the push ledger: it reads ``user.human.added`` events through the
admin events search (paged by sequence, oldest first, filtered to each org's resource owner) and
compares them with the user ids in the bodies:

- **created**: in the bodies and added in ZITADEL;
- **missing**: in the bodies, no event (exit status 1, ids in ``<results>/verify-missing.ndjson``);
- **unexpected**: added in the org but not in the bodies (users created another way; informational).
"""

from __future__ import annotations

import argparse

from pipeline.options import add_credential_arguments, credentials_from_args
from transforms.output.manifest import load_manifest
from transforms.push.verification import verify_manifest

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", required=True, help="ZITADEL instance base URL, e.g. https://x.zitadel.cloud"
    )
    parser.add_argument("--manifest", required=True, help="the <stem>.manifest.json written by migrate")
    parser.add_argument(
        "--results", help="where verify-missing.ndjson goes (default: <manifest stem>.results/)"
    )
    parser.add_argument("--page-size", type=int, default=1000, help="events per search call (default 1000)")
    add_credential_arguments(parser)


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    del pipeline_args
    report = verify_manifest(
        load_manifest(known_args.manifest),
        known_args.url,
        credentials_from_args(known_args),
        results_dir=known_args.results,
        page_size=known_args.page_size,
    )
    print(report.table())
    return 0 if report.ok else 1
