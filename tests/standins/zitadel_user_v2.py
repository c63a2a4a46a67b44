"""ZITADEL's user service v2, as the test server answers it (docs/sync.md): stateful, strict.

It works on the test server's own store (the users an import created), so a test can import on
day 1, sync on day 2, and compare what the server holds with a fresh import of day 2. The rules
modelled are the ones a sync meets (docs/sync.md#traps):

- a user imported without IdP links and with an unverified e-mail or no password is in state
  *initial*: ``deactivate`` answers ``Errors.User.CantDeactivateInitial`` (400); ``lock`` works;
- deactivating an inactive user → ``Errors.User.AlreadyInactive``; reactivating a user who is not
  inactive → ``Errors.User.NotInactive``; unlocking one not locked → ``Errors.User.NotLocked``;
  an unknown or removed user → ``Errors.User.NotFound`` (404);
- every password write is a ``user.human.password.changed`` event, even of the same hash; the hash
  must pass the server's passwap rules;
- an e-mail or phone set without ``isVerified`` or ``returnCode`` sends a code: recorded in
  ``notifications`` (a sync must leave it empty);
- ``DeleteUserMetadata`` fails as a whole with ``Errors.Metadata.KeyNotExisting`` when a key is absent;
- ``AddIDPLink`` of a pair another user holds → ``Errors.User.ExternalIDP.AlreadyExists`` (409);
- locking a user who is neither active nor initial (a locked one too) →
  ``Errors.User.ShouldBeActiveOrInitial`` (zitadel internal/command/user_v2.go ``LockUserV2``);
- ``ListUserMetadata`` (``POST .../metadata/search``), ``ListIDPLinks`` (``POST .../links/_search``)
  and ``ListAuthenticationMethodTypes`` (``GET .../authentication_methods``: password, IdP, TOTP)
  answer what the user holds, for a sync's and verify's read-back.

Every request met ZITADEL's published schema before it gets here (lengths, forms, oneofs:
tests/standins/schema_check_v2.py, docs/sync.md#schema-check); this module models only the state.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

import passwap_rules

__all__ = ["UserServiceV2", "V2Error", "initial_state", "gateway_body", "TRANSLATED"]

_PATH = re.compile(
    r"^/v2/users/(?:human/(?P<human>[^/]+)|(?P<id>[^/?]+)(?:/(?P<rest>[^?]*))?)(?:\?(?P<query>.*))?$"
)


class V2Error(Exception):
    """An error answer; ``message`` ``"ID=<detail id> Message=<key>"`` for ZITADEL's own errors
    (rendered by ``gateway_body``), any other text for errors without a detail (request validation,
    the gateway's routing)."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# How ZITADEL's REST gateway writes an error (internal/api/grpc/gerrors/zitadel_errors.go
# ``ZITADELToGRPCError``: the message is ``key + " (" + id + ")"`` after the i18n interceptor
# translated the key into the instance's language, and the details hold one
# ``zitadel.v1.ErrorDetail{id, message}``; a key without a translation stays the key). The test
# server's instance speaks German for the answers a client must tell apart by code and detail id
# (the texts are ours, in the manner of ZITADEL's de.yaml): a client that matches English words or
# the key in the text fails against it, as it would against a real instance in another language.
TRANSLATED = {
    "Errors.User.AlreadyExisting": "Benutzer existiert bereits",
    "Errors.User.AlreadyExists": "Der Benutzername ist bereits vergeben",
    "Errors.User.ExternalIDP.AlreadyExists": "Der externe Login ist bereits einem Benutzer zugeordnet",
    "Errors.PermissionDenied": "Keine Berechtigung",
    "Errors.Quota.Access.Exhausted": "Das Kontingent ist aufgebraucht",
    "Errors.Query.LimitExceeded": "Die angefragte Menge ist zu gross",
}
_ZITADEL_ERROR = re.compile(r"^ID=(?P<id>\S+) Message=(?P<key>.+)$")
_DETAIL_TYPE = "type.googleapis.com/zitadel.v1.ErrorDetail"


def gateway_body(code: int, message: str) -> dict:
    """The JSON body of an error answer as ZITADEL's REST gateway writes it."""
    match = _ZITADEL_ERROR.match(message)
    if match is None:
        return {"code": code, "message": message, "details": []}
    text = TRANSLATED.get(match.group("key"), match.group("key"))
    detail = {"@type": _DETAIL_TYPE, "id": match.group("id"), "message": text}
    return {"code": code, "message": f"{text} ({match.group('id')})", "details": [detail]}


def _not_found() -> V2Error:
    return V2Error(404, 5, "ID=COMMAND-4M0fs Message=Errors.User.NotFound")


def initial_state(user: dict) -> str:
    """``initial`` for an imported user without links whose e-mail is unverified or who has no
    password; else ``active``."""
    email_verified = bool((user.get("email") or {}).get("isEmailVerified"))
    has_password = bool((user.get("hashedPassword") or {}).get("value")) or bool(user.get("password"))
    if not user.get("idps") and (not email_verified or not has_password):
        return "initial"
    return "active"


class UserServiceV2:
    """Answers ``/v2/users/...`` on the server's state; ``handle`` returns the JSON answer."""

    def __init__(self, server: Any) -> None:
        self._server = server
        self.notifications: list[tuple[str, str]] = []  # (user id, "email" | "phone")
        self.calls: list[tuple[str, str]] = []  # (method, path) of each accepted call
        # Users whose updates are answered 200 but not applied: what verify must catch.
        self.lost_updates: set[str] = set()

    def handle(self, method: str, path: str, body: dict | None) -> dict:
        match = _PATH.match(path)
        if match is None:
            raise V2Error(404, 5, "Not Found")
        query = urllib.parse.parse_qs(match.group("query") or "")
        user_id = urllib.parse.unquote(match.group("human") or match.group("id") or "")
        rest = match.group("rest") or ""
        state = self._server.state
        with state.lock:
            if user_id not in state.users or state.user_states.get(user_id) == "removed":
                raise _not_found()  # DeleteUser of a user gone: the sync counts it as done
            org_id, user = state.users[user_id]
            if match.group("human") is not None and method == "PUT":
                answer = self._update(user_id, org_id, user, body or {})
            elif method == "GET" and not rest:
                answer = {"user": self._view(user_id, org_id, user)}
            elif method == "POST" and rest in ("deactivate", "reactivate", "lock", "unlock"):
                answer = self._state_change(user_id, org_id, rest)
            elif method == "DELETE" and not rest:
                state.user_states[user_id] = "removed"
                state.user_names.discard(user["userName"])
                state.emit("user.removed", user_id, "user", org_id, {})
                answer = {}
            elif method == "DELETE" and rest == "phone":
                if not user.get("phone"):
                    raise V2Error(404, 5, "Errors.User.Phone.NotFound")
                user.pop("phone", None)
                state.emit("user.human.phone.removed", user_id, "user", org_id, {})
                answer = {}
            elif method == "POST" and rest == "links":
                answer = self._add_link(user_id, org_id, user, (body or {}).get("idpLink") or {})
            elif method == "DELETE" and rest.startswith("links/"):
                parts = rest.split("/")
                if len(parts) != 3:
                    raise V2Error(404, 5, "Not Found")
                idp, linked = urllib.parse.unquote(parts[1]), urllib.parse.unquote(parts[2])
                links = user.get("idps") or []
                kept = [i for i in links if (i.get("configId"), i.get("externalUserId")) != (idp, linked)]
                if len(kept) == len(links):
                    raise V2Error(404, 5, "Errors.User.ExternalIDP.NotFound")
                user["idps"] = kept
                state.emit("user.human.externalidp.removed", user_id, "user", org_id, {"idpConfigId": idp})
                answer = {}
            elif method == "POST" and rest == "metadata":
                for item in (body or {}).get("metadata") or []:
                    key = str(item["key"])
                    state.metadata[(user_id, key)] = str(item.get("value", ""))
                    state.emit("user.metadata.set", user_id, "user", org_id, {"key": key})
                answer = {}
            elif method == "POST" and rest == "metadata/search":  # ListUserMetadata
                held = sorted((k, v) for (u, k), v in state.metadata.items() if u == user_id)
                answer = {"metadata": [{"key": k, "value": v} for k, v in held]}
            elif method == "GET" and rest == "authentication_methods":  # ListAuthenticationMethodTypes
                held = (
                    (
                        "AUTHENTICATION_METHOD_TYPE_PASSWORD",
                        user.get("hashedPassword") or user.get("password"),
                    ),
                    ("AUTHENTICATION_METHOD_TYPE_IDP", user.get("idps")),
                    ("AUTHENTICATION_METHOD_TYPE_TOTP", user.get("otpCode")),
                )
                answer = {"authMethodTypes": [name for name, there in held if there]}
            elif method == "POST" and rest == "links/_search":  # ListIDPLinks
                answer = {
                    "result": [
                        {
                            "idpId": str(i.get("configId")),
                            "userId": str(i.get("externalUserId")),
                            "userName": str(i.get("displayName", "")),
                        }
                        for i in user.get("idps") or []
                    ]
                }
            elif method == "DELETE" and rest == "metadata":
                keys = query.get("keys") or []
                if any((user_id, k) not in state.metadata for k in keys):
                    raise V2Error(404, 5, "ID=META-ko9d3 Message=Errors.Metadata.KeyNotExisting")
                for key in keys:
                    del state.metadata[(user_id, key)]
                    state.emit("user.metadata.removed", user_id, "user", org_id, {"key": key})
                answer = {}
            else:
                raise V2Error(404, 5, "Not Found")
            self.calls.append((method, path))
            return answer

    # --- calls --------------------------------------------------------------------------------
    def _update(self, user_id: str, org_id: str, user: dict, body: dict) -> dict:
        state = self._server.state
        if user_id in self.lost_updates:
            return {"details": {"sequence": str(len(state.events)), "resourceOwner": org_id}}
        # Lengths, forms and oneofs were checked against the published schema before (the
        # server's check_v2_schema); what is left is what only the state can tell.
        if "username" in body:
            name = str(body["username"] or "")
            if name != user["userName"] and name in state.user_names:
                raise V2Error(
                    409, 6, "ID=V3-DKcYh Message=Errors.User.AlreadyExists"
                )  # the unique constraint
        if "password" in body:
            password = body["password"] or {}
            hashed = (password.get("hashedPassword") or {}).get("hash")
            if hashed is not None:
                refusal = passwap_rules.server_refusal(
                    str(hashed), self._server.hash_verifiers, self._server.hash_limits
                )
                if refusal is not None:
                    raise V2Error(400, 3, refusal)
            elif not (password.get("password") or {}).get("password"):
                raise V2Error(400, 3, "invalid UpdateHumanUserRequest.Password: hash or password required")
        profile = body.get("profile")
        # Valid: apply.
        if "username" in body and body["username"] != user["userName"]:
            state.user_names.discard(user["userName"])
            user["userName"] = body["username"]
            state.user_names.add(user["userName"])
            state.emit("user.username.changed", user_id, "user", org_id, {"userName": user["userName"]})
        if profile is not None:
            new = {"firstName": profile["givenName"], "lastName": profile["familyName"]}
            for src, dst in (
                ("nickName", "nickName"),
                ("displayName", "displayName"),
                ("preferredLanguage", "preferredLanguage"),
            ):
                if profile.get(src):
                    new[dst] = profile[src]
            if user.get("profile") != new:
                user["profile"] = new
                state.emit("user.human.profile.changed", user_id, "user", org_id, {})
        if "email" in body:
            email = body["email"] or {}
            verified = email.get("isVerified") is True
            if not verified and "returnCode" not in email:
                self.notifications.append((user_id, "email"))
            user["email"] = (
                {"email": email.get("email"), "isEmailVerified": True}
                if verified
                else {"email": email.get("email")}
            )
            state.emit("user.human.email.changed", user_id, "user", org_id, {})
            if (
                verified
                and state.user_states.get(user_id) == "initial"
                and (user.get("hashedPassword") or user.get("password"))
            ):
                state.user_states[user_id] = "active"
        if "phone" in body:
            phone = body["phone"] or {}
            verified = phone.get("isVerified") is True
            if not verified and "returnCode" not in phone:
                self.notifications.append((user_id, "phone"))
            user["phone"] = (
                {"phone": phone.get("phone"), "isPhoneVerified": True}
                if verified
                else {"phone": phone.get("phone")}
            )
            state.emit("user.human.phone.changed", user_id, "user", org_id, {})
        if "password" in body:
            password = body["password"] or {}
            hashed = (password.get("hashedPassword") or {}).get("hash")
            user.pop("password", None)
            if hashed is not None:
                user["hashedPassword"] = {"value": hashed}
                change_required = bool(password["hashedPassword"].get("changeRequired"))
            else:
                user.pop("hashedPassword", None)
                user["password"] = password["password"]["password"]
                change_required = bool(password["password"].get("changeRequired"))
            if change_required:
                user["passwordChangeRequired"] = True
            else:
                user.pop("passwordChangeRequired", None)
            state.emit("user.human.password.changed", user_id, "user", org_id, {})
        return {"details": {"sequence": str(len(state.events)), "resourceOwner": org_id}}

    def _state_change(self, user_id: str, org_id: str, verb: str) -> dict:
        state = self._server.state
        current = state.user_states.get(user_id, "active")
        if verb == "deactivate":
            if current == "initial":
                raise V2Error(400, 9, "ID=COMMAND-ke0fw Message=Errors.User.CantDeactivateInitial")
            if current == "inactive":
                raise V2Error(400, 9, "ID=COMMAND-5M0sf Message=Errors.User.AlreadyInactive")
            state.user_states[user_id] = "inactive"
            state.emit("user.deactivated", user_id, "user", org_id, {})
        elif verb == "reactivate":
            if current != "inactive":
                raise V2Error(400, 9, "ID=COMMAND-6M0sf Message=Errors.User.NotInactive")
            state.user_states[user_id] = "active"
            state.emit("user.reactivated", user_id, "user", org_id, {})
        elif verb == "lock":
            if current not in ("active", "initial"):
                raise V2Error(400, 9, "ID=COMMAND-3NN8v Message=Errors.User.ShouldBeActiveOrInitial")
            state.locked_from[user_id] = current
            state.user_states[user_id] = "locked"
            state.emit("user.locked", user_id, "user", org_id, {})
        else:  # unlock
            if current != "locked":
                raise V2Error(400, 9, "ID=COMMAND-4M0ds Message=Errors.User.NotLocked")
            state.user_states[user_id] = state.locked_from.pop(user_id, "active")
            state.emit("user.unlocked", user_id, "user", org_id, {})
        return {"details": {"sequence": str(len(state.events)), "resourceOwner": org_id}}

    def _add_link(self, user_id: str, org_id: str, user: dict, link: dict) -> dict:
        state = self._server.state
        idp, external = str(link["idpId"]), str(link["userId"])
        for _, other in state.users.values():
            if any(
                (i.get("configId"), i.get("externalUserId")) == (idp, external)
                for i in other.get("idps") or []
            ):
                raise V2Error(
                    409, 6, "ID=V3-DKcYh Message=Errors.User.ExternalIDP.AlreadyExists"
                )  # the unique constraint
        user.setdefault("idps", []).append(
            {"configId": idp, "externalUserId": external, "displayName": str(link.get("userName", ""))}
        )
        state.emit("user.human.externalidp.added", user_id, "user", org_id, {"idpConfigId": idp})
        return {"details": {"sequence": str(len(state.events)), "resourceOwner": org_id}}

    def _view(self, user_id: str, org_id: str, user: dict) -> dict:
        state = self._server.state
        names = {
            "active": "USER_STATE_ACTIVE",
            "initial": "USER_STATE_INITIAL",
            "inactive": "USER_STATE_INACTIVE",
            "locked": "USER_STATE_LOCKED",
        }
        profile = user.get("profile") or {}
        changed = self._password_changed(user_id, user)
        return {
            "userId": user_id,
            "details": {"resourceOwner": org_id},
            "state": names.get(state.user_states.get(user_id, "active"), "USER_STATE_UNSPECIFIED"),
            "username": user["userName"],
            "human": {
                "profile": {
                    "givenName": profile.get("firstName"),
                    "familyName": profile.get("lastName"),
                    "nickName": profile.get("nickName"),
                    "displayName": profile.get("displayName"),
                    "preferredLanguage": profile.get("preferredLanguage"),
                },
                "email": {
                    "email": (user.get("email") or {}).get("email"),
                    "isVerified": bool((user.get("email") or {}).get("isEmailVerified")),
                },
                "phone": {
                    "phone": (user.get("phone") or {}).get("phone"),
                    "isVerified": bool((user.get("phone") or {}).get("isPhoneVerified")),
                }
                if user.get("phone")
                else {},
                **({"passwordChanged": changed} if changed else {}),
            },
        }

    def _password_changed(self, user_id: str, user: dict) -> str | None:
        """HumanUser.passwordChanged: when the user's password (or hash) was last written, by an
        update, or by the import or creation that gave the user one."""
        if not (user.get("hashedPassword") or user.get("password")):
            return None
        written = ("user.human.password.changed", "user.human.added")
        for event in reversed(self._server.state.events):
            if event.aggregate_id == user_id and event.event_type in written:
                return event.created
        return None
