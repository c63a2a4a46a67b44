"""ZITADEL's authorization service v2: user grants without the management API (docs/roles.md); no HTTP here.

The management API v1 (``/management/v1``) that sets user grants is retired with the other v1
APIs (zitadel/zitadel#10899); its successor is ``zitadel.authorization.v2.AuthorizationService``
(proto/zitadel/authorization/v2/authorization_service.proto). Its methods have no REST mapping, so
they are called the Connect way: ``POST /zitadel.authorization.v2.AuthorizationService/<Method>``
with a JSON body (the official Python SDK calls them so too):

- ``ListAuthorizations`` ``{pagination{offset, limit, asc}, filters[{userId{id}} | {projectId{id}} |
  {organizationId{id}}]}`` → ``{authorizations[{id, project{id}, organization{id}, user{id},
  roles[{key}]}]}``;
- ``CreateAuthorization`` ``{userId, projectId, organizationId, roleKeys}`` → ``{id}``;
- ``UpdateAuthorization`` ``{id, roleKeys}`` (the full list: keys left out are revoked);
- ``DeleteAuthorization`` ``{id}`` (an absent one is a success).

Example::

    found = client.request("POST", LIST_PATH, list_request(user_id="u1", project_id="p1"))
    grants_of(found)  # [{"id": "g1", "userId": "u1", "projectId": "p1", "roleKeys": ["admin"]}]
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "SERVICE",
    "LIST_PATH",
    "CREATE_PATH",
    "UPDATE_PATH",
    "DELETE_PATH",
    "list_request",
    "create_request",
    "grants_of",
]

SERVICE = "/zitadel.authorization.v2.AuthorizationService/"
LIST_PATH = SERVICE + "ListAuthorizations"
CREATE_PATH = SERVICE + "CreateAuthorization"
UPDATE_PATH = SERVICE + "UpdateAuthorization"
DELETE_PATH = SERVICE + "DeleteAuthorization"


def list_request(
    user_id: str = "", project_id: str = "", org_id: str = "", offset: int = 0, limit: int = 1000
) -> dict:
    """A ListAuthorizations request: every filter given must hold."""
    filters: list[dict] = []
    for name, value in (("userId", user_id), ("projectId", project_id), ("organizationId", org_id)):
        if value:
            filters.append({name: {"id": value}})
    return {"pagination": {"offset": str(offset), "limit": limit, "asc": True}, "filters": filters}


def create_request(user_id: str, project_id: str, org_id: str, role_keys: list[str]) -> dict:
    return {"userId": user_id, "projectId": project_id, "organizationId": org_id, "roleKeys": list(role_keys)}


def grants_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """ListAuthorizations' answer as the management API's grants: ``{id, userId, projectId, roleKeys}``."""
    out = []
    for item in answer.get("authorizations") or []:
        if isinstance(item, dict):
            out.append(
                {
                    "id": str(item.get("id") or ""),
                    "userId": str((item.get("user") or {}).get("id") or ""),
                    "projectId": str((item.get("project") or {}).get("id") or ""),
                    "orgId": str((item.get("organization") or {}).get("id") or ""),
                    "roleKeys": [str(r.get("key")) for r in item.get("roles") or [] if isinstance(r, dict)],
                }
            )
    return out
