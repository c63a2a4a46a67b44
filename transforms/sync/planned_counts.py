"""The counters of what a sync night plans: calls by kind, and what each guard counts.

``compare.py`` counts every user's planned calls here, so that ``pipeline/migrate.py`` can refuse
a night past a guard before anything is written (docs/sync.md#guards) and the summary can show
them. Each guard counts what its flag names: ``--max-removals`` the users gone from the export
(``counters.SYNC_REMOVALS``), ``--max-blocks`` the users of the state blocked at the source
(``counters.SYNC_BLOCKS``); a user new tonight and imported blocked had no access to lose and
counts in neither.

Example::

    >>> import collections
    >>> count = collections.Counter()
    >>> count_calls(count, [{"call": "DeactivateUser"}], Why.CHANGED)
    >>> count["sync.blocks"], count["sync.removals"], count["sync.deactivate"]
    (1, 0, 1)
"""

from __future__ import annotations

import collections
import enum

from transforms.common import counters
from transforms.sync.change_records import Call, ChangeCall

__all__ = ["Why", "count_calls", "count_change"]

_BLOCKED_AT_SOURCE = {Call.DEACTIVATE_USER: counters.SYNC_DEACTIVATE, Call.LOCK_USER: counters.SYNC_LOCK}
_REMOVING = (Call.DEACTIVATE_USER, Call.LOCK_USER, Call.DELETE_USER)


class Why(enum.Enum):
    """Why a user's calls were planned: which guard, if any, counts them."""

    NEW = "new"  # new tonight, imported blocked (--include-blocked)
    CHANGED = "changed"  # in the state and read today: blocked at the source counts as a block
    REMOVED = "removed"  # in the state, gone from the export: counts as a removal


def count_calls(count: collections.Counter[str], calls: list[ChangeCall], why: Why) -> None:
    """Count the calls planned for one user, by kind, and against the guard ``why`` names."""
    for call in calls:
        name = call["call"]
        count[counters.SYNC_CALLS] += 1
        count[counters.SYNC_PLANNED + name] += 1
        if why == Why.REMOVED and name in _REMOVING:
            count[counters.SYNC_REMOVALS] += 1
        if why == Why.CHANGED and name in _BLOCKED_AT_SOURCE:
            count[counters.SYNC_BLOCKS] += 1
        if name in _BLOCKED_AT_SOURCE and why != Why.REMOVED:  # a removed user counts under its policy
            count[_BLOCKED_AT_SOURCE[Call(name)]] += 1
        if name in (Call.REACTIVATE_USER, Call.UNLOCK_USER):
            count[counters.SYNC_REACTIVATE] += 1


def count_change(
    count: collections.Counter[str], groups: list[str], calls: list[ChangeCall], notes: list[str]
) -> None:
    """Count one changed user: its field groups, what could not be applied, its calls."""
    count[counters.SYNC_CHANGED] += 1
    for group in groups:
        count[counters.SYNC_CHANGED_FIELDS + group] += 1
    for note in notes:
        count[counters.SYNC_NOT_APPLIED + note] += 1
    count_calls(count, calls, Why.CHANGED)
