"""``zitadel-beam push``: send the import bodies of a manifest to the admin import endpoint.

Examples::

    ZITADEL_TOKEN=$(cat pat.txt) zitadel-beam push --url=https://my.zitadel.cloud \\
        --manifest=out/importBody.manifest.json
    zitadel-beam push --url=... --manifest=... --key-file=sa-key.json --concurrency=2 --verify
    zitadel-beam push --url=... --manifest=... --client-id=importer --client-secret-file=secret.txt

What it does, per body (FACTS.md §1: the import is slow, not transactional, and rejects a whole
request for one invalid user):

- one cheap authenticated call first, so a bad URL or credential fails in a second;
- skip the body if its ledger file under ``--results`` says done for the same sha256;
- send it with retries (429/502/503/504, dropped connections, client timeouts); when the server's
  own timeout elapses (``context deadline exceeded``) send the users again in halves;
- ``Errors.User.AlreadyExisting`` means *present* (a retry after a lost answer, or a re-run), and
  ``Errors.Org.AlreadyExisting`` is success; every other per-user error goes to
  ``<results>/push-dead-letter.ndjson`` with the server's message (ids only, never hashes);
- the ledger is written atomically (temp file + rename), so a killed run resumes cleanly.

Exit status: 0 when every user is created or present, 1 otherwise, 2 for configuration errors.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import hashlib
import json
import logging
import os
import posixpath
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Iterable, TextIO

from pipeline.durations import parse_duration
from pipeline.errors import ConfigError
from pipeline.hash_report import warn_uncovered
from transforms import admin_api
from transforms.admin_api import AdminClient, Credentials

__all__ = [
    "add_arguments",
    "add_credential_arguments",
    "credentials_from_args",
    "connect",
    "run",
    "push_manifest",
    "load_manifest",
    "read_body",
    "Manifest",
    "BodyRef",
    "BodyResult",
    "PushReport",
    "split_body",
    "body_user_ids",
    "write_body_manifest",
]

_LOGGER = logging.getLogger(__name__)

DEAD_LETTER_NAME = "push-dead-letter.ndjson"
LEDGER_VERSION = 1
_TIMEOUT_MARGIN = 30.0  # seconds the client waits beyond the body's server-side timeout
_DATA_KEYS = ("dataOrgs", "data_orgs", "dataOrgsv1", "data_orgsv1")
_USER_KEYS = ("humanUsers", "human_users")
_META_KEYS = ("userMetadata", "user_metadata")

ALREADY_EXISTING_USER = "Errors.User.AlreadyExisting"
ALREADY_EXISTING_ORG = "Errors.Org.AlreadyExisting"


# --- flags and credentials --------------------------------------------------------------------
def add_credential_arguments(parser: argparse.ArgumentParser) -> None:
    """The credential flags every command that talks to ZITADEL shares (never a plain secret)."""
    group = parser.add_argument_group("credentials (one of; default: env ZITADEL_TOKEN)")
    group.add_argument("--token-file", help="file holding a personal access token or access token")
    group.add_argument("--client-id", help="service user client id (client credentials)")
    group.add_argument("--client-secret-file", help="file holding the client secret for --client-id")
    group.add_argument("--key-file", help="service-account JSON key file (JWT profile)")


def credentials_from_args(args: argparse.Namespace) -> Credentials:
    """The Credentials the flags (or env ZITADEL_TOKEN) name; ConfigError if none or several."""
    try:
        return admin_api.load_credentials(
            token_file=getattr(args, "token_file", None), client_id=getattr(args, "client_id", None),
            client_secret_file=getattr(args, "client_secret_file", None),
            key_file=getattr(args, "key_file", None))
    except admin_api.CredentialError as err:
        raise ConfigError(str(err)) from None


def connect(url: str, credentials: Credentials, max_attempts: int = 6, timeout: float = 30.0,
            **client_options: Any) -> AdminClient:
    """An AdminClient that has passed the probe call; ConfigError with one line otherwise.

    >>> client = connect("https://x.zitadel.cloud", credentials)  # doctest: +SKIP
    """
    try:
        client = AdminClient(url, credentials, max_attempts=max_attempts, timeout=timeout, **client_options)
    except ValueError as err:
        raise ConfigError(f"--url: {err}") from None
    try:
        client.probe()
    except admin_api.AuthError as err:
        raise ConfigError(f"{client.base_url}: authentication failed: {err.message}") from None
    except admin_api.RetriesExhausted as err:
        raise ConfigError(f"{client.base_url}: not reachable: {err.message}") from None
    except admin_api.AdminApiError as err:
        raise ConfigError(f"{client.base_url}: does not answer like a ZITADEL admin API: {err.message}") from None
    return client


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="ZITADEL instance base URL, e.g. https://x.zitadel.cloud")
    parser.add_argument("--manifest", help="the <stem>.manifest.json written by migrate")
    parser.add_argument("--body", action="append", default=[],
                        help="instead of --manifest: an ImportDataRequest body written by another tool or by "
                             "hand (repeatable, sent in order; <stem>.push.manifest.json is written in the "
                             "current folder, for resume and --verify). Every user is validated first, with "
                             "migrate's rules and reason codes: invalid ones are reported, not sent")
    parser.add_argument("--results", help="ledger folder (default: <manifest stem>.results/ beside it)")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="bodies sent at once (default 1: the hosted endpoint is slow)")
    parser.add_argument("--max-attempts", type=int, default=6,
                        help="attempts per request for retryable failures (default 6)")
    parser.add_argument("--request-timeout", type=float,
                        help="client timeout per import request in seconds "
                             f"(default: the body's timeout + {_TIMEOUT_MARGIN:.0f} s)")
    parser.add_argument("--verify", action="store_true", help="run verify when the push is done")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    parser.add_argument("--zitadel-config", metavar="FILE", default=None,
                        help="the target's config YAML: warn before sending when its password verifiers or "
                             "limits do not cover the manifest's hashes (default: ZITADEL's defaults)")
    add_credential_arguments(parser)
    from pipeline.gcs_import import add_gcs_arguments

    add_gcs_arguments(parser)


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    del pipeline_args  # push has no Beam options; the CLI already rejected unknown flags
    if getattr(known_args, "gcs_document", None):
        from pipeline.gcs_import import run_gcs_push  # dataOrgsv1Gcs: detached, verify is the proof

        return run_gcs_push(known_args)
    if known_args.concurrency < 1 or known_args.max_attempts < 1:
        raise ConfigError("--concurrency and --max-attempts must be at least 1")
    if bool(known_args.manifest) == bool(known_args.body):
        raise ConfigError("give either --manifest or --body (one or more)")
    manifest_path = known_args.manifest or write_body_manifest(known_args.body)
    report = push_manifest(
        manifest_path, known_args.url, credentials_from_args(known_args),
        results_dir=known_args.results, concurrency=known_args.concurrency,
        max_attempts=known_args.max_attempts, request_timeout=known_args.request_timeout,
        progress=not known_args.quiet, verify=known_args.verify,
        hash_policy=_hash_policy(known_args.zitadel_config))
    print(report.table())
    if report.verify is not None:
        print(report.verify.table())
    return 0 if report.ok else 1


def _hash_policy(path: str | None):
    from transforms.hash_policy import ConfigError as PolicyError, load_policy

    try:
        return load_policy(path, os.environ)
    except PolicyError as err:
        raise ConfigError(str(err)) from None


# --- manifest and bodies ----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class BodyRef:
    """One body of the manifest; ``path`` is resolved (local path or gs:// URL)."""

    index: int
    name: str
    path: str
    users: int
    sha256: str
    after: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Manifest:
    path: str
    bodies: tuple[BodyRef, ...]
    timeout: str
    raw: dict

    @property
    def stem(self) -> str:
        base = self.path[: -len(".manifest.json")] if self.path.endswith(".manifest.json") else self.path
        return base

    @property
    def total_users(self) -> int:
        return sum(b.users for b in self.bodies)


def _is_gcs(path: str) -> bool:
    return path.startswith("gs://")


def _resolve(directory: str, path: str) -> str:
    if _is_gcs(path) or os.path.isabs(path):
        return path
    return posixpath.join(directory, path) if _is_gcs(directory) else os.path.join(directory, path)


def _read_bytes(path: str) -> bytes:
    if _is_gcs(path):
        from apache_beam.io.filesystems import FileSystems  # only when needed: Beam's import is slow

        with FileSystems.open(path) as handle:
            return handle.read()
    with open(path, "rb") as handle:
        return handle.read()


def load_manifest(path: str) -> Manifest:
    """Read and check a manifest (version, bodies, ``after`` indexes); ConfigError otherwise."""
    if _is_gcs(path):
        from pipeline.migrate import check_gcs_reachable  # fail in seconds, not after Beam's retries

        check_gcs_reachable([path])
    try:
        raw = json.loads(_read_bytes(path))
    except FileNotFoundError:
        raise ConfigError(f"manifest not found: {path}") from None
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot read manifest {path}: {err}") from None
    if not isinstance(raw, dict) or raw.get("version") != 1 or not isinstance(raw.get("bodies"), list):
        raise ConfigError(f"{path} is not a version 1 zitadel-beam manifest")
    directory = posixpath.dirname(path) if _is_gcs(path) else os.path.dirname(os.path.abspath(path))
    bodies = []
    for i, entry in enumerate(raw["bodies"]):
        try:
            after = tuple(int(a) for a in entry.get("after") or [])
            ref = BodyRef(i, str(entry["path"]), _resolve(directory, str(entry["path"])),
                          int(entry.get("users", 0)), str(entry["sha256"]), after)
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"{path}: body {i} is malformed ({err})") from None
        if any(a < 0 or a >= len(raw["bodies"]) or a == i for a in after):
            raise ConfigError(f"{path}: body {i} has an invalid 'after' entry {list(after)}")
        bodies.append(ref)
    _check_acyclic(path, bodies)
    return Manifest(path, tuple(bodies), str(raw.get("timeout") or "5m0s"), raw)


def _check_acyclic(path: str, bodies: list[BodyRef]) -> None:
    state: dict[int, int] = {}  # 1 visiting, 2 done

    def visit(i: int) -> None:
        if state.get(i) == 2:
            return
        if state.get(i) == 1:
            raise ConfigError(f"{path}: the 'after' entries form a cycle through body {i}")
        state[i] = 1
        for dep in bodies[i].after:
            visit(dep)
        state[i] = 2

    for body in bodies:
        visit(body.index)


def read_body(ref: BodyRef) -> bytes:
    """The body's bytes, checked against the manifest's sha256 (ValueError on a mismatch)."""
    data = _read_bytes(ref.path)
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref.sha256:
        raise ValueError(f"sha256 of {ref.name} is {digest[:12]}…, the manifest says {ref.sha256[:12]}…")
    return data


def write_body_manifest(paths: list[str]) -> str:
    """A manifest for bodies not written by migrate: ``<first body stem>.push.manifest.json``.

    Each body is sent as one unit, in the order given; the file lets a re-run resume from the
    ledger and lets verify find the bodies.
    """
    entries = []
    for path in paths:
        try:
            data = _read_bytes(path)
        except OSError as err:
            raise ConfigError(f"--body {path}: {err.strerror or err}") from None
        try:
            users = len(body_user_ids(json.loads(data)))
        except (ValueError, AttributeError):
            users = 0  # reported as unreadable-body when it is sent
        entries.append({"path": os.path.abspath(path) if not _is_gcs(path) else path,
                        "users": users, "sha256": hashlib.sha256(data).hexdigest(), "after": []})
    # In the current folder: the bodies may sit in a read-only folder or in a bucket.
    stem = os.path.splitext(posixpath.basename(paths[0]) if _is_gcs(paths[0]) else os.path.basename(paths[0]))[0]
    target = f"{stem}.push.manifest.json"
    manifest = {"version": 1, "tool": "zitadel-beam push --body", "bodies": entries}
    _write_atomic(os.path.abspath(target), json.dumps(manifest, indent=1).encode() + b"\n")
    return target


# --- body surgery -----------------------------------------------------------------------------
def _first_key(mapping: dict, keys: Iterable[str]) -> str | None:
    return next((k for k in keys if k in mapping), None)


def _orgs(body: dict) -> list[dict]:
    key = _first_key(body, _DATA_KEYS)
    return list((body.get(key) or {}).get("orgs") or []) if key else []


def _org_id(org: dict) -> str:
    return str(org.get("orgId", org.get("org_id", "")))


def _users(org: dict) -> list[dict]:
    key = _first_key(org, _USER_KEYS)
    return list(org.get(key) or []) if key else []


def _metadata(org: dict) -> list[dict]:
    key = _first_key(org, _META_KEYS)
    return list(org.get(key) or []) if key else []


def _user_id(entry: dict) -> str:
    return str(entry.get("userId", entry.get("user_id", "")))


def body_user_ids(body: dict) -> list[tuple[str, str]]:
    """(org id, user id) of every human user in an ImportDataRequest, in order."""
    return [(_org_id(org), _user_id(u)) for org in _orgs(body) for u in _users(org)]


def _with_orgs(body: dict, orgs: list[dict]) -> dict:
    key = _first_key(body, _DATA_KEYS) or "dataOrgs"
    out = {k: v for k, v in body.items() if k != key}
    out[key] = {**(body.get(key) or {}), "orgs": orgs}
    return out


def split_body(body: dict) -> tuple[dict, dict]:
    """Split an ImportDataRequest's human users in halves; each user's metadata follows it (and, in
    an export document, its grants, memberships and IdP links).

    Everything else of an org (its name, policies, projects, ...) stays in the first half, which is
    sent first, so an org exists before the second half's users are added to it.
    """
    flat = [(i, j) for i, org in enumerate(_orgs(body)) for j, _ in enumerate(_users(org))]
    # By position, not id: users without userId (the server assigns one) all share the id "".
    first_ids = set(flat[: len(flat) // 2])
    halves: tuple[list[dict], list[dict]] = ([], [])
    v1 = _first_key(body, _DATA_KEYS) in ("dataOrgsv1", "data_orgsv1")
    for i, org in enumerate(_orgs(body)):
        user_key = _first_key(org, _USER_KEYS) or "humanUsers"
        meta_key = _first_key(org, _META_KEYS) or "userMetadata"
        a_users = [u for j, u in enumerate(_users(org)) if (i, j) in first_ids]
        b_users = [u for j, u in enumerate(_users(org)) if (i, j) not in first_ids]
        b_ids = {_user_id(u) for u in b_users}
        b_meta = [m for m in _metadata(org) if str(m.get("id", "")) in b_ids]
        a_meta = [m for m in _metadata(org) if str(m.get("id", "")) not in b_ids]
        rest = {k: v for k, v in org.items() if k not in (user_key, meta_key)}
        # An export document's per-user records (grants, memberships, links) follow their user too.
        b_records = {}
        for key in [k for k in rest if k in _USER_RECORD_KEYS and isinstance(rest[k], list)]:
            follows = [isinstance(r, dict) and r.get("userId", r.get("user_id")) in b_ids - {""} for r in rest[key]]
            if any(follows):
                b_records[key] = [r for r, f in zip(rest[key], follows) if f]
                rest[key] = [r for r, f in zip(rest[key], follows) if not f]
        halves[0].append({**rest, user_key: a_users, meta_key: a_meta})
        if b_users:
            id_key = "orgId" if "orgId" in org else "org_id"
            second = {id_key: _org_id(org)}
            if "org" in org and v1:  # an export document's org: Org.AlreadyExisting, not an invalid org
                second["org"] = org["org"]
            halves[1].append({**second, user_key: b_users, meta_key: b_meta, **b_records})
    return _with_orgs(body, halves[0]), _with_orgs(body, halves[1])


_USER_RECORD_KEYS = ("userGrants", "user_grants", "orgMembers", "org_members", "projectMembers", "project_members",
                     "projectGrantMembers", "project_grant_members", "userLinks", "user_links")


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
    def from_json(cls, data: dict) -> "BodyResult":
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
    verify: Any = None  # pipeline.verify.VerifyReport when --verify

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
        return sent_all and self.failed == 0 and self.fatal is None and verified

    def table(self) -> str:
        """The final table (one row per body, then the totals)."""
        width = max([len("body")] + [len(b.name) for b in self.bodies])
        head = (f"{'body':<{width}}  {'users':>7} {'created':>8} {'present':>8} {'failed':>7} "
                f"{'requests':>8} {'seconds':>8}  status")
        lines = [head, "-" * len(head)]
        for b in self.bodies:
            lines.append(f"{b.name:<{width}}  {b.users:>7} {len(b.created):>8} {len(b.present):>8} "
                         f"{len(b.failed):>7} {b.requests:>8} {b.seconds:>8.1f}  {b.status}")
        lines.append("-" * len(head))
        total_users = sum(b.users for b in self.bodies)
        lines.append(f"{'total':<{width}}  {total_users:>7} {self.created:>8} {self.present:>8} "
                     f"{self.failed:>7} {self.stats.requests:>8} {self.seconds:>8.1f}  "
                     f"{'ok' if self.ok else 'FAILED'}")
        lines.append(f"retries {self.stats.retries}, throttled {self.stats.throttled}; "
                     f"ledger {self.results_dir}")
        after_lost = sum(b.present_after_lost_answer for b in self.bodies)
        if after_lost:
            lines.append(f"present: {after_lost} of them answered AlreadyExisting after a lost answer or a "
                         "server timeout, so most likely created by this run")
        if self.dead_letter:
            lines.append(f"per-user failures: {self.dead_letter}")
        if self.fatal:
            lines.append(f"stopped: {self.fatal}")
        return "\n".join(lines)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _write_atomic(path: str, data: bytes) -> None:
    """Temp file + fsync + rename in the same folder: a kill leaves the old file or the new one."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class Ledger:
    """One JSON file per body under the results folder (``body-00000.json``)."""

    def __init__(self, directory: str) -> None:
        if _is_gcs(directory):
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
        _write_atomic(ref_path, json.dumps(result.to_json(), indent=1).encode() + b"\n")


# --- progress ---------------------------------------------------------------------------------
class _Progress:
    """A live line on stderr: bodies done/total, users created, failures, rate, ETA."""

    def __init__(self, manifest: Manifest, stream: TextIO, enabled: bool, interval: float | None = None) -> None:
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

    def __enter__(self) -> "_Progress":
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
            return (f"push: bodies {self.bodies_done}/{self._total_bodies}  created {self.created}  "
                    f"present {self.present}  failed {self.failed}  {rate:,.0f} users/s  ETA {eta}")

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


def _interpret(answer: dict, part: dict, result: BodyResult, secrets: tuple[str, ...],
               after_lost_answer: bool = False) -> tuple[int, int, int]:
    """Fold one import answer into ``result``; returns (created, present, failed) counts."""
    expected = body_user_ids(part)
    org_of = dict((uid, org) for org, uid in expected)
    meta_owner = {f"{m.get('id')}_{m.get('key')}": str(m.get("id")) for org in _orgs(part) for m in _metadata(org)}
    created = {str(u) for org in (answer.get("success") or {}).get("orgs") or []
               for u in org.get("humanUserIds") or []}
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
            failed[ident] = {"userId": ident, "orgId": org_of.get(ident, ""), "reason": _reason_for(message),
                             "type": kind, "message": message}
        elif kind == "user_metadata" and ident in meta_owner:
            uid = meta_owner[ident]
            failed.setdefault(uid, {"userId": uid, "orgId": org_of.get(uid, ""), "reason": "metadata-rejected",
                                    "type": kind, "id": ident, "message": message})
        elif "AlreadyExisting" in message:
            continue  # another resource of an export document that a previous run created
        else:
            failed[f"{kind}:{ident}"] = {"userId": "", "orgId": "", "reason": "rejected", "type": kind,
                                         "id": ident, "message": message}
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
            failed[uid] = {"userId": uid, "orgId": org_id, "reason": "no-result", "type": "human_user",
                           "message": "the answer neither created nor reported this user"}
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
        result.failed.append({"userId": uid, "orgId": org_id, "reason": reason, "type": "human_user",
                              "message": message})
    return len(users)


def _send_body(client: AdminClient, ref: BodyRef, previous: BodyResult | None, timeout_default: str,
               request_timeout: float | None, progress: _Progress, ledger: Ledger,
               max_attempts: int) -> BodyResult:
    """Send one body (splitting on server timeouts); never raises except _Abort."""
    result = BodyResult(ref.index, ref.name, ref.sha256, ref.users, status="in-progress",
                        runs=(previous.runs if previous else 0) + 1, started_at=_now())
    ledger.save(result)  # a killed run shows "in-progress": resumed runs send the body again
    started = time.monotonic()
    try:
        raw = read_body(ref)
        body = json.loads(raw)
    except (OSError, ValueError) as err:
        result.status = "failed"
        result.failed.append({"userId": "", "orgId": "", "reason": "unreadable-body", "type": "body",
                              "message": admin_api.scrub(str(err))})
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
    timeout = request_timeout or seconds + _TIMEOUT_MARGIN
    # (part, exact bytes or None, server timeouts so far); the first request sends the file's bytes.
    queue: list[tuple[dict, bytes | None, int]] = [(body, raw, 0)] if body_user_ids(body) or not checked.rejected else []
    lost_answer = False  # an earlier request of this body may have done work we never heard of
    while queue:
        part, data, deadlines = queue.pop(0)
        n_users = len(body_user_ids(part))
        part_start = time.monotonic()
        outcome = "ok"
        counter = [0]
        try:
            answer = client.import_data(data if data is not None else json.dumps(part).encode(), timeout,
                                        on_attempt=lambda: counter.__setitem__(0, counter[0] + 1))
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
            result.requests += counter[0]
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
            lost_answer = lost_answer or counter[0] > 1
            progress.users_processed(*_interpret(answer, part, result, client.tokens.secrets(), lost_answer))
        result.requests += counter[0]
        result.parts.append({"users": n_users, "seconds": round(time.monotonic() - part_start, 3),
                             "requests": counter[0], "outcome": outcome})
        ledger.save(result)  # checkpoint: a kill between parts keeps the ids created so far
    if previous is not None:
        # Users this body created in an earlier run come back as AlreadyExisting now.
        earlier = set(previous.created)
        result.present_after_lost_answer = max(
            0, result.present_after_lost_answer - sum(1 for u in result.present if u in earlier))
        result.created += [u for u in result.present if u in earlier]
        result.present = [u for u in result.present if u not in earlier]
    result.status = "failed" if result.failed else "done"
    result.seconds = round(time.monotonic() - started, 3)
    result.finished_at = _now()
    ledger.save(result)
    return result


# --- the whole manifest -----------------------------------------------------------------------
def default_results_dir(manifest: Manifest) -> str:
    """``<manifest stem>.results`` beside the manifest; in the current folder for a gs:// manifest."""
    if _is_gcs(manifest.stem):
        return posixpath.basename(manifest.stem) + ".results"
    return manifest.stem + ".results"


class _Scheduler:
    """Runs bodies on a thread pool, never starting one before the bodies in its ``after``."""

    def __init__(self, manifest: Manifest, concurrency: int,
                 work: Callable[[BodyRef], BodyResult], skip: Callable[[BodyRef], BodyResult | None],
                 finished: Callable[[BodyResult], None]) -> None:
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
                        self._record(BodyResult(ref.index, ref.name, ref.sha256, ref.users, status="not-sent"))
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
                        self._record(BodyResult(ref.index, ref.name, ref.sha256, ref.users, status="not-sent"))
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
    _write_atomic(path, ("\n".join(lines) + "\n").encode())
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
        stream.write(f"push: {sum(reasons.values())} invalid user(s) will not be sent ("
                     + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) + ")\n")
    if notes:  # the same fixes as migrate: the field is dropped, the user is sent
        stream.write("push: fields dropped as migrate does (" + ", ".join(f"{k} {v}" for k, v in sorted(notes.items()))
                     + ")\n")
    stream.flush()


def push_manifest(manifest_path: str, url: str, credentials: Credentials, results_dir: str | None = None,
                  concurrency: int = 1, max_attempts: int = 6, request_timeout: float | None = None,
                  progress: bool = True, verify: bool = False, stream: TextIO | None = None,
                  client: AdminClient | None = None, hash_policy: Any = None) -> PushReport:
    """Push every body of a manifest; resumable through the ledger in ``results_dir``.

    >>> report = push_manifest("out/importBody.manifest.json", "https://x.zitadel.cloud",
    ...                        load_credentials(token_file="pat"), concurrency=2)  # doctest: +SKIP
    >>> report.ok, report.created, report.present, report.failed  # doctest: +SKIP

    Raises ConfigError for a bad manifest, URL or credential (the probe call).
    """
    manifest = load_manifest(manifest_path)
    warn_uncovered(manifest.raw, hash_policy)  # the target would refuse those users' hashes
    ledger = Ledger(results_dir or default_results_dir(manifest))
    client = client or connect(url, credentials, max_attempts=max_attempts)
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
            return _send_body(client, ref, ledger.load(ref), manifest.timeout, request_timeout, live, ledger,
                              max_attempts)

        scheduler = _Scheduler(manifest, concurrency, work, skip, live.body_done)
        results = scheduler.run()
    ordered = [results[b.index] for b in manifest.bodies]
    report = PushReport(ordered, time.monotonic() - started, ledger.directory,
                        _write_dead_letter(ledger.directory, ordered), client.stats, scheduler.fatal)
    if verify and scheduler.fatal is None:
        from pipeline.verify import verify_manifest  # late: verify imports this module

        report.verify = verify_manifest(manifest_path, url, credentials, results_dir=ledger.directory,
                                        client=client)
    return report
