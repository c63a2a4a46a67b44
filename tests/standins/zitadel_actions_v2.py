"""ZITADEL's Actions v2, session service v2 and SetPassword, as the test server answers them
(docs/companion.md#test-server). Modelled on ZITADEL's source (read 2026-11-27):

- targets and executions: proto/zitadel/action/v2 (``POST /v2/actions/targets``, ``.../search``,
  ``POST /v2/actions/targets/{id}`` (update; ``expirationSigningKey`` makes a new key),
  ``PUT /v2/actions/executions``, ``POST /v2/actions/executions/search``);
- how a request execution calls its targets: internal/api/grpc/server/middleware/
  execution_interceptor.go and internal/execution/execution.go. The payload is Go's
  ``json.Marshal`` of ``{"fullMethod", "instanceID", "orgID", "projectID", "userID", "request"}``
  (empty ids left out, ``request`` the protojson of the request message, compact, ``<>&``
  escaped); it is POSTed with ``Content-Type: application/json`` and, when the target has a
  signing key, ``ZITADEL-Signature: t=<unix>,v1=<hex HMAC-SHA256 over "<t>.<body>">``
  (pkg/actions/signing.go). A ``restWebhook``'s answer body is ignored unless it holds
  ``forwardedStatusCode``/``forwardedErrorMessage``; a non-2xx answer, an unreachable target or a
  timeout is an error, which fails the API call only when the target has ``interruptOnError``
  (``Errors.Execution.Failed``, PreconditionFailed). A ``restCall``'s answer replaces the request.
  Targets are found for the method, its service and ``all``;
- sessions: ``POST /v2/sessions`` (CreateSession), ``PATCH /v2/sessions/{id}`` (SetSession),
  ``GET /v2/sessions/{id}`` (GetSession); a password check on a user without a password fails
  with ``Errors.User.Password.NotSet`` (COMMAND-WEf3t, PreconditionFailed), a wrong one with
  ``Errors.User.Password.Invalid`` (InvalidArgument); internal/command/session.go;
- ``POST /v2/users/{id}/password`` (SetPassword): refused for a user in state *initial*
  (``Errors.User.NotInitialised``, COMMAND-M9dse, ``canUpdatePassword`` in
  internal/command/user_human_password.go): what the admin import makes of a user without
  password; else the password is kept the way this server keeps a plain password an update gave
  (the real server hashes it with its own hasher).

What a test reads: ``actions(server).calls`` (every call to a target: target id, method, status).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import passwap_rules
from zitadel_user_v2 import V2Error

__all__ = ["ActionsV2", "actions", "handle", "owns", "signature_header"]

INSTANCE_ID = "test-instance"
_SESSION = re.compile(r"^/v2/sessions(?:/(?P<id>[^/?]+))?(?:\?.*)?$")
_PASSWORD = re.compile(r"^/v2/users/(?P<id>[^/?]+)/password$")
_TARGET = re.compile(r"^/v2/actions/targets(?:/(?P<id>[^/?]+))?$")

# Field numbers order protojson's output; the messages a session request carries.
_FIELD_ORDER = {
    "CreateSession": ["checks", "metadata", "challenges", "userAgent", "lifetime"],
    "SetSession": ["sessionId", "sessionToken", "checks", "metadata", "challenges", "lifetime"],
    "checks": ["user", "password", "webAuthN", "idpIntent", "totp", "otpSms", "otpEmail"],
}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def go_json(value: Any) -> bytes:
    """What Go's ``json.Marshal`` writes: compact, UTF-8, ``<``, ``>``, ``&``, U+2028/9 escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


def signature_header(body: bytes, key: str, at: int) -> str:
    mac = hmac.new(key.encode(), str(at).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={mac}"


def _ordered(message: dict, order: list[str]) -> dict:
    out = {k: message[k] for k in order if k in message}
    out.update({k: v for k, v in message.items() if k not in out})
    if isinstance(out.get("checks"), dict):
        out["checks"] = _ordered(out["checks"], _FIELD_ORDER["checks"])
    return out


@dataclasses.dataclass
class _Target:
    id: str
    name: str
    endpoint: str
    timeout: str
    kind: str  # restWebhook | restCall | restAsync
    interrupt_on_error: bool
    signing_key: str
    created: str
    changed: str

    def view(self) -> dict:
        kind: dict = {} if self.kind == "restAsync" else {"interruptOnError": self.interrupt_on_error}
        return {
            "id": self.id,
            "creationDate": self.created,
            "changeDate": self.changed,
            "name": self.name,
            self.kind: kind,
            "timeout": self.timeout,
            "endpoint": self.endpoint,
            "signingKey": self.signing_key,
            "payloadType": "PAYLOAD_TYPE_JSON",
        }


class ActionsV2:
    def __init__(self, server: Any) -> None:
        self._server = server
        self.lock = threading.Lock()
        self.targets: dict[str, _Target] = {}
        self.executions: dict[str, list[str]] = {}  # condition ("request:<method>") -> target ids
        self.sessions: dict[str, dict] = {}
        self.calls: list[tuple[str, str, int]] = []  # (target id, full method, HTTP status or 0)
        self.caller_user_id = "login-client"  # the ctxData.UserID of the calls (the login UI)

    # --- targets and executions --------------------------------------------------------------
    def _target_fields(self, body: dict, target: _Target | None) -> dict:
        kinds = [k for k in ("restWebhook", "restCall", "restAsync") if k in body]
        if len(kinds) > 1:
            raise V2Error(400, 3, "invalid request: more than one target type")
        fields: dict = {}
        if kinds:
            fields["kind"] = kinds[0]
            fields["interrupt_on_error"] = bool((body[kinds[0]] or {}).get("interruptOnError"))
        elif target is None:
            raise V2Error(400, 3, "invalid CreateTargetRequest.TargetType: value is required")
        if "timeout" in body:
            from zitadel_server import parse_go_duration

            try:
                seconds = parse_go_duration(str(body["timeout"]))
            except ValueError:
                raise V2Error(400, 3, "invalid timeout") from None
            if not 0 <= seconds <= 270:
                raise V2Error(400, 3, "invalid CreateTargetRequest.Timeout: value must be at most 270s")
            fields["timeout"] = str(body["timeout"])
        elif target is None:
            raise V2Error(400, 3, "invalid CreateTargetRequest.Timeout: value is required")
        if "endpoint" in body:
            endpoint = str(body["endpoint"])
            if not 1 <= len(endpoint) <= 2048:
                raise V2Error(400, 3, "invalid CreateTargetRequest.Endpoint: length out of range")
            fields["endpoint"] = endpoint
        elif target is None:
            raise V2Error(400, 3, "invalid CreateTargetRequest.Endpoint: value length must be at least 1")
        if body.get("payloadType") not in (None, "PAYLOAD_TYPE_UNSPECIFIED", "PAYLOAD_TYPE_JSON"):
            raise V2Error(400, 3, "this test server models PAYLOAD_TYPE_JSON only")
        return fields

    def create_target(self, body: dict) -> dict:
        name = str(body.get("name") or "")
        if not 1 <= len(name) <= 1000:
            raise V2Error(400, 3, "invalid CreateTargetRequest.Name: value length must be at least 1")
        fields = self._target_fields(body, None)
        with self.lock:
            if any(t.name == name for t in self.targets.values()):
                raise V2Error(409, 6, "Errors.Target.AlreadyExists")
            now = _now()
            target = _Target(
                id=str(300000000000000000 + len(self.targets) + 1),
                name=name,
                signing_key=secrets.token_urlsafe(24),
                created=now,
                changed=now,
                **fields,
            )
            self.targets[target.id] = target
        return {"id": target.id, "creationDate": target.created, "signingKey": target.signing_key}

    def update_target(self, target_id: str, body: dict) -> dict:
        with self.lock:
            target = self.targets.get(target_id)
            if target is None:
                raise V2Error(404, 5, "Errors.Target.NotFound")
            for name, value in self._target_fields(body, target).items():
                setattr(target, name, value)
            if "name" in body:
                target.name = str(body["name"])
            answer: dict = {}
            if "expirationSigningKey" in body:
                target.signing_key = secrets.token_urlsafe(24)
                answer["signingKey"] = target.signing_key
            target.changed = _now()
            answer["changeDate"] = target.changed
        return answer

    def list_targets(self, body: dict) -> dict:
        with self.lock:
            found = list(self.targets.values())
        for item in body.get("filters") or []:
            name_filter = item.get("targetNameFilter")
            if name_filter:
                found = [t for t in found if t.name == name_filter.get("targetName")]
            ids = (item.get("inTargetIdsFilter") or {}).get("targetIds")
            if ids is not None:
                found = [t for t in found if t.id in ids]
        return {"pagination": {"totalResult": str(len(found))}, "targets": [t.view() for t in found]}

    def set_execution(self, body: dict) -> dict:
        request = (body.get("condition") or {}).get("request") or {}
        if "method" in request:
            key = "request:" + str(request["method"])
        elif "service" in request:
            key = "request:" + str(request["service"])
        elif request.get("all"):
            key = "request:all"
        else:
            raise V2Error(400, 3, "this test server models request conditions only")
        targets = [str(t) for t in body.get("targets") or []]
        with self.lock:
            if any(t not in self.targets for t in targets):
                raise V2Error(404, 5, "Errors.Target.NotFound")
            self.executions[key] = targets
        return {"setDate": _now()}

    def list_executions(self) -> dict:
        with self.lock:
            items = [
                {"condition": {"request": _condition(key)}, "targets": list(targets)}
                for key, targets in self.executions.items()
                if targets
            ]
        return {"pagination": {"totalResult": str(len(items))}, "executions": items}

    # --- calling targets -----------------------------------------------------------------------
    def targets_for(self, full_method: str) -> list[_Target]:
        service = full_method.split("/")[1]
        with self.lock:
            ids = [
                t
                for key in ("request:" + full_method, "request:" + service, "request:all")
                for t in self.executions.get(key, [])
            ]
            return [self.targets[t] for t in ids if t in self.targets]

    def run_request_targets(self, full_method: str, request: dict) -> dict:
        """Call the request targets in order; the request as it goes on; V2Error to fail the call."""
        for target in self.targets_for(full_method):
            payload = {"fullMethod": full_method, "instanceID": INSTANCE_ID, "userID": self.caller_user_id}
            payload["request"] = request
            body = go_json(payload)
            error, answer = self._call(target, full_method, body)
            if error is not None and target.kind != "restAsync" and target.interrupt_on_error:
                raise error
            if error is None and target.kind == "restCall" and answer:
                try:
                    replaced = json.loads(answer)
                except ValueError:
                    replaced = None
                if isinstance(replaced, dict):
                    request = replaced  # protojson.Unmarshal resets the message first
        return request

    def _call(self, target: _Target, full_method: str, body: bytes) -> tuple[V2Error | None, bytes]:
        headers = {"Content-Type": "application/json"}
        if target.signing_key:
            headers["ZITADEL-Signature"] = signature_header(body, target.signing_key, int(time.time()))
        from zitadel_server import parse_go_duration

        timeout = parse_go_duration(target.timeout) or 10.0
        request = urllib.request.Request(target.endpoint, data=body, headers=headers, method="POST")
        failed = V2Error(400, 9, "ID=EXEC-dra6yamk98 Message=Errors.Execution.Failed")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                data, status = answer.read(), answer.status
        except urllib.error.HTTPError as err:
            self.calls.append((target.id, full_method, err.code))
            return failed, b""
        except (OSError, ValueError):
            self.calls.append((target.id, full_method, 0))
            return failed, b""
        self.calls.append((target.id, full_method, status))
        try:
            forwarded = json.loads(data) if data else {}
        except ValueError:
            forwarded = {}
        if isinstance(forwarded, dict) and (
            forwarded.get("forwardedStatusCode") or forwarded.get("forwardedErrorMessage")
        ):
            code = int(forwarded.get("forwardedStatusCode") or 0)
            message = str(forwarded.get("forwardedErrorMessage") or "")
            return V2Error(code if 400 <= code < 500 else 400, 9, message), b""
        return None, data

    # --- sessions and passwords ------------------------------------------------------------------
    def _user_for(self, check: dict) -> str:
        state = self._server.state
        with state.lock:
            if check.get("userId"):
                user_id = str(check["userId"])
                if user_id in state.users and state.user_states.get(user_id) != "removed":
                    return user_id
            elif check.get("loginName"):
                name = str(check["loginName"]).casefold()
                for user_id, (_, user) in state.users.items():
                    email = str((user.get("email") or {}).get("email") or "").casefold()
                    if state.user_states.get(user_id) != "removed" and name in (
                        str(user.get("userName") or "").casefold(),
                        email,
                    ):
                        return user_id
        raise V2Error(404, 5, "ID=QUERY-Dfbg2 Message=Errors.User.NotFound")

    def _check_password(self, user_id: str, password: str) -> None:
        state = self._server.state
        with state.lock:
            _, user = state.users[user_id]
            plain = user.get("password")
            encoded = (user.get("hashedPassword") or {}).get("value")
        if not plain and not encoded:
            raise V2Error(400, 9, "ID=COMMAND-WEf3t Message=Errors.User.Password.NotSet")
        if plain:
            good = hmac.compare_digest(str(plain).encode(), password.encode())
        else:
            try:
                good = passwap_rules.verify(str(encoded), password)
            except passwap_rules.Refused:
                good = False
        if not good:
            raise V2Error(400, 3, "ID=COMMAND-3M0fs Message=Errors.User.Password.Invalid")

    def _apply_checks(self, session: dict, checks: dict) -> None:
        user = checks.get("user")
        if user:
            user_id = self._user_for(user)
            if session.get("userId") and session["userId"] != user_id:
                raise V2Error(400, 3, "user change not possible")
            session["userId"] = user_id
            session["userCheckedAt"] = _now()
        password = checks.get("password")
        if password is not None:
            if not session.get("userId"):
                raise V2Error(400, 9, "ID=COMMAND-Sfw3f Message=Errors.User.UserIDMissing")
            self._check_password(session["userId"], str(password.get("password") or ""))
            session["passwordCheckedAt"] = _now()

    def create_session(self, body: dict) -> dict:
        request = self.run_request_targets(
            "/zitadel.session.v2.SessionService/CreateSession", _ordered(body, _FIELD_ORDER["CreateSession"])
        )
        session: dict = {"id": str(400000000000000000 + len(self.sessions) + 1)}
        self._apply_checks(session, request.get("checks") or {})
        session["token"] = secrets.token_urlsafe(24)
        with self.lock:
            self.sessions[session["id"]] = session
        return {
            "details": {"changeDate": _now()},
            "sessionId": session["id"],
            "sessionToken": session["token"],
        }

    def set_session(self, session_id: str, body: dict) -> dict:
        with self.lock:
            stored = self.sessions.get(session_id)
        if stored is None:
            raise V2Error(404, 5, "ID=COMMAND-Df4b3 Message=Errors.Session.NotExisting")
        request = self.run_request_targets(
            "/zitadel.session.v2.SessionService/SetSession",
            _ordered({"sessionId": session_id, **body}, _FIELD_ORDER["SetSession"]),
        )
        session = dict(stored)
        self._apply_checks(session, request.get("checks") or {})
        session["token"] = secrets.token_urlsafe(24)
        with self.lock:
            self.sessions[session_id] = session
        return {"details": {"changeDate": _now()}, "sessionToken": session["token"]}

    def get_session(self, session_id: str) -> dict:
        with self.lock:
            session = self.sessions.get(session_id)
        if session is None:
            raise V2Error(404, 5, "ID=QUERY-SFeaa Message=Errors.Session.NotExisting")
        factors: dict = {}
        if session.get("userId"):
            factors["user"] = {"verifiedAt": session["userCheckedAt"], "id": session["userId"]}
        if session.get("passwordCheckedAt"):
            factors["password"] = {"verifiedAt": session["passwordCheckedAt"]}
        return {"session": {"id": session_id, "factors": factors}}

    def set_password(self, user_id: str, body: dict) -> dict:
        new = body.get("newPassword") or {}
        password = new.get("password")
        if not isinstance(password, str) or not password:
            raise V2Error(400, 3, "invalid SetPasswordRequest.NewPassword: value is required")
        state = self._server.state
        with state.lock:
            if user_id not in state.users or state.user_states.get(user_id) == "removed":
                raise V2Error(404, 5, "ID=COMMAND-4M0fs Message=Errors.User.NotFound")
            if state.user_states.get(user_id) == "initial":  # canUpdatePassword
                raise V2Error(400, 9, "ID=COMMAND-M9dse Message=Errors.User.NotInitialised")
            org_id, user = state.users[user_id]
            user.pop("hashedPassword", None)
            user["password"] = password
            if new.get("changeRequired"):
                user["passwordChangeRequired"] = True
            else:
                user.pop("passwordChangeRequired", None)
            state.emit("user.human.password.changed", user_id, "user", org_id, {})
            sequence = str(len(state.events))
        return {"details": {"sequence": sequence, "changeDate": _now(), "resourceOwner": org_id}}


def _condition(key: str) -> dict:
    value = key.split(":", 1)[1]
    if value == "all":
        return {"all": True}
    return {"method": value} if value.startswith("/") else {"service": value}


_BY_SERVER: dict[int, ActionsV2] = {}
_BY_SERVER_LOCK = threading.Lock()


def actions(server: Any) -> ActionsV2:
    """The Actions v2 and session state of ``server`` (made at its first use)."""
    with _BY_SERVER_LOCK:
        found = getattr(server, "_actions_v2", None)
        if found is None:
            found = ActionsV2(server)
            server._actions_v2 = found
        return found


def owns(method: str, path: str) -> bool:
    """True for the calls this module answers."""
    plain = urllib.parse.urlsplit(path).path
    return (
        plain.startswith("/v2/actions/")
        or _SESSION.match(plain) is not None
        or (method == "POST" and _PASSWORD.match(plain) is not None)
    )


def handle(server: Any, method: str, path: str, body: dict | None) -> dict:
    """Answer one call; raises V2Error like the other v2 calls."""
    state = actions(server)
    plain = urllib.parse.urlsplit(path).path
    body = body or {}
    password = _PASSWORD.match(plain)
    if password is not None:
        return state.set_password(urllib.parse.unquote(password.group("id")), body)
    session = _SESSION.match(plain)
    if session is not None:
        session_id = urllib.parse.unquote(session.group("id") or "")
        if method == "POST" and not session_id:
            return state.create_session(body)
        if method == "PATCH" and session_id:
            return state.set_session(session_id, body)
        if method == "GET" and session_id:
            return state.get_session(session_id)
        raise V2Error(404, 5, "Not Found")
    if plain == "/v2/actions/targets/search" and method == "POST":
        return state.list_targets(body)
    if plain == "/v2/actions/executions" and method == "PUT":
        return state.set_execution(body)
    if plain == "/v2/actions/executions/search" and method == "POST":
        return state.list_executions()
    target = _TARGET.match(plain)
    if target is not None and method == "POST":
        if target.group("id"):
            return state.update_target(urllib.parse.unquote(target.group("id")), body)
        return state.create_target(body)
    raise V2Error(404, 5, "Not Found")
