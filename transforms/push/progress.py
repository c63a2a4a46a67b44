"""The push's live line on stderr: bodies done/total, users created, failures, rate, ETA, and the
limiter's current concurrency and request rate.

Shared by the threads that send bodies (``send_body.py``), so every count is taken under the
line's lock::

    with PushProgress(manifest, sys.stderr, enabled=True) as live:
        live.users_processed(created=10, present=0, failed=1)
"""

from __future__ import annotations

from typing import TextIO

from transforms.common.progress import LiveLine
from transforms.output.manifest import Manifest
from transforms.push.ledger import BodyResult, BodyStatus
from transforms.zitadel_api.limiter import Limiter

__all__ = ["PushProgress"]


class PushProgress(LiveLine):
    """A live line on stderr: bodies done/total, users created, failures, rate, ETA."""

    def __init__(
        self,
        manifest: Manifest,
        stream: TextIO,
        enabled: bool,
        interval: float | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        super().__init__(stream, enabled, "push-progress", interval)
        self._limiter = limiter
        self._total_bodies = len(manifest.bodies)
        self._total_users = manifest.total_users
        self.bodies_done = self.created = self.present = self.failed = self.skipped_users = 0

    def body_done(self, result: BodyResult) -> None:
        # Users of a body that was sent were counted as its answers came in.
        with self._lock:
            self.bodies_done += 1
            if result.status == BodyStatus.SKIPPED:
                self.skipped_users += result.users

    def users_processed(self, created: int, present: int, failed: int) -> None:
        with self._lock:
            self.created += created
            self.present += present
            self.failed += failed

    def line(self) -> str:
        with self._lock:
            done = self.created + self.present + self.failed
            rate, eta = self.rate_and_eta(done, max(self._total_users - done - self.skipped_users, 0))
            text = (
                f"push: bodies {self.bodies_done}/{self._total_bodies}  created {self.created}  "
                f"present {self.present}  failed {self.failed}  {rate:,.0f} users/s  ETA {eta}"
            )
        return text if self._limiter is None else f"{text}  {self._limiter.stats().line()}"
