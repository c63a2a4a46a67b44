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
import dataclasses
import json
import logging
import os

from pipeline.errors import ConfigError
from pipeline.push import (
    _write_atomic,
    add_credential_arguments,
    body_user_ids,
    connect,
    credentials_from_args,
    default_results_dir,
    load_manifest,
    read_body,
)
from transforms import admin_api
from transforms.admin_api import AdminClient, Credentials

__all__ = ["add_arguments", "run", "verify_manifest", "expected_users", "VerifyReport", "OrgCheck"]

_LOGGER = logging.getLogger(__name__)

USER_ADDED = "user.human.added"
# Users sent without userId get their id from the server: they are expected by user name.
NAME_KEY = "userName:"
MISSING_NAME = "verify-missing.ndjson"


@dataclasses.dataclass
class OrgCheck:
    """The comparison for one org (resource owner)."""

    org_id: str
    expected: int
    created: int
    missing: list[str]
    unexpected: list[str]


@dataclasses.dataclass
class VerifyReport:
    orgs: list[OrgCheck]
    missing_file: str | None = None

    @property
    def created(self) -> int:
        return sum(o.created for o in self.orgs)

    @property
    def missing(self) -> list[str]:
        return [u for o in self.orgs for u in o.missing]

    @property
    def unexpected(self) -> list[str]:
        return [u for o in self.orgs for u in o.unexpected]

    @property
    def ok(self) -> bool:
        return not self.missing

    def table(self) -> str:
        width = max([len("org")] + [len(o.org_id) for o in self.orgs])
        head = f"{'org':<{width}}  {'expected':>8} {'created':>8} {'missing':>8} {'unexpected':>10}"
        lines = [head, "-" * len(head)]
        for o in self.orgs:
            lines.append(f"{o.org_id:<{width}}  {o.expected:>8} {o.created:>8} {len(o.missing):>8} "
                         f"{len(o.unexpected):>10}")
        lines.append("verify: " + ("ok, every user was added" if self.ok else
                                   f"{len(self.missing)} missing, e.g. {', '.join(self.missing[:5])}"))
        if self.missing_file:
            lines.append(f"missing ids: {self.missing_file}")
        return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="ZITADEL instance base URL, e.g. https://x.zitadel.cloud")
    parser.add_argument("--manifest", required=True, help="the <stem>.manifest.json written by migrate")
    parser.add_argument("--results", help="where verify-missing.ndjson goes (default: <manifest stem>.results/)")
    parser.add_argument("--page-size", type=int, default=1000, help="events per search call (default 1000)")
    add_credential_arguments(parser)


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    del pipeline_args
    report = verify_manifest(known_args.manifest, known_args.url, credentials_from_args(known_args),
                             results_dir=known_args.results, page_size=known_args.page_size)
    print(report.table())
    return 0 if report.ok else 1


def expected_users(manifest_path: str) -> dict[str, list[str]]:
    """org id → user ids in the manifest's bodies, in body order."""
    manifest = load_manifest(manifest_path)
    per_org: dict[str, list[str]] = {}
    for ref in manifest.bodies:
        try:
            body = json.loads(read_body(ref))
        except (OSError, ValueError) as err:
            raise ConfigError(f"cannot read {ref.name}: {admin_api.scrub(str(err))}") from None
        for org_id, user_id, user_name in _body_users(body):
            per_org.setdefault(org_id, []).append(user_id or NAME_KEY + user_name.casefold())
    return per_org


def _body_users(body: dict) -> list[tuple[str, str, str]]:
    """(org id, user id, user name) of every human user, in order."""
    from pipeline.push import _orgs, _users

    names = [str(((u.get("user") or {}).get("userName", (u.get("user") or {}).get("user_name", ""))))
             for org in _orgs(body) for u in _users(org)]
    return [(org, uid, name) for (org, uid), name in zip(body_user_ids(body), names)]


def verify_manifest(manifest_path: str, url: str, credentials: Credentials, results_dir: str | None = None,
                    page_size: int = 1000, client: AdminClient | None = None) -> VerifyReport:
    """Compare the bodies' user ids with ``user.human.added`` events, org by org.

    >>> report = verify_manifest("out/importBody.manifest.json", "https://x.zitadel.cloud",
    ...                          load_credentials(token_file="pat"))  # doctest: +SKIP
    >>> report.ok, report.missing[:3]  # doctest: +SKIP
    """
    per_org = expected_users(manifest_path)
    client = client or connect(url, credentials)
    checks = []
    for org_id, expected in per_org.items():
        added: set[str] = set()
        named: dict[str, str] = {}  # user name key → user id, for users expected by name
        try:
            for event in client.iter_events([USER_ADDED], resource_owner=org_id, page_size=page_size):
                user_id = str(event.get("aggregate", {}).get("id", ""))
                added.add(user_id)
                payload = event.get("payload")
                if isinstance(payload, dict) and isinstance(payload.get("userName"), str):
                    named[NAME_KEY + payload["userName"].casefold()] = user_id
        except admin_api.AdminApiError as err:
            raise ConfigError(f"events search failed for org {org_id}: {err.message}") from None
        wanted = set(expected)
        by_name = {named[k] for k in wanted if k.startswith(NAME_KEY) and k in named}
        found = added | {k for k in wanted if k.startswith(NAME_KEY) and k in named}
        checks.append(OrgCheck(org_id, len(wanted), len(wanted & found),
                               [u for u in expected if u not in found], sorted(added - wanted - by_name)))
    report = VerifyReport(checks)
    report.missing_file = _write_missing(manifest_path, results_dir, report)
    return report


def _write_missing(manifest_path: str, results_dir: str | None, report: VerifyReport) -> str | None:
    directory = results_dir or default_results_dir(load_manifest(manifest_path))
    path = os.path.join(directory, MISSING_NAME)
    if report.ok:
        if os.path.exists(path):
            os.unlink(path)
        return None
    os.makedirs(directory, exist_ok=True)
    lines = [json.dumps({"orgId": o.org_id, "userId": u, "reason": "no-user.human.added-event"})
             for o in report.orgs for u in o.missing]
    _write_atomic(path, ("\n".join(lines) + "\n").encode())
    return path
