"""The push engine: send a manifest's import bodies to ``POST /admin/v1/import``, resumably.

What it does, per body (the import is slow, not transactional, and rejects a whole request for
one invalid user: ``docs/zitadel-import-api.md``):

- one cheap authenticated call first, so a bad URL or credential fails in a second;
- skip the body if its ledger file under the results folder says done for the same sha256;
- send it with retries (429/502/503/504, dropped connections, client timeouts); when the server's
  own timeout elapses (``context deadline exceeded``) send the users again in halves;
- ``Errors.User.AlreadyExisting`` means *present* (a retry after a lost answer, or a re-run), and
  ``Errors.Org.AlreadyExisting`` is success; every other per-user error goes to
  ``<results>/push-dead-letter.ndjson`` with the server's message (ids only, never hashes);
- the ledger is written atomically (temp file + rename), so a killed run resumes cleanly.

Example::

    report = push_manifest("out/importBody.manifest.json", "https://x.zitadel.cloud", credentials)
    report.ok, report.created, report.present, report.failed
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from transforms import admin_api
from transforms.admin_api import AdminClient, Credentials, connect
from transforms.body_parts import body_user_ids, metadata_of, orgs_of, split_body
from transforms.durations import parse_duration
from transforms.errors import ConfigError
from transforms.files import is_gcs, write_atomic
from transforms.grant_push import ROLE_KINDS, check_projects, grant_owners
from transforms.hash_policy import HashPolicy
from transforms.hash_report import warn_uncovered
from transforms.manifest import BodyRef, Manifest, default_results_dir, load_manifest, read_body
from transforms.verify_engine import verify_manifest

__all__ = [
    "push_manifest",
    "BodyResult",
    "PushReport",
    "Ledger",
    "DEAD_LETTER_NAME",
    "LEDGER_VERSION",
    "TIMEOUT_MARGIN",
]

_LOGGER = logging.getLogger(__name__)

DEAD_LETTER_NAME = "push-dead-letter.ndjson"
LEDGER_VERSION = 1
TIMEOUT_MARGIN = 30.0  # seconds the client waits beyond the body's server-side timeout

ALREADY_EXISTING_USER = "Errors.User.AlreadyExisting"
ALREADY_EXISTING_ORG = "Errors.Org.AlreadyExisting"


# --- results ----------------------------------------------------------------------------------
@dataclasses.dataclass
class BodyResult:
    """What happened to one body; also the ledger record (``to_json``)."""

    index: int
    name: str
    sha256: str
    users: int
    status: str = "pending"  # done | failed | skipped | blocked | not-sent
    requests: int = 0
    runs: int = 0
    seconds: float = 0.0
    created: list[str] = dataclasses.field(default_factory=list)
    present: list[str] = dataclasses.field(default_factory=list)
    # Of ``present``: users reported AlreadyExisting by a request that followed a lost answer or a
    # server timeout in the same run, so most likely created by this run.
    present_after_lost_answer: int = 0
    failed: list[dict] = dataclasses.field(default_factory=list)
    orgs_present: list[str] = dataclasses.field(default_factory=list)
    parts: list[dict] = dataclasses.field(default_factory=list)
    started_at: str = ""
    finished_at: str = ""

    def to_json(self) -> dict:
        return {"version": LEDGER_VERSION, **dataclasses.asdict(self)}

    @classmethod
    def from_json(cls, data: dict) -> BodyResult:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields})


@dataclasses.dataclass
class PushReport:
    """The outcome of ``push_manifest``; ``ok`` is the exit-0 condition."""

    bodies: list[BodyResult]
    seconds: float
    results_dir: str
    dead_letter: str | None
    stats: admin_api.CallStats
    fatal: str | None = None
    verify: Any = None  # transforms.verify_engine.VerifyReport when verify=True
    sync: Any = None  # transforms.sync_engine.SyncReport for a manifest with change files

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
    def ok(self) -> bool:
        sent_all = all(b.status in ("done", "skipped") for b in self.bodies)
        verified = self.verify is None or self.verify.ok
        synced = self.sync is None or self.sync.ok
        return sent_all and self.failed == 0 and self.fatal is None and verified and synced

    def table(self) -> str:
        """The final table (one row per body, then the totals)."""
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
        lines.append(
            f"retries {self.stats.retries}, throttled {self.stats.throttled}; ledger {self.results_dir}"
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


class _Attempts:
    """Counts the HTTP attempts one import request took (the client calls ``bump`` per attempt)."""

    def __init__(self) -> None:
        self.count = 0

    def bump(self) -> None:
        self.count += 1


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Ledger:
    """One JSON file per body under the results folder (``body-00000.json``)."""

    def __init__(self, directory: str) -> None:
        if is_gcs(directory):
            raise ConfigError("--results must be a local folder (the ledger is rewritten atomically)")
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    def path(self, ref: BodyRef) -> str:
        return os.path.join(self.directory, f"body-{ref.index:05d}.json")

    def load(self, ref: BodyRef) -> BodyResult | None:
        try:
            with open(self.path(ref), "rb") as handle:
                data = json.loads(handle.read())
        except (OSError, ValueError):
            return None
        return BodyResult.from_json(data) if data.get("sha256") == ref.sha256 else None

    def save(self, result: BodyResult) -> None:
        ref_path = os.path.join(self.directory, f"body-{result.index:05d}.json")
        write_atomic(ref_path, json.dumps(result.to_json(), indent=1).encode() + b"\n")


# --- progress ---------------------------------------------------------------------------------
class _Progress:
    """A live line on stderr: bodies done/total, users created, failures, rate, ETA."""

    def __init__(
        self, manifest: Manifest, stream: TextIO, enabled: bool, interval: float | None = None
    ) -> None:
        self._total_bodies = len(manifest.bodies)
        self._total_users = manifest.total_users
        self._stream = stream
        self._enabled = enabled
        self._tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self._interval = interval or (0.5 if self._tty else 10.0)
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self.bodies_done = self.created = self.present = self.failed = self.skipped_users = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="push-progress", daemon=True)

    def __enter__(self) -> _Progress:
        if self._enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._enabled:
            self._thread.join()
            self._emit(final=True)

    def body_done(self, result: BodyResult) -> None:
        # Users of a body that was sent were counted as its answers came in.
        with self._lock:
            self.bodies_done += 1
            if result.status == "skipped":
                self.skipped_users += result.users

    def users_processed(self, created: int, present: int, failed: int) -> None:
        with self._lock:
            self.created += created
            self.present += present
            self.failed += failed

    def line(self) -> str:
        with self._lock:
            elapsed = max(time.monotonic() - self._start, 1e-6)
            done = self.created + self.present + self.failed
            rate = done / elapsed
            left = max(self._total_users - done - self.skipped_users, 0)
            eta = f"{int(left / rate) // 60}:{int(left / rate) % 60:02d}" if rate > 0 else "?"
            return (
                f"push: bodies {self.bodies_done}/{self._total_bodies}  created {self.created}  "
                f"present {self.present}  failed {self.failed}  {rate:,.0f} users/s  ETA {eta}"
            )

    def _emit(self, final: bool = False) -> None:
        text = self.line()
        if self._tty:
            self._stream.write("\r" + text + ("\n" if final else ""))
        else:
            self._stream.write(text + "\n")
        self._stream.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._emit()


# --- sending one body -------------------------------------------------------------------------
class _Abort(Exception):
    """Authentication failed mid-run: stop sending, report what was done."""


def _reason_for(message: str) -> str:
    if "Errors.User.AlreadyExists" in message:
        return "duplicate-username"
    if "Errors.Org" in message:
        return "org-error"
    return "rejected"


def _interpret(
    answer: dict, part: dict, result: BodyResult, secrets: tuple[str, ...], after_lost_answer: bool = False
) -> tuple[int, int, int]:
    """Fold one import answer into ``result``; returns (created, present, failed) counts."""
    expected = body_user_ids(part)
    org_of = dict((uid, org) for org, uid in expected)
    meta_owner = {
        f"{m.get('id')}_{m.get('key')}": str(m.get("id")) for org in orgs_of(part) for m in metadata_of(org)
    }
    grant_owner = grant_owners(part)  # user grants: docs/roles.md
    created = {
        str(u)
        for org in (answer.get("success") or {}).get("orgs") or []
        for u in org.get("humanUserIds") or []
    }
    # Users sent without userId get an id from the server: take the created ids nobody asked for.
    assigned = sorted(created - {uid for _, uid in expected})
    present: set[str] = set()
    failed: dict[str, dict] = {}
    for error in answer.get("errors") or []:
        kind, ident = str(error.get("type", "")), str(error.get("id", ""))
        message = admin_api.scrub(str(error.get("message", "")), secrets)
        if kind == "org" and ALREADY_EXISTING_ORG in message:
            if ident not in result.orgs_present:
                result.orgs_present.append(ident)
        elif kind == "human_user" and ALREADY_EXISTING_USER in message:
            present.add(ident)
        elif kind == "human_user":
            failed[ident] = {
                "userId": ident,
                "orgId": org_of.get(ident, ""),
                "reason": _reason_for(message),
                "type": kind,
                "message": message,
            }
        elif kind == "user_metadata" and ident in meta_owner:
            uid = meta_owner[ident]
            failed.setdefault(
                uid,
                {
                    "userId": uid,
                    "orgId": org_of.get(uid, ""),
                    "reason": "metadata-rejected",
                    "type": kind,
                    "id": ident,
                    "message": message,
                },
            )
        elif kind in ROLE_KINDS and ("AlreadyExists" in message or "AlreadyExisting" in message):
            continue  # a project, role or grant a previous run created: present (docs/roles.md)
        elif kind == "user_grant" and ident in grant_owner:
            uid = grant_owner[ident]
            failed.setdefault(
                uid,
                {
                    "userId": uid,
                    "orgId": org_of.get(uid, ""),
                    "reason": "grant-rejected",
                    "type": kind,
                    "id": ident,
                    "message": message,
                },
            )
        elif "AlreadyExisting" in message:
            continue  # another resource of an export document that a previous run created
        else:
            failed[f"{kind}:{ident}"] = {
                "userId": "",
                "orgId": "",
                "reason": "rejected",
                "type": kind,
                "id": ident,
                "message": message,
            }
    counts = [0, 0, 0]
    for org_id, uid in expected:
        if not uid and assigned:
            uid = assigned.pop(0)
        if uid in failed:
            counts[2] += 1
        elif uid in created:
            result.created.append(uid)
            counts[0] += 1
        elif uid in present:
            result.present.append(uid)
            result.present_after_lost_answer += int(after_lost_answer)
            counts[1] += 1
        else:
            failed[uid] = {
                "userId": uid,
                "orgId": org_id,
                "reason": "no-result",
                "type": "human_user",
                "message": "the answer neither created nor reported this user",
            }
            counts[2] += 1
    # A user can be created and still fail (its metadata was rejected): it is then failed.
    for entry in failed.values():
        if entry["userId"] in result.created:
            result.created.remove(entry["userId"])
            counts[0] -= 1
        elif entry["userId"] in result.present:
            result.present.remove(entry["userId"])
            counts[1] -= 1
    result.failed.extend(failed.values())
    return counts[0], counts[1], len(failed)


def _fail_all(part: dict, result: BodyResult, reason: str, message: str) -> int:
    users = body_user_ids(part)
    for org_id, uid in users:
        result.failed.append(
            {"userId": uid, "orgId": org_id, "reason": reason, "type": "human_user", "message": message}
        )
    return len(users)


def _send_body(
    client: AdminClient,
    ref: BodyRef,
    previous: BodyResult | None,
    timeout_default: str,
    request_timeout: float | None,
    progress: _Progress,
    ledger: Ledger,
    max_attempts: int,
) -> BodyResult:
    """Send one body (splitting on server timeouts); never raises except _Abort."""
    result = BodyResult(
        ref.index,
        ref.name,
        ref.sha256,
        ref.users,
        status="in-progress",
        runs=(previous.runs if previous else 0) + 1,
        started_at=_now(),
    )
    ledger.save(result)  # a killed run shows "in-progress": resumed runs send the body again
    started = time.monotonic()
    try:
        raw: bytes | None = read_body(ref)
        body = json.loads(raw or b"")
    except (OSError, ValueError) as err:
        result.status = "failed"
        result.failed.append(
            {
                "userId": "",
                "orgId": "",
                "reason": "unreadable-body",
                "type": "body",
                "message": admin_api.scrub(str(err)),
            }
        )
        result.finished_at = _now()
        ledger.save(result)
        return result
    from transforms.body_check import check_body

    checked = check_body(body)  # the migrate pipelines' rules: an invalid user is never sent
    if checked.changed:
        body, raw = checked.body, None
        result.failed.extend(checked.rejected)
        progress.users_processed(0, 0, len(checked.rejected))
    try:
        seconds = parse_duration(str(body.get("timeout") or timeout_default))
    except ValueError:
        seconds = 300.0
    timeout = request_timeout or seconds + TIMEOUT_MARGIN
    # (part, exact bytes or None, server timeouts so far); the first request sends the file's bytes.
    queue: list[tuple[dict, bytes | None, int]] = (
        [(body, raw, 0)] if body_user_ids(body) or not checked.rejected else []
    )
    lost_answer = False  # an earlier request of this body may have done work we never heard of
    while queue:
        part, data, deadlines = queue.pop(0)
        n_users = len(body_user_ids(part))
        part_start = time.monotonic()
        outcome = "ok"
        counter = _Attempts()
        try:
            answer = client.import_data(
                data if data is not None else json.dumps(part).encode(),
                timeout,
                on_attempt=counter.bump,
            )
        except admin_api.DeadlineExceeded as err:
            outcome = "deadline-exceeded"
            lost_answer = True
            if n_users > 1:
                queue[0:0] = [(half, None, 0) for half in split_body(part)]
            elif deadlines + 1 < max_attempts:
                # One user cannot be split: the server may just have been slow, try it again.
                queue.insert(0, (part, data, deadlines + 1))
            else:
                progress.users_processed(0, 0, _fail_all(part, result, "deadline-exceeded", err.message))
        except admin_api.AuthError as err:
            result.requests += counter.count
            result.status, result.finished_at = "not-sent", _now()
            result.seconds = time.monotonic() - started
            ledger.save(result)
            raise _Abort(err.message) from None
        except admin_api.InvalidRequest as err:
            outcome = "invalid-request"
            progress.users_processed(0, 0, _fail_all(part, result, "invalid-request", err.message))
        except admin_api.RetriesExhausted as err:
            outcome = "retries-exhausted"
            progress.users_processed(0, 0, _fail_all(part, result, "retries-exhausted", err.message))
        except admin_api.AdminApiError as err:
            outcome = "server-error"
            progress.users_processed(0, 0, _fail_all(part, result, "server-error", err.message))
        else:
            lost_answer = lost_answer or counter.count > 1
            progress.users_processed(*_interpret(answer, part, result, client.tokens.secrets(), lost_answer))
        result.requests += counter.count
        result.parts.append(
            {
                "users": n_users,
                "seconds": round(time.monotonic() - part_start, 3),
                "requests": counter.count,
                "outcome": outcome,
            }
        )
        ledger.save(result)  # checkpoint: a kill between parts keeps the ids created so far
    if previous is not None:
        # Users this body created in an earlier run come back as AlreadyExisting now.
        earlier = set(previous.created)
        result.present_after_lost_answer = max(
            0, result.present_after_lost_answer - sum(1 for u in result.present if u in earlier)
        )
        result.created += [u for u in result.present if u in earlier]
        result.present = [u for u in result.present if u not in earlier]
    result.status = "failed" if result.failed else "done"
    result.seconds = round(time.monotonic() - started, 3)
    result.finished_at = _now()
    ledger.save(result)
    return result


# --- the whole manifest -----------------------------------------------------------------------


class _Scheduler:
    """Runs bodies on a thread pool, never starting one before the bodies in its ``after``."""

    def __init__(
        self,
        manifest: Manifest,
        concurrency: int,
        work: Callable[[BodyRef], BodyResult],
        skip: Callable[[BodyRef], BodyResult | None],
        finished: Callable[[BodyResult], None],
    ) -> None:
        self._manifest = manifest
        self._concurrency = concurrency
        self._work, self._skip, self._finished = work, skip, finished
        self.results: dict[int, BodyResult] = {}
        self.fatal: str | None = None

    def _succeeded(self, index: int) -> bool:
        result = self.results.get(index)
        return result is not None and result.status in ("done", "skipped")

    def _next_ready(self, pending: list[BodyRef]) -> BodyRef | None:
        for ref in pending:
            if all(d in self.results for d in ref.after):
                return ref
        return None

    def run(self) -> dict[int, BodyResult]:
        pending = list(self._manifest.bodies)
        with cf.ThreadPoolExecutor(self._concurrency, thread_name_prefix="push") as pool:
            in_flight: dict[cf.Future, BodyRef] = {}
            while pending or in_flight:
                while pending and len(in_flight) < self._concurrency and self.fatal is None:
                    ref = self._next_ready(pending)
                    if ref is None:
                        break
                    pending.remove(ref)
                    if not all(self._succeeded(d) for d in ref.after):
                        self._record(BodyResult(ref.index, ref.name, ref.sha256, ref.users, status="blocked"))
                        continue
                    skipped = self._skip(ref)
                    if skipped is not None:
                        self._record(skipped)
                        continue
                    in_flight[pool.submit(self._work, ref)] = ref
                if self.fatal is not None:
                    for ref in pending:
                        self._record(
                            BodyResult(ref.index, ref.name, ref.sha256, ref.users, status="not-sent")
                        )
                    pending = []
                if not in_flight:
                    continue
                done, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    ref = in_flight.pop(future)
                    try:
                        self._record(future.result())
                    except _Abort as err:
                        self.fatal = f"authentication failed: {err}"
                        self._record(
                            BodyResult(ref.index, ref.name, ref.sha256, ref.users, status="not-sent")
                        )
        return self.results

    def _record(self, result: BodyResult) -> None:
        self.results[result.index] = result
        self._finished(result)


def _write_dead_letter(results_dir: str, results: list[BodyResult]) -> str | None:
    """Rewrite the dead-letter file from the current ledger: failures of this run only."""
    path = os.path.join(results_dir, DEAD_LETTER_NAME)
    lines = [json.dumps({"body": r.name, **f}, sort_keys=True) for r in results for f in r.failed]
    if not lines:
        if os.path.exists(path):
            os.unlink(path)
        return None
    write_atomic(path, ("\n".join(lines) + "\n").encode())
    return path


def _precheck(manifest: Manifest, stream: TextIO) -> None:
    """Validate every body before the first request, and say which users will not be sent."""
    from transforms.body_check import check_body

    reasons: dict[str, int] = {}
    notes: dict[str, int] = {}
    for ref in manifest.bodies:
        try:
            checked = check_body(json.loads(read_body(ref)))
        except (OSError, ValueError):
            continue  # reported as unreadable-body when its turn comes
        for failure in checked.rejected:
            reasons[failure["reason"]] = reasons.get(failure["reason"], 0) + 1
        for note, count in checked.notes.items():
            notes[note] = notes.get(note, 0) + count
    if reasons:
        stream.write(
            f"push: {sum(reasons.values())} invalid user(s) will not be sent ("
            + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
            + ")\n"
        )
    if notes:  # the same fixes as migrate: the field is dropped, the user is sent
        stream.write(
            "push: fields dropped as migrate does ("
            + ", ".join(f"{k} {v}" for k, v in sorted(notes.items()))
            + ")\n"
        )
    stream.flush()


def push_manifest(
    manifest_path: str,
    url: str,
    credentials: Credentials,
    results_dir: str | None = None,
    concurrency: int = 1,
    max_attempts: int = 6,
    request_timeout: float | None = None,
    progress: bool = True,
    verify: bool = False,
    stream: TextIO | None = None,
    client: AdminClient | None = None,
    hash_policy: HashPolicy | None = None,
) -> PushReport:
    """Push every body of a manifest; resumable through the ledger in ``results_dir``.

    >>> report = push_manifest("out/importBody.manifest.json", "https://x.zitadel.cloud",
    ...                        load_credentials(token_file="pat"), concurrency=2)  # doctest: +SKIP
    >>> report.ok, report.created, report.present, report.failed  # doctest: +SKIP

    Raises ConfigError for a bad manifest, URL or credential (the probe call). With
    ``hash_policy`` (the target's verifiers and limits), a warning names the manifest's hashes that
    target would refuse (docs/password-hashes.md).
    """
    manifest = load_manifest(manifest_path)
    warn_uncovered(manifest.raw, hash_policy)
    syncing = isinstance(manifest.raw.get("sync"), dict)
    if syncing:
        from transforms.sync_engine import check_base

        check_base(manifest)  # before anything is sent: a manifest of an older state is refused
    ledger = Ledger(results_dir or default_results_dir(manifest))
    client = client or connect(url, credentials, max_attempts=max_attempts)
    check_projects(manifest.raw, client)  # the grants' projects must exist before any body
    _precheck(manifest, stream or sys.stderr)
    stream = stream or sys.stderr
    started = time.monotonic()
    with _Progress(manifest, stream, progress) as live:

        def skip(ref: BodyRef) -> BodyResult | None:
            previous = ledger.load(ref)
            if previous is not None and previous.status in ("done", "skipped"):
                _LOGGER.info("%s: done in an earlier run (ledger), skipped", ref.name)
                return dataclasses.replace(previous, status="skipped")
            return None

        def work(ref: BodyRef) -> BodyResult:
            return _send_body(
                client, ref, ledger.load(ref), manifest.timeout, request_timeout, live, ledger, max_attempts
            )

        scheduler = _Scheduler(manifest, concurrency, work, skip, live.body_done)
        results = scheduler.run()
    ordered = [results[b.index] for b in manifest.bodies]
    report = PushReport(
        ordered,
        time.monotonic() - started,
        ledger.directory,
        _write_dead_letter(ledger.directory, ordered),
        client.stats,
        scheduler.fatal,
    )
    if syncing:
        from transforms.sync_engine import apply_changes, commit_state

        confirmed = {r.index: set(r.created) | set(r.present) for r in ordered}
        if scheduler.fatal is None:
            report.sync, changes = apply_changes(
                manifest,
                client,
                ledger.directory,
                created=set().union(*confirmed.values()) if confirmed else set(),
                concurrency=concurrency,
                request_timeout=request_timeout,
                progress=progress,
                stream=stream,
            )
        else:
            from transforms.sync_engine import SyncReport

            report.sync, changes = SyncReport([], 0.0, 0, "not started: the bodies' push stopped"), []
        if verify and report.sync.fatal is None:
            from transforms.sync_engine import verify_changes

            verify_changes(changes, report.sync, client)
        # Only what the target confirmed: a failed user keeps its old record (sent again next run).
        commit_state(manifest, confirmed, changes, report.sync)
    if verify and scheduler.fatal is None:
        report.verify = verify_manifest(
            manifest_path, url, credentials, results_dir=ledger.directory, client=client
        )
    return report
