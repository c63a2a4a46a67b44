"""HTTP for the admin API: one request per connection, whole-request deadlines, bounded retries.

``send_with_retries`` sends until a 2xx answer, a failure not worth retrying, or ``max_attempts``:
429, 502, 503, 504, dropped connections and client timeouts are retried with exponential backoff,
full jitter and at least the server's ``Retry-After``; ``NoAnswerStop`` ends a run whose server
went away. It knows nothing of tokens (the caller hands in the headers) nor of Beam; the client
(``client.py``) and the token source (``tokens.py``) use it::

    transport = Transport("https://my-instance.zitadel.cloud")
    retrier = Retrier(6, 0.5, 30.0, time.sleep, random.random)
    raw = send_with_retries(transport, retrier, CallStats(), "/admin/v1/import", body, headers, 330.0, secrets)
"""

from __future__ import annotations

import dataclasses
import http.client
import logging
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable

from transforms.zitadel_api.api_errors import (
    AuthError,
    Failure,
    InvalidRequest,
    ServerGone,
    classify,
    error_for,
    scrub,
)

__all__ = ["Transport", "Retrier", "CallStats", "NoAnswerStop", "send_with_retries"]

_LOGGER = logging.getLogger(__name__)


@dataclasses.dataclass
class _Answer:
    status: int
    body: bytes
    retry_after: str | None


class Transport:
    """One request per connection: imports are slow, and a fresh socket never reuses a dead one.

    ``timeout`` bounds the whole request, from connect to the last byte of the answer: the socket
    timeout alone bounds each read, so a server that drips a byte a second would never time out.
    A timer shuts the socket down when the deadline passes; whatever was blocked then fails, and
    the request ends as a ``TimeoutError``.
    """

    def __init__(self, base_url: str) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname or ""
        self._port = parsed.port
        self._prefix = parsed.path

    def post(self, path: str, body: bytes, headers: dict[str, str], timeout: float) -> _Answer:
        return self.request("POST", path, body, headers, timeout)

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> _Answer:
        if not _PATH.fullmatch(path):
            # http.client would raise InvalidURL, an HTTPException: retried like a dropped line.
            raise _BadPath(f"{method} {path!r}: the path has a space or control character (quote ids)")
        for name, value in headers.items():
            if not _HEADER_VALUE.fullmatch(value):
                # Never reach http.client, whose ValueError quotes the whole header (a token).
                raise _BadHeader(f"the {name} header holds a character a header cannot carry (not shown)")
        deadline = time.monotonic() + timeout
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=timeout)
        expired = threading.Event()
        timer: threading.Timer | None = None
        try:
            conn.connect()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no complete answer within {timeout:g} s")
            assert conn.sock is not None
            conn.sock.settimeout(left)
            timer = threading.Timer(left, _cut, (conn.sock, expired))
            timer.daemon = True
            timer.start()
            conn.request(method, self._prefix + path, body=body, headers=headers)
            response = conn.getresponse()
            answer = _Answer(response.status, response.read(), response.getheader("Retry-After"))
            if expired.is_set():  # the answer may have been cut short: not an answer
                raise TimeoutError(f"no complete answer within {timeout:g} s")
            return answer
        except _CONNECTION_ERRORS:
            if expired.is_set():
                raise TimeoutError(f"no complete answer within {timeout:g} s") from None
            raise
        finally:
            if timer is not None:
                timer.cancel()
            conn.close()


# Visible ASCII and inner spaces: what every header the client builds holds ("Bearer <token>",
# "Basic <base64>", media types). Anything else is refused before http.client sees it.
_HEADER_VALUE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")


class _BadHeader(ValueError):
    """A header value the client refuses to send; the message never holds the value."""


_PATH = re.compile(r"/[\x21-\x7e]*")


class _BadPath(ValueError):
    """A request path with a space or control character (an id not URL-quoted)."""


def _cut(sock: socket.socket, expired: threading.Event) -> None:
    """The request's deadline passed: shut its socket down so the blocked read or write returns."""
    expired.set()
    try:
        # socket.socket's own shutdown also for TLS sockets: it only wakes the blocked call.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


_CONNECTION_ERRORS = (OSError, http.client.HTTPException)  # socket.timeout is an OSError


class Retrier:
    """Bounded attempts with exponential backoff and full jitter, at least ``Retry-After``."""

    def __init__(
        self,
        max_attempts: int,
        base: float,
        cap: float,
        sleep: Callable[[float], None],
        rng: Callable[[], float],
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.max_attempts, self.base, self.cap = max_attempts, base, cap
        self._sleep, self._rng = sleep, rng
        # False for one attempt of a caller's own loop: the caller tells the no-answer stop once
        # its loop is over (NoAnswerStop.record), not after each attempt (a 30% loss would trip it).
        self.whole_request = True

    def delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = self._rng() * min(self.cap, self.base * 2 ** (attempt - 1))
        return max(backoff, retry_after or 0.0)

    def wait(self, attempt: int, retry_after: float | None) -> None:
        self._sleep(self.delay(attempt, retry_after))

    def single(self) -> Retrier:
        """One attempt, the same backoff: for a caller that decides itself whether to send again
        (a call whose outcome it reads back first, transforms/sync/calls.py)."""
        once = Retrier(1, self.base, self.cap, self._sleep, self._rng)
        once.whole_request = False
        return once


@dataclasses.dataclass
class CallStats:
    """Counters, read by the push report (requests, retries, throttled, failed)."""

    requests: int = 0
    retries: int = 0
    throttled: int = 0
    failures: int = 0
    token_fetches: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    def bump(self, name: str) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)


class NoAnswerStop:
    """Stops a run whose server went away, instead of timing out once per remaining request.

    Counts the requests in a row that ended without any answer (every attempt timed out, was
    refused or dropped); any answer, even an error, resets the count. From ``limit`` on, every
    further request fails at once with ``ServerGone``. One per client, shared by its threads, so
    the bulk import and per-user calls alike stop after ``limit`` dead requests.
    """

    def __init__(self, limit: int = 3) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._row = 0
        self._last = ""
        self._lock = threading.Lock()

    @property
    def tripped(self) -> bool:
        with self._lock:
            return self._row >= self.limit

    def check(self) -> None:
        """Raise ServerGone if ``limit`` requests in a row got no answer."""
        with self._lock:
            if self._row >= self.limit:
                raise ServerGone(f"{self._row} requests in a row got no answer (last: {self._last})")

    def record(self, answered: bool, message: str = "") -> None:
        with self._lock:
            if answered:
                self._row = 0
            else:
                self._row += 1
                self._last = message


def send_with_retries(
    transport: Transport,
    retrier: Retrier,
    stats: CallStats,
    path: str,
    body: bytes | None,
    headers: Callable[[], dict[str, str]],
    timeout: float,
    secrets: Callable[[], tuple[str, ...]],
    on_auth_failure: Callable[[], bool] | None = None,
    on_attempt: Callable[[], None] | None = None,
    method: str = "POST",
    stop: NoAnswerStop | None = None,
    on_answer: Callable[[int, float | None], None] | None = None,
    deadline_final: bool = False,
) -> bytes:
    """Send until success, a non-retryable failure, or ``max_attempts``; returns the 2xx body.

    A 504 ``context deadline exceeded`` is sent again like a gateway's 504, except with
    ``deadline_final`` (the import: its own ``timeout`` elapsed, the caller splits the body).

    ``timeout`` bounds each attempt from connect to the last byte, so a request takes at most
    about ``max_attempts`` x ``timeout`` plus the backoff. ``stop`` counts requests that got no
    answer at all and fails this one at once (``ServerGone``) once too many did. ``on_answer``
    hears every attempt's status (0: no answer) and ``Retry-After`` (the push's limiter).
    """
    attempt = 0
    refreshed = False
    while True:
        attempt += 1
        if stop is not None:
            stop.check()
        stats.bump("requests")
        if on_attempt is not None:
            on_attempt()
        try:
            answer = transport.request(method, path, body, headers(), timeout)
        except _BadHeader as err:
            stats.bump("failures")
            raise AuthError(f"{method} {path}: {err}") from None
        except _BadPath as err:
            stats.bump("failures")
            raise InvalidRequest(str(err)) from None
        except _CONNECTION_ERRORS as err:
            message = scrub(f"{type(err).__name__}: {err}", secrets())
            failure = Failure("retry", 0, None, message, unknown=True)  # sent, maybe done: no answer
        else:
            if 200 <= answer.status < 300:
                if stop is not None:
                    stop.record(True)
                if on_answer is not None:
                    on_answer(answer.status, None)
                return answer.body
            failure = classify(answer.status, answer.body, answer.retry_after)
            failure = dataclasses.replace(failure, message=scrub(failure.message, secrets()))
        if on_answer is not None:
            on_answer(failure.status, failure.retry_after)
        if failure.kind == "auth" and on_auth_failure and not refreshed and on_auth_failure():
            # A token that expired early (clock skew, revocation race): one fresh token, one retry.
            refreshed = True
            attempt -= 1
            continue
        retryable = failure.kind == "retry" or (failure.kind == "deadline" and not deadline_final)
        if not retryable or attempt >= retrier.max_attempts:
            if failure.status == 429 and not retrier.whole_request:
                stats.bump("throttled")  # the caller's own loop sends it again
            stats.bump("failures")
            if stop is not None and (retrier.whole_request or failure.status != 0):
                stop.record(failure.status != 0, failure.message)
            raise error_for(failure, path, attempt, method)
        if failure.status == 429:
            stats.bump("throttled")
        stats.bump("retries")
        _LOGGER.info(
            "%s %s: %s (HTTP %s); retry %d of %d",
            method,
            path,
            failure.message,
            failure.status,
            attempt,
            retrier.max_attempts - 1,
        )
        retrier.wait(attempt, failure.retry_after)
