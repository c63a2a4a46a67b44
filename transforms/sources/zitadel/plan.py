"""ZITADEL export documents (``{"orgs": [DataOrg]}``, the v1 form) → a plan of import bodies.

An export is one JSON document; a large tenant's is several GB and one org may hold millions of
users. :func:`plan_export` reads it once (``export_reader.iter_export``, never whole), and writes every
item of every org into *segment* files (NDJSON lines ``[field, item]``) grouped by the body it
will travel in. The plan it returns lists the bodies, their segments and the order constraints;
rendering a body is then only "read its segments, group by field" (``data_org.py``;
``command.py`` does that in parallel with Beam, one element per body).

Which body an item goes to (docs/zitadel-import-api.md, docs/instance-moves.md; ZITADEL's import runs org-level resources before users
and grants/members after them, within one request, so a split must keep those orders):

- ``head`` of an org: ``orgId``, ``org`` and every org-level field (policies, domains, IdPs,
  texts, projects, roles, apps, actions, keys of apps). It is imported first.
- ``grants`` of an org: its ``projectGrants``; they need the granted org to exist, so this body
  comes after the heads of the granted orgs in the export.
- ``users`` bodies of an org: at most ``batch_size`` human + machine users each, in document
  order, with each user's own records (``userMetadata``, ``userLinks``, ``userGrants``,
  ``orgMembers``, ``projectMembers``, ``projectGrantMembers``, ``machineKeys``; OTP is part of the
  human user). After the org's head, the heads owning the projects the records name, and the
  ``grants`` body holding a project grant they name.
- ``cross`` bodies of an org: records of this org that name a user of *another* org in the export
  (e.g. an org member from elsewhere), after the body holding that user.
- dead letters, with a reason: records whose user is not in the export, malformed items,
  duplicate user ids, orgs without ``orgId``.

Memory: one org's index of user ids (id → chunk), a bounded buffer of segment lines, and the
records waiting for a user not seen yet (spilled to local files when many).

Example::

    plan = plan_export("export.json", tmp_dir, batch_size=5000, work_dir=local_scratch)
    for body in plan.bodies: print(body.index, body.kind, body.org_id, body.users, body.after)
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator
from typing import IO, NamedTuple

import orjson

from transforms.files.storage import open_private
from transforms.hashing.convert import ConvertedHash, parse_hash
from transforms.sources.zitadel.export_reader import iter_export

__all__ = [
    "BodyKey",
    "BodyPlan",
    "ExportPlan",
    "plan_export",
    "USER_RECORD_FIELDS",
    "DEAD_SOURCE",
]

_LOGGER = logging.getLogger(__name__)

DEAD_SOURCE = "zitadel-export"

USER_FIELDS = ("humanUsers", "machineUsers")
# Records that belong to one user, and the field naming that user.
USER_RECORD_FIELDS = {
    "userMetadata": "id",
    "userLinks": "userId",
    "userGrants": "userId",
    "orgMembers": "userId",
    "projectMembers": "userId",
    "projectGrantMembers": "userId",
    "machineKeys": "userId",
}
GRANT_FIELDS = ("projectGrants",)

_FLUSH_LINES = 4096  # a body's buffered lines are written as one segment file
_MAX_BUFFERED = 40_000  # all buffers are flushed beyond this many lines
_MAX_PENDING = 20_000  # records waiting for their user spill to a local file beyond this

# One body of a plan, as the render step receives it: (index, org id, org JSON, segment paths).
BodyElement = tuple[int, str, bytes, tuple[str, ...]]
_KIND_RANK = {"head": 0, "grants": 1, "users": 2, "cross": 3}  # a body's place within its org


class BodyKey(NamedTuple):
    """Which body: its kind (head | grants | users | cross), its org's position in the export,
    and for users and cross bodies the chunk (0 for the others)."""

    kind: str
    org_pos: int
    chunk: int = 0


# --- the plan ------------------------------------------------------------------------------------
@dataclasses.dataclass
class BodyPlan:
    """One body to render: its org, its segment files, its counts and its order constraints."""

    key: BodyKey
    kind: str  # head | grants | users | cross
    org_pos: int
    org_id: str = ""
    org: object = None
    segments: list[str] = dataclasses.field(default_factory=list)
    users: int = 0  # human users
    machines: int = 0  # machine users
    records: int = 0  # every other item
    index: int = -1
    after: list[int] = dataclasses.field(default_factory=list)
    # Unresolved constraints, turned into ``after`` at the end of the plan.
    need_projects: set[str] = dataclasses.field(default_factory=set)
    need_grants_of: set[str] = dataclasses.field(default_factory=set)
    need_orgs: set[str] = dataclasses.field(default_factory=set)
    need_keys: set[BodyKey] = dataclasses.field(default_factory=set)

    def element(self) -> BodyElement:
        """What the render step needs: (index, org id, org JSON, segment paths)."""
        return (
            self.index,
            self.org_id,
            orjson.dumps(self.org) if self.org is not None else b"",
            tuple(self.segments),
        )


@dataclasses.dataclass
class ExportPlan:
    bodies: list[BodyPlan]
    counts: dict[str, int]
    dead_by_reason: dict[str, int]
    org_ids: list[str]
    # The human users' password hashes (transforms/hashing/convert.py, parse_hash), for the manifest and the
    # config the target needs: verifier → users, and verifier → param → (min, max).
    hash_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    hash_ranges: dict[str, dict[str, tuple[int, int]]] = dataclasses.field(default_factory=dict)


class _Planner:
    """The state of one streamed pass: the current org's index, buffers, pending records, bodies."""

    def __init__(self, seg_dir: str, batch_size: int, work_dir: str, dead: IO[bytes]):
        self.seg_dir = seg_dir
        self.batch_size = batch_size
        self.work_dir = work_dir
        self.dead = dead
        self.bodies: dict[BodyKey, BodyPlan] = {}
        self.order: list[BodyKey] = []
        self.buffers: dict[BodyKey, list[bytes]] = {}
        self.buffered = 0
        self.seq = 0
        self.counts: dict[str, int] = {}
        self.dead_by_reason: dict[str, int] = {}
        self.project_owner: dict[str, int] = {}
        self.org_pos_of: dict[str, int] = {}
        self.org_ids: list[str] = []
        self.unresolved_ids: set[str] = set()
        self.hash_counts: dict[str, int] = {}
        self.hash_ranges: dict[str, dict[str, tuple[int, int]]] = {}
        self.unresolved_file = os.path.join(work_dir, "unresolved.ndjson")
        self.index_files: dict[int, str] = {}
        self._unresolved_handle: IO[bytes] | None = None
        self._start_org(0)

    # -- org state
    def _start_org(self, pos: int) -> None:
        self.pos = pos
        self.org_id = ""
        self.org: object = None
        self.index: dict[str, int] = {}
        self.n_users = 0
        self.pending: list[bytes] = []
        self.pending_files: list[str] = []
        self.org_keys: list[BodyKey] = []

    def bump(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def body(self, key: BodyKey) -> BodyPlan:
        plan = self.bodies.get(key)
        if plan is None:
            plan = BodyPlan(key, key.kind, key.org_pos)
            self.bodies[key] = plan
            self.order.append(key)
            if key.org_pos == self.pos:
                self.org_keys.append(key)  # the current org's bodies get its id and name at its end
        return plan

    def add(self, key: BodyKey, field: str, line: bytes) -> BodyPlan:
        plan = self.body(key)
        buf = self.buffers.setdefault(key, [])
        buf.append(line)
        self.buffered += 1
        if len(buf) >= _FLUSH_LINES:
            self._flush(key)
        elif self.buffered >= _MAX_BUFFERED:
            for k in list(self.buffers):
                self._flush(k)
        return plan

    def _flush(self, key: BodyKey) -> None:
        lines = self.buffers.pop(key, None)
        if not lines:
            return
        self.buffered -= len(lines)
        self.seq += 1
        from apache_beam.io.filesystems import FileSystems

        path = FileSystems.join(self.seg_dir, f"seg-{self.seq:08d}.ndjson")
        with open_private(path) as handle:
            handle.write(b"\n".join(lines) + b"\n")
        self.bodies[key].segments.append(path)

    def dead_letter(
        self, reason: str, detail: str, field: str, item: object, org_id: str | None = None
    ) -> None:
        record = {"orgId": self.org_id if org_id is None else org_id, "field": field, "item": item}
        line = orjson.dumps({"reason": reason, "detail": detail, "source": DEAD_SOURCE, "record": record})
        self.dead.write(line + b"\n")
        self.dead_by_reason[reason] = self.dead_by_reason.get(reason, 0) + 1
        self.bump("dead_letters")

    # -- items
    def item(self, field: str, value: object, is_item: bool) -> None:
        if field == "orgId" and not is_item:
            self.org_id = str(value) if value is not None else ""
            return
        if field == "org" and not is_item:
            self.org = value
            return
        self.bump("items_read")
        # A singular field (a policy) is stored as "=name" so rendering knows it is not a list.
        line = orjson.dumps([field if is_item else "=" + field, value])
        if (field in USER_FIELDS or field in USER_RECORD_FIELDS or field in GRANT_FIELDS) and not is_item:
            self.dead_letter("malformed-item", f"'{field}' is not a list", field, value)
            return
        if field in USER_FIELDS:
            self._user(field, value, line)
        elif field in USER_RECORD_FIELDS:
            self._record(field, value, line)
        elif field in GRANT_FIELDS:
            plan = self.add(BodyKey("grants", self.pos), field, line)
            plan.records += 1
            if isinstance(value, dict):
                grant = value.get("projectGrant")
                inner: dict[str, object] = grant if isinstance(grant, dict) else value
                if inner.get("grantedOrgId"):
                    plan.need_orgs.add(str(inner["grantedOrgId"]))
        else:
            plan = self.add(BodyKey("head", self.pos), field, line)
            plan.records += 1
            if field == "projects" and isinstance(value, dict) and value.get("projectId"):
                self.project_owner.setdefault(str(value["projectId"]), self.pos)

    def _user(self, field: str, value: object, line: bytes) -> None:
        if not isinstance(value, dict) or not isinstance(value.get("user"), dict):
            self.dead_letter("malformed-user", f"a {field} entry without a 'user' object", field, value)
            return
        uid = value.get("userId")
        uid = str(uid) if uid not in (None, "") else ""
        if uid and uid in self.index:
            self.dead_letter("duplicate-user-id", f"user id {uid} appears twice in the org", field, value)
            return
        chunk = self.n_users // self.batch_size
        self.n_users += 1
        if uid:
            self.index[uid] = chunk
        hashed = value["user"].get("hashedPassword") if field == "humanUsers" else None
        if isinstance(hashed, dict) and "algorithm" in hashed:
            # Older exports (and zitadel-tools' bodies) name the algorithm; the server reads it
            # from the hash string, and current servers refuse the unknown field, failing the
            # whole request (docs/zitadel-import-api.md). Dropped, as push --body does.
            value["user"]["hashedPassword"] = {k: v for k, v in hashed.items() if k != "algorithm"}
            line = orjson.dumps([field, value])
            self.bump("hash_algorithm_dropped")
        plan = self.add(BodyKey("users", self.pos, chunk), field, line)
        if field == "humanUsers":
            plan.users += 1
            self.bump("human_users")
            hashed = value["user"].get("hashedPassword")
            if isinstance(hashed, dict) and hashed.get("value"):
                self._tally_hash(hashed["value"])
        else:
            plan.machines += 1
            self.bump("machine_users")

    def _tally_hash(self, value: object) -> None:
        parsed = parse_hash(value)
        if not isinstance(parsed, ConvertedHash):
            self.bump("hashes_unparsed")  # the target will refuse it; counted, the user still goes
            return
        self.hash_counts[parsed.verifier] = self.hash_counts.get(parsed.verifier, 0) + 1
        ranges = self.hash_ranges.setdefault(parsed.verifier, {})
        for name, number in parsed.params:
            low, high = ranges.get(name, (number, number))
            ranges[name] = (min(low, number), max(high, number))

    def _record(self, field: str, value: object, line: bytes) -> None:
        uid = value.get(USER_RECORD_FIELDS[field]) if isinstance(value, dict) else None
        if uid in (None, ""):
            self.dead_letter("record-without-user", f"a {field} entry that names no user", field, value)
            return
        uid = str(uid)
        chunk = self.index.get(uid)
        if chunk is None:
            # The user may come later in this org (documents not in proto order) or be in another org.
            self.pending.append(orjson.dumps([uid, field, value]))
            if len(self.pending) >= _MAX_PENDING:
                path = os.path.join(self.work_dir, f"pending-{self.pos}-{len(self.pending_files)}.ndjson")
                with open(path, "wb") as handle:
                    handle.write(b"\n".join(self.pending) + b"\n")
                self.pending_files.append(path)
                self.pending = []
            return
        self._place(BodyKey("users", self.pos, chunk), field, value, line)

    def _place(self, key: BodyKey, field: str, value: object, line: bytes) -> BodyPlan:
        plan = self.add(key, field, line)
        plan.records += 1
        self.bump(f"records.{field}")
        if isinstance(value, dict):
            project = value.get("projectId")
            if project:
                plan.need_projects.add(str(project))
                if value.get("projectGrantId") or value.get("grantId"):
                    plan.need_grants_of.add(str(project))
        return plan

    def _iter_pending(self) -> Iterator[tuple[str, str, object]]:
        for path in self.pending_files:
            with open(path, "rb") as handle:
                for raw in handle:
                    uid, field, value = orjson.loads(raw)
                    yield uid, field, value
            os.unlink(path)
        for raw in self.pending:
            uid, field, value = orjson.loads(raw)
            yield uid, field, value

    def end_org(self) -> None:
        pos = self.pos
        if not self.org_id:
            self._dead_org()
        else:
            self.org_ids.append(self.org_id)
            self.org_pos_of.setdefault(self.org_id, pos)
            head = self.body(BodyKey("head", pos))
            for uid, field, value in self._iter_pending():
                chunk = self.index.get(uid)
                if chunk is not None:
                    self._place(BodyKey("users", pos, chunk), field, value, orjson.dumps([field, value]))
                else:
                    if self._unresolved_handle is None:
                        self._unresolved_handle = open(self.unresolved_file, "wb")
                    self._unresolved_handle.write(orjson.dumps([pos, uid, field, value]) + b"\n")
                    self.unresolved_ids.add(uid)
            for key in self.org_keys:
                plan = self.bodies[key]
                plan.org_id, plan.org = self.org_id, self.org
                if key.kind != "head":
                    plan.need_keys.add(head.key)
            if self.index:
                path = os.path.join(self.work_dir, f"index-{pos}.json")
                with open(path, "wb") as handle:
                    handle.write(orjson.dumps(self.index))
                self.index_files[pos] = path
            self.bump("orgs")
        self._start_org(pos + 1)

    def _dead_org(self) -> None:
        """An org without orgId cannot be imported: all it held becomes dead letters."""
        for key in self.org_keys:
            self._flush(key)
            plan = self.bodies.pop(key)
            self.order.remove(key)
            for path in plan.segments:
                from transforms.files.spill import read_spill

                for raw in read_spill(path).splitlines():
                    field, value = orjson.loads(raw)
                    self.dead_letter(
                        "org-without-id", "the organization has no orgId", field.lstrip("="), value, ""
                    )
        for _uid, field, value in self._iter_pending():
            self.dead_letter("org-without-id", "the organization has no orgId", field, value, "")
        self.bump("orgs_without_id")

    # -- the end
    def finish(self) -> ExportPlan:
        if self._unresolved_handle is not None:
            self._unresolved_handle.close()
            self._resolve_cross_org()
        for key in list(self.buffers):
            self._flush(key)
        # Indexes in document order: per org head, grants, users chunks, cross chunks.
        ordered = sorted(self.order, key=lambda k: (k.org_pos, _KIND_RANK[k.kind], k.chunk))
        plans = [self.bodies[k] for k in ordered]
        for i, plan in enumerate(plans):
            plan.index = i
        for plan in plans:
            plan.after = self._after(plan)
        for path in self.index_files.values():
            if os.path.exists(path):
                os.unlink(path)
        return ExportPlan(
            plans,
            dict(sorted(self.counts.items())),
            dict(sorted(self.dead_by_reason.items())),
            self.org_ids,
            self.hash_counts,
            self.hash_ranges,
        )

    def _after(self, plan: BodyPlan) -> list[int]:
        """The indexes of the bodies ``plan`` must wait for (its unresolved constraints resolved)."""
        deps: set[int] = {self.bodies[k].index for k in plan.need_keys if k in self.bodies}
        for org_id in plan.need_orgs:
            pos = self.org_pos_of.get(org_id)
            if pos is None:
                self.bump("grants_to_orgs_outside_export")
            elif BodyKey("head", pos) in self.bodies:
                deps.add(self.bodies[BodyKey("head", pos)].index)
        for project in plan.need_projects:
            owner = self.project_owner.get(project)
            if owner is not None and BodyKey("head", owner) in self.bodies:
                deps.add(self.bodies[BodyKey("head", owner)].index)
        for project in plan.need_grants_of:
            owner = self.project_owner.get(project)
            if owner is not None and BodyKey("grants", owner) in self.bodies:
                deps.add(self.bodies[BodyKey("grants", owner)].index)
        deps.discard(plan.index)
        return sorted(deps)

    def _resolve_cross_org(self) -> None:
        where: dict[str, tuple[int, int]] = {}
        for pos, path in self.index_files.items():
            with open(path, "rb") as handle:
                index = orjson.loads(handle.read())
            for uid in self.unresolved_ids:
                if uid in index and uid not in where:
                    where[uid] = (pos, index[uid])
        cross_counts: dict[int, int] = {}
        with open(self.unresolved_file, "rb") as handle:
            for raw in handle:
                pos, uid, field, value = orjson.loads(raw)
                home = where.get(uid)
                origin = self.bodies.get(BodyKey("head", pos))
                org_id = origin.org_id if origin else ""
                if home is None:
                    self.dead_letter(
                        "user-not-in-export",
                        f"{field} names user {uid}, who is not in the export",
                        field,
                        value,
                        org_id,
                    )
                    continue
                n = cross_counts.get(pos, 0)
                cross_counts[pos] = n + 1
                key = BodyKey("cross", pos, n // self.batch_size)
                new = key not in self.bodies
                plan = self._place(key, field, value, orjson.dumps([field, value]))
                if new and origin is not None:
                    plan.org_id, plan.org = origin.org_id, origin.org
                    plan.need_keys.add(BodyKey("head", pos))
                home_pos, home_chunk = home
                plan.need_keys.add(BodyKey("users", home_pos, home_chunk))
        os.unlink(self.unresolved_file)


def plan_export(
    handle: IO[bytes], seg_dir: str, batch_size: int, work_dir: str, dead: IO[bytes]
) -> ExportPlan:
    """Stream the export in ``handle``; write segments under ``seg_dir`` and dead letters to ``dead``.

    ``work_dir`` is a local scratch folder for the records waiting for their user. Raises
    ExportFormatError for a document that is not an export or is truncated.
    """
    planner = _Planner(seg_dir, batch_size, work_dir, dead)
    for _pos, field, value, is_item in iter_export(handle):
        if field == "":
            planner.end_org()
        else:
            planner.item(field, value, is_item)
    return planner.finish()
