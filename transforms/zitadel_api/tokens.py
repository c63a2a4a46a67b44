"""Bearer tokens for the admin API: a static token as is, OAuth tokens fetched and refreshed.

``client_credentials`` (a client id and secret) and the JWT profile (a service-account key signs
an assertion) both ask ``/oauth/v2/token``; a token is refreshed before it expires, and once more
when the server says it was revoked. The client (``client.py``) asks ``get()`` for every request::

    tokens = TokenSource(base_url, credentials, transport, retrier, stats)
    headers = {"Authorization": f"Bearer {tokens.get()}"}
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable

from transforms.zitadel_api.api_errors import AdminApiError, AuthError, RetriesExhausted, ServerGone
from transforms.zitadel_api.credentials import TOKEN_CHARS, Credentials
from transforms.zitadel_api.transport import CallStats, NoAnswerStop, Retrier, Transport, send_with_retries

__all__ = ["TokenSource", "ZITADEL_SCOPE", "JWT_BEARER"]

_LOGGER = logging.getLogger(__name__)

ZITADEL_SCOPE = "openid urn:zitadel:iam:org:project:id:zitadel:aud"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class TokenSource:
    """Bearer tokens for the credentials: a static token as is; OAuth tokens fetched from
    ``/oauth/v2/token`` and refreshed before they expire (thread-safe)."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        transport: Transport,
        retrier: Retrier,
        stats: CallStats,
        timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
        stop: NoAnswerStop | None = None,
    ) -> None:
        self._base_url = base_url
        self._stop = stop
        self._creds = credentials
        self._transport = transport
        self._retrier = retrier
        self._stats = stats
        self._timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._token = credentials.token if credentials.kind == "token" else ""
        self._refresh_at = float("inf") if credentials.kind == "token" else 0.0
        self._issued: list[str] = []

    @property
    def refreshable(self) -> bool:
        return self._creds.kind != "token"

    def secrets(self) -> tuple[str, ...]:
        """The credential's secrets and every token fetched so far (for scrubbing)."""
        return self._creds.secrets() + tuple(self._issued)

    def get(self) -> str:
        with self._lock:
            if self._clock() >= self._refresh_at:
                self._fetch()
            return self._token

    def invalidate(self) -> bool:
        """Forget the current token; True if a new one can be fetched."""
        if not self.refreshable:
            return False
        with self._lock:
            self._refresh_at = 0.0
        return True

    def _fetch(self) -> None:
        form: dict[str, str] = {"scope": ZITADEL_SCOPE}
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if self._creds.kind == "client":
            form["grant_type"] = "client_credentials"
            pair = (
                f"{urllib.parse.quote(self._creds.client_id)}:{urllib.parse.quote(self._creds.client_secret)}"
            )
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form["grant_type"] = JWT_BEARER
            form["assertion"] = self._assertion()
        body = urllib.parse.urlencode(form).encode()
        try:
            raw = send_with_retries(
                self._transport,
                self._retrier,
                self._stats,
                "/oauth/v2/token",
                body,
                lambda: headers,
                self._timeout,
                self.secrets,
                stop=self._stop,
            )
        except (RetriesExhausted, ServerGone):
            raise
        except AdminApiError as err:
            raise AuthError(f"token request rejected: {err.message}", err.status, err.code) from None
        self._stats.bump("token_fetches")
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise AuthError("the token endpoint's answer is not a JSON object")
        token, lifetime = answer.get("access_token"), answer.get("expires_in") or 3600
        if not isinstance(token, str) or not token:
            raise AuthError("token endpoint answered without an access_token")
        if not TOKEN_CHARS.fullmatch(token):
            raise AuthError("the token endpoint's access_token is not one run of visible characters")
        try:
            lifetime = float(lifetime)
        except (TypeError, ValueError):
            raise AuthError("the token endpoint's expires_in is not a number") from None
        self._token = token
        self._issued.append(token)
        # Refresh early: a fifth of the lifetime, at most a minute, so no request carries a token
        # that expires while it waits in a queue.
        self._refresh_at = self._clock() + lifetime - min(60.0, lifetime * 0.2)
        _LOGGER.info("fetched an access token valid for %.0f s", lifetime)

    def _assertion(self) -> str:
        import jwt  # pyjwt[crypto]; imported here so token/PAT users need no cryptography

        now = int(self._clock())
        key = self._creds.key
        claims = {
            "iss": key["userId"],
            "sub": key["userId"],
            "aud": self._base_url,
            "iat": now,
            "exp": now + 3600,
        }
        try:
            return jwt.encode(claims, key["key"], algorithm="RS256", headers={"kid": key["keyId"]})
        except (ValueError, TypeError, jwt.PyJWTError) as err:
            raise AuthError(f"cannot sign with the key file's key: {type(err).__name__}") from None
