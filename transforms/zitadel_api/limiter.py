"""How many calls push keeps in flight, and how fast it starts them: learned from the target.

Without ``--concurrency`` the limit adapts (AIMD on the per-user time, like TCP's congestion
window): it starts at ``INITIAL``, grows by one per answer while the time per user stays within
``TOLERANCE`` x the best seen and at least half the limit is in use (doubling per round trip until the
first sign of load, then one per round trip), and shrinks when the target pushes back: 503, 502,
504 and the server's own deadline halve it; a rising per-user time (calls queueing) cuts it in
proportion; 429 stops every new attempt until its ``Retry-After`` and caps the attempt rate
below what drew the refusal (the cap creeps up again while nothing is refused). Always at most
``--max-concurrency`` calls and, with ``--max-rate``, at most that many attempts a second (a
token bucket without a burst). ``--concurrency N`` is a fixed limit of N: nothing adapts, only
``--max-rate`` applies.

One object per push, shared by its threads; a caller holds a slot per call (per body for import
bodies, per user for the user service calls of v2 creation and of a sync, which report their
attempts through ``AdminClient.paced``) and reports every HTTP attempt::

    limiter = Limiter(maximum=32, max_rate=40.0)     # Limiter(fixed=4): exactly 4
    limiter.acquire()                        # a slot (blocks while the limit is reached)
    try:
        limiter.admit()                      # before each attempt: Retry-After, rate
        ... send ...
        limiter.record(status, seconds, users=5000, retry_after=header)
    finally:
        limiter.release()
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable

__all__ = ["Limiter", "LimiterStats", "INITIAL", "DEFAULT_MAXIMUM", "TOLERANCE", "outcome_of"]

# Calls in flight at the start; it doubles per round trip while the target keeps up. 4, not 2: against
# a target taking 16 at once (20,000 users in 80 bodies) the doubling from 2 cost x1.11 of the best
# fixed limit, from 4 x1.0; a target taking 1 or 4 at once is met within x1.01 and x1.04 either way
# (benchmarks/push_limiter.py).
INITIAL = 4
DEFAULT_MAXIMUM = 32  # --max-concurrency's default
TOLERANCE = 2.0  # per-user time up to this many times the best seen still counts as "flat"
_RATE_WINDOW = 5.0  # seconds over which the shown attempt rate is measured
_OVERLOAD = (502, 503, 504)


def outcome_of(status: int) -> str:
    """What an attempt's HTTP status (0: no answer) tells the limiter."""
    if 200 <= status < 300:
        return "ok"
    if status == 429:
        return "throttled"
    if status in _OVERLOAD:
        return "overloaded"
    return "other"  # an answer about the request, not the load: no signal


@dataclasses.dataclass(frozen=True)
class LimiterStats:
    """A snapshot for the progress line and the final table."""

    limit: int
    in_flight: int
    rate: float  # attempts/s over the last few seconds
    rate_cap: float | None  # the attempt rate allowed now (--max-rate or learned from 429), None: any
    adaptive: bool
    refused: int  # 429 and 503 answers
    retried: int  # attempts after the first of a call
    peak_limit: int
    attempts: int = 0  # every attempt admitted

    def line(self, seconds: float | None = None) -> str:
        """``concurrency 6 (adaptive, peak 8)  4.1 req/s``; with ``seconds``, the run's average rate."""
        kind = f"adaptive, peak {self.peak_limit}" if self.adaptive else "fixed"
        rate = self.attempts / seconds if seconds else self.rate
        cap = f" (cap {self.rate_cap:g})" if self.rate_cap is not None else ""
        return f"concurrency {self.limit} ({kind})  {rate:,.1f} req/s{cap}"


class Limiter:
    """A concurrency limit (adaptive or fixed) and an attempt rate limit; thread-safe."""

    def __init__(
        self,
        *,
        fixed: int | None = None,
        initial: int = INITIAL,
        maximum: int = DEFAULT_MAXIMUM,
        max_rate: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if (fixed is not None and fixed < 1) or maximum < 1 or (max_rate is not None and max_rate <= 0):
            raise ValueError("the concurrency must be at least 1 and the rate above 0")
        self.adaptive = fixed is None
        self.maximum = fixed if fixed is not None else maximum
        self._limit = float(fixed if fixed is not None else min(initial, maximum))
        self._threshold = float(self.maximum)  # slow start (doubling) below this
        self.max_rate = max_rate
        self._learned_rate: float | None = None
        self._clock, self._sleep = clock, sleep
        self._cond = threading.Condition()
        self._in_flight = 0
        self._best: dict[str, float] = {}  # the lowest seconds per user seen, per kind of call
        self._recent: float | None = None  # smoothed seconds per user
        self._pause_until = 0.0
        self._last_cut = float("-inf")  # when the limit was last cut (calls sent before do not cut it again)
        self._tokens = 1.0
        self._filled = clock()
        self._attempts: collections.deque[float] = collections.deque()
        self.refused = self.retried = self.attempts = 0
        self.peak_limit = int(self._limit)

    # -- slots -------------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        with self._cond:
            return max(1, int(self._limit))

    def try_acquire(self) -> bool:
        """Take a slot if the limit allows one now."""
        with self._cond:
            if self._in_flight >= max(1, int(self._limit)):
                return False
            self._in_flight += 1
            return True

    def acquire(self) -> None:
        """Take a slot, waiting while the limit is reached."""
        with self._cond:
            while self._in_flight >= max(1, int(self._limit)):
                self._cond.wait(0.1)
            self._in_flight += 1

    def release(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    # -- attempts ----------------------------------------------------------------------------

    def admit(self, retry: bool = False) -> None:
        """Wait until an attempt may start: past any ``Retry-After``, within the rate."""
        while True:
            with self._cond:
                now = self._clock()
                wait = self._pause_until - now
                rate = self._rate_cap()
                if wait <= 0 and rate is not None:
                    self._tokens = min(1.0, self._tokens + (now - self._filled) * rate)
                    self._filled = now
                    wait = (1.0 - self._tokens) / rate if self._tokens < 1.0 else 0.0
                if wait <= 0:
                    if rate is not None:
                        self._tokens -= 1.0
                    self._attempts.append(now)
                    while self._attempts[0] < now - _RATE_WINDOW:  # kept short: a run may be 1M calls
                        self._attempts.popleft()
                    self.retried += retry
                    self.attempts += 1
                    return
            self._sleep(wait)

    def record(
        self, status: int, seconds: float, users: int = 1, retry_after: float | None = None, kind: str = ""
    ) -> None:
        """One attempt's answer (``status`` 0: none): adapt the limit to it. ``kind`` names the call
        (``POST /v2/users/human``): each kind's time is compared with the best of its own kind."""
        outcome = outcome_of(status)
        with self._cond:
            self.refused += status in (429, 503)
            if outcome == "ok":
                per_user = seconds / max(1, users)
                self._recent = per_user if self._recent is None else 0.7 * self._recent + 0.3 * per_user
            if not self.adaptive:
                return
            # A call sent before the last cut carries no news about the new limit (TCP cuts once a
            # window): its answer may still grow the limit but never cuts it again.
            sent_before_cut = self._clock() - seconds < self._last_cut
            if outcome == "ok":
                self._on_ok(per_user, kind, sent_before_cut)
            elif outcome == "throttled":
                self._on_throttled(retry_after)
            elif outcome == "overloaded" and not sent_before_cut:
                self._decrease(0.5)
            self.peak_limit = max(self.peak_limit, int(self._limit))
            self._cond.notify_all()

    def seconds_per_user(self) -> float | None:
        """The recent seconds per user of answered calls (None before the first), fixed limit or not:
        what a body's size is checked against before it is sent."""
        with self._cond:
            return self._recent

    @property
    def probing(self) -> bool:
        """Still doubling (no sign of load yet): shorter calls would tell the limit sooner."""
        with self._cond:
            return self.adaptive and self._limit < self._threshold and self._limit < self.maximum

    def stats(self) -> LimiterStats:
        with self._cond:
            now = self._clock()
            while self._attempts and self._attempts[0] < now - _RATE_WINDOW:
                self._attempts.popleft()
            return LimiterStats(
                max(1, int(self._limit)),
                self._in_flight,
                len(self._attempts) / _RATE_WINDOW,
                self._rate_cap(),
                self.adaptive,
                self.refused,
                self.retried,
                self.peak_limit,
                self.attempts,
            )

    # -- the decisions (called with the lock held) --------------------------------------------

    def _rate_cap(self) -> float | None:
        caps = [r for r in (self.max_rate, self._learned_rate) if r is not None]
        return min(caps) if caps else None

    def _on_ok(self, per_user: float, kind: str, sent_before_cut: bool = False) -> None:
        best = self._best[kind] = min(self._best.get(kind, per_user), per_user)
        if self._learned_rate is not None:
            self._learned_rate += 0.2 / self._learned_rate  # probe the rate limit again, slowly
        ratio = per_user / best if best > 0 else 1.0
        if ratio > TOLERANCE:  # queueing at the target: back off in proportion, once a round trip
            if not sent_before_cut:
                self._decrease(max(0.5, TOLERANCE / ratio))
        elif 2 * self._in_flight >= self._limit:  # the limit was in use (not idle), and kept up
            step = 1.0 if self._limit < self._threshold else 1.0 / self._limit
            self._limit = min(float(self.maximum), self._limit + step)

    def _on_throttled(self, retry_after: float | None) -> None:
        now = self._clock()
        self._pause_until = max(self._pause_until, now + (retry_after if retry_after else 1.0))
        recent = sum(1 for t in self._attempts if t >= now - 1.0)
        learned = max(0.1, 0.9 * recent)
        self._learned_rate = learned if self._learned_rate is None else min(self._learned_rate, learned)
        self._threshold = min(self._threshold, self._limit)  # no more doubling

    def _decrease(self, factor: float) -> None:
        self._limit = max(1.0, self._limit * factor)
        self._threshold = self._limit
        self._last_cut = self._clock()
