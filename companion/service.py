"""The companion's HTTP service: the Actions v2 target ZITADEL calls on a session's password check.

One route, ``POST /``, for the request executions of ``SessionService/CreateSession`` and
``SetSession`` (docs/companion.md#flow). In order:

1. the body is read up to ``max_body`` bytes (more: 413);
2. its ``ZITADEL-Signature`` is checked (unsigned, forged, stale or replayed: 401, nothing else
   read; companion/signature.py);
3. the payload's ``request.checks.password`` and the user it is for (``checks.user`` of
   CreateSession, or the session's user through ``GetSession`` for SetSession) are read;
4. a user not in the store, or over the failed-attempt limit, passes through untouched;
5. the password is checked against the legacy hash (companion/verifiers.py, in a worker thread)
   or, for a user of form ``old-system``, against the old system's own sign-in API
   (companion/old_system/, bounded below the target's timeout); on a match (*right*) it is set
   through ``SetPassword`` and the user is removed from the store (durably) before the answer,
   so ZITADEL's own password check that follows succeeds. *Wrong* and *blocked there* count
   against the user's attempt limit; *unknown* (the old system did not answer, or rate-limited)
   is noted in the store's unanswered file; none of the three sets anything.

Every answer ZITADEL gets for a signed call is 200 with ``{}``: the target is a ``restWebhook``,
whose body ZITADEL ignores. The companion never changes the request (a ``restCall`` would replace
it with the answer). Log lines name a user id and an outcome, never a password, hash or key.

Example::

    app = create_app(store, SignatureCheck(key), ZitadelCalls(client))
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from companion import verifiers
from companion.old_system.answer import Answer, OldSystem, Outcome
from companion.signature import HEADER, BadSignature, SignatureCheck
from companion.store import OLD_SYSTEM_FORM, Record, Store
from companion.zitadel import SESSION_METHODS, ZitadelCalls

__all__ = ["OLD_SYSTEM_FORM", "Attempts", "Counters", "OldSystemCheck", "create_app"]

_LOG = logging.getLogger("companion")
MAX_BODY = 64 * 1024


class Attempts:
    """Failed legacy checks per user in a sliding window; over ``limit`` a user is not checked
    (ZITADEL's own check then fails as it would without the companion)."""

    def __init__(self, limit: int = 10, window: float = 900.0, clock: Callable[[], float] = time.monotonic):
        self.limit, self.window, self._clock = limit, window, clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, user_id: str) -> deque[float]:
        now = self._clock()
        failures = self._failures.setdefault(user_id, deque())
        while failures and now - failures[0] > self.window:
            failures.popleft()
        return failures

    def allowed(self, user_id: str) -> bool:
        with self._lock:
            return len(self._recent(user_id)) < self.limit

    def failed(self, user_id: str) -> int:
        with self._lock:
            failures = self._recent(user_id)
            failures.append(self._clock())
            return len(failures)


class Counters:
    """What the service did, for /healthz and tests: counts only, never values."""

    NAMES = (
        "refused", "passed", "checked", "matched", "mismatched", "blocked", "unanswered", "limited",
        "set_failed", "errors",
    )  # fmt: skip

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values = dict.fromkeys(self.NAMES, 0)

    def bump(self, name: str) -> None:
        with self._lock:
            self.values[name] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.values)


class OldSystemCheck:
    """The old system a ``old-system`` record is checked against, with the call's time budget:
    the call ends by ``budget`` seconds after ZITADEL's call arrived (or its own bound, if
    sooner), leaving the rest of the target's timeout to ``SetPassword``. A rate-limit answer's
    ``Retry-After`` pauses further calls (answered *unknown* without a call) until it passed."""

    def __init__(
        self,
        system: OldSystem,
        budget: float,
        concurrent: int = 8,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.system, self.budget, self._clock = system, budget, clock
        self.calling = threading.BoundedSemaphore(concurrent)
        self._paused_until = 0.0

    def __call__(self, record: Record, password: str, started: float) -> Answer:
        login = _old_login(record)
        if login is None:
            return Answer(Outcome.UNKNOWN, "no login name for the old system in the store")
        if self._clock() < self._paused_until:
            return Answer(Outcome.UNKNOWN, "paused: the old system asked to wait (rate limit)")
        with self.calling:
            left = self.budget - (self._clock() - started)
            answer = self.system.check(login, password, left)
        if answer.retry_after:
            self._paused_until = max(self._paused_until, self._clock() + answer.retry_after)
        return answer


def _old_login(record: Record) -> str | None:
    """The name the old system knows the user by: ``old_login``, else the first login name."""
    login = record.get("old_login")
    if isinstance(login, str) and login:
        return login
    names = record.get("login_names")
    first = names[0] if isinstance(names, list) and names else None
    return first if isinstance(first, str) and first else None


_INITIAL = (
    "ZITADEL holds the user in state initial (the admin import makes a user without password so) "
    "and refuses to set its password: push with --api=user-v2 (docs/companion.md#users-must-be-active)"
)
_OK: dict[str, str] = {}  # the answer to every signed call: ZITADEL ignores a webhook's body


async def _body(request: Request, limit: int) -> bytes | None:
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _password_check(payload: dict[str, object]) -> tuple[str, dict[str, object], str] | None:
    """(method, request, password) of a session call with a password check, else None."""
    method = payload.get("fullMethod")
    request = payload.get("request")
    if method not in SESSION_METHODS or not isinstance(request, dict):
        return None
    checks = request.get("checks")
    password = ((checks or {}).get("password") or {}).get("password") if isinstance(checks, dict) else None
    if not isinstance(password, str) or not password:
        return None
    return method, request, password


def _user_check(request: dict[str, object]) -> tuple[str | None, str | None]:
    checks = request.get("checks")
    user = checks.get("user") if isinstance(checks, dict) else None
    if not isinstance(user, dict):
        return None, None
    user_id, login_name = user.get("userId"), user.get("loginName")
    return (
        user_id if isinstance(user_id, str) and user_id else None,
        login_name if isinstance(login_name, str) and login_name else None,
    )


class _Migration:
    """The blocking part of a call, run in a worker thread: who the call is for, the attempt
    limit, the legacy check, SetPassword and the removal."""

    def __init__(
        self,
        store: Store,
        zitadel: ZitadelCalls,
        attempts: Attempts,
        counters: Counters,
        concurrent_checks: int,
        old_system: OldSystemCheck | None = None,
    ) -> None:
        self.store, self.zitadel, self.attempts, self.counters = store, zitadel, attempts, counters
        self.old_system = old_system
        # A Firebase check holds 128 * r * N bytes (16 MiB at r = 8, N = 2^14) for ~0.1 s: a burst
        # of sign-ins waits here instead of taking the memory of every worker thread at once.
        self.checking = threading.BoundedSemaphore(concurrent_checks)

    def resolve(self, method: str, request: dict[str, object]) -> Record | None:
        user_id, login_name = _user_check(request)
        if user_id is None and login_name is None and method.endswith("/SetSession"):
            session_id = request.get("sessionId")
            if not isinstance(session_id, str) or not session_id or len(self.store) == 0:
                return None
            user_id = self.zitadel.session_user(session_id)
        return self.store.find(user_id=user_id, login_name=None if user_id else login_name)

    def verdict(self, record: Record, password: str, started: float) -> Answer:
        """Right or wrong from the kept hash, or the old system's classified answer."""
        if record.get("form") == OLD_SYSTEM_FORM:
            if self.old_system is None:  # serve refuses such a store without --old-system
                return Answer(Outcome.UNKNOWN, "no old system configured")
            return self.old_system(record, password, started)
        with self.checking:
            matched = verifiers.verify(record, password)
        return Answer(Outcome.RIGHT if matched else Outcome.WRONG, "legacy hash")

    def refused(self, user_id: str, answer: Answer) -> None:
        """Count and log a check that sets nothing (never the password or the old system's text)."""
        if answer.outcome is Outcome.UNKNOWN:
            self.counters.bump("unanswered")
            self.store.note_unanswered(user_id, answer.why)
            _LOG.warning("user %s: no verdict from the old system (%s); kept waiting", user_id, answer.why)
            return
        recent = self.attempts.failed(user_id)
        if answer.outcome is Outcome.BLOCKED:
            self.counters.bump("blocked")
            _LOG.info(
                "user %s: blocked at the old system (%s); nothing set (%d recent)",
                user_id,
                answer.why,
                recent,
            )
        elif answer.why == "legacy hash":
            self.counters.bump("mismatched")
            _LOG.info("user %s: legacy password did not match (%d recent)", user_id, recent)
        else:
            self.counters.bump("mismatched")
            _LOG.info(
                "user %s: the old system refused the password (%s; %d recent)", user_id, answer.why, recent
            )

    def __call__(self, method: str, request: dict[str, object], password: str) -> None:
        counters = self.counters
        started = time.monotonic()
        try:
            record = self.resolve(method, request)
        except Exception as err:  # a failed GetSession: pass through, ZITADEL decides
            _LOG.warning("session lookup failed (%s); passed through", type(err).__name__)
            counters.bump("passed")
            return
        if record is None:
            counters.bump("passed")
            return
        user_id = str(record["id"])
        if not self.attempts.allowed(user_id):
            counters.bump("limited")
            _LOG.warning("user %s: failed-attempt limit reached; not checked", user_id)
            return
        counters.bump("checked")
        answer = self.verdict(record, password, started)
        if answer.outcome is not Outcome.RIGHT:
            self.refused(user_id, answer)
            return
        counters.bump("matched")
        try:
            self.zitadel.set_password(user_id, password)
        except Exception as err:
            counters.bump("set_failed")
            status = getattr(err, "status", None)
            # The answer's text is never logged; only whether it names the one cause an operator
            # must act on: a user the admin import created without password is "initial".
            why = _INITIAL if "NotInitialised" in str(getattr(err, "message", "")) else "kept in the store"
            _LOG.warning(
                "user %s: SetPassword failed (%s, HTTP %s); %s", user_id, type(err).__name__, status, why
            )
            return
        self.store.remove(user_id)
        _LOG.info("user %s: password set in ZITADEL; removed from the store", user_id)


def create_app(
    store: Store,
    signature: SignatureCheck,
    zitadel: ZitadelCalls,
    *,
    max_body: int = MAX_BODY,
    attempts: Attempts | None = None,
    concurrent_checks: int = 4,
    old_system: OldSystemCheck | None = None,
) -> Starlette:
    counters = Counters()
    migrate = _Migration(store, zitadel, attempts or Attempts(), counters, concurrent_checks, old_system)

    async def session_check(request: Request) -> JSONResponse:
        body = await _body(request, max_body)
        if body is None:
            counters.bump("refused")
            _LOG.warning("refused call: body larger than %d bytes", max_body)
            return JSONResponse({"error": "body too large"}, status_code=413)
        try:
            # ZITADEL sends ZITADEL-Signature (pkg/actions); its API docs say X-ZITADEL-Signature.
            signature.verify(body, request.headers.get(HEADER) or request.headers.get("X-" + HEADER))
        except BadSignature as err:
            counters.bump("refused")
            _LOG.warning("refused call: %s", err)
            return JSONResponse({"error": str(err)}, status_code=401)
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            payload = None
        if not isinstance(payload, dict):
            counters.bump("refused")
            return JSONResponse({"error": "not a JSON object"}, status_code=400)
        found = _password_check(payload)
        if found is None:
            counters.bump("passed")
            return JSONResponse(_OK)
        try:
            await run_in_threadpool(migrate, *found)
        except Exception as err:  # a bug: its type only (a traceback could quote what it held)
            counters.bump("errors")
            _LOG.error("internal error (%s); passed through", type(err).__name__)
        return JSONResponse(_OK)

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"waiting": len(store), **counters.snapshot()})

    app = Starlette(routes=[Route("/", session_check, methods=["POST"]), Route("/healthz", healthz)])
    app.state.counters = counters
    return app
