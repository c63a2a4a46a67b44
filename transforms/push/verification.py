"""The verify engine: were a manifest's users added? Compared with ZITADEL's events, org by org.

The import answer is not proof (a detached or timed-out import says nothing per user), so every
expected user id is looked up among the ``user.human.added`` events of its organization through
the admin events search (``docs/zitadel-admin-api.md``). Users sent without ``userId`` get their id
from the server; they are expected by user name.

Example::

    report = verify_manifest(load_manifest("out/importBody.manifest.json"), "https://x.zitadel.cloud", credentials)
    report.ok, report.missing[:3]
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from transforms.common.errors import ConfigError
from transforms.files.storage import write_atomic
from transforms.output.body_parts import body_user_ids, orgs_of, user_name_of, users_of
from transforms.output.manifest import Manifest, default_results_dir, read_body
from transforms.push.api_choice import open_client
from transforms.push.grant_calls import expected_grants, missing_grants
from transforms.push.verify_fields import dropped_fields
from transforms.push.verify_user_v2 import admin_reads_refused, listed_grants, listed_users, owners_elsewhere
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import Credentials

__all__ = [
    "USER_ADDED",
    "MACHINE_ADDED",
    "OrgCheck",
    "VerifyReport",
    "compare",
    "added_users",
    "check_orgs",
    "expected_users",
    "verify_manifest",
    "wait_until_added",
]

_LOGGER = logging.getLogger(__name__)

USER_ADDED = "user.human.added"
MACHINE_ADDED = "user.machine.added"
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
    # ``userId@projectId`` of user grants without a ``user.grant.added`` event (docs/roles.md).
    missing_grants: list[str] = dataclasses.field(default_factory=list)
    grants_expected: int = 0
    # Missing users found in another org: user id → that org (verify_user_v2.owners_elsewhere).
    elsewhere: dict[str, str] = dataclasses.field(default_factory=dict)
    # Through the user service: user id → the fields sent that the server dropped (verify_fields.py).
    dropped: dict[str, list[str]] = dataclasses.field(default_factory=dict)

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
        return not self.missing and not self.missing_grants and not self.dropped

    def table(self) -> str:
        width = max([len("org")] + [len(o.org_id) for o in self.orgs])
        head = f"{'org':<{width}}  {'expected':>8} {'created':>8} {'missing':>8} {'unexpected':>10}"
        lines = [head, "-" * len(head)] if self.orgs else []  # no table without a row
        for o in self.orgs:
            lines.append(
                f"{o.org_id:<{width}}  {o.expected:>8} {o.created:>8} {len(o.missing):>8} "
                f"{len(o.unexpected):>10}"
            )
        lines.append(
            "verify: "
            + (
                "ok, every user was added"
                if self.ok
                else f"{len(self.missing)} missing, e.g. {', '.join(self.missing[:5])}"
            )
        )
        if self.grants_expected:
            lines.append(
                f"verify: grants {self.grants_expected - len(self.missing_grants)} of {self.grants_expected} arrived"
                + (f"; missing e.g. {', '.join(self.missing_grants[:5])}" if self.missing_grants else "")
            )
        if self.elsewhere:
            named = [f"{u} (in {o})" for u, o in sorted(self.elsewhere.items())[:5]]
            lines.append(
                f"verify: {len(self.elsewhere)} missing user(s) are in another org: {', '.join(named)}"
            )
        if self.dropped:
            named = [f"{u} ({', '.join(f)})" for u, f in sorted(self.dropped.items())[:5]]
            lines.append(
                f"verify: {len(self.dropped)} user(s) lack what was sent (the server dropped it): {', '.join(named)}"
            )
        if self.missing_file:
            lines.append(f"missing ids: {self.missing_file}")
        return "\n".join(lines)


def compare(
    org_id: str, expected: list[str], added: set[str], named: Mapping[str, str] | None = None
) -> OrgCheck:
    """Expected ids (or ``userName:`` keys) against the ids the events show; the one comparison."""
    named = named or {}
    wanted = set(expected)
    by_name = {named[k] for k in wanted if k.startswith(NAME_KEY) and k in named}
    found = added | {k for k in wanted if k.startswith(NAME_KEY) and k in named}
    return OrgCheck(
        org_id,
        len(wanted),
        len(wanted & found),
        [u for u in expected if u not in found],
        sorted(added - wanted - by_name),
    )


def added_users(
    client: AdminClient, org_id: str, event_type: str = USER_ADDED, page_size: int = 1000
) -> tuple[set[str], dict[str, str]]:
    """Ids of the users an org's ``event_type`` events added, and user-name key → id."""
    added: set[str] = set()
    named: dict[str, str] = {}
    try:
        for event in client.iter_events([event_type], resource_owner=org_id, page_size=page_size):
            user_id = str((event.get("aggregate") or {}).get("id") or "")
            added.add(user_id)
            payload = event.get("payload")
            if isinstance(payload, dict) and isinstance(payload.get("userName"), str):
                named[NAME_KEY + payload["userName"].casefold()] = user_id
    except api_errors.AdminApiError as err:
        raise ConfigError(f"events search failed for org {org_id}: {err.message}") from None
    return added, named


def check_orgs(
    client: AdminClient, expected: Mapping[str, list[str]], event_type: str = USER_ADDED
) -> VerifyReport:
    """``compare`` for every org of ``expected`` (org id → user ids)."""
    return VerifyReport(
        [compare(org_id, ids, *added_users(client, org_id, event_type)) for org_id, ids in expected.items()]
    )


def wait_until_added(
    client: AdminClient,
    expected: Mapping[str, list[str]],
    wait_seconds: float,
    poll_interval: float,
    on_poll: Callable[[VerifyReport], None] | None = None,
) -> VerifyReport:
    """Poll ``check_orgs`` until every expected user was added or ``wait_seconds`` passed."""
    deadline = time.monotonic() + wait_seconds
    while True:
        report = check_orgs(client, expected)
        if report.ok or time.monotonic() >= deadline:
            return report
        if on_poll is not None:
            on_poll(report)
        time.sleep(min(poll_interval, max(deadline - time.monotonic(), 0.0)))


def expected_users(manifest: Manifest) -> dict[str, list[str]]:
    """org id → user ids in the manifest's bodies, in body order."""
    per_org: dict[str, list[str]] = {}
    for ref in manifest.bodies:
        try:
            body = json.loads(read_body(ref))
        except (OSError, ValueError) as err:
            raise ConfigError(f"cannot read {ref.name}: {api_errors.scrub(str(err))}") from None
        for org_id, user_id, user_name in _body_users(body):
            per_org.setdefault(org_id, []).append(user_id or NAME_KEY + user_name.casefold())
    return per_org


class _ExpectedUser(NamedTuple):
    org_id: str
    user_id: str
    user_name: str


def _body_users(body: dict) -> list[_ExpectedUser]:
    """Every human user of a body, in order."""
    names = [user_name_of(u) for org in orgs_of(body) for u in users_of(org)]
    return [
        _ExpectedUser(ref.org_id, ref.user_id, name)
        for ref, name in zip(body_user_ids(body), names, strict=True)
    ]


def verify_manifest(
    manifest: Manifest,
    url: str,
    credentials: Credentials,
    results_dir: str | None = None,
    page_size: int = 1000,
    client: AdminClient | None = None,
) -> VerifyReport:
    """Compare the bodies' user ids with ``user.human.added`` events, org by org (or, where the
    admin API is absent or refused, with the user service's ``ListUsers``: verify_user_v2.py).

    >>> report = verify_manifest(load_manifest("out/importBody.manifest.json"), "https://x.zitadel.cloud",
    ...                          load_credentials(token_file="pat"))  # doctest: +SKIP
    >>> report.ok, report.missing[:3]  # doctest: +SKIP
    """
    per_org = expected_users(manifest)
    client = client or open_client(url, credentials, "auto")[0]
    v2 = admin_reads_refused(client)  # no admin API, or not for this credential: the user service's reads
    checks = [
        compare(org_id, expected, *(listed_users if v2 else added_users)(client, org_id, page_size=page_size))
        for org_id, expected in per_org.items()
    ]
    report = VerifyReport(checks)
    report.elsewhere = owners_elsewhere(client, {u: o.org_id for o in checks for u in o.missing}, not v2)
    if v2:  # the user service path: read back what each user was sent
        gone = set(report.missing)
        present = {
            u for users in per_org.values() for u in users if u not in gone and not u.startswith(NAME_KEY)
        }
        report.dropped = dropped_fields(client, manifest, present)
    grants = expected_grants_of(manifest)
    if grants:
        report.grants_expected = sum(len(v) for v in grants.values())
        report.missing_grants = (
            [f"{u}@{p}" for org, want in grants.items() for u, p in sorted(want - listed_grants(client, org))]
            if v2
            else missing_grants(client, grants, page_size)
        )
    report.missing_file = _write_missing(manifest, results_dir, report)
    return report


def expected_grants_of(manifest: Manifest) -> dict[str, set[tuple[str, str]]]:
    """org id → {(user id, project id)} of every user grant in the manifest's bodies."""
    out: dict[str, set[tuple[str, str]]] = {}
    for ref in manifest.bodies:
        try:
            body = json.loads(read_body(ref))
        except (OSError, ValueError) as err:
            raise ConfigError(f"cannot read {ref.name}: {api_errors.scrub(str(err))}") from None
        for org_id, pairs in expected_grants(body).items():
            out.setdefault(org_id, set()).update(pairs)
    return out


def _write_missing(manifest: Manifest, results_dir: str | None, report: VerifyReport) -> str | None:
    directory = results_dir or default_results_dir(manifest)
    path = os.path.join(directory, MISSING_NAME)
    if report.ok:
        if os.path.exists(path):
            os.unlink(path)
        return None
    os.makedirs(directory, exist_ok=True)
    lines = (
        [
            json.dumps(
                {"orgId": o.org_id, "userId": u, "reason": "in-another-org", "foundIn": report.elsewhere[u]}
                if u in report.elsewhere
                else {"orgId": o.org_id, "userId": u, "reason": "no-user.human.added-event"}
            )
            for o in report.orgs
            for u in o.missing
        ]
        + [
            json.dumps({"userId": u, "reason": "field-dropped", "fields": fields})
            for u, fields in sorted(report.dropped.items())
        ]
        + [
            json.dumps(
                {
                    "userId": g.rsplit("@", 1)[0],
                    "projectId": g.rsplit("@", 1)[1],
                    "reason": "no-user.grant.added-event",
                }
            )
            for g in report.missing_grants
        ]
    )
    write_atomic(path, ("\n".join(lines) + "\n").encode())
    return path
