"""Firebase Authentication: Identity Toolkit ``accounts:signInWithPassword`` (docs/companion.md#firebase-sign-in).

``POST {url}/v1/accounts:signInWithPassword?key=API_KEY`` (``url`` defaults to
``https://identitytoolkit.googleapis.com``), JSON ``{"email", "password", "returnSecureToken":
true}``. The key is the project's Web API key (public by design, but kept out of logs all the
same: ``transport`` never names a URL's query).

How the answers classify (Firebase Auth REST API reference, "Sign in with email / password":
common error codes; the error body is ``{"error": {"code": 400, "message": "CODE[ : detail]"}}``):

- 200 with ``idToken``: right; 200 with ``mfaPendingCredential`` (a second factor is enrolled):
  right, Firebase asks for it only after the password matched;
- ``INVALID_PASSWORD``, ``EMAIL_NOT_FOUND``, ``INVALID_LOGIN_CREDENTIALS`` (the one code of a
  project with email enumeration protection): wrong;
- ``USER_DISABLED``: blocked there;
- ``TOO_MANY_ATTEMPTS_TRY_LATER`` (Firebase throttles the account or the caller for a while):
  unknown, the user keeps waiting;
- ``INVALID_EMAIL``, ``PASSWORD_LOGIN_DISABLED``, ``OPERATION_NOT_ALLOWED``, an invalid API key,
  5xx, anything else: unknown.

Example::

    Firebase(poster, api_key="...").check("ana@example.com", pw)
"""

from __future__ import annotations

import urllib.parse

import orjson

from companion.old_system.answer import Answer, OldSystem, Outcome, Request, unexpected
from companion.old_system.transport import Poster, Reply

__all__ = ["DEFAULT_URL", "Firebase"]

DEFAULT_URL = "https://identitytoolkit.googleapis.com"
_WRONG = frozenset({"INVALID_PASSWORD", "EMAIL_NOT_FOUND", "INVALID_LOGIN_CREDENTIALS"})


class Firebase(OldSystem):
    kind = "firebase"

    def __init__(self, poster: Poster, *, api_key: str, url: str | None = None) -> None:
        super().__init__(poster)
        base = (url or DEFAULT_URL).rstrip("/")
        self.url = f"{base}/v1/accounts:signInWithPassword?" + urllib.parse.urlencode({"key": api_key})

    def request(self, login: str, password: str) -> Request:
        body = orjson.dumps({"email": login, "password": password, "returnSecureToken": True})
        return Request(self.url, body, {"Content-Type": "application/json"})

    def classify(self, reply: Reply) -> Answer:
        answer = reply.json()
        if reply.status == 200:
            if answer.get("idToken"):
                return Answer(Outcome.RIGHT, "signed in")
            if answer.get("mfaPendingCredential"):
                return Answer(Outcome.RIGHT, "second factor asked for (after the password matched)")
            return unexpected(reply)
        error = answer.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        code = message.split(" : ", 1)[0].strip() if isinstance(message, str) else ""
        if code in _WRONG:
            return Answer(Outcome.WRONG, code)
        if code == "USER_DISABLED":
            return Answer(Outcome.BLOCKED, code)
        if code == "TOO_MANY_ATTEMPTS_TRY_LATER":
            return Answer(Outcome.UNKNOWN, "TOO_MANY_ATTEMPTS_TRY_LATER (throttled)", reply.retry_after())
        if code in ("INVALID_EMAIL", "PASSWORD_LOGIN_DISABLED", "OPERATION_NOT_ALLOWED"):
            return Answer(Outcome.UNKNOWN, code)
        return unexpected(reply)
