"""companion/old_system/answer.py: ``check`` turns every failure to answer into UNKNOWN; ``unexpected``
names a status, never a body."""

from __future__ import annotations

from companion.old_system.answer import Answer, OldSystem, Outcome, Request, unexpected
from companion.old_system.transport import Poster, Reply


class _Refused(OldSystem):
    kind = "test"

    def request(self, login: str, password: str) -> Request:
        return Request("http://127.0.0.1:9/", password.encode(), {})

    def classify(self, reply: Reply) -> Answer:
        raise AssertionError("never reached: nothing answered")


def test_a_system_nobody_answers_for_is_unknown():
    answer = _Refused(Poster(1.0)).check("ana", "pw")
    assert (answer.outcome, answer.why) == (Outcome.UNKNOWN, "no answer (connection refused)")


def test_unexpected_answers_name_their_status_only():
    assert unexpected(Reply(418, b"secret body", {})) == Answer(
        Outcome.UNKNOWN, "unexpected answer (HTTP 418)"
    )
    limited = unexpected(Reply(429, b"", {"retry-after": "12"}))
    assert (limited.outcome, limited.retry_after) == (Outcome.UNKNOWN, 12.0)
    assert unexpected(Reply(503, b"", {"retry-after": "9999"})).retry_after == 300.0
