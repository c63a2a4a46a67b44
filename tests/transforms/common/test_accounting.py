"""transforms/common/accounting.py: the invariant of readers whose every record is one user."""

from __future__ import annotations

from transforms.common import counters
from transforms.common.accounting import link_lines, reader_invariant

WORDS = {"noun": "records", "source": "src-user", "passed_label": "converted", "refused_label": "blocked"}


def test_a_run_that_accounts_for_every_record_holds_and_says_so():
    counts = {
        counters.USERS_WRITTEN: 7,
        counters.dead_letter("src-user", "missing-email"): 2,
        counters.dead_letter("src-user", "duplicate-user-id"): 1,
    }
    holds, text = reader_invariant(counts, read=10, passed=8, **WORDS)
    assert holds
    assert text == "records read 10 = written 7 + dead-lettered 3; converted 8 = written 7 + duplicates 1"


def test_a_lost_record_breaks_it():
    counts = {counters.USERS_WRITTEN: 7, counters.dead_letter("src-user", "missing-email"): 2}
    assert reader_invariant(counts, read=10, passed=7, **WORDS)[0] is False  # one record unaccounted
    assert reader_invariant(counts, read=9, passed=8, **WORDS)[0] is False  # one converted, not written


def test_a_sync_counts_compared_rows_and_blocked_users_new_to_zitadel():
    counts = {
        counters.USERS_WRITTEN: 2,
        counters.SYNC_ROWS_NOT_IMPORTED: 5,
        counters.SYNC_ROWS_REJECTED: 1,
        counters.dead_letter("src-user", "blocked"): 1,
        counters.dead_letter("other-user", "missing-email"): 4,  # another source's letters: not ours
    }
    holds, text = reader_invariant(counts, read=8, passed=8, **WORDS)
    assert holds
    assert text == (
        "records read 8 = written 2 + compared with the state 5 + dead-lettered 1; "
        "converted 8 = written 2 + compared with the state 5 + duplicates 0 + blocked, not in ZITADEL yet 1"
    )


def test_link_lines_list_each_outcome_in_order_and_its_providers_sorted():
    counts = {
        "kc.idp.unmapped.github": 1,
        "kc.idp.linked.google": 2,
        "kc.idp.linked.apple": 3,
        "kc.idp.invalid.google": 4,
        "kc.other.linked.x": 9,  # another prefix: not a link
    }
    outcomes = (("linked", "linked to IdP"), ("unmapped", "no --idp-map"), ("invalid", "no usable id"))
    assert link_lines(counts, "kc.idp.", outcomes) == [
        ("  linked to IdP: apple", 3),
        ("  linked to IdP: google", 2),
        ("  no --idp-map: github", 1),
        ("  no usable id: google", 4),
    ]
    assert link_lines({}, "kc.idp.", outcomes) == []
