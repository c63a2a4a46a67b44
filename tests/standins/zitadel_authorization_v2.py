"""ZITADEL's authorization service v2, as the test server answers it (docs/roles.md).

``zitadel.authorization.v2.AuthorizationService`` (proto/zitadel/authorization/v2/
authorization_service.proto in zitadel/zitadel) has no ``google.api.http`` rules: it is served the
Connect way only, ``POST /zitadel.authorization.v2.AuthorizationService/<Method>`` with a JSON body.
Modelled on the test server's grants (the ones the import and the management API made):

- ``ListAuthorizations`` ``{pagination, filters[{userId|projectId|organizationId: {id}}]}`` →
  ``{pagination{totalResult}, authorizations[{id, project{id}, organization{id}, user{id}, state,
  roles[{key}]}]}``;
- ``CreateAuthorization`` ``{userId, projectId, organizationId, roleKeys}``: the rules of the
  management API's AddUserGrant (tests/standins/zitadel_management_v1.py): the user, the project
  and every role must exist, one authorization per user, project and org (its unique constraint:
  ``V3-DKcYh`` ``Errors.UserGrant.AlreadyExists``);
- ``UpdateAuthorization`` ``{id, roleKeys}`` (the full list); ``DeleteAuthorization`` ``{id}``
  (an unknown id is a success: "the desired state is already achieved").

The request rules are the proto's (``validate.rules``: ids 1..200 characters, role keys unique and
1..200); a key the message does not have is refused (stricter than the server, which may discard it,
so that the tool's requests are held to the proto). Errors are Connect's: ``{"code":
"already_exists", "message": "<text> (<id>)", "details": [{"type": "zitadel.v1.ErrorDetail",
"value": <base64 protobuf>, "debug": {...}}]}`` with Connect's HTTP status per code
(internal/api/grpc/gerrors/zitadel_errors.go ``ZITADELToConnectError``). ``authorization_v2 =
False``: a server without the service, whose mux answers the path 404 ``404 page not found``.
"""

from __future__ import annotations

import base64
from typing import Any

from zitadel_management_v1 import ManagementError
from zitadel_user_v2 import gateway_body

__all__ = ["SERVICE", "ConnectError", "owns", "handle", "connect_body"]

SERVICE = "/zitadel.authorization.v2.AuthorizationService/"
_WORDS = {3: "invalid_argument", 5: "not_found", 6: "already_exists", 7: "permission_denied",
          9: "failed_precondition", 16: "unauthenticated"}  # fmt: skip
_HTTP = {3: 400, 5: 404, 6: 409, 7: 403, 9: 400, 16: 401}  # Connect's HTTP status of each code
_FIELDS = {
    "ListAuthorizations": {"pagination", "sortingColumn", "filters"},
    "CreateAuthorization": {"userId", "projectId", "organizationId", "roleKeys"},
    "UpdateAuthorization": {"id", "roleKeys"},
    "DeleteAuthorization": {"id"},
}


class ConnectError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message
        self.status = _HTTP.get(code, 500)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def connect_body(code: int, message: str) -> dict:
    """The Connect error body ZITADEL writes for ``"ID=<id> Message=<key>"`` (or a plain text)."""
    gateway = gateway_body(code, message)
    body: dict[str, Any] = {"code": _WORDS.get(code, "unknown"), "message": gateway["message"]}
    details = []
    for detail in gateway["details"]:
        ident, text = detail["id"].encode(), detail["message"].encode()
        raw = b"\x0a" + _varint(len(ident)) + ident + b"\x12" + _varint(len(text)) + text
        value = base64.b64encode(raw).decode().rstrip("=")
        details.append(
            {
                "type": "zitadel.v1.ErrorDetail",
                "value": value,
                "debug": {"id": detail["id"], "message": detail["message"]},
            }
        )
    if details:
        body["details"] = details
    return body


def owns(path: str) -> bool:
    return path.startswith(SERVICE)


def _id(value: Any, where: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 200:
        raise ConnectError(3, f"invalid {where}: value length must be between 1 and 200 runes, inclusive")
    return value


def _keys(value: Any, where: str) -> list[str]:
    keys = list(value or [])
    if any(not isinstance(k, str) or not 1 <= len(k) <= 200 for k in keys) or len(set(keys)) != len(keys):
        raise ConnectError(3, f"invalid {where}: role keys must be unique, 1 to 200 runes each")
    return keys


def handle(server: Any, path: str, body: dict, orgs: frozenset[str] | None) -> dict:
    """One call; ``orgs``: the orgs an org-scoped credential manages (None: any)."""
    method = path[len(SERVICE) :]
    if method not in _FIELDS:
        raise ConnectError(12, f"{method} is not modelled by the test server")
    unknown = set(body) - _FIELDS[method]
    if unknown:
        raise ConnectError(3, f"unknown field {sorted(unknown)[0]!r} in {method}Request")
    state = server.state
    with state.lock:
        if method == "ListAuthorizations":
            return _list(state, body, orgs)
        if method == "CreateAuthorization":
            return _create(server, body, orgs)
        grant_id = _id(body.get("id"), f"{method}Request.Id")
        found = [(k, g) for k, g in state.user_grants.items() if g == grant_id]
        if found and orgs is not None and found[0][0][0] not in orgs:
            raise ConnectError(7, "ID=AUTHZ-HKJD33 Message=Errors.PermissionDenied")
        if method == "DeleteAuthorization":
            if found:
                del state.user_grants[found[0][0]]
                state.grant_keys.pop(grant_id, None)
                state.emit("user.grant.removed", grant_id, "usergrant", found[0][0][0], {})
            return {}
        if not found:
            raise ConnectError(5, "ID=COMMAND-3M9sd Message=Errors.UserGrant.NotFound")
        keys = _keys(body.get("roleKeys"), "UpdateAuthorizationRequest.RoleKeys")
        _check_roles(server, found[0][0][2], keys)
        if sorted(keys) != sorted(state.grant_keys.get(grant_id, [])):
            state.grant_keys[grant_id] = keys
            state.emit("user.grant.changed", grant_id, "usergrant", found[0][0][0], {"roleKeys": keys})
        return {}


def _check_roles(server: Any, project: str, keys: list[str]) -> None:
    try:
        server.management.check_roles(project, keys)  # the same rules as AddUserGrant
    except ManagementError as err:
        raise ConnectError(err.code, err.message) from None


def _create(server: Any, body: dict, orgs: frozenset[str] | None) -> dict:
    user = _id(body.get("userId"), "CreateAuthorizationRequest.UserId")
    project = _id(body.get("projectId"), "CreateAuthorizationRequest.ProjectId")
    org = _id(body.get("organizationId"), "CreateAuthorizationRequest.OrganizationId")
    keys = _keys(body.get("roleKeys"), "CreateAuthorizationRequest.RoleKeys")
    if orgs is not None and org not in orgs:
        raise ConnectError(7, "ID=AUTHZ-HKJD33 Message=Errors.PermissionDenied")
    try:
        grant_id = server.management.add_grant(org, user, project, keys)  # ZITADEL's one command
    except ManagementError as err:
        raise ConnectError(err.code, err.message) from None
    return {"id": grant_id, "creationDate": "2026-11-27T00:00:00Z"}


def _list(state: Any, body: dict, orgs: frozenset[str] | None) -> dict:
    wanted: dict[str, str] = {}
    for item in body.get("filters") or []:
        if not isinstance(item, dict) or len(item) != 1:
            raise ConnectError(3, "invalid AuthorizationsSearchFilter: exactly one filter is required")
        ((name, value),) = item.items()
        if name not in ("userId", "projectId", "organizationId"):
            raise ConnectError(3, f"the test server does not answer the filter {name!r}")
        wanted[name] = _id((value or {}).get("id"), f"AuthorizationsSearchFilter.{name}")
    if orgs is not None and wanted.get("organizationId", next(iter(orgs), "")) not in orgs:
        raise ConnectError(7, "ID=AUTHZ-HKJD33 Message=Errors.PermissionDenied")
    page = body.get("pagination") or {}
    offset, limit = int(page.get("offset") or 0), int(page.get("limit") or 100)
    rows = [
        {"id": grant_id, "project": {"id": project}, "organization": {"id": org}, "user": {"id": user},
         "state": "STATE_ACTIVE", "roles": [{"key": k} for k in state.grant_keys.get(grant_id, [])]}
        for (org, user, project, _), grant_id in sorted(state.user_grants.items())
        if (orgs is None or org in orgs)
        and wanted.get("userId", user) == user and wanted.get("projectId", project) == project
        and wanted.get("organizationId", org) == org
    ]  # fmt: skip
    return {"pagination": {"totalResult": str(len(rows)), "appliedLimit": str(limit)},
            "authorizations": rows[offset : offset + limit]}  # fmt: skip
