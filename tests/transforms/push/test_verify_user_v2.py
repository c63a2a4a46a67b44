"""Verify's user service reads (transforms/push/verify_user_v2.py) over HTTP to the test server."""

from __future__ import annotations

import zitadel_user_v2_create as creation
from zitadel_fixtures import PAT, fast_client, make_user, zitadel_fixture  # noqa: F401 - pytest fixture, used by name

from transforms.push.verify_user_v2 import (
    NOT_READABLE,
    admin_reads_refused,
    listed_grants,
    listed_users,
    owners_elsewhere,
)
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.user_v2 import ADD_HUMAN_PATH, add_human_request

TOKEN = Credentials("token", token=PAT)
SCOPED = "org-token-Zr5ListsOnlyItsOrg0123456"


def _users(server, org: str, count: int, prefix: str) -> list[str]:
    client = fast_client(server.url, TOKEN)
    ids = [f"{prefix}{i}" for i in range(count)]
    for uid in ids:
        client.request("POST", ADD_HUMAN_PATH, add_human_request(org, make_user(uid)))
    return ids


def test_users_and_grants_are_listed_page_by_page(zitadel):
    creation.add_org(zitadel, "123")
    creation.add_org(zitadel, "999")
    mine, theirs = _users(zitadel, "123", 5, "a"), _users(zitadel, "999", 2, "b")
    client = fast_client(zitadel.url, TOKEN)
    assert not admin_reads_refused(client)
    ids, named = listed_users(client, "123", page_size=2)
    assert ids == set(mine) and named["userName:a0@example.com"] == "a0"
    with zitadel.state.lock:
        zitadel.state.user_grants[("123", "a1", "p1", "")] = "g1"
    assert listed_grants(client, "123", page_size=2) == {("a1", "p1")}
    assert owners_elsewhere(client, {theirs[0]: "123", "nobody": "123", mine[0]: "123"}, events=True) == {
        theirs[0]: "999"
    }
    zitadel.admin_api = False
    assert admin_reads_refused(client)
    assert owners_elsewhere(client, {theirs[0]: "123", "nobody": "123"}, events=False) == {theirs[0]: "999"}
    creation.add_org_token(zitadel, SCOPED, "123")
    scoped = fast_client(zitadel.url, Credentials("token", token=SCOPED))
    assert owners_elsewhere(scoped, {theirs[0]: "123"}, events=False) == {theirs[0]: NOT_READABLE}
    assert listed_users(scoped, "123")[0] == set(mine)
