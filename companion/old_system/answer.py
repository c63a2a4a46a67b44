"""What an old system's answer says about a password, and the base every system's check shares.

Four outcomes, never a guess (docs/companion.md#old-systems):

- ``RIGHT``: the old system accepted the password (a token, or a second-factor challenge or a
  pending required action it only asks for after the password was right);
- ``WRONG``: it refused the password (or does not know the user: it answers both the same);
- ``BLOCKED``: the user is disabled or locked there; nothing is set;
- ``UNKNOWN``: down, slow past the bound, rate-limited, refusing the companion's own client, or an
  answer this module does not know; nothing is set and the user keeps waiting.

``why`` is a fixed phrase chosen by the classifier: never the old system's own text (it could
quote what it was sent), never a login name, password or secret.

Example::

    class Mine(OldSystem):
        kind = "mine"
        def request(self, login, password): return Request(url, body, headers)
        def classify(self, reply): return Answer(Outcome.RIGHT, "token issued") if reply.status == 200 else ...
    Mine(settings, poster).check("ana@example.com", password)
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping

from companion.old_system.transport import NoAnswer, Poster, Reply

__all__ = ["Answer", "OldSystem", "Outcome", "Request", "unexpected"]


class Outcome(enum.Enum):
    RIGHT = "right"
    WRONG = "wrong"
    BLOCKED = "blocked"
    UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Answer:
    outcome: Outcome
    why: str
    retry_after: float = 0.0  # seconds the old system asked the companion to wait (a rate limit)


@dataclasses.dataclass(frozen=True)
class Request:
    url: str
    body: bytes = dataclasses.field(repr=False)  # holds the password: never shown
    headers: Mapping[str, str] = dataclasses.field(repr=False)  # may hold a client secret


def unexpected(reply: Reply) -> Answer:
    """Anything a classifier does not recognise: unknown, named by status only."""
    if reply.status == 429:
        return Answer(Outcome.UNKNOWN, "rate-limited (HTTP 429)", reply.retry_after())
    if reply.status >= 500:
        return Answer(Outcome.UNKNOWN, f"server error (HTTP {reply.status})", reply.retry_after())
    return Answer(Outcome.UNKNOWN, f"unexpected answer (HTTP {reply.status})")


class OldSystem:
    """One old system's sign-in API: builds the request, classifies the reply; ``check`` does both
    through the bounded poster. Subclasses set ``kind`` and implement ``request`` and ``classify``."""

    kind = ""

    def __init__(self, poster: Poster) -> None:
        self.poster = poster

    def request(self, login: str, password: str) -> Request:
        raise NotImplementedError

    def classify(self, reply: Reply) -> Answer:
        raise NotImplementedError

    def check(self, login: str, password: str, timeout: float | None = None) -> Answer:
        """The old system's verdict on ``password`` for ``login``; never raises for what the
        old system does (an unreachable or slow system is UNKNOWN)."""
        request = self.request(login, password)
        try:
            reply = self.poster.post(request.url, request.body, request.headers, timeout)
        except NoAnswer as err:
            return Answer(Outcome.UNKNOWN, f"no answer ({err})")
        return self.classify(reply)
