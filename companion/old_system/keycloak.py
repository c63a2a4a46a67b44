"""Keycloak: the realm's token endpoint with the direct access grant (docs/companion.md#keycloak).

``POST {url}/protocol/openid-connect/token`` (``url`` is ``https://HOST/realms/REALM``), form:
``grant_type=password``, ``client_id``, ``client_secret`` (a confidential client), ``username``,
``password``, ``scope=openid``. The client needs *Direct access grants* on.

How the answers classify, read in Keycloak's own source (services/.../directgrant/
ValidateUsername.java, ValidatePassword.java, ValidateOTP.java; protocol/oidc/grants/
ResourceOwnerPasswordCredentialsGrantType.java):

- 200 with ``access_token``: right;
- 400 ``invalid_grant`` "Account is not fully set up": right; Keycloak says so only after the
  whole direct grant flow passed (the password included) and a required action is pending;
- 400 ``invalid_grant`` "Account disabled", or "Account temporarily disabled" (the brute-force
  lock of older versions): blocked there;
- ``invalid_grant`` "Invalid user credentials" (401 from the password check, 400 for an unknown
  user and, in current versions, for a user the brute-force detector locked): wrong. The same
  401 text is what the OTP step answers when the user has OTP and no code was sent, so a user
  with OTP in the direct grant flow cannot be told from a wrong password: such users need a
  flow without the OTP step bound to the companion's client (docs/companion.md#keycloak);
- ``unauthorized_client`` ("Client not allowed for direct access grants"), ``invalid_client``:
  the companion's client is refused: unknown; 5xx and anything else: unknown.

Example::

    Keycloak(poster, url="https://sso.example.com/realms/acme", client_id="companion").check("ana", pw)
"""

from __future__ import annotations

import urllib.parse

from companion.old_system.answer import Answer, OldSystem, Outcome, Request, unexpected
from companion.old_system.transport import Poster, Reply

__all__ = ["Keycloak"]


class Keycloak(OldSystem):
    kind = "keycloak"

    def __init__(self, poster: Poster, *, url: str, client_id: str, secret: str | None = None) -> None:
        super().__init__(poster)
        self.url = url.rstrip("/") + "/protocol/openid-connect/token"
        self._client = {"client_id": client_id, **({"client_secret": secret} if secret else {})}

    def request(self, login: str, password: str) -> Request:
        form = {"grant_type": "password", "username": login, "password": password, "scope": "openid"}
        body = urllib.parse.urlencode(form | self._client).encode()
        return Request(self.url, body, {"Content-Type": "application/x-www-form-urlencoded"})

    def classify(self, reply: Reply) -> Answer:
        answer = reply.json()
        error = answer.get("error")
        description = answer.get("error_description")
        if reply.status == 200 and answer.get("access_token"):
            return Answer(Outcome.RIGHT, "token issued")
        if error == "invalid_grant":
            if description == "Account is not fully set up":
                return Answer(
                    Outcome.RIGHT, "account not fully set up (a required action after the password)"
                )
            if description in ("Account disabled", "Account temporarily disabled"):
                return Answer(Outcome.BLOCKED, "account disabled")
            if description == "Invalid user credentials" and reply.status in (400, 401):
                return Answer(Outcome.WRONG, "invalid user credentials")
        if error in ("unauthorized_client", "invalid_client"):
            return Answer(
                Outcome.UNKNOWN, f"{error}: the companion's client is refused (direct access grants, secret)"
            )
        return unexpected(reply)
