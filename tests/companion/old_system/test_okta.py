"""companion/old_system/okta.py: the Authentication API's transaction states and the OAuth password
grant, classified (Okta's API reference; docs/companion.md#okta)."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from companion.old_system.answer import Outcome
from companion.old_system.okta import Okta, OktaOAuth
from companion.old_system.transport import Poster, Reply

AUTHN = Okta(Poster(1.0), url="https://acme.okta.com")
OAUTH = OktaOAuth(Poster(1.0), url="https://acme.okta.com/oauth2/default", client_id="0oa", secret="s:1")


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (200, {"status": "SUCCESS", "sessionToken": "x"}, Outcome.RIGHT),
        (200, {"status": "MFA_REQUIRED", "stateToken": "x"}, Outcome.RIGHT),
        (200, {"status": "MFA_ENROLL", "stateToken": "x"}, Outcome.RIGHT),
        (200, {"status": "PASSWORD_EXPIRED", "stateToken": "x"}, Outcome.RIGHT),
        (200, {"status": "PASSWORD_WARN", "stateToken": "x"}, Outcome.RIGHT),
        (200, {"status": "LOCKED_OUT"}, Outcome.BLOCKED),
        (200, {"status": "RECOVERY"}, Outcome.UNKNOWN),
        (401, {"errorCode": "E0000004", "errorSummary": "Authentication failed"}, Outcome.WRONG),
        (429, {"errorCode": "E0000047", "errorSummary": "API call exceeded rate limit due to too many requests."}, Outcome.UNKNOWN),
        (403, {"errorCode": "E0000006"}, Outcome.UNKNOWN),
    ],
)  # fmt: skip
def test_authn_answers_classify_by_transaction_state(status, body, outcome):
    assert AUTHN.classify(Reply(status, json.dumps(body).encode(), {})).outcome is outcome


def test_authn_request_and_the_password_grant_request():
    request = AUTHN.request("ana@example.com", "pw")
    assert (request.url, json.loads(request.body)) == (
        "https://acme.okta.com/api/v1/authn", {"username": "ana@example.com", "password": "pw"},
    )  # fmt: skip
    request = OAUTH.request("ana", "pw")
    assert request.url == "https://acme.okta.com/oauth2/default/v1/token"
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"0oa:s%3A1").decode()
    assert dict(urllib.parse.parse_qsl(request.body.decode())) == {
        "grant_type": "password", "username": "ana", "password": "pw", "scope": "openid",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (200, {"access_token": "eyJ"}, Outcome.RIGHT),
        (
            400,
            {"error": "invalid_grant", "error_description": "The credentials provided were invalid."},
            Outcome.WRONG,
        ),
        (401, {"error": "invalid_client"}, Outcome.UNKNOWN),
        (400, {"error": "unauthorized_client"}, Outcome.UNKNOWN),
    ],
)
def test_password_grant_answers(status, body, outcome):
    assert OAUTH.classify(Reply(status, json.dumps(body).encode(), {})).outcome is outcome
