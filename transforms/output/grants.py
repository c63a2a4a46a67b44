"""Project roles and user grants in import bodies: the catalogue, case collisions, rendering.

Sources put each user's grants into its row (``records.EncodedRow``'s ``grants``, ``records.Grants``) and
emit the project roles they used (``RoleEntry`` sets) on a ``roles`` output. This module:

- merges those role sets (plus the roles the export defines) into one **catalogue**, and resolves
  keys that differ only in case: ZITADEL compares role keys without case but matches a grant's
  keys exactly, so of ``Admin`` and ``admin`` the first in sorted order is kept and the other is
  skipped (``key-case-collision``, counted where grants are written);
- renders each user's ``userGrants`` items (``fragment_items``) for the bodies;
- renders the **authorizations body** (the project with ``--create-project``, every
  ``projectRoles`` entry), which the launcher lists first in the manifest;
- counts, for the manifest's ``authorizations`` and the summary (``authorizations_fields``).

Shape of the work::

    source roles ─┬─ MergeRoles (one dict) ─ ResolveRoles ─► losers (side input of the bodies)
    defined roles ┘                                   └──► <tmp>/roles-catalogue.json (launcher)
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from typing import Any

import apache_beam as beam
import orjson

from transforms.common import counters
from transforms.common.records import NAMESPACE, Grants
from transforms.mapping.roles import RoleEntry, RoleSettings, grant_items

__all__ = [
    "CATALOGUE_NAME",
    "SKIP_REASONS",
    "resolve",
    "filter_grants",
    "grant_items",
    "ResolveRoles",
    "read_catalogue",
    "authorizations_body",
    "authorizations_fields",
    "summary_lines",
    "invariant",
    "count_outcomes",
]

CATALOGUE_NAME = "roles-catalogue.json"
SKIP_REASONS = ("builtin", "key-too-long", "invalid-key", "key-case-collision", "user-dead-lettered")

Losers = frozenset[tuple[str, str]]


def resolve(entries: Iterable[RoleEntry]) -> tuple[list[RoleEntry], Losers]:
    """The catalogue (sorted) and the ``(project, key)`` pairs that lose a case collision.

    Per project, keys equal without case keep the first in sorted order; a key seen twice with
    other display names or groups keeps the smallest (deterministic whatever the input order).
    """
    best: dict[tuple[str, str], RoleEntry] = {}
    for entry in entries:
        pair = (entry[0], entry[1])
        if pair not in best or entry < best[pair]:
            best[pair] = entry
    kept: list[RoleEntry] = []
    losers: set[tuple[str, str]] = set()
    winner: dict[tuple[str, str], str] = {}
    for project, key in sorted(best):
        folded = (project, key.casefold())
        if folded in winner:
            losers.add((project, key))
            continue
        winner[folded] = key
        kept.append(best[(project, key)])
    return kept, frozenset(losers)


def filter_grants(grants: Grants, losers: Losers) -> tuple[Grants, int]:
    """``grants`` without the keys that lost a case collision, and how many were removed."""
    if not losers:
        return grants, 0
    out = []
    removed = 0
    for project, keys in grants:
        kept = tuple(k for k in keys if (project, k) not in losers)
        removed += len(keys) - len(kept)
        if kept:
            out.append((project, kept))
    return tuple(out), removed


def count_outcomes(counts: collections.Counter[str], outcomes: Iterable[tuple[str, int]]) -> None:
    """Add a user's role outcomes (``roles.user_grants``) to a counter dict, prefixed ``roles.``."""
    for name, value in outcomes:
        counts[counters.ROLES + name] += value


# --------------------------------------------------------------------------- Beam


class _MergeRolesFn(beam.CombineFn):
    def create_accumulator(self) -> set[RoleEntry]:
        return set()

    def add_input(self, acc: set[RoleEntry], entries: Iterable[RoleEntry]) -> set[RoleEntry]:
        acc.update(tuple(e) for e in entries)  # type: ignore[misc]  # lists after pickling
        return acc

    def merge_accumulators(self, accs: Iterable[set[RoleEntry]]) -> set[RoleEntry]:
        out: set[RoleEntry] = set()
        for acc in accs:
            out |= acc
        return out

    def extract_output(self, acc: set[RoleEntry]) -> list[RoleEntry]:
        return sorted(acc)


class _ResolveFn(beam.DoFn):
    def __init__(self, tmp_dir: str):
        self._tmp_dir = tmp_dir

    def process(self, entries: list[RoleEntry]):
        from apache_beam.io.filesystems import FileSystems

        from transforms.files.storage import open_private

        kept, losers = resolve(entries)
        with open_private(FileSystems.join(self._tmp_dir, CATALOGUE_NAME)) as handle:
            handle.write(orjson.dumps({"roles": kept, "losers": sorted(losers)}))
        beam.metrics.Metrics.counter(NAMESPACE, counters.AUTHORIZATIONS_ROLES).inc(len(kept))
        yield losers


class ResolveRoles(beam.PTransform):
    """Role sets → one ``frozenset`` of collision losers (a singleton PCollection); writes the
    catalogue to ``<tmp_dir>/roles-catalogue.json`` for the launcher's authorizations body."""

    def __init__(self, defined: list[RoleEntry], tmp_dir: str):
        super().__init__()
        self._defined = defined
        self._tmp_dir = tmp_dir

    def expand(self, roles: beam.PCollection) -> beam.PCollection:
        defined = roles.pipeline | "DefinedRoles" >> beam.Create([self._defined])
        return (
            (roles, defined)
            | "AllRoleSets" >> beam.Flatten()
            | "MergeRoles" >> beam.CombineGlobally(_MergeRolesFn())
            | "ResolveRoles" >> beam.ParDo(_ResolveFn(self._tmp_dir))
        )


# --------------------------------------------------------------------------- launcher


def read_catalogue(tmp_dir: str) -> list[RoleEntry]:
    """The resolved catalogue the pipeline wrote (empty when it wrote none)."""
    from apache_beam.io.filesystems import FileSystems

    path = FileSystems.join(tmp_dir, CATALOGUE_NAME)
    if not FileSystems.exists(path):
        return []
    with FileSystems.open(path) as handle:
        return [
            (project, key, display, group)
            for project, key, display, group in orjson.loads(handle.read())["roles"]
        ]


def authorizations_body(
    org_id: str, timeout: str, settings: RoleSettings, catalogue: list[RoleEntry], multiline: bool = False
) -> bytes:
    """The ImportDataRequest that creates the project (``--create-project``) and every role.

    ZITADEL adds projects and then roles in the first pass of an import (docs/roles.md), so one
    request holds both.
    """
    org: dict[str, Any] = {"orgId": org_id}
    if settings.create_project:
        org["projects"] = [{"projectId": settings.project_id, "project": {"name": settings.create_project}}]
    roles = []
    for project, key, display, group in catalogue:
        role = {"projectId": project, "roleKey": key, "displayName": display}
        if group:
            role["group"] = group
        roles.append(role)
    if roles:
        org["projectRoles"] = roles
    body = {"dataOrgs": {"orgs": [org]}, "timeout": timeout}
    option = orjson.OPT_INDENT_2 if multiline else 0
    return orjson.dumps(body, option=option) + b"\n"


def authorizations_fields(counts: Mapping[str, int], settings: RoleSettings | None, roles: int) -> dict:
    """The manifest's ``authorizations``."""
    skipped = {r: counts.get(counters.ROLES_SKIPPED + r, 0) for r in SKIP_REASONS}
    out: dict[str, Any] = {
        "project_id": settings.project_id if settings else None,
        "create_project": settings.create_project if settings else None,
        "client_projects": dict(settings.client_projects) if settings else {},
        "projects": len({settings.project_id, *dict(settings.client_projects).values()}) if settings else 0,
        "roles": roles,
        "grants": counts.get(counters.AUTHORIZATIONS_GRANTS, 0),
        "users_with_roles": counts.get(counters.AUTHORIZATIONS_USERS_WITH_ROLES, 0),
        "assignments": counts.get(counters.ROLES_ASSIGNED, 0),
        "assignments_carried": counts.get(counters.AUTHORIZATIONS_KEYS_CARRIED, 0),
        # Counted where users are read: a user dead-lettered later (a duplicate) is included.
        "undefined_roles_held": counts.get(counters.ROLES_UNDEFINED, 0),
        "skipped": skipped,
        "users_holding_roles": counts.get(counters.ROLES_USERS_HOLDING, 0),
    }
    holds, text = invariant(counts)
    out["invariant"] = {"holds": holds, "text": text}
    return out


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """Every role assignment read ends in a grant's key or a counted skip."""
    assigned = counts.get(counters.ROLES_ASSIGNED, 0)
    carried = counts.get(counters.AUTHORIZATIONS_KEYS_CARRIED, 0)
    skipped = sum(counts.get(counters.ROLES_SKIPPED + r, 0) for r in SKIP_REASONS)
    text = f"role assignments {assigned:,} = carried {carried:,} + skipped {skipped:,}"
    return assigned == carried + skipped, text


def summary_lines(counts: Mapping[str, int], settings: RoleSettings | None) -> list[tuple[str, Any]]:
    if settings is None:
        holding = counts.get(counters.ROLES_USERS_HOLDING, 0)
        if not holding:
            return []
        return [("users holding roles (not carried: --project-id carries them)", holding)]
    fields = authorizations_fields(counts, settings, counts.get(counters.AUTHORIZATIONS_ROLES, 0))
    lines: list[tuple[str, Any]] = [
        ("authorizations (project " + settings.project_id + ")", ""),
        ("  project roles", fields["roles"]),
        ("  users with roles (grants written)", fields["users_with_roles"]),
        ("  grants", fields["grants"]),
        ("  role assignments", fields["assignments"]),
        ("    carried", fields["assignments_carried"]),
        ("    of roles the export does not define (carried)", fields["undefined_roles_held"]),
    ]
    for reason, value in fields["skipped"].items():
        if value:
            lines.append((f"    skipped: {reason}", value))
    return lines
