"""AWS Cognito user pools: ``InitiateAuth`` with ``USER_PASSWORD_AUTH`` (docs/companion.md#cognito).

``POST {url}/`` (``url`` is ``https://cognito-idp.REGION.amazonaws.com``), headers
``Content-Type: application/x-amz-json-1.1`` and ``X-Amz-Target:
AWSCognitoIdentityProviderService.InitiateAuth``, body ``{"AuthFlow": "USER_PASSWORD_AUTH",
"ClientId": ..., "AuthParameters": {"USERNAME", "PASSWORD", "SECRET_HASH"}}``. ``SECRET_HASH``
(only when the app client has a secret) is base64(HMAC-SHA256(key = client secret, message =
username + client id)). The app client needs ``ALLOW_USER_PASSWORD_AUTH``; the call is
unauthenticated (no IAM credentials).

How the answers classify (Amazon Cognito API Reference, InitiateAuth: responses and errors):

- 200 with ``AuthenticationResult``: right; 200 with a ``ChallengeName`` Cognito sends after the
  password (``SMS_MFA``, ``SOFTWARE_TOKEN_MFA``, ``EMAIL_OTP``, ``SELECT_MFA_TYPE``,
  ``MFA_SETUP``, ``NEW_PASSWORD_REQUIRED``, ``DEVICE_SRP_AUTH``): right; another challenge: unknown;
- 400 ``NotAuthorizedException`` "Incorrect username or password.", ``UserNotFoundException``: wrong;
- ``NotAuthorizedException`` "User is disabled." or "Password attempts exceeded" (Cognito's
  own lockout), ``UserNotConfirmedException``, ``PasswordResetRequiredException``: blocked there;
- ``TooManyRequestsException``, ``LimitExceededException``, ``InternalErrorException``, another
  ``NotAuthorizedException`` text (e.g. a wrong secret hash) or error: unknown.

Example::

    Cognito(poster, url="https://cognito-idp.eu-west-1.amazonaws.com", client_id="...", secret=None).check("ana", pw)
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import orjson

from companion.old_system.answer import Answer, OldSystem, Outcome, Request, unexpected
from companion.old_system.transport import Poster, Reply

__all__ = ["Cognito", "secret_hash"]

TARGET = "AWSCognitoIdentityProviderService.InitiateAuth"
AFTER_PASSWORD = frozenset(
    {
        "SMS_MFA",
        "SOFTWARE_TOKEN_MFA",
        "EMAIL_OTP",
        "SELECT_MFA_TYPE",
        "MFA_SETUP",
        "NEW_PASSWORD_REQUIRED",
        "DEVICE_SRP_AUTH",
    }
)
_BLOCKED_TYPES = ("UserNotConfirmedException", "PasswordResetRequiredException")


def secret_hash(username: str, client_id: str, secret: str) -> str:
    mac = hmac.new(secret.encode(), (username + client_id).encode(), hashlib.sha256).digest()
    return base64.b64encode(mac).decode()


class Cognito(OldSystem):
    kind = "cognito"

    def __init__(self, poster: Poster, *, url: str, client_id: str, secret: str | None = None) -> None:
        super().__init__(poster)
        self.url = url.rstrip("/") + "/"
        self.client_id = client_id
        self._secret = secret

    def request(self, login: str, password: str) -> Request:
        parameters = {"USERNAME": login, "PASSWORD": password}
        if self._secret:
            parameters["SECRET_HASH"] = secret_hash(login, self.client_id, self._secret)
        body = orjson.dumps(
            {"AuthFlow": "USER_PASSWORD_AUTH", "ClientId": self.client_id, "AuthParameters": parameters}
        )
        headers = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": TARGET}
        return Request(self.url, body, headers)

    def classify(self, reply: Reply) -> Answer:
        answer = reply.json()
        if reply.status == 200:
            if isinstance(answer.get("AuthenticationResult"), dict):
                return Answer(Outcome.RIGHT, "authenticated")
            challenge = answer.get("ChallengeName")
            if challenge in AFTER_PASSWORD:
                return Answer(Outcome.RIGHT, f"challenge {challenge} (sent after the password matched)")
            return Answer(Outcome.UNKNOWN, "a challenge this check does not know")
        kind = (
            str(answer.get("__type") or reply.headers.get("x-amzn-errortype", ""))
            .split("#")[-1]
            .split(":")[0]
        )
        message = str(answer.get("message") or answer.get("Message") or "")
        if kind == "NotAuthorizedException":
            if message == "Incorrect username or password.":
                return Answer(Outcome.WRONG, "incorrect username or password")
            if message in ("User is disabled.", "Password attempts exceeded"):
                return Answer(Outcome.BLOCKED, "disabled or locked (password attempts exceeded)")
            return Answer(Outcome.UNKNOWN, "NotAuthorizedException about the client (secret hash, flow)")
        if kind == "UserNotFoundException":
            return Answer(Outcome.WRONG, "user not found")
        if kind in _BLOCKED_TYPES:
            return Answer(Outcome.BLOCKED, kind)
        if kind in ("TooManyRequestsException", "LimitExceededException"):
            return Answer(Outcome.UNKNOWN, f"rate-limited ({kind})", reply.retry_after())
        return unexpected(reply) if not kind else Answer(Outcome.UNKNOWN, "an error this check does not know")
