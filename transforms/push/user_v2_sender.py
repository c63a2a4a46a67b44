"""One user through the user service v2: its create, what ZITADEL's answers mean, its metadata.

ZITADEL writes an error's text in the instance's language (``"<text> (<id>)"``); what an answer
*is* comes from its gRPC code and its ``zitadel.v1.ErrorDetail`` id (``AdminApiError.detail_id``):

- **the id exists**: FailedPrecondition (HTTP 400, gRPC 9) with ``COMMAND-7yiox1isql``
  (internal/command/user_v2_human.go ``AddUserHuman``; the check reads the id alone, in any org).
  The user is read back by id: in the org the body names → *present*; elsewhere → failed
  ``in-another-org``.
- **a unique constraint**: AlreadyExists (HTTP 409, gRPC 6, ``V3-DKcYh`` for both): the user name
  another user holds, or an IdP link another user holds. Told apart by a read-back of the name in
  the org: the same user (the same id; for an entry without ``userId``, the same name and e-mail)
  → *present*; another user → failed ``duplicate-username``; nobody of that name anywhere this
  credential reads, for an entry with IdP links → failed ``idp-link-taken``. A user is never
  counted present because *some* user holds its name.
- **permission denied** (HTTP 403, gRPC 7): the credential may not create users in that org
  (``user.write``): that org's users fail ``permission-denied`` naming org and permission, and are
  not sent; the other orgs go on (``OrgAccess``). Unauthenticated (401) stops the run.
- **quota** (429 ``QUOTA-vjAy8`` / ``LIMITS-molsj``): stops the run with its reason (it clears when
  the quota's period ends, not on a retry).

The create is ``CreateUser`` (``POST /v2/users/new``) where the server has it, else ``AddHumanUser``
(``POST /v2/users/human``), learned from the first answer (``CreatePath``). CreateUser drops the
metadata it is given (zitadel/zitadel#11826), so the metadata follows with ``SetUserMetadata``:
looked up first (``ListUserMetadata``) and only the keys not already held with the same value are
set, one attempt at a time, so a set whose answer was lost is not sent again.

Used by ``user_v2_push.py``::

    sender = Sender(client, timeout, OrgAccess(), CreatePath())
    outcome = sender.create(UserJob("123", entry, metadata, grants))
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from transforms.push.grant_calls import write_grant
from transforms.push.import_answers import IN_ANOTHER_ORG, Json
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.user_v2 import (
    ADD_HUMAN_PATH,
    CREATE_USER_PATH,
    LIST_USERS_PATH,
    add_human_request,
    create_user_request,
    list_users_request,
    metadata_path,
    metadata_request,
    metadata_search_path,
    owner_of,
    user_path,
)

__all__ = ["Sender", "OrgAccess", "CreatePath", "UserJob", "Outcome", "ID_EXISTS", "UNKNOWN", "failure_of"]

# The reason of a user whose last write may or may not have landed (not a failure: read back first).
UNKNOWN = "outcome-unknown"
ID_EXISTS = "COMMAND-7yiox1isql"  # AddUserHuman: Errors.User.AlreadyExisting (FailedPrecondition)
_PRECONDITION, _ALREADY_EXISTS = 9, 6
USER_WRITE, GRANT_WRITE = "user.write", "user.grant.write"


class UserJob(NamedTuple):
    """One user to create: its org, import entry, metadata items and grants."""

    org_id: str
    entry: Json
    metadata: list[Json]
    grants: list[Json]


class Outcome(NamedTuple):
    user_id: str
    status: str  # created | present | failed | unknown | not-sent
    requests: int
    failure: dict | None = None  # for failed and unknown: the reason and ZITADEL's (or no) answer
    after_lost_answer: bool = False


def failure_of(job: UserJob, uid: str, reason: str, message: str) -> dict:
    return {"userId": uid, "orgId": job.org_id, "reason": reason, "type": "human_user", "message": message}


def _user_id(job: UserJob) -> str:
    return str(job.entry.get("userId") or job.entry.get("user_id") or "")


def _user(job: UserJob) -> Json:
    user = job.entry.get("user")
    return user if isinstance(user, dict) else {}


def _user_name(job: UserJob) -> str:
    user = _user(job)
    return str(user.get("userName") or user.get("user_name") or "")


def _email(job: UserJob) -> str:
    email = _user(job).get("email") or {}
    return str(email.get("email") or "").casefold() if isinstance(email, dict) else ""


class OrgAccess:
    """The orgs this push may and may not create users in, as the answers tell (all bodies)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.denied: dict[str, str] = {}  # org → why
        self.met: set[str] = set()  # orgs a create was sent for

    def deny(self, org_id: str, message: str) -> str:
        text = f"this credential may not create users in org {org_id} (permission {USER_WRITE}): {message}"
        with self._lock:
            return self.denied.setdefault(org_id, text)

    def meet(self, org_id: str) -> None:
        with self._lock:
            self.met.add(org_id)

    def refused(self, org_id: str) -> str | None:
        with self._lock:
            return self.denied.get(org_id)

    def every_org_denied(self) -> str | None:
        """The stop line when every org a create was sent for refused it, else None."""
        with self._lock:
            if not self.denied or self.met - set(self.denied):
                return None
            orgs = ", ".join(sorted(self.denied))
        return f"permission denied in every org ({orgs}): this credential lacks {USER_WRITE}"


class CreatePath:
    """CreateUser until the server shows it has none (its route answers 404/405/501 without a
    ZITADEL error detail, or Unimplemented), then AddHumanUser for the rest of the push."""

    def __init__(self, create_user: bool = True) -> None:
        self.create_user = create_user


class Sender:
    """Creates users; ``stop_reason`` / ``auth_failed`` are shared by the threads of one body."""

    def __init__(
        self, client: AdminClient, timeout: float | None, access: OrgAccess, path: CreatePath
    ) -> None:
        self.client, self.timeout, self.access, self.path = client, timeout, access, path
        self.stop_reason: str | None = None  # the server stopped answering, or the quota is used up
        self.auth_failed: str | None = None

    def create(self, job: UserJob, read_first: bool = False) -> Outcome:
        """Create one user, then its metadata and grants. ``read_first``: an earlier push left its
        outcome unknown, so the user is read back before it is created (``_landed``)."""
        uid = _user_id(job)
        if self.stop_reason or self.auth_failed:
            return Outcome(uid, "not-sent", 0)
        denied = self.access.refused(job.org_id)
        if denied is not None:
            return Outcome(uid, "failed", 0, failure_of(job, uid, "permission-denied", denied))
        self.access.meet(job.org_id)
        attempts = [0]

        def bump() -> None:
            attempts[0] += 1

        try:
            held = self._landed(job) if read_first else None
            if held:
                outcome, with_metadata = Outcome(held, "present", 1, after_lost_answer=True), False
            else:
                outcome, with_metadata = self._create(job, bump, attempts)
        except api_errors.InvalidRequest as err:
            outcome = self._answered(job, err, attempts[0])
            with_metadata = False
        except api_errors.AdminApiError as err:
            return self._failed_call(job, uid, err, attempts[0])
        if outcome.status not in ("created", "present"):
            return outcome
        if job.metadata and not (with_metadata and outcome.status == "created"):
            outcome = self._metadata(job, outcome)
        if outcome.status in ("created", "present") and job.grants:
            return self._grant(job, outcome)
        return outcome

    def _create(self, job: UserJob, bump, attempts: list[int]) -> tuple[Outcome, bool]:
        """Send the create one attempt at a time, within ``--max-attempts``. After an attempt
        whose outcome is unknown (api_errors.unknown_outcome: no answer, 502, 504 with or without
        ZITADEL's ``context deadline exceeded``) the user is read back first (``_landed``): one
        that is there is *present* (its metadata looked up, not set again), never sent twice.
        Raises the last error (a refusal, or the attempts spent); ``(outcome, the create carried
        the metadata)``."""
        uid, attempt = _user_id(job), 0
        lost = unsettled = False  # an attempt's outcome was unknown; no read since told what it did
        while True:
            attempt += 1
            try:
                created, with_metadata = self._send(job, bump)
                return Outcome(created or uid, "created", attempts[0], after_lost_answer=lost), with_metadata
            except api_errors.AdminApiError as err:
                if not api_errors.send_again(err):
                    raise
                if api_errors.unknown_outcome(err):
                    lost = unsettled = True
                if attempt >= self.client.max_attempts:
                    if err.status == 0:  # the write went unanswered: one for the no-answer stop
                        self.client.stop.record(False, err.message)
                    err.unknown = unsettled  # an earlier attempt may have created it: not failed
                    raise
                retry_after = err.retry_after
            self.client.backoff(attempt, retry_after)
            if unsettled:
                held = self._landed(job)
                attempts[0] += 1
                if held:
                    return Outcome(held, "present", attempts[0], after_lost_answer=True), False
                unsettled = held is None  # "": read, not there

    def _landed(self, job: UserJob) -> str | None:
        """The id of this user if the target holds it in the body's org (by id, or for an entry
        without one by its user name and e-mail); '' when it does not; None when the read got
        no answer either (the next attempt's refusal tells: AlreadyExisting → read, present)."""
        uid = _user_id(job)
        try:
            if uid:
                answer = self.client.request("GET", user_path(uid), None, self.timeout)
                return uid if owner_of(answer) == job.org_id else ""
            for held in self._named(job, job.org_id):
                mail = str(((held.get("human") or {}).get("email") or {}).get("email") or "").casefold()
                if mail and mail == _email(job):
                    return str(held.get("userId") or "")
        except api_errors.InvalidRequest:
            return ""  # NotFound: not there, send it
        except api_errors.AdminApiError as err:
            if isinstance(err, api_errors.AuthError | api_errors.ServerGone | api_errors.QuotaExhausted):
                raise
            return None
        return ""

    def _send(self, job: UserJob, bump) -> tuple[str, bool]:
        """One attempt of the create: the created user's id, and whether it carried the metadata
        (AddHumanUser)."""
        once = self.client.single_attempt()
        if self.path.create_user:
            request = create_user_request(job.org_id, job.entry)
            try:
                answer = self.client.request(
                    "POST", CREATE_USER_PATH, request, self.timeout, on_attempt=bump, org_id=job.org_id,
                    retrier=once,
                )  # fmt: skip
                return str(answer.get("id") or ""), False
            except api_errors.AdminApiError as err:
                if not api_errors.route_absent(err):
                    raise
                self.path.create_user = False
        request = add_human_request(job.org_id, job.entry, job.metadata)
        answer = self.client.request(
            "POST", ADD_HUMAN_PATH, request, self.timeout, on_attempt=bump, org_id=job.org_id, retrier=once
        )
        return str(answer.get("userId") or ""), True

    def _failed_call(self, job: UserJob, uid: str, err: api_errors.AdminApiError, attempts: int) -> Outcome:
        """A create that failed other than by a refusal of the request itself."""
        if isinstance(err, api_errors.AuthError):
            if err.status == 403 or err.code == 7:
                text = self.access.deny(job.org_id, err.message)
                return Outcome(uid, "failed", attempts, failure_of(job, uid, "permission-denied", text))
            self.auth_failed = self.auth_failed or err.message
            return Outcome(uid, "not-sent", attempts)
        if isinstance(err, api_errors.QuotaExhausted):
            why = f"the instance's quota is used up until its period ends: {err.message}"
            self.stop_reason = self.stop_reason or why
            return Outcome(uid, "not-sent", attempts)
        if isinstance(err, api_errors.ServerGone):
            self.stop_reason = self.stop_reason or f"the server stopped answering: {err.message}"
            return Outcome(uid, "not-sent", attempts)
        if api_errors.unknown_outcome(err):  # maybe created: the next push reads it back first
            return Outcome(uid, "unknown", attempts, failure_of(job, uid, UNKNOWN, f"create: {err.message}"))
        reason = "retries-exhausted" if isinstance(err, api_errors.RetriesExhausted) else "server-error"
        return Outcome(uid, "failed", attempts, failure_of(job, uid, reason, err.message))

    def _answered(self, job: UserJob, err: api_errors.InvalidRequest, attempts: int) -> Outcome:
        """A refused create: the id exists, a unique constraint, or the request itself."""
        uid = _user_id(job)
        if err.code == _PRECONDITION and err.detail_id == ID_EXISTS and uid:
            return self._by_id(job, err.message, attempts)
        if err.code == _ALREADY_EXISTS or err.status == 409:
            return self._by_name(job, err.message, attempts)
        return Outcome(uid, "failed", attempts, failure_of(job, uid, "rejected", err.message))

    def _by_id(self, job: UserJob, message: str, attempts: int) -> Outcome:
        """The id exists: is it in the org the body names?"""
        uid = _user_id(job)
        try:
            owner = owner_of(self.client.request("GET", user_path(uid), None, self.timeout))
        except api_errors.AuthError:
            text = f"{message}; it exists outside org {job.org_id} (this credential may not read it)"
            return Outcome(uid, "failed", attempts + 1, failure_of(job, uid, IN_ANOTHER_ORG, text))
        except api_errors.AdminApiError as err:
            text = f"{message}; reading it back failed: {err.message}"
            return self._unread(job, uid, attempts + 1, text, err)
        if owner == job.org_id:
            return Outcome(uid, "present", attempts + 1, after_lost_answer=attempts > 1)
        text = f"it already exists in org {owner or '(unknown)'}, not in org {job.org_id}"
        return Outcome(uid, "failed", attempts + 1, failure_of(job, uid, IN_ANOTHER_ORG, text))

    @staticmethod
    def _unread(job: UserJob, uid: str, requests: int, text: str, err: api_errors.AdminApiError) -> Outcome:
        """A refused create whose read-back failed: on faults alone the user is most likely this
        one (a lost answer): *unknown*, read back first next push; else failed ``server-error``."""
        if api_errors.send_again(err):
            return Outcome(uid, "unknown", requests, failure_of(job, uid, UNKNOWN, text))
        return Outcome(uid, "failed", requests, failure_of(job, uid, "server-error", text))

    def _named(self, job: UserJob, org_id: str) -> list[Json]:
        request = list_users_request(org_id=org_id, user_name=_user_name(job), limit=1)
        found = self.client.request("POST", LIST_USERS_PATH, request, self.timeout)
        return [u for u in found.get("result") or [] if isinstance(u, dict)]

    def _by_name(self, job: UserJob, message: str, attempts: int) -> Outcome:
        """AlreadyExists: this user (present), or its name or an IdP link held by another user."""
        uid = _user_id(job)
        try:
            users = self._named(job, job.org_id)
            anywhere = users or self._named(job, "")
        except api_errors.AdminApiError as err:
            text = f"{message}; reading the user name back failed: {err.message}"
            return self._unread(job, uid, attempts + 2, text, err)
        if users:
            held = users[0]
            held_id = str(held.get("userId") or "")
            held_mail = str(((held.get("human") or {}).get("email") or {}).get("email") or "").casefold()
            if (uid and held_id == uid) or (not uid and held_mail == _email(job) and held_mail):
                return Outcome(held_id, "present", attempts + 1, after_lost_answer=attempts > 1)
            text = (
                f"the user name {_user_name(job)!r} is held by user {held_id} in org {job.org_id}: {message}"
            )
            return Outcome(uid, "failed", attempts + 1, failure_of(job, uid, "duplicate-username", text))
        if not anywhere and _user(job).get("idps"):
            text = f"an IdP link of this user is held by another user: {message}"
            return Outcome(uid, "failed", attempts + 2, failure_of(job, uid, "idp-link-taken", text))
        where = f"org {owner_of(anywhere[0])}" if anywhere else "an org this credential may not read"
        text = f"the user name {_user_name(job)!r} is held by a user in {where}: {message}"
        return Outcome(uid, "failed", attempts + 2, failure_of(job, uid, "duplicate-username", text))

    def _metadata(self, job: UserJob, outcome: Outcome) -> Outcome:
        """Set the keys the user does not hold with the same value (``SetUserMetadata``): a user
        just created holds none; after a lost answer, or for a user already there, they are read
        first (``ListUserMetadata``)."""
        wanted = {
            str(m["key"]): str(m.get("value") or "") for m in metadata_request(job.metadata)["metadata"]
        }
        requests, attempt = outcome.requests, 0
        look_up = outcome.status != "created" or outcome.after_lost_answer
        while True:
            attempt += 1
            try:
                held: dict[str, str] = {}
                if look_up:
                    requests += 1
                    found = self.client.request(
                        "POST", metadata_search_path(outcome.user_id), {}, self.timeout
                    )
                    held = {str(m.get("key")): str(m.get("value") or "") for m in found.get("metadata") or []}
                missing = [{"key": k, "value": v} for k, v in sorted(wanted.items()) if held.get(k) != v]
                if missing:
                    requests += 1
                    path, once = metadata_path(outcome.user_id), self.client.single_attempt()
                    self.client.request("POST", path, {"metadata": missing}, self.timeout, retrier=once)
                return outcome._replace(requests=requests)
            except api_errors.AdminApiError as err:
                if not api_errors.send_again(err) or attempt >= self.client.max_attempts:
                    return self._metadata_failed(job, outcome, requests, err)
                self.client.backoff(attempt, err.retry_after)
                look_up = True  # the set may have landed: read before sending it again

    def _metadata_failed(
        self, job: UserJob, outcome: Outcome, requests: int, err: api_errors.AdminApiError
    ) -> Outcome:
        if isinstance(err, api_errors.AuthError) and not (err.status == 403 or err.code == 7):
            self.auth_failed = self.auth_failed or err.message
            return outcome._replace(status="not-sent", requests=requests)
        if isinstance(err, api_errors.ServerGone | api_errors.QuotaExhausted):
            self.stop_reason = self.stop_reason or err.message
            return outcome._replace(status="not-sent", requests=requests)
        if api_errors.send_again(err):  # attempts spent on faults: not a refusal
            status, reason = (
                ("unknown", UNKNOWN) if api_errors.unknown_outcome(err) else ("failed", "retries-exhausted")
            )
            failure = failure_of(job, outcome.user_id, reason, f"SetUserMetadata: {err.message}")
            return outcome._replace(status=status, requests=requests, failure=failure)
        failure = failure_of(job, outcome.user_id, "metadata-rejected", f"SetUserMetadata: {err.message}")
        return outcome._replace(status="failed", requests=requests, failure=failure)

    def _grant(self, job: UserJob, outcome: Outcome) -> Outcome:
        """The user's grants, set as a sync sets them (grant_calls.write_grant: look up, then add
        or update; a grant whose answer was lost is found, not added twice)."""
        requests = outcome.requests
        for grant in job.grants:
            project, keys = str(grant.get("projectId", "")), list(grant.get("roleKeys") or [])
            try:
                requests += write_grant(self.client, outcome.user_id, job.org_id, project, keys, self.timeout)
            except api_errors.AuthError as err:
                if err.status == 403 or err.code == 7:
                    message = f"SetUserGrant: this credential lacks {GRANT_WRITE} in org {job.org_id}: {err.message}"
                    failure = failure_of(job, outcome.user_id, "grant-rejected", message)
                    return outcome._replace(status="failed", requests=requests, failure=failure)
                self.auth_failed = self.auth_failed or err.message
                return outcome._replace(status="not-sent", requests=requests)
            except (api_errors.ServerGone, api_errors.QuotaExhausted) as err:
                self.stop_reason = self.stop_reason or err.message
                return outcome._replace(status="not-sent", requests=requests)
            except api_errors.AdminApiError as err:
                message = f"SetUserGrant: {err.message}"
                if api_errors.unknown_outcome(err):  # attempts spent, the last one's outcome unknown
                    failure = failure_of(job, outcome.user_id, UNKNOWN, message)
                    return outcome._replace(status="unknown", requests=requests, failure=failure)
                reason = "retries-exhausted" if api_errors.send_again(err) else "grant-rejected"
                failure = failure_of(job, outcome.user_id, reason, message)
                return outcome._replace(status="failed", requests=requests, failure=failure)
        return outcome._replace(requests=requests)
