"""Reading the manifest migrate writes beside its bodies (``<stem>.manifest.json``), and its bodies.

The manifest lists every body with its user count, sha256 and the bodies it must follow
(``after``); see ``docs/manifest.md``. ``recount`` re-reads the written bodies and compares them
with the manifest, so a run whose manifest and files disagree is never reported as a success.

``build_manifest`` assembles what a migrate run writes (every migrate command, so the key order
and the sections are defined once).

Example::

    manifest = load_manifest("out/importBody.manifest.json")
    data = read_body(manifest.bodies[0])      # sha256-checked bytes
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from transforms.common.errors import ConfigError
from transforms.files.storage import (
    check_gcs_reachable,
    is_gcs,
    read_bytes,
    relative_path,
    resolve,
    write_atomic,
)
from transforms.output.body_parts import body_user_ids, shape_problem

__all__ = [
    "MANIFEST_VERSION",
    "ListedFile",
    "UserFields",
    "ExportFields",
    "build_manifest",
    "BodyRef",
    "ChangeFileRef",
    "SyncView",
    "Manifest",
    "load_manifest",
    "read_body",
    "write_body_manifest",
    "body_manifest_name",
    "default_results_dir",
    "results_dir_for",
    "manifest_stem",
    "recount",
]

MANIFEST_VERSION = 1


@dataclasses.dataclass(frozen=True)
class ListedFile:
    """A file the manifest lists beside the bodies (dead letters, passwordless users).

    ``path`` as written (the manifest lists it relative to its own folder), ``count`` its lines,
    ``sha256`` its digest (None when there is no file: the key is left out)."""

    path: str
    count: int
    sha256: str | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class UserFields:
    """The sections of a user migration's manifest (``migrate auth0``, ``migrate keycloak``).

    ``not_carried``: ``pipeline.report.not_carried_fields``; the three counts are the users
    given ``--email-fallback``'s address, given a derived id, and whose names lost control
    characters."""

    not_carried: Mapping[str, Any]
    passwordless: ListedFile
    email_fallback: int
    derived_ids: int
    control_chars_removed: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportFields:
    """The sections of a ``migrate zitadel`` manifest: the export document and its planning."""

    path: str
    size: int
    org_ids: list[str]
    plan_seconds: float


def build_manifest(
    *,
    manifest_path: str,
    source: str,
    org_id: str | None,
    timeout: str,
    batch_size: int,
    bodies: Sequence[Mapping[str, Any]],
    dead_letter: ListedFile,
    counts: Mapping[str, int],
    dead_letters_by_reason: Mapping[str, Mapping[str, int]],
    holds: bool,
    invariant: str,
    seconds: float,
    hash_fields: Mapping[str, Any],
    export: ExportFields | None = None,
    users: UserFields | None = None,
    extra: Mapping[str, Any] | None = None,
    sync: Mapping[str, Any] | None = None,
    authorizations: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest a migrate run writes (docs/manifest.md), its keys in their documented order.

    ``export`` for ``migrate zitadel``, ``users`` for the user sources; ``extra`` (a source's own
    keys, e.g. Keycloak's ``realm_files``), ``sync`` (with ``--state``) and ``authorizations``
    (left out when empty) come last. Paths are listed relative to ``manifest_path``'s folder.

    >>> build_manifest(manifest_path="out/importBody.manifest.json", source="auth0", ...)  # doctest: +SKIP
    """
    folder = posixpath.dirname(manifest_path)
    manifest: dict[str, Any] = {"version": MANIFEST_VERSION, "tool": "zitadel-beam", "source": source}
    if export is not None:
        manifest.update({"export": export.path, "export_bytes": export.size})
    manifest["org_id"] = org_id
    if export is not None:
        manifest["org_ids"] = export.org_ids
    manifest.update(
        {
            "timeout": timeout,
            "batch_size": batch_size,
            "bodies": bodies,
            "dead_letter": _listed(folder, dead_letter),
            "counts": counts,
            "dead_letters_by_reason": dead_letters_by_reason,
            "invariant": {"holds": holds, "text": invariant},
            "seconds": round(seconds, 3),
        }
    )
    if export is not None:
        manifest["plan_seconds"] = round(export.plan_seconds, 3)
    manifest.update(hash_fields)
    if users is not None:
        manifest.update(users.not_carried)
        manifest["passwordless"] = _listed(folder, users.passwordless)
        manifest.update(
            {
                "email_fallback": users.email_fallback,
                "derived_ids": users.derived_ids,
                "control_chars_removed": users.control_chars_removed,
            }
        )
    manifest.update(extra or {})
    if sync is not None:
        manifest["sync"] = sync
    if authorizations:
        manifest["authorizations"] = authorizations
    return manifest


def _listed(folder: str, entry: ListedFile) -> dict[str, Any]:
    listed: dict[str, Any] = {"path": relative_path(folder, entry.path), "count": entry.count}
    if entry.sha256:
        listed["sha256"] = entry.sha256
    return listed


@dataclasses.dataclass(frozen=True)
class BodyRef:
    """One body of the manifest; ``path`` is resolved (local path or gs:// URL)."""

    index: int
    name: str
    path: str
    users: int
    sha256: str
    after: tuple[int, ...]
    kind: str = "users"  # or "authorizations": the projects, roles and grants body (docs/roles.md)


@dataclasses.dataclass(frozen=True)
class ChangeFileRef:
    """One change file of a sync manifest; ``path`` is resolved, ``name`` as listed."""

    name: str
    path: str
    sha256: str


@dataclasses.dataclass(frozen=True)
class SyncView:
    """A sync manifest's ``sync`` section as push reads it (docs/manifest.md, docs/sync.md)."""

    state: str  # the --state store
    base_generation: int  # the state generation the manifest was made against
    changes: tuple[ChangeFileRef, ...]
    authorizations_sha256: str | None  # the roles catalogue's digest, with --project-id


@dataclasses.dataclass(frozen=True)
class Manifest:
    """A loaded manifest: its typed parts, and ``raw`` (the document) for the sections read whole
    (the hash fields, the authorizations settings)."""

    path: str
    bodies: tuple[BodyRef, ...]
    timeout: str
    raw: dict
    tool: str = ""  # who wrote it: "zitadel-beam push --body" for bodies given to push by hand
    counts: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    sync: SyncView | None = None  # a scheduled sync's manifest

    @property
    def stem(self) -> str:
        return manifest_stem(self.path)

    @property
    def total_users(self) -> int:
        return sum(b.users for b in self.bodies)


def load_manifest(path: str) -> Manifest:
    """Read and check a manifest (version, bodies, ``after`` indexes); ConfigError otherwise."""
    if is_gcs(path):
        check_gcs_reachable([path])  # fail in seconds, not after Beam's retries
    try:
        raw = json.loads(read_bytes(path))
    except FileNotFoundError:
        raise ConfigError(f"manifest not found: {path}") from None
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot read manifest {path}: {err}") from None
    if (
        not isinstance(raw, dict)
        or raw.get("version") != MANIFEST_VERSION
        or not isinstance(raw.get("bodies"), list)
    ):
        raise ConfigError(f"{path} is not a version 1 zitadel-beam manifest")
    directory = posixpath.dirname(path) if is_gcs(path) else os.path.dirname(os.path.abspath(path))
    bodies = []
    for i, entry in enumerate(raw["bodies"]):
        try:
            after = tuple(int(a) for a in entry.get("after") or [])
            ref = BodyRef(
                i,
                str(entry["path"]),
                resolve(directory, str(entry["path"])),
                int(entry.get("users", 0)),
                str(entry["sha256"]),
                after,
                str(entry.get("kind") or "users"),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"{path}: body {i} is malformed ({err})") from None
        if any(a < 0 or a >= len(raw["bodies"]) or a == i for a in after):
            raise ConfigError(f"{path}: body {i} has an invalid 'after' entry {list(after)}")
        bodies.append(ref)
    _check_acyclic(path, bodies)
    counts = raw.get("counts")
    return Manifest(
        path,
        tuple(bodies),
        str(raw.get("timeout") or "5m0s"),
        raw,
        tool=str(raw.get("tool") or ""),
        counts=counts if isinstance(counts, dict) else {},
        sync=_sync_view(path, directory, raw.get("sync")),
    )


def _sync_view(path: str, directory: str, section: object) -> SyncView | None:
    if section is None:
        return None
    try:
        if not isinstance(section, dict):
            raise TypeError("not an object")
        changes = tuple(
            ChangeFileRef(str(c["path"]), resolve(directory, str(c["path"])), str(c["sha256"]))
            for c in section.get("changes") or []
        )
        digest = section.get("authorizations_sha256")
        return SyncView(
            str(section["state"]),
            int(section.get("base_generation", 0)),
            changes,
            None if digest is None else str(digest),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"{path}: its sync section is malformed ({err})") from None


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
    data = read_bytes(ref.path)
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
            data = read_bytes(path)
        except OSError as err:
            raise ConfigError(f"--body {path}: {err.strerror or err}") from None
        try:
            body = json.loads(data)
        except ValueError:
            raise ConfigError(f"--body {path}: not JSON (an import request is one JSON object)") from None
        problem = shape_problem(body)
        if problem:
            raise ConfigError(f"--body {path}: {problem}")
        users = len(body_user_ids(body))
        entries.append(
            {
                "path": os.path.abspath(path) if not is_gcs(path) else path,
                "users": users,
                "sha256": hashlib.sha256(data).hexdigest(),
                "after": [],
            }
        )
    target = body_manifest_name(paths[0])
    manifest = {"version": MANIFEST_VERSION, "tool": "zitadel-beam push --body", "bodies": entries}
    write_atomic(os.path.abspath(target), json.dumps(manifest, indent=1).encode() + b"\n")
    return target


def body_manifest_name(first_body: str) -> str:
    """Where :func:`write_body_manifest` writes: ``<first body stem>.push.manifest.json`` in the
    current folder (the bodies may sit in a read-only folder or in a bucket)."""
    name = posixpath.basename(first_body) if is_gcs(first_body) else os.path.basename(first_body)
    return f"{os.path.splitext(name)[0]}.push.manifest.json"


def default_results_dir(manifest: Manifest) -> str:
    """``<manifest stem>.results`` beside the manifest; in the current folder for a gs:// manifest."""
    return results_dir_for(manifest.path)


def results_dir_for(manifest_path: str) -> str:
    """:func:`default_results_dir` from the manifest's path alone (the launcher's preflight)."""
    stem = manifest_stem(manifest_path)
    if is_gcs(stem):
        return posixpath.basename(stem) + ".results"
    return stem + ".results"


def manifest_stem(path: str) -> str:
    """``out/importBody.manifest.json`` → ``out/importBody`` (a path without the suffix: itself)."""
    return path[: -len(".manifest.json")] if path.endswith(".manifest.json") else path


def recount(manifest_path: str) -> list[str]:
    """Re-read every body the manifest lists; the differences from what it claims (empty: agree).

    Each body must exist with the sha256 the writer recorded, the number of bodies must match the
    run's counters, and the users the writer recorded per body must add up to the counters' users.
    The bodies are hashed, not parsed: the sha256 proves the bytes are the ones the writer counted
    users in, and parsing the ~0.5 GB of bodies of a million users took longer (3-15 s measured)
    than hashing them (0.6-1 s).
    """
    manifest = load_manifest(manifest_path)
    problems: list[str] = []
    claimed = manifest.raw.get("counts") or {}
    for ref in manifest.bodies:
        try:
            read_body(ref)
        except (OSError, ValueError) as err:
            problems.append(f"{ref.name}: {err}")
    if "bodies_written" in claimed and claimed["bodies_written"] != len(manifest.bodies):
        problems.append(f"{len(manifest.bodies)} bodies listed, the counters say {claimed['bodies_written']}")
    listed = manifest.total_users
    for key in ("users_written", "human_users_written"):
        if key in claimed and claimed[key] != listed:
            problems.append(f"the bodies hold {listed} users, the counters say {claimed[key]} ({key})")
    return problems
