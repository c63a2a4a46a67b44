"""companion/old_system/firebase.py: accounts:signInWithPassword and its error codes classified
(Firebase Auth REST API; docs/companion.md#firebase-sign-in)."""

from __future__ import annotations

import json

import pytest

from companion.old_system.answer import Outcome
from companion.old_system.firebase import Firebase
from companion.old_system.transport import Poster, Reply

CHECK = Firebase(Poster(1.0), api_key="AIza key")


def test_the_request_names_the_key_in_the_query_and_the_user_by_email():
    request = CHECK.request("ana@example.com", "pw")
    assert request.url == "https://identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=AIza+key"
    assert json.loads(request.body) == {
        "email": "ana@example.com",
        "password": "pw",
        "returnSecureToken": True,
    }


def _error(message: str) -> Reply:
    return Reply(400, json.dumps({"error": {"code": 400, "message": message, "errors": []}}).encode(), {})


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (Reply(200, b'{"idToken": "eyJ", "localId": "u"}', {}), Outcome.RIGHT),
        (Reply(200, b'{"mfaPendingCredential": "AEK", "mfaInfo": []}', {}), Outcome.RIGHT),
        (_error("INVALID_PASSWORD"), Outcome.WRONG),
        (_error("EMAIL_NOT_FOUND"), Outcome.WRONG),
        (_error("INVALID_LOGIN_CREDENTIALS"), Outcome.WRONG),
        (_error("USER_DISABLED : The user account has been disabled by an administrator."), Outcome.BLOCKED),
        (
            _error("TOO_MANY_ATTEMPTS_TRY_LATER : Access to this account has been temporarily disabled"),
            Outcome.UNKNOWN,
        ),
        (_error("INVALID_EMAIL"), Outcome.UNKNOWN),
        (_error("API key not valid. Please pass a valid API key."), Outcome.UNKNOWN),
        (Reply(200, b"{}", {}), Outcome.UNKNOWN),
        (Reply(503, b"", {}), Outcome.UNKNOWN),
    ],
)
def test_error_codes_classify_as_documented(reply, outcome):
    assert CHECK.classify(reply).outcome is outcome
