"""Push and verify of project roles and user grants (docs/roles.md); no Beam here.

- ``check_projects``: before push sends any body, the projects the grants name must exist
  (``--project-id`` without ``--create-project``, and every ``--client-project``); a missing one
  stops the push with one line naming it. Existence is read from the admin events search
  (``project.added`` / ``project.removed`` of the project's aggregate), the API push already uses.
- ``grant_owners``: the import's id of each user grant of a body (``orgId_projectId_userId``) →
  its user, so a refused grant fails its user (and a re-run sends it again).
- ``expected_grants`` / ``missing_grants``: verify compares the grants of the bodies with the
  ``user.grant.added`` events of each org and names what did not arrive.
- ``write_grant``: set (add or update) or remove one user's grant on one project through the
  authorization service v2 where the server has it, else the management API (grant_service.py),
  the way the user service path and a sync's changes set grants.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from transforms.common.errors import ConfigError
from transforms.output.body_parts import org_id_of, orgs_of
from transforms.push.grant_service import write_grant_v2
from transforms.zitadel_api import api_errors
from transforms.zitadel_api import management_v1 as mgmt

if TYPE_CHECKING:  # the clients' types only: this module is imported where no client is opened
    from transforms.zitadel_api.admin_v1 import AdminV1Calls
    from transforms.zitadel_api.client import AdminClient

__all__ = [
    "ROLE_KINDS",
    "GRANT_ADDED",
    "grant_owners",
    "grants_of",
    "check_projects",
    "expected_grants",
    "missing_grants",
    "write_grant",
]

# Import result types of what an authorizations body or a user body's grants create.
ROLE_KINDS = ("project", "project_role", "user_grant")
GRANT_ADDED = "user.grant.added"
_GRANT_KEYS = ("userGrants", "user_grants")


def grants_of(org: Mapping[str, Any]) -> list[dict]:
    for key in _GRANT_KEYS:
        if isinstance(org.get(key), list):
            return [g for g in org[key] if isinstance(g, dict)]
    return []


def grant_owners(body: dict) -> dict[str, str]:
    """``orgId_projectId_userId`` (the import's id of a user grant) → user id."""
    out: dict[str, str] = {}
    for org in orgs_of(body):
        org_id = org_id_of(org)
        for grant in grants_of(org):
            user_id = str(grant.get("userId", grant.get("user_id", "")))
            project_id = str(grant.get("projectId", grant.get("project_id", "")))
            out[f"{org_id}_{project_id}_{user_id}"] = user_id
    return out


def _projects_to_check(raw: Mapping[str, object]) -> list[str]:
    auth = raw.get("authorizations")
    if not isinstance(auth, Mapping) or not auth.get("project_id"):
        return []
    projects = [] if auth.get("create_project") else [str(auth["project_id"])]
    clients = auth.get("client_projects")
    if isinstance(clients, Mapping):
        projects += sorted({str(p) for p in clients.values()} - set(projects))
    return projects


def check_projects(raw: Mapping[str, object], client: AdminV1Calls) -> None:
    """Raise ConfigError (one line) when a project the manifest's grants need does not exist."""
    for project_id in _projects_to_check(raw):
        try:
            events = client.search_events(
                ["project.added", "project.removed"],
                aggregate_types=["project"],
                aggregate_id=project_id,
                limit=1,
                asc=False,
            )
        except api_errors.AdminApiError as err:
            raise ConfigError(f"cannot check that project {project_id} exists: {err.message}") from None
        latest = str(((events[0] if events else {}).get("type") or {}).get("type", ""))
        if latest != "project.added":
            raise ConfigError(
                f"project {project_id} does not exist in the target: create it first, or migrate "
                "again with --create-project=NAME (nothing was sent)"
            )


def expected_grants(body: dict) -> dict[str, set[tuple[str, str]]]:
    """org id → {(user id, project id)} of a body's user grants."""
    out: dict[str, set[tuple[str, str]]] = {}
    for org in orgs_of(body):
        for grant in grants_of(org):
            out.setdefault(org_id_of(org), set()).add(
                (str(grant.get("userId", grant.get("user_id", ""))), str(grant.get("projectId", "")))
            )
    return out


def missing_grants(
    client: AdminV1Calls, expected: Mapping[str, set[tuple[str, str]]], page_size: int = 1000
) -> list[str]:
    """``userId@projectId`` of every expected grant without a ``user.grant.added`` event."""
    missing: list[str] = []
    for org_id, wanted in expected.items():
        found: set[tuple[str, str]] = set()
        try:
            for event in client.iter_events([GRANT_ADDED], resource_owner=org_id, page_size=page_size):
                payload = event.get("payload")
                if isinstance(payload, dict):
                    found.add((str(payload.get("userId", "")), str(payload.get("projectId", ""))))
        except api_errors.AdminApiError as err:
            raise ConfigError(f"events search failed for org {org_id}: {err.message}") from None
        missing += [f"{user}@{project}" for user, project in sorted(wanted - found)]
    return missing


def write_grant(
    client: AdminClient,
    user_id: str,
    org_id: str,
    project_id: str,
    role_keys: list[str] | None,
    timeout: float | None = None,
) -> int:
    """Give ``user_id`` exactly ``role_keys`` on ``project_id`` (None: remove the grant); the
    requests made. Raises the client's errors.

    The import answers grants without their ids, so each attempt looks the grant up first
    (``ListUserGrants`` by user and project), then adds it (``AddUserGrant``), updates it with the
    full role list (``UpdateUserGrant``; ``NotChanged`` is done) or removes it (``RemoveUserGrant``;
    gone already is done). A write is sent one attempt at a time: after a lost answer the next
    attempt's look-up finds a grant that landed, and it is not added twice.

    >>> write_grant(client, "u1", "o1", "p1", ["admin"])  # doctest: +SKIP
    2
    """
    attempt, sent = 0, [0]
    while True:
        attempt += 1
        try:
            _grant_once(client, user_id, org_id, project_id, role_keys, timeout, sent)
            return sent[0]
        except api_errors.AdminApiError as err:
            # Sent again on a fault (api_errors.send_again): the next attempt looks the grant up
            # first, so one whose answer was lost (no answer, 502, 504) is found, not added twice.
            if not api_errors.send_again(err) or attempt >= client.max_attempts:
                if err.status == 0 and not isinstance(err, api_errors.ServerGone):
                    client.stop.record(False, err.message)  # the whole write went unanswered
                raise
            client.backoff(attempt, err.retry_after)


def _grant_once(
    client: AdminClient,
    user_id: str,
    org_id: str,
    project_id: str,
    role_keys: list[str] | None,
    timeout: float | None,
    sent: list[int],
) -> None:
    """One look-up and at most one write per grant found; ``sent[0]`` counts the requests. The
    authorization service v2 where the server has it (grant_service.py), else the management API."""
    if write_grant_v2(client, user_id, org_id, project_id, role_keys, timeout, sent):
        return
    once = client.single_attempt()
    search = mgmt.grants_search_request(user_id, project_id)
    sent[0] += 1
    found = client.request("POST", mgmt.GRANTS_SEARCH_PATH, search, timeout, org_id=org_id)
    grants = [g for g in found.get("result") or [] if str(g.get("projectId")) == project_id]
    if role_keys is None:
        for grant in grants:
            sent[0] += 1
            path = mgmt.user_grant_path(user_id, str(grant["id"]))
            try:
                client.request("DELETE", path, None, timeout, retrier=once, org_id=org_id)
            except api_errors.InvalidRequest as err:
                if "Errors.UserGrant.NotFound" not in err.message:
                    raise
        return
    if not grants:
        sent[0] += 1
        request = mgmt.add_grant_request(project_id, role_keys)
        client.request("POST", mgmt.user_grants_path(user_id), request, timeout, retrier=once, org_id=org_id)
        return
    grant = grants[0]
    if sorted(grant.get("roleKeys") or []) == sorted(role_keys):
        return  # already there (an earlier attempt's or night's call whose answer was lost)
    sent[0] += 1
    path = mgmt.user_grant_path(user_id, str(grant["id"]))
    try:
        client.request(
            "PUT", path, mgmt.update_grant_request(role_keys), timeout, retrier=once, org_id=org_id
        )
    except api_errors.InvalidRequest as err:
        if "Errors.UserGrant.NotChanged" not in err.message:
            raise
