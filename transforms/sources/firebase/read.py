"""Firebase Auth exports → user rows: the Firebase part of the shared reader (``file_reader.py``).

Shape of the work (few, large elements; see ``transforms/common/records.py``)::

    FirebaseFile per file ─ Reshuffle ─ ReadUnits ──► (partition, rows_blob or spill path)
                                            │            one per partition and ~20,000 users
                                            └─► dead letters (sortkey, line)

Each file is read by one worker (``transforms/sources/file_reader.py``: opening, counting,
chunks, the unreadable rest): a JSON export with ijson's C backend, a CSV export with the csv
module, so a large export never sits in memory whole. Which files to read is decided in the
launcher (``files.plan_firebase_files``); what one user becomes is the pure mapping
(``mapping.py``); this module says how a file splits into users and what a user's row holds.

Example::

    files = plan_firebase_files(["users.json"])
    result = pipeline | "ReadFirebase" >> ReadFirebaseUsers(files, FirebaseOptions(), 32, tmp_dir)
    rows, dead = result.rows, result.dead
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator, Mapping, Sequence

import apache_beam as beam
import orjson

from transforms.common import counters
from transforms.common.records import SortKey
from transforms.hashing.policy import ON_UNSUPPORTED_HASH
from transforms.hashing.tally import passwordless
from transforms.mapping.fields import FieldTally
from transforms.mapping.validate import Reason
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
from transforms.sources.firebase import accounting as fb
from transforms.sources.firebase.files import JSON, FirebaseFile, iter_csv_users, iter_json_users
from transforms.sources.firebase.mapping import (
    CSV_MIN_COLUMNS,
    KNOWN_FIELDS,
    FirebaseOptions,
    MappedUser,
    map_user,
    not_carried_keys,
)
from transforms.sources.input_stream import InputStream
from transforms.sources.source_parts import ReadUsers

__all__ = ["ReadFirebaseUsers", "CHUNK_USERS"]

# Users read before the buffered rows are flushed as one blob per partition.
CHUNK_USERS = 20_000


class _FirebasePart(RecordPart[FirebaseFile]):
    """A Firebase export's users (JSON ``users`` array or CSV rows) → rows (``file_reader.py``)."""

    name, source, file_source = "firebase", fb.SOURCE, fb.FILE_SOURCE
    read, unreadable = fb.USERS_READ, fb.UNREADABLE_FILES

    def __init__(self, options: FirebaseOptions):
        self._options = options

    def setup(self) -> None:
        self._fields = FieldTally(fb.PREFIX, KNOWN_FIELDS, not_carried_keys(self._options.metadata))

    def begin(self, unit: FirebaseFile, counts: collections.Counter[str]) -> None:
        counts[fb.FILES + unit.format] += 1

    def split(self, unit: FirebaseFile, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        if unit.format == JSON:
            return guarded_records(open_stream(), iter_json_users, lambda position: {"position": position})
        return (Record(position, user) for position, user in enumerate(iter_csv_users(open_stream())))

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        user = record.value
        if isinstance(user, list):  # a CSV row of too few columns
            detail = f"a CSV row of {len(user)} columns; a Firebase export has at least {CSV_MIN_COLUMNS}"
            return Rejected(Reason.UNREADABLE_INPUT, detail, {"csv_row": user})
        mapped = map_user(user, self._options)
        if not isinstance(mapped, MappedUser):
            return Rejected(mapped.reason, mapped.detail, user)
        assert isinstance(user, Mapping)  # map_user accepted it: a JSON object
        user_id = str(mapped.entry["userId"])
        tallies, line = self._written(user, mapped)
        row = encode_user(
            sortkey,
            source=fb.SOURCE,
            user_id=user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            # No user carries a hash (ZITADEL cannot verify Firebase's); a clear-text password: no verifier.
            password="password" if mapped.plaintext else "",
            record_json=orjson.dumps(user),
            tallies=tallies,
            passwordless=line,
        )
        self._count_mapped(mapped, counts)
        return UserRow(user_id, row)

    def _count_mapped(self, mapped: MappedUser, counts: collections.Counter[str]) -> None:
        """What the summary counts about a user that is mapped (written or, later, a duplicate)."""
        counts[fb.USERS_MAPPED] += 1
        if mapped.plaintext:
            counts[fb.PLAINTEXT_IMPORTED] += 1
        elif mapped.dropped_hash is None:
            counts[fb.NO_PASSWORD] += 1
        for outcome, provider in mapped.link_outcomes:
            counts[f"{fb.IDP_LINKS}{outcome}.{provider}"] += 1
        if self._options.metadata:
            counts[fb.METADATA_ENTRIES] += len(mapped.metadata)
            counts[fb.METADATA_DROPPED] += mapped.metadata_dropped

    def _written(self, user: Mapping[str, object], mapped: MappedUser) -> tuple[tuple[str, ...], bytes]:
        """What the summary and the manifest count about the user once it is written: the row's
        ``tallies`` and passwordless line (transforms/output/written.py counts them)."""
        body = mapped.entry["user"]
        assert isinstance(body, dict)
        names = []
        line = b""
        if mapped.dropped_hash is not None:
            names.append(fb.PASSWORD_DROPPED + mapped.dropped_hash.reason)
            email = body.get("email")
            name, line = passwordless(
                mapped.dropped_hash.reason,
                mapped.entry.get("userId"),
                email.get("email") if isinstance(email, dict) else None,
            )
            names.append(name)
        if "idps" not in body and not mapped.plaintext:
            names.append(counters.CANNOT_SIGN_IN + fb.PREFIX)
        if mapped.disabled:
            names.append(fb.DISABLED_WRITTEN)
        names += [fb.MFA + kind for kind in mapped.mfa]
        names += [counters.note(note) for note in mapped.notes]
        return row_tallies(self._fields.names(user), names), line


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadFirebaseUsers(beam.PTransform):
    """Export files → ``{'rows': (partition, rows_blob), 'dead': (sortkey, line)}``.

    ``files`` come from :func:`plan_firebase_files` (run in the launcher, so a missing or unusable
    file fails before the pipeline starts). With ``tmp_dir``, each blob is written to a spill
    file there and the element carries its path (``transforms/files/spill.py``).
    """

    def __init__(
        self,
        files: Sequence[FirebaseFile],
        options: FirebaseOptions,
        partitions: int,
        tmp_dir: str | None = None,
        chunk_users: int = CHUNK_USERS,
    ):
        super().__init__()
        if options.on_unsupported_hash not in ON_UNSUPPORTED_HASH:
            raise ValueError(f"on_unsupported_hash must be one of {', '.join(ON_UNSUPPORTED_HASH)}")
        self._read = ReadSourceFiles(
            files, _FirebasePart(options), partitions=partitions, tmp_dir=tmp_dir, chunk=chunk_users
        )

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        """Returns ``ReadUsers(rows, dead)``."""
        return pbegin | "ReadFirebaseFiles" >> self._read
