"""Okta: the Authentication API's primary authentication, or the OAuth password grant
(docs/companion.md#okta).

``okta``: ``POST {url}/api/v1/authn`` (``url`` is ``https://ORG.okta.com``), JSON
``{"username", "password"}``, no credential. How the answers classify (Okta's Authentication API
reference, "Primary authentication" and "Transaction state"):

- 200 with ``status`` ``SUCCESS``, ``MFA_REQUIRED``, ``MFA_ENROLL``, ``PASSWORD_EXPIRED`` or
  ``PASSWORD_WARN``: right (Okta reaches each only after the password was verified);
  ``LOCKED_OUT``: blocked there; another state: unknown;
- 401 ``E0000004`` "Authentication failed": wrong (Okta answers so for an unknown, deactivated
  or suspended user and, without self-service unlock, a locked one too);
- 429 ``E0000047`` (rate limit), 5xx, anything else: unknown.

The Authentication API is a Classic Engine API: it works on Classic orgs and on orgs upgraded to
Identity Engine; an org created on Identity Engine uses ``okta-oauth`` instead.

``okta-oauth``: ``POST {url}/v1/token`` (``url`` is the authorization server,
``https://ORG.okta.com/oauth2/default``), form ``grant_type=password``, ``username``,
``password``, ``scope=openid``, the client by HTTP Basic (``client_secret_basic``) or
``client_id`` alone. 200 with ``access_token``: right; ``invalid_grant``: wrong (Okta does not say
why); ``invalid_client``, ``unauthorized_client``: unknown.

Example::

    Okta(poster, url="https://acme.okta.com").check("ana@example.com", pw)
"""

from __future__ import annotations

import base64
import urllib.parse

import orjson

from companion.old_system.answer import Answer, OldSystem, Outcome, Request, unexpected
from companion.old_system.transport import Poster, Reply

__all__ = ["Okta", "OktaOAuth"]

RIGHT_STATES = frozenset({"SUCCESS", "MFA_REQUIRED", "MFA_ENROLL", "PASSWORD_EXPIRED", "PASSWORD_WARN"})


class Okta(OldSystem):
    kind = "okta"

    def __init__(self, poster: Poster, *, url: str) -> None:
        super().__init__(poster)
        self.url = url.rstrip("/") + "/api/v1/authn"

    def request(self, login: str, password: str) -> Request:
        body = orjson.dumps({"username": login, "password": password})
        return Request(self.url, body, {"Content-Type": "application/json", "Accept": "application/json"})

    def classify(self, reply: Reply) -> Answer:
        answer = reply.json()
        if reply.status == 200:
            state = answer.get("status")
            if state in RIGHT_STATES:
                return Answer(Outcome.RIGHT, f"transaction state {state}")
            if state == "LOCKED_OUT":
                return Answer(Outcome.BLOCKED, "transaction state LOCKED_OUT")
            return Answer(Outcome.UNKNOWN, "a transaction state this check does not know")
        if reply.status == 401 and answer.get("errorCode") == "E0000004":
            return Answer(Outcome.WRONG, "E0000004 authentication failed")
        return unexpected(reply)


class OktaOAuth(OldSystem):
    kind = "okta-oauth"

    def __init__(self, poster: Poster, *, url: str, client_id: str, secret: str | None = None) -> None:
        super().__init__(poster)
        self.url = url.rstrip("/") + "/v1/token"
        self.client_id = client_id
        self._secret = secret

    def request(self, login: str, password: str) -> Request:
        form = {"grant_type": "password", "username": login, "password": password, "scope": "openid"}
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if self._secret:
            pair = f"{urllib.parse.quote(self.client_id)}:{urllib.parse.quote(self._secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form["client_id"] = self.client_id
        return Request(self.url, urllib.parse.urlencode(form).encode(), headers)

    def classify(self, reply: Reply) -> Answer:
        answer = reply.json()
        error = answer.get("error")
        if reply.status == 200 and answer.get("access_token"):
            return Answer(Outcome.RIGHT, "token issued")
        if error == "invalid_grant":
            return Answer(Outcome.WRONG, "invalid_grant")
        if error in ("invalid_client", "unauthorized_client", "invalid_scope"):
            return Answer(
                Outcome.UNKNOWN, f"{error}: the companion's client is refused (password grant, secret)"
            )
        return unexpected(reply)
