"""The ZITADEL admin API client: one object that ties credentials, tokens, transport and calls.

It knows nothing of Beam; ``pipeline/push.py`` and ``pipeline/verify.py`` use it, and a DoFn can
open one in ``setup()``. The parts live beside it: ``api_errors.py`` (error classes, classification,
scrubbing), ``credentials.py``, ``transport.py`` (HTTP, retries, ``Retry-After``, deadlines),
``tokens.py`` (refresh, JWT profile) and ``admin_v1.py`` (the admin v1 endpoints). Example::

    creds = load_credentials(token_file="pat.txt")
    client = AdminClient("https://my-instance.zitadel.cloud", creds, max_attempts=6)
    client.probe()                                   # one cheap authenticated call: fail fast
    answer = client.import_data(body_bytes, timeout=330.0)
    answer = client.request("POST", "/v2/users/123/deactivate", {})   # any other JSON call

No token, secret or password hash ever reaches a log line or an exception message.
"""

from __future__ import annotations

import copy
import json
import random
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from transforms.common.errors import ConfigError
from transforms.zitadel_api.admin_v1 import AdminV1Calls
from transforms.zitadel_api.api_errors import AdminApiError, AuthError, RetriesExhausted, ServerGone, scrub
from transforms.zitadel_api.credentials import TOKEN_CHARS, Credentials, normalise_base_url
from transforms.zitadel_api.tokens import TokenSource
from transforms.zitadel_api.transport import CallStats, NoAnswerStop, Retrier, Transport, send_with_retries

__all__ = ["AdminClient", "connect", "Pacer", "call_kind"]

_ID_SEGMENT = re.compile(r"/(?!v\d+(?:/|$))[^/]*\d[^/]*")  # a path segment with a digit, not "v2"


class Pacer(Protocol):
    """What paces every attempt of a client (``Limiter``, limiter.py beside this module)."""

    def admit(self, retry: bool = False) -> None: ...

    def record(
        self, status: int, seconds: float, users: int = 1, retry_after: float | None = None, kind: str = ""
    ) -> None: ...


def call_kind(method: str, path: str) -> str:
    """``POST /v2/users/human`` or ``GET /v2/users/*``: calls of one kind take about the same time."""
    return f"{method} {_ID_SEGMENT.sub('/*', path.split('?', 1)[0])}"


class AdminClient(AdminV1Calls):
    """The admin API calls the tool needs. Thread-safe: share one client between push threads.

    ``timeout`` is the client-side timeout for calls other than import (import takes its own).
    """

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        timeout: float = 30.0,
        max_attempts: int = 6,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        no_answer_limit: int = 3,
    ) -> None:
        self.base_url = normalise_base_url(base_url)
        self.timeout = timeout
        self.stats = CallStats()
        self.stop = NoAnswerStop(no_answer_limit)
        self.pacer: Pacer | None = None
        # What the calls learned the server serves (e.g. "authorization-v2": True), shared with paced twins.
        self.services: dict[str, bool] = {}
        self._transport = Transport(self.base_url)
        self._retrier = Retrier(max_attempts, backoff_base, backoff_cap, sleep, rng)
        self.tokens = TokenSource(
            self.base_url, credentials, self._transport, self._retrier, self.stats, timeout, stop=self.stop
        )

    def _headers(self) -> dict[str, str]:
        token = self.tokens.get()
        if not TOKEN_CHARS.fullmatch(token):  # checked when loaded too; never handed to http.client
            raise AuthError("the bearer token holds a character a header cannot carry (not shown)")
        return {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }

    def request(
        self,
        method: str,
        path: str,
        body: bytes | Mapping[str, object] | None = None,
        timeout: float | None = None,
        on_attempt: Callable[[], None] | None = None,
        retrier: Retrier | None = None,
        org_id: str | None = None,
        on_answer: Callable[[int, float | None], None] | None = None,
        deadline_final: bool = False,
    ) -> dict[str, Any]:
        """Any authenticated JSON call (``PUT /v2/users/human/{id}``, ``POST /admin/v1/import``):
        retries, token refresh, the whole-request ``timeout`` (default the client's), the
        no-answer stop; returns the answer's JSON object (``{}`` for an empty answer).
        ``org_id`` sends the management API's ``x-zitadel-orgid`` (the org the call acts in).
        ``deadline_final``: a 504 ``context deadline exceeded`` ends the call (the import's own
        timeout) instead of being sent again.

        >>> client.request("POST", "/v2/users/123/deactivate", {})  # doctest: +SKIP
        """
        data = body if isinstance(body, bytes | None) else json.dumps(dict(body)).encode()
        if self.pacer is not None and on_answer is None:
            on_attempt, on_answer = _paced(self.pacer, call_kind(method, path), on_attempt)
        headers = self._headers if not org_id else (lambda: {**self._headers(), "x-zitadel-orgid": org_id})
        raw = send_with_retries(
            self._transport,
            retrier or self._retrier,
            self.stats,
            path,
            data,
            headers,
            self.timeout if timeout is None else timeout,
            self.tokens.secrets,
            self.tokens.invalidate,
            on_attempt,
            method=method,
            stop=self.stop,
            on_answer=on_answer,
            deadline_final=deadline_final,
        )
        try:
            answer = json.loads(raw or b"{}")
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            # A proxy or a wrong base URL answering 200 with a page: not the admin API.
            raise AdminApiError(
                f"{method} {path}: the answer is not a JSON object "
                f"({scrub(raw[:80].decode('utf-8', 'replace'), self.tokens.secrets())!r})",
                200,
            )
        return answer

    def paced(self, pacer: Pacer) -> AdminClient:
        """This client (same tokens, transport, counts and no-answer stop) with every attempt of
        ``request`` admitted by ``pacer`` and its answer reported to it (status, seconds,
        ``Retry-After``): the push's per-user calls at the pace the target allows."""
        twin = copy.copy(self)
        twin.pacer = pacer
        return twin

    @property
    def max_attempts(self) -> int:
        return self._retrier.max_attempts

    def single_attempt(self) -> Retrier:
        """A retrier of one attempt for ``request(..., retrier=)``; ``backoff`` waits between the
        caller's own attempts (a write whose outcome is read back before it is sent again)."""
        return self._retrier.single()

    def backoff(self, attempt: int, retry_after: float | None = None) -> None:
        """Wait as the client's retries do before attempt ``attempt + 1`` (at least
        ``retry_after``), and count the retry."""
        self.stats.bump("retries")
        self._retrier.wait(attempt, retry_after)

    def send_raw(self, path: str, body: bytes, timeout: float) -> bytes:
        """POST ``body`` as ``request`` does (retries, token refresh, no-answer stop); the answer's
        bytes unparsed (an export document can be GB)."""
        return send_with_retries(
            self._transport,
            self._retrier,
            self.stats,
            path,
            body,
            self._headers,
            timeout,
            self.tokens.secrets,
            self.tokens.invalidate,
            stop=self.stop,
        )


def connect(url: str, credentials: Credentials, max_attempts: int = 6, timeout: float = 30.0) -> AdminClient:
    """An AdminClient that has passed the probe call; ConfigError with one line otherwise.

    >>> client = connect("https://x.zitadel.cloud", credentials)  # doctest: +SKIP
    """
    try:
        client = AdminClient(url, credentials, max_attempts=max_attempts, timeout=timeout)
    except ValueError as err:
        raise ConfigError(f"--url: {err}") from None
    try:
        client.probe()
    except AuthError as err:
        raise ConfigError(f"{client.base_url}: authentication failed: {err.message}") from None
    except (RetriesExhausted, ServerGone) as err:
        raise ConfigError(f"{client.base_url}: not reachable: {err.message}") from None
    except AdminApiError as err:
        raise ConfigError(
            f"{client.base_url}: does not answer like a ZITADEL admin API: {err.message}"
        ) from None
    return client


def _paced(
    pacer: Pacer, kind: str, on_attempt: Callable[[], None] | None
) -> tuple[Callable[[], None], Callable[[int, float | None], None]]:
    """The hooks of one paced request: admit each attempt, report each answer with its time."""
    state = {"attempts": 0, "started": 0.0}

    def attempt() -> None:
        state["attempts"] += 1
        pacer.admit(retry=state["attempts"] > 1)
        state["started"] = time.monotonic()
        if on_attempt is not None:
            on_attempt()

    def answer(status: int, retry_after: float | None) -> None:
        pacer.record(status, time.monotonic() - state["started"], 1, retry_after, kind)

    return attempt, answer
