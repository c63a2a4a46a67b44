"""Firebase Auth exports → user rows: stream each file's users, map, count, pack.

Shape of the work (few, large elements; see ``transforms/common/records.py``)::

    FirebaseFile per file ─ Reshuffle ─ ReadFirebaseFile ──► (partition, rows_blob or spill path)
                                              │                 one per partition and ~20,000 users
                                              └─► dead letters (sortkey, line)

Each file is read by one worker straight from ``FileSystems`` (local or gs://, ``.gz``
decompressed, ``input_stream.open_input``): a JSON export with ijson's C backend, a CSV export
with the csv module, so a large export never sits in memory whole. Which files to read is
decided in the launcher (``files.plan_firebase_files``); what one user becomes is the
pure mapping (``mapping.py``); this module streams, counts and packs.

Example::

    files = plan_firebase_files(["users.json"])
    result = pipeline | "ReadFirebase" >> ReadFirebaseUsers(files, FirebaseOptions(), 32, tmp_dir)
    rows, dead = result.rows, result.dead
"""

from __future__ import annotations

import collections
import csv
import logging
import os
from collections.abc import Iterator, Mapping, Sequence

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
from transforms.hashing.tally import passwordless
from transforms.mapping.fields import FieldTally
from transforms.mapping.validate import Reason
from transforms.sources.firebase import accounting as fb
from transforms.sources.firebase.files import JSON, FirebaseFile, iter_csv_users, iter_json_users
from transforms.sources.firebase.mapping import (
    CSV_MIN_COLUMNS,
    KNOWN_FIELDS,
    FirebaseOptions,
    MappedUser,
    Rejection,
    map_user,
    not_carried_keys,
)
from transforms.sources.input_stream import DepthGuard, InputReadError, has_marker, marker_problem, open_input
from transforms.sources.source_parts import ReadUsers

__all__ = ["ReadFirebaseUsers", "CHUNK_USERS"]

_LOGGER = logging.getLogger(__name__)

_DEAD = "dead"
# Users read before the buffered rows are flushed as one blob per partition.
CHUNK_USERS = 20_000


class _ReadFirebaseFileFn(beam.DoFn):
    """Stream one file's users; emit ``(partition, rows_blob)`` per partition every chunk."""

    def __init__(self, options: FirebaseOptions, partitions: int, chunk_users: int, tmp_dir: str | None):
        self._options = options
        self._partitions = partitions
        self._chunk = chunk_users
        self._tmp_dir = tmp_dir

    def setup(self):
        self._fields = FieldTally(fb.PREFIX, KNOWN_FIELDS, not_carried_keys(self._options.metadata))

    def process(self, source: FirebaseFile):
        counts: collections.Counter[str] = collections.Counter()
        parts: dict[int, list[EncodedRow]] = {}
        position = 0
        counts[fb.FILES + source.format] += 1
        try:
            with no_gc(), open_input(source.path, progress=True) as handle:
                if handle.encoding:
                    counts[counters.INPUTS_DECODED + handle.encoding] += 1
                guard = DepthGuard(handle) if source.format == JSON else None
                users = iter_json_users(guard) if guard is not None else iter_csv_users(handle)
                seen_cuts = 0
                while True:
                    try:
                        user = next(users)
                    except StopIteration:
                        break
                    except InputReadError as err:  # a .gz cut short or damaged
                        detail = (
                            f"{one_line(err)}; {position} users were read before it, the rest was not read"
                        )
                        counts[f"{counters.INPUTS_PARTIAL}{source.index}"] += position
                        yield _unreadable_rest(source, position, detail, counts)
                        break
                    except (ijson.JSONError, csv.Error, ValueError) as err:  # ValueError: bad UTF-8
                        # Nothing after a syntax error can be located reliably: one dead letter
                        # for the rest of the file, and the run goes on with the other files.
                        detail = (
                            f"{os.path.basename(source.path)}: {source.format.upper()} syntax error after "
                            f"user {position} ({one_line(err)}); the rest of the file was not read"
                        )
                        yield _unreadable_rest(source, position, detail, counts)
                        break
                    cut = guard is not None and guard.cut > seen_cuts
                    marker = has_marker(user) if cut else None
                    if marker is not None:
                        seen_cuts += 1
                    dead = self._one(user, (source.index, position), parts, counts, marker)
                    position += 1
                    if not position & 4095:  # the live line (live_tally.py)
                        live_tally.add(live_tally.PARSED, 4096)
                    if dead is not None:
                        yield beam.pvalue.TaggedOutput(_DEAD, dead)
                    if position % self._chunk == 0:
                        yield from self._flush(source, position, parts)
            yield from self._flush(source, position, parts)
        finally:
            live_tally.add(live_tally.PARSED, position & 4095)
            counts[fb.USERS_READ] += 0  # always reported, even for an empty export
            for name, value in counts.items():
                Metrics.counter(NAMESPACE, name).inc(value)

    def _one(
        self,
        user: object,
        sortkey: SortKey,
        parts: dict[int, list[EncodedRow]],
        counts: collections.Counter[str],
        marker: str | None,
    ) -> DeadLetter | None:
        counts[fb.USERS_READ] += 1
        if marker is not None:
            reason, detail = marker_problem(marker)
            return _dead_letter(sortkey, reason, f"user {sortkey[1]}: {detail}", {"position": sortkey[1]})
        if isinstance(user, list):  # a CSV row of too few columns
            detail = f"a CSV row of {len(user)} columns; a Firebase export has at least {CSV_MIN_COLUMNS}"
            return _dead_letter(sortkey, Reason.UNREADABLE_INPUT, detail, {"csv_row": user})
        mapped = map_user(user, self._options)
        if isinstance(mapped, Rejection):
            return _dead_letter(sortkey, mapped.reason, mapped.detail, user)
        assert isinstance(user, Mapping)  # map_user accepted it: a JSON object
        try:
            row = _row(sortkey, mapped, user, self._written(user, mapped))
        except orjson.JSONEncodeError as err:
            detail = f"user holds a value JSON output cannot carry ({one_line(err)})"
            return _dead_letter(sortkey, Reason.UNREADABLE_INPUT, detail, user)
        self._count_mapped(mapped, counts)
        parts.setdefault(partition_of(str(mapped.entry["userId"]), self._partitions), []).append(row)
        return None

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
        fields = self._fields.names(user)
        return (intern_tallies((*fields, *names)) if names else fields), line

    def _flush(
        self, source: FirebaseFile, position: int, parts: dict[int, list[EncodedRow]]
    ) -> Iterator[tuple[int, bytes | str]]:
        """One blob per partition, or the path of its spill file (files/spill.py)."""
        prefix = f"firebase-{source.index:05d}-{position:010d}"
        return spill_parts(parts, self._tmp_dir, lambda part: f"{prefix}-p{part:03d}.pkl")


def _row(
    sortkey: SortKey, mapped: MappedUser, user: Mapping[str, object], written: tuple[tuple[str, ...], bytes]
) -> EncodedRow:
    """A Firebase user's row (``records.encoded_row``): its JSON rendered once. No user carries
    a password (Firebase's hash cannot be verified by ZITADEL); ``written``: its tallies and
    passwordless line."""
    file_index, position = sortkey
    entry = mapped.entry
    user_id = str(entry["userId"])
    body = entry["user"]
    assert isinstance(body, dict)
    metadata = mapped.metadata
    meta = orjson.dumps([{"id": user_id, **item} for item in metadata])[1:-1] if metadata else b""
    return encoded_row(
        file_index=file_index,
        position=position,
        user_id=user_id,
        name_key=user_name_key(body.get("userName")),
        entry_json=orjson.dumps(entry),
        metadata_json=meta,
        password="password" if mapped.plaintext else "",  # a clear-text password: no verifier
        source=fb.SOURCE,
        record_json=orjson.dumps(user),
        companions_json=b"",
        grants=(),
        tallies=written[0],
        passwordless=written[1],
    )


def _dead_letter(sortkey: SortKey, reason: str, detail: str, user: object) -> DeadLetter:
    try:
        return dead_letter(sortkey, reason, detail, fb.SOURCE, user)
    except orjson.JSONEncodeError:
        # The record itself cannot be written as JSON: point at it instead.
        record = {"unencodable_record": True, "position": sortkey[1]}
        return dead_letter(sortkey, reason, detail, fb.SOURCE, record)


def _unreadable_rest(
    source: FirebaseFile, position: int, detail: str, counts: collections.Counter[str]
) -> beam.pvalue.TaggedOutput:
    """The one dead letter for the rest of a file that cannot be read on (logged, counted)."""
    _LOGGER.error("%s", detail)
    counts[fb.UNREADABLE_FILES] += 1
    record = {"file": source.path, "position": position}
    line = dead_letter((source.index, position), Reason.UNREADABLE_INPUT, detail, fb.FILE_SOURCE, record)
    return beam.pvalue.TaggedOutput(_DEAD, line)


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
        self._files = list(files)
        self._options = options
        self._partitions = partitions
        self._chunk = chunk_users
        self._tmp_dir = tmp_dir

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        """Returns ``ReadUsers(rows, dead)`` (and ``roles`` when asked for them)."""
        read = (
            pbegin
            | "ListFirebaseFiles" >> beam.Create(self._files)
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadFirebaseFiles"
            >> beam.ParDo(_ReadFirebaseFileFn(self._options, self._partitions, self._chunk, self._tmp_dir))
            .with_output_types(PartitionRows, **{_DEAD: DeadLetter})
            .with_outputs(_DEAD, main="rows")
        )
        return ReadUsers(read.rows, read[_DEAD])
