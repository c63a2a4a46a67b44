"""An Amazon Cognito user pool's ``InitiateAuth`` (``USER_PASSWORD_AUTH`` only), as the Amazon
Cognito API Reference documents it (docs/companion.md#cognito).

Source: Amazon Cognito user pools API Reference, InitiateAuth (request syntax, ``AuthParameters``
``USERNAME``/``PASSWORD``/``SECRET_HASH``, response ``AuthenticationResult`` or ``ChallengeName``,
errors ``NotAuthorizedException``, ``UserNotFoundException``, ``UserNotConfirmedException``,
``PasswordResetRequiredException``, ``TooManyRequestsException``, ``InvalidParameterException``)
and "Computing secret hash values". Errors are 400 with ``{"__type", "message"}`` and the
``x-amzn-ErrorType`` header (JSON 1.1 protocol). Config: ``client_id``, ``client_secret`` (empty:
no secret), ``flow_enabled`` ("no": ``ALLOW_USER_PASSWORD_AUTH`` off).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from legacy_server import LegacyServer, Response, json_response

TARGET = "AWSCognitoIdentityProviderService.InitiateAuth"


def _error(kind: str, message: str) -> Response:
    return json_response(400, {"__type": kind, "message": message}, {"x-amzn-ErrorType": f"{kind}:"})


def answer(server: LegacyServer, path: str, headers: dict[str, str], body: bytes) -> Response:
    if headers.get("x-amz-target") != TARGET or not headers.get("content-type", "").startswith(
        "application/x-amz-json-1.1"
    ):
        return _error("UnknownOperationException", "")
    if server.mode == "rate-limit":
        return _error("TooManyRequestsException", "Too many requests")
    request = json.loads(body)
    config = server.config
    if request.get("ClientId") != config["client_id"]:
        return _error("ResourceNotFoundException", "User pool client does not exist.")
    if request.get("AuthFlow") != "USER_PASSWORD_AUTH" or config.get("flow_enabled") == "no":
        return _error("InvalidParameterException", "USER_PASSWORD_AUTH flow not enabled for this client")
    parameters = request.get("AuthParameters") or {}
    login, password = parameters.get("USERNAME", ""), parameters.get("PASSWORD", "")
    secret = config.get("client_secret")
    if secret:
        expected = base64.b64encode(
            hmac.new(secret.encode(), (login + config["client_id"]).encode(), hashlib.sha256).digest()
        ).decode()
        if parameters.get("SECRET_HASH") != expected:
            return _error(
                "NotAuthorizedException", f"Unable to verify secret hash for client {config['client_id']}"
            )
    user = server.user(login)
    if user is not None and user.state == "disabled":
        return _error("NotAuthorizedException", "User is disabled.")
    verdict = server.password_check(login, password)
    if verdict == "locked":
        return _error("NotAuthorizedException", "Password attempts exceeded")
    if verdict == "unknown":
        return _error("UserNotFoundException", "User does not exist.")
    if verdict == "wrong":
        return _error("NotAuthorizedException", "Incorrect username or password.")
    if user is not None and user.state == "mfa":
        return json_response(
            200, {"ChallengeName": "SOFTWARE_TOKEN_MFA", "Session": "AYAB.session", "ChallengeParameters": {}}
        )
    if user is not None and user.state == "pending":
        return json_response(
            200,
            {"ChallengeName": "NEW_PASSWORD_REQUIRED", "Session": "AYAB.session", "ChallengeParameters": {}},
        )
    return json_response(
        200,
        {
            "AuthenticationResult": {
                "AccessToken": "eyJ.access",
                "IdToken": "eyJ.id",
                "ExpiresIn": 3600,
                "TokenType": "Bearer",
            }
        },
    )
