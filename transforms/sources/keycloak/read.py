"""Keycloak realm exports → user rows: the Keycloak part of the shared reader (``file_reader.py``).

Shape of the work (few, large elements; see ``transforms/common/records.py``)::

    RealmSource per file ─ Reshuffle ─ ReadUnits ──► (partition, rows_blob or spill path)
                                           │            one per partition and ~20,000 users
                                           ├─► dead letters (sortkey, line)
                                           └─► roles (with --project-id)

Each file is read by one worker with ijson's C backend (``transforms/sources/file_reader.py``:
opening, counting, chunks, the unreadable rest), so a 1 GB realm never sits in memory whole and
the ``<realm>-users-N.json`` files of a split export (``kc.sh export --users different_files``)
are read in parallel. Which files to read is decided in the launcher (``realm_files.py``: a
folder, a split export's parts and a multi-realm array are Keycloak's own); what one user becomes
is the pure mapping (``mapping.py``); this module says what a user's row holds.

Example::

    sources = plan_realm_sources("exports/", realm_name="acme")
    result = pipeline | "ReadKeycloak" >> ReadKeycloakUsers(sources, KeycloakOptions(), 32, tmp_dir)
    rows, dead = result.rows, result.dead
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import cast

import apache_beam as beam
import orjson

from transforms.common import counters
from transforms.common.records import Grants, SortKey
from transforms.hashing.policy import ON_UNSUPPORTED_HASH
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.fields import FieldTally
from transforms.mapping.roles import KeycloakRoles, RoleEntry, direct_roles_beyond_builtin
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    UserRow,
    encode_user,
    guarded_records,
    row_tallies,
)
from transforms.sources.input_stream import InputStream
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
from transforms.sources.keycloak.realm_files import RealmSource, iter_users
from transforms.sources.source_parts import ReadUsers

__all__ = ["ReadKeycloakUsers", "FILE_SOURCE", "CHUNK_USERS"]

# Users read before the buffered rows are flushed as one blob per partition: large enough that
# Beam moves few elements, small enough that a worker holds only a slice of a 1 GB realm.
CHUNK_USERS = 20_000


class _KeycloakPart(RecordPart[RealmSource]):
    """A realm's ``users`` → rows, grants with ``--project-id`` (``file_reader.py``)."""

    name, source, file_source = "keycloak", SOURCE, FILE_SOURCE
    read, unreadable = kc.USERS_READ, kc.UNREADABLE_FILES

    def __init__(self, options: KeycloakOptions, roles: KeycloakRoles | None):
        self._options = options
        # transforms.mapping.roles.KeycloakRoles with --project-id (grants in rows), else None.
        self._roles = roles
        self.collects_roles = roles is not None
        self._held: set[RoleEntry] = set()
        self._realm = ""

    def setup(self) -> None:
        self._tally = HashTally()
        not_carried = not_carried_keys(self._options.metadata)
        if self._roles is not None:  # carried as grants (transforms/mapping/roles.py)
            not_carried = not_carried - {"realmRoles", "clientRoles", "groups"}
        self._fields = FieldTally("keycloak", KNOWN_FIELDS, not_carried)

    def split(self, unit: RealmSource, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        self._source = unit
        shown = functools.partial(_position, unit.path)
        return guarded_records(open_stream(), functools.partial(iter_users, unit), shown)

    def finish(self) -> list[RoleEntry] | None:
        self._tally.publish()
        held, self._held = sorted(self._held), set()
        return held if self._roles is not None else None  # the roles users hold the export does not define

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        user, realm = record.value, self._source.realm
        others = other_credential_types(user.get("credentials")) if isinstance(user, Mapping) else []
        for kind in others:
            counts[kc.OTHER_CREDENTIALS + kind] += 1
        mapped = map_user(user, self._options, realm, self._source.otp_policy)
        if isinstance(mapped, Rejection):
            if self._roles is not None and isinstance(user, Mapping):  # roles: docs/roles.md
                self._count_roles(user, counts, dead=True)
            self._tally.refused(mapped.refused)
            return Rejected(mapped.reason, mapped.detail, user)
        user = cast(Mapping[str, object], user)  # map_user accepted it: a JSON object
        grants = self._count_roles(user, counts, realm=realm)
        try:
            row = self._row(sortkey, mapped, user, grants, others)
        except orjson.JSONEncodeError:  # the reader dead-letters the user: its grants are not given
            counts[counters.ROLES_SKIPPED_DEAD_LETTERED] += sum(len(keys) for _, keys in grants)
            raise
        self._count_converted(mapped, counts)
        return UserRow(mapped.entry.get("userId") or mapped.entry["user"]["userName"], row)

    def _row(
        self,
        sortkey: SortKey,
        mapped: MappedUser,
        user: Mapping[str, object],
        grants: Grants,
        others: list[str],
    ):
        entry = mapped.entry
        # The hash's verifier; a plaintext password is "password"; "" for none.
        password = mapped.converted.verifier if mapped.converted is not None else ""
        if not password and "password" in entry["user"]:
            password = "password"
        tallies, line = self._written(user, mapped, others)
        return encode_user(
            sortkey,
            source=SOURCE,
            user_id=entry.get("userId") or "",
            entry=entry,
            metadata=mapped.metadata,
            password=password,
            record_json=orjson.dumps(user),
            grants=grants or (),
            tallies=tallies,
            passwordless=line,
        )

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
        return row_tallies(fields, names), line

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


def _position(path: str, position: int) -> dict[str, object]:
    """What the dead letter of a user the depth guard cut shows: where it was."""
    return {"file": path, "position": position}


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadKeycloakUsers(beam.PTransform):
    """Realm files → ``{'rows': (partition, rows_blob), 'dead': (sortkey, line)}`` (+ ``roles``).

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
        if options.on_unsupported_hash not in ON_UNSUPPORTED_HASH:
            raise ValueError(f"on_unsupported_hash must be one of {', '.join(ON_UNSUPPORTED_HASH)}")
        part = _KeycloakPart(options, roles)
        self._read = ReadSourceFiles(sources, part, partitions=partitions, tmp_dir=tmp_dir, chunk=chunk_users)

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        """Returns ``ReadUsers(rows, dead)`` (and ``roles`` with ``--project-id``)."""
        return pbegin | "ReadRealmFiles" >> self._read
