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

    out = rows | "Sync" >> CompareWithState(options, pointer_shards, tmp, dead=dead)
    out["rows"]     # (partition, spill path) of new users, for UsersToBodies
    out["changes"]  # paths of change shard files in tmp
    out["dead"]     # dead letters
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.common.reasons import Reason
from transforms.common.records import (
    NAMESPACE,
    DeadLetter,
    EncodedRow,
    PartitionRows,
    dead_letter,
    decode_rows,
    no_gc,
    pack_rows,
    partition_of,
)
from transforms.files.spill import load_blob, read_spill, write_spill
from transforms.sync.state_records import ACTIVE, INACTIVE, compare_user, quick_digest, same_as_state

__all__ = ["SyncOptions", "CompareWithState", "change_shard_name", "ON_REMOVED", "CHANGE_PREFIX"]

ON_REMOVED = ("report", "deactivate", "delete")
CHANGE_PREFIX = "changes-p"
_ROWS, _DEAD, _STATE = "r", "d", "s"
_CHANGES, _DEAD_OUT, _PASS, _UNKNOWN = "changes", "dead", "pass", "unknown"

# Dead-letter sources that carry one user's record (the others are password or MFA records,
# which never decide whether a user is gone).
USER_SOURCES = ("auth0-profile", "keycloak-user", "keycloak-file")


@dataclasses.dataclass(frozen=True)
class SyncOptions:
    """How a run compares with its state (see the module docstring)."""

    org_id: str
    source: str  # "auth0" | "keycloak"
    partitions: int
    on_removed: str = "report"
    include_blocked: bool = False  # import users blocked at the source (then deactivate them)
    realm: str | None = None  # Keycloak: derived ids of users without id need the realm


def change_shard_name(partition: int) -> str:
    return f"{CHANGE_PREFIX}{partition:05d}.ndjson"


def _counter(name: str):
    return Metrics.counter(NAMESPACE, name)


def is_blocked(source: str, record_json: bytes) -> bool:
    """Blocked (Auth0 ``blocked: true``) or disabled (Keycloak ``enabled`` not true) at the source."""
    if source == "auth0-profile":
        if b'"blocked"' not in record_json:
            return False
        record = orjson.loads(record_json)
        return isinstance(record, dict) and record.get("blocked") is True
    if source == "keycloak-user":
        if b'"enabled":true' in record_json:
            return False
        record = orjson.loads(record_json)
        return isinstance(record, dict) and record.get("enabled") is not True
    return False


def candidate_ids(options: SyncOptions, source: str, record: Any) -> list[str] | None:
    """The ids a dead-lettered user record would have had; None when it cannot be told."""
    from transforms.common.ids import auth0_user_id, keycloak_user_id

    if not isinstance(record, dict):
        return None
    if source == "auth0-profile":
        user_id, email = record.get("user_id"), record.get("email")
        if isinstance(user_id, str) and user_id.strip():
            return [user_id]
        if isinstance(email, str) and email.strip():
            return [auth0_user_id(email)]
        return None
    if source == "keycloak-user":
        ids = []
        if isinstance(record.get("id"), str) and record["id"].strip():
            ids.append(record["id"])
        name = record.get("username")
        if isinstance(name, str) and name.strip() and options.realm:
            ids.append(keycloak_user_id(options.realm, name))
        return ids or None
    return None


class _RekeyRowsFn(beam.DoFn):
    """Source partitions (keyed by the source's join key) → state partitions (keyed by user id)."""

    def __init__(self, partitions: int, tmp_dir: str):
        self._partitions = partitions
        self._tmp_dir = tmp_dir

    def process(self, element: PartitionRows) -> Iterator[tuple[int, tuple[str, Any]]]:
        source_part, value = element
        with no_gc():
            rows = decode_rows(load_blob(value))
            parts: dict[int, list[EncodedRow]] = {}
            for row in rows:
                parts.setdefault(partition_of(row[2], self._partitions), []).append(row)
            del rows
            for part, items in parts.items():
                first = items[0]
                name = f"sync-rows-s{source_part:03d}-{first[0]:05d}-{first[1]:012d}-p{part:05d}.pkl"
                yield part, (_ROWS, write_spill(self._tmp_dir, name, pack_rows(items)))


class _KeyDeadLettersFn(beam.DoFn):
    """Dead letters about a user go to that user's partition; the rest pass by."""

    def __init__(self, options: SyncOptions):
        self._options = options

    def process(self, letter: DeadLetter):
        sortkey, line = letter
        if not any(f'"source":"{s}"'.encode() in line for s in USER_SOURCES):
            yield beam.pvalue.TaggedOutput(_PASS, letter)
            return
        parsed = orjson.loads(line)
        ids = candidate_ids(self._options, str(parsed.get("source")), parsed.get("record"))
        if ids is None:
            yield beam.pvalue.TaggedOutput(_UNKNOWN, 1)
            yield beam.pvalue.TaggedOutput(_PASS, letter)
            return
        parts = {partition_of(i, self._options.partitions) for i in ids}
        first = min(parts)
        for part in parts:
            # One copy is the dead letter (``first``); the others only tell their partition.
            yield part, (_DEAD, [part == first, ids, [sortkey[0], sortkey[1]], line])


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
                self._counts[name] = _counter(name)
            self._counts[name].inc(value)

    def process(self, element: tuple[int, Iterable[tuple[str, Any]]], unknown_dead: int):
        part, values = element
        with no_gc():
            yield from self._compare(part, values, unknown_dead > 0)

    def _compare(self, part: int, values: Iterable[tuple[str, Any]], hold_removals: bool):
        from transforms.sync.state import decode_shard, read_raw

        state: dict[str, dict[str, Any]] = {}
        rows: list[EncodedRow] = []
        letters: list[list[Any]] = []
        for kind, value in values:
            if kind == _STATE:
                state.update(decode_shard(read_raw(value)))
            elif kind == _ROWS:
                rows.extend(decode_rows(read_spill(value)))
            else:
                letters.append(value)
        rows.sort(key=lambda r: (r[0], r[1]))
        opts = self._options
        new_rows: list[EncodedRow] = []
        changes: list[tuple[tuple[int, int], bytes]] = []
        seen: set[str] = set()
        counts: dict[str, int] = {}

        def count(name: str, value: int = 1) -> None:
            counts[name] = counts.get(name, 0) + value

        for row in rows:
            user_id, entry_json, meta_json, source, record_json = row[2], row[4], row[5], row[7], row[8]
            if user_id in seen:
                yield from self._reject(
                    row, Reason.DUPLICATE_USER_ID, f"user_id {user_id!r} already used by an earlier record"
                )
                continue
            seen.add(user_id)
            blocked = is_blocked(source, record_json)
            old = state.get(user_id)
            if old is None and blocked and not opts.include_blocked:
                count("sync.rows_rejected")
                reason, flag = (
                    (Reason.DISABLED, "--include-disabled")
                    if source == "keycloak-user"
                    else (Reason.BLOCKED, "--include-blocked")
                )
                yield from self._reject(
                    row,
                    reason,
                    f"user is {reason} at the source and not in ZITADEL yet ({flag} imports it, then deactivates it)",
                )
                continue
            grants = row[10] if len(row) > 10 else ()  # transforms/mapping/roles.py, with --project-id
            quick = quick_digest(entry_json, meta_json, blocked, grants)
            if old is not None and same_as_state(old, quick, blocked):  # before any parsing
                count("sync.unchanged")
                self._kept(row, count)
                continue
            entry = orjson.loads(entry_json)
            metadata = orjson.loads(b"[" + meta_json + b"]") if meta_json else []
            kind, record, groups, calls, notes = compare_user(
                old, entry, metadata, blocked=blocked, quick=quick, grants=grants
            )
            if kind == "new":
                count("sync.new")
                new_rows.append(row)
                if blocked:  # --include-blocked: imported, then deactivated
                    count("sync.deactivate")
                    count("sync.removals")
                    count("sync.calls")
                    changes.append(
                        (
                            (row[0], row[1]),
                            self._change(
                                user_id,
                                entry,
                                "new-blocked",
                                [],
                                [{"call": "DeactivateUser"}],
                                [],
                                record,
                                None,
                            ),
                        )
                    )
                continue
            self._kept(row, count)
            if kind == "unchanged":
                count("sync.unchanged")
                continue
            count("sync.changed")
            for group in groups:
                count(f"sync.changed_fields.{group}")
            for note in notes:
                count(f"sync.not_applied.{note}")
            for call in calls:
                count("sync.calls")
                if call["call"] == "DeactivateUser":
                    count("sync.deactivate")
                    count("sync.removals")
                elif call["call"] in ("ReactivateUser", "UnlockUser"):
                    count("sync.reactivate")
            changes.append(
                ((row[0], row[1]), self._change(user_id, entry, "changed", groups, calls, notes, record, old))
            )

        kept_by_dead: set[str] = set()
        for is_letter, ids, sortkey, line in letters:
            known = [i for i in ids if i in state and i not in seen]
            if known:
                kept_by_dead.update(known)
            if not is_letter:
                continue
            if known:
                count("sync.left_alone_dead_lettered")
                letter = orjson.loads(line)
                letter["sync"] = (
                    f"user {known[0]!r} is in the sync state: left exactly as ZITADEL holds it "
                    "(not updated, not deactivated) until its record reads cleanly"
                )
                line = orjson.dumps(letter)
            yield beam.pvalue.TaggedOutput(_DEAD_OUT, ((sortkey[0], sortkey[1]), line))

        gone = sorted(set(state) - seen - kept_by_dead)
        removal_calls: list[dict[str, Any]]
        for user_id in gone:
            old = state[user_id]
            policy = "report" if hold_removals else opts.on_removed
            if policy == "deactivate" and (old.get("b", ACTIVE) != ACTIVE):
                count("sync.removed.already-inactive")
                continue
            if policy == "report":
                count("sync.removed.report")
                if hold_removals and opts.on_removed != "report":
                    count("sync.removed.held")
                removal_calls = []
                record = old
            elif policy == "deactivate":
                count("sync.removed.deactivate")
                count("sync.removals")
                removal_calls = [{"call": "DeactivateUser"}]
                record = {**old, "b": INACTIVE, "g": 1}
            else:
                count("sync.removed.delete")
                count("sync.removals")
                removal_calls = [{"call": "DeleteUser"}]
                record = old
            count("sync.calls", len(removal_calls))
            changes.append(((1 << 62, 0), self._removed(user_id, old, policy, removal_calls, record)))

        for name, value in counts.items():
            self._inc(name, value)
        if new_rows:
            first = new_rows[0]
            name = f"sync-new-{first[0]:05d}-{first[1]:012d}-p{part:05d}.pkl"
            yield part, write_spill(self._tmp_dir, name, pack_rows(new_rows))
        if changes:
            changes.sort(key=lambda c: c[0])
            data = b"".join(line + b"\n" for _, line in changes)
            from apache_beam.io.filesystems import FileSystems

            from transforms.files.sinks import open_private

            path = FileSystems.join(self._tmp_dir, change_shard_name(part))
            with open_private(path) as handle:
                handle.write(data)
            yield beam.pvalue.TaggedOutput(_CHANGES, path)

    def _kept(self, row: EncodedRow, count) -> None:
        """A user that does not go into a body still counts as read and converted."""
        count("sync.rows_not_imported")
        if row[6]:
            count("users_with_password")
        if b'"otpCode":' in row[4]:
            count("users_with_otp")
        grants = row[10] if len(row) > 10 else ()
        if grants:  # carried by the state and the change records, not by a body (docs/roles.md)
            count("authorizations.users_with_roles")
            count("authorizations.grants", len(grants))
            count("authorizations.keys_carried", sum(len(keys) for _, keys in grants))

    def _reject(self, row: EncodedRow, reason: str, detail: str):
        grants = row[10] if len(row) > 10 else ()
        if grants:
            self._inc("roles.skipped.user-dead-lettered", sum(len(keys) for _, keys in grants))
        yield beam.pvalue.TaggedOutput(
            _DEAD_OUT, dead_letter((row[0], row[1]), reason, detail, row[7], orjson.Fragment(row[8]))
        )
        for sortkey, source, record in orjson.loads(row[9]) if row[9] else []:
            yield beam.pvalue.TaggedOutput(
                _DEAD_OUT,
                dead_letter(
                    sortkey, Reason.PROFILE_REJECTED, f"its user was dead-lettered ({reason})", source, record
                ),
            )

    def _change(
        self,
        user_id: str,
        entry: Mapping[str, Any],
        kind: str,
        groups: list[str],
        calls: list[dict[str, Any]],
        notes: list[str],
        record: Mapping[str, Any],
        old: Mapping[str, Any] | None,
    ) -> bytes:
        change: dict[str, Any] = {
            "userId": user_id,
            "orgId": self._options.org_id,
            "userName": (entry.get("user") or {}).get("userName"),
            "kind": kind,
            "fields": groups,
            "calls": calls,
        }
        if notes:
            change["notApplied"] = notes
        change["state"] = record
        if old is not None:
            change["previous"] = old
        return orjson.dumps(change)

    def _removed(
        self,
        user_id: str,
        old: Mapping[str, Any],
        policy: str,
        calls: list[dict[str, Any]],
        record: Mapping[str, Any],
    ) -> bytes:
        change = {
            "userId": user_id,
            "orgId": self._options.org_id,
            "userName": old.get("n"),
            "kind": "removed",
            "policy": policy,
            "fields": [],
            "calls": calls,
            "state": record,
            "previous": old,
        }
        return orjson.dumps(change)


@beam.typehints.with_input_types(PartitionRows)
class CompareWithState(beam.PTransform):
    """Source rows ``(partition, rows)`` → ``{'rows': new users' rows, 'changes': change file paths,
    'dead': dead letters}``.

    ``dead`` is the source's dead letters (``DeadLetter``): the ones about a user in the state
    are noted, and one that names no user holds removals back. ``shards`` maps a state partition
    to the path of its shard (``StateStore.shard_paths``).
    """

    def __init__(
        self,
        options: SyncOptions,
        shards: Mapping[int, str],
        tmp_dir: str,
        dead: beam.PCollection[DeadLetter],
    ):
        super().__init__()
        if options.on_removed not in ON_REMOVED:
            raise ValueError(f"on_removed must be one of {ON_REMOVED}")
        self._options = options
        self._shards = dict(shards)
        self._tmp_dir = tmp_dir
        self._dead = dead

    def expand(self, source_rows: beam.PCollection[PartitionRows]) -> dict[str, beam.PCollection]:
        """Returns ``{'rows': PCollection[PartitionRows], 'changes': PCollection[str],
        'dead': PCollection[DeadLetter]}``."""
        opts = self._options
        pipeline = source_rows.pipeline
        rows = source_rows | "RekeyRows" >> beam.ParDo(_RekeyRowsFn(opts.partitions, self._tmp_dir))
        keyed = self._dead | "KeyDeadLetters" >> beam.ParDo(_KeyDeadLettersFn(opts)).with_outputs(
            _PASS, _UNKNOWN, main="keyed"
        )
        unknown = keyed[_UNKNOWN] | "CountUnknownDead" >> beam.CombineGlobally(sum)
        shards = pipeline | "StateShards" >> beam.Create(
            [(part, (_STATE, path)) for part, path in sorted(self._shards.items())]
        )
        compared = (
            (rows, keyed.keyed, shards)
            | "AllByPartition" >> beam.Flatten()
            | "GroupByPartition" >> beam.GroupByKey()
            | "Compare"
            >> beam.ParDo(_CompareFn(opts, self._tmp_dir), unknown_dead=beam.pvalue.AsSingleton(unknown))
            .with_output_types(PartitionRows, **{_CHANGES: str, _DEAD_OUT: DeadLetter})
            .with_outputs(_CHANGES, _DEAD_OUT, main="rows")
        )
        dead = (keyed[_PASS], compared[_DEAD_OUT]) | "SyncDeadLetters" >> beam.Flatten().with_output_types(
            DeadLetter
        )
        return {"rows": compared.rows, "changes": compared[_CHANGES], "dead": dead}
