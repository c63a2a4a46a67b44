"""Runs a manifest's bodies on a thread pool, in the order their ``after`` lists allow.

A body whose earlier bodies did not all succeed is ``blocked``; once a body reports a fatal stop
(``Abort``: authentication failed, or the server stopped answering) nothing more starts and the
bodies left are ``not-sent``. How many bodies are sent at once is the limiter's (``limiter.py``):
a fixed number, or one it adapts while the bodies' answers come in. Used by ``push_manifest``
(``engine.py``)::

    scheduler = BodyScheduler(manifest, limiter, work, skip, live.body_done)
    results = scheduler.run()        # body index -> BodyResult
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable

from transforms.output.manifest import BodyRef, Manifest
from transforms.push.ledger import FINISHED, BodyResult, BodyStatus
from transforms.push.send_body import Abort
from transforms.zitadel_api.limiter import Limiter

__all__ = ["BodyScheduler"]


class BodyScheduler:
    """Runs bodies on a thread pool, never starting one before the bodies in its ``after``."""

    def __init__(
        self,
        manifest: Manifest,
        limiter: Limiter | int,
        work: Callable[[BodyRef], BodyResult],
        skip: Callable[[BodyRef], BodyResult | None],
        finished: Callable[[BodyResult], None],
    ) -> None:
        self._manifest = manifest
        # An int is a fixed number of bodies at once (``--concurrency N``).
        self._limiter = limiter if isinstance(limiter, Limiter) else Limiter(fixed=limiter)
        self._work, self._skip, self._finished = work, skip, finished
        self.results: dict[int, BodyResult] = {}
        self.fatal: str | None = None

    def _succeeded(self, index: int) -> bool:
        result = self.results.get(index)
        return result is not None and result.status in FINISHED

    def _next_ready(self, pending: list[BodyRef]) -> BodyRef | None:
        for ref in pending:
            if all(d in self.results for d in ref.after):
                return ref
        return None

    def _start(self, pending: list[BodyRef], pool: cf.Executor, in_flight: dict[cf.Future, BodyRef]) -> None:
        """Start every body that is ready, while the limiter gives a slot for it."""
        while pending and self.fatal is None and self._limiter.try_acquire():
            ref = self._next_ready(pending)
            if ref is None:
                self._limiter.release()
                return
            pending.remove(ref)
            if not all(self._succeeded(d) for d in ref.after):
                self._limiter.release()
                self._record(
                    BodyResult(ref.index, ref.name, ref.sha256, ref.users, status=BodyStatus.BLOCKED)
                )
                continue
            skipped = self._skip(ref)
            if skipped is not None:
                self._limiter.release()
                self._record(skipped)
                continue
            in_flight[pool.submit(self._work, ref)] = ref

    def run(self) -> dict[int, BodyResult]:
        pending = list(self._manifest.bodies)
        # An adaptive limit can rise while a body is sent (its parts' answers): look again often.
        poll = 0.05 if self._limiter.adaptive else None
        with cf.ThreadPoolExecutor(self._limiter.maximum, thread_name_prefix="push") as pool:
            in_flight: dict[cf.Future, BodyRef] = {}
            while pending or in_flight:
                self._start(pending, pool, in_flight)
                if self.fatal is not None:
                    for ref in pending:
                        self._record(
                            BodyResult(ref.index, ref.name, ref.sha256, ref.users, status=BodyStatus.NOT_SENT)
                        )
                    pending = []
                if not in_flight:
                    continue
                done, _ = cf.wait(in_flight, timeout=poll, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    ref = in_flight.pop(future)
                    self._limiter.release()
                    try:
                        self._record(future.result())
                    except Abort as err:
                        self.fatal = self.fatal or str(err)
                        self._record(
                            BodyResult(ref.index, ref.name, ref.sha256, ref.users, status=BodyStatus.NOT_SENT)
                        )
        return self.results

    def _record(self, result: BodyResult) -> None:
        self.results[result.index] = result
        self._finished(result)
