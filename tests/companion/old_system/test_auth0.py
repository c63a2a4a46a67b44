"""companion/old_system/auth0.py: the request Auth0's token endpoint wants, and its answers classified
(bodies as Auth0's docs show them; docs/companion.md#auth0)."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from companion.old_system.answer import Outcome
from companion.old_system.auth0 import PASSWORD_REALM, Auth0
from companion.old_system.transport import Poster, Reply

CHECK = Auth0(Poster(1.0), url="https://tenant.eu.auth0.com/", client_id="cid", secret="csecret")


def _reply(status: int, body: dict, **headers: str) -> Reply:
    return Reply(status, json.dumps(body).encode(), headers)


def test_the_password_grant_and_the_password_realm_grant():
    request = CHECK.request("ana@example.com", "pw ✓")
    assert request.url == "https://tenant.eu.auth0.com/oauth/token"
    form = dict(urllib.parse.parse_qsl(request.body.decode()))
    assert form == {"grant_type": "password", "username": "ana@example.com", "password": "pw ✓",
                    "client_id": "cid", "client_secret": "csecret", "scope": "openid"}  # fmt: skip
    realm = Auth0(
        Poster(1.0), url="https://t.auth0.com", client_id="cid", realm="Username-Password-Authentication"
    )
    form = dict(urllib.parse.parse_qsl(realm.request("a", "b").body.decode()))
    assert (form["grant_type"], form["realm"], "client_secret" in form) == (
        PASSWORD_REALM, "Username-Password-Authentication", False,
    )  # fmt: skip
    assert "pw" not in repr(request) and "csecret" not in repr(request)


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (200, {"access_token": "eyJ", "token_type": "Bearer"}, Outcome.RIGHT),
        (403, {"error": "mfa_required", "error_description": "Multifactor authentication required", "mfa_token": "Fe26"}, Outcome.RIGHT),
        (403, {"error": "invalid_grant", "error_description": "Wrong email or password."}, Outcome.WRONG),
        (429, {"error": "too_many_attempts", "error_description": "Your account has been blocked after multiple consecutive login attempts."}, Outcome.BLOCKED),
        (401, {"error": "unauthorized", "error_description": "user is blocked"}, Outcome.BLOCKED),
        (403, {"error": "password_leaked", "error_description": "This login attempt has been blocked because the password you're using was previously disclosed"}, Outcome.BLOCKED),
        (403, {"error": "unauthorized_client", "error_description": "Grant type 'password' not allowed for the client."}, Outcome.UNKNOWN),
        (401, {"error": "access_denied", "error_description": "Unauthorized"}, Outcome.UNKNOWN),
        (403, {"error": "invalid_grant", "error_description": "Something else"}, Outcome.UNKNOWN),
        (429, {"error": "too_many_requests", "error_description": "Global limit has been reached"}, Outcome.UNKNOWN),
        (503, {}, Outcome.UNKNOWN),
        (200, {}, Outcome.UNKNOWN),
    ],
)  # fmt: skip
def test_answers_classify_as_documented_and_never_quote_them(status, body, outcome):
    answer = CHECK.classify(_reply(status, body))
    assert answer.outcome is outcome
    assert body.get("error_description", "\0") not in answer.why


def test_a_rate_limit_carries_its_retry_after():
    answer = CHECK.classify(_reply(429, {"error": "too_many_requests"}, **{"retry-after": "7"}))
    assert (answer.outcome, answer.retry_after) == (Outcome.UNKNOWN, 7.0)
