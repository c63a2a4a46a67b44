"""The test server's user service v2 creation, its server without the admin API and its org-scoped
credentials (tests/standins/zitadel_user_v2_create.py), over real HTTP."""

from __future__ import annotations

import base64
import json
import urllib.request

import pytest
import zitadel_user_v2_create as creation
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.user_v2 import (
    ADD_HUMAN_PATH,
    CREATE_USER_PATH,
    LIST_USERS_PATH,
    add_human_request,
    create_user_request,
    list_users_request,
    metadata_search_path,
)

ORG = "123"
ORG_TOKEN = "org-token-4Fq9WeUSERmanager0123456789"


def _entries() -> tuple[list[dict], list[dict]]:
    """Users that cover what an import entry carries, and their metadata items."""
    hashes = hash_pool(3)
    base = {"profile": {"firstName": "Ada", "lastName": "Lovelace"}}
    users = [
        {"userName": "verified@example.com", **base, "email": {"email": "verified@example.com", "isEmailVerified": True},
         "hashedPassword": {"value": hashes[0]}},
        {"userName": "unverified@example.com", "profile": {"firstName": "B", "lastName": "C", "nickName": "bc",
         "displayName": "B C", "preferredLanguage": "de"}, "email": {"email": "unverified@example.com"},
         "hashedPassword": {"value": hashes[1]}, "passwordChangeRequired": True,
         "phone": {"phone": "+41791234567", "isPhoneVerified": True}},
        {"userName": "linked@example.com", **base, "email": {"email": "linked@example.com", "isEmailVerified": False},
         "idps": [{"configId": "idp-1", "externalUserId": "g-42", "displayName": "linked"}],
         "phone": {"phone": "+41797654321"}},
        {"userName": "otp@example.com", **base, "email": {"email": "otp@example.com", "isEmailVerified": True},
         "hashedPassword": {"value": hashes[2]}, "otpCode": "JBSWY3DPEHPK3PXP"},
        {"userName": "nopassword@example.com", **base, "email": {"email": "nopassword@example.com", "isEmailVerified": True}},
    ]  # fmt: skip
    entries = [{"userId": f"u-{i}", "user": user} for i, user in enumerate(users)]
    value = base64.b64encode(b'{"plan":"pro"}').decode()
    metadata = [{"id": e["userId"], "key": "auth0_app_metadata", "value": value} for e in entries[:3]]
    return entries, metadata


def _client(server: ZitadelServer, token: str = PAT) -> AdminClient:
    return AdminClient(server.url, Credentials("token", token=token), max_attempts=1)


@pytest.fixture(name="servers")
def servers_fixture():
    imported = ZitadelServer(tokens={PAT}).start()
    created = ZitadelServer(tokens={PAT}).start()
    created.admin_api = False
    creation.add_org(created, ORG)
    yield imported, created
    imported.stop()
    created.stop()


def test_a_created_user_is_held_like_an_imported_one(servers):
    imported, created = servers
    entries, metadata = _entries()
    body = {
        "dataOrgs": {"orgs": [{"orgId": ORG, "humanUsers": entries, "userMetadata": metadata}]},
        "timeout": "1m",
    }
    answer = _client(imported).import_data(json.dumps(body).encode(), 30.0)
    assert not answer.get("errors")
    client = _client(created)
    for entry in entries:
        items = [m for m in metadata if m["id"] == entry["userId"]]
        out = client.request("POST", ADD_HUMAN_PATH, add_human_request(ORG, entry, items))
        assert out["userId"] == entry["userId"]
    for entry in entries:
        held = creation.stored_user(created, entry["userId"])
        assert creation.same_but_state(held, creation.stored_user(imported, entry["userId"]))
    # ZITADEL's second difference: the import drops passwordChangeRequired with a hash, v2 keeps it.
    assert creation.stored_user(created, "u-1")["user"]["passwordChangeRequired"] is True
    assert "passwordChangeRequired" not in creation.stored_user(imported, "u-1")["user"]
    # ZITADEL's one difference: the user service adds no initialisation code, so nobody is initial.
    states = {e["userId"]: creation.stored_user(imported, e["userId"])["state"] for e in entries}
    assert states == {"u-0": "active", "u-1": "initial", "u-2": "active", "u-3": "active", "u-4": "initial"}
    assert {creation.stored_user(created, e["userId"])["state"] for e in entries} == {"active"}
    assert creation.stored_user(created, "u-3")["signIn"] == ["password", "totp"]
    assert created.v2.notifications == []  # unverified e-mail and phone asked for a returned code


def test_an_id_or_name_in_use_is_refused_and_admin_calls_are_not_found(servers):
    _, created = servers
    entries, _ = _entries()
    client = _client(created)
    client.request("POST", ADD_HUMAN_PATH, add_human_request(ORG, entries[0]))
    with pytest.raises(api_errors.InvalidRequest) as again:
        client.request("POST", ADD_HUMAN_PATH, add_human_request(ORG, entries[0]))
    # As ZITADEL's gateway writes it: the key translated (here German), the id, and an ErrorDetail.
    assert (again.value.status, again.value.code, again.value.detail_id) == (400, 9, "COMMAND-7yiox1isql")
    assert "Benutzer existiert bereits (COMMAND-7yiox1isql)" in again.value.message
    renamed = {**entries[0], "userId": "other"}
    with pytest.raises(api_errors.InvalidRequest) as name:
        client.request("POST", ADD_HUMAN_PATH, add_human_request(ORG, renamed))
    assert (name.value.status, name.value.code, name.value.detail_id) == (409, 6, "V3-DKcYh")
    client.request("POST", CREATE_USER_PATH, create_user_request(ORG, entries[2]))
    linked = {"userId": "third", "user": {**entries[2]["user"], "userName": "third@example.com"}}
    with pytest.raises(api_errors.InvalidRequest) as link:  # the same IdP link: its unique constraint
        client.request("POST", CREATE_USER_PATH, create_user_request(ORG, linked))
    assert (link.value.status, link.value.code, link.value.detail_id) == (409, 6, "V3-DKcYh")
    assert "Der externe Login ist bereits einem Benutzer zugeordnet" in link.value.message
    with pytest.raises(api_errors.InvalidRequest) as gone:
        client.probe()
    assert (gone.value.status, gone.value.code) == (404, 5)
    assert created.added_event_counts() == {"u-0": 1, "u-2": 1}


def test_an_org_scoped_credential_stays_in_its_org(servers):
    imported, _ = servers
    creation.add_org(imported, ORG)
    creation.add_org(imported, "999")
    creation.add_org_token(imported, ORG_TOKEN, ORG)
    entries, _ = _entries()
    mine, admin = _client(imported, ORG_TOKEN), _client(imported)
    admin.request("POST", ADD_HUMAN_PATH, add_human_request("999", entries[1]))
    with pytest.raises(api_errors.AuthError) as refused:
        mine.probe()
    assert refused.value.status == 403 and refused.value.code == 7
    with pytest.raises(api_errors.AuthError):
        mine.request("POST", ADD_HUMAN_PATH, add_human_request("999", entries[0]))
    with pytest.raises(api_errors.AuthError):
        mine.request("GET", "/v2/users/u-1")
    mine.request("POST", ADD_HUMAN_PATH, add_human_request(ORG, entries[0]))
    assert mine.request("GET", "/v2/users/u-0")["user"]["details"]["resourceOwner"] == ORG
    listed = mine.request("POST", LIST_USERS_PATH, list_users_request(user_ids=["u-0", "u-1"]))
    assert [u["userId"] for u in listed["result"]] == ["u-0"]
    everyone = admin.request("POST", LIST_USERS_PATH, list_users_request(org_id="999"))
    assert [u["userId"] for u in everyone["result"]] == ["u-1"]


def test_admin_paths_answer_like_a_service_the_server_does_not_have():
    server = ZitadelServer(tokens={PAT}).start()
    server.admin_api = False
    try:
        request = urllib.request.Request(
            server.url + "/admin/v1/events/_search", b"{}", {"Authorization": f"Bearer {PAT}"}, method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(request, timeout=5)
        assert err.value.code == 404
        assert json.loads(err.value.read()) == {"code": 5, "message": "Not Found", "details": []}
    finally:
        server.stop()


def test_create_user_drops_its_metadata_and_a_server_may_lack_either_create(servers):
    """CreateUser as ZITADEL's createUserTypeHuman (e9d20ab4) runs it: the user as AddHumanUser makes
    it, the metadata dropped (zitadel/zitadel#11826); a server past AddHumanUser's deprecation, or
    before CreateUser, answers its route 404 without a ZITADEL error detail."""
    imported, created = servers
    entries, metadata = _entries()
    client = _client(created)
    answer = client.request("POST", CREATE_USER_PATH, {**create_user_request(ORG, entries[0]),
                            "human": {**create_user_request(ORG, entries[0])["human"],
                                      "metadata": [{"key": "k", "value": metadata[0]["value"]}]}})  # fmt: skip
    assert answer["id"] == "u-0" and answer["creationDate"]
    assert client.request("POST", metadata_search_path("u-0"), {}) == {"metadata": []}
    created.create_user_keeps_metadata = True  # the later fix
    request = create_user_request(ORG, entries[1])
    request["human"]["metadata"] = [{"key": "k", "value": metadata[0]["value"]}]
    client.request("POST", CREATE_USER_PATH, request)
    assert [m["key"] for m in client.request("POST", metadata_search_path("u-1"), {})["metadata"]] == ["k"]
    created.add_human_user, created.create_user = False, False
    for path, request in ((ADD_HUMAN_PATH, add_human_request(ORG, entries[3])),
                          (CREATE_USER_PATH, create_user_request(ORG, entries[3]))):  # fmt: skip
        with pytest.raises(api_errors.InvalidRequest) as absent:
            client.request("POST", path, request)
        assert (absent.value.status, absent.value.code, absent.value.detail_id) == (404, 5, "")
    assert created.v2_schema_problems == [] and imported.v2_schema_problems == []


def test_a_credential_of_two_orgs_and_the_limits_of_lists_and_quota(servers):
    imported, _ = servers
    for org in (ORG, "777", "999"):
        creation.add_org(imported, org)
    creation.add_org_token(imported, ORG_TOKEN, ORG, "777")
    entries, _ = _entries()
    mine = _client(imported, ORG_TOKEN)
    mine.request("POST", CREATE_USER_PATH, create_user_request("777", entries[0]))
    with pytest.raises(api_errors.AuthError) as refused:
        mine.request("POST", CREATE_USER_PATH, create_user_request("999", entries[1]))
    assert (refused.value.status, refused.value.code, refused.value.detail_id) == (403, 7, "AUTHZ-HKJD33")
    assert "Keine Berechtigung" in refused.value.message
    imported.max_query_limit = 100
    with pytest.raises(api_errors.InvalidRequest) as limit:
        mine.request("POST", LIST_USERS_PATH, list_users_request(limit=1000))
    assert (limit.value.code, limit.value.detail_id) == (3, "QUERY-4M0fs")
    imported.quota_exhausted = True
    with pytest.raises(api_errors.QuotaExhausted) as quota:
        mine.request("POST", LIST_USERS_PATH, list_users_request(limit=10))
    assert (quota.value.status, quota.value.code, quota.value.detail_id) == (429, 8, "QUOTA-vjAy8")
