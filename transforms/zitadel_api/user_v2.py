"""The user service v2 requests that create and read users (docs/user-v2.md); no HTTP here.

One ``humanUsers`` entry of an import body becomes one ``CreateUser`` request (``POST
/v2/users/new``: ``organizationId``, ``userId``, ``username``, ``human{...}``;
``create_user_request``) followed by ``SetUserMetadata`` for its ``userMetadata`` items (CreateUser
drops the metadata it is given: zitadel/zitadel#11826), or, on a server without CreateUser, one
``AddHumanUser`` request (``POST /v2/users/human``, zitadel.user.v2 in ``@zitadel/proto`` 1.3.1,
deprecated for CreateUser) carrying the metadata too. Either carries everything the import entry
carries: the caller's ``userId``, the org, user name,
profile, e-mail and phone (verified or not, never a mail or SMS: an unverified one asks for
``returnCode``), the password hash or password with ``changeRequired``, IdP links, the TOTP secret
and the metadata. Field by field (import → user service v2)::

    userName → username              profile.firstName/lastName → profile.givenName/familyName
    email.isEmailVerified → email.isVerified (else returnCode {})
    phone.isPhoneVerified → phone.isVerified (else returnCode {})
    hashedPassword.value → hashedPassword.hash   password → password.password
    passwordChangeRequired → (hashedPassword | password).changeRequired
    idps[{configId, externalUserId, displayName}] → idpLinks[{idpId, userId, userName}]
        (userName: the display name, else the external id: v2 takes no empty one, the import does)
    otpCode → totpSecret             userMetadata[{key, value}] → metadata[{key, value}]

Example::

    request = add_human_request("123", entry, metadata_items)
    client.request("POST", ADD_HUMAN_PATH, request)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "ADD_HUMAN_PATH",
    "CREATE_USER_PATH",
    "create_user_request",
    "metadata_request",
    "LIST_USERS_PATH",
    "ALREADY_EXISTS",
    "add_human_request",
    "list_users_request",
    "user_path",
    "update_human_path",
    "state_change_path",
    "phone_path",
    "links_path",
    "link_path",
    "metadata_path",
    "metadata_delete_path",
    "metadata_search_path",
    "links_search_path",
    "owner_of",
]

ADD_HUMAN_PATH = "/v2/users/human"
CREATE_USER_PATH = "/v2/users/new"
LIST_USERS_PATH = "/v2/users"
# What a create of an id or user name in use answers (HTTP 409, gRPC AlreadyExists).
ALREADY_EXISTS = ("Errors.User.AlreadyExisting", "Errors.User.AlreadyExists", "AlreadyExists")

# A JSON object as parsed (an import entry, a request, an answer).
Fields = dict[str, Any]

_PROFILE_KEYS = ("nickName", "displayName", "preferredLanguage", "gender")
_SNAKE = re.compile(r"_([a-z0-9])")


def _camel_fields(value: Fields) -> Fields:
    return {_SNAKE.sub(lambda m: m.group(1).upper(), str(k)): _camel(v) for k, v in value.items()}


def _camel(value: object) -> object:
    """Keys in camelCase (an import body may spell them either way; values are left alone)."""
    if isinstance(value, dict):
        return _camel_fields(value)
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _verification(verified: object) -> Fields:
    return {"isVerified": True} if verified is True else {"returnCode": {}}


def _profile(profile: Fields) -> Fields:
    out: Fields = {
        "givenName": str(profile.get("firstName") or ""),
        "familyName": str(profile.get("lastName") or ""),
    }
    for key in _PROFILE_KEYS:
        if profile.get(key):
            out[key] = profile[key]
    return out


def _password(user: Fields) -> Fields:
    change = bool(user.get("passwordChangeRequired"))
    hashed = (user.get("hashedPassword") or {}).get("value")
    if hashed:
        return {"hashedPassword": {"hash": str(hashed), "changeRequired": change}}
    if user.get("password"):
        return {"password": {"password": str(user["password"]), "changeRequired": change}}
    return {}


def add_human_request(org_id: str, entry: Fields, metadata: Sequence[Fields] = ()) -> dict:
    """The AddHumanUser request of one import entry (``{"userId", "user"}``) and its metadata
    items (``{"id", "key", "value"}``, value base64 as in the import body)."""
    entry = _camel_fields(dict(entry))
    user = entry.get("user") or {}
    request: Fields = {}
    if entry.get("userId"):
        request["userId"] = str(entry["userId"])
    request["username"] = str(user.get("userName") or "")
    request["organization"] = {"orgId": org_id}
    request["profile"] = _profile(user.get("profile") or {})
    email = user.get("email") or {}
    request["email"] = {"email": str(email.get("email") or ""), **_verification(email.get("isEmailVerified"))}
    phone = user.get("phone") or {}
    if phone.get("phone"):
        request["phone"] = {"phone": str(phone["phone"]), **_verification(phone.get("isPhoneVerified"))}
    request.update(_password(user))
    links = [
        {
            "idpId": str(link.get("configId") or ""),
            "userId": str(link.get("externalUserId") or ""),
            "userName": str(link.get("displayName") or link.get("externalUserId") or ""),
        }
        for link in user.get("idps") or []
    ]
    if links:
        request["idpLinks"] = links
    if user.get("otpCode"):
        request["totpSecret"] = str(user["otpCode"])
    items = metadata_request(metadata).get("metadata")
    if items:
        request["metadata"] = items
    return request


def create_user_request(org_id: str, entry: Fields) -> dict:
    """The CreateUser request of one import entry: AddHumanUser's fields, the human ones under
    ``human`` and the org as ``organizationId``; without metadata (``metadata_request`` after)."""
    add = add_human_request(org_id, entry)
    request: Fields = {"organizationId": org_id}
    for key in ("userId", "username"):
        if key in add:
            request[key] = add.pop(key)
    add.pop("organization", None)
    request["human"] = add
    return request


def metadata_request(metadata: Sequence[Fields]) -> dict:
    """``SetUserMetadata``'s body of ``userMetadata`` items (``{"id", "key", "value"}``, value base64)."""
    items = [
        {"key": str(m.get("key")), "value": str(m.get("value") or "")}
        for m in map(_camel_fields, map(dict, metadata))
    ]
    return {"metadata": items}


def list_users_request(
    org_id: str = "", user_ids: Sequence[str] = (), user_name: str = "", offset: int = 0, limit: int = 1000
) -> dict:
    """A ListUsers request (``POST /v2/users``): every query given must hold."""
    queries: list[Fields] = []
    if org_id:
        queries.append({"organizationIdQuery": {"organizationId": org_id}})
    if user_ids:
        queries.append({"inUserIdsQuery": {"userIds": list(user_ids)}})
    if user_name:
        queries.append({"userNameQuery": {"userName": user_name, "method": "TEXT_QUERY_METHOD_EQUALS"}})
    return {"query": {"offset": str(offset), "limit": limit, "asc": True}, "queries": queries}


def user_path(user_id: str) -> str:
    """``GET /v2/users/{id}`` (GetUserByID) with the id quoted."""
    from urllib.parse import quote

    return f"/v2/users/{quote(user_id, safe='')}"


def update_human_path(user_id: str) -> str:
    """``UpdateHumanUser``: ``PUT /v2/users/human/{id}``."""
    from urllib.parse import quote

    return f"/v2/users/human/{quote(user_id, safe='')}"


def state_change_path(user_id: str, verb: str) -> str:
    """``DeactivateUser``, ``ReactivateUser``, ``LockUser``, ``UnlockUser``: ``POST /v2/users/{id}/{verb}``
    (``verb``: deactivate, reactivate, lock, unlock; body ``{}``)."""
    if verb not in ("deactivate", "reactivate", "lock", "unlock"):
        raise ValueError(f"unknown state change {verb!r}")
    return f"{user_path(user_id)}/{verb}"


def phone_path(user_id: str) -> str:
    """``RemovePhone``: ``DELETE /v2/users/{id}/phone``."""
    return user_path(user_id) + "/phone"


def links_path(user_id: str) -> str:
    """``AddIDPLink``: ``POST /v2/users/{id}/links`` (body ``{"idpLink": {idpId, userId, userName}}``)."""
    return user_path(user_id) + "/links"


def link_path(user_id: str, idp_id: str, linked_user_id: str) -> str:
    """``RemoveIDPLink``: ``DELETE /v2/users/{id}/links/{idp_id}/{linked_user_id}``."""
    from urllib.parse import quote

    return f"{links_path(user_id)}/{quote(idp_id, safe='')}/{quote(linked_user_id, safe='')}"


def metadata_path(user_id: str) -> str:
    """``SetUserMetadata``: ``POST /v2/users/{id}/metadata`` (body ``{"metadata": [{key, value}]}``)."""
    return user_path(user_id) + "/metadata"


def metadata_delete_path(user_id: str, keys: Sequence[str]) -> str:
    """``DeleteUserMetadata``: ``DELETE /v2/users/{id}/metadata?keys=..`` (the keys as query parameters)."""
    from urllib.parse import urlencode

    return f"{metadata_path(user_id)}?{urlencode([('keys', key) for key in keys])}"


def metadata_search_path(user_id: str) -> str:
    """``POST /v2/users/{id}/metadata/search`` (ListUserMetadata): ``{"metadata": [{key, value}]}``."""
    return user_path(user_id) + "/metadata/search"


def links_search_path(user_id: str) -> str:
    """``POST /v2/users/{id}/links/_search`` (ListIDPLinks): ``{"result": [{idpId, userId, userName}]}``."""
    return user_path(user_id) + "/links/_search"


def owner_of(answer: Fields) -> str:
    """The org of a GetUserByID answer's user (``user.details.resourceOwner``), or ''."""
    user = answer.get("user") or answer
    return str((user.get("details") or {}).get("resourceOwner") or "")
