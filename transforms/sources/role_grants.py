"""Users' role names → grants of ``--project-id``, for any reader (docs/roles.md).

A reader that collects roles (``RecordPart.collects_roles``; Auth0's join) keeps one
:class:`JoinRoles` per unit: each user's role names become grants of the project (one result per
combination of names, shared by the rows), the outcomes are counted, and at the end of the unit
the role entries the grants used are published, which ``transforms/output/grants.py`` resolves.

Example::

    roles = JoinRoles("project-1")
    roles.user(("admin", "viewer"), (), dead=False)   # (("project-1", ("admin", "viewer")),)
    entries = roles.publish()                         # [("project-1", "admin", "admin", ""), ...]
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence

from apache_beam.metrics import Metrics

from transforms.common import counters
from transforms.common.records import NAMESPACE, Grants
from transforms.mapping.roles import display_name, grants_from_names

__all__ = ["JoinRoles"]


class JoinRoles:
    """A partition's (or a file's) grants: the union of each user's role names, those of its
    profile and those of each role record joined to it (Auth0's ``--roles-file``)."""

    def __init__(self, project: str | None, joined: str = ""):
        self._project = project
        self._joined = joined  # the counter of role records joined, of a source that has them
        self._counts: collections.Counter[str] = collections.Counter()
        self._keys: set[str] = set()
        self._cache: dict[tuple[str, ...], tuple[Grants, tuple[tuple[str, int], ...]]] = {}

    def user(self, names: tuple[str, ...], records: Sequence[tuple[str, ...]], dead: bool) -> Grants:
        """``names``: the user's role names (sorted, unique); ``records``: the names of each role
        record joined to it; ``dead``: the user is dead-lettered (its roles are counted as skipped)."""
        if self._project is None:
            return ()
        if not records and not dead:
            # The common case: --roles-from only. One result per role combination (shared by
            # the rows, so the rows' pickle holds each combination once).
            cached = self._cache.get(names)
            if cached is None:
                outcomes: collections.Counter[str] = collections.Counter()
                cached = (grants_from_names(names, self._project, outcomes), tuple(outcomes.items()))
                for _, keys in cached[0]:
                    self._keys.update(keys)
                if len(self._cache) < 10_000:
                    self._cache[names] = cached
            grants, counted = cached
            for name, value in counted:
                self._counts[name] += value
            return grants
        union: Iterable[str] = names
        if records:
            union = set(names)
            for record_names in records:
                union.update(record_names)
                if not dead and self._joined:
                    self._counts[self._joined] += 1
        if not union:
            return ()
        grants = grants_from_names(union, self._project, self._counts)
        if dead:
            self._counts[counters.ROLES_SKIPPED_DEAD_LETTERED] += sum(len(k) for _, k in grants)
            return ()
        for _, keys in grants:
            self._keys.update(keys)
        return grants

    def publish(self) -> list[tuple[str, str, str, str]]:
        """The counts published (Beam counters); the role entries the grants used."""
        for name, value in self._counts.items():
            Metrics.counter(NAMESPACE, name).inc(value)
        return sorted((self._project or "", key, display_name(None, key), "") for key in self._keys)
