"""Auth0: the token endpoint's password grant (docs/companion.md#auth0).

``POST {url}/oauth/token`` (form): ``grant_type=password``, or with a connection (``realm``) the
``http://auth0.com/oauth/grant-type/password-realm`` grant, ``username``, ``password``,
``client_id``, ``client_secret`` (a confidential client), ``scope=openid``. The client needs the
Password grant enabled (Dashboard > Applications > Advanced Settings > Grant Types).

How the answers classify (Auth0's Authentication API docs, "Resource Owner Password Flow" and
"Authenticate using ROPG with MFA"; the brute-force and rate-limit pages):

- 200 with ``access_token``: right;
- ``mfa_required`` (403, with an ``mfa_token``): right; Auth0 asks for the second factor only
  after the password matched;
- ``invalid_grant`` "Wrong email or password." (403): wrong;
- ``too_many_attempts`` (429, brute-force protection: "Your account has been blocked after
  multiple consecutive login attempts"), ``unauthorized`` "user is blocked" (an administrator's
  block), ``password_leaked`` (breached password detection): blocked there;
- ``unauthorized_client``, ``access_denied``, ``invalid_request``, ``invalid_client``: the
  companion's client is refused: unknown, and the operator must fix the client;
- 429 without ``too_many_attempts``, 5xx, anything else: unknown.

Example::

    Auth0(poster, url="https://tenant.eu.auth0.com", client_id="...", secret="...").check("ana@example.com", pw)
"""

from __future__ import annotations

import urllib.parse

from companion.old_system.answer import Answer, OldSystem, Outcome, Request, unexpected
from companion.old_system.transport import Poster, Reply

__all__ = ["Auth0"]

PASSWORD_REALM = "http://auth0.com/oauth/grant-type/password-realm"
_CLIENT_REFUSED = ("unauthorized_client", "access_denied", "invalid_request", "invalid_client")


class Auth0(OldSystem):
    kind = "auth0"

    def __init__(
        self, poster: Poster, *, url: str, client_id: str, secret: str | None = None, realm: str | None = None
    ) -> None:
        super().__init__(poster)
        self.url = url.rstrip("/") + "/oauth/token"
        self._client = {"client_id": client_id, **({"client_secret": secret} if secret else {})}
        self.realm = realm

    def request(self, login: str, password: str) -> Request:
        form = {"username": login, "password": password, "scope": "openid", **self._client}
        if self.realm:
            form |= {"grant_type": PASSWORD_REALM, "realm": self.realm}
        else:
            form["grant_type"] = "password"
        body = urllib.parse.urlencode(form).encode()
        return Request(self.url, body, {"Content-Type": "application/x-www-form-urlencoded"})

    def classify(self, reply: Reply) -> Answer:
        answer = reply.json()
        error = answer.get("error")
        description = str(answer.get("error_description") or "")
        if reply.status == 200 and answer.get("access_token"):
            return Answer(Outcome.RIGHT, "token issued")
        if error == "mfa_required":
            return Answer(Outcome.RIGHT, "mfa_required (asked for after the password matched)")
        if error == "invalid_grant" and description.startswith(
            ("Wrong email or password", "Wrong username or password")
        ):
            return Answer(Outcome.WRONG, "invalid_grant: wrong email or password")
        if error == "too_many_attempts":
            return Answer(Outcome.BLOCKED, "too_many_attempts (brute-force protection blocked the user)")
        if error == "unauthorized" and "blocked" in description:
            return Answer(Outcome.BLOCKED, "blocked by an administrator")
        if error == "password_leaked":
            return Answer(Outcome.BLOCKED, "password_leaked (breached password detection)")
        if error in _CLIENT_REFUSED:
            return Answer(
                Outcome.UNKNOWN, f"{error}: the companion's client is refused (grant, secret, connection)"
            )
        return unexpected(reply)
