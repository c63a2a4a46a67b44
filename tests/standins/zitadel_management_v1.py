"""ZITADEL's management API v1, the user-grant calls a scheduled sync makes (docs/sync.md#grants).

``ListUserGrants`` (``POST /management/v1/users/grants/_search``), ``AddUserGrant``
(``POST /management/v1/users/{user_id}/grants``), ``UpdateUserGrant`` (``PUT
.../grants/{grant_id}``, the full role list) and ``RemoveUserGrant`` (``DELETE .../grants/{id}``),
acting in the org of the ``x-zitadel-orgid`` header, on the test server's grants (the ones an
import created, and these). The rules are ZITADEL's (docs/roles.md): a grant needs its user, its
project and every one of its roles, exactly; one grant per user and project
(``Errors.UserGrant.AlreadyExists``, 409); an update to the same roles is
``Errors.UserGrant.NotChanged`` (400); an unknown grant is ``Errors.UserGrant.NotFound`` (404).
"""

from __future__ import annotations

import re
import secrets
import urllib.parse
from typing import Any

__all__ = ["ManagementV1", "ManagementError"]

_GRANT = re.compile(r"^/management/v1/users/(?P<user>[^/]+)/grants(?:/(?P<grant>[^/]+))?$")


class ManagementError(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class ManagementV1:
    def __init__(self, server: Any) -> None:
        self._server = server
        self.calls: list[tuple[str, str]] = []

    def handle(self, method: str, path: str, body: dict | None, org_id: str) -> dict:
        state = self._server.state
        if not org_id:
            raise ManagementError(400, 3, "x-zitadel-orgid header missing")
        with state.lock:
            if method == "POST" and path == "/management/v1/users/grants/_search":
                answer = self._search(org_id, body or {})
            else:
                match = _GRANT.match(path)
                if match is None:
                    raise ManagementError(404, 5, "Not Found")
                user_id = urllib.parse.unquote(match.group("user"))
                grant_id = urllib.parse.unquote(match.group("grant") or "")
                if method == "POST" and not grant_id:
                    answer = self._add(org_id, user_id, body or {})
                elif method == "PUT" and grant_id:
                    answer = self._update(org_id, user_id, grant_id, body or {})
                elif method == "DELETE" and grant_id:
                    answer = self._remove(org_id, user_id, grant_id)
                else:
                    raise ManagementError(404, 5, "Not Found")
            self.calls.append((method, path))
            return answer

    def _grants(self, org_id: str) -> dict[str, tuple[str, str, list[str]]]:
        """grant id → (user id, project id, role keys) of ``org_id``."""
        state = self._server.state
        out = {}
        for (org, user, project, _), grant_id in state.user_grants.items():
            if org == org_id:
                out[grant_id] = (user, project, state.grant_keys.get(grant_id, []))
        return out

    def _search(self, org_id: str, body: dict) -> dict:
        user_filter = project_filter = None
        for query in body.get("queries") or []:
            if "userIdQuery" in query:
                user_filter = str(query["userIdQuery"].get("userId", ""))
            if "projectIdQuery" in query:
                project_filter = str(query["projectIdQuery"].get("projectId", ""))
        result = [
            {"id": gid, "userId": user, "projectId": project, "roleKeys": list(keys), "orgId": org_id}
            for gid, (user, project, keys) in sorted(self._grants(org_id).items())
            if (user_filter is None or user == user_filter)
            and (project_filter is None or project == project_filter)
        ]
        return {"details": {"totalResult": str(len(result))}, "result": result}

    def check_roles(self, project: str, keys: list[str]) -> None:
        """The project exists and defines every key (the authorization service v2 checks the same)."""
        state = self._server.state
        if project not in state.projects:
            raise ManagementError(400, 9, "ID=COMMAND-m9gsd Message=Errors.Project.NotFound")
        roles = state.project_roles.get(project, {})
        for key in keys:
            if roles.get(str(key).lower()) != key:
                raise ManagementError(400, 9, "ID=COMMAND-mm9F4 Message=Errors.Project.Role.NotFound")

    def add_grant(self, org_id: str, user_id: str, project: str, keys: list[str]) -> str:
        """ZITADEL's AddUserGrant command, which AddUserGrant here and CreateAuthorization of the
        authorization service v2 both reach (the caller holds the state's lock): the new grant's id."""
        state = self._server.state
        if user_id not in state.users or state.user_states.get(user_id) == "removed":
            raise ManagementError(400, 9, "ID=COMMAND-uXHNj Message=Errors.User.NotFound")
        self.check_roles(project, keys)
        unique = (org_id, user_id, project, "")
        if unique in state.user_grants:
            raise ManagementError(409, 6, "ID=V3-DKcYh Message=Errors.UserGrant.AlreadyExists")
        grant_id = f"grant-{secrets.token_hex(6)}"
        state.user_grants[unique] = grant_id
        state.grant_keys[grant_id] = keys
        state.emit(
            "user.grant.added",
            grant_id,
            "usergrant",
            org_id,
            {"userId": user_id, "projectId": project, "roleKeys": keys},
        )
        return grant_id

    def _add(self, org_id: str, user_id: str, body: dict) -> dict:
        project = str(body.get("projectId", ""))
        keys = [str(k) for k in body.get("roleKeys") or []]
        grant_id = self.add_grant(org_id, user_id, project, keys)
        return {"userGrantId": grant_id, "details": {"resourceOwner": org_id}}

    def _find(self, org_id: str, user_id: str, grant_id: str) -> tuple[str, str, list[str]]:
        grant = self._grants(org_id).get(grant_id)
        if grant is None or grant[0] != user_id:
            raise ManagementError(404, 5, "ID=COMMAND-3M9sd Message=Errors.UserGrant.NotFound")
        return grant

    def _update(self, org_id: str, user_id: str, grant_id: str, body: dict) -> dict:
        state = self._server.state
        _, project, keys = self._find(org_id, user_id, grant_id)
        new = [str(k) for k in body.get("roleKeys") or []]
        self.check_roles(project, new)
        if sorted(new) == sorted(keys):
            raise ManagementError(400, 9, "ID=COMMAND-Rs8fy Message=Errors.UserGrant.NotChanged")
        state.grant_keys[grant_id] = new
        state.emit("user.grant.changed", grant_id, "usergrant", org_id, {"roleKeys": new})
        return {"details": {"resourceOwner": org_id}}

    def _remove(self, org_id: str, user_id: str, grant_id: str) -> dict:
        state = self._server.state
        _, project, _ = self._find(org_id, user_id, grant_id)
        del state.user_grants[(org_id, user_id, project, "")]
        state.grant_keys.pop(grant_id, None)
        state.emit("user.grant.removed", grant_id, "usergrant", org_id, {})
        return {"details": {"resourceOwner": org_id}}
