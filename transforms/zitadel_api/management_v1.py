"""The management API v1 requests the tool makes (user grants); no HTTP here.

The paths and request shapes of ZITADEL's ``zitadel.management.v1.ManagementService`` user-grant
calls, in its REST mapping; every call acts in the org named by the ``x-zitadel-orgid`` header
(``AdminClient.request(..., org_id=)``). The import answers grants without their ids, so a grant
is looked up (``ListUserGrants``) before it is updated or removed. Example::

    client.request("POST", GRANTS_SEARCH_PATH, grants_search_request("u1", "p1"), org_id="o1")
    client.request("POST", user_grants_path("u1"), add_grant_request("p1", ["admin"]), org_id="o1")
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

__all__ = [
    "GRANTS_SEARCH_PATH",
    "grants_search_request",
    "org_grants_page_request",
    "user_grants_path",
    "user_grant_path",
    "add_grant_request",
    "update_grant_request",
]

# ListUserGrants: POST /management/v1/users/grants/_search
GRANTS_SEARCH_PATH = "/management/v1/users/grants/_search"


def grants_search_request(user_id: str, project_id: str, limit: int = 10) -> dict[str, Any]:
    """``ListUserGrants`` of one user on one project."""
    return {
        "query": {"limit": limit},
        "queries": [{"userIdQuery": {"userId": user_id}}, {"projectIdQuery": {"projectId": project_id}}],
    }


def org_grants_page_request(offset: int, limit: int) -> dict[str, Any]:
    """One page of ``ListUserGrants`` over the whole org (the header's)."""
    return {"query": {"offset": str(offset), "limit": limit}}


def user_grants_path(user_id: str) -> str:
    """``AddUserGrant``: ``POST /management/v1/users/{user_id}/grants``."""
    return f"/management/v1/users/{quote(user_id, safe='')}/grants"


def user_grant_path(user_id: str, grant_id: str) -> str:
    """``UpdateUserGrant`` (PUT) and ``RemoveUserGrant`` (DELETE) of one grant."""
    return f"{user_grants_path(user_id)}/{quote(grant_id, safe='')}"


def add_grant_request(project_id: str, role_keys: list[str]) -> dict[str, Any]:
    return {"projectId": project_id, "roleKeys": role_keys}


def update_grant_request(role_keys: list[str]) -> dict[str, Any]:
    return {"roleKeys": role_keys}
