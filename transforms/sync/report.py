"""What a sync's push did with the change files: users, requests and every planned call's fate.

``transforms/sync/apply.py`` fills a ``SyncReport``; the push prints its ``table()`` below the
bodies' table. The calls add up per kind, the way migrate's summary planned them
(``sync: calls planned``, ``transforms/sync/change_files.py``)::

    changes: users 3, done 2, failed 1, requests 5, 0.3 s  FAILED
      calls planned 4 = confirmed 2 + failed 1 + not sent 1
        DeactivateUser: planned 1 = confirmed 1 + failed 0 + not sent 0
        UpdateHumanUser: planned 3 = confirmed 1 + failed 1 + not sent 1

A *request* is one HTTP request: a grant is looked up before it is set, and an initial user the
plan did not know as one gets ``LockUser`` after ZITADEL refused ``DeactivateUser``
(docs/sync.md#initial-users), so requests and calls differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from transforms.sync.calls import ChangeResult, Outcome
from transforms.sync.change_records import Call, ChangeRecord

__all__ = ["SyncReport", "CallTally", "planned_calls"]

_VERIFY = "verify: "  # the message of a user whose confirmed calls did not read back (apply.py)


def planned_calls(changes: Iterable[ChangeRecord]) -> dict[str, list[str]]:
    """User id → the names of the calls its change record plans, in order."""
    return {str(c["userId"]): [call["call"] for call in c.get("calls") or []] for c in changes}


@dataclasses.dataclass
class CallTally:
    """One call kind's planned calls and what became of them: planned = confirmed + failed + not sent."""

    planned: int = 0
    confirmed: int = 0  # accepted, or its effect was already there
    failed: int = 0  # refused or failed for good: the next run plans it again
    not_sent: int = 0  # after a failed call of the same user, or the run stopped first

    def text(self) -> str:
        return (
            f"planned {self.planned} = confirmed {self.confirmed} + failed {self.failed} "
            f"+ not sent {self.not_sent}"
        )


@dataclasses.dataclass
class SyncReport:
    results: list[ChangeResult]
    seconds: float
    requests: int  # HTTP requests made (see the module docstring)
    fatal: str | None = None
    state_generation: int | None = None
    users_committed: int = 0
    dead_letter: str | None = None
    verify_problems: list[str] | None = None  # after verify_changes: users whose state differs
    planned: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # planned_calls()
    # User id → when an UpdateHumanUser with an unknown outcome was sent, as known before this
    # push (the state's and the ledger's); None: the changes were not applied.
    unknown_before: dict[str, float] | None = None

    def still_unknown(self) -> dict[str, float]:
        """User id → when its UpdateHumanUser whose outcome is still unknown was sent: the ones
        known before this push that it did not settle, and its own (docs/sync.md#unknown-outcomes)."""
        users = dict(self.unknown_before or {})
        for result in self.results:
            if result.unknown_at is not None:
                users[result.user_id] = min(result.unknown_at, users.get(result.user_id, result.unknown_at))
            elif result.status in (Outcome.DONE, Outcome.FAILED):
                users.pop(result.user_id, None)  # read back, or its update confirmed
        return users

    @property
    def failed(self) -> int:
        return sum(1 for r in self.results if r.status == Outcome.FAILED)

    @property
    def done(self) -> int:
        return sum(1 for r in self.results if r.status == Outcome.DONE)

    @property
    def ok(self) -> bool:
        verified = not self.verify_problems
        return self.fatal is None and all(r.status == Outcome.DONE for r in self.results) and verified

    def failure_parts(self) -> list[str]:
        """What of the changes failed, by kind, each with its file (PushReport.failure_line)."""
        if self.fatal:
            return [f"changes stopped: {self.fatal}"]
        kinds, _ = self.tally()
        grants = sum(kinds[k].failed for k in _GRANT_CALLS if k in kinds)
        others = sum(t.failed for k, t in kinds.items() if k not in _GRANT_CALLS)
        where = f" (see {self.dead_letter})" if self.dead_letter else ""
        parts = []
        failed = [
            r
            for r in self.results
            if r.status == Outcome.FAILED and not set(self.planned.get(r.user_id, [])) <= set(_GRANT_CALLS)
        ]
        # A user whose last write is of unknown outcome is not failed: the next run reads it back.
        unknown = [r for r in failed if r.unknown_at is not None]
        others -= len(unknown)
        if others > 0:
            parts.append(f"{others} change(s) of {len(failed) - len(unknown)} user(s) not confirmed{where}")
        if unknown:
            files = ", ".join(sorted({r.file for r in unknown}))
            parts.append(
                f"{len(unknown)} user(s) with an unknown outcome, not failed: the next run reads them "
                f"back before sending (in {files})"
            )
        if grants:
            parts.append(f"{grants} grant(s) not set{where}")
        if self.verify_problems:
            parts.append(f"verify changes: {len(self.verify_problems)} user(s) differ")
        return parts

    def tally(self) -> tuple[dict[str, CallTally], int]:
        """Per call kind, what became of the planned calls; and how many users were locked
        instead of deactivated (initial users their state record did not mark)."""
        by_user = {r.user_id: r for r in self.results}
        kinds: dict[str, CallTally] = {}
        locked_instead = 0
        for user_id, calls in self.planned.items():
            result = by_user.get(user_id)
            confirmed = result.confirmed if result is not None else []
            failed_all = result is not None and result.message.startswith(_VERIFY)
            for index, name in enumerate(calls):
                tally = kinds.setdefault(name, CallTally())
                tally.planned += 1
                if failed_all:
                    tally.failed += 1
                elif index < len(confirmed):
                    tally.confirmed += 1
                    locked_instead += int(name == Call.DEACTIVATE_USER and confirmed[index] == Call.LOCK_USER)
                elif index == len(confirmed) and result is not None and result.status == Outcome.FAILED:
                    tally.failed += 1
                else:
                    tally.not_sent += 1
        return dict(sorted(kinds.items())), locked_instead

    def table(self) -> str:
        kinds, locked_instead = self.tally()
        lines = [
            f"changes: users {len(self.results)}, done {self.done}, failed {self.failed}, "
            f"requests {self.requests}, {self.seconds:.1f} s  {'ok' if self.ok else 'FAILED'}"
        ]
        if kinds:
            total = CallTally(*(sum(getattr(t, f) for t in kinds.values()) for f in _FIELDS))
            lines.append(f"  calls {total.text()}")
            lines += [f"    {name}: {tally.text()}" for name, tally in kinds.items()]
        if locked_instead:
            lines.append(f"  locked instead of deactivated (initial users): {locked_instead}")
        unknown = len(self.still_unknown())
        if unknown:
            lines.append(f"  outcome unknown (read back before sending again): {unknown} user(s)")
        if self.state_generation is not None:
            lines.append(
                f"state: committed generation {self.state_generation} ({self.users_committed} users updated)"
            )
        if self.dead_letter:
            lines.append(f"per-user change failures: {self.dead_letter}")
        if self.fatal:
            lines.append(f"stopped: {self.fatal}")
        if self.verify_problems is not None:
            if self.verify_problems:
                lines.append(f"verify changes: {len(self.verify_problems)} user(s) differ:")
                lines += [f"  {p}" for p in self.verify_problems[:50]]
            else:
                lines.append("verify changes: ok (every confirmed change read back)")
        return "\n".join(lines)


_FIELDS = tuple(f.name for f in dataclasses.fields(CallTally))
_GRANT_CALLS = (Call.SET_USER_GRANT, Call.REMOVE_USER_GRANT)
