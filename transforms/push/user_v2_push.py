"""Sending one import body through the user service v2: one create call per user, then its grants.

The path for a ZITADEL without the admin API (v5) or a credential that may not use it (an org's
user manager; docs/user-v2.md). Each ``humanUsers`` entry of the body is one ``CreateUser`` (or,
on a server without it, ``AddHumanUser``) carrying everything the entry carries
(``transforms/zitadel_api/user_v2.py``), its metadata set after it; its ``userGrants`` follow
through ``grant_calls.write_grant`` (the authorization service v2 where the server has it, else the
management API; a scheduled sync's changes use it too). The body is checked first with the user service's limits (``body_check``, target user-v2).
Per user (``user_v2_sender.py`` reads ZITADEL's answers by code and detail id):

- created: the create answered 200; **present**: the create was refused because the user is there
  (its id in the org the body names; or, by its user name, the same user) — a create whose answer
  was lost (a dropped connection, a 504 after the effect) and is sent again can never make a
  second user: the refusal and the read-back say it is there (exactly once);
- failed with a reason and the server's message: ``in-another-org``, ``duplicate-username``,
  ``idp-link-taken``, ``permission-denied`` (the org's users only), ``rejected``,
  ``metadata-rejected``, ``grant-rejected``, ``retries-exhausted``, ``server-error``;
- **unknown** (``outcome-unknown``): its attempts were spent and the last write's outcome is unknown
  (no answer, 502, 504): not counted failed; the next push reads the user back before sending.

Every finished user is one line of ``users-NNNNN.ndjson`` in the ledger folder, flushed at once,
so a killed run resumes per user: the users a line says created or present are not sent again.
Users run at once through a :class:`UserRunner`: the push's gives each user a slot of its limiter
(:class:`LimiterRunner`: adaptive, or exactly ``--concurrency``). Called by ``push_manifest``
(``engine.py``) once per body, with a client that reports every attempt to that limiter::

    runner = LimiterRunner(limiter)
    result = send_body_v2(client.paced(limiter), ref, ledger.load(ref), live, ledger, runner, timeout=None)
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from transforms.output.body_parts import (
    body_user_ids,
    metadata_of,
    org_id_of,
    orgs_of,
    user_id_of,
    user_name_of,
    users_of,
)
from transforms.output.manifest import BodyRef, read_body
from transforms.push.grant_calls import grants_of
from transforms.push.import_answers import Json
from transforms.push.ledger import BodyResult, BodyStatus, Ledger, now
from transforms.push.progress import PushProgress
from transforms.push.send_body import Abort
from transforms.push.user_v2_sender import CreatePath, OrgAccess, Outcome, Sender, UserJob
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.limiter import Limiter

if TYPE_CHECKING:  # the type only: the policy module is read where a push has one
    from transforms.hashing.policy import HashPolicy

__all__ = ["send_body_v2", "UserRunner", "ThreadRunner", "LimiterRunner", "UserJob", "USER_LEDGER"]
__all__ += ["ORG_KEYS"]

USER_LEDGER = "users-{index:05d}.ndjson"
# What an org of a body may hold on this path: its users, their metadata and grants.
ORG_KEYS = {"orgId", "org_id", "humanUsers", "human_users", "userMetadata", "user_metadata"}
ORG_KEYS |= {"userGrants", "user_grants"}

_T = TypeVar("_T")
_R = TypeVar("_R")


class UserRunner(Protocol):
    """Runs one call per item at once, as many as it allows; results in the items' order. The
    seam for an adaptive limit (a runner that slows down on 429s) instead of ``--concurrency``."""

    def run(self, work: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]: ...


class ThreadRunner:
    """A fixed number of threads (``--concurrency``)."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)

    def run(self, work: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        if self.concurrency == 1 or len(items) <= 1:
            return [work(item) for item in items]
        with cf.ThreadPoolExecutor(self.concurrency, thread_name_prefix="user") as pool:
            return list(pool.map(work, items))


class LimiterRunner:
    """One slot of the push's limiter per user (``limiter.py``): as many users at once as the
    target keeps up with, or exactly ``--concurrency``. The users' calls report each attempt to the
    same limiter through a paced client (``AdminClient.paced``)."""

    def __init__(self, limiter: Limiter) -> None:
        self.limiter = limiter

    def run(self, work: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        futures: list[cf.Future[_R]] = []
        with cf.ThreadPoolExecutor(self.limiter.maximum, thread_name_prefix="user") as pool:
            for item in items:
                self.limiter.acquire()  # blocks while the limit is reached
                future = pool.submit(work, item)
                future.add_done_callback(lambda _: self.limiter.release())
                futures.append(future)
        return [f.result() for f in futures]


def _jobs(body: Json) -> list[UserJob]:
    jobs = []
    for org in orgs_of(body):
        org_id = org_id_of(org)
        for entry in users_of(org):
            uid = user_id_of(entry)
            meta = [m for m in metadata_of(org) if uid and str(m.get("id")) == uid]
            grants = [g for g in grants_of(org) if uid and str(g.get("userId", g.get("user_id"))) == uid]
            jobs.append(UserJob(org_id, entry, meta, grants))
    return jobs


class _UserLedger:
    """``users-NNNNN.ndjson``: one line per finished user, appended and flushed under a lock."""

    def __init__(self, ledger: Ledger, ref: BodyRef) -> None:
        self.path = os.path.join(ledger.directory, USER_LEDGER.format(index=ref.index))
        self._lock = threading.Lock()

    def load(self, sha256: str) -> dict[str, dict]:
        """user key → its last line, for lines of the same body (a cut last line is ignored)."""
        done: dict[str, dict] = {}
        try:
            with open(self.path, "rb") as handle:
                for raw in handle:
                    try:
                        line = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(line, dict) and line.get("sha256") == sha256:
                        done[str(line.get("key"))] = line
        except OSError:
            pass
        return done

    def append(self, line: dict) -> None:
        data = json.dumps(line, sort_keys=True) + "\n"
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write(data)  # one line, flushed on close: a killed run keeps it


def _key(job: UserJob) -> str:
    return user_id_of(job.entry) or "userName:" + user_name_of(job.entry)


def _unsupported(body: Json) -> list[str]:
    """Org-level parts of a body only the admin import creates (org, projects, roles, ...)."""
    return sorted({k for org in orgs_of(body) for k in org if k not in ORG_KEYS})


def _read(ref: BodyRef, result: BodyResult, hash_policy: HashPolicy | None = None) -> Json | None:
    try:
        body = json.loads(read_body(ref) or b"")
    except (OSError, ValueError) as err:
        message = api_errors.scrub(str(err))
        result.failed.append(
            {"userId": "", "orgId": "", "reason": "unreadable-body", "type": "body", "message": message}
        )
        return None
    from transforms.output.body_check import USER_V2_TARGET, check_body, v2_validation

    # The migrate pipelines' rules and the user service's own limits: an invalid user is never sent.
    checked = check_body(body, v2_validation(hash_policy), target=USER_V2_TARGET)
    result.failed.extend(checked.rejected)
    extra = _unsupported(checked.body)
    if extra:
        message = f"holds {', '.join(extra)}, which only the admin import creates (--api=admin-import)"
        users = body_user_ids(checked.body)
        if users:  # every user ends with a reason
            for org_id, uid in users:
                entry = {"userId": uid, "orgId": org_id, "reason": "needs-admin-import", "type": "human_user"}
                result.failed.append({**entry, "message": "its body " + message})
            return None
        result.failed.append(
            {"userId": "", "orgId": "", "reason": "needs-admin-import", "type": "body", "message": message}
        )
        return None
    return cast(Json, checked.body)


def _take(result: BodyResult, outcome: Outcome, progress: PushProgress) -> None:
    result.requests += outcome.requests
    if outcome.status == "created":
        result.created.append(outcome.user_id)
        progress.users_processed(1, 0, 0)
    elif outcome.status == "present":
        result.present.append(outcome.user_id)
        result.present_after_lost_answer += int(outcome.after_lost_answer)
        progress.users_processed(0, 1, 0)
    elif outcome.status == "failed" and outcome.failure is not None:
        result.failed.append(outcome.failure)
        progress.users_processed(0, 0, 1)
    elif outcome.status == "unknown" and outcome.failure is not None:
        result.unknown.append(outcome.failure)  # not failed: the next push reads it back first
        progress.users_processed(0, 0, 1)


def send_body_v2(
    client: AdminClient,
    ref: BodyRef,
    previous: BodyResult | None,
    progress: PushProgress,
    ledger: Ledger,
    runner: UserRunner,
    timeout: float | None = None,
    *,
    access: OrgAccess | None = None,
    create: CreatePath | None = None,
    hash_policy: HashPolicy | None = None,
) -> BodyResult:
    """Create the users of one body, one call each; never raises except Abort. ``access`` and
    ``create`` carry what the push learned from earlier bodies (the orgs refused, whether the
    server has CreateUser); ``hash_policy``: the target's hash limits, checked before sending."""
    result = BodyResult(
        ref.index, ref.name, ref.sha256, ref.users, status=BodyStatus.IN_PROGRESS,
        runs=(previous.runs if previous else 0) + 1, started_at=now(),
    )  # fmt: skip
    ledger.save(result)
    started = time.monotonic()
    body = _read(ref, result, hash_policy)
    progress.users_processed(0, 0, sum(1 for f in result.failed if f.get("type") != "body"))
    users = _UserLedger(ledger, ref)
    jobs = _jobs(body) if body is not None else []
    done = users.load(ref.sha256)
    unknown = {key for key, line in done.items() if line.get("status") == "unknown"}
    todo = []
    for job in jobs:
        line = done.get(_key(job))
        if line is not None and line.get("status") in ("created", "present"):
            created = line["status"] == "created"  # in an earlier run of this body
            (result.created if created else result.present).append(str(line.get("userId", "")))
            progress.users_processed(int(created), int(not created), 0)
        else:
            todo.append(job)
    sender = Sender(client, timeout, access or OrgAccess(), create or CreatePath())

    def work(job: UserJob) -> Outcome:
        outcome = sender.create(job, read_first=_key(job) in unknown)
        if outcome.status != "not-sent":
            line = {
                "key": _key(job),
                "userId": outcome.user_id,
                "status": outcome.status,
                "sha256": ref.sha256,
            }
            users.append(line)
        return outcome

    for outcome in runner.run(work, todo):
        _take(result, outcome, progress)
    result.seconds = round(time.monotonic() - started, 3)
    result.finished_at = now()
    if sender.auth_failed or sender.stop_reason:
        result.status = BodyStatus.NOT_SENT  # a re-run sends the users without a line again
        ledger.save(result)
        if sender.auth_failed:
            raise Abort(f"authentication failed: {sender.auth_failed}")
        raise Abort(str(sender.stop_reason))
    result.status = BodyStatus.FAILED if result.failed or result.unknown else BodyStatus.DONE
    ledger.save(result)
    return result
