"""A target with a capacity, for the stand-in ZITADEL server: workers, a queue and a rate limit.

A real instance does not answer every call at once: it has so many workers (database
connections), a call waits for one when all are busy (so its latency rises), a full queue is
answered 503 by the load balancer in front, and the hosted offering limits the request rate per
IP with 429 and ``Retry-After`` (FACTS §8). ``Capacity`` models exactly that, off by default::

    server = ZitadelServer(tokens={"pat"}).start()
    server.capacity.configure(workers=4, per_user_cost=0.0002, queue=8, rate=50.0)
    ... push to server.url ...
    server.capacity.refused          # {429: n, 503: n}
    server.capacity.peak_rate(1.0)   # the most calls that arrived in any 1 s window

Standalone: ``zitadel_server.py --workers 4 --per-user-delay-ms 0.2 --queue 8 --rate-limit 50``;
on SIGINT it prints ``{"capacity": summary()}`` as its last line (benchmarks/push_limiter.py).

The server calls ``enter`` once it has read a request (it blocks while the call waits for a
worker, or answers the refusal) and ``leave`` when the request is done. An import's cost is
``per_user_cost`` per user (slept by the import itself, on its worker); any other call in scope
costs one user.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import json
import math
import threading
import time

__all__ = ["Capacity", "Refusal", "DEFAULT_PATHS", "add_capacity_arguments", "add_capacity", "print_summary"]

# The calls a capacity applies to: imports, user service v2 and management calls (not tokens).
DEFAULT_PATHS = ("/admin/v1/import", "/v2/", "/management/v1/")

Refusal = tuple[int, dict, dict[str, str]]  # status, JSON body, headers


class Capacity:
    """Workers, a bounded queue and a token-bucket rate limit; thread-safe; off until configured."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held = threading.local()
        self.workers = 0  # 0: no capacity model at all
        self.per_user_cost = 0.0
        self.queue: int | None = None  # calls that may wait for a worker (None: any number)
        self.rate = 0.0  # requests per second (0: no limit)
        self.burst = 0.0
        self.paths: tuple[str, ...] = DEFAULT_PATHS
        self._tokens = 0.0
        self._filled = 0.0
        self._busy = 0
        self._waiting: collections.deque[int] = collections.deque()
        self._ticket = 0
        self.arrivals: list[float] = []  # monotonic time of every call in scope, refused ones too
        self.refused: dict[int, int] = {429: 0, 503: 0}
        self.refusals: list[tuple[float, int]] = []  # (monotonic time, status) of every refusal
        self.served = 0
        self.peak_busy = 0
        self.peak_waiting = 0

    def configure(
        self,
        workers: int = 0,
        per_user_cost: float = 0.0,
        queue: int | None = None,
        rate: float = 0.0,
        burst: float | None = None,
        paths: tuple[str, ...] = DEFAULT_PATHS,
    ) -> Capacity:
        """``workers`` calls served at once (0: unlimited), ``per_user_cost`` seconds of work per
        user, ``queue`` calls waiting beyond them (503 past it), ``rate`` calls/s (429 past it,
        ``burst`` calls at once, default one second's worth)."""
        with self._cond:
            self.workers, self.per_user_cost, self.queue = workers, per_user_cost, queue
            self.rate, self.paths = rate, paths
            self.burst = burst if burst is not None else max(1.0, rate)
            self._tokens, self._filled = self.burst, time.monotonic()
        return self

    @property
    def active(self) -> bool:
        return bool(self.workers or self.rate or self.per_user_cost)

    def applies(self, path: str) -> bool:
        return self.active and path.startswith(self.paths)

    def enter(self, path: str) -> Refusal | None:
        """Admit a call (blocking while it queues for a worker) or return the refusal to answer."""
        if not self.applies(path):
            return None
        with self._cond:
            now = time.monotonic()
            self.arrivals.append(now)
            refusal = self._rate_refusal(now) or self._queue_refusal(now)
            if refusal is not None:
                return refusal
            self._ticket += 1
            ticket = self._ticket
            if not self._free():
                self.peak_waiting = max(self.peak_waiting, len(self._waiting) + 1)
            self._waiting.append(ticket)
            while self._waiting[0] != ticket or not self._free():
                self._cond.wait()
            self._waiting.popleft()
            self._busy += 1
            self.peak_busy = max(self.peak_busy, self._busy)
            self._cond.notify_all()
        self._held.path = path
        if not path.startswith("/admin/v1/import") and self.per_user_cost:
            time.sleep(self.per_user_cost)  # a per-user call is one user's work
        return None

    def leave(self) -> None:
        """The call that ``enter`` admitted on this thread is done (no-op when none was)."""
        if getattr(self._held, "path", None) is None:
            return
        self._held.path = None
        with self._cond:
            self._busy -= 1
            self.served += 1
            self._cond.notify_all()

    def _free(self) -> int:
        return (self.workers - self._busy) if self.workers else 1

    def _rate_refusal(self, now: float) -> Refusal | None:
        if not self.rate:
            return None
        self._tokens = min(self.burst, self._tokens + (now - self._filled) * self.rate)
        self._filled = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        self.refused[429] += 1
        self.refusals.append((now, 429))
        wait = max(1, math.ceil((1.0 - self._tokens) / self.rate))
        body = {"code": 8, "message": "rate limit exceeded", "details": []}
        return 429, body, {"Retry-After": str(wait)}

    def _queue_refusal(self, now: float) -> Refusal | None:
        if self.queue is None or not self.workers:
            return None
        if self._free() > 0 or len(self._waiting) < self.queue:
            return None
        self.refused[503] += 1
        self.refusals.append((now, 503))
        return 503, {"code": 14, "message": "upstream overloaded", "details": []}, {}

    def summary(self) -> dict:
        """What the target saw, for a benchmark in another process (times: ``time.monotonic``,
        one clock for every process on the machine)."""
        with self._cond:
            return {
                "arrivals": list(self.arrivals),
                "refusals": list(self.refusals),
                "served": self.served,
                "peak_busy": self.peak_busy,
                "peak_waiting": self.peak_waiting,
            }

    def peak_rate(self, window: float = 1.0) -> float:
        """The most calls (refused ones included) that arrived in any ``window`` seconds, per second."""
        with self._cond:
            times = list(self.arrivals)
        best = 0
        for i, start in enumerate(times):
            best = max(best, bisect.bisect_right(times, start + window, lo=i) - i)
        return best / window


def add_capacity_arguments(parser: argparse.ArgumentParser) -> None:
    """The standalone server's capacity flags (``--per-user-delay-ms`` is each user's cost)."""
    parser.add_argument("--workers", type=int, default=0, help="calls served at once (0: no limit)")
    parser.add_argument(
        "--queue", type=int, default=None, help="calls that may wait for a worker; 503 beyond (default: any)"
    )
    parser.add_argument(
        "--rate-limit", type=float, default=0.0, help="calls per second; 429 with Retry-After beyond (0: off)"
    )


def print_summary(capacity: Capacity) -> None:
    """On the standalone server's exit (Ctrl-C / SIGINT): one JSON line of ``summary()``."""
    if capacity.active:
        print(json.dumps({"capacity": capacity.summary()}), flush=True)


def add_capacity(capacity: Capacity, args: argparse.Namespace) -> None:
    """Configure ``capacity`` from the flags ``add_capacity_arguments`` added."""
    if args.workers or args.rate_limit:
        capacity.configure(
            workers=args.workers,
            per_user_cost=args.per_user_delay_ms / 1000.0,
            queue=args.queue,
            rate=args.rate_limit,
        )
