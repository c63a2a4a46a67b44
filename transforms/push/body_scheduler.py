"""Runs a manifest's bodies on a thread pool, in the order their ``after`` lists allow.

A body whose earlier bodies did not all succeed is ``blocked``; once a body reports a fatal stop
(``Abort``: authentication failed, or the server stopped answering) nothing more starts and the
bodies left are ``not-sent``. Used by ``push_manifest`` (``engine.py``)::

    scheduler = BodyScheduler(manifest, concurrency, work, skip, live.body_done)
    results = scheduler.run()        # body index -> BodyResult
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable

from transforms.output.manifest import BodyRef, Manifest
from transforms.push.push_ledger import BodyResult
from transforms.push.send_body import Abort

__all__ = ["BodyScheduler"]


class BodyScheduler:
    """Runs bodies on a thread pool, never starting one before the bodies in its ``after``."""

    def __init__(
        self,
        manifest: Manifest,
        concurrency: int,
        work: Callable[[BodyRef], BodyResult],
        skip: Callable[[BodyRef], BodyResult | None],
        finished: Callable[[BodyResult], None],
    ) -> None:
        self._manifest = manifest
        self._concurrency = concurrency
        self._work, self._skip, self._finished = work, skip, finished
        self.results: dict[int, BodyResult] = {}
        self.fatal: str | None = None

    def _succeeded(self, index: int) -> bool:
        result = self.results.get(index)
        return result is not None and result.status in ("done", "skipped")

    def _next_ready(self, pending: list[BodyRef]) -> BodyRef | None:
        for ref in pending:
            if all(d in self.results for d in ref.after):
                return ref
        return None

    def run(self) -> dict[int, BodyResult]:
        pending = list(self._manifest.bodies)
        with cf.ThreadPoolExecutor(self._concurrency, thread_name_prefix="push") as pool:
            in_flight: dict[cf.Future, BodyRef] = {}
            while pending or in_flight:
                while pending and len(in_flight) < self._concurrency and self.fatal is None:
                    ref = self._next_ready(pending)
                    if ref is None:
                        break
                    pending.remove(ref)
                    if not all(self._succeeded(d) for d in ref.after):
                        self._record(BodyResult(ref.index, ref.name, ref.sha256, ref.users, status="blocked"))
                        continue
                    skipped = self._skip(ref)
                    if skipped is not None:
                        self._record(skipped)
                        continue
                    in_flight[pool.submit(self._work, ref)] = ref
                if self.fatal is not None:
                    for ref in pending:
                        self._record(
                            BodyResult(ref.index, ref.name, ref.sha256, ref.users, status="not-sent")
                        )
                    pending = []
                if not in_flight:
                    continue
                done, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    ref = in_flight.pop(future)
                    try:
                        self._record(future.result())
                    except Abort as err:
                        self.fatal = self.fatal or str(err)
                        self._record(
                            BodyResult(ref.index, ref.name, ref.sha256, ref.users, status="not-sent")
                        )
        return self.results

    def _record(self, result: BodyResult) -> None:
        self.results[result.index] = result
        self._finished(result)
