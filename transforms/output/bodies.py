"""User rows → deterministic import bodies on disk (or gs://), plus duplicate dead letters.

Shape of the work::

    rows (partition, blob) ─┬─ Claims ─ GroupByKey ─ FindDuplicates ─────────────┐ (side input)
                            └─ GroupByKey ─ ChunkPartitions ─► full bodies written │
                                               │    ├─► remainder ─ GroupByKey(0) ─ ChunkRemainders ─► bodies written
                                               │    └─► the kept users' tallies (written.py)
                                               └─► dead letters (duplicates) ◄────┘

A user id or user name (case-folded) claimed by several rows is kept for the first row in input
order; the others become ``duplicate-user-id`` / ``duplicate-username`` dead letters. Each
partition's users, in input order, fill bodies of exactly ``batch_size``; what is left over in
every partition is merged in input order and cut again, so a run writes at most one partly
filled body more than needed per partition, and a small input gives one body in zitadel-tools'
order. Each user is encoded to JSON once (a "fragment"); a body is its fragments joined.

Bodies are written under a temporary folder with names that carry (first sortkey, users,
sha256); the launcher (``pipeline/migrate.py``) gives them their final numbered names once the
pipeline has finished, because ``-00001-of-00042`` needs the total.

Example::

    out = rows | 'ToBodies' >> UsersToBodies(BodySpec('123', '5m0s', 5000), tmp_dir)
    out['bodies']  # PCollection of temporary body paths
    out['dead']    # duplicates as dead letters
    out['written'] # what the users written add to the run's counts (transforms/output/written.py)
"""

from __future__ import annotations

import collections
import hashlib
import logging
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.common import counters, live_tally
from transforms.common.records import (
    NAMESPACE,
    DeadLetter,
    EncodedRow,
    Grants,
    PartitionRows,
    claims_size,
    dead_letter,
    decode_claims,
    decode_rows,
    no_gc,
    partition_of,
)
from transforms.files.spill import load_blob, read_spill_head
from transforms.files.storage import open_private
from transforms.mapping.roles import grant_items
from transforms.mapping.validate import Reason
from transforms.output.batching import (
    BodySpec,
    Fragment,
    body_temp_name,
    fragment_of,
    parse_body_temp_name,
    plan_chunks,
    render_fragments,
    to_fragment,
)
from transforms.output.grants import Losers, filter_grants
from transforms.output.written import Written, WrittenTally

__all__ = [
    "BodySpec",
    "UsersToBodies",
    "render_fragments",
    "to_fragment",
    "plan_chunks",
    "body_temp_name",
    "parse_body_temp_name",
]

_LOGGER = logging.getLogger(__name__)
_DEAD = "dead"
_REMAINDER = "remainder"
_WRITTEN = "written"
_ID, _NAME = 0, 1


def _sortkey(row: EncodedRow) -> tuple[int, int]:
    return row[0], row[1]


class _ClaimsFn(beam.DoFn):
    """Each row claims its user id and user name, grouped by a hash of the claimed value."""

    def process(self, element: tuple[int, bytes | str]) -> Iterator[tuple[int, bytes]]:
        _, value = element
        if isinstance(value, str):  # a spill file: read only its claims header
            value = read_spill_head(value, claims_size(read_spill_head(value, 8)))
        claims: dict[int, list[list[Any]]] = {}
        with no_gc():
            rows = decode_claims(value)
            for user_id, name, file_index, position in rows:
                sortkey = [file_index, position]
                if user_id:
                    claims.setdefault(partition_of("i" + user_id), []).append([_ID, user_id, sortkey])
                claims.setdefault(partition_of("n" + name), []).append([_NAME, name, sortkey])
        live_tally.add(live_tally.CHECKED, len(rows))
        for part, items in claims.items():
            yield part, orjson.dumps(items)


def _claim_order(claim: list[Any]) -> tuple[int, int]:
    """A claim ``[kind, value, [file_index, position]]`` sorts by where its row sits in the input."""
    _, _, (file_index, position) = claim
    return file_index, position


class _FindDuplicatesFn(beam.DoFn):
    """The rows that lose a claim: ``(sortkey, (reason, detail))`` for all but the first."""

    def process(self, element: tuple[int, Iterable[bytes]]):
        _, blobs = element
        first: set[tuple[int, str]] = set()
        losers: dict[tuple[int, int], tuple[str, str]] = {}
        with no_gc():
            items = [item for blob in blobs for item in orjson.loads(blob)]
            items.sort(key=_claim_order)
            for kind, value, sortkey in items:
                if (kind, value) not in first:
                    first.add((kind, value))
                    continue
                if kind == _ID:
                    reason, detail = (
                        Reason.DUPLICATE_USER_ID,
                        f"user_id {value!r} already used by an earlier record",
                    )
                else:
                    reason, detail = (
                        Reason.DUPLICATE_USERNAME,
                        f"userName {value!r} already used by an earlier record",
                    )
                losers.setdefault((sortkey[0], sortkey[1]), (reason, detail))
        yield from losers.items()


class _BodyWriterFn(beam.DoFn):
    """Shared by both chunking steps: render fragments as a body and write it (mode 0600)."""

    def __init__(self, spec: BodySpec, tmp_dir: str):
        self._spec = spec
        self._tmp_dir = tmp_dir

    def setup(self):
        self._users = Metrics.counter(NAMESPACE, counters.USERS_WRITTEN)
        self._with_pw = Metrics.counter(NAMESPACE, counters.USERS_WITH_PASSWORD)
        self._metadata = Metrics.counter(NAMESPACE, counters.METADATA_WRITTEN)
        self._bodies = Metrics.counter(NAMESPACE, counters.BODIES_WRITTEN)
        self._with_otp = Metrics.counter(NAMESPACE, counters.USERS_WITH_OTP)

    def _write(self, fragments: list[Fragment]) -> str:
        from apache_beam.io.filesystems import FileSystems

        data = render_fragments(self._spec, fragments)
        digest = hashlib.sha256(data).hexdigest()
        first_file, first_position, _, _, _, _ = fragments[0]
        name = body_temp_name((first_file, first_position), len(fragments), digest)
        path = FileSystems.join(self._tmp_dir, name)
        with open_private(path) as handle:
            handle.write(data)
        live_tally.add(live_tally.WRITTEN, len(fragments))
        with_pw = metadata = with_otp = 0
        verifiers: collections.Counter[str] = collections.Counter()
        for _, _, user_json, metadata_json, password, _ in fragments:
            if password:
                with_pw += 1
                if password != "password":
                    verifiers[password] += 1
            if metadata_json:
                metadata += metadata_json.count(b'"id":')
            # An unescaped '"otpCode":' can only be the key (quotes inside strings are escaped).
            if b'"otpCode":' in user_json:
                with_otp += 1
        self._users.inc(len(fragments))
        self._with_pw.inc(with_pw)
        for (
            verifier,
            count,
        ) in verifiers.items():  # password_hashes.<verifier> (transforms/hashing/summary.py)
            Metrics.counter(NAMESPACE, counters.PASSWORD_HASHES + verifier).inc(count)
        self._metadata.inc(metadata)
        self._bodies.inc()
        self._with_otp.inc(with_otp)
        return path


class _GrantTally:
    """The grants of one partition's rows: collision losers removed, written and skipped counted.

    Users share few role combinations, so each grant's JSON after the user id is rendered once
    per combination (measured: rendering was most of the per-user cost of roles)."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self._tails: dict[Grants, tuple[bytes, int, int]] = {}
        self._users = self._grants = self._keys = 0

    def items(self, user_id: str, grants: Grants, role_losers: Losers) -> bytes:
        """The user's ``userGrants`` JSON items (b"" when collisions removed every key)."""
        if role_losers:
            grants, removed = filter_grants(grants, role_losers)
            self.counts[counters.ROLES + "skipped.key-case-collision"] += removed
            if not grants:
                return b""
        tail = self._tails.get(grants)
        if tail is None:
            rendered = grant_items("", grants)  # '{"userId":"","projectId":...}' per grant
            tail = (rendered, len(grants), sum(len(keys) for _, keys in grants))
            if len(self._tails) < 10_000:
                self._tails[grants] = tail
        rendered, grant_count, key_count = tail
        self._users += 1
        self._grants += grant_count
        self._keys += key_count
        user = b'{"userId":' + orjson.dumps(user_id)
        return rendered.replace(b'{"userId":""', user) if grant_count > 1 else user + rendered[12:]

    def dead_lettered(self, grants: Grants) -> None:
        self.counts[counters.ROLES_SKIPPED_DEAD_LETTERED] += sum(len(keys) for _, keys in grants)

    def publish(self) -> None:
        self.counts[counters.AUTHORIZATIONS_USERS_WITH_ROLES] += self._users
        self.counts[counters.AUTHORIZATIONS_GRANTS] += self._grants
        self.counts[counters.AUTHORIZATIONS_KEYS_CARRIED] += self._keys
        for name, value in self.counts.items():
            if value:
                Metrics.counter(NAMESPACE, name).inc(value)


class _ChunkPartitionFn(_BodyWriterFn):
    """Sort a partition's rows, drop duplicates, write full bodies, pass the remainder on."""

    def process(
        self,
        element: tuple[int, Iterable[bytes]],
        losers: dict[tuple[int, int], tuple[str, str]],
        role_losers: Losers = frozenset(),
    ):
        _, blobs = element
        with no_gc():
            rows = [row for blob in blobs for row in decode_rows(load_blob(blob))]
            rows.sort(key=_sortkey)
            live_tally.add(live_tally.BATCHED, len(rows))
            kept: list[Fragment] = []
            grants = _GrantTally()
            written = WrittenTally()
            for row in rows:
                (
                    file_index,
                    position,
                    user_id,
                    _,
                    _,
                    _,
                    _,
                    source,
                    record_json,
                    companions_json,
                    row_grants,
                    _,
                    _,
                ) = row
                lost = losers.get((file_index, position))
                if lost is None:
                    written.add(row)
                    kept.append(
                        fragment_of(
                            row, grants.items(user_id, row_grants, role_losers) if row_grants else b""
                        )
                    )
                    continue
                if row_grants:  # the roles of a dead-lettered user (transforms/output/grants.py)
                    grants.dead_lettered(row_grants)
                reason, detail = lost
                yield beam.pvalue.TaggedOutput(
                    _DEAD,
                    dead_letter((file_index, position), reason, detail, source, orjson.Fragment(record_json)),
                )
                for sortkey, companion_source, record in (
                    orjson.loads(companions_json) if companions_json else []
                ):
                    yield beam.pvalue.TaggedOutput(
                        _DEAD,
                        dead_letter(
                            sortkey,
                            Reason.PROFILE_REJECTED,
                            f"its user was dead-lettered ({reason})",
                            companion_source,
                            record,
                        ),
                    )
            del rows
            grants.publish()
            yield from written.tagged(_WRITTEN)
            full, rest = plan_chunks(kept, self._spec.batch_size)
            for chunk in full:
                yield self._write(chunk)
            if rest:
                yield beam.pvalue.TaggedOutput(_REMAINDER, (0, rest))


class _ChunkRemaindersFn(_BodyWriterFn):
    """All partitions' remainders, merged in input order, cut into bodies and written."""

    def process(self, element: tuple[int, Iterable[list[Fragment]]]) -> Iterator[str]:
        _, parts = element
        with no_gc():
            fragments = sorted((f for part in parts for f in part), key=lambda f: (f[0], f[1]))
            full, rest = plan_chunks(fragments, self._spec.batch_size)
            for chunk in full + ([rest] if rest else []):
                yield self._write(chunk)


class RowsWithRoles(NamedTuple):
    """What ``UsersToBodies`` takes when grants are written: the rows, and the singleton
    frozenset of (project, key) that lost a case collision (``grants.ResolveRoles``)."""

    rows: beam.PCollection[PartitionRows]
    role_losers: beam.PCollection[Losers]


class Bodies(NamedTuple):
    """What ``UsersToBodies`` returns."""

    bodies: beam.PCollection[str]  # the temporary bodies' paths
    dead: beam.PCollection[DeadLetter]  # duplicates
    written: beam.PCollection[Written]  # the written users' tallies (transforms/output/written.py)


class UsersToBodies(beam.PTransform):
    """``(partition, rows)`` (or ``RowsWithRoles``) → ``Bodies(bodies, dead, written)``.

    ``rows`` is a blob from ``records.encode_rows``/``pack_rows`` or the path of a spill file
    holding one; a partition may arrive as several elements.

    Example::

        bodies = source.rows | "ToBodies" >> UsersToBodies(spec, tmp_dir)
        bodies = RowsWithRoles(rows, losers) | "ToBodies" >> UsersToBodies(spec, tmp_dir)
        bodies.bodies, bodies.dead, bodies.written
    """

    def __init__(self, spec: BodySpec, tmp_dir: str):
        super().__init__()
        if spec.batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._spec = spec
        self._tmp_dir = tmp_dir

    def expand(self, inputs: beam.PCollection[PartitionRows] | RowsWithRoles) -> Bodies:
        rows, role_losers = inputs if isinstance(inputs, RowsWithRoles) else (inputs, None)
        losers = (
            rows
            | "Claims" >> beam.ParDo(_ClaimsFn()).with_input_types(PartitionRows)
            | "GroupClaims" >> beam.GroupByKey()
            | "FindDuplicates" >> beam.ParDo(_FindDuplicatesFn())
        )
        chunks = (
            rows
            | "GroupRows" >> beam.GroupByKey()
            | "ChunkPartitions"
            >> beam.ParDo(
                _ChunkPartitionFn(self._spec, self._tmp_dir),
                losers=beam.pvalue.AsDict(losers),
                **({"role_losers": beam.pvalue.AsSingleton(role_losers)} if role_losers is not None else {}),
            )
            .with_output_types(str, **{_DEAD: DeadLetter, _REMAINDER: Any, _WRITTEN: Written})
            .with_outputs(_DEAD, _REMAINDER, _WRITTEN, main="bodies")
        )
        merged = (
            chunks[_REMAINDER]
            | "GroupRemainders" >> beam.GroupByKey()
            | "ChunkRemainders" >> beam.ParDo(_ChunkRemaindersFn(self._spec, self._tmp_dir))
        )
        bodies = (chunks.bodies, merged) | "AllBodies" >> beam.Flatten().with_output_types(str)
        return Bodies(bodies, chunks[_DEAD], chunks[_WRITTEN])
