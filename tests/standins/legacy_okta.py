"""Okta's Authentication API primary authentication and the OAuth password grant, as Okta
documents them (docs/companion.md#okta).

Sources: Okta Authentication API reference ("Primary authentication", "Transaction state":
``SUCCESS``, ``MFA_REQUIRED``, ``MFA_ENROLL``, ``PASSWORD_EXPIRED``, ``LOCKED_OUT``; error
``E0000004`` "Authentication failed" with 401; ``E0000047`` with 429 for rate limits), Okta OAuth
2.0 ``/token`` with ``grant_type=password`` (``invalid_grant`` "The credentials provided were
invalid."). Config: ``client_id``, ``client_secret`` (the OAuth app, ``client_secret_basic``),
``self_service_unlock`` ("yes": a locked user gets ``LOCKED_OUT``; else 401 like a wrong password).
"""

from __future__ import annotations

import base64
import json

from legacy_server import LegacyServer, Response, form, json_response

_FAILED = {
    "errorCode": "E0000004",
    "errorSummary": "Authentication failed",
    "errorLink": "E0000004",
    "errorId": "oaeStandin",
    "errorCauses": [],
}


def _rate_limited() -> Response:
    body = {"errorCode": "E0000047", "errorSummary": "API call exceeded rate limit due to too many requests."}
    return json_response(429, body, {"X-Rate-Limit-Remaining": "0", "Retry-After": "1"})


def _authn(server: LegacyServer, body: bytes) -> Response:
    request = json.loads(body)
    login, password = request.get("username", ""), request.get("password", "")
    user = server.user(login)
    if user is not None and user.state == "disabled":
        return json_response(401, _FAILED)  # deactivated or suspended: the same answer as wrong
    verdict = server.password_check(login, password)
    if verdict == "locked":
        if server.config.get("self_service_unlock") == "yes":
            return json_response(200, {"status": "LOCKED_OUT", "_links": {}})
        return json_response(401, _FAILED)
    if verdict != "right":
        return json_response(401, _FAILED)
    state = {"mfa": "MFA_REQUIRED", "pending": "PASSWORD_EXPIRED"}.get(user.state if user else "", "SUCCESS")
    return json_response(
        200,
        {
            "stateToken" if state != "SUCCESS" else "sessionToken": "00standin",
            "status": state,
            "_embedded": {},
        },
    )


def _token(server: LegacyServer, headers: dict[str, str], body: bytes) -> Response:
    params = form(body)
    config = server.config
    basic = headers.get("authorization", "")
    expected = base64.b64encode(f"{config['client_id']}:{config.get('client_secret', '')}".encode()).decode()
    if config.get("client_secret") and basic != f"Basic {expected}":
        return json_response(
            401, {"error": "invalid_client", "error_description": "Client authentication failed."}
        )
    if params.get("grant_type") != "password":
        return json_response(400, {"error": "unsupported_grant_type"})
    user = server.user(params.get("username", ""))
    verdict = server.password_check(params.get("username", ""), params.get("password", ""))
    if verdict != "right" or (user is not None and user.state == "disabled"):
        return json_response(
            400, {"error": "invalid_grant", "error_description": "The credentials provided were invalid."}
        )
    return json_response(200, {"access_token": "eyJ.access", "token_type": "Bearer", "expires_in": 3600})


def answer(server: LegacyServer, path: str, headers: dict[str, str], body: bytes) -> Response:
    if server.mode == "rate-limit":
        return _rate_limited()
    if path == "/api/v1/authn":
        return _authn(server, body)
    if path == "/oauth2/default/v1/token":
        return _token(server, headers, body)
    return json_response(
        404,
        {"errorCode": "E0000022", "errorSummary": "The endpoint does not support the provided HTTP method"},
    )
