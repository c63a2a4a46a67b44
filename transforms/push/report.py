"""The outcome of a push: per-body results, totals, the one-line reason and the final table.

``push_manifest`` (``engine.py``) returns a ``PushReport``; ``pipeline/push.py`` prints its
``table()`` and, when ``ok`` is false, ``failure_line()`` on stderr::

    report = push_manifest(load_manifest(manifest_path), url, credentials)
    print(report.table()); sys.exit(0 if report.ok else 1)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from transforms.push.ledger import FINISHED, BodyResult, BodyStatus
from transforms.zitadel_api.limiter import Limiter, LimiterStats
from transforms.zitadel_api.transport import CallStats

if TYPE_CHECKING:  # only for the types: the verify engine imports the push engine's parts
    from transforms.push.verification import VerifyReport
    from transforms.zitadel_api.client import AdminClient

__all__ = ["PushReport", "FollowUp", "FollowUpReport"]


class FollowUpReport(Protocol):
    """What a step run after the bodies reports (a sync's changes: sync/report.SyncReport)."""

    @property
    def ok(self) -> bool: ...

    def table(self) -> str: ...

    def failure_parts(self) -> list[str]: ...


class FollowUp(Protocol):
    """A step that runs with the push, above it (transforms/sync/night.py): ``before`` anything is
    sent, ``after`` the bodies on the push's own client (paced) and limiter."""

    def before(self) -> None: ...

    def after(
        self,
        bodies: Sequence[BodyResult],
        client: AdminClient,
        results_dir: str,
        limiter: Limiter,
        *,
        bodies_stopped: bool,
    ) -> FollowUpReport: ...


@dataclasses.dataclass
class PushReport:
    """The outcome of ``push_manifest``; ``ok`` is the exit-0 condition."""

    bodies: list[BodyResult]
    seconds: float
    results_dir: str
    dead_letter: str | None
    stats: CallStats
    fatal: str | None = None
    verify: VerifyReport | None = None  # when verify=True
    sync: FollowUpReport | None = None  # for a manifest with change files (transforms/sync/night.py)
    limiter: LimiterStats | None = None  # the pace it sent at (transforms/zitadel_api/limiter.py)
    # Users sent by the admin import with passwordChangeRequired and a hash: the import drops the
    # flag (precheck.change_dropped_by_import), so they are not asked to change their password.
    change_dropped: int = 0

    @property
    def created(self) -> int:
        return sum(len(b.created) for b in self.bodies)

    @property
    def present(self) -> int:
        return sum(len(b.present) for b in self.bodies)

    @property
    def failed(self) -> int:
        return sum(len(b.failed) for b in self.bodies)

    @property
    def unknown(self) -> int:
        """Users whose last write may or may not have landed (not failed; read back next run)."""
        return sum(len(b.unknown) for b in self.bodies)

    @property
    def ok(self) -> bool:
        sent_all = all(b.status in FINISHED for b in self.bodies)
        verified = self.verify is None or self.verify.ok
        synced = self.sync is None or self.sync.ok
        settled = self.failed == 0 and self.unknown == 0
        return sent_all and settled and self.fatal is None and verified and synced

    def failure_line(self) -> str:
        """One line saying what failed, by kind, each with its file (for stderr; the table says
        the rest): users not created, bodies not sent, users missing at verify, changes not
        confirmed, grants not set."""
        if self.fatal:
            return f"stopped: {self.fatal}"
        parts = []
        if self.failed:
            failed = [b for b in self.bodies if b.failed or b.status not in FINISHED]
            reasons: dict[str, int] = {}
            for body in self.bodies:
                for entry in body.failed:
                    reasons[entry.get("reason", "?")] = reasons.get(entry.get("reason", "?"), 0) + 1
            first = next(e for b in self.bodies for e in b.failed)
            where = f"; see {self.dead_letter}" if self.dead_letter else ""
            parts.append(
                f"{self.failed} user(s) not created in {len(failed)} body(ies) ("
                + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
                + f"; first: {first.get('message', '')}){where}"
            )
        if self.unknown:
            files = ", ".join(b.name for b in self.bodies if b.unknown)
            first = next(e for b in self.bodies for e in b.unknown)
            parts.append(
                f"{self.unknown} user(s) with an unknown outcome, not failed: the last write got no "
                f"answer ZITADEL's outcome can be told from, and the next push reads them back first "
                f"(in {files}; first: {first.get('message', '')})"
            )
        blocked = [b for b in self.bodies if b.status in (BodyStatus.BLOCKED, BodyStatus.NOT_SENT)]
        if blocked:
            parts.append(f"{len(blocked)} body(ies) not sent")
        if self.verify is not None and not self.verify.ok:
            lost = (
                f", {len(self.verify.dropped)} lack fields the server dropped" if self.verify.dropped else ""
            )
            parts.append(f"verify: {len(self.verify.missing)} user(s) missing{lost}")
        if self.sync is not None:
            parts += self.sync.failure_parts()
        return "; ".join(parts or ["not every user was created"]) + "; a re-run retries what failed"

    def table(self) -> str:
        """The final table (one row per body, then the totals); none when no body was sent."""
        lines = self._body_table() if self.bodies else ["bodies: none to send"]
        lines.append(
            f"retries {self.stats.retries}, throttled {self.stats.throttled}; ledger {self.results_dir}"
        )
        if self.limiter is not None and self.limiter.attempts:
            lines.append(
                f"pace: settled at {self.limiter.line(self.seconds)}; "
                f"refused {self.limiter.refused}, retried {self.limiter.retried}"
            )
        if self.change_dropped:
            lines.append(
                f"passwordChangeRequired: {self.change_dropped} user(s) with a password hash keep their "
                "password unforced: the admin import drops the flag with a hash (--api=user-v2 keeps it)"
            )
        after_lost = sum(b.present_after_lost_answer for b in self.bodies)
        if after_lost:
            lines.append(
                f"present: {after_lost} of them answered AlreadyExisting after a lost answer or a "
                "server timeout, so most likely created by this run"
            )
        if self.dead_letter:
            lines.append(f"per-user failures: {self.dead_letter}")
        if self.fatal:
            lines.append(f"stopped: {self.fatal}")
        if self.sync is not None:
            lines.append(self.sync.table())
        return "\n".join(lines)

    def _body_table(self) -> list[str]:
        width = max([len("body")] + [len(b.name) for b in self.bodies])
        head = (
            f"{'body':<{width}}  {'users':>7} {'created':>8} {'present':>8} {'failed':>7} "
            f"{'requests':>8} {'seconds':>8}  status"
        )
        lines = [head, "-" * len(head)]
        for b in self.bodies:
            lines.append(
                f"{b.name:<{width}}  {b.users:>7} {len(b.created):>8} {len(b.present):>8} "
                f"{len(b.failed):>7} {b.requests:>8} {b.seconds:>8.1f}  {b.status}"
            )
        lines.append("-" * len(head))
        total_users = sum(b.users for b in self.bodies)
        lines.append(
            f"{'total':<{width}}  {total_users:>7} {self.created:>8} {self.present:>8} "
            f"{self.failed:>7} {self.stats.requests:>8} {self.seconds:>8.1f}  "
            f"{'ok' if self.ok else 'FAILED'}"
        )
        return lines
