"""Any application: a small HTTP contract a home-grown system can serve with one endpoint
(docs/companion.md#any-application).

The companion POSTs to the operator's URL::

    POST /check-password HTTP/1.1
    Content-Type: application/json
    ZITADEL-Signature: t=1732690000,v1=<hex HMAC-SHA256(key, "1732690000." + body)>

    {"loginName": "ana@example.com", "password": "..."}

signed exactly as ZITADEL signs its calls to the companion (companion/signature.py), with a key
the operator gives both sides. The application checks the signature (refusing a stale one) and
the password, and answers:

- any 2xx: right;
- 401 or 403: wrong;
- anything else (423 for a locked user, 429, 5xx, a timeout): unknown; nothing is set and the
  user keeps waiting.

The answer's body is not read.

Example::

    Application(poster, url="https://legacy.example.com/check-password", key=b"...").check("ana", pw)
"""

from __future__ import annotations

import time
from collections.abc import Callable

import orjson

from companion.old_system.answer import Answer, OldSystem, Outcome, Request, unexpected
from companion.old_system.transport import Poster, Reply
from companion.signature import HEADER, sign

__all__ = ["Application"]


class Application(OldSystem):
    kind = "http"

    def __init__(
        self, poster: Poster, *, url: str, key: bytes, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(poster)
        self.url = url
        self._key = key
        self._clock = clock

    def request(self, login: str, password: str) -> Request:
        body = orjson.dumps({"loginName": login, "password": password})
        headers = {"Content-Type": "application/json", HEADER: sign(body, self._key, int(self._clock()))}
        return Request(self.url, body, headers)

    def classify(self, reply: Reply) -> Answer:
        if 200 <= reply.status < 300:
            return Answer(Outcome.RIGHT, f"HTTP {reply.status}")
        if reply.status in (401, 403):
            return Answer(Outcome.WRONG, f"HTTP {reply.status}")
        return unexpected(reply)
