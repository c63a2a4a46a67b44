"""Sending one import body: read it, leave out invalid users, send, split on server timeouts.

The import is slow, not transactional, and rejects a whole request for one invalid user
(docs/zitadel-import-api.md). When the server's own timeout elapses (``context deadline
exceeded``) the users are sent again in halves; a single user is tried again up to
``max_attempts`` times. The ledger is saved after every request, so a killed run keeps the ids
created so far. Authentication failing or the server going away stops the whole push
(``Abort``). With a limiter (``limiter.py``) every attempt waits for its turn and reports its
answer. A body the server would not get through well inside its ``timeout`` at the seconds per
user seen so far is split before it is sent (``FIT_SHARE``), not after the server's deadline;
while an adaptive limit is still doubling (``probing``), a body that would take more than
``PROBE_SECONDS`` at the pace seen so far (any body before the first answer) goes out in
``PROBE_PARTS`` parts (of at least ``PROBE_MIN_USERS``), so the answers that set the limit come
sooner; a shorter body goes whole, its answer soon enough and a split only more requests. Called
by ``push_manifest`` (``engine.py``) once per body, from its thread pool::

    result = send_body(client, ref, ledger.load(ref), "5m", None, live, ledger, max_attempts=6)
"""

from __future__ import annotations

import json
import time
from typing import NamedTuple

from transforms.common.durations import parse_duration
from transforms.output.body_parts import body_user_ids, split_body
from transforms.output.manifest import BodyRef, read_body
from transforms.push.import_answers import Json, check_present_owners, fail_all, interpret
from transforms.push.ledger import BodyResult, BodyStatus, Ledger, now
from transforms.push.progress import PushProgress
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.limiter import Limiter

__all__ = ["send_body", "Abort", "TIMEOUT_MARGIN"]

TIMEOUT_MARGIN = 30.0  # seconds the client waits beyond the body's server-side timeout
PROBE_PARTS = 4  # a body's parts while the adaptive limit is still doubling
PROBE_MIN_USERS = 200  # no probe part smaller: a request's fixed cost would show as load
# While doubling, a body expected to take longer than this is split (a round trip that long slows
# the doubling); a shorter one goes whole. 20,000 users in 80 bodies against a target taking 16 at
# once: splitting every body cost x1.15 against the best fixed limit (benchmarks/push_limiter.py).
PROBE_SECONDS = 1.0
FIT_SHARE = 0.5  # a request should need at most this share of the body's server-side timeout


class Abort(Exception):
    """Authentication failed, or the server stopped answering, mid-run: stop sending, report what
    was done. The text is the reason, said in full."""


def _server_gone(err: api_errors.ServerGone) -> str:
    return f"the server stopped answering: {err.message}"


class _Attempts:
    """Counts the HTTP attempts one import request took (the client calls ``bump`` per attempt)
    and, with a limiter, waits for each attempt's turn and tells it every answer."""

    def __init__(self, limiter: Limiter | None = None, users: int = 1) -> None:
        self.count = 0
        self._limiter, self._users, self._started = limiter, users, 0.0

    def bump(self) -> None:
        self.count += 1
        if self._limiter is not None:
            self._limiter.admit(retry=self.count > 1)
        self._started = time.monotonic()

    def answer(self, status: int, retry_after: float | None) -> None:
        if self._limiter is not None:
            seconds = time.monotonic() - self._started
            self._limiter.record(status, seconds, self._users, retry_after)


class _Part(NamedTuple):
    """One request still to send: a body or a half of one."""

    body: Json
    data: bytes | None  # the exact bytes to send (the file's, for the first request), or None
    deadlines: int  # server timeouts this part already had


class _BodySender:
    """The requests of one body, its result and ledger record; ``run`` sends them all."""

    def __init__(
        self,
        client: AdminClient,
        result: BodyResult,
        ledger: Ledger,
        progress: PushProgress,
        timeout: float,
        max_attempts: int,
        started: float,
        limiter: Limiter | None = None,
    ) -> None:
        self.client, self.result, self.ledger, self.progress = client, result, ledger, progress
        self.timeout, self.max_attempts, self.started = timeout, max_attempts, started
        self.limiter = limiter
        self.lost_answer = False  # an earlier request of this body may have done work we never heard of
        self.body_users = 0
        self.server_timeout = 0.0  # the body's own timeout (seconds), 0: unknown

    def _most_users(self) -> int | None:
        """The most users one request may carry now (None: any number): fewer than the server
        gets through in ``FIT_SHARE`` of the body's timeout at the pace seen so far, and while
        the adaptive limit is probing, a ``PROBE_PARTS``-th of a body longer than
        ``PROBE_SECONDS``."""
        if self.limiter is None:
            return None
        limits = []
        per_user = self.limiter.seconds_per_user()
        if per_user and self.server_timeout:
            limits.append(max(1, int(FIT_SHARE * self.server_timeout / per_user)))
        if self.limiter.probing and (per_user is None or self.body_users * per_user > PROBE_SECONDS):
            limits.append(max(PROBE_MIN_USERS, -(-self.body_users // PROBE_PARTS)))
        return min(limits) if limits else None

    def _fit(self, part: _Part, queue: list[_Part]) -> _Part:
        """The part, halved until it carries at most ``_most_users``; the rest go first in line."""
        most = self._most_users()
        while most is not None and len(body_user_ids(part.body)) > max(1, most):
            first, second = split_body(part.body)
            queue.insert(0, _Part(second, None, part.deadlines))
            part = _Part(first, None, part.deadlines)
        return part

    def run(self, queue: list[_Part]) -> None:
        self.body_users = sum(len(body_user_ids(p.body)) for p in queue)
        while queue:
            part = self._fit(queue.pop(0), queue)
            n_users = len(body_user_ids(part.body))
            part_start = time.monotonic()
            counter = _Attempts(self.limiter, n_users)
            outcome = self._send(part, queue, counter)
            self.result.requests += counter.count
            self.result.parts.append(
                {
                    "users": n_users,
                    "seconds": round(time.monotonic() - part_start, 3),
                    "requests": counter.count,
                    "outcome": outcome,
                }
            )
            self.ledger.save(self.result)  # checkpoint: a kill between parts keeps the ids created so far

    def _stop(self, requests: int, with_seconds: bool) -> None:
        """Save the body as not sent (a re-run sends it again) before the push stops."""
        self.result.requests += requests
        self.result.status, self.result.finished_at = BodyStatus.NOT_SENT, now()
        if with_seconds:
            self.result.seconds = time.monotonic() - self.started
        self.ledger.save(self.result)

    def _fail(self, part: _Part, reason: str, message: str) -> str:
        self.progress.users_processed(0, 0, fail_all(part.body, self.result, reason, message))
        return reason

    def _send(self, part: _Part, queue: list[_Part], counter: _Attempts) -> str:
        """One import request; returns its outcome (``ok`` or the failure's reason)."""
        try:
            answer = self.client.import_data(
                part.data if part.data is not None else json.dumps(part.body).encode(),
                self.timeout,
                on_attempt=counter.bump,
                on_answer=counter.answer,
            )
        except api_errors.DeadlineExceeded as err:
            self.lost_answer = True
            if len(body_user_ids(part.body)) > 1:
                queue[0:0] = [_Part(half, None, 0) for half in split_body(part.body)]
            elif part.deadlines + 1 < self.max_attempts:
                # One user cannot be split: the server may just have been slow, try it again.
                queue.insert(0, _Part(part.body, part.data, part.deadlines + 1))
            else:
                self._fail(part, "deadline-exceeded", err.message)
            return "deadline-exceeded"
        except (api_errors.AuthError, api_errors.ServerGone, api_errors.QuotaExhausted) as err:
            self._stop(counter.count, with_seconds=True)
            if isinstance(err, api_errors.ServerGone):
                raise Abort(_server_gone(err)) from None
            if isinstance(err, api_errors.QuotaExhausted):  # clears when its period ends, not on a retry
                raise Abort(f"the instance's quota is used up until its period ends: {err.message}") from None
            raise Abort(f"authentication failed: {err.message}") from None
        except api_errors.InvalidRequest as err:
            return self._fail(part, "invalid-request", err.message)
        except api_errors.RetriesExhausted as err:
            return self._fail(part, "retries-exhausted", err.message)
        except api_errors.AdminApiError as err:
            return self._fail(part, "server-error", err.message)
        self._take_answer(answer, part, counter)
        return "ok"

    def _take_answer(self, answer: Json, part: _Part, counter: _Attempts) -> None:
        self.lost_answer = self.lost_answer or counter.count > 1
        before = len(self.result.present)
        secrets = self.client.tokens.secrets()
        counts = interpret(answer, part.body, self.result, secrets, self.lost_answer)
        try:
            moved = check_present_owners(self.client, self.result, part.body, before)
        except api_errors.ServerGone as err:
            # The owners could not be checked: the body is not done; a re-run sends it again.
            self.progress.users_processed(counts.created, counts.present, counts.failed)
            self._stop(counter.count, with_seconds=False)
            raise Abort(_server_gone(err)) from None
        if self.lost_answer:
            self.result.present_after_lost_answer = max(0, self.result.present_after_lost_answer - moved)
        self.progress.users_processed(counts.created, counts.present - moved, counts.failed + moved)


def _read(ref: BodyRef, result: BodyResult) -> tuple[Json, bytes | None] | None:
    """The body parsed and its exact bytes; None (and the body failed) when it cannot be read."""
    try:
        raw: bytes | None = read_body(ref)
        return json.loads(raw or b""), raw
    except (OSError, ValueError) as err:
        result.status = BodyStatus.FAILED
        result.failed.append(
            {
                "userId": "",
                "orgId": "",
                "reason": "unreadable-body",
                "type": "body",
                "message": api_errors.scrub(str(err)),
            }
        )
        return None


def _finish(result: BodyResult, previous: BodyResult | None, started: float, ledger: Ledger) -> BodyResult:
    if previous is not None:
        # Users this body created in an earlier run come back as AlreadyExisting now.
        earlier = set(previous.created)
        result.present_after_lost_answer = max(
            0, result.present_after_lost_answer - sum(1 for u in result.present if u in earlier)
        )
        result.created += [u for u in result.present if u in earlier]
        result.present = [u for u in result.present if u not in earlier]
    result.status = BodyStatus.FAILED if result.failed else BodyStatus.DONE
    result.seconds = round(time.monotonic() - started, 3)
    result.finished_at = now()
    ledger.save(result)
    return result


def send_body(
    client: AdminClient,
    ref: BodyRef,
    previous: BodyResult | None,
    timeout_default: str,
    request_timeout: float | None,
    progress: PushProgress,
    ledger: Ledger,
    max_attempts: int,
    limiter: Limiter | None = None,
) -> BodyResult:
    """Send one body (splitting on server timeouts); never raises except Abort."""
    result = BodyResult(
        ref.index,
        ref.name,
        ref.sha256,
        ref.users,
        status=BodyStatus.IN_PROGRESS,
        runs=(previous.runs if previous else 0) + 1,
        started_at=now(),
    )
    ledger.save(result)  # a killed run shows "in-progress": resumed runs send the body again
    started = time.monotonic()
    read = _read(ref, result)
    if read is None:
        result.finished_at = now()
        ledger.save(result)
        return result
    body, raw = read
    from transforms.output.body_check import check_body

    checked = check_body(body)  # the migrate pipelines' rules: an invalid user is never sent
    if checked.changed:
        body, raw = checked.body, None
        result.failed.extend(checked.rejected)
        progress.users_processed(0, 0, len(checked.rejected))
    try:
        seconds = parse_duration(str(body.get("timeout") or timeout_default))
    except ValueError:
        seconds = 300.0
    timeout = request_timeout or seconds + TIMEOUT_MARGIN
    sender = _BodySender(client, result, ledger, progress, timeout, max_attempts, started, limiter)
    sender.server_timeout = seconds
    # The first request sends the file's bytes.
    sender.run([_Part(body, raw, 0)] if body_user_ids(body) or not checked.rejected else [])
    return _finish(result, previous, started, ledger)
