"""The names a reader of one-user records writes, from its source's name
(transforms/sources/source_counters.py), and the invariant on them."""

from __future__ import annotations

from transforms.common import counters
from transforms.sources.file_reader import RecordPart, SourceFile
from transforms.sources.registry import descriptions
from transforms.sources.source_counters import SourceCounters
from transforms.sources.source_parts import UNREADABLE_FILE, user_records

NAMES = SourceCounters("toy")


def test_every_name_is_derived_from_the_source_name():
    assert (NAMES.source, NAMES.file_source) == ("toy-user", "toy-file")
    assert (NAMES.users_read, NAMES.users_mapped) == ("toy.users_read", "toy.users_mapped")
    assert (NAMES.unreadable_files, NAMES.metadata_dropped) == (
        "toy.unreadable_files",
        "toy.metadata_dropped",
    )
    assert NAMES.cannot_sign_in == counters.CANNOT_SIGN_IN + "toy" and NAMES.own("status.") == "toy.status."


def test_the_invariant_holds_when_every_user_read_is_written_or_dead_lettered():
    counts = {
        NAMES.users_read: 5,
        NAMES.users_mapped: 4,
        counters.USERS_WRITTEN: 3,
        counters.dead_letter(NAMES.source, "blocked"): 1,
        counters.dead_letter(NAMES.source, "duplicate-user-id"): 1,
    }
    holds, text = NAMES.invariant(counts)
    assert holds and text == "users read 5 = written 3 + dead-lettered 2; mapped 4 = written 3 + duplicates 1"
    holds, text = NAMES.invariant({**counts, NAMES.users_read: 6}, passed_label="converted")
    assert not holds and text.startswith("users read 6 = written 3 + dead-lettered 2; converted 4")


def test_a_reader_part_and_a_kind_take_the_names_at_once():
    class _Part(RecordPart[SourceFile], counters=NAMES):
        pass

    assert (_Part.name, _Part.source, _Part.file_source) == ("toy", "toy-user", "toy-file")
    assert (_Part.read, _Part.unreadable) == ("toy.users_read", "toy.unreadable_files")
    records = user_records(NAMES, blocked=lambda record: True, ids=lambda record, realm: None, flag="--x")
    assert records[NAMES.file_source] is UNREADABLE_FILE
    assert records[NAMES.source].flag == "--x" and records[NAMES.source].blocked(b"{}")


def test_the_sources_that_declare_their_names_write_rows_of_that_source():
    declared = [d for d in descriptions() if SourceCounters(d.name).source in d.kind.records]
    assert declared and all(SourceCounters(d.name).file_source in d.kind.records for d in declared)
