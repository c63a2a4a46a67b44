"""Which API sets user grants on a target: the authorization service v2 where the server has it,
the management API v1 otherwise (docs/roles.md); learned from the first answer, once per server.

The management API's grant calls go with the other v1 APIs (zitadel/zitadel#10899); the
authorization service v2 (``transforms/zitadel_api/authorization_v2.py``) replaces them. Whether a
server has it is told the way ``--api=auto`` tells whether it has the admin import: its answer to
the first call, remembered by the client (``AdminClient.services``). A route the server does not serve answers 404, 405 or 501 without a ZITADEL error
detail (or Unimplemented): the management calls are used for that server from then on.

``write_grant_v2`` gives a user exactly the role keys on a project, as the management path does:
look the authorization up (``ListAuthorizations`` by user, project and org), then create, update
(the full list) or delete it, each write sent one attempt at a time, so that after a lost answer
the next look-up finds what landed and nothing is written twice.

Example::

    sent = [0]  # the requests made, counted across attempts
    write_grant_v2(client, "u1", "o1", "p1", ["admin"], None, sent)  # False: not served here
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from transforms.zitadel_api import api_errors
from transforms.zitadel_api import authorization_v2 as authz

if TYPE_CHECKING:
    from transforms.zitadel_api.client import AdminClient

__all__ = ["write_grant_v2", "served", "list_org_grants"]

_SERVICE = "authorization-v2"  # its key in ``AdminClient.services``


def served(client: AdminClient) -> bool | None:
    """True / False once a call told whether the authorization service is there; None before."""
    return client.services.get(_SERVICE)


def _learn(client: AdminClient, there: bool) -> None:
    client.services[_SERVICE] = there  # one key, set to the same value by every thread that learns it


def _look_up(
    client: AdminClient, user_id: str, org_id: str, project_id: str, timeout: float | None
) -> list[dict] | None:
    """The user's authorizations on the project in the org; None when the service is not there."""
    if served(client) is False:
        return None
    try:
        found = client.request(
            "POST", authz.LIST_PATH, authz.list_request(user_id, project_id, org_id), timeout
        )
    except api_errors.AdminApiError as err:
        if not api_errors.route_absent(err):
            raise
        _learn(client, False)
        return None
    _learn(client, True)
    return [g for g in authz.grants_of(found) if g["projectId"] == project_id and g["orgId"] in ("", org_id)]


def write_grant_v2(
    client: AdminClient,
    user_id: str,
    org_id: str,
    project_id: str,
    role_keys: list[str] | None,
    timeout: float | None,
    sent: list[int],
) -> bool:
    """One look-up and at most one write per authorization found (``sent[0]`` counts the
    requests); False when the server has no authorization service (nothing was written)."""
    sent[0] += 1
    grants = _look_up(client, user_id, org_id, project_id, timeout)
    if grants is None:
        sent[0] -= 1  # the probe of a route that is not there: the management path's count
        return False
    once = client.single_attempt()
    if role_keys is None:
        for grant in grants:
            sent[0] += 1
            client.request("POST", authz.DELETE_PATH, {"id": grant["id"]}, timeout, retrier=once)
        return True
    if not grants:
        sent[0] += 1
        request = authz.create_request(user_id, project_id, org_id, role_keys)
        client.request("POST", authz.CREATE_PATH, request, timeout, retrier=once)
        return True
    if sorted(grants[0]["roleKeys"]) != sorted(role_keys):
        sent[0] += 1
        body = {"id": grants[0]["id"], "roleKeys": list(role_keys)}
        client.request("POST", authz.UPDATE_PATH, body, timeout, retrier=once)
    return True


def list_org_grants(client: AdminClient, org_id: str, page_size: int = 1000) -> set[tuple[str, str]] | None:
    """(user id, project id) of every authorization of ``org_id``; None without the service."""
    if served(client) is False:
        return None
    found: set[tuple[str, str]] = set()
    offset = 0
    while True:
        try:
            page = client.request(
                "POST", authz.LIST_PATH, authz.list_request(org_id=org_id, offset=offset, limit=page_size)
            )
        except api_errors.AdminApiError as err:
            if offset == 0 and api_errors.route_absent(err):
                _learn(client, False)
                return None
            raise
        _learn(client, True)
        grants = authz.grants_of(page)
        found |= {(g["userId"], g["projectId"]) for g in grants}
        offset += len(grants)
        if len(grants) < page_size:
            return found
