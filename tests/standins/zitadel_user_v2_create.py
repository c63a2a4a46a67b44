"""Creating users through ZITADEL's user service v2, and a server without the admin API (docs/user-v2.md).

What the test server answers for a target where ``/admin/v1/import`` is not the way in:

- ``AddHumanUser`` (``POST /v2/users/human``; the vendored ``@zitadel/proto`` 1.3.1 descriptors hold
  no REST rule for ``CreateUser``, so this is the REST call the schema check can judge) with the
  caller's own ``userId``, ``organization.orgId``, ``username``, ``profile``, ``email``,
  ``phone``, ``password | hashedPassword`` (the passwap rules of the import,
  tests/standins/passwap_rules.py), ``idpLinks``, ``totpSecret`` and ``metadata``. The user is stored
  in the shape of an import of the same entry (``import_shape``), with the same sign-in methods, so
  a test can compare the two servers' users. One difference is ZITADEL's own
  (internal/command/user_v2_human.go ``AddUserHuman``, called with ``allowInitMail`` false by the
  user service; ``shouldAddInitCode`` only runs for the v1 APIs): no initialisation code is added,
  so the user is *active* where the import leaves an unverified or password-less user *initial*.
  Every error is written as ZITADEL's REST gateway writes it: ``"<text> (<id>)"`` and a
  ``zitadel.v1.ErrorDetail`` (``zitadel_user_v2.gateway_body``), the text in the instance's language.
  The permission on the org comes first (``AUTHZ-HKJD33`` ``Errors.PermissionDenied``, 403, gRPC 7;
  internal/command/user_v2_human.go ``AddUserHuman`` at 021158d0 checks ``checkPermissionUpdateUser``
  and the org before the id), then an id in use, in any org, answers ``COMMAND-7yiox1isql``
  ``Errors.User.AlreadyExisting`` (FailedPrecondition: 400, gRPC 9; the exists check reads the id
  alone), a user name in use or an IdP link another user holds answers their unique constraint
  (eventstore v3 ``V3-DKcYh``, ``Errors.User.AlreadyExists`` / ``Errors.User.ExternalIDP.AlreadyExists``:
  409, gRPC 6: the same id for both); an e-mail or phone set with neither ``isVerified`` nor
  ``returnCode`` records a notification.
- ``CreateUser`` (``POST /v2/users/new``, zitadel/zitadel#9680; the message is the vendored
  ``CreateUserRequest``): ``organizationId``, ``userId``, ``username`` and ``human{...}``, created as
  ``AddHumanUser`` creates (internal/api/grpc/user/v2/human.go ``createUserTypeHuman``), answering
  ``{id, creationDate}``. It **drops** ``human.metadata`` (``createUserTypeHuman`` at e9d20ab4 builds
  its AddHumanUserRequest without ``Metadata``: zitadel/zitadel#11826) unless
  ``create_user_keeps_metadata`` (the later fix). ``create_user = False``: a server before it (the
  route answers 404 Not Found); ``add_human_user = False``: a server past AddHumanUser's deprecation;
  ``dropped_fields`` (e.g. ``{"totpSecret"}``): an older server whose gateway discards those fields.
- ``ListUsers`` (``POST /v2/users``) with ``organizationIdQuery``, ``inUserIdsQuery`` and
  ``userNameQuery`` (all of them must hold), paged by ``query{offset, limit}``; a limit above
  ``max_query_limit`` answers InvalidArgument ``QUERY-4M0fs`` ``Errors.Query.LimitExceeded``
  (internal/api/grpc/object/v2 ``ListQueryToQuery``: ``SystemDefaults.MaxQueryLimit``, 1000 by default).
- ``admin_api = False``: every ``/admin/v1/*`` path answers as ZITADEL's REST gateway answers a
  path no service serves: HTTP 404, gRPC code 5 ``Not Found`` (grpc-gateway's routing error).
- ``org_tokens`` (token → the org ids it manages): an org-scoped credential (an org's user
  manager). It may call the user service and the management API for its own orgs only; an admin
  call or ``x-zitadel-orgid`` of another org answers 403, gRPC code 7 ``No matching permissions
  found`` (``AUTH-5mWD2``), a create in or a user of another org ``AUTHZ-HKJD33``; ``ListUsers``
  leaves out the users it may not read.

Every request met the published schema before it gets here (schema_check_v2.py).
"""

from __future__ import annotations

import base64
import re
import time
import urllib.parse
from typing import Any

import passwap_rules
from zitadel_user_v2 import V2Error

__all__ = [
    "ADMIN_NOT_FOUND",
    "PERMISSION_DENIED",
    "admin_refusal",
    "absent_route",
    "NO_USER_WRITE",
    "scope_refusal",
    "owns",
    "handle",
    "import_shape",
    "call_cost",
    "stored_user",
    "same_but_state",
    "add_org",
    "add_org_token",
]

ADMIN_NOT_FOUND = (404, 5, "Not Found")
PERMISSION_DENIED = (403, 7, "ID=AUTH-5mWD2 Message=No matching permissions found")
# The command's own check of user.write on the org (internal/command permission checks).
NO_USER_WRITE = (403, 7, "ID=AUTHZ-HKJD33 Message=Errors.PermissionDenied")
CREATE_PATHS = ("/v2/users/human", "/v2/users/new")
_USER_PATH = re.compile(r"^/v2/users/(?!human$|new$)(?:human/)?(?P<id>[^/?]+)")
_GRANT_PATH = re.compile(r"^/management/v1/users/(?P<id>[^/?]+)/grants")


def _token(headers: Any) -> str:
    header = str(headers.get("Authorization", ""))
    return header[7:] if header.startswith("Bearer ") else ""


def token_orgs(server: Any, headers: Any) -> frozenset[str] | None:
    """The orgs an org-scoped credential is limited to; None for an instance-level one."""
    return getattr(server, "org_tokens", {}).get(_token(headers))


def absent_route(server: Any, method: str, path: str) -> tuple[int, int, str] | None:
    """404 for a create the server does not serve (its REST route does not exist), else None."""
    route = urllib.parse.urlsplit(path).path
    if method == "POST" and route == "/v2/users/human" and not getattr(server, "add_human_user", True):
        return ADMIN_NOT_FOUND
    if method == "POST" and route == "/v2/users/new" and not getattr(server, "create_user", True):
        return ADMIN_NOT_FOUND
    return None


def admin_refusal(server: Any, path: str, headers: Any) -> tuple[int, int, str] | None:
    """The answer to an ``/admin/v1/*`` call the server does not serve, or None."""
    if not path.startswith("/admin/v1/"):
        return None
    if not getattr(server, "admin_api", True):
        return ADMIN_NOT_FOUND
    if token_orgs(server, headers) is not None:
        return PERMISSION_DENIED
    return None


def call_cost(server: Any) -> None:
    """Sleep the server's per-call cost (``per_call_delay`` seconds; benchmarks/push_api.py)."""
    delay = float(getattr(server, "per_call_delay", 0.0) or 0.0)
    if delay:
        time.sleep(delay)


def scope_refusal(
    server: Any, method: str, path: str, body: dict | None, headers: Any
) -> tuple[int, int, str] | None:
    """403 when an org-scoped credential reaches outside its org, else None."""
    orgs = token_orgs(server, headers)
    if orgs is None:
        return None
    if path.startswith("/management/v1/") and headers.get("x-zitadel-orgid", "") not in orgs:
        return PERMISSION_DENIED
    if method == "POST" and path in CREATE_PATHS:
        wanted = _create_org(body or {})
        return None if wanted in orgs else NO_USER_WRITE
    match = _USER_PATH.match(path) or _GRANT_PATH.match(path)
    if match is None or path == "/v2/users":
        return None
    user_id = urllib.parse.unquote(match.group("id"))
    with server.state.lock:
        owner = (server.state.users.get(user_id) or ("",))[0]
    return NO_USER_WRITE if owner and owner not in orgs else None


def _create_org(request: dict) -> str:
    """The org a create names: ``organizationId`` (CreateUser) or ``organization.orgId``."""
    if "organizationId" in request:
        return str(request["organizationId"])
    return str((request.get("organization") or {}).get("orgId", ""))


def owns(method: str, path: str) -> bool:
    """True for the calls this module answers (AddHumanUser, CreateUser, ListUsers)."""
    return method == "POST" and urllib.parse.urlsplit(path).path in (*CREATE_PATHS, "/v2/users")


def handle(server: Any, method: str, path: str, body: dict | None, headers: Any) -> dict:
    """AddHumanUser, CreateUser or ListUsers; raises V2Error like the other user service calls."""
    route = urllib.parse.urlsplit(path).path
    if route == "/v2/users":
        return _list_users(server, body or {}, token_orgs(server, headers))
    if route == "/v2/users/new":
        return _create_user(server, _older_server(server, body or {}))
    return _add_human(server, _older_server(server, body or {}))


def _older_server(server: Any, request: dict) -> dict:
    """The request as a server whose protos lack ``server.dropped_fields`` reads it: its REST
    gateway discards unknown JSON fields without a word (``totpSecret`` exists since 2024)."""
    dropped = set(getattr(server, "dropped_fields", ()) or ())
    if not dropped:
        return request
    out = {k: v for k, v in request.items() if k not in dropped}
    if isinstance(out.get("human"), dict):
        out["human"] = {k: v for k, v in out["human"].items() if k not in dropped}
    return out


def _create_user(server: Any, request: dict) -> dict:
    """CreateUser of a human, as ``createUserTypeHuman`` hands it to AddHumanUser's command."""
    human = request.get("human")
    if not isinstance(human, dict):
        raise V2Error(400, 3, "the test server creates humans only")
    add: dict[str, Any] = {k: v for k, v in human.items() if k != "metadata"}
    if getattr(server, "create_user_keeps_metadata", False) and human.get("metadata"):
        add["metadata"] = human["metadata"]
    add["organization"] = {"orgId": str(request.get("organizationId", ""))}
    for key in ("userId", "username"):
        if request.get(key):
            add[key] = request[key]
    answer = _add_human(server, add, "/v2/users/new")
    return {"id": answer["userId"], "creationDate": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def import_shape(request: dict) -> tuple[str, str, dict, list[dict]]:
    """``(org id, user id, user, metadata)`` of an AddHumanUser request, the user in the shape of
    an import entry's ``user`` (ImportHumanUserRequest) and the metadata as ``userMetadata`` items."""
    org_id = str((request.get("organization") or {}).get("orgId", ""))
    user_id = str(request.get("userId", ""))
    profile = request.get("profile") or {}
    user: dict[str, Any] = {"userName": request.get("username") or ""}
    user["profile"] = {"firstName": profile.get("givenName"), "lastName": profile.get("familyName")}
    for key in ("nickName", "displayName", "preferredLanguage", "gender"):
        if profile.get(key):
            user["profile"][key] = profile[key]
    email = request.get("email") or {}
    user["email"] = {"email": email.get("email"), "isEmailVerified": email.get("isVerified") is True}
    phone = request.get("phone")
    if phone:
        user["phone"] = {"phone": phone.get("phone"), "isPhoneVerified": phone.get("isVerified") is True}
    hashed, plain = request.get("hashedPassword"), request.get("password")
    if hashed:
        user["hashedPassword"] = {"value": hashed.get("hash")}
    elif plain:
        user["password"] = plain.get("password")
    if (hashed or plain or {}).get("changeRequired"):
        user["passwordChangeRequired"] = True
    links = request.get("idpLinks") or []
    if links:
        user["idps"] = [
            {"configId": i.get("idpId"), "externalUserId": i.get("userId"), "displayName": i.get("userName")}
            for i in links
        ]
    if request.get("totpSecret"):
        user["otpCode"] = request["totpSecret"]
    metadata = [
        {"id": user_id, "key": m.get("key"), "value": m.get("value")} for m in request.get("metadata") or []
    ]
    return org_id, user_id, user, metadata


def _add_human(server: Any, request: dict, path: str = "/v2/users/human") -> dict:
    org_id, user_id, user, metadata = import_shape(request)
    delay = float(getattr(server.faults, "per_user_delay", 0.0) or 0.0)
    if delay:
        time.sleep(delay)  # the same work per user as the import's
    hashed = (user.get("hashedPassword") or {}).get("value")
    if hashed:
        refusal = passwap_rules.server_refusal(str(hashed), server.hash_verifiers, server.hash_limits)
        if refusal is not None:
            raise V2Error(400, 3, refusal)
    state = server.state
    with state.lock:
        if org_id not in state.orgs:
            raise V2Error(404, 5, "ID=COMMAND-4M9sf Message=Errors.Org.NotFound")
        if not user_id:
            user_id = f"gen-{len(state.users) + 1:08d}"
        if user_id in state.users and state.user_states.get(user_id) == "removed":
            del state.users[user_id]
        if user_id in state.users:  # any org's user: the exists check reads the id alone
            raise V2Error(400, 9, "ID=COMMAND-7yiox1isql Message=Errors.User.AlreadyExisting")
        if user["userName"] in state.user_names:  # the user name's unique constraint
            raise V2Error(409, 6, "ID=V3-DKcYh Message=Errors.User.AlreadyExists")
        if _links_held(state, user.get("idps") or []):  # the link's unique constraint
            raise V2Error(409, 6, "ID=V3-DKcYh Message=Errors.User.ExternalIDP.AlreadyExists")
        for kind in ("email", "phone"):
            sent = request.get(kind) or {}
            if sent and sent.get("isVerified") is not True and "returnCode" not in sent:
                server.v2.notifications.append((user_id, kind))
        state.users[user_id] = (org_id, user)
        state.user_states[user_id] = "active"  # no initialisation code through the user service
        state.user_names.add(user["userName"])
        state.created_count[user_id] = state.created_count.get(user_id, 0) + 1
        profile = user["profile"]
        state.emit(
            "user.human.added",
            user_id,
            "user",
            org_id,
            {
                "userName": user["userName"],
                "firstName": profile.get("firstName"),
                "lastName": profile.get("lastName"),
                "email": user["email"].get("email"),
            },
        )
        for item in metadata:
            state.metadata[(user_id, str(item["key"]))] = str(item.get("value", ""))
            state.emit("user.metadata.set", user_id, "user", org_id, {"key": item["key"]})
        server.v2.calls.append(("POST", path))
        return {"userId": user_id, "details": {"sequence": str(len(state.events)), "resourceOwner": org_id}}


def _links_held(state: Any, links: list[dict]) -> bool:
    """Any of ``links`` (configId, externalUserId) already held by a user (idp config + external id
    are unique per instance: ``NewAddUserIDPLinkUniqueConstraint``)."""
    wanted = {(i.get("configId"), i.get("externalUserId")) for i in links}
    return bool(wanted) and any(
        (i.get("configId"), i.get("externalUserId")) in wanted
        for uid, (_, other) in state.users.items()
        if state.user_states.get(uid) != "removed"
        for i in other.get("idps") or []
    )


def _matches(query: dict, user_id: str, org_id: str, user: dict) -> bool:
    if "organizationIdQuery" in query:
        return org_id == query["organizationIdQuery"].get("organizationId")
    if "inUserIdsQuery" in query:
        return user_id in (query["inUserIdsQuery"].get("userIds") or [])
    if "userNameQuery" in query:
        return user["userName"] == query["userNameQuery"].get("userName")
    raise V2Error(400, 3, f"the test server does not answer the query {sorted(query)}")


def _list_users(server: Any, request: dict, only_orgs: frozenset[str] | None) -> dict:
    page = request.get("query") or {}
    offset, limit = int(page.get("offset") or 0), int(page.get("limit") or 100)
    if limit > int(getattr(server, "max_query_limit", 1000) or 0) > 0:
        raise V2Error(400, 3, "ID=QUERY-4M0fs Message=Errors.Query.LimitExceeded")
    queries = request.get("queries") or []
    state = server.state
    with state.lock:
        found = [
            (uid, org, user)
            for uid, (org, user) in sorted(state.users.items())
            if state.user_states.get(uid) != "removed"
            and (only_orgs is None or org in only_orgs)
            and all(_matches(q, uid, org, user) for q in queries)
        ]
        views = [server.v2._view(uid, org, user) for uid, org, user in found[offset : offset + limit]]  # noqa: SLF001 - the stand-in's one view of a user
    return {"details": {"totalResult": str(len(found))}, "result": views}


def stored_user(server: Any, user_id: str) -> dict:
    """Everything the server holds of a user, as a test compares it: org, state, the stored entry
    (falsy values left out), metadata (decoded) and the sign-in methods it can use."""
    state = server.state
    with state.lock:
        org_id, user = state.users[user_id]
        meta = {k: v for (uid, k), v in state.metadata.items() if uid == user_id}
        current = state.user_states.get(user_id)
    entry = _drop_falsy(user)
    methods = sorted(
        name
        for name, held in (
            ("password", bool(user.get("hashedPassword") or user.get("password"))),
            ("idp", bool(user.get("idps"))),
            ("totp", bool(user.get("otpCode"))),
        )
        if held
    )
    return {
        "org": org_id,
        "state": current,
        "user": entry,
        "metadata": {k: base64.b64decode(v) for k, v in sorted(meta.items())},
        "signIn": methods,
    }


def same_but_state(created: dict, imported: dict) -> bool:
    """Two ``stored_user`` views alike in all but what differs as ZITADEL's does: the user service
    makes *active* what the import leaves *initial* (the module docstring), and keeps the
    ``passwordChangeRequired`` of a hash that the import drops (``AddPasswordData(hash, false)``)."""
    if imported["state"] == "initial" and created["state"] != "active":
        return False
    user = dict(created["user"])
    if user.get("hashedPassword") and not imported["user"].get("passwordChangeRequired"):
        user.pop("passwordChangeRequired", None)
    return {**created, "state": None, "user": user} == {**imported, "state": None}


def _drop_falsy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_falsy(v) for k, v in value.items() if v not in (None, False, "", [], {})}
    if isinstance(value, list):
        return [_drop_falsy(v) for v in value]
    return value


def add_org(server: Any, org_id: str, name: str = "") -> None:
    """An org that exists before anything is pushed (made in the console, as on a v5 server)."""
    with server.state.lock:
        if org_id not in server.state.orgs:
            server.state.orgs[org_id] = {"name": name or org_id}
            server.state.emit("org.added", org_id, "org", org_id, {"name": name or org_id})


def add_org_token(server: Any, token: str, *org_ids: str) -> None:
    """A credential that may manage the users of ``org_ids`` only (an org's user manager)."""
    server.add_token(token)
    server.org_tokens[token] = frozenset(org_ids)
