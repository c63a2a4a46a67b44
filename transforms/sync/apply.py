"""Apply a sync run's change files through ZITADEL's user service v2, then commit the state.

Runs inside ``push`` after the bodies (``transforms/push/engine.py``), for a manifest with a
``sync`` section (docs/sync.md):

- each change file is checked against the manifest's sha256 before anything is sent;
- a slot of the push's limiter per user (as many users at once as the target keeps up with, or
  exactly ``--concurrency``; transforms/zitadel_api/limiter.py), the user's calls in order, each with
  the admin client's retries, backoff and ``Retry-After``;
- an action whose effect is already there counts as done (deactivating an inactive user,
  reactivating an active one, deleting a user who is gone, removing a link or key that is not
  there); an initial user, which ZITADEL refuses to deactivate, is locked instead;
- every finished user is appended to ``<results>/changes-ledger-gNNNNNN.ndjson`` (fsynced),
  so a re-run skips what was confirmed and sends the rest;
- an ``UpdateHumanUser`` whose outcome is unknown (no answer, a gateway's 502/504, a push stopped
  by Ctrl-C) is read back before it is sent again, that night or the next (``read_back.py``): the
  ledger marks each one before it is sent, the state's ``UNKNOWN_OUTCOMES.json`` carries the
  ones still open to the next night;
- after a few consecutive calls without an answer (the client's ``NoAnswerStop``) the run stops
  with one line, instead of timing out once per remaining user;
- finally the state is committed: each user as the target now holds it. A user whose call failed
  keeps its old record for the groups that call carried, so the next run sends it again.

Example::

    report = apply_changes(manifest, client, results_dir)
    commit_state(manifest, body_results, report)
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TextIO

import orjson

from transforms.common.errors import ConfigError
from transforms.common.progress import LiveLine
from transforms.common.records import partition_of
from transforms.files.storage import read_bytes
from transforms.output.manifest import Manifest, SyncView
from transforms.sync import read_back
from transforms.sync.calls import Abort, ChangeResult, Outcome, Stop, apply_user, expected_problems
from transforms.sync.change_records import Call, ChangeKind, ChangeRecord, StateRecord
from transforms.sync.report import SyncReport, planned_calls
from transforms.sync.state import StatePointer, StateStore
from transforms.sync.state_records import merge_confirmed, quick_digest, state_record
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.limiter import Limiter
from transforms.zitadel_api.user_v2 import user_path

__all__ = [
    "apply_changes",
    "commit_state",
    "verify_changes",
    "check_base",
    "CHANGES_LEDGER",
]

_LOGGER = logging.getLogger(__name__)

CHANGES_LEDGER = "changes-ledger.ndjson"
CHANGES_DEAD_LETTER = "changes-dead-letter.ndjson"


def _sync(manifest: Manifest) -> SyncView:
    if manifest.sync is None:
        raise ConfigError(f"{manifest.path}: not a sync manifest (it has no sync section)")
    return manifest.sync


def _read_changes(path: str, name: str, sha256: str) -> list[ChangeRecord]:
    try:
        data = read_bytes(path)
    except OSError as err:
        raise ConfigError(f"change file {name}: cannot read it ({err.strerror or err})") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise ConfigError(
            f"change file {name}: sha256 is {digest[:12]}…, the manifest says {sha256[:12]}…: "
            "it was changed after migrate wrote it; run migrate again"
        )
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def check_base(manifest: Manifest) -> StateStore:
    """Refuse a manifest made against another state generation than the committed one."""
    sync = _sync(manifest)
    store = StateStore(sync.state)
    pointer = store.read_pointer()
    current = (pointer or {}).get("generation", 0)
    if current != sync.base_generation:
        raise ConfigError(
            f"--state {store.root!r} is at generation {current}, this manifest was made against "
            f"generation {sync.base_generation} (a push of it already committed, or another "
            "run did): run migrate again"
        )
    return store


_IN_FLIGHT = "in-flight"  # a ledger line's status: sent, the answer not yet recorded

# A change record with the change file it came from: (file name, its sha256, the record).
_Listed = tuple[str, str, ChangeRecord]


class _Ledger:
    """Append-only NDJSON of finished users, keyed by (change file sha256, user id)."""

    def __init__(self, directory: str, base_generation: int) -> None:
        os.makedirs(directory, exist_ok=True)
        # One ledger per state generation the manifest was made against: it resumes that
        # manifest's push, and a later night's identical change file does not read as done.
        name = CHANGES_LEDGER.replace(".ndjson", f"-g{base_generation:06d}.ndjson")
        self.path = os.path.join(directory, name)
        for old in os.listdir(directory):
            if old.startswith("changes-ledger") and old != name:
                os.unlink(os.path.join(directory, old))
        self._lock = threading.Lock()
        # User id → when an UpdateHumanUser marked in flight was sent, its answer not recorded.
        self.unknown: dict[str, float] = {}

    def load(self) -> dict[tuple[str, str], ChangeResult]:
        done: dict[tuple[str, str], ChangeResult] = {}
        try:
            with open(self.path, "rb") as handle:
                for line in handle:
                    try:
                        data = json.loads(line)
                        result = ChangeResult(**data)
                    except (ValueError, TypeError):
                        continue  # a line cut by a crash: that user is sent again
                    if result.status == Outcome.DONE:
                        done[(result.sha256, result.user_id)] = result
                    if result.unknown_at is not None:
                        self.unknown.setdefault(result.user_id, result.unknown_at)
                    elif result.status in (Outcome.DONE, Outcome.FAILED):
                        self.unknown.pop(result.user_id, None)  # its answer came
        except FileNotFoundError:
            pass
        return done

    def mark(self, name: str, sha256: str, user_id: str, sent_at: float) -> None:
        """An UpdateHumanUser about to be sent: should the process end before its answer, the
        next push reads the user back first (docs/sync.md#unknown-outcomes)."""
        # Not fsynced (one fsync per user is enough): a stopped or killed process leaves what it
        # wrote with the system; only a machine that crashes mid-call can lose the mark.
        self.append(ChangeResult(name, sha256, user_id, _IN_FLIGHT, unknown_at=sent_at), durable=False)

    def append(self, result: ChangeResult, durable: bool = True) -> None:
        line = json.dumps(dataclasses.asdict(result), sort_keys=True).encode() + b"\n"
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)


class _Progress(LiveLine):
    """A live line on stderr: users done/total, requests sent, failures, rate, ETA."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        super().__init__(stream, enabled and total > 0, "sync-progress")
        self.total, self.done, self.failed, self.calls = total, 0, 0, 0

    def add(self, result: ChangeResult | None, calls: int) -> None:
        """One user finished (``None``: stopped before its result) after ``calls`` requests."""
        with self._lock:
            self.done += int(result is not None)
            self.failed += int(result is not None and result.status == Outcome.FAILED)
            self.calls += calls

    def line(self) -> str:
        with self._lock:
            rate, eta = self.rate_and_eta(self.done, max(self.total - self.done, 0))
            return (
                f"changes: users {self.done}/{self.total}  requests {self.calls}  failed {self.failed}  "
                f"{rate:,.1f} users/s  ETA {eta}"
            )


def _catalogue(manifest: Manifest) -> dict[str, set[str]]:
    """Project → role keys of the manifest's authorizations body (empty without one)."""
    from transforms.output.manifest import read_body

    roles: dict[str, set[str]] = {}
    for ref in manifest.bodies:
        if ref.kind != "authorizations":
            continue
        body = json.loads(read_body(ref))
        for org in (body.get("dataOrgs") or {}).get("orgs") or []:
            for role in org.get("projectRoles") or []:
                roles.setdefault(str(role.get("projectId")), set()).add(str(role.get("roleKey")))
    return roles


def _iter_changes(manifest: Manifest) -> Iterator[_Listed]:
    for listed in _sync(manifest).changes:
        for change in _read_changes(listed.path, listed.name, listed.sha256):
            yield listed.name, listed.sha256, change


def _triage(
    changes: list[_Listed],
    earlier: Mapping[tuple[str, str], ChangeResult],
    created: Iterable[str],
) -> tuple[list[ChangeResult | None], list[int]]:
    """The results known before sending (done in the ledger, nothing to send, a user its body did
    not create) and the indexes of the changes to send."""
    imported = set(created)
    results: list[ChangeResult | None] = [None] * len(changes)
    work: list[int] = []
    for index, (name, sha256, change) in enumerate(changes):
        user_id = str(change["userId"])
        previous = earlier.get((sha256, user_id))
        if previous is not None:
            results[index] = previous
        elif not change.get("calls"):
            results[index] = ChangeResult(name, sha256, user_id, Outcome.DONE)
        elif change.get("kind") == ChangeKind.NEW_BLOCKED and user_id not in imported:
            results[index] = ChangeResult(
                name, sha256, user_id, Outcome.FAILED, message="its body did not create the user"
            )
        else:
            work.append(index)
    return results, work


def _keep_defined_roles(manifest: Manifest, changes: list[_Listed]) -> None:
    """Keys that lost a case collision are not roles in ZITADEL (docs/roles.md): never sent."""
    allowed = _catalogue(manifest)
    if not allowed:
        return
    for _, _, change in changes:
        for call in change.get("calls") or []:
            if call["call"] == Call.SET_USER_GRANT and call["projectId"] in allowed:
                call["roleKeys"] = [k for k in call["roleKeys"] if k in allowed[call["projectId"]]]


def _not_sent(change: _Listed) -> ChangeResult:
    name, sha256, record = change
    return ChangeResult(name, sha256, str(record["userId"]), Outcome.NOT_SENT)


def apply_changes(
    manifest: Manifest,
    client: AdminClient,
    results_dir: str,
    *,
    created: Iterable[str] = (),
    concurrency: int = 1,
    request_timeout: float | None = None,
    progress: bool = True,
    stream: TextIO | None = None,
    limiter: Limiter | None = None,
) -> tuple[SyncReport, list[ChangeRecord]]:
    """Send every change of the manifest (resuming from the ledger); returns the report and the
    change records (for ``commit_state``). ``created``: users the bodies created or found, which
    a ``new-blocked`` change (deactivate a user imported blocked) needs to exist."""
    stream = stream or sys.stderr
    started = time.monotonic()
    ledger = _Ledger(results_dir, _sync(manifest).base_generation)
    changes = list(_iter_changes(manifest))
    results, work = _triage(changes, ledger.load(), created)
    # Earlier nights' unknown outcomes, then this manifest's own (a push stopped half-way).
    unknown = StateStore(_sync(manifest).state).read_unknown()
    unknown.update({u: min(at, unknown.get(u, at)) for u, at in ledger.unknown.items()})
    _keep_defined_roles(manifest, changes)
    # Users whose write of an earlier run is of unknown outcome go last: a write still in flight
    # when that run gave up has the most time to land before it is read back (docs/sync.md#late-landing).
    work = sorted(work, key=lambda i: str(changes[i][2]["userId"]) in unknown)
    stop = Stop()
    fatal: str | None = None
    with _Progress(len(work), stream, progress) as live:

        def run(index: int, earlier: ChangeResult | None = None) -> ChangeResult:
            """The user's calls; after ``earlier`` (a first try tonight), only those it did not
            confirm, reading the user back first if its outcome was left unknown."""
            name, sha256, change = changes[index]
            user_id = str(change["userId"])
            mark = functools.partial(ledger.mark, name, sha256, user_id)
            since = unknown.get(user_id) if earlier is None else earlier.unknown_at
            if earlier is not None:  # the calls are in order: the confirmed ones lead
                change = {**change, "calls": (change.get("calls") or [])[len(earlier.confirmed) :]}
            elif since is not None:
                _settle(since)
            # Each user counts its own requests: threads never add to each other's count.
            try:
                result, sent = apply_user(client, change, name, sha256, stop, request_timeout, since, mark)
            except Abort as err:
                live.add(None, err.sent)
                raise
            if earlier is not None:
                result.confirmed = earlier.confirmed + result.confirmed
            if result.status != Outcome.NOT_SENT:
                ledger.append(result)
            live.add(result if earlier is None else None, sent)
            return result

        slots = limiter or Limiter(fixed=max(1, concurrency))  # a slot per user
        with cf.ThreadPoolExecutor(slots.maximum, thread_name_prefix="sync") as pool:
            futures: dict[cf.Future[ChangeResult], int] = {}
            pending = list(work)
            while pending or futures:
                while pending and fatal is None and stop.reason is None and slots.try_acquire():
                    index = pending.pop(0)
                    futures[pool.submit(run, index)] = index
                if (fatal is not None or stop.reason is not None) and pending:
                    for index in pending:
                        results[index] = _not_sent(changes[index])
                    pending = []
                if not futures:
                    continue
                poll = 0.05 if slots.adaptive else None  # an adaptive limit can rise meanwhile
                finished, _ = cf.wait(futures, timeout=poll, return_when=cf.FIRST_COMPLETED)
                for future in finished:
                    index = futures.pop(future)
                    slots.release()
                    try:
                        results[index] = future.result()
                    except Abort as err:
                        fatal = f"authentication failed: {err}"
                        results[index] = _not_sent(changes[index])
    if fatal is None and not stop.reason:
        fatal = _try_again(run, changes, results, work)
    if stop.reason and fatal is None:
        done = sum(1 for r in results if r is not None and r.status == Outcome.DONE)
        fatal = f"{stop.reason}; {done} of {len(changes)} users done: run push again to resume"
    final = [r for r in results if r is not None]
    report = SyncReport(
        final, time.monotonic() - started, live.calls, fatal, planned=planned_calls(c for _, _, c in changes)
    )
    report.unknown_before = unknown
    report.dead_letter = _write_failures(results_dir, final)
    return report, [c for _, _, c in changes]


def _settle(since: float) -> None:
    """Wait until ``read_back.SETTLE`` seconds have passed since an earlier run's write of unknown
    outcome was sent (a run started right after one that stalled): a write still in flight lands
    first, and the read back sees it instead of sending the same password again."""
    left = since + read_back.SETTLE - time.time()
    if left > 0:
        _LOGGER.info("waiting %.0f s for a write of an earlier run to land before reading it back", left)
        time.sleep(min(left, read_back.SETTLE))


def _try_again(
    run: Callable[[int, ChangeResult], ChangeResult],
    changes: list[_Listed],
    results: list[ChangeResult | None],
    work: list[int],
) -> str | None:
    """Once more, in turn, after the rest: a user whose call failed only for the faults it met
    (its attempts used up on 503s or lost answers; at 30% faults, about 1 call in 1,400), and one
    refused a user name another user of the night has given up since (a swap, a move). ``run``
    sends only the calls not confirmed, an unknown outcome read back first. Returns why the run
    stopped (authentication), or None."""
    renamed = _renamed(changes, results)
    for index in work:
        result = results[index]
        if result is not None and (_worn_out(result) or (renamed and _name_taken(result))):
            try:
                results[index] = run(index, result)
            except Abort as err:
                return f"authentication failed: {err}"
    return None


def _renamed(changes: list[_Listed], results: list[ChangeResult | None]) -> bool:
    """Some user's new user name was confirmed tonight (the name it had is free now)."""
    for (_, _, change), result in zip(changes, results, strict=True):
        if result is None or Call.UPDATE_HUMAN_USER not in result.confirmed:
            continue
        if any(
            c["call"] == Call.UPDATE_HUMAN_USER and "username" in (c.get("body") or {})
            for c in change["calls"]
        ):
            return True
    return False


_WORN_OUT = re.compile(r"after \d+ attempts$")


def _worn_out(result: ChangeResult) -> bool:
    """Failed only because every attempt met a fault (``RetriesExhausted``: 429, 502, 503, 504, no
    answer), not because ZITADEL refused the call."""
    return result.status == Outcome.FAILED and bool(_WORN_OUT.search(result.message))


# AlreadyExists as the client writes it (api_errors.error_for): the one unique constraint an
# UpdateHumanUser meets is the user name's (its text is in the instance's language, so the code decides).
_ALREADY_EXISTS = re.compile(r"\(HTTP 409, code 6\)")


def _name_taken(result: ChangeResult) -> bool:
    """Refused because its user name is another user's (``Errors.User.AlreadyExists``)."""
    return (
        result.status == Outcome.FAILED
        and result.message.startswith(Call.UPDATE_HUMAN_USER)
        and (
            bool(_ALREADY_EXISTS.search(result.message))
            or "Errors.User.AlreadyExists" in result.message  # a server that wrote the key
        )
    )


def _write_failures(results_dir: str, results: list[ChangeResult]) -> str | None:
    from transforms.files.storage import write_lines_or_remove

    path = os.path.join(results_dir, CHANGES_DEAD_LETTER)
    lines = [
        json.dumps(
            {"file": r.file, "userId": r.user_id, "status": r.status, "message": r.message}, sort_keys=True
        )
        for r in results
        if r.status != Outcome.DONE
    ]
    return write_lines_or_remove(path, lines)


def _body_records(data: bytes, wanted: set[str]) -> Iterator[tuple[str, StateRecord]]:
    """State records of the users of one import body (as the import wrote them)."""
    body = json.loads(data)
    document = body.get("dataOrgs") or body.get("dataOrgsv1") or {}
    for org in document.get("orgs") or []:
        metadata: dict[str, list[dict[str, Any]]] = {}
        for item in org.get("userMetadata") or []:
            metadata.setdefault(str(item.get("id", "")), []).append(item)
        granted: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for grant in org.get("userGrants") or []:  # with --project-id (docs/roles.md)
            keys = tuple(str(k) for k in grant.get("roleKeys") or [])
            granted.setdefault(str(grant.get("userId", "")), []).append((str(grant.get("projectId")), keys))
        for entry in org.get("humanUsers") or []:
            user_id = str(entry.get("userId") or "")
            if user_id not in wanted:
                continue
            items = metadata.get(user_id, [])
            meta_json = orjson.dumps(items)[1:-1] if items else b""
            grants = tuple(sorted(granted.get(user_id, [])))
            quick = quick_digest(orjson.dumps(entry), meta_json, False, grants)
            plain = [{"key": m.get("key"), "value": m.get("value")} for m in items]
            yield user_id, state_record(entry, plain, blocked=False, quick=quick, grants=grants)


def commit_state(
    manifest: Manifest,
    confirmed_bodies: Mapping[int, set[str]],
    changes: list[ChangeRecord],
    report: SyncReport,
    authorizations_done: frozenset[int] = frozenset(),
) -> None:
    """Commit each user as the target now holds it; ``confirmed_bodies``: body index → users it
    created or found present."""
    from transforms.output.manifest import read_body

    store = check_base(manifest)
    base = store.read_pointer()
    partitions = store.partitions(base)
    updates: dict[int, dict[str, StateRecord | None]] = {}
    for ref in manifest.bodies:
        wanted = confirmed_bodies.get(ref.index) or set()
        if not wanted:
            continue
        for user_id, body_record in _body_records(read_body(ref), wanted):
            updates.setdefault(partition_of(user_id, partitions), {})[user_id] = body_record
    by_user = {r.user_id: r for r in report.results}
    shards: dict[int, dict[str, StateRecord]] = {}

    def shard(part: int) -> dict[str, StateRecord]:
        if part not in shards:
            shards[part] = store.read_shard(base, part)
        return shards[part]

    for change in changes:
        user_id = str(change["userId"])
        result = by_user.get(user_id)
        if result is None or (not result.confirmed and not result.complete):
            continue
        if not change.get("calls"):
            continue  # reported only: the state keeps the user
        part = partition_of(user_id, partitions)
        pending = updates.setdefault(part, {})
        old = pending[user_id] if user_id in pending else shard(part).get(user_id)
        if change.get("kind") == "new-blocked" and old is None:
            continue
        planned = [call["call"] for call in change.get("calls") or []]
        pending[user_id] = merge_confirmed(old, change["state"], result.confirmed, result.complete, planned)
    delta = 0
    for part, users in updates.items():
        records = shard(part)
        for user_id, record in users.items():
            if record is None:
                delta -= int(records.pop(user_id, None) is not None)
            else:
                delta += int(user_id not in records)
                records[user_id] = record
    changed = {part: shards[part] for part in updates}
    extra: StatePointer = {}
    roles_digest = _sync(manifest).authorizations_sha256
    roles_refs = [ref.index for ref in manifest.bodies if ref.kind == "authorizations"]
    if roles_digest and all(i in authorizations_done for i in roles_refs):
        extra["authorizations_sha256"] = roles_digest  # the target holds these projects and roles
    if report.unknown_before is not None:  # the changes were applied (not stopped before)
        unknown = report.still_unknown()
        if unknown != store.read_unknown():
            store.write_unknown(unknown)  # before the pointer: never fewer users than open
    pointer = store.commit(base, changed, delta, extra)
    report.state_generation = pointer.get("generation")
    report.users_committed = sum(len(u) for u in updates.values())


def verify_changes(changes: list[ChangeRecord], report: SyncReport, client: AdminClient) -> list[str]:
    """Read back (``GET /v2/users/{id}``) every user whose calls were confirmed; one line per
    user whose target state differs from what was sent (docs/sync.md#verify). Such a user counts
    as failed and is not committed: the next run sends its change again. Runs before the commit."""
    by_user = {r.user_id: r for r in report.results}
    problems: list[str] = []
    for change in changes:
        result = by_user.get(str(change["userId"]))
        if result is None or not result.confirmed:
            continue
        user_id = str(change["userId"])
        try:
            answer = client.request("GET", user_path(user_id), None)
        except api_errors.InvalidRequest as err:
            if Call.DELETE_USER in result.confirmed and "NotFound" in err.message:
                continue
            problems.append(f"{user_id} ({change.get('userName')}): cannot be read back: {err.message}")
            continue
        except api_errors.AdminApiError as err:
            problems.append(f"{user_id} ({change.get('userName')}): cannot be read back: {err.message}")
            continue
        found = (
            ["still exists after DeleteUser"]
            if Call.DELETE_USER in result.confirmed
            else expected_problems(change, result.confirmed, answer)
        )
        if found:
            problems += [f"{user_id} ({change.get('userName')}): {p}" for p in found]
            # Not what the target holds: not committed, so the next run sends it again.
            result.status, result.confirmed = Outcome.FAILED, []
            result.message = "verify: " + "; ".join(found)
    report.verify_problems = problems
    return problems
