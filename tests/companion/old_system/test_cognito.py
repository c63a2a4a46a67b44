"""companion/old_system/cognito.py: InitiateAuth with USER_PASSWORD_AUTH and SECRET_HASH, and its
answers classified (Amazon Cognito API Reference; docs/companion.md#cognito)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from companion.old_system.answer import Outcome
from companion.old_system.cognito import TARGET, Cognito, secret_hash
from companion.old_system.transport import Poster, Reply

CHECK = Cognito(Poster(1.0), url="https://cognito-idp.eu-west-1.amazonaws.com", client_id="app", secret="s")


def test_the_request_carries_the_flow_and_the_secret_hash():
    request = CHECK.request("ana", "pw")
    assert request.url == "https://cognito-idp.eu-west-1.amazonaws.com/"
    assert request.headers["X-Amz-Target"] == TARGET
    assert request.headers["Content-Type"] == "application/x-amz-json-1.1"
    body = json.loads(request.body)
    want = base64.b64encode(hmac.new(b"s", b"anaapp", hashlib.sha256).digest()).decode()
    assert body == {"AuthFlow": "USER_PASSWORD_AUTH", "ClientId": "app",
                    "AuthParameters": {"USERNAME": "ana", "PASSWORD": "pw", "SECRET_HASH": want}}  # fmt: skip
    assert secret_hash("ana", "app", "s") == want
    without = Cognito(Poster(1.0), url="https://c", client_id="app")
    assert "SECRET_HASH" not in json.loads(without.request("ana", "pw").body)["AuthParameters"]


def _error(kind: str, message: str) -> Reply:
    return Reply(
        400, json.dumps({"__type": kind, "message": message}).encode(), {"x-amzn-errortype": kind + ":"}
    )


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (Reply(200, b'{"AuthenticationResult": {"AccessToken": "eyJ"}}', {}), Outcome.RIGHT),
        (Reply(200, b'{"ChallengeName": "SOFTWARE_TOKEN_MFA", "Session": "x"}', {}), Outcome.RIGHT),
        (Reply(200, b'{"ChallengeName": "NEW_PASSWORD_REQUIRED", "Session": "x"}', {}), Outcome.RIGHT),
        (Reply(200, b'{"ChallengeName": "CUSTOM_CHALLENGE", "Session": "x"}', {}), Outcome.UNKNOWN),
        (_error("NotAuthorizedException", "Incorrect username or password."), Outcome.WRONG),
        (_error("UserNotFoundException", "User does not exist."), Outcome.WRONG),
        (_error("NotAuthorizedException", "User is disabled."), Outcome.BLOCKED),
        (_error("NotAuthorizedException", "Password attempts exceeded"), Outcome.BLOCKED),
        (_error("UserNotConfirmedException", "User is not confirmed."), Outcome.BLOCKED),
        (_error("PasswordResetRequiredException", "Password reset required for the user"), Outcome.BLOCKED),
        (_error("NotAuthorizedException", "Unable to verify secret hash for client app"), Outcome.UNKNOWN),
        (_error("com.amazonaws.cognito#TooManyRequestsException", "Too many requests"), Outcome.UNKNOWN),
        (
            _error("InvalidParameterException", "USER_PASSWORD_AUTH flow not enabled for this client"),
            Outcome.UNKNOWN,
        ),
        (Reply(500, b"", {}), Outcome.UNKNOWN),
    ],
)
def test_answers_classify_as_documented(reply, outcome):
    answer = CHECK.classify(reply)
    assert answer.outcome is outcome
    assert "secret hash for client app" not in answer.why
