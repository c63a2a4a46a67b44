"""Verify's reads where the admin API is absent or refused: the user service v2 (docs/user-v2.md).

``verify`` and ``push --verify`` read ``user.human.added`` events through the admin events search
(``verification.py``). A ZITADEL without the v1 APIs, or a credential limited to one org, answers
that search not found / permission denied; then each org's users are read with ``ListUsers``
(``organizationIdQuery``, paged by offset) and its grants with the management API's
``ListUserGrants`` (the calls the sync makes). Either way, an expected user not in its org is looked
up by id (``GetUserByID``, or its first event) so the report can name the org it is in instead.

Example::

    if admin_reads_refused(client):
        ids, names = listed_users(client, "123")
    elsewhere = owners_elsewhere(client, {"auth0|1": "123"}, events=False)  # {"auth0|1": "999"}
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Mapping

from transforms.common.errors import ConfigError
from transforms.push.api_choice import admin_absent
from transforms.push.grant_service import list_org_grants
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.management_v1 import GRANTS_SEARCH_PATH, org_grants_page_request
from transforms.zitadel_api.user_v2 import LIST_USERS_PATH, list_users_request, owner_of, user_path

__all__ = ["admin_reads_refused", "listed_users", "listed_grants", "owners_elsewhere", "NOT_READABLE"]

NAME_KEY = "userName:"  # verification.NAME_KEY: users sent without userId are expected by name
NOT_READABLE = "an org this credential may not read"
_LOOKUPS = 4  # user look-ups at once (hosted limit: 50 requests/s)
_INVALID_ARGUMENT = 3


def admin_reads_refused(client: AdminClient) -> bool:
    """True when the admin events search is not served (404 / unimplemented) or not allowed (403)."""
    try:
        client.search_events(["user.human.added"], limit=1)
    except api_errors.AuthError as err:
        return err.status == 403 or err.code == 7
    except api_errors.AdminApiError as err:
        if isinstance(err, api_errors.RetriesExhausted | api_errors.ServerGone) or not admin_absent(err):
            raise ConfigError(f"events search failed: {err.message}") from None
        return True
    return False


def listed_users(client: AdminClient, org_id: str, page_size: int = 1000) -> tuple[set[str], dict[str, str]]:
    """Ids of the users ListUsers shows in ``org_id``, and user-name key → id. Pages of 1000 are
    ZITADEL's default maximum (``SystemDefaults.MaxQueryLimit``); a server configured lower answers
    InvalidArgument (``QUERY-4M0fs`` ``Errors.Query.LimitExceeded``), and the page is halved."""
    ids: set[str] = set()
    named: dict[str, str] = {}
    offset = 0
    while True:
        request = list_users_request(org_id=org_id, offset=offset, limit=page_size)
        try:
            page = client.request("POST", LIST_USERS_PATH, request)
        except api_errors.InvalidRequest as err:
            if err.code == _INVALID_ARGUMENT and page_size > 1:
                page_size //= 2
                continue
            raise ConfigError(f"listing the users of org {org_id} failed: {err.message}") from None
        except api_errors.AdminApiError as err:
            raise ConfigError(f"listing the users of org {org_id} failed: {err.message}") from None
        users = [u for u in page.get("result") or [] if isinstance(u, dict)]
        for user in users:
            uid = str(user.get("userId") or "")
            if owner_of(user) not in ("", org_id):
                continue  # a server that ignores the org query: count only what is in the org
            ids.add(uid)
            if isinstance(user.get("username"), str):
                named[NAME_KEY + user["username"].casefold()] = uid
        offset += len(users)
        if len(users) < page_size:
            return ids, named


def listed_grants(client: AdminClient, org_id: str, page_size: int = 1000) -> set[tuple[str, str]]:
    """(user id, project id) of every user grant of ``org_id``: the authorization service v2's
    ``ListAuthorizations`` where the server has it, else management ``ListUserGrants``."""
    try:
        authorized = list_org_grants(client, org_id, page_size)
    except api_errors.AdminApiError as err:
        raise ConfigError(f"listing the authorizations of org {org_id} failed: {err.message}") from None
    if authorized is not None:
        return authorized
    found: set[tuple[str, str]] = set()
    offset = 0
    while True:
        search = org_grants_page_request(offset, page_size)
        try:
            page = client.request("POST", GRANTS_SEARCH_PATH, search, org_id=org_id)
        except api_errors.AdminApiError as err:
            raise ConfigError(f"listing the grants of org {org_id} failed: {err.message}") from None
        grants = [g for g in page.get("result") or [] if isinstance(g, dict)]
        found |= {(str(g.get("userId", "")), str(g.get("projectId", ""))) for g in grants}
        offset += len(grants)
        if len(grants) < page_size:
            return found


def _owner(client: AdminClient, user_id: str, events: bool) -> str:
    """The org of a user, '' when it does not exist, NOT_READABLE when the credential may not see it."""
    try:
        if events:
            found = client.search_events(aggregate_types=["user"], aggregate_id=user_id, limit=1, asc=True)
            return str(((found[0] if found else {}).get("aggregate") or {}).get("resourceOwner") or "")
        return owner_of(client.request("GET", user_path(user_id)))
    except api_errors.AuthError:
        return NOT_READABLE
    except api_errors.InvalidRequest:
        return ""  # not found


def owners_elsewhere(client: AdminClient, missing: Mapping[str, str], events: bool) -> dict[str, str]:
    """Of ``missing`` (user id → the org it should be in): user id → the org it is in instead."""
    todo = [uid for uid in missing if uid and not uid.startswith(NAME_KEY)]
    if not todo:
        return {}
    with cf.ThreadPoolExecutor(min(_LOOKUPS, len(todo)), thread_name_prefix="owner") as pool:
        owners = list(pool.map(lambda uid: _owner(client, uid, events), todo))
    return {uid: owner for uid, owner in zip(todo, owners, strict=True) if owner and owner != missing[uid]}
