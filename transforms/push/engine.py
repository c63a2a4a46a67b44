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
import glob
import json
import logging
import os
import posixpath
import re
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from transforms.common.durations import parse_duration
from transforms.common.errors import ConfigError
from transforms.common.progress import LiveLine
from transforms.files.storage import is_gcs, write_atomic
from transforms.hashing.policy import HashPolicy
from transforms.hashing.summary import warn_uncovered
from transforms.output.body_parts import body_user_ids, metadata_of, orgs_of, shape_problem, split_body
from transforms.output.manifest import BodyRef, Manifest, default_results_dir, load_manifest, read_body
from transforms.push.grant_calls import ROLE_KINDS, check_projects, grant_owners
from transforms.push.verification import verify_manifest
from transforms.zitadel_api import api_errors as admin_api
from transforms.zitadel_api.client import AdminClient, connect
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.transport import CallStats

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
IN_ANOTHER_ORG = "in-another-org"
OWNER_LOOKUPS = 4  # org lookups of present users at once (hosted limit: 50 requests/s per IP)


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
    stats: CallStats
    fatal: str | None = None
    verify: Any = None  # transforms.push.verification.VerifyReport when verify=True
    sync: Any = None  # transforms.sync.apply.SyncReport for a manifest with change files

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

    def failure_line(self) -> str:
        """One line saying why the push is not ok (for stderr; the table says the rest)."""
        if self.fatal:
            return f"stopped: {self.fatal}"
        failed = [b for b in self.bodies if b.failed or b.status not in ("done", "skipped")]
        parts = []
        if self.failed:
            reasons: dict[str, int] = {}
            for body in self.bodies:
                for entry in body.failed:
                    reasons[entry.get("reason", "?")] = reasons.get(entry.get("reason", "?"), 0) + 1
            first = next(e for b in self.bodies for e in b.failed)
            parts.append(
                f"{self.failed} user(s) not created in {len(failed)} body(ies) ("
                + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
                + f"; first: {first.get('message', '')})"
            )
        blocked = [b for b in self.bodies if b.status in ("blocked", "not-sent")]
        if blocked:
            parts.append(f"{len(blocked)} body(ies) not sent")
        if self.verify is not None and not self.verify.ok:
            parts.append(f"verify: {len(self.verify.missing)} user(s) missing")
        where = f"; see {self.dead_letter}" if self.dead_letter else ""
        return "; ".join(parts or ["not every user was created"]) + where + "; a re-run retries what failed"

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
class _Progress(LiveLine):
    """A live line on stderr: bodies done/total, users created, failures, rate, ETA."""

    def __init__(
        self, manifest: Manifest, stream: TextIO, enabled: bool, interval: float | None = None
    ) -> None:
        super().__init__(stream, enabled, "push-progress", interval)
        self._total_bodies = len(manifest.bodies)
        self._total_users = manifest.total_users
        self.bodies_done = self.created = self.present = self.failed = self.skipped_users = 0

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
            done = self.created + self.present + self.failed
            rate, eta = self.rate_and_eta(done, max(self._total_users - done - self.skipped_users, 0))
            return (
                f"push: bodies {self.bodies_done}/{self._total_bodies}  created {self.created}  "
                f"present {self.present}  failed {self.failed}  {rate:,.0f} users/s  ETA {eta}"
            )


# --- sending one body -------------------------------------------------------------------------
class _Abort(Exception):
    """Authentication failed, or the server stopped answering, mid-run: stop sending, report what
    was done. The text is the reason, said in full."""


def _server_gone(err: admin_api.ServerGone) -> str:
    return f"the server stopped answering: {err.message}"


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
    created_in: dict[str, str] = {}  # user id -> the org the answer says it was created in
    for org in (answer.get("success") or {}).get("orgs") or []:
        for u in org.get("humanUserIds") or []:
            created_in.setdefault(str(u), str(org.get("orgId", "")))
    created = set(created_in)
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
        elif uid in created and created_in[uid] not in (org_id, ""):
            failed[uid] = _other_org(uid, org_id, created_in[uid], "the answer lists it as created in")
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


def _other_org(uid: str, org_id: str, owner: str, how: str) -> dict:
    return {
        "userId": uid,
        "orgId": org_id,
        "reason": IN_ANOTHER_ORG,
        "type": "human_user",
        "message": f"{how} org {owner}, not in org {org_id}",
    }


def _owner_of(client: AdminClient, user_id: str) -> str | None:
    """The resource owner (org) of a user, from the first event of its aggregate; None if unknown."""
    events = client.search_events(aggregate_types=["user"], aggregate_id=user_id, limit=1, asc=True)
    owner = (events[0].get("aggregate") or {}).get("resourceOwner") if events else None
    return str(owner) if owner else None


def _check_present_owners(client: AdminClient, result: BodyResult, part: dict, before: int) -> int:
    """Users this request reported AlreadyExisting must exist in the org the body names.

    ZITADEL answers AlreadyExisting for an id that exists in *any* org, so a user of another org
    would otherwise count as present (docs/zitadel-admin-api.md#present-users-and-their-org). One
    events search per such user (``aggregateId``, limit 1), a few at once; they are only the users
    a retry or a re-run sends again. Returns how many moved from present to failed.
    """
    org_of = {uid: org for org, uid in body_user_ids(part)}
    todo = [uid for uid in result.present[before:] if uid and org_of.get(uid)]
    if not todo:
        return 0

    def lookup(uid: str) -> str | None:
        try:
            return _owner_of(client, uid)
        except admin_api.ServerGone:
            raise
        except admin_api.AdminApiError as err:
            _LOGGER.warning("%s: cannot check the org of present user %s: %s", result.name, uid, err.message)
            return None

    with cf.ThreadPoolExecutor(min(OWNER_LOOKUPS, len(todo)), thread_name_prefix="owner") as pool:
        owners = list(pool.map(lookup, todo))
    moved = 0
    for uid, owner in zip(todo, owners, strict=True):
        if owner is not None and owner != org_of[uid]:
            result.present.remove(uid)
            result.failed.append(_other_org(uid, org_of[uid], owner, "it already exists in"))
            moved += 1
    return moved


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
    from transforms.output.body_check import check_body

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
        except (admin_api.AuthError, admin_api.ServerGone) as err:
            result.requests += counter.count
            result.status, result.finished_at = "not-sent", _now()
            result.seconds = time.monotonic() - started
            ledger.save(result)
            if isinstance(err, admin_api.ServerGone):
                raise _Abort(_server_gone(err)) from None
            raise _Abort(f"authentication failed: {err.message}") from None
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
            before = len(result.present)
            created, present, failed = _interpret(answer, part, result, client.tokens.secrets(), lost_answer)
            try:
                moved = _check_present_owners(client, result, part, before)
            except admin_api.ServerGone as err:
                # The owners could not be checked: the body is not done; a re-run sends it again.
                progress.users_processed(created, present, failed)
                result.requests += counter.count
                result.status, result.finished_at = "not-sent", _now()
                ledger.save(result)
                raise _Abort(_server_gone(err)) from None
            if lost_answer:
                result.present_after_lost_answer = max(0, result.present_after_lost_answer - moved)
            progress.users_processed(created, present - moved, failed + moved)
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
                        self.fatal = self.fatal or str(err)
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


_NUMBERED = re.compile(r"^(?P<stem>.+)-(?P<index>\d{5})-of-(?P<total>\d{5})(?P<ext>\.[^/]*)?$")


def _listing_problems(manifest: Manifest) -> list[str]:
    """Where the manifest's body list and the numbered body files beside it disagree.

    migrate names bodies ``<stem>-00001-of-00003<ext>``: the names say how many there are, so a
    manifest listing two of them, or a third file beside the manifest that it does not list, is
    a body list that lost an entry (or a folder that mixes two runs).
    """
    if manifest.raw.get("tool") == "zitadel-beam push --body":
        return []  # bodies written by other tools or by hand: their names mean nothing
    groups: dict[tuple[str, str, str], dict[int, BodyRef]] = {}
    for ref in manifest.bodies:
        match = _NUMBERED.match(ref.path)
        if match:
            key = (match["stem"], match["total"], match["ext"] or "")
            groups.setdefault(key, {})[int(match["index"])] = ref
    problems = []
    for (stem, total, ext), listed in sorted(groups.items()):
        absent = [i for i in range(1, int(total) + 1) if i not in listed]
        if absent:
            name = posixpath.basename(f"{stem}-{absent[0]:05d}-of-{total}{ext}")
            problems.append(
                f"the manifest lists {len(listed)} of the {int(total)} bodies its names count "
                f"(-of-{total}): {name} is not in it"
            )
        if is_gcs(stem):
            continue
        listed_paths = {os.path.abspath(r.path) for r in manifest.bodies}
        pattern = (
            glob.escape(stem) + "-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]" + glob.escape(ext)
        )
        strays = sorted(p for p in glob.glob(pattern) if os.path.abspath(p) not in listed_paths)
        if strays:
            problems.append(
                f"{os.path.basename(strays[0])} lies beside the bodies but the manifest does not list it"
                + (f" ({len(strays)} such files)" if len(strays) > 1 else "")
            )
    return problems


def _precheck(manifest: Manifest, stream: TextIO) -> None:
    """Before the first request: the manifest and its bodies agree, and every user is valid.

    Refused (ConfigError, nothing sent) when a listed body is missing, changed since its sha256
    was taken, not an import request, or holds another number of users than its entry; when
    the entries do not add up to the manifest's counts; or when numbered bodies are missing from
    the list or lie unlisted beside it. Invalid users are counted and named, not sent.
    """
    from transforms.output.body_check import check_body

    problems = _listing_problems(manifest)
    if problems:
        raise ConfigError(f"{manifest.path}: {problems[0]}; nothing was sent")
    reasons: dict[str, int] = {}
    notes: dict[str, int] = {}
    total = 0
    for ref in manifest.bodies:
        try:
            body = json.loads(read_body(ref))
        except FileNotFoundError:
            raise ConfigError(
                f"{ref.name}: listed in {manifest.path} but not found; nothing was sent"
            ) from None
        except OSError as err:
            raise ConfigError(
                f"{ref.name}: cannot be read ({err.strerror or err}); nothing was sent"
            ) from None
        except ValueError as err:  # the sha256 differs (changed since the manifest), or not JSON
            text = str(err) if "sha256" in str(err) else "not JSON"
            raise ConfigError(f"{ref.name}: {text}; nothing was sent") from None
        problem = shape_problem(body)
        if problem:
            raise ConfigError(f"{ref.name}: {problem}; nothing was sent")
        users = len(body_user_ids(body))
        if users != ref.users:
            raise ConfigError(
                f"{ref.name} holds {users} users, its manifest entry says {ref.users}; nothing was sent"
            )
        total += users
        checked = check_body(body)  # the migrate pipelines' rules: an invalid user is never sent
        for failure in checked.rejected:
            reasons[failure["reason"]] = reasons.get(failure["reason"], 0) + 1
        for note, count in checked.notes.items():
            notes[note] = notes.get(note, 0) + count
    claimed = manifest.raw.get("counts")
    claimed = claimed if isinstance(claimed, dict) else {}
    for key in ("users_written", "human_users_written"):
        if key in claimed and claimed[key] != total:
            raise ConfigError(
                f"{manifest.path}: its bodies hold {total} users, its counts say {claimed[key]} "
                f"({key}); nothing was sent"
            )
    if "bodies_written" in claimed and claimed["bodies_written"] != len(manifest.bodies):
        raise ConfigError(
            f"{manifest.path}: it lists {len(manifest.bodies)} bodies, its counts say "
            f"{claimed['bodies_written']} (bodies_written); nothing was sent"
        )
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
    stream = stream or sys.stderr
    _precheck(manifest, stream)  # before the ledger and the network: a refused manifest leaves nothing
    warn_uncovered(manifest.raw, hash_policy)
    syncing = isinstance(manifest.raw.get("sync"), dict)
    if syncing:
        from transforms.sync.apply import check_base

        check_base(manifest)  # before anything is sent: a manifest of an older state is refused
    ledger = Ledger(results_dir or default_results_dir(manifest))
    # --request-timeout bounds every call of the push (probe, token, org lookups), not only imports.
    client = client or connect(
        url,
        credentials,
        max_attempts=max_attempts,
        **({"timeout": request_timeout} if request_timeout else {}),
    )
    check_projects(manifest.raw, client)  # the grants' projects must exist before any body
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
    fatal = scheduler.fatal
    if fatal is not None:
        done = sum(1 for r in ordered if r.status in ("done", "skipped"))
        fatal += (
            f"; {done} of {len(ordered)} bodies done "
            f"({sum(len(r.created) for r in ordered)} users created, "
            f"{sum(len(r.present) for r in ordered)} present): re-run the same command to resume"
        )
    report = PushReport(
        ordered,
        time.monotonic() - started,
        ledger.directory,
        _write_dead_letter(ledger.directory, ordered),
        client.stats,
        fatal,
    )
    if syncing:
        from transforms.sync.apply import apply_changes, commit_state

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
            from transforms.sync.apply import SyncReport

            report.sync, changes = SyncReport([], 0.0, 0, "not started: the bodies' push stopped"), []
        if verify and report.sync.fatal is None:
            from transforms.sync.apply import verify_changes

            verify_changes(changes, report.sync, client)
        # Only what the target confirmed: a failed user keeps its old record (sent again next run).
        bodies_done = frozenset(r.index for r in ordered if r.status in ("done", "skipped"))
        commit_state(manifest, confirmed, changes, report.sync, bodies_done)
    if verify and scheduler.fatal is None:
        report.verify = verify_manifest(
            manifest_path, url, credentials, results_dir=ledger.directory, client=client
        )
    return report
