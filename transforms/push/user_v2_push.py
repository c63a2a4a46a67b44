"""Sending one import body through the user service v2: one create call per user, then its grants.

The path for a ZITADEL without the admin API (v5) or a credential that may not use it (an org's
user manager; docs/user-v2.md). Each ``humanUsers`` entry of the body is one ``AddHumanUser``
request carrying everything the entry carries (``transforms/zitadel_api/user_v2.py``); its
``userGrants`` follow through the management calls (``grant_calls.write_grant``, which a
scheduled sync's changes use too). Per user:

- created: the create answered 200; **present**: it answered 409 and a read-back
  (``GET /v2/users/{id}``, or ``ListUsers`` by user name for an entry without ``userId``) shows the
  user in the org the body names. The server refuses a second user with the same id or user name,
  so a create whose answer was lost (a dropped connection, a 504 after the effect) and is sent
  again can never make a second user: the 409 and the read-back say it is there (exactly once);
- failed with a reason and the server's message: ``in-another-org`` (the id exists in another org,
  or in one this credential may not read), ``duplicate-username``, ``rejected``, ``grant-rejected``,
  ``retries-exhausted``, ``server-error``.

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
from typing import NamedTuple, Protocol, TypeVar, cast

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
from transforms.push.grant_calls import grants_of, write_grant
from transforms.push.import_answers import IN_ANOTHER_ORG, Json
from transforms.push.ledger import BodyResult, BodyStatus, Ledger, now
from transforms.push.progress import PushProgress
from transforms.push.send_body import Abort
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.limiter import Limiter
from transforms.zitadel_api.user_v2 import (
    ADD_HUMAN_PATH,
    LIST_USERS_PATH,
    add_human_request,
    list_users_request,
    owner_of,
    user_path,
)

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


class UserJob(NamedTuple):
    """One user to create: its org, import entry, metadata items and grants."""

    org_id: str
    entry: Json
    metadata: list[Json]
    grants: list[Json]


class _Outcome(NamedTuple):
    user_id: str
    status: str  # created | present | failed | not-sent
    requests: int
    failure: dict | None = None
    after_lost_answer: bool = False


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


def _failure(job: UserJob, uid: str, reason: str, message: str) -> dict:
    return {"userId": uid, "orgId": job.org_id, "reason": reason, "type": "human_user", "message": message}


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


class _Sender:
    """Creates the users of one body; ``stop`` is shared by its threads."""

    def __init__(self, client: AdminClient, timeout: float | None) -> None:
        self.client, self.timeout = client, timeout
        self.stop_reason: str | None = None  # the server stopped answering
        self.auth_failed: str | None = None

    def create(self, job: UserJob) -> _Outcome:
        uid = user_id_of(job.entry)
        if self.stop_reason or self.auth_failed:
            return _Outcome(uid, "not-sent", 0)
        attempts = [0]

        def bump() -> None:
            attempts[0] += 1

        request = add_human_request(job.org_id, job.entry, job.metadata)
        try:
            answer = self.client.request(
                "POST", ADD_HUMAN_PATH, request, self.timeout, on_attempt=bump, org_id=job.org_id
            )
            outcome = _Outcome(str(answer.get("userId") or uid), "created", attempts[0])
        except api_errors.InvalidRequest as err:
            if err.status != 409 and "AlreadyExist" not in err.message:
                return _Outcome(uid, "failed", attempts[0], _failure(job, uid, "rejected", err.message))
            outcome = self._read_back(job, err.message, attempts[0])
        except api_errors.AuthError as err:
            self.auth_failed = self.auth_failed or err.message
            return _Outcome(uid, "not-sent", attempts[0])
        except api_errors.ServerGone as err:
            self.stop_reason = self.stop_reason or err.message
            return _Outcome(uid, "not-sent", attempts[0])
        except api_errors.RetriesExhausted as err:
            return _Outcome(uid, "failed", attempts[0], _failure(job, uid, "retries-exhausted", err.message))
        except api_errors.AdminApiError as err:
            return _Outcome(uid, "failed", attempts[0], _failure(job, uid, "server-error", err.message))
        if outcome.status in ("created", "present") and job.grants:
            return self._grant(job, outcome)
        return outcome

    def _read_back(self, job: UserJob, message: str, attempts: int) -> _Outcome:
        """After a 409: is the user there, in the org the body names?"""
        uid = user_id_of(job.entry)
        lost = attempts > 1
        try:
            if uid:
                owner = owner_of(self.client.request("GET", user_path(uid), None, self.timeout))
            else:
                found = self.client.request(
                    "POST",
                    LIST_USERS_PATH,
                    list_users_request(org_id=job.org_id, user_name=user_name_of(job.entry), limit=1),
                    self.timeout,
                )
                users = found.get("result") or []
                uid = str(users[0].get("userId", "")) if users else ""
                owner = job.org_id if users else ""
        except api_errors.AuthError:
            text = f"{message}; it exists outside org {job.org_id} (this credential may not read it)"
            return _Outcome(uid, "failed", attempts + 1, _failure(job, uid, IN_ANOTHER_ORG, text))
        except api_errors.InvalidRequest:
            owner = ""  # not found by id: the user name is another user's
        except api_errors.AdminApiError as err:
            text = f"{message}; reading it back failed: {err.message}"
            return _Outcome(uid, "failed", attempts + 1, _failure(job, uid, "server-error", text))
        if owner == job.org_id:
            return _Outcome(uid, "present", attempts + 1, after_lost_answer=lost)
        if owner:
            text = f"it already exists in org {owner}, not in org {job.org_id}"
            return _Outcome(uid, "failed", attempts + 1, _failure(job, uid, IN_ANOTHER_ORG, text))
        return _Outcome(uid, "failed", attempts + 1, _failure(job, uid, "duplicate-username", message))

    def _grant(self, job: UserJob, outcome: _Outcome) -> _Outcome:
        """The user's grants, set as a sync sets them (grant_calls.write_grant: look up, then add
        or update; a grant whose answer was lost is found, not added twice)."""
        requests = outcome.requests
        for grant in job.grants:
            project, keys = str(grant.get("projectId", "")), list(grant.get("roleKeys") or [])
            try:
                requests += write_grant(self.client, outcome.user_id, job.org_id, project, keys, self.timeout)
            except api_errors.AuthError as err:
                self.auth_failed = self.auth_failed or err.message
                return outcome._replace(status="not-sent", requests=requests)
            except api_errors.ServerGone as err:
                self.stop_reason = self.stop_reason or err.message
                return outcome._replace(status="not-sent", requests=requests)
            except api_errors.AdminApiError as err:
                message = f"SetUserGrant: {err.message}"
                failure = _failure(job, outcome.user_id, "grant-rejected", message)
                return outcome._replace(status="failed", requests=requests, failure=failure)
        return outcome._replace(requests=requests)


def _unsupported(body: Json) -> list[str]:
    """Org-level parts of a body only the admin import creates (org, projects, roles, ...)."""
    return sorted({k for org in orgs_of(body) for k in org if k not in ORG_KEYS})


def _read(ref: BodyRef, result: BodyResult) -> Json | None:
    try:
        body = json.loads(read_body(ref) or b"")
    except (OSError, ValueError) as err:
        message = api_errors.scrub(str(err))
        result.failed.append(
            {"userId": "", "orgId": "", "reason": "unreadable-body", "type": "body", "message": message}
        )
        return None
    from transforms.output.body_check import check_body

    checked = check_body(body)  # the migrate pipelines' rules: an invalid user is never sent
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


def _take(result: BodyResult, outcome: _Outcome, progress: PushProgress) -> None:
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


def send_body_v2(
    client: AdminClient,
    ref: BodyRef,
    previous: BodyResult | None,
    progress: PushProgress,
    ledger: Ledger,
    runner: UserRunner,
    timeout: float | None = None,
) -> BodyResult:
    """Create the users of one body, one call each; never raises except Abort."""
    result = BodyResult(
        ref.index, ref.name, ref.sha256, ref.users, status=BodyStatus.IN_PROGRESS,
        runs=(previous.runs if previous else 0) + 1, started_at=now(),
    )  # fmt: skip
    ledger.save(result)
    started = time.monotonic()
    body = _read(ref, result)
    progress.users_processed(0, 0, sum(1 for f in result.failed if f.get("type") != "body"))
    users = _UserLedger(ledger, ref)
    jobs = _jobs(body) if body is not None else []
    done = users.load(ref.sha256)
    todo = []
    for job in jobs:
        line = done.get(_key(job))
        if line is not None and line.get("status") in ("created", "present"):
            created = line["status"] == "created"  # in an earlier run of this body
            (result.created if created else result.present).append(str(line.get("userId", "")))
            progress.users_processed(int(created), int(not created), 0)
        else:
            todo.append(job)
    sender = _Sender(client, timeout)

    def work(job: UserJob) -> _Outcome:
        outcome = sender.create(job)
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
        raise Abort(f"the server stopped answering: {sender.stop_reason}")
    result.status = BodyStatus.FAILED if result.failed else BodyStatus.DONE
    ledger.save(result)
    return result
