"""The HTTP requests of a sync's change calls: one user's calls, in order, against ZITADEL.

``apply_user`` sends the calls of one change record (``transforms/sync/state_records.py``
``ChangeCall``) through the admin client and says which were confirmed; ``transforms/sync/apply.py``
runs it for every user, on ``--concurrency`` threads. Each call gives the user service v2 request
(``call_path``) or, for grants, the management API's look-up then add, update or remove
(the management API's user grants). An action whose effect is already there counts as done (docs/sync.md#already-done);
an initial user, which ZITADEL refuses to deactivate, is locked instead (docs/sync.md#initial-users).

Example::

    result, sent = apply_user(client, change, "changes-p00000.ndjson", sha256, Stop(), timeout)
    result.confirmed  # ["UpdateHumanUser", ...]; ``sent``: requests made for this user
"""

from __future__ import annotations

import dataclasses
import enum
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from transforms.push.grant_calls import write_grant
from transforms.sync.change_records import Call, ChangeCall, ChangeRecord
from transforms.sync.read_back import NEEDS_LINKS, NEEDS_METADATA, Held, Json, call_left
from transforms.zitadel_api import api_errors
from transforms.zitadel_api import user_v2 as v2
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.user_v2 import links_search_path, metadata_search_path, user_path

__all__ = ["ChangeResult", "Outcome", "Abort", "Stop", "apply_user", "call_path", "expected_problems"]

# Error ids (docs/sync.md#already-done) that mean the call's effect is already there.
_ALREADY_DONE: dict[str, tuple[str, ...]] = {
    Call.DEACTIVATE_USER: ("Errors.User.AlreadyInactive",),
    Call.REACTIVATE_USER: ("Errors.User.NotInactive",),
    Call.UNLOCK_USER: ("Errors.User.NotLocked",),
    Call.DELETE_USER: ("Errors.User.NotFound",),
    Call.REMOVE_IDP_LINK: ("NotFound", "NotExisting"),
    Call.DELETE_USER_METADATA: ("Errors.Metadata.KeyNotExisting",),
    Call.ADD_IDP_LINK: ("Errors.User.ExternalIDP.AlreadyExists",),
    Call.REMOVE_PHONE: ("Errors.User.Phone.NotFound", "NotFound"),
}
_CANT_DEACTIVATE_INITIAL = "Errors.User.CantDeactivateInitial"
_ALREADY_EXISTS = 6  # gRPC AlreadyExists: the one unique constraint AddIDPLink can meet is the link's
_STATE_CALLS = (Call.DEACTIVATE_USER, Call.REACTIVATE_USER, Call.LOCK_USER, Call.UNLOCK_USER)


def _held(call_name: str, err: api_errors.AdminApiError) -> bool:
    """``AddIDPLink`` answered AlreadyExists: the link's unique constraint (eventstore v3
    ``V3-DKcYh``, key ``Errors.User.ExternalIDP.AlreadyExists``, translated in the message), read
    from the code since the text is in the instance's language."""
    return call_name == Call.ADD_IDP_LINK and err.code == _ALREADY_EXISTS


class Outcome(enum.StrEnum):
    """How one user's change ended (its ledger line's ``status``)."""

    DONE = "done"  # every call confirmed
    FAILED = "failed"  # a call was refused or failed for good: sent again next run
    NOT_SENT = "not-sent"  # the run stopped first: the next push sends it


@dataclasses.dataclass
class ChangeResult:
    """One user's outcome; also its ledger line."""

    file: str
    sha256: str
    user_id: str
    status: str  # an Outcome (a plain string when read back from the ledger)
    confirmed: list[str] = dataclasses.field(default_factory=list)
    message: str = ""
    # When the first UpdateHumanUser whose outcome is still unknown was sent (Unix seconds;
    # transforms/sync/read_back.py): the next attempt reads the user back first.
    unknown_at: float | None = None

    @property
    def complete(self) -> bool:
        return self.status == Outcome.DONE


class Stop:
    """Set once the client reports the server gone (``api_errors.ServerGone``): no more users start."""

    def __init__(self) -> None:
        self.reason: str | None = None


class Abort(Exception):
    """Authentication failed: the whole run stops (``sent``: the user's requests until then)."""

    sent = 0


def call_path(user_id: str, call: ChangeCall) -> tuple[str, str, bytes | None]:
    """``(method, path, body)`` of a change call in ZITADEL's user service v2 REST mapping
    (the paths: transforms/zitadel_api/user_v2.py)."""
    name = call["call"]
    if name == Call.UPDATE_HUMAN_USER:
        return "PUT", v2.update_human_path(user_id), orjson.dumps(call["body"])
    if name in _STATE_CALLS:
        return "POST", v2.state_change_path(user_id, name[: -len("User")].lower()), b"{}"
    if name == Call.DELETE_USER:
        return "DELETE", v2.user_path(user_id), None
    if name == Call.REMOVE_PHONE:
        return "DELETE", v2.phone_path(user_id), None
    if name == Call.ADD_IDP_LINK:
        return "POST", v2.links_path(user_id), orjson.dumps(call["body"])
    if name == Call.REMOVE_IDP_LINK:
        return "DELETE", v2.link_path(user_id, call["idpId"], call["linkedUserId"]), None
    if name == Call.SET_USER_METADATA:
        return "POST", v2.metadata_path(user_id), orjson.dumps(call["body"])
    if name == Call.DELETE_USER_METADATA:
        return "DELETE", v2.metadata_delete_path(user_id, call["keys"]), None
    raise ValueError(f"unknown change call {name!r}")


_V2_STATES = {"inactive": "USER_STATE_INACTIVE", "locked": "USER_STATE_LOCKED"}


def expected_problems(change: ChangeRecord, confirmed: list[str], answer: Mapping[str, Any]) -> list[str]:
    """What the target holds (``answer``: ``GET /v2/users/{id}``) that differs from what the
    confirmed calls of ``change`` set (docs/sync.md#verify)."""
    user = answer.get("user") or {}
    human = user.get("human") or {}
    problems: list[str] = []
    for call in change.get("calls") or []:
        if call["call"] not in confirmed:
            continue
        if call["call"] == Call.UPDATE_HUMAN_USER:
            body = call["body"]
            if "username" in body and user.get("username") != body["username"]:
                problems.append(f"username is {user.get('username')!r}, not {body['username']!r}")
            profile = body.get("profile") or {}
            held = human.get("profile") or {}
            for field in ("givenName", "familyName"):
                if field in profile and held.get(field) != profile[field]:
                    problems.append(f"{field} is {held.get(field)!r}, not {profile[field]!r}")
            if "email" in body and (human.get("email") or {}).get("email") != body["email"].get("email"):
                problems.append("e-mail differs")
            if "phone" in body and (human.get("phone") or {}).get("phone") != body["phone"].get("phone"):
                problems.append("phone differs")
        elif call["call"] in (Call.DEACTIVATE_USER, Call.LOCK_USER):
            wanted = _V2_STATES["inactive" if call["call"] == Call.DEACTIVATE_USER else "locked"]
            if user.get("state") not in (_V2_STATES["inactive"], _V2_STATES["locked"]):
                problems.append(f"state is {user.get('state')}, not {wanted}")
        elif (
            call["call"] in (Call.REACTIVATE_USER, Call.UNLOCK_USER)
            and user.get("state") in _V2_STATES.values()
        ):
            problems.append(f"state is still {user.get('state')}")
    return problems


def apply_user(
    client: AdminClient,
    change: ChangeRecord,
    name: str,
    sha256: str,
    stop: Stop,
    timeout: float | None,
    unknown_at: float | None = None,
    mark: Callable[[float], None] | None = None,
) -> tuple[ChangeResult, int]:
    """Send one change record's calls in order; ``(its result, the requests made for it)``.

    ``unknown_at``: an earlier call of this user, sent then, has an unknown outcome (a night that
    gave up, a push stopped by Ctrl-C): the user is read back first, and a call whose effect is
    already there is confirmed without being sent. ``mark(t)`` is called just before each write
    is sent (the ledger keeps it, in case the process ends before the answer).

    Raises :class:`Abort` when the credentials are refused; sets ``stop.reason`` when the server
    stopped answering."""
    result = ChangeResult(name, sha256, str(change["userId"]), Outcome.DONE, unknown_at=unknown_at)
    user = _UserCalls(client, change, result, stop, timeout, mark)
    try:
        for call in change.get("calls") or []:
            if stop.reason:
                user.result.status, user.result.message = Outcome.NOT_SENT, "the run stopped before this user"
                break
            if not user.send(call):
                break
    except Abort as err:
        err.sent = user.sent
        raise
    if user.result.status == Outcome.DONE:
        user.result.unknown_at = None  # every call of the plan holds at the target
    return user.result, user.sent


class _UserCalls:
    """One user's calls on one thread; ``sent`` counts this user's requests only.

    Every write is sent one attempt at a time (the client's attempts and backoff, the push's
    pace). An attempt whose outcome is unknown (no answer, a gateway's 502/504) is followed by a
    read-back of the user, and only what did not land is sent again (read_back.call_left): a
    password is never written twice, a ``LockUser`` that landed is never refused for having
    landed (docs/sync.md#unknown-outcomes).
    """

    def __init__(
        self,
        client: AdminClient,
        change: ChangeRecord,
        result: ChangeResult,
        stop: Stop,
        timeout: float | None,
        mark: Callable[[float], None] | None = None,
    ) -> None:
        self.client, self.result, self.stop, self.timeout = client, result, stop, timeout
        self.mark = mark
        self.org_id = str(change.get("orgId") or "")
        self.secrets = client.tokens.secrets()
        self.sent = 0
        # An earlier push left this user's outcome unknown: read back before the first write.
        self.read_first = result.unknown_at is not None
        self._held: Held | None = None  # what a read-back found, until the next write

    # --- reading the user back ----------------------------------------------------------------
    def _read_json(self, method: str, path: str, body: bytes | None) -> Json | None:
        """A read (retried as the client retries); None when the server has no such call."""
        self.sent += 1
        try:
            return self.client.request(method, path, body, self.timeout)
        except api_errors.InvalidRequest as err:
            if "NotFound" in err.message or err.status == 404:
                return None
            raise

    def _held_for(self, call: ChangeCall) -> Held:
        """The user as the target holds it, with what ``call`` needs (metadata, links)."""
        uid = self.result.user_id
        if self._held is None:
            answer = self._read_json("GET", user_path(uid), None)
            self._held = Held(None if answer is None else answer.get("user") or {})
        held = self._held
        if held.user is not None and call["call"] in NEEDS_METADATA and held.metadata is None:
            listed = self._read_json("POST", metadata_search_path(uid), b"{}")
            if listed is not None:
                held.metadata = {str(m.get("key")): str(m.get("value")) for m in listed.get("metadata") or []}
        if held.user is not None and call["call"] in NEEDS_LINKS and held.links is None:
            listed = self._read_json("POST", links_search_path(uid), b"{}")
            if listed is not None:
                held.links = {(str(i.get("idpId")), str(i.get("userId"))) for i in listed.get("result") or []}
        return held

    def _left(self, call: ChangeCall) -> ChangeCall | None:
        """What of ``call`` the target does not hold (None: nothing; docs/sync.md#unknown-outcomes)."""
        since = self.result.unknown_at if self.result.unknown_at is not None else time.time()
        return call_left(call, self._held_for(call), since)

    # --- writing ------------------------------------------------------------------------------
    def _write(self, call: ChangeCall) -> None:
        """Send ``call`` until confirmed or its effect reads back as there; raises the client's
        errors, with ``result.unknown_at`` set while an attempt's outcome is still unknown."""
        result, client = self.result, self.client
        left: ChangeCall | None = call
        if self.read_first:
            left = self._left(call)
        attempt = 0
        while left is not None:
            attempt += 1
            method, path, body = call_path(result.user_id, left)
            sent_at = time.time()
            if self.mark is not None:
                self.mark(result.unknown_at or sent_at)
            self.sent += 1
            self._held = None  # the user may change now
            unknown, retry_after = False, None
            try:
                client.request(method, path, body, self.timeout, retrier=client.single_attempt())
                return
            except api_errors.AdminApiError as err:
                unknown = api_errors.unknown_outcome(err)
                if unknown and result.unknown_at is None:
                    result.unknown_at = sent_at
                if not api_errors.send_again(err) or attempt >= client.max_attempts:
                    if (
                        err.status == 0 and unknown
                    ):  # the whole write went unanswered: one for the no-answer stop
                        client.stop.record(False, err.message)
                    raise
                retry_after = err.retry_after
            client.backoff(attempt, retry_after)
            if unknown:
                left = self._left(left)

    def _gone(self, message: str, call_name: str) -> bool:
        self.stop.reason = self.stop.reason or api_errors.scrub(message, self.secrets)
        self.result.status, self.result.message = (
            Outcome.NOT_SENT,
            f"{call_name}: the server stopped answering",
        )
        return False

    def send(self, call: ChangeCall) -> bool:
        """One call: True when confirmed (``result.confirmed``), False when ``result`` says why not."""
        result, call_name = self.result, call["call"]
        try:
            if call_name in (Call.SET_USER_GRANT, Call.REMOVE_USER_GRANT):
                self._grant(call)
            else:
                self._write(call)
            result.confirmed.append(call_name)
            return True
        except api_errors.AuthError as err:
            raise Abort(err.message) from None
        except api_errors.ServerGone as err:
            # The client saw several requests in a row go unanswered: stop, resume next run.
            return self._gone(err.message, call_name)
        except api_errors.InvalidRequest as err:
            message = api_errors.scrub(err.message, self.secrets)
            if call_name == Call.DEACTIVATE_USER and _CANT_DEACTIVATE_INITIAL in message:
                return self._lock_instead()
            if any(marker in message for marker in _ALREADY_DONE.get(call_name, ())) or _held(call_name, err):
                result.confirmed.append(call_name)
                return True
            return self._refused(call, message)
        except api_errors.AdminApiError as err:  # retries exhausted, a server error
            result.status, result.message = (
                Outcome.FAILED,
                f"{call_name}: {api_errors.scrub(err.message, self.secrets)}",
            )
            return False

    def _refused(self, call: ChangeCall, message: str) -> bool:
        """A refused state call whose effect may be there all the same (``LockUser`` of a user
        locked since: ``ShouldBeActiveOrInitial``): read back, confirm if it is, else fail."""
        result, call_name = self.result, call["call"]
        if call_name in _STATE_CALLS:
            try:
                there = self._left(call) is None
            except api_errors.AdminApiError:
                there = False
            if there:
                result.confirmed.append(call_name)
                return True
        result.status, result.message = Outcome.FAILED, f"{call_name}: {message}"
        return False

    def _lock_instead(self) -> bool:
        """An initial user (never signed in, e-mail not verified) cannot be deactivated; a locked
        user cannot sign in either (docs/sync.md#initial-users)."""
        result = self.result
        try:
            self._write({"call": Call.LOCK_USER})
            result.confirmed.append(Call.LOCK_USER)
            return True
        except api_errors.InvalidRequest as lock_err:
            message = api_errors.scrub(lock_err.message, self.secrets)
            if self._refused({"call": Call.LOCK_USER}, message):
                return True
            result.message = f"{Call.DEACTIVATE_USER}: {message}"
            return False
        except api_errors.AuthError as auth_err:
            raise Abort(auth_err.message) from None
        except api_errors.ServerGone as gone:
            return self._gone(gone.message, Call.LOCK_USER)
        except api_errors.AdminApiError as other:
            message = api_errors.scrub(other.message, self.secrets)
        result.status, result.message = Outcome.FAILED, f"{Call.DEACTIVATE_USER}: {message}"
        return False

    def _grant(self, call: ChangeCall) -> None:
        """Set (add or update) or remove the user's grant on one project, as push sets grants
        (transforms/push/grant_calls.py ``write_grant``: looked up before every attempt, so a
        grant whose answer was lost is found, never added twice; docs/sync.md#grants)."""
        self.sent += write_grant(
            self.client,
            self.result.user_id,
            self.org_id,
            str(call["projectId"]),
            None if call["call"] == Call.REMOVE_USER_GRANT else list(call.get("roleKeys") or []),
            self.timeout,
        )
