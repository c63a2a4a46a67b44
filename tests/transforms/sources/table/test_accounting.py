"""The table reader's accounting invariant (transforms/sources/table/accounting.py)."""

from __future__ import annotations

from transforms.common import counters
from transforms.sources.table import accounting as ta


def test_the_invariant_holds_when_every_record_is_accounted_for():
    counts = {
        ta.RECORDS_READ: 10,
        counters.USERS_WRITTEN: 7,
        counters.dead_letter(ta.SOURCE, "missing-user-id"): 2,
        counters.dead_letter(ta.SOURCE, "duplicate-user-id"): 1,
        ta.WITH_PASSWORD + "bcrypt": 6,
        ta.WITHOUT_PASSWORD: 2,
        counters.dead_letter(ta.FILE_SOURCE, "unreadable-input"): 1,  # a file, not a record
    }
    holds, text = ta.invariant(counts)
    assert holds, text
    assert text.startswith("records read 10 = written 7 + dead-lettered 3")


def test_a_lost_record_breaks_the_invariant():
    holds, _ = ta.invariant({ta.RECORDS_READ: 3, counters.USERS_WRITTEN: 2, ta.WITH_PASSWORD + "bcrypt": 2})
    assert not holds
