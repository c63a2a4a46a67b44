"""Auth0 exports → user rows: parse profile and password files, join them, map, validate.

The public transform of the Auth0 reader, for whoever wires a pipeline (``command.py``'s plan).
Shape of the work (few, large elements; see ``transforms/common/records.py``)::

    files ─ PlanUnits ─ Reshuffle ─ ParseUnits ──► (partition, (kind, blob)) ─ GroupByKey
                                       └─► dead letters (malformed, rejected profiles)
    (partition, [(PROFILES, blob), (PASSWORDS, blob), ...]) ─ JoinPartition ─► (partition, rows_blob)
                                                                     └─► dead letters

ParseUnits (``parse``) does all per-record work (parse, map, validate, encode) in parallel
over 32 MB units; JoinPartition (``join``) only matches small tuples and splices the chosen
hash into the encoded user. The partition is a stable hash of the e-mail trimmed and case-folded,
so a profile and its password records always meet in the same partition and the join is linear
in the input size. The items the steps exchange are described in ``items``.

Shapes accepted without flags: password exports keyed ``_id`` or ``_ID`` (``$oid`` objects or
plain strings), the ``"version":"1.1"`` layout (e-mail in ``identifiers[]``, ``last_password_reset``),
Management API profiles with explicit nulls, and bulk-import profiles carrying their own
``custom_password_hash`` (joined like a password record, source ``auth0-custom-hash``).

With MFA files (``--mfa``) or a roles file (``--roles-file``), records are keyed by ``user_id``,
not e-mail, so they take one more step to reach their profile's partition (``route``)::

    ParseUnits ─► routes: (hash(user_id), [(ROUTES, blob) from profiles, (MFA, blob) from MFA files])
        ─ GroupByKey ─ RouteMfa ─► (e-mail partition, (MFA, blob)) ─┐ (into GroupPartitions)
                          └─► dead letters (unknown-user)           │

Example::

    result = (pipeline | 'ReadAuth0' >> ReadAuth0Users(profile_files, password_files, options, 32, tmp_dir))
    rows, dead = result.rows, result.dead
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apache_beam as beam

from transforms.common.records import DeadLetter, PartitionRows
from transforms.sources import json_units
from transforms.sources.auth0.items import Kind
from transforms.sources.auth0.join import ROLES, _JoinPartitionFn
from transforms.sources.auth0.options import Auth0Options
from transforms.sources.auth0.parse import DEAD, ROUTES, _ParseUnitFn, _PlanUnitsFn
from transforms.sources.auth0.route import _RouteMfaFn
from transforms.sources.source_parts import ReadUsers

__all__ = ["ReadAuth0Users"]


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadAuth0Users(beam.PTransform):
    """Auth0 profile + password (+ MFA) files → ``{'rows': (partition, rows spill path), 'dead': dead letters}``.

    Intermediate data goes to spill files under ``tmp_dir`` (see ``transforms/files/spill.py``).

    ``profile_files``, ``password_files`` and ``mfa_files`` come from ``json_units.match_inputs``
    (run in the launcher, so a missing file fails before the pipeline starts). Without MFA
    files, the routing step is not part of the pipeline. With ``options.roles_project``, the
    result also has ``'roles'``: the project roles the users hold (``transforms/output/grants.py``).
    """

    def __init__(
        self,
        profile_files: Sequence[json_units.InputFile],
        password_files: Sequence[json_units.InputFile],
        options: Auth0Options,
        partitions: int,
        tmp_dir: str,
        mfa_files: Sequence[json_units.InputFile] = (),
        role_files: Sequence[json_units.InputFile] = (),
    ):
        super().__init__()
        self._files = (
            [(Kind.PROFILES, f) for f in profile_files]
            + [(Kind.PASSWORDS, f) for f in password_files]
            + [(Kind.MFA, f) for f in mfa_files]
            + [(Kind.ROLE_RECORDS, f) for f in role_files]
        )
        self._options = options
        self._partitions = partitions
        self._tmp_dir = tmp_dir
        self._route_mfa = bool(mfa_files) or bool(role_files)  # both are joined on user_id

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        """Returns ``ReadUsers(rows, dead)`` (and ``roles`` when asked for them)."""
        units = (
            pbegin
            | "ListFiles" >> beam.Create(self._files)
            | "PlanUnits" >> beam.ParDo(_PlanUnitsFn())
            | "SpreadUnits" >> beam.Reshuffle()
        )
        parsed = units | "ParseUnits" >> beam.ParDo(
            _ParseUnitFn(self._partitions, self._options, self._tmp_dir, self._route_mfa)
        ).with_outputs(DEAD, ROUTES, main="parts")
        parts, dead = parsed.parts, [parsed[DEAD]]
        if self._route_mfa:
            routed = (
                parsed[ROUTES]
                | "GroupByUserId" >> beam.GroupByKey()
                | "RouteMfa" >> beam.ParDo(_RouteMfaFn(self._tmp_dir)).with_outputs(DEAD, main="parts")
            )
            parts = (parts, routed.parts) | "WithMfa" >> beam.Flatten()
            dead.append(routed[DEAD])
        joined = (
            parts
            | "GroupPartitions" >> beam.GroupByKey()
            | "JoinPartitions"
            >> beam.ParDo(_JoinPartitionFn(self._options, self._tmp_dir))
            .with_output_types(PartitionRows, **{DEAD: DeadLetter, ROLES: Any})
            .with_outputs(DEAD, ROLES, main="rows")
        )
        dead = tuple(dead) + (joined[DEAD],) | "MergeDeadLetters" >> beam.Flatten().with_output_types(
            DeadLetter
        )
        if self._options.roles_project is not None:  # transforms/output/grants.py resolves them
            return ReadUsers(joined.rows, dead, joined[ROLES])
        return ReadUsers(joined.rows, dead)
