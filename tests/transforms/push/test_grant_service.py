"""User grants through the authorization service v2 where the server has it, the management API
otherwise (transforms/push/grant_service.py), against the test server over real HTTP."""

from __future__ import annotations

import pytest
import zitadel_user_v2_create as creation
from zitadel_fixtures import PAT, fast_client, make_user
from zitadel_server import ZitadelServer

from transforms.push.grant_calls import write_grant
from transforms.push.grant_service import served
from transforms.push.verify_user_v2 import listed_grants
from transforms.zitadel_api import api_errors
from transforms.zitadel_api import authorization_v2 as authz
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.user_v2 import CREATE_USER_PATH, create_user_request

ORG = "123"


@pytest.fixture(name="server")
def server_fixture():
    server = ZitadelServer(tokens={PAT}).start()
    server.admin_api = False
    creation.add_org(server, ORG)
    with server.state.lock:
        server.state.projects["p1"] = ORG
        server.state.project_roles["p1"] = {"reader": "reader", "writer": "writer"}
    client = fast_client(server.url, Credentials("token", token=PAT))
    for uid in ("u1", "u2"):
        client.request("POST", CREATE_USER_PATH, create_user_request(ORG, make_user(uid)))
    yield server
    server.stop()


def _paths(server: ZitadelServer, prefix: str) -> list[str]:
    return [path for path, _ in server.requests if path.startswith(prefix)]


@pytest.mark.parametrize(
    "lost", ["504_after", "deadline_after"]
)  # a gateway's 504, Connect's deadline_exceeded
def test_grants_go_through_the_authorization_service_exactly_once(server, lost):
    client = fast_client(server.url, Credentials("token", token=PAT))
    server.faults.inject(lost, path=authz.CREATE_PATH)  # created, its answer lost
    write_grant(client, "u1", ORG, "p1", ["reader"])
    write_grant(client, "u1", ORG, "p1", ["reader", "writer"])  # the full list: an update
    write_grant(client, "u2", ORG, "p1", ["reader"])
    write_grant(client, "u2", ORG, "p1", None)  # removed
    assert served(client) is True and _paths(server, "/management/v1/") == []
    with server.state.lock:
        held = {(u, p): server.state.grant_keys[g] for (_, u, p, _), g in server.state.user_grants.items()}
    assert held == {("u1", "p1"): ["reader", "writer"]}
    added = [e for e in server.state.events if e.event_type == "user.grant.added"]
    assert len(added) == 2  # u1 once despite the lost answer, u2 once
    assert _paths(server, authz.CREATE_PATH).count(authz.CREATE_PATH) == 2
    assert listed_grants(client, ORG) == {("u1", "p1")}


def test_a_server_without_it_gets_the_management_calls_learned_once(server):
    server.authorization_v2 = False
    client = fast_client(server.url, Credentials("token", token=PAT))
    for uid in ("u1", "u2"):
        write_grant(client, uid, ORG, "p1", ["reader"])
    assert served(client) is False and len(_paths(server, authz.SERVICE)) == 1  # one 404, then remembered
    assert len(_paths(server, "/management/v1/users/grants/_search")) == 2
    assert listed_grants(client, ORG) == {("u1", "p1"), ("u2", "p1")}


def test_its_refusals_are_read_by_connect_code_and_detail_id(server):
    client = fast_client(server.url, Credentials("token", token=PAT), max_attempts=1)
    client.request("POST", authz.CREATE_PATH, authz.create_request("u1", "p1", ORG, ["reader"]))
    with pytest.raises(api_errors.InvalidRequest) as twice:
        client.request("POST", authz.CREATE_PATH, authz.create_request("u1", "p1", ORG, ["reader"]))
    assert (twice.value.status, twice.value.code, twice.value.detail_id) == (409, 6, "V3-DKcYh")
    with pytest.raises(api_errors.InvalidRequest) as role:
        client.request("POST", authz.CREATE_PATH, authz.create_request("u2", "p1", ORG, ["nope"]))
    assert (role.value.status, role.value.code, role.value.detail_id) == (400, 9, "COMMAND-mm9F4")
    token = "org-token-OtherOrgOnly000000000000000"
    creation.add_org(server, "999")
    creation.add_org_token(server, token, "999")
    scoped = fast_client(server.url, Credentials("token", token=token), max_attempts=1)
    with pytest.raises(api_errors.AuthError) as denied:
        scoped.request("POST", authz.CREATE_PATH, authz.create_request("u2", "p1", ORG, ["reader"]))
    assert (denied.value.status, denied.value.code, denied.value.detail_id) == (403, 7, "AUTHZ-HKJD33")
    assert "Keine Berechtigung" in denied.value.message
