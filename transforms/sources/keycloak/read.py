"""Keycloak realm exports → user rows: stream the ``users`` array, map, convert hashes, validate.

Shape of the work (few, large elements; see ``transforms/common/records.py``)::

    RealmSource per file ─ Reshuffle ─ ReadRealmFile ──► (partition, rows_blob or spill path)
                                            │                   one per partition and ~20,000 users
                                            └─► dead letters (sortkey, line)

Each file is read by one worker with ijson's C backend straight from ``FileSystems.open``
(local or gs://), so a 1 GB realm never sits in memory whole and the ``<realm>-users-N.json``
files of a split export (``kc.sh export --users different_files``) are read in parallel.
Which files to read is decided in the launcher (``realm_files.py``); what one user
becomes is the pure mapping (``mapping.py``); this module streams, counts and packs.

Example::

    sources = plan_realm_sources("exports/", realm_name="acme")
    result = pipeline | "ReadKeycloak" >> ReadKeycloakUsers(sources, KeycloakOptions(), 32, tmp_dir)
    rows, dead = result.rows, result.dead
"""

from __future__ import annotations

import collections
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import cast

import apache_beam as beam
import ijson
import orjson
from apache_beam.metrics import Metrics

from transforms.common import counters, live_tally
from transforms.common.errors import one_line
from transforms.common.records import (
    NAMESPACE,
    DeadLetter,
    EncodedRow,
    Grants,
    PartitionRows,
    SortKey,
    dead_letter,
    encoded_row,
    intern_tallies,
    no_gc,
    partition_of,
    user_name_key,
)
from transforms.files.spill import spill_parts
from transforms.hashing.policy import ON_UNSUPPORTED_HASH
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.fields import FieldTally
from transforms.mapping.otp import OtpPolicy
from transforms.mapping.roles import KeycloakRoles, RoleEntry, direct_roles_beyond_builtin
from transforms.mapping.validate import Reason
from transforms.sources.input_stream import DepthGuard, InputReadError, has_marker, marker_problem
from transforms.sources.keycloak import accounting as kc
from transforms.sources.keycloak.accounting import FILE_SOURCE, SOURCE
from transforms.sources.keycloak.mapping import (
    KNOWN_FIELDS,
    KeycloakOptions,
    MappedUser,
    Rejection,
    map_user,
    not_carried_keys,
    other_credential_types,
)
from transforms.sources.keycloak.realm_files import (
    RealmSource,
    iter_users,
    open_realm_file,
)
from transforms.sources.source_parts import ReadUsers

__all__ = ["ReadKeycloakUsers", "FILE_SOURCE", "CHUNK_USERS"]

_LOGGER = logging.getLogger(__name__)

_ROLES = "roles"  # the project roles users hold that the export does not define (with roles)
_DEAD = "dead"

# Users read before the buffered rows are flushed as one blob per partition: large enough that
# Beam moves few elements, small enough that a worker holds only a slice of a 1 GB realm.
CHUNK_USERS = 20_000


class _ReadRealmFileFn(beam.DoFn):
    """Stream one file's users; emit ``(partition, rows_blob)`` per partition every chunk."""

    def __init__(
        self,
        options: KeycloakOptions,
        partitions: int,
        chunk_users: int,
        tmp_dir: str | None,
        roles: KeycloakRoles | None = None,
    ):
        self._options = options
        self._partitions = partitions
        self._chunk = chunk_users
        self._tmp_dir = tmp_dir
        # transforms.mapping.roles.KeycloakRoles with --project-id (grants in rows), else None.
        self._roles = roles
        self._held: set[RoleEntry] = set()

    def setup(self):
        self._tally = HashTally()
        not_carried = not_carried_keys(self._options.metadata)
        if self._roles is not None:  # carried as grants (transforms/mapping/roles.py)
            not_carried = not_carried - {"realmRoles", "clientRoles", "groups"}
        self._fields = FieldTally("keycloak", KNOWN_FIELDS, not_carried)

    def process(self, source: RealmSource):
        counts: collections.Counter[str] = collections.Counter()
        parts: dict[int, list[EncodedRow]] = {}
        position = 0
        try:
            # no_gc: many small dicts per chunk, and the cyclic GC would rescan them all.
            with no_gc(), open_realm_file(source.path, progress=True) as handle:
                if handle.encoding:
                    counts[counters.INPUTS_DECODED + handle.encoding] += 1
                guard = DepthGuard(handle)
                users = iter_users(source, guard)
                seen_cuts = 0
                while True:
                    try:
                        user = next(users)
                    except StopIteration:
                        break
                    except InputReadError as err:  # a .gz cut short or damaged
                        detail = (
                            f"{one_line(err)}; {position} users were read before it, "
                            "the rest of the file was not read"
                        )
                        counts[f"{counters.INPUTS_PARTIAL}{source.index}"] += position
                        yield _unreadable_rest(source, position, detail, counts)
                        break
                    except (ijson.JSONError, ValueError) as err:  # ValueError: bad UTF-8, numbers
                        # Nothing after a syntax error can be located reliably: one dead letter
                        # for the rest of the file, and the run goes on with the other files.
                        detail = (
                            f"{os.path.basename(source.path)}: JSON syntax error after user {position} "
                            f"({one_line(err)}); the rest of the file was not read"
                        )
                        yield _unreadable_rest(source, position, detail, counts)
                        break
                    dead: DeadLetter | None
                    marker = has_marker(user) if guard.cut > seen_cuts else None
                    if marker is not None:
                        seen_cuts += 1
                        counts[kc.USERS_READ] += 1
                        reason, detail = marker_problem(marker)
                        dead = dead_letter(
                            (source.index, position),
                            reason,
                            f"user {position}: {detail}",
                            SOURCE,
                            {"file": source.path, "position": position},
                        )
                    else:
                        dead = self._one(
                            user, (source.index, position), parts, counts, source.realm, source.otp_policy
                        )
                    position += 1
                    if dead is not None:
                        yield beam.pvalue.TaggedOutput(_DEAD, dead)
                    if position % self._chunk == 0:
                        live_tally.add(live_tally.PARSED, self._chunk)  # the live line (live_tally.py)
                        yield from self._flush(source, position, parts)
            live_tally.add(live_tally.PARSED, position % self._chunk)
            yield from self._flush(source, position, parts)
            if self._roles is not None:  # the roles users hold that the export does not define
                yield beam.pvalue.TaggedOutput(_ROLES, sorted(self._held))
                self._held = set()
        finally:
            counts[kc.USERS_READ] += 0  # always reported, even for an empty realm
            for name, value in counts.items():
                Metrics.counter(NAMESPACE, name).inc(value)
            self._tally.publish()

    def _one(
        self,
        user: object,
        sortkey: SortKey,
        parts: dict[int, list[EncodedRow]],
        counts: collections.Counter[str],
        realm: str = "",
        otp_policy: OtpPolicy | None = None,
    ) -> DeadLetter | None:
        counts[kc.USERS_READ] += 1
        others = other_credential_types(user.get("credentials")) if isinstance(user, Mapping) else []
        for kind in others:
            counts[kc.OTHER_CREDENTIALS + kind] += 1
        mapped = map_user(user, self._options, realm, otp_policy)
        if isinstance(mapped, Rejection):
            if self._roles is not None and isinstance(user, Mapping):  # roles: docs/roles.md
                self._count_roles(user, counts, dead=True)
            self._tally.refused(mapped.refused)
            return _dead_letter(sortkey, mapped.reason, mapped.detail, user)
        user = cast(Mapping[str, object], user)  # map_user accepted it: a JSON object
        grants = self._count_roles(user, counts, realm=realm)
        try:
            # Each row is encoded here, one at a time, so a value JSON cannot carry (an integer
            # beyond 64 bits from a non-C ijson backend) rejects this user, not the whole chunk.
            row = _row(sortkey, mapped, user, grants, self._written(user, mapped, others))
        except orjson.JSONEncodeError as err:
            counts[counters.ROLES_SKIPPED_DEAD_LETTERED] += sum(len(keys) for _, keys in grants)
            return _dead_letter(
                sortkey,
                Reason.UNREADABLE_INPUT,
                f"user holds a value JSON output cannot carry ({one_line(err)})",
                user,
            )
        self._count_converted(mapped, counts)
        key = mapped.entry.get("userId") or mapped.entry["user"]["userName"]
        parts.setdefault(partition_of(key, self._partitions), []).append(row)
        return None

    def _count_converted(self, mapped: MappedUser, counts: collections.Counter[str]) -> None:
        """What the summary counts about a user converted (written or, later, a duplicate)."""
        if mapped.password is not None:
            counts[f"{kc.WITH_PASSWORD}{mapped.password}"] += 1
        else:
            counts[kc.WITHOUT_PASSWORD] += 1
        if mapped.federated:
            counts[kc.FEDERATED] += 1
        if mapped.dropped_hash is not None:
            counts[f"{kc.PASSWORD_DROPPED}{mapped.dropped_hash.reason}"] += 1
        if mapped.converted is not None:
            self._tally.add(mapped.converted)
        if self._options.metadata:
            counts[kc.METADATA_ENTRIES] += len(mapped.metadata)
            counts[kc.METADATA_DROPPED] += mapped.metadata_dropped

    def _written(
        self, user: Mapping[str, object], mapped: MappedUser, others: list[str]
    ) -> tuple[tuple[str, ...], bytes]:
        """What the summary and the manifest count about the user once it is written: the row's
        ``tallies`` and passwordless line (transforms/output/written.py counts them)."""
        names = [f"{kc.IDP_LINKS}{outcome}.{alias}" for outcome, alias in mapped.link_outcomes]
        if mapped.password is None and "idps" not in mapped.entry["user"]:
            names.append(counters.CANNOT_SIGN_IN + kc.PREFIX)
        line = b""
        if mapped.dropped_hash is not None:
            email = mapped.entry["user"].get("email")
            name, line = passwordless(
                mapped.dropped_hash.reason,
                mapped.entry.get("userId"),
                email.get("email") if isinstance(email, dict) else None,
            )
            names.append(name)
            refused = self._tally.refused_name(mapped.dropped_hash.refused)
            if refused is not None:
                names.append(refused)
        names += [counters.note(note) for note in mapped.notes]
        names += [kc.OTP_NOT_CARRIED + cause for cause in mapped.otp_not_carried]
        names += [kc.REQUIRED_ACTIONS_NOT_CARRIED + action for action in mapped.required_actions_not_carried]
        if mapped.password_change_required:
            names.append(kc.PASSWORD_CHANGE_REQUIRED)
        fields = self._fields.names(user, tuple(f"credentials.{kind}" for kind in others) if others else ())
        return (intern_tallies((*fields, *names)) if names else fields), line

    def _count_roles(
        self,
        user: Mapping[str, object],
        counts: collections.Counter[str],
        dead: bool = False,
        realm: str = "",
    ) -> Grants:
        """The user's grants (transforms/mapping/roles.py); its role outcomes counted under ``roles.``."""
        if self._roles is None:
            if direct_roles_beyond_builtin(user, realm):
                counts[counters.ROLES_USERS_HOLDING] += 1
            return ()
        grants, outcomes = self._roles.user_grants(user)
        for name, value in outcomes:
            if not (dead and name == "undefined"):
                counts[counters.ROLES + name] += value
        if dead:
            counts[counters.ROLES_SKIPPED_DEAD_LETTERED] += sum(len(keys) for _, keys in grants)
            return ()
        if any(name == "undefined" for name, _ in outcomes):
            self._held.update(self._roles.held_entries(user))
        return grants

    def _flush(
        self, source: RealmSource, position: int, parts: dict[int, list[EncodedRow]]
    ) -> Iterator[tuple[int, bytes | str]]:
        """One blob per partition (rows already encoded one by one in ``_one``), or the path of
        its spill file (files/spill.py)."""
        prefix = f"keycloak-{source.index:05d}-{source.item or 0:03d}-{position:010d}"
        return spill_parts(parts, self._tmp_dir, lambda part: f"{prefix}-p{part:03d}.pkl")


def _row(
    sortkey: SortKey,
    mapped: MappedUser,
    user: Mapping[str, object],
    grants: Grants,
    written: tuple[tuple[str, ...], bytes],
) -> EncodedRow:
    """A Keycloak user's row (``records.encoded_row``): the JSON of the entry, metadata and record
    rendered once; ``written``: its tallies and passwordless line."""
    file_index, position = sortkey
    entry = mapped.entry
    user_id = entry.get("userId") or ""
    # The hash's verifier; a plaintext password is "password"; "" for none.
    password = mapped.converted.verifier if mapped.converted is not None else ""
    if not password and "password" in entry["user"]:
        password = "password"
    metadata = mapped.metadata
    meta = orjson.dumps([{"id": user_id, **item} for item in metadata])[1:-1] if metadata else b""
    return encoded_row(
        file_index=file_index,
        position=position,
        user_id=user_id,
        name_key=user_name_key(entry["user"].get("userName")),
        entry_json=orjson.dumps(entry),
        metadata_json=meta,
        password=password,
        source=SOURCE,
        record_json=orjson.dumps(user),
        companions_json=b"",  # a Keycloak user is one record
        grants=grants or (),
        tallies=written[0],
        passwordless=written[1],
    )


def _dead_letter(sortkey: SortKey, reason: str, detail: str, user: object) -> DeadLetter:
    try:
        return dead_letter(sortkey, reason, detail, SOURCE, user)
    except orjson.JSONEncodeError:
        # The record itself cannot be written as JSON: point at it instead.
        return dead_letter(
            sortkey, reason, detail, SOURCE, {"unencodable_record": True, "position": sortkey[1]}
        )


# --------------------------------------------------------------------------- PTransform


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadKeycloakUsers(beam.PTransform):
    """Realm files → ``{'rows': (partition, rows_blob), 'dead': (sortkey, line)}``.

    ``sources`` come from :func:`plan_realm_sources` (run in the launcher, so a missing or
    unusable realm fails before the pipeline starts). With ``tmp_dir``, each blob is written to
    a spill file there and the element carries its path (``transforms/files/spill.py``), which keeps
    the runner's memory small; without it, the blobs themselves are the elements.
    """

    def __init__(
        self,
        sources: Sequence[RealmSource],
        options: KeycloakOptions,
        partitions: int,
        tmp_dir: str | None = None,
        chunk_users: int = CHUNK_USERS,
        roles: KeycloakRoles | None = None,
    ):
        super().__init__()
        self._roles = roles  # transforms.mapping.roles.KeycloakRoles (--project-id), or None
        if options.on_unsupported_hash not in ON_UNSUPPORTED_HASH:
            raise ValueError(f"on_unsupported_hash must be one of {', '.join(ON_UNSUPPORTED_HASH)}")
        self._sources = list(sources)
        self._options = options
        self._partitions = partitions
        self._chunk = chunk_users
        self._tmp_dir = tmp_dir

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        """Returns ``ReadUsers(rows, dead)`` (and ``roles`` when asked for them)."""
        read = (
            pbegin
            | "ListRealmFiles" >> beam.Create(self._sources)
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadRealmFiles"
            >> beam.ParDo(
                _ReadRealmFileFn(self._options, self._partitions, self._chunk, self._tmp_dir, self._roles)
            )
            .with_output_types(PartitionRows, **{_DEAD: DeadLetter, _ROLES: list[RoleEntry]})
            .with_outputs(_DEAD, _ROLES, main="rows")
        )
        if self._roles is not None:  # with roles: transforms/output/grants.py resolves them
            return ReadUsers(read.rows, read[_DEAD], read[_ROLES])
        return ReadUsers(read.rows, read[_DEAD])


def _unreadable_rest(
    source: RealmSource, position: int, detail: str, counts: collections.Counter[str]
) -> beam.pvalue.TaggedOutput:
    """The one dead letter for the rest of a realm file that cannot be read on (logged, counted)."""
    _LOGGER.error("%s", detail)
    counts[kc.UNREADABLE_FILES] += 1
    return beam.pvalue.TaggedOutput(
        _DEAD,
        dead_letter(
            (source.index, position),
            Reason.UNREADABLE_INPUT,
            detail,
            FILE_SOURCE,
            {"file": source.path, "position": position},
        ),
    )
