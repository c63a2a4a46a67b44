"""Compare the users read today with the sync state: new users to bodies, the rest to change files.

Shape of the work (docs/sync.md)::

    rows (source partition, blob) ─ RekeyRows ─► (state partition, ("r", spill)) ─┐
    dead letters ─ KeyDeadLetters ─► (state partition, ("d", letter)) ─────────────┤
        ├─► not about a user (password records...) ──────────────────► dead ◄─┐  │
        └─► about a user we cannot name (count) ─► hold removals (side input) │  │
    state shards (Create) ─► (state partition, ("s", path)) ──────────────────────┤
                                                                  GroupByKey ─ Compare
                                                 ├─► new users' rows ─► UsersToBodies
                                                 ├─► change shard files (tmp_dir)
                                                 ├─► the compared users' tallies (output/written.py)
                                                 └─► dead letters (noted when the user is kept)

Each partition's state shard is read by the one worker that compares that partition, so the whole
state is never in one process. A user is:

- **new** (not in the state): its row goes on to the bodies, as without a state;
- **unchanged**: nothing at all (the quick digest of its mapped bytes matches);
- **changed** or **blocked/unblocked**: a change record with the calls that bring the target to
  today's values (``transforms/sync/state_records.py``);
- **gone** (in the state, not read today, not dead-lettered today): ``on_removed`` decides:
  ``report`` (listed, nothing sent), ``deactivate`` or ``delete``. When some dead letter of a
  user record cannot be tied to a user id (an unreadable line), every removal is only reported:
  the missing user may be in that line;
- **dead-lettered today** while in the state: left as the target holds it, and its dead letter
  says so.

Example::

    out = SourceUsers(rows, dead) | "Sync" >> CompareWithState(options, pointer_shards, tmp)
    out.rows     # (partition, spill path) of new users, for UsersToBodies
    out.changes  # paths of change shard files in tmp
    out.dead     # dead letters
    out.written  # what the users compared with the state add to the run's counts
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.common import counters
from transforms.common.reasons import Reason
from transforms.common.records import (
    NAMESPACE,
    DeadLetter,
    EncodedRow,
    PartitionRows,
    SortKey,
    dead_letter,
    decode_rows,
    no_gc,
    pack_rows,
    partition_of,
)
from transforms.files.spill import load_blob, read_spill, write_spill
from transforms.output.written import Written, WrittenTally
from transforms.sources.source_parts import UserRecordKind
from transforms.sync.change_records import ON_REMOVED, Call, ChangeCall, ChangeKind, OnRemoved, change_line
from transforms.sync.planned_counts import Why, count_calls, count_change
from transforms.sync.source_records import candidate_ids, is_blocked, refusal
from transforms.sync.state_records import (
    ACTIVE,
    BLOCKED,
    GONE,
    INACTIVE,
    INITIAL,
    LOCKED,
    NAME,
    Grants,
    StateRecord,
    block_calls,
    compare_user,
    quick_digest,
    same_as_state,
)

__all__ = [
    "SyncOptions",
    "SourceUsers",
    "Compared",
    "CompareWithState",
    "change_shard_name",
    "CHANGE_PREFIX",
]


CHANGE_PREFIX = "changes-p"
_CHANGES, _DEAD_OUT, _PASS, _UNKNOWN, _WRITTEN = "changes", "dead", "pass", "unknown", "written"
# Change records of removed users sort after every row's (rows sort by their input position).
_AFTER_EVERY_ROW: SortKey = (1 << 62, 0)


class _Tag(enum.StrEnum):
    """What a value grouped by state partition is (the one-letter values are what travels)."""

    ROWS = "r"  # the path of a spill file of rows
    DEAD = "d"  # a _UserLetter
    STATE = "s"  # the path of the partition's state shard


# The slots of an ``EncodedRow`` (transforms/common/records.py) read without unpacking the whole
# row, named once; C-level getters, as they run for every user.
_row_order = operator.itemgetter(0, 1)  # (file index, position): the input order
_user_id_of = operator.itemgetter(2)
# The one place a compared row's slots are read: (file index, position, user id, entry JSON,
# metadata JSON, password, source, record JSON, grants).
_slots = operator.itemgetter(0, 1, 2, 4, 5, 6, 7, 8, 10)


class _UserLetter(NamedTuple):
    """A dead letter about a user, sent to each partition one of its candidate ids falls in."""

    is_letter: bool  # this copy is the dead letter itself; the others only tell their partition
    ids: list[str]  # the user ids the record would have had
    sortkey: SortKey
    line: bytes


@dataclasses.dataclass(frozen=True, kw_only=True)
class SyncOptions:
    """How a run compares with its state (see the module docstring)."""

    org_id: str
    source: str  # "auth0" | "keycloak" | ...: the source's name
    # The source's user record kinds (its description's ``records``): blocked? which ids?
    records: Mapping[str, UserRecordKind]
    partitions: int
    on_removed: OnRemoved = OnRemoved.REPORT  # the --on-removed flag
    include_blocked: bool = False  # import users blocked at the source (then deactivate them)
    realm: str | None = None  # Keycloak: derived ids of users without id need the realm

    @property
    def removal_policy(self) -> OnRemoved:
        return OnRemoved(self.on_removed)


def change_shard_name(partition: int) -> str:
    return f"{CHANGE_PREFIX}{partition:05d}.ndjson"


class _RekeyRowsFn(beam.DoFn):
    """Source partitions (keyed by the source's join key) → state partitions (keyed by user id)."""

    def __init__(self, partitions: int, tmp_dir: str):
        self._partitions = partitions
        self._tmp_dir = tmp_dir

    def process(self, element: PartitionRows) -> Iterator[tuple[int, tuple[_Tag, str]]]:
        source_part, value = element
        with no_gc():
            rows = decode_rows(load_blob(value))
            parts: dict[int, list[EncodedRow]] = {}
            for row in rows:
                parts.setdefault(partition_of(_user_id_of(row), self._partitions), []).append(row)
            del rows
            for part, items in parts.items():
                file_index, position = _row_order(items[0])
                name = f"sync-rows-s{source_part:03d}-{file_index:05d}-{position:012d}-p{part:05d}.pkl"
                yield part, (_Tag.ROWS, write_spill(self._tmp_dir, name, pack_rows(items)))


class _KeyDeadLettersFn(beam.DoFn):
    """Dead letters about a user go to that user's partition; the rest pass by."""

    def __init__(self, options: SyncOptions):
        self._options = options

    def process(self, letter: DeadLetter):
        (file_index, position), line = letter
        if not any(f'"source":"{s}"'.encode() in line for s in self._options.records):
            yield beam.pvalue.TaggedOutput(_PASS, letter)
            return
        parsed = orjson.loads(line)
        ids = candidate_ids(
            self._options.records, str(parsed.get("source")), parsed.get("record"), self._options.realm
        )
        if ids is None:
            yield beam.pvalue.TaggedOutput(_UNKNOWN, 1)
            yield beam.pvalue.TaggedOutput(_PASS, letter)
            return
        parts = {partition_of(i, self._options.partitions) for i in ids}
        first = min(parts)
        for part in parts:
            # One copy is the dead letter (``first``); the others only tell their partition.
            yield part, (_Tag.DEAD, _UserLetter(part == first, ids, (file_index, position), line))


class _Partition:
    """What one state partition compares: its state, today's rows, the dead letters about users;
    then what comes out of it: the new users' rows, the change records, the counts."""

    def __init__(self, values: Iterable[tuple[str, Any]]) -> None:
        from transforms.sync.state import decode_shard, read_raw

        self.state: dict[str, StateRecord] = {}
        self.rows: list[EncodedRow] = []
        self.letters: list[_UserLetter] = []
        for tag, value in values:
            if tag == _Tag.STATE:
                self.state.update(decode_shard(read_raw(value)))
            elif tag == _Tag.ROWS:
                self.rows.extend(decode_rows(read_spill(value)))
            else:
                self.letters.append(_UserLetter(*value))
        self.rows.sort(key=_row_order)
        self.seen: set[str] = set()
        self.new_rows: list[EncodedRow] = []
        self.changes: list[tuple[SortKey, bytes]] = []
        self.counts: collections.Counter[str] = collections.Counter()
        self.written = WrittenTally()  # the users compared count as written ones (output/written.py)
        self.kept_by_dead: set[str] = set()  # in the state, not read today, dead-lettered today


class _CompareFn(beam.DoFn):
    """One state partition: read its shard, compare today's users, write its change file."""

    def __init__(self, options: SyncOptions, tmp_dir: str):
        self._options = options
        self._tmp_dir = tmp_dir

    def setup(self):
        self._counts: dict[str, Any] = {}

    def _inc(self, name: str, value: int = 1) -> None:
        if value:
            if name not in self._counts:
                self._counts[name] = Metrics.counter(NAMESPACE, name)
            self._counts[name].inc(value)

    def process(self, element: tuple[int, Iterable[tuple[str, Any]]], unknown_dead: int):
        part, values = element
        with no_gc():
            yield from self._compare(part, values, unknown_dead > 0)

    def _compare(self, part: int, values: Iterable[tuple[str, Any]], hold_removals: bool):
        work = _Partition(values)
        for row in work.rows:
            yield from self._compare_row(work, row)
        yield from self._note_dead_letters(work)
        self._removals(work, hold_removals)
        for name, value in work.counts.items():
            self._inc(name, value)
        yield from work.written.tagged(_WRITTEN)
        yield from self._write(part, work)

    def _compare_row(self, work: _Partition, row: EncodedRow):
        """One user read today: dead-lettered, new, unchanged or changed."""
        file_index, position, user_id, entry_json, meta_json, password, source, record_json, grants = _slots(
            row
        )
        count = work.counts
        if user_id in work.seen:
            yield from self._reject(
                row, Reason.DUPLICATE_USER_ID, f"user_id {user_id!r} already used by an earlier record"
            )
            return
        work.seen.add(user_id)
        blocked = is_blocked(self._options.records, source, record_json)
        old = work.state.get(user_id)
        if old is None and blocked and not self._options.include_blocked:
            count[counters.SYNC_ROWS_REJECTED] += 1
            reason, flag = refusal(self._options.records, source)
            yield from self._reject(
                row,
                reason,
                f"user is {reason} at the source and not in ZITADEL yet ({flag} imports it, then deactivates it)",
            )
            return
        quick = quick_digest(entry_json, meta_json, blocked, grants)
        if old is not None and same_as_state(old, quick, blocked):  # before any parsing
            count[counters.SYNC_UNCHANGED] += 1
            self._kept(count, entry_json, password, grants)
            work.written.add(row)
            return
        entry = orjson.loads(entry_json)
        metadata = orjson.loads(b"[" + meta_json + b"]") if meta_json else []
        kind, record, groups, calls, notes = compare_user(
            old, entry, metadata, blocked=blocked, quick=quick, grants=grants
        )
        org_id, user_name = self._options.org_id, (entry.get("user") or {}).get("userName")
        if kind == ChangeKind.NEW:
            count[counters.SYNC_NEW] += 1
            work.new_rows.append(row)
            if blocked:  # --include-blocked: imported, then deactivated (an initial user: locked)
                block = block_calls(ACTIVE, True, INITIAL in record)
                record[BLOCKED] = LOCKED if block[0]["call"] == Call.LOCK_USER else INACTIVE
                count_calls(count, block, Why.NEW)
                line = change_line(org_id, user_id, user_name, ChangeKind.NEW_BLOCKED, [], block, record)
                work.changes.append(((file_index, position), line))
            return
        self._kept(count, entry_json, password, grants)
        work.written.add(row)
        if kind == ChangeKind.UNCHANGED:
            count[counters.SYNC_UNCHANGED] += 1
            return
        count_change(count, groups, calls, notes)
        line = change_line(
            org_id, user_id, user_name, ChangeKind.CHANGED, groups, calls, record, notes=notes, previous=old
        )
        work.changes.append(((file_index, position), line))

    def _note_dead_letters(self, work: _Partition):
        """Users in the state whose record was dead-lettered today are left alone (not gone), and
        their dead letter says so."""
        for letter in work.letters:
            known = [i for i in letter.ids if i in work.state and i not in work.seen]
            work.kept_by_dead.update(known)
            if not letter.is_letter:
                continue
            line = letter.line
            if known:
                work.counts[counters.SYNC_LEFT_ALONE_DEAD_LETTERED] += 1
                parsed = orjson.loads(line)
                parsed["sync"] = (
                    f"user {known[0]!r} is in the sync state: left exactly as ZITADEL holds it "
                    "(not updated, not deactivated) until its record reads cleanly"
                )
                line = orjson.dumps(parsed)
            file_index, position = letter.sortkey
            yield beam.pvalue.TaggedOutput(_DEAD_OUT, ((file_index, position), line))

    def _removals(self, work: _Partition, hold_removals: bool) -> None:
        """Users in the state not read today (and not dead-lettered): ``on_removed`` decides."""
        count, wanted = work.counts, self._options.removal_policy
        removal_calls: list[ChangeCall]
        for user_id in sorted(set(work.state) - work.seen - work.kept_by_dead):
            old = work.state[user_id]
            policy = OnRemoved.REPORT if hold_removals else wanted
            if policy == OnRemoved.DEACTIVATE and (old.get(BLOCKED, ACTIVE) != ACTIVE):
                held = "already-locked" if old.get(BLOCKED) == LOCKED else "already-inactive"
                count[counters.SYNC_REMOVED + held] += 1
                continue
            record: StateRecord = old
            if policy == OnRemoved.REPORT:
                count[counters.SYNC_REMOVED + "report"] += 1
                if hold_removals and wanted != OnRemoved.REPORT:
                    count[counters.SYNC_REMOVED + "held"] += 1
                removal_calls = []
            elif policy == OnRemoved.DEACTIVATE:
                removal_calls = block_calls(ACTIVE, True, INITIAL in old)  # an initial user: LockUser
                locked = removal_calls[0]["call"] == Call.LOCK_USER
                count[counters.SYNC_REMOVED + ("lock" if locked else "deactivate")] += 1
                record = old.copy()
                record[BLOCKED], record[GONE] = LOCKED if locked else INACTIVE, 1
            else:
                count[counters.SYNC_REMOVED + "delete"] += 1
                removal_calls = [{"call": Call.DELETE_USER}]
            count_calls(count, removal_calls, Why.REMOVED)
            line = change_line(
                self._options.org_id,
                user_id,
                old.get(NAME),
                ChangeKind.REMOVED,
                [],
                removal_calls,
                record,
                previous=old,
                policy=policy,
            )
            work.changes.append((_AFTER_EVERY_ROW, line))

    def _write(self, part: int, work: _Partition):
        """The new users' rows (a spill file) and the partition's change file."""
        if work.new_rows:
            file_index, position = _row_order(work.new_rows[0])
            name = f"sync-new-{file_index:05d}-{position:012d}-p{part:05d}.pkl"
            yield part, write_spill(self._tmp_dir, name, pack_rows(work.new_rows))
        if work.changes:
            work.changes.sort(key=lambda c: c[0])
            data = b"".join(line + b"\n" for _, line in work.changes)
            from apache_beam.io.filesystems import FileSystems

            from transforms.files.storage import open_private

            path = FileSystems.join(self._tmp_dir, change_shard_name(part))
            with open_private(path) as handle:
                handle.write(data)
            yield beam.pvalue.TaggedOutput(_CHANGES, path)

    @staticmethod
    def _kept(count: collections.Counter[str], entry_json: bytes, password: str, grants: Grants) -> None:
        """A user that does not go into a body still counts as read and converted."""
        count[counters.SYNC_ROWS_NOT_IMPORTED] += 1
        if password:
            count[counters.SYNC_COMPARED_WITH_PASSWORD] += 1
        if b'"otpCode":' in entry_json:
            count[counters.SYNC_COMPARED_WITH_OTP] += 1
        if grants:  # carried by the state and the change records, not by a body (docs/roles.md)
            count[counters.AUTHORIZATIONS_USERS_WITH_ROLES] += 1
            count[counters.AUTHORIZATIONS_GRANTS] += len(grants)
            count[counters.AUTHORIZATIONS_KEYS_CARRIED] += sum(len(keys) for _, keys in grants)

    def _reject(self, row: EncodedRow, reason: str, detail: str):
        (file_index, position, _, _, _, _, _, source, record_json, companions_json, grants, _, _) = row
        if grants:
            self._inc(counters.ROLES_SKIPPED_DEAD_LETTERED, sum(len(keys) for _, keys in grants))
        yield beam.pvalue.TaggedOutput(
            _DEAD_OUT,
            dead_letter((file_index, position), reason, detail, source, orjson.Fragment(record_json)),
        )
        for sortkey, companion_source, record in orjson.loads(companions_json) if companions_json else []:
            yield beam.pvalue.TaggedOutput(
                _DEAD_OUT,
                dead_letter(
                    sortkey,
                    Reason.PROFILE_REJECTED,
                    f"its user was dead-lettered ({reason})",
                    companion_source,
                    record,
                ),
            )


class SourceUsers(NamedTuple):
    """What ``CompareWithState`` takes: a source's rows and its dead letters."""

    rows: beam.PCollection[PartitionRows]
    dead: beam.PCollection[DeadLetter]


class Compared(NamedTuple):
    """What ``CompareWithState`` returns."""

    rows: beam.PCollection[PartitionRows]  # the new users' rows: on to the bodies
    changes: beam.PCollection[str]  # the change files' paths
    dead: beam.PCollection[DeadLetter]  # the source's dead letters, noted where a user is in the state
    written: beam.PCollection[Written]  # the compared users' tallies (they count as written)


class CompareWithState(beam.PTransform):
    """A source's ``SourceUsers(rows, dead)`` → ``Compared(rows, changes, dead, written)``.

    The dead letters about a user in the state are noted, and one that names no user holds
    removals back. ``shards`` maps a state partition to the path of its shard
    (``StateStore.shard_paths``). Example::

        compared = SourceUsers(rows, dead) | "Sync" >> CompareWithState(options, shards, tmp_dir)
        compared.rows | "ToBodies" >> UsersToBodies(spec, tmp_dir)
    """

    def __init__(self, options: SyncOptions, shards: Mapping[int, str], tmp_dir: str):
        super().__init__()
        if options.on_removed not in ON_REMOVED:
            raise ValueError(f"on_removed must be one of {ON_REMOVED}")
        self._options = options
        self._shards = dict(shards)
        self._tmp_dir = tmp_dir

    def expand(self, source: SourceUsers) -> Compared:
        opts = self._options
        pipeline = source.rows.pipeline
        rekey = beam.ParDo(_RekeyRowsFn(opts.partitions, self._tmp_dir)).with_input_types(PartitionRows)
        rows = source.rows | "RekeyRows" >> rekey
        keyed = source.dead | "KeyDeadLetters" >> beam.ParDo(_KeyDeadLettersFn(opts)).with_outputs(
            _PASS, _UNKNOWN, main="keyed"
        )
        unknown = keyed[_UNKNOWN] | "CountUnknownDead" >> beam.CombineGlobally(sum)
        shards = pipeline | "StateShards" >> beam.Create(
            [(part, (_Tag.STATE, path)) for part, path in sorted(self._shards.items())]
        )
        compared = (
            (rows, keyed.keyed, shards)
            | "AllByPartition" >> beam.Flatten()
            | "GroupByPartition" >> beam.GroupByKey()
            | "Compare"
            >> beam.ParDo(_CompareFn(opts, self._tmp_dir), unknown_dead=beam.pvalue.AsSingleton(unknown))
            .with_output_types(PartitionRows, **{_CHANGES: str, _DEAD_OUT: DeadLetter, _WRITTEN: Written})
            .with_outputs(_CHANGES, _DEAD_OUT, _WRITTEN, main="rows")
        )
        dead = (keyed[_PASS], compared[_DEAD_OUT]) | "SyncDeadLetters" >> beam.Flatten().with_output_types(
            DeadLetter
        )
        return Compared(compared.rows, compared[_CHANGES], dead, compared[_WRITTEN])
