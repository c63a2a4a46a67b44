"""The Auth0 reader's routing step: MFA and role records (keyed by user_id) → their profile's partition.

For whoever changes how ``--mfa`` or ``--roles-file`` records find their user. Profiles are
partitioned by e-mail, these records carry only a ``user_id``; this step takes each one to the
e-mail partition of the profile with that id, where ``join`` attaches it by sortkey::

    ParseUnits ─► routes: (hash(user_id), [(ROUTES, blob) from profiles, (MFA | ROLE_RECORDS, blob)])
        ─ GroupByKey ─ RouteMfa ─► (e-mail partition, (MFA | ROLE_RECORDS, blob)) ─► GroupPartitions
                          └─► dead letters (unknown-user)

Item shapes: ``items`` (``RouteItem``, ``MfaRecord``/``RoleRecord`` → ``OtpItem``/``RoleItem``).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable

import apache_beam as beam
import orjson

from transforms.common.records import dead_letter, no_gc
from transforms.files.spill import load_blob, write_spill
from transforms.mapping.validate import Reason
from transforms.sources.auth0.items import SOURCES, Kind, RouteItem
from transforms.sources.auth0.parse import DEAD

__all__: list[str] = []

# An OTP secret (MFA records) or sorted role names (role records).
_Payload = str | tuple[str, ...]
# user_id → (e-mail partition, file_index, position) of the first profile with that id.
_Routes = dict[str, tuple[int, int, int]]


class _RouteMfaFn(beam.DoFn):
    """Take MFA and role records to the e-mail partition of the profile with their ``user_id``.

    Why a routing step rather than a side input: an MFA export can hold a record per user (millions),
    and a side input would be materialised in full on every worker. Here both sides are grouped by
    a hash of ``user_id`` (profiles send ``(user_id, e-mail partition, sortkey)``, a few dozen bytes
    each), so each worker holds one partition's slice, and the records then join their profile
    in ``_JoinPartitionFn`` by its sortkey. The cost is one extra shuffle of small tuples.
    """

    def __init__(self, tmp_dir: str):
        self._tmp_dir = tmp_dir

    def process(self, element: tuple[int, Iterable[tuple[int, str]]]):
        part, blobs = element
        with no_gc():
            routes: _Routes = {}
            records: list[tuple[int, int, str, _Payload, bytes, int]] = []  # an MfaRecord/RoleRecord + kind
            for kind, spilled in blobs:
                items = pickle.loads(load_blob(spilled))
                if kind in (Kind.MFA, Kind.ROLE_RECORDS):
                    records.extend(item + (kind,) for item in items)
                else:
                    _add_routes(routes, items)
            records.sort(key=lambda r: (r[0], r[1]))
            out: dict[tuple[int, int], list[tuple[int, int, int, int, _Payload, bytes]]] = {}
            for file_index, position, user_id, payload, raw, kind in records:
                target = routes.get(user_id)
                if target is None:
                    yield beam.pvalue.TaggedOutput(
                        DEAD,
                        dead_letter(
                            (file_index, position),
                            Reason.UNKNOWN_USER,
                            "no profile has this user_id",
                            SOURCES[kind],
                            orjson.Fragment(raw),
                        ),
                    )
                    continue
                email_part, target_file, target_position = target
                out.setdefault((kind, email_part), []).append(
                    (file_index, position, target_file, target_position, payload, raw)
                )
        for (kind, email_part), joined in out.items():
            name = f"{'mfa' if kind == Kind.MFA else 'roles'}-r{part:03d}-p{email_part:03d}.pkl"
            blob = pickle.dumps(joined, protocol=pickle.HIGHEST_PROTOCOL)
            yield email_part, (kind, write_spill(self._tmp_dir, name, blob))


def _add_routes(routes: _Routes, items: Iterable[RouteItem]) -> None:
    """Several profiles with one user_id: the first in input order keeps the id."""
    for user_id, email_part, file_index, position in items:
        known = routes.get(user_id)
        if known is None:
            routes[user_id] = (email_part, file_index, position)
            continue
        _, known_file, known_position = known
        if (file_index, position) < (known_file, known_position):
            routes[user_id] = (email_part, file_index, position)
