"""Verify's read-back of what the user service path sent: the fields a server dropped (docs/user-v2.md).

ZITADEL's REST gateway discards JSON fields its protos do not know without a word, so an older
server creates a user without, say, its TOTP secret (``totpSecret`` exists since 2024) and answers
200. Where verify reads through the user service (no admin API, or not for this credential), each
created user whose body entry carries a phone, IdP links, a TOTP secret or metadata is read back
(``GetUserByID``, ``ListIDPLinks``, ``ListAuthenticationMethodTypes``, ``ListUserMetadata``: only
the calls its fields need) and every field the server does not hold is named:

    verify: 2 user(s) lack what was sent (the server dropped it): auth0|1 (totpSecret), ...

Example::

    dropped = dropped_fields(client, manifest, present={"auth0|1", "auth0|2"})
    dropped  # {"auth0|1": ["totpSecret"]}
"""

from __future__ import annotations

import concurrent.futures as cf
import json
from collections.abc import Iterable
from typing import Any

from transforms.output.body_parts import metadata_of, orgs_of, user_id_of, users_of
from transforms.output.manifest import Manifest, read_body
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.user_v2 import links_search_path, metadata_search_path, user_path

__all__ = ["dropped_fields", "FIELDS"]

# What is read back, by the name the create request gives it.
FIELDS = ("phone", "idpLinks", "totpSecret", "metadata")
_TOTP = "AUTHENTICATION_METHOD_TYPE_TOTP"
_LOOKUPS = 4  # users read at once (hosted limit: 50 requests/s)


def _sent(manifest: Manifest, present: set[str]) -> Iterable[tuple[str, dict[str, Any], dict[str, str]]]:
    """(user id, import user, metadata key → value) of each present user with a field to read."""
    for ref in manifest.bodies:
        try:
            body = json.loads(read_body(ref))
        except (OSError, ValueError):
            continue  # the users' check already named an unreadable body
        for org in orgs_of(body):
            items = metadata_of(org)
            for entry in users_of(org):
                uid = user_id_of(entry)
                user = entry.get("user") if isinstance(entry, dict) else None
                if not uid or uid not in present or not isinstance(user, dict):
                    continue
                meta = {
                    str(m.get("key")): str(m.get("value") or "") for m in items if str(m.get("id")) == uid
                }
                if meta or user.get("idps") or user.get("otpCode") or (user.get("phone") or {}).get("phone"):
                    yield uid, user, meta


def _missing(client: AdminClient, uid: str, user: dict[str, Any], meta: dict[str, str]) -> list[str]:
    """The fields of ``user`` the server does not hold."""
    lost: list[str] = []
    phone = str((user.get("phone") or {}).get("phone") or "")
    if phone:
        held = client.request("GET", user_path(uid)).get("user") or {}
        if str(((held.get("human") or {}).get("phone") or {}).get("phone") or "") != phone:
            lost.append("phone")
    links = {(str(i.get("configId")), str(i.get("externalUserId"))) for i in user.get("idps") or []}
    if links:
        found = client.request("POST", links_search_path(uid), {}).get("result") or []
        if not links <= {(str(i.get("idpId")), str(i.get("userId"))) for i in found}:
            lost.append("idpLinks")
    if user.get("otpCode"):
        methods = (
            client.request("GET", user_path(uid) + "/authentication_methods").get("authMethodTypes") or []
        )
        if _TOTP not in methods:
            lost.append("totpSecret")
    if meta:
        found = client.request("POST", metadata_search_path(uid), {}).get("metadata") or []
        held_meta = {str(m.get("key")): str(m.get("value") or "") for m in found}
        if any(held_meta.get(k) != v for k, v in meta.items()):
            lost.append("metadata")
    return lost


def dropped_fields(client: AdminClient, manifest: Manifest, present: set[str]) -> dict[str, list[str]]:
    """User id → the fields sent that the server does not hold, for the ``present`` users."""
    todo = list(_sent(manifest, present))
    if not todo:
        return {}

    def read(item: tuple[str, dict[str, Any], dict[str, str]]) -> list[str]:
        # A read that spent its attempts on faults (at 30% faults one in ~1,400 does) is read
        # again, up to --max-attempts times: a flaky line is not a field the server dropped.
        attempt = 0
        while True:
            attempt += 1
            try:
                return _missing(client, *item)
            except api_errors.AdminApiError as err:
                if not api_errors.send_again(err) or attempt >= client.max_attempts:
                    return [f"unreadable ({err.message})"]
                client.backoff(attempt, err.retry_after)

    with cf.ThreadPoolExecutor(min(_LOOKUPS, len(todo)), thread_name_prefix="fields") as pool:
        found = list(pool.map(read, todo))
    return {uid: lost for (uid, _, _), lost in zip(todo, found, strict=True) if lost}
