"""A Keycloak realm's token endpoint, the direct access grant only, answering as Keycloak's own
source does (docs/companion.md#keycloak).

Read in keycloak/keycloak: ResourceOwnerPasswordCredentialsGrantType.java ("Client not allowed for
direct access grants", "Account is not fully set up" once the flow passed with a required action
pending), directgrant/ValidateUsername.java (400 "Invalid user credentials" for an unknown user
and for a brute-force lock; 400 "Account disabled"), ValidatePassword.java (401 "Invalid user
credentials"), ValidateOTP.java (401 "Invalid user credentials" when OTP is configured and no code
came). Config: ``realm``, ``client_id``, ``client_secret`` (empty: a public client),
``direct_grants`` ("no": off for the client). Keycloak has no rate limit of its own; ``rate-limit``
mode answers 429 as a proxy in front of it would.
"""

from __future__ import annotations

from legacy_server import LegacyServer, Response, form, json_response


def _error(status: int, error: str, description: str) -> Response:
    return json_response(status, {"error": error, "error_description": description})


def answer(server: LegacyServer, path: str, headers: dict[str, str], body: bytes) -> Response:
    config = server.config
    if path != f"/realms/{config['realm']}/protocol/openid-connect/token":
        return _error(404, "not_found", "Realm does not exist")
    if server.mode == "rate-limit":
        return 429, {"Retry-After": "1"}, b"Too Many Requests"
    params = form(body)
    if params.get("client_id") != config["client_id"] or params.get("client_secret", "") != config.get(
        "client_secret", ""
    ):
        return _error(401, "invalid_client", "Invalid client or Invalid client credentials")
    if config.get("direct_grants") == "no":
        return _error(400, "unauthorized_client", "Client not allowed for direct access grants")
    login, password = params.get("username", ""), params.get("password", "")
    user = server.user(login)
    if user is not None and user.state == "locked":
        return _error(
            400, "invalid_grant", "Invalid user credentials"
        )  # the brute-force lock (ValidateUsername)
    if user is not None and user.state == "disabled":
        return _error(400, "invalid_grant", "Account disabled")
    verdict = server.password_check(login, password)
    if verdict == "unknown":
        return _error(400, "invalid_grant", "Invalid user credentials")
    if verdict in ("wrong", "locked"):
        return _error(401, "invalid_grant", "Invalid user credentials")
    if user is not None and user.state == "mfa" and not params.get("otp") and not params.get("totp"):
        return _error(401, "invalid_grant", "Invalid user credentials")  # ValidateOTP without a code
    if user is not None and user.state == "pending":
        return _error(400, "invalid_grant", "Account is not fully set up")
    return json_response(
        200, {"access_token": "eyJ.access", "expires_in": 300, "token_type": "Bearer", "scope": "openid"}
    )
