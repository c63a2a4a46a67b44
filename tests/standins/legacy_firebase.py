"""Firebase Authentication's ``accounts:signInWithPassword``, as the Firebase Auth REST API
documents it (docs/companion.md#firebase-sign-in).

Source: Firebase Auth REST API, "Sign in with email / password" (``POST
/v1/accounts:signInWithPassword?key=[API_KEY]``, payload ``email``, ``password``,
``returnSecureToken``; response ``idToken``...; common error codes ``EMAIL_NOT_FOUND``,
``INVALID_PASSWORD``, ``USER_DISABLED``; ``TOO_MANY_ATTEMPTS_TRY_LATER``; the error body
``{"error": {"code": 400, "message": CODE, "errors": [...]}}``), Identity Platform "email
enumeration protection" (``INVALID_LOGIN_CREDENTIALS`` instead of the first two) and the MFA
sign-in answer (``mfaPendingCredential``, ``mfaInfo``). Config: ``api_key``, ``enumeration_protection``
("yes").
"""

from __future__ import annotations

import json
import urllib.parse

from legacy_server import LegacyServer, Response, json_response


def _error(code: str, status: int = 400) -> Response:
    body = {
        "error": {
            "code": status,
            "message": code,
            "errors": [{"message": code, "domain": "global", "reason": "invalid"}],
        }
    }
    return json_response(status, body)


def answer(server: LegacyServer, path: str, headers: dict[str, str], body: bytes) -> Response:
    route, _, query = path.partition("?")
    if route != "/v1/accounts:signInWithPassword":
        return _error("NOT_FOUND", 404)
    if urllib.parse.parse_qs(query).get("key") != [server.config["api_key"]]:
        return _error("API key not valid. Please pass a valid API key.")
    if server.mode == "rate-limit":
        return _error(
            "TOO_MANY_ATTEMPTS_TRY_LATER : Access to this account has been temporarily disabled due to many "
            "failed login attempts. You can immediately restore it by resetting your password or you can try again later."
        )
    request = json.loads(body)
    login, password = request.get("email", ""), request.get("password", "")
    protected = server.config.get("enumeration_protection") == "yes"
    user = server.user(login)
    if user is not None and user.state == "disabled":
        return _error("USER_DISABLED : The user account has been disabled by an administrator.")
    verdict = server.password_check(login, password)
    if verdict == "locked":
        return _error("TOO_MANY_ATTEMPTS_TRY_LATER : Access to this account has been temporarily disabled.")
    if verdict == "unknown":
        return _error("INVALID_LOGIN_CREDENTIALS" if protected else "EMAIL_NOT_FOUND")
    if verdict == "wrong":
        return _error("INVALID_LOGIN_CREDENTIALS" if protected else "INVALID_PASSWORD")
    if user is not None and user.state == "mfa":
        return json_response(
            200,
            {
                "mfaPendingCredential": "AEK.pending",
                "mfaInfo": [{"mfaEnrollmentId": "1", "phoneInfo": "+*******1234"}],
            },
        )
    return json_response(
        200,
        {"kind": "identitytoolkit#VerifyPasswordResponse", "localId": "uid", "email": login, "idToken": "eyJ.id",
         "registered": True, "refreshToken": "AMf.refresh", "expiresIn": "3600"},
    )  # fmt: skip
