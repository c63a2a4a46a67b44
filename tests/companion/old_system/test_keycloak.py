"""companion/old_system/keycloak.py: the direct access grant, and Keycloak's answers classified from
its own error texts (keycloak/keycloak directgrant/*.java; docs/companion.md#keycloak)."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from companion.old_system.answer import Outcome
from companion.old_system.keycloak import Keycloak
from companion.old_system.transport import Poster, Reply

CHECK = Keycloak(Poster(1.0), url="https://sso.example.com/realms/acme", client_id="zc")


def test_the_request_is_the_realms_token_endpoint_with_the_password_grant():
    request = CHECK.request("ana", "pw")
    assert request.url == "https://sso.example.com/realms/acme/protocol/openid-connect/token"
    form = dict(urllib.parse.parse_qsl(request.body.decode()))
    assert form == {
        "grant_type": "password",
        "username": "ana",
        "password": "pw",
        "scope": "openid",
        "client_id": "zc",
    }


@pytest.mark.parametrize(
    ("status", "error", "description", "outcome"),
    [
        (400, "invalid_grant", "Account is not fully set up", Outcome.RIGHT),
        (400, "invalid_grant", "Account disabled", Outcome.BLOCKED),
        (400, "invalid_grant", "Account temporarily disabled", Outcome.BLOCKED),
        (401, "invalid_grant", "Invalid user credentials", Outcome.WRONG),
        (400, "invalid_grant", "Invalid user credentials", Outcome.WRONG),
        (400, "unauthorized_client", "Client not allowed for direct access grants", Outcome.UNKNOWN),
        (401, "invalid_client", "Invalid client or Invalid client credentials", Outcome.UNKNOWN),
        (400, "invalid_grant", "Some new text", Outcome.UNKNOWN),
        (502, None, None, Outcome.UNKNOWN),
    ],
)
def test_answers_classify_from_keycloaks_own_texts(status, error, description, outcome):
    body = {"error": error, "error_description": description} if error else {}
    assert CHECK.classify(Reply(status, json.dumps(body).encode(), {})).outcome is outcome


def test_a_token_is_right():
    reply = Reply(200, b'{"access_token": "eyJ", "token_type": "Bearer"}', {})
    assert CHECK.classify(reply).outcome is Outcome.RIGHT
