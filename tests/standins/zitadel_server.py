"""A ZITADEL admin API test server: real HTTP on 127.0.0.1, in-memory state, fault injection.

It implements the part of the contract the tool relies on (docs/zitadel-import-api.md): bearer-token auth,
``POST /admin/v1/import`` (``dataOrgs`` and ``dataOrgsv1`` bodies, request validation, per-item
errors, the server-side ``timeout``), ``POST /admin/v1/events/_search``, ``POST /admin/v1/export``
and ``POST /oauth/v2/token`` (client credentials and JWT profile).

In tests::

    server = ZitadelServer(tokens={"secret-pat"}).start()
    server.faults.per_user_delay = 0.002            # 2 ms of "work" per imported user
    server.faults.inject("429", count=2)            # the next two import calls are throttled
    server.faults.randomize(0.3, seed=7)            # or: 30% of calls fail in some way
    ... call server.url ...
    server.stop()

Standalone (e.g. from run_local.sh)::

    python tests/standins/zitadel_server.py --port 8089 --token-file /tmp/pat --per-user-delay-ms 2

It needs only what ``./run_local.sh`` installs: argon2-cffi, PyJWT and protobuf are imported by the
first request that needs them, and a missing one is answered with a 500 naming it
(tests/standins/optional_deps.py).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import random
import re
import secrets
import socket
import sys
import threading
import time
import weakref
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Beside this file (also when run as a script). Nothing else outside the standard library is
# imported here: PyJWT, protobuf and argon2-cffi come with the requests that need them
# (optional_deps.py), so the server runs after `./run_local.sh`, which installs no test extras.
import passwap_rules
import zitadel_actions_v2 as actions_v2
import zitadel_authorization_v2 as authorization_v2
import zitadel_user_v2_create as user_v2_create
from capacity import Capacity, add_capacity, add_capacity_arguments, print_summary
from optional_deps import MissingDependency, optional
from zitadel_management_v1 import ManagementError, ManagementV1
from zitadel_user_v2 import UserServiceV2, V2Error, gateway_body, initial_state

__all__ = ["ZitadelServer", "Faults", "FAULT_KINDS", "parse_go_duration", "take_v2_schema_problems", "main"]

_LOGGER = logging.getLogger(__name__)

# Kinds of injected faults. "slow", "drop_after", "504_after" and "deadline_after" happen *after*
# the call did its work, which is what makes retries non-idempotent in real life (the client never
# saw the answer); "deadline" imports half of the users, then answers like an elapsed server-side
# timeout. "deadline_after" is ZITADEL's own answer when the request's deadline passed as the
# command committed: grpc-gateway's DefaultHTTPErrorHandler writes the status as JSON with the code
# mapped by HTTPStatusFromCode (DeadlineExceeded → 504), and internal/api/grpc/server/gateway.go
# keeps that handler: HTTP 504 ``{"code": 4, "message": "context deadline exceeded"}`` (the
# authorization service, a Connect handler: 504 ``{"code": "deadline_exceeded", ...}``).
# "503" is a load balancer's answer for a request it sent nowhere ("no healthy upstream").
FAULT_KINDS = ("429", "502", "503", "504", "drop", "drop_after", "slow", "deadline", "504_after")
FAULT_KINDS += ("deadline_after",)
_DEADLINE_BODY = {"code": 4, "message": "context deadline exceeded"}
# Not among the random kinds (they cost a client timeout each): "hang" reads the request and never
# answers, until the client gives up or ``Faults.hang_seconds`` pass.
# "late" reads the request, waits until the client gives up (closes), then does the work and
# closes too: a call that lands after the client timed out (docs/sync.md#unknown-outcomes).
_ALL_KINDS = FAULT_KINDS + ("hang", "late")

# Every server of the process, so the suite can collect what the v2 schema check recorded
# (tests/conftest.py) without each test naming its servers.
_LIVE: weakref.WeakSet[ZitadelServer] = weakref.WeakSet()


def take_v2_schema_problems() -> list[str]:
    """The schema problems every live server recorded since the last call (and forget them)."""
    problems = []
    for server in list(_LIVE):
        problems += server.v2_schema_problems
        server.v2_schema_problems.clear()
    return problems


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> float:
    """Parse a Go duration string (``5m0s``, ``1.5s``, ``300ms``) into seconds.

    >>> parse_go_duration("5m0s")
    300.0
    """
    if not text or text in ("0",):
        if text == "0":
            return 0.0
        raise ValueError("empty duration")
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            raise ValueError(f"invalid duration {text!r}")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ValueError(f"invalid duration {text!r}")
    return total


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _normalise_keys(value: Any) -> Any:
    """protojson accepts snake_case field names on input: fold them into lowerCamel."""
    if isinstance(value, dict):
        return {_camel(k): _normalise_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise_keys(v) for v in value]
    return value


def _now_rfc3339() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")


class _InvalidArgument(Exception):
    """Request validation failed: the whole request is rejected (gRPC code 3, HTTP 400)."""


def _check_len(value: Any, field: str, low: int, high: int) -> None:
    if not isinstance(value, str) or not low <= len(value) <= high:
        raise _InvalidArgument(
            f"invalid ImportHumanUserRequest.{field}: value length must be between {low} and {high} runes, inclusive"
        )


def validate_human_user(entry: dict) -> None:
    """The import API's request validation for one humanUsers entry (raises _InvalidArgument)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("user"), dict):
        raise _InvalidArgument("invalid DataHumanUser.User: value is required")
    user = entry["user"]
    _check_len(user.get("userName"), "UserName", 1, 200)
    profile = user.get("profile")
    if not isinstance(profile, dict):
        raise _InvalidArgument("invalid ImportHumanUserRequest.Profile: value is required")
    _check_len(profile.get("firstName"), "Profile.FirstName", 1, 200)
    _check_len(profile.get("lastName"), "Profile.LastName", 1, 200)
    lang = profile.get("preferredLanguage")
    if lang is not None and len(str(lang)) > 10:
        raise _InvalidArgument(
            "invalid ImportHumanUserRequest_Profile.PreferredLanguage: value length must be at most 10 runes"
        )
    email = user.get("email")
    if not isinstance(email, dict) or not _EMAIL.match(str(email.get("email", ""))):
        raise _InvalidArgument(
            "invalid ImportHumanUserRequest_Email.Email: value must be a valid email address"
        )
    phone = user.get("phone")
    if phone:
        number = str(phone.get("phone", ""))
        if not number.startswith("+") or len(number) > 50:
            raise _InvalidArgument(
                "invalid ImportHumanUserRequest_Phone.Phone: value must start with +, at most 50"
            )
    # hashedPassword has no request-level rule: the server's passwap verifiers judge it per user
    # (ZitadelServer.hash_verifiers / hash_limits, tests/passwap_rules.server_refusal).


@dataclasses.dataclass
class _Fault:
    kind: str
    path: str


class Faults:
    """Switchable fault injection. All methods are thread-safe; tests flip them while serving.

    Scheduled faults (``inject``) fire first, in order; then ``randomize`` picks a random kind for
    the given fraction of matching calls. ``per_user_delay`` is the simulated import work per user.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[_Fault] = []
        self._rate = 0.0
        self._kinds: tuple[str, ...] = FAULT_KINDS
        self._paths: tuple[str, ...] = ("/admin/v1/import",)
        self._seed = 0
        self._seen: dict[bytes, int] = {}  # request digest -> times it came (``randomize``)
        self.per_user_delay = 0.0
        self.retry_after = "0"
        self.slow_seconds = 1.0
        self.dropped_user_ids: set[str] = set()
        self.auth_as_500 = False
        self.fired: list[str] = []
        # Answers to ``drip_paths`` go out ``drip_bytes_per_second`` bytes a second (0: at once),
        # status line and headers included: a server that answers, but too slowly to finish.
        self.drip_bytes_per_second = 0.0
        self.drip_paths: tuple[str, ...] = ("/admin/v1/import",)
        self.hang_seconds = 60.0
        # "late": seconds the server still holds a request after its client gave up, before the
        # work is done (a stalled server that resumes; 0: at once).
        self.late_seconds = 0.0
        self._silent: list | None = None  # [calls still answered, path, kind]
        self._answers: dict[str, list] = {}  # path -> [calls answered normally first, body]

    def inject(self, kind: str, count: int = 1, path: str = "/admin/v1/import") -> None:
        """Make the next ``count`` calls to ``path`` fail with ``kind`` (one of FAULT_KINDS)."""
        if kind not in _ALL_KINDS:
            raise ValueError(kind)
        with self._lock:
            self._queue.extend(_Fault(kind, path) for _ in range(count))

    def randomize(
        self,
        rate: float,
        kinds: Iterable[str] = FAULT_KINDS,
        paths: Iterable[str] = ("/admin/v1/import",),
        seed: int = 0,
    ) -> None:
        """Fail ``rate`` of the calls to ``paths`` with a random kind from ``kinds``.

        Whether a call fails is drawn from ``seed``, its path, its body and how many times the same
        request came before, not from the order calls arrive in: a request meets the same faults on
        every run, whatever order several threads reach the server in. The kinds take turns."""
        with self._lock:
            self._rate, self._kinds, self._paths = rate, tuple(kinds), tuple(paths)
            self._seed = seed
            self._seen.clear()

    def silent_after(self, calls: int, kind: str = "drop", path: str = "/admin/v1/import") -> None:
        """Answer the next ``calls`` calls to ``path``, then fail every later one with ``kind``
        (``drop``: closed without an answer, ``hang``: never answered): a server gone mid-run."""
        if kind not in _ALL_KINDS:
            raise ValueError(kind)
        with self._lock:
            self._silent = [calls, path, kind]

    def wrong_answer(self, body: bytes, path: str = "/admin/v1/import", skip: int = 0) -> None:
        """After ``skip`` normal answers, answer every call to ``path`` with HTTP 200 and ``body``
        (JSON of the wrong shape, a page): a proxy or another service behind the URL."""
        with self._lock:
            self._answers[path] = [skip, body]

    def answer_for(self, path: str) -> bytes | None:
        with self._lock:
            entry = self._answers.get(path)
            if entry is None:
                return None
            if entry[0] > 0:
                entry[0] -= 1
                return None
            return entry[1]

    def drips(self, path: str) -> float:
        """Bytes per second for answers to ``path`` (0: not dripped)."""
        return self.drip_bytes_per_second if path in self.drip_paths else 0.0

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
            self._rate = 0.0
            self._silent = None
            self._answers.clear()

    def drop_user(self, user_id: str) -> None:
        """Accept ``user_id`` in imports (reported as created) but never store it or emit its event."""
        with self._lock:
            self.dropped_user_ids.add(user_id)

    def next_fault(self, path: str, body: bytes = b"") -> str | None:
        with self._lock:
            if self._silent is not None and _matches(self._silent[1], path):
                if self._silent[0] <= 0:
                    self.fired.append(self._silent[2])
                    return self._silent[2]
                self._silent[0] -= 1
            for i, fault in enumerate(self._queue):
                # A path ending in "*" matches by prefix (user service v2 paths carry user ids).
                if fault.path == path or (fault.path.endswith("*") and path.startswith(fault.path[:-1])):
                    del self._queue[i]
                    self.fired.append(fault.kind)
                    return fault.kind
            matches = path in self._paths or any(
                p.endswith("*") and path.startswith(p[:-1]) for p in self._paths
            )
            if matches and self._rate:
                request = hashlib.sha256(path.encode() + b"\0" + body).digest()
                nth = self._seen.get(request, 0)
                self._seen[request] = nth + 1
                draw = random.Random(b"%d:%d:" % (self._seed, nth) + request)
                if draw.random() < self._rate:  # the kinds take turns: a mix meets each of them
                    kind = self._kinds[len(self.fired) % len(self._kinds)]
                    self.fired.append(kind)
                    return kind
        return None


def _matches(pattern: str, path: str) -> bool:
    """``path`` is ``pattern``, or starts with it when it ends in ``*``."""
    return pattern == path or (pattern.endswith("*") and path.startswith(pattern[:-1]))


@dataclasses.dataclass
class _Event:
    sequence: int
    event_type: str
    aggregate_id: str
    aggregate_type: str
    resource_owner: str
    created: str
    payload: dict

    def to_json(self) -> dict:
        key = f"EventTypes.{self.event_type}"
        return {
            "editor": {"userId": "import-service-user", "displayName": "importer"},
            "aggregate": {
                "id": self.aggregate_id,
                "type": self.aggregate_type,
                "resourceOwner": self.resource_owner,
            },
            "sequence": str(self.sequence),
            "creationDate": self.created,
            "payload": self.payload,
            "type": {"type": self.event_type, "localized": {"key": key, "localizedMessage": key}},
        }


class _State:
    """Orgs, users, metadata and the event log. Guarded by one lock; imports sleep outside it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.orgs: dict[str, dict] = {}
        self.users: dict[str, tuple[str, dict]] = {}  # userId -> (orgId, ImportHumanUserRequest)
        self.user_names: set[str] = set()
        self.metadata: dict[tuple[str, str], str] = {}
        self.events: list[_Event] = []
        self.import_calls = 0
        self.created_count: dict[str, int] = {}
        # (start, end, org ids, first user id, users) per finished import call: ordering checks.
        self.import_log: list[tuple[float, float, tuple[str, ...], str, int]] = []
        # Export documents (dataOrgsv1) carry more than users; kept so an export round-trips.
        self.machines: dict[str, tuple[str, dict]] = {}  # userId -> (orgId, AddMachineUserRequest)
        self.org_fields: dict[str, dict[str, Any]] = {}  # orgId -> org-level field -> value / items
        self.projects: dict[str, str] = {}  # projectId -> owning orgId
        # projectId -> lower-cased key -> key: ZITADEL's role keys are unique without case.
        self.project_roles: dict[str, dict[str, str]] = {}
        # (orgId, userId, projectId, projectGrantId) -> grant id: at most one grant per user and project.
        self.user_grants: dict[tuple[str, str, str, str], str] = {}
        self.grant_keys: dict[str, list[str]] = {}  # grant id -> role keys (management v1 reads them)
        self.project_grants: dict[str, tuple[str, str, str]] = {}  # grantId -> (owner, project, granted org)
        self.user_records: dict[str, list[dict]] = {}  # orgId -> [{"field", "item"}] (grants, members, links)
        # User service v2 (tests/standins/zitadel_user_v2.py): active | initial | inactive | locked | removed.
        self.user_states: dict[str, str] = {}
        self.locked_from: dict[str, str] = {}

    def emit(self, event_type: str, agg_id: str, agg_type: str, owner: str, payload: dict) -> None:
        self.events.append(
            _Event(len(self.events) + 1, event_type, agg_id, agg_type, owner, _now_rfc3339(), payload)
        )


class _DeadlineExceeded(Exception):
    pass


def data_is_absent(request: dict) -> bool:
    """No inline document in an ImportDataRequest (the file/bucket variants)."""
    return request.get("dataOrgs") is None and request.get("dataOrgsv1") is None


class _ListeningServer(ThreadingHTTPServer):
    """A thread per connection, and a listen backlog as deep as a Go server's (the kernel's
    somaxconn): socketserver's default of 5 drops the SYNs of a burst of new connections, which
    the client's kernel sends again only after a second, so a push opening 32 connections at once
    saw one-second stragglers that ZITADEL would not cause."""

    daemon_threads = True
    request_queue_size = 4096


class ZitadelServer:
    """The server: ``start()`` serves on an ephemeral port in a daemon thread, ``stop()`` ends it.

    ``tokens`` are PATs (never expire). ``clients`` maps client id → secret for client
    credentials, ``keys`` maps key id → (user id, public key PEM) for the JWT profile; tokens issued
    by ``/oauth/v2/token`` live ``token_ttl`` seconds.
    """

    def __init__(
        self,
        tokens: Iterable[str] = (),
        clients: dict[str, str] | None = None,
        keys: dict[str, tuple[str, bytes]] | None = None,
        token_ttl: int = 3600,
        host: str = "127.0.0.1",
        port: int = 0,
        hash_verifiers: Iterable[str] = ("bcrypt",),
        hash_limits: dict[str, int] | None = None,
    ) -> None:
        # SystemDefaults.PasswordHasher: the hasher (bcrypt) plus Verifiers, and Limits.
        self.hash_verifiers = frozenset(hash_verifiers) | {"bcrypt"}
        self.hash_limits = {**passwap_rules.DEFAULT_LIMITS, **(hash_limits or {})}
        self.faults = Faults()
        self.capacity = Capacity()  # workers, queue, rate limit (tests/standins/capacity.py)
        self.state = _State()
        self.token_ttl = token_ttl
        self.clients = dict(clients or {})
        self.keys = dict(keys or {})
        self._tokens: dict[str, float] = {t: float("inf") for t in tokens}
        self._tokens_lock = threading.Lock()
        self.issued_tokens: list[str] = []
        self.requests: list[tuple[str, int]] = []  # (path, status) of every answered request
        self.v2_requests: list[tuple[str, str, dict | None]] = []  # (method, path, body) of v2 calls
        self.refusals: list[tuple[str, str]] = []  # (path, message) of every call answered an error
        # What ZITADEL's published user service v2 schema refuses in those calls (check_v2_schema).
        self.v2_schema_problems: list[str] = []
        self._httpd = _ListeningServer((host, port), _make_handler(self))
        self._thread: threading.Thread | None = None
        self.gcs_fetch = self._gcs_fetch_default
        self.gcs_store = self._gcs_store_default
        self.gcs_imports: list[dict] = []
        self._detached: list[threading.Thread] = []
        self.v2 = UserServiceV2(self)
        self.management = ManagementV1(self)
        # A server without the admin API, org-scoped tokens, a per-call cost (zitadel_user_v2_create.py).
        self.admin_api = True
        self.org_tokens: dict[str, frozenset[str]] = {}  # token → the orgs it may manage
        self.per_call_delay = 0.0
        # Which user service creates it serves (zitadel_user_v2_create.py): AddHumanUser (gone on a
        # server past its deprecation), CreateUser (``POST /v2/users/new``, absent before it), and
        # whether CreateUser keeps the metadata it is given (False: zitadel/zitadel#11826).
        self.add_human_user = True
        self.create_user = True
        self.create_user_keeps_metadata = False
        # The authorization service v2 (zitadel_authorization_v2.py); False: a server without it.
        self.authorization_v2 = True
        self.dropped_fields: set[str] = set()  # create fields an older server's gateway discards
        self.max_query_limit = 1000  # SystemDefaults.MaxQueryLimit: a larger ListUsers page is refused
        self.quota_exhausted = False  # every call answers the quota's 429 (QUOTA-vjAy8)
        _LIVE.add(self)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ZitadelServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="zitadel-test-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ZitadelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- tokens -----------------------------------------------------------------------------
    def add_token(self, token: str, ttl: float | None = None) -> None:
        with self._tokens_lock:
            self._tokens[token] = float("inf") if ttl is None else time.time() + ttl

    def revoke_all_tokens(self) -> None:
        with self._tokens_lock:
            self._tokens.clear()

    def token_state(self, token: str) -> str:
        with self._tokens_lock:
            expiry = self._tokens.get(token)
        if expiry is None:
            return "invalid"
        return "valid" if time.time() < expiry else "expired"

    def issue_token(self) -> dict:
        token = "tok_" + secrets.token_urlsafe(24)
        self.add_token(token, self.token_ttl)
        self.issued_tokens.append(token)
        return {"access_token": token, "token_type": "Bearer", "expires_in": self.token_ttl}

    # --- views for tests ---------------------------------------------------------------------
    def user_ids(self, org_id: str | None = None) -> set[str]:
        with self.state.lock:
            return {uid for uid, (org, _) in self.state.users.items() if org_id is None or org == org_id}

    def added_event_counts(self) -> dict[str, int]:
        """user id → number of ``user.human.added`` events (exactly-once checks)."""
        counts: dict[str, int] = {}
        with self.state.lock:
            for event in self.state.events:
                if event.event_type == "user.human.added":
                    counts[event.aggregate_id] = counts.get(event.aggregate_id, 0) + 1
        return counts

    # --- endpoints ---------------------------------------------------------------------------
    def check_v2_schema(self, method: str, target: str, body: dict | None) -> tuple[int, int, str] | None:
        """The error to answer when a v2 request breaks ZITADEL's published schema (recorded in
        ``v2_schema_problems``), or None. No route → 404 as the REST gateway answers; anything
        else → 400 with gRPC code 3 (docs/sync.md#schema-check)."""
        schema_check_v2 = optional("schema_check_v2", "protobuf", "checking a user service v2 request")
        route, problems = schema_check_v2.checker().check_request(method, target, body)
        if not problems:
            return None
        self.v2_schema_problems.extend(f"{method} {target}: {problem}" for problem in problems)
        if route is None:
            return 404, 5, "Not Found"
        return 400, 3, "invalid " + "; ".join(problems)

    def import_data(self, request: dict, stop_after: int | None = None) -> dict:
        """Process an ImportDataRequest; raises _InvalidArgument or _DeadlineExceeded.

        ``stop_after`` simulates the server timeout elapsing after that many users.
        """
        started = time.monotonic()
        request = _normalise_keys(request)
        gcs = request.get("dataOrgsv1Gcs") or request.get("dataOrgsGcs")
        if gcs is not None and data_is_absent(request):
            return self._import_detached(request, gcs)
        data = request.get("dataOrgs") or request.get("dataOrgsv1")
        if data is None:
            raise _InvalidArgument(
                "invalid ImportDataRequest: only inline dataOrgs / dataOrgsv1 are supported here"
            )
        try:
            timeout = parse_go_duration(str(request.get("timeout", "")))
        except ValueError as err:
            raise _InvalidArgument(f"invalid ImportDataRequest.Timeout: {err}") from None
        orgs = data.get("orgs") or []
        for org in orgs:
            for entry in org.get("humanUsers") or []:
                validate_human_user(entry)
        deadline = started + timeout
        errors: list[dict] = []
        success: list[dict] = []
        with self.state.lock:
            self.state.import_calls += 1
        users = [str(u.get("userId", "")) for org in orgs for u in org.get("humanUsers") or []]
        budget = [len(users) if stop_after is None else stop_after]
        try:
            for org in orgs:
                success.append(self._import_org(org, errors, started, deadline, budget))
            # Like ZITADEL: grants, members and links after every org's resources and users.
            for org in orgs:
                self._import_project_grants(org, errors)
            for org in orgs:
                self._import_org_records(org, errors)
        finally:
            with self.state.lock:
                self.state.import_log.append(
                    (
                        started,
                        time.monotonic(),
                        tuple(str(o.get("orgId", "")) for o in orgs),
                        users[0] if users else "",
                        len(users),
                    )
                )
        response: dict[str, Any] = {}
        if errors:
            response["errors"] = errors
        response["success"] = {"orgs": success}
        return response

    def _import_org(
        self, org: dict, errors: list[dict], started: float, deadline: float, budget: list[int]
    ) -> dict:
        org_id = str(org.get("orgId", ""))
        result: dict[str, Any] = {"orgId": org_id}
        with self.state.lock:
            if org_id in self.state.orgs:
                errors.append(
                    {
                        "type": "org",
                        "id": org_id,
                        "message": "ID=ORG-lapo2m Message=Errors.Org.AlreadyExisting",
                    }
                )
            else:
                self.state.orgs[org_id] = {"name": (org.get("org") or {}).get("name", org_id)}
                self.state.emit("org.added", org_id, "org", org_id, {"name": self.state.orgs[org_id]["name"]})
        self._import_org_fields(org_id, org, errors)
        created: list[str] = []
        delay = self.faults.per_user_delay or self.capacity.per_user_cost
        for i, entry in enumerate(org.get("humanUsers") or []):
            # Sleep to a schedule (not per call) so thousands of 2 ms "users" add up accurately.
            if delay:
                wait = started + (i + 1) * delay - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            if time.monotonic() > deadline or budget[0] <= 0:
                raise _DeadlineExceeded()
            budget[0] -= 1
            user_id = str(entry.get("userId", "")) or f"gen-{secrets.token_hex(8)}"  # server-assigned
            user = entry["user"]
            hashed = user.get("hashedPassword")
            if isinstance(hashed, dict) and hashed.get("value"):
                refusal = passwap_rules.server_refusal(
                    str(hashed["value"]), self.hash_verifiers, self.hash_limits
                )
                if refusal is not None:  # this user fails; the rest of the body imports
                    errors.append({"type": "human_user", "id": user_id, "message": refusal})
                    continue
            with self.state.lock:
                if user_id in self.state.users and self.state.user_states.get(user_id) == "removed":
                    # A removed user's id is free again (ZITADEL keeps ids unique per instance
                    # only among existing users).
                    del self.state.users[user_id]
                if user_id in self.state.users:
                    errors.append(
                        {
                            "type": "human_user",
                            "id": user_id,
                            "message": "ID=COMMAND-ziuna Message=Errors.User.AlreadyExisting",
                        }
                    )
                    continue
                if user["userName"] in self.state.user_names:
                    errors.append(
                        {
                            "type": "human_user",
                            "id": user_id,
                            "message": "ID=V3-DKcYh Message=Errors.User.AlreadyExists",
                        }
                    )
                    continue
                created.append(user_id)
                if user_id in self.faults.dropped_user_ids:
                    continue  # accepted and reported, but lost: what verify must catch
                if user.get("passwordChangeRequired") and (user.get("hashedPassword") or {}).get("value"):
                    # The import drops the flag whenever a hash is given (internal/command/
                    # user_human.go createAddHumanEvent: AddPasswordData(human.HashedPassword, false)).
                    user = {k: v for k, v in user.items() if k != "passwordChangeRequired"}
                self.state.users[user_id] = (org_id, user)
                self.state.user_states[user_id] = initial_state(user)
                self.state.user_names.add(user["userName"])
                self.state.created_count[user_id] = self.state.created_count.get(user_id, 0) + 1
                profile = user.get("profile", {})
                self.state.emit(
                    "user.human.added",
                    user_id,
                    "user",
                    org_id,
                    {
                        "userName": user["userName"],
                        "firstName": profile.get("firstName"),
                        "lastName": profile.get("lastName"),
                        "email": user.get("email", {}).get("email"),
                    },
                )
        if created:
            result["humanUserIds"] = created
        machine_ids = self._import_machines(org_id, org, errors)
        if machine_ids:
            result["machineUserIds"] = machine_ids
        metadata_ok: list[dict] = []
        for item in org.get("userMetadata") or []:
            user_id, key = str(item.get("id", "")), str(item.get("key", ""))
            with self.state.lock:
                if user_id in self.faults.dropped_user_ids:
                    metadata_ok.append({"userId": user_id, "key": key})
                    continue
                if user_id not in self.state.users and user_id not in self.state.machines:
                    errors.append(
                        {
                            "type": "user_metadata",
                            "id": f"{user_id}_{key}",
                            "message": "ID=COMMAND-fsf43 Message=Errors.User.NotFound",
                        }
                    )
                    continue
                self.state.metadata[(user_id, key)] = str(item.get("value", ""))
                self.state.emit("user.metadata.set", user_id, "user", org_id, {"key": key})
            metadata_ok.append({"userId": user_id, "key": key})
        if metadata_ok:
            result["userMetadata"] = metadata_ok
        return result

    # --- export documents (dataOrgsv1): org-level resources, machine users, grants, members -------
    _USER_RECORDS = {
        "userGrants": ("user_grant", "userId"),
        "orgMembers": ("org_member", "userId"),
        "projectMembers": ("project_member", "userId"),
        "projectGrantMembers": ("project_grant_member", "userId"),
        "userLinks": ("user_link", "userId"),
        "machineKeys": ("machine_user_key", "userId"),
    }
    _NOT_ORG_LEVEL = {"orgId", "org", "humanUsers", "machineUsers", "userMetadata", "projectGrants"}

    def _import_org_fields(self, org_id: str, org: dict, errors: list[dict]) -> None:
        """Org-level resources: stored as given; projects are registered (grants check them), and
        project roles after them (a role needs its project; keys are unique without case)."""
        with self.state.lock:
            stored = self.state.org_fields.setdefault(org_id, {})
            fields = sorted(org.items(), key=lambda kv: kv[0] == "projectRoles")
            for field, value in fields:
                if field in self._NOT_ORG_LEVEL or field in self._USER_RECORDS:
                    continue
                if field == "projectRoles" and isinstance(value, list):
                    self._import_project_roles(org_id, value, stored.setdefault(field, []), errors)
                    continue
                if not isinstance(value, list):
                    stored[field] = value
                    continue
                items = stored.setdefault(field, [])
                for item in value:
                    if field == "projects":
                        project_id = str(item.get("projectId", ""))
                        if project_id in self.state.projects:
                            errors.append(
                                {
                                    "type": "project",
                                    "id": project_id,
                                    "message": "ID=PROJECT-1n8df Message=Errors.Project.AlreadyExisting",
                                }
                            )
                            continue
                        self.state.projects[project_id] = org_id
                        self.state.emit(
                            "project.added",
                            project_id,
                            "project",
                            org_id,
                            {"name": (item.get("project") or {}).get("name")},
                        )
                    if item in items:
                        continue
                    items.append(item)

    def _import_project_roles(self, org_id: str, roles: list, items: list, errors: list[dict]) -> None:
        """Like ZITADEL's AddProjectRole (called with the lock held)."""
        for item in roles:
            project_id, key = str(item.get("projectId", "")), str(item.get("roleKey", ""))
            ident = f"{project_id}_{key}"
            if self.state.projects.get(project_id) != org_id:
                errors.append(
                    {
                        "type": "project_role",
                        "id": ident,
                        "message": "ID=COMMA-VCnwD Message=Errors.Project.NotFound",
                    }
                )
                continue
            known = self.state.project_roles.setdefault(project_id, {})
            if key.lower() in known:
                errors.append(
                    {
                        "type": "project_role",
                        "id": ident,
                        "message": "ID=V3-DKcYh Message=Errors.Project.Role.AlreadyExists",
                    }
                )
                continue
            known[key.lower()] = key
            items.append(item)
            self.state.emit(
                "project.role.added",
                project_id,
                "project",
                org_id,
                {"key": key, "displayName": item.get("displayName"), "group": item.get("group")},
            )

    def _user_grant_problem(self, org_id: str, item: dict) -> str | None:
        """A grant's roles must exist in its project, exactly; one grant per user and project."""
        project_id = str(item.get("projectId", ""))
        roles = self.state.project_roles.get(project_id, {})
        for key in item.get("roleKeys") or []:
            if roles.get(str(key).lower()) != key:
                return "ID=COMMAND-mm9F4 Message=Errors.Project.Role.NotFound"
        unique = (org_id, str(item.get("userId", "")), project_id, str(item.get("projectGrantId") or ""))
        if unique in self.state.user_grants:
            return "ID=V3-DKcYh Message=Errors.UserGrant.AlreadyExists"
        return None

    def _import_machines(self, org_id: str, org: dict, errors: list[dict]) -> list[str]:
        created = []
        for entry in org.get("machineUsers") or []:
            user_id = str(entry.get("userId", ""))
            user = entry.get("user") or {}
            with self.state.lock:
                if user_id in self.state.machines or user_id in self.state.users:
                    errors.append(
                        {
                            "type": "machine_user",
                            "id": user_id,
                            "message": "ID=COMMAND-k2una Message=Errors.User.AlreadyExisting",
                        }
                    )
                    continue
                if not user.get("userName"):
                    errors.append(
                        {
                            "type": "machine_user",
                            "id": user_id,
                            "message": "ID=COMMAND-bm3Xw Message=Errors.User.Invalid",
                        }
                    )
                    continue
                self.state.machines[user_id] = (org_id, user)
                self.state.emit("user.machine.added", user_id, "user", org_id, {"userName": user["userName"]})
            created.append(user_id)
        return created

    def _import_project_grants(self, org: dict, errors: list[dict]) -> None:
        """A project grant needs its project (this org's) and the granted org."""
        org_id = str(org.get("orgId", ""))
        with self.state.lock:
            for grant in org.get("projectGrants") or []:
                inner = grant.get("projectGrant") or {}
                grant_id = str(grant.get("grantId", ""))
                project_id, granted = str(inner.get("projectId", "")), str(inner.get("grantedOrgId", ""))
                if grant_id in self.state.project_grants:
                    errors.append(
                        {
                            "type": "project_grant",
                            "id": grant_id,
                            "message": "ID=PROJECT-3b8fs Message=Errors.Project.Grant.AlreadyExists",
                        }
                    )
                elif self.state.projects.get(project_id) != org_id or granted not in self.state.orgs:
                    errors.append(
                        {
                            "type": "project_grant",
                            "id": grant_id,
                            "message": "ID=PROJECT-0l9sd Message=Errors.Project.NotFound",
                        }
                    )
                else:
                    self.state.project_grants[grant_id] = (org_id, project_id, granted)
                    self.state.org_fields.setdefault(org_id, {}).setdefault("projectGrants", []).append(grant)

    def _import_org_records(self, org: dict, errors: list[dict]) -> None:
        """Grants, members, links and machine keys; each names a user (and project) that exists."""
        org_id = str(org.get("orgId", ""))
        with self.state.lock:
            for field, (kind, id_key) in self._USER_RECORDS.items():
                for item in org.get(field) or []:
                    user_id = str(item.get(id_key, ""))
                    ident = f"{user_id}_{item.get('projectId') or item.get('idpId') or org_id}"
                    if field == "userGrants":  # ZITADEL's import id of a user grant
                        ident = f"{org_id}_{item.get('projectId')}_{user_id}"
                    stored = self.state.user_records.setdefault(org_id, [])
                    if user_id not in self.state.users and user_id not in self.state.machines:
                        errors.append(
                            {
                                "type": kind,
                                "id": ident,
                                "message": "ID=COMMAND-4M0fs Message=Errors.User.NotFound",
                            }
                        )
                    elif item.get("projectId") and item["projectId"] not in self.state.projects:
                        errors.append(
                            {
                                "type": kind,
                                "id": ident,
                                "message": "ID=PROJECT-2n8fs Message=Errors.Project.NotFound",
                            }
                        )
                    elif (item.get("projectGrantId") or item.get("grantId")) and (
                        item.get("projectGrantId") or item.get("grantId")
                    ) not in self.state.project_grants:
                        errors.append(
                            {
                                "type": kind,
                                "id": ident,
                                "message": "ID=PROJECT-8fn2s Message=Errors.Project.Grant.NotFound",
                            }
                        )
                    elif field == "userGrants" and self._user_grant_problem(org_id, item) is not None:
                        errors.append(
                            {"type": kind, "id": ident, "message": self._user_grant_problem(org_id, item)}
                        )
                    elif {"field": field, "item": item} in stored:
                        errors.append(
                            {
                                "type": kind,
                                "id": ident,
                                "message": "ID=COMMAND-2n8ds Message=Errors.AlreadyExisting",
                            }
                        )
                    else:
                        stored.append({"field": field, "item": item})
                        if field == "userGrants":
                            grant_id = f"grant-{secrets.token_hex(6)}"
                            unique = (
                                org_id,
                                user_id,
                                str(item.get("projectId", "")),
                                str(item.get("projectGrantId") or ""),
                            )
                            self.state.user_grants[unique] = grant_id
                            self.state.grant_keys[grant_id] = list(item.get("roleKeys") or [])
                            self.state.emit(
                                "user.grant.added",
                                grant_id,
                                "usergrant",
                                org_id,
                                {
                                    "userId": user_id,
                                    "projectId": item.get("projectId"),
                                    "roleKeys": list(item.get("roleKeys") or []),
                                },
                            )

    def _import_detached(self, request: dict, gcs: dict) -> dict:
        """dataOrgsv1Gcs: read the document from the bucket and import it in the background.

        Like ZITADEL, the answer is empty and comes at once; results only reach the server's log
        (``gcs_imports`` here). ``gcs_fetch(bucket, path, serviceaccount_json_bytes)`` reads it.
        """
        timeout = request.get("timeout") or ""
        try:
            parse_go_duration(str(timeout))
            account = base64.b64decode(str(gcs.get("serviceaccountJson", "")), validate=True)
        except ValueError as err:
            raise _InvalidArgument(f"invalid ImportDataRequest: {err}") from None
        v1 = "dataOrgsv1Gcs" in request

        def work() -> None:
            entry: dict[str, Any] = {"bucket": gcs.get("bucket"), "path": gcs.get("path")}
            try:
                document = json.loads(self.gcs_fetch(str(gcs.get("bucket")), str(gcs.get("path")), account))
                key = "dataOrgsv1" if v1 else "dataOrgs"
                entry["answer"] = self.import_data({key: document, "timeout": timeout})
            except Exception as err:  # noqa: BLE001 - the detached import only logs (like ZITADEL)
                entry["error"] = f"{type(err).__name__}: {err}"
            self.gcs_imports.append(entry)

        thread = threading.Thread(target=work, name="detached-import", daemon=True)
        thread.start()
        self._detached.append(thread)
        return {}

    def wait_detached(self, timeout: float = 30.0) -> None:
        """Wait for the background (GCS) imports started so far."""
        for thread in list(self._detached):
            thread.join(timeout)

    @staticmethod
    def _gcs_store_default(bucket: str, path: str, account: bytes, data: bytes) -> None:
        del account
        from google.cloud import storage

        storage.Client(project="test-project").bucket(bucket).blob(path).upload_from_string(data)

    @staticmethod
    def _gcs_fetch_default(bucket: str, path: str, account: bytes) -> bytes:
        del account  # the emulator (STORAGE_EMULATOR_HOST) needs no credentials of its own
        from google.cloud import storage

        return storage.Client(project="test-project").bucket(bucket).blob(path).download_as_bytes()

    def user_records(self, org_id: str) -> list[dict]:
        """The grants, members and links stored for an org (``{"field", "item"}``)."""
        with self.state.lock:
            return [dict(r) for r in self.state.user_records.get(org_id, [])]

    def search_events(self, request: dict) -> dict:
        request = _normalise_keys(request)
        types = set(request.get("eventTypes") or [])
        if len(types) > 30:
            raise _InvalidArgument("invalid ListEventsRequest.EventTypes: at most 30 items")
        agg_types = set(request.get("aggregateTypes") or [])
        owner = request.get("resourceOwner") or ""
        agg_id = request.get("aggregateId") or ""
        sequence = int(request.get("sequence") or 0)
        asc = bool(request.get("asc"))
        limit = min(int(request.get("limit") or 100), 1000)
        with self.state.lock:
            events = list(self.state.events)
        if not asc:
            events.reverse()
        out: list[dict] = []
        for event in events:
            if sequence and (event.sequence <= sequence if asc else event.sequence >= sequence):
                continue
            if types and event.event_type not in types:
                continue
            if agg_types and event.aggregate_type not in agg_types:
                continue
            if owner and event.resource_owner != owner:
                continue
            if agg_id and event.aggregate_id != agg_id:
                continue
            out.append(event.to_json())
            if len(out) >= limit:
                break
        return {"events": out}

    def export(self, request: dict) -> dict:
        request = _normalise_keys(request)
        gcs = request.get("gcsOutput")
        if not request.get("responseOutput") and not gcs:
            raise _InvalidArgument("only responseOutput and gcsOutput are supported by the test server")
        wanted = set(request.get("orgIds") or [])
        excluded = set(request.get("excludedOrgIds") or [])
        with_passwords = bool(request.get("withPasswords"))
        orgs: list[dict] = []
        with self.state.lock:
            for org_id, org in self.state.orgs.items():
                if (wanted and org_id not in wanted) or org_id in excluded:
                    continue
                users = []
                for user_id, (owner, user) in self.state.users.items():
                    if owner != org_id:
                        continue
                    copy = json.loads(json.dumps(user))
                    if not with_passwords:
                        copy.pop("hashedPassword", None)
                    if not request.get("withOtp"):
                        copy.pop("otpCode", None)
                    users.append({"userId": user_id, "user": copy})
                metadata = [
                    {"id": uid, "key": key, "value": value}
                    for (uid, key), value in self.state.metadata.items()
                    if self.state.users.get(uid, ("",))[0] == org_id
                ]
                entry: dict[str, Any] = {"orgId": org_id, "org": {"name": org["name"]}}
                entry.update(json.loads(json.dumps(self.state.org_fields.get(org_id, {}))))
                if users:
                    entry["humanUsers"] = users
                machines = [
                    {"userId": uid, "user": user}
                    for uid, (owner, user) in self.state.machines.items()
                    if owner == org_id
                ]
                if machines:
                    entry["machineUsers"] = machines
                metadata += [
                    {"id": uid, "key": key, "value": value}
                    for (uid, key), value in self.state.metadata.items()
                    if self.state.machines.get(uid, ("",))[0] == org_id
                ]
                if metadata:
                    entry["userMetadata"] = metadata
                for record in self.state.user_records.get(org_id, []):
                    entry.setdefault(record["field"], []).append(record["item"])
                orgs.append(entry)
        if gcs:
            try:
                account = base64.b64decode(str(gcs.get("serviceaccountJson", "")), validate=True)
            except ValueError as err:
                raise _InvalidArgument(f"invalid ExportDataRequest.GcsOutput: {err}") from None
            self.gcs_store(
                str(gcs.get("bucket")), str(gcs.get("path")), account, json.dumps({"orgs": orgs}).encode()
            )
            return {}
        return {"orgs": orgs}

    def token(self, form: dict[str, str], authorization: str) -> tuple[int, dict]:
        grant = form.get("grant_type", "")
        if grant == "client_credentials":
            if not authorization.startswith("Basic "):
                return 401, {"error": "invalid_client", "error_description": "client authentication required"}
            try:
                client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return 401, {"error": "invalid_client", "error_description": "malformed basic auth"}
            if client_id not in self.clients or not secrets.compare_digest(self.clients[client_id], secret):
                return 401, {"error": "invalid_client", "error_description": "client authentication failed"}
            return 200, self.issue_token()
        if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return self._jwt_profile(form.get("assertion", ""))
        return 400, {"error": "unsupported_grant_type", "error_description": f"grant_type {grant!r}"}

    def _jwt_profile(self, assertion: str) -> tuple[int, dict]:
        jwt = optional("jwt", "pyjwt", "the JWT-profile token grant")
        try:
            header = jwt.get_unverified_header(assertion)
            user_id, public_pem = self.keys[header.get("kid", "")]
            claims = jwt.decode(
                assertion,
                public_pem,
                algorithms=["RS256"],
                audience=[self.url, self.url + "/"],
                options={"require": ["iss", "sub", "aud", "iat", "exp"]},
            )
        except (KeyError, jwt.PyJWTError) as err:
            return 400, {
                "error": "invalid_grant",
                "error_description": f"assertion invalid: {type(err).__name__}",
            }
        if claims["iss"] != user_id or claims["sub"] != user_id or claims["exp"] - claims["iat"] > 3600:
            return 400, {"error": "invalid_grant", "error_description": "assertion claims invalid"}
        return 200, self.issue_token()


def _make_handler(server: ZitadelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            _LOGGER.debug("%s " + format, self.address_string(), *args)

        def _send(self, status: int, body: dict | bytes, headers: dict[str, str] | None = None) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            # Recorded before the answer goes out: a client reading the answer may look at once.
            server.requests.append((self.path, status))
            rate = server.faults.drips(self.path)
            if rate:
                self._drip(status, data, headers or {}, rate)
                return
            server.capacity.leave()  # its worker is free as the answer goes out: the client may call again
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing to answer
            self.close_connection = True

        def _drip(self, status: int, data: bytes, headers: dict[str, str], rate: float) -> None:
            head = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}"]
            head += ["Content-Type: application/json", f"Content-Length: {len(data)}", "Connection: close"]
            head += [f"{name}: {value}" for name, value in headers.items()]
            raw = ("\r\n".join(head) + "\r\n\r\n").encode() + data
            step = max(1, int(rate)) if rate >= 1 else 1
            try:
                for i in range(0, len(raw), step):
                    self.wfile.write(raw[i : i + step])
                    self.wfile.flush()
                    time.sleep(step / rate)
            except OSError:
                pass  # the client gave up (its deadline): what the fault is for
            self.close_connection = True

        def _error(self, status: int, code: int, message: str) -> None:
            body = gateway_body(code, message)  # "<text> (<id>)" and an ErrorDetail, as ZITADEL's gateway
            server.refusals.append((self.path, str(body["message"])))
            self._send(status, body)

        def _drop(self) -> None:
            # Close without a response: the client sees a reset / "remote end closed".
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.close_connection = True
            server.requests.append((self.path, 0))

        def do_PUT(self) -> None:  # noqa: N802 - stdlib naming
            self._guarded(lambda: self._v2("PUT"))

        def do_DELETE(self) -> None:  # noqa: N802 - stdlib naming
            self._guarded(lambda: self._v2("DELETE"))

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            self._guarded(lambda: self._v2("GET"))

        def do_PATCH(self) -> None:  # noqa: N802 - stdlib naming (SetSession)
            self._guarded(lambda: self._v2("PATCH"))

        def _guarded(self, handle) -> None:
            """Run ``handle``; a package the request needs but is not installed (optional_deps.py)
            is one line on stderr and a 500 naming it, before anything else was answered."""
            try:
                handle()
            except MissingDependency as err:
                print(f"zitadel_server: {err}", file=sys.stderr, flush=True)
                self._error(500, 13, str(err))
            finally:
                server.capacity.leave()

        def _read_and_fault(self) -> tuple[bytes, str | None, bool]:
            """The request's body and its fault; ``True`` when a fault already answered it."""
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            refusal = server.capacity.enter(self.path)  # queues for a worker, or refuses
            if refusal is not None:
                self._send(*refusal)
                return raw, None, True
            fault = server.faults.next_fault(self.path, raw)
            if fault == "hang":
                self._hang()
                return raw, fault, True
            if fault == "late":
                self._until_client_closes()
                time.sleep(server.faults.late_seconds)
            if fault in ("429", "502", "503", "504", "drop"):
                self._pre_fault(fault)
                return raw, fault, True
            return raw, fault, False

        def _v2(self, method: str) -> None:
            """User service v2 (tests/standins/zitadel_user_v2.py); faults match by path prefix."""
            raw, fault, answered = self._read_and_fault()
            if answered:
                return
            if not self._authorised():
                return
            if server.quota_exhausted:  # internal/api/grpc/server/middleware/limits_interceptor.go
                self._error(429, 8, "ID=QUOTA-vjAy8 Message=Errors.Quota.Access.Exhausted")
                return
            user_v2_create.call_cost(server)
            body = None
            if raw:
                try:
                    body = json.loads(raw)
                    if not isinstance(body, dict):
                        raise ValueError("not an object")
                except ValueError:
                    self._error(400, 3, "proto: syntax error (line 1:1): invalid JSON")
                    return
            absent = user_v2_create.absent_route(server, method, self.path)
            if absent is not None:
                self._error(*absent)
                return
            if authorization_v2.owns(self.path):
                self._authorization(body or {}, fault)
                return
            scope = user_v2_create.scope_refusal(server, method, self.path, body, self.headers)
            if scope is not None:
                self._error(*scope)
                return
            if self.path.startswith(
                "/management/v1/"
            ):  # user grants (tests/standins/zitadel_management_v1.py)
                try:
                    answer = server.management.handle(
                        method, self.path, body, self.headers.get("x-zitadel-orgid", "")
                    )
                except ManagementError as err:
                    self._error(err.status, err.code, err.message)
                    return
                self._send(200, answer)
                return
            if actions_v2.owns(
                method, self.path
            ):  # Actions v2, sessions, SetPassword (zitadel_actions_v2.py)
                try:
                    answer = actions_v2.handle(server, method, self.path, body)
                except V2Error as err:
                    self._error(err.status, err.code, err.message)
                    return
                self._answer_after_work(fault, answer)
                return
            server.v2_requests.append((method, self.path, body))
            refusal = server.check_v2_schema(method, self.path, body)
            if refusal is not None:
                self._error(*refusal)
                return
            try:
                if user_v2_create.owns(method, self.path):
                    answer = user_v2_create.handle(server, method, self.path, body, self.headers)
                else:
                    answer = server.v2.handle(method, self.path, body)
            except V2Error as err:
                self._error(err.status, err.code, err.message)
                return
            self._answer_after_work(fault, answer)

        def _answer_after_work(self, fault: str | None, answer: dict) -> None:
            """The answer of a call that did its work, or the fault that loses it."""
            if fault == "504_after":  # the change was made; the answer is lost in a gateway
                self._send(504, b"<html><body>gateway timeout</body></html>")
                return
            if fault == "deadline_after":  # the change was made as the request's deadline passed
                self._send(504, _DEADLINE_BODY)
                return
            if fault in ("drop_after", "silent", "late"):
                self._drop()
                return
            if fault == "slow":
                time.sleep(server.faults.slow_seconds)
            self._send(200, answer)

        def _authorization(self, body: dict, fault: str | None) -> None:
            """The authorization service v2, the Connect way (zitadel_authorization_v2.py)."""
            if not server.authorization_v2:  # no such procedure: the mux's plain 404
                server.refusals.append((self.path, "404 page not found"))
                self._send(404, b"404 page not found\n")
                return
            orgs = user_v2_create.token_orgs(server, self.headers)
            try:
                answer = authorization_v2.handle(server, self.path, body, orgs)
            except authorization_v2.ConnectError as err:
                connect = authorization_v2.connect_body(err.code, err.message)
                server.refusals.append((self.path, str(connect["message"])))
                self._send(err.status, connect)
                return
            if fault == "504_after":  # the change was made; the answer is lost in a gateway
                self._send(504, b"<html><body>gateway timeout</body></html>")
            elif fault == "deadline_after":  # Connect's deadline_exceeded is HTTP 504 too
                self._send(504, {"code": "deadline_exceeded", "message": "context deadline exceeded"})
            elif fault in ("drop_after", "silent", "late"):
                self._drop()
            else:
                self._send(200, answer)

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            self._guarded(self._post)

        def _post(self) -> None:
            if self.path.startswith(("/v2/", "/management/v1/", authorization_v2.SERVICE)):
                self._v2("POST")
                return
            raw, fault, answered = self._read_and_fault()
            if answered:
                return
            wrong = server.faults.answer_for(self.path)
            if wrong is not None:
                self._send(200, wrong)
                return
            if self.path == "/oauth/v2/token":
                form = dict(p.split("=", 1) if "=" in p else (p, "") for p in raw.decode().split("&") if p)
                from urllib.parse import unquote_plus

                form = {unquote_plus(k): unquote_plus(v) for k, v in form.items()}
                status, body = server.token(form, self.headers.get("Authorization", ""))
                self._send(status, body)
                return
            if not self._authorised():
                return
            if server.quota_exhausted:  # the same interceptor runs for the admin API
                self._error(429, 8, "ID=QUOTA-vjAy8 Message=Errors.Quota.Access.Exhausted")
                return
            refusal = user_v2_create.admin_refusal(server, self.path, self.headers)
            if refusal is not None:
                self._error(*refusal)
                return
            user_v2_create.call_cost(server)
            try:
                request = json.loads(raw or b"{}")
                if not isinstance(request, dict):
                    raise ValueError("not an object")
            except ValueError:
                self._error(400, 3, "proto: syntax error (line 1:1): invalid JSON")
                return
            try:
                if self.path == "/admin/v1/import":
                    users = sum(
                        len(o.get("humanUsers") or o.get("human_users") or [])
                        for o in (request.get("dataOrgs") or request.get("dataOrgsv1") or {}).get("orgs")
                        or []
                    )
                    body = server.import_data(request, users // 2 if fault == "deadline" else None)
                elif self.path == "/admin/v1/events/_search":
                    body = server.search_events(request)
                elif self.path == "/admin/v1/export":
                    body = server.export(request)
                else:
                    self._error(404, 5, "Not Found")
                    return
            except _InvalidArgument as err:
                self._error(400, 3, str(err))
                return
            except _DeadlineExceeded:
                self._error(504, 4, "context deadline exceeded")
                return
            if fault in ("drop_after", "late"):
                self._drop()
                return
            if fault == "504_after":  # the work was done; a gateway lost the answer
                self._send(504, b"<html><body>gateway timeout</body></html>")
                return
            if fault == "deadline_after":  # the work was done as the request's deadline passed
                self._send(504, _DEADLINE_BODY)
                return
            if fault == "slow":
                time.sleep(server.faults.slow_seconds)
            self._send(200, body)

        def _hang(self) -> None:
            # Read, then say nothing until the client closes or hang_seconds pass.
            self._until_client_closes()
            self._drop()

        def _until_client_closes(self) -> None:
            self.connection.settimeout(server.faults.hang_seconds)
            try:
                self.connection.recv(1)  # returns b"" when the client closes
            except OSError:
                pass

        def _pre_fault(self, fault: str) -> None:
            if fault == "drop":
                self._drop()
            elif fault == "429":
                self._send(
                    429,
                    {"code": 8, "message": "rate limit exceeded", "details": []},
                    {"Retry-After": server.faults.retry_after},
                )
            elif fault == "503":  # a load balancer with no backend to send the request to (Envoy's text)
                self._send(503, b"no healthy upstream")
            else:
                # What a load balancer in front of ZITADEL answers: not a gRPC-gateway body.
                self._send(int(fault), b"<html><body>upstream error</body></html>")

        def _authorised(self) -> bool:
            header = self.headers.get("Authorization", "")
            if not header.startswith("Bearer "):
                reason = "auth header missing"
            else:
                state = server.token_state(header[7:])
                if state == "valid":
                    return True
                reason = "Errors.Token.Invalid (AUTH-7fs1e)" if state == "invalid" else "Errors.Token.Expired"
            if server.faults.auth_as_500:
                # ZITADEL Cloud around v4.11 (zitadel/zitadel#11730).
                self._error(500, 2, f"rpc error: code = Unauthenticated desc = {reason} ()")
            else:
                self._error(401, 16, reason)
            return False

    return Handler


def main(argv: list[str] | None = None) -> int:
    """Run the server in the foreground until interrupted."""
    parser = argparse.ArgumentParser(description="ZITADEL admin API test server (loopback only)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--token-file", help="file holding a PAT the server accepts")
    parser.add_argument("--client-id", help="a client id accepted for client credentials")
    parser.add_argument("--client-secret-file", help="file holding that client's secret")
    parser.add_argument("--per-user-delay-ms", type=float, default=0.0, help="simulated import work per user")
    parser.add_argument("--token-ttl", type=int, default=3600, help="lifetime of issued tokens (seconds)")
    parser.add_argument(
        "--drip-bytes-per-second",
        type=float,
        default=0.0,
        help="send import answers this many bytes a second (a server too slow to finish; 0: off)",
    )
    parser.add_argument(
        "--hash-verifier",
        action="append",
        default=[],
        help="enable a passwap verifier (repeatable; bcrypt is always on)",
    )
    parser.add_argument(
        "--hash-limit",
        action="append",
        default=[],
        metavar="GROUP.KEY=N",
        help="override a limit, e.g. Argon2.MinMemory=7168 (repeatable)",
    )
    parser.add_argument(
        "--no-admin-api", action="store_true", help="answer /admin/v1/* as a server without it (404)"
    )
    parser.add_argument("--per-call-delay-ms", type=float, default=0.0, help="simulated cost of every call")
    parser.add_argument(
        "--org", action="append", default=[], help="an org that exists from the start (repeatable)"
    )
    add_capacity_arguments(parser)
    args = parser.parse_args(argv)
    tokens = []
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as handle:
            tokens.append(handle.read().strip())
    clients = {}
    if args.client_id and args.client_secret_file:
        with open(args.client_secret_file, encoding="utf-8") as handle:
            clients[args.client_id] = handle.read().strip()
    limits = {key: int(value) for key, _, value in (item.partition("=") for item in args.hash_limit)}
    server = ZitadelServer(
        tokens=tokens,
        clients=clients,
        token_ttl=args.token_ttl,
        port=args.port,
        hash_verifiers=args.hash_verifier,
        hash_limits=limits,
    )
    server.faults.per_user_delay = args.per_user_delay_ms / 1000.0
    add_capacity(server.capacity, args)
    server.faults.drip_bytes_per_second = args.drip_bytes_per_second
    server.admin_api = not args.no_admin_api
    server.per_call_delay = args.per_call_delay_ms / 1000.0
    for org_id in args.org:
        user_v2_create.add_org(server, org_id)
    print(server.url, flush=True)
    try:
        server._httpd.serve_forever()  # pylint: disable=protected-access
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()  # pylint: disable=protected-access
        print_summary(server.capacity)
    return 0


if __name__ == "__main__":
    sys.exit(main())
