"""Auth0's token endpoint, the password grants only, as Auth0 documents them (docs/companion.md#auth0).

Sources: Auth0 docs "Call Your API Using Resource Owner Password Flow", "Authenticate Using the
Resource Owner Password Flow with MFA" (``mfa_required`` with an ``mfa_token``), "Brute-force
Protection" / "Block and Unblock Users" (``too_many_attempts``, "user is blocked"), "Rate Limit
Policy" (429). Config: ``client_id``, ``client_secret``, ``connection`` (the realm the
password-realm grant must name), ``grant_enabled`` ("no": the client lacks the Password grant).
"""

from __future__ import annotations

from legacy_server import LegacyServer, Response, form, json_response

PASSWORD_REALM = "http://auth0.com/oauth/grant-type/password-realm"


def answer(server: LegacyServer, path: str, headers: dict[str, str], body: bytes) -> Response:
    if path != "/oauth/token":
        return json_response(404, {"error": "not_found"})
    if server.mode == "rate-limit":
        return json_response(
            429, {"error": "too_many_requests", "error_description": "Global limit has been reached"},
            {"Retry-After": "1", "X-RateLimit-Limit": "30", "X-RateLimit-Remaining": "0"},
        )  # fmt: skip
    params = form(body)
    config = server.config
    if params.get("client_id") != config["client_id"] or params.get("client_secret") != config.get(
        "client_secret"
    ):
        return json_response(401, {"error": "access_denied", "error_description": "Unauthorized"})
    grant = params.get("grant_type")
    if config.get("grant_enabled") == "no" or grant not in ("password", PASSWORD_REALM):
        return json_response(
            403,
            {
                "error": "unauthorized_client",
                "error_description": f"Grant type '{grant}' not allowed for the client.",
            },
        )
    if grant == PASSWORD_REALM and params.get("realm") != config.get("connection"):
        return json_response(400, {"error": "invalid_request", "error_description": "connection not found"})
    login, password = params.get("username", ""), params.get("password", "")
    user = server.user(login)
    if user is not None and user.state == "disabled":
        return json_response(401, {"error": "unauthorized", "error_description": "user is blocked"})
    verdict = server.password_check(login, password)
    if verdict == "locked":
        return json_response(
            429,
            {
                "error": "too_many_attempts",
                "error_description": "Your account has been blocked after multiple consecutive login attempts. "
                "We've sent you an email with instructions on how to unblock it.",
            },
        )
    if verdict in ("unknown", "wrong"):
        return json_response(403, {"error": "invalid_grant", "error_description": "Wrong email or password."})
    if user is not None and user.state == "mfa":
        return json_response(
            403,
            {
                "error": "mfa_required",
                "error_description": "Multifactor authentication required",
                "mfa_token": "Fe26.mfa",
            },
        )
    return json_response(
        200, {"access_token": "eyJ.access", "id_token": "eyJ.id", "token_type": "Bearer", "expires_in": 86400}
    )
