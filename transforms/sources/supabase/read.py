"""Supabase's ``auth.users`` files → user rows: the Supabase part of the shared reader (``file_reader.py``).

A users file is CSV or JSON (an array of rows, or one row object a line); ``auth.identities`` and
``auth.mfa_factors`` (optional, CSV or JSON) are read whole by each worker (:class:`SideTables`) and
joined to the users by ``user_id``; what one row becomes is ``mapping.map_user``.

Example::

    files = [SupabaseFile(0, "auth-users.csv", "csv")]
    result = read_supabase(pipeline, files, SupabaseOptions(), tmp_dir)  # ReadUsers(rows, dead)
"""

from __future__ import annotations

import collections
import csv
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence

import apache_beam as beam
import ijson
import orjson

from transforms.common import counters
from transforms.common.records import NUM_PARTITIONS, SortKey
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.fields import FieldTally
from transforms.sources import supabase as sb
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    UserRow,
    csv_records,
    encode_user,
    guarded_records,
    row_tallies,
)
from transforms.sources.input_stream import DepthGuard, InputReadError, InputStream, open_input
from transforms.sources.source_parts import ReadUsers
from transforms.sources.supabase import text
from transforms.sources.supabase.mapping import (
    FACTORS,
    IDENTITIES,
    KNOWN,
    NOT_CARRIED,
    OWN_PROVIDERS,
    TOKENS,
    MappedUser,
    Refusal,
    SupabaseFile,
    SupabaseOptions,
    map_user,
    object_column,
)

__all__ = ["read_supabase", "SideTables", "json_rows"]


# --------------------------------------------------------------------------- side tables


def json_rows(guard: DepthGuard, form: str) -> Iterator[object]:
    """The rows of a JSON file: the elements of an array (``json``) or one object a line (``ndjson``)."""
    if form == "ndjson":
        return ijson.items(guard, "", multiple_values=True, use_float=True)
    return ijson.items(guard, "item", use_float=True)


def _rows(file: SupabaseFile) -> Iterator[dict[str, object] | None]:
    """A side table's rows (None for a row that did not read)."""
    with open_input(file.path) as stream:
        if file.format != "csv":
            for item in json_rows(DepthGuard(stream), file.format):
                yield item if isinstance(item, dict) else None
            return
        for record in csv_records(stream):
            yield record.value if record.problem is None and isinstance(record.value, dict) else None


class SideTables:
    """``auth.identities`` and ``auth.mfa_factors`` by ``user_id``, read whole on each worker;
    ``read``/``unreadable``: rows read per table, and those that did not read (no ``user_id``, bad
    JSON; a file that cannot be read on counts once for its rest, which is not read)."""

    def __init__(self, identities: Sequence[SupabaseFile], factors: Sequence[SupabaseFile]):
        self.identities: dict[str, list[dict[str, object]]] = {}
        self.factors: dict[str, list[dict[str, str]]] = {}
        self.read: collections.Counter[str] = collections.Counter()
        self.unreadable: collections.Counter[str] = collections.Counter()
        for table, files, add in ((IDENTITIES, identities, self._identity), (FACTORS, factors, self._factor)):
            for file in files:
                try:
                    for row in _rows(file):
                        add(row)
                except (ijson.JSONError, csv.Error, ValueError, InputReadError):
                    self.read[table] += 1
                    self.unreadable[table] += 1

    def _identity(self, row: dict[str, object] | None) -> None:
        self.read[IDENTITIES] += 1
        user_id = text(row, "user_id") if row is not None else ""
        data = object_column(row, "identity_data") if row is not None else None
        if row is None or not user_id or data is None:
            self.unreadable[IDENTITIES] += 1
            return
        provider = text(row, "provider")
        if provider in OWN_PROVIDERS:
            return  # Supabase's own sign-in: not a link (provider_id is the user id)
        entry: dict[str, object] = {"provider": provider, "provider_id": text(row, "provider_id")}
        entry.update({k: v for k in ("email", "name") if isinstance(v := data.get(k), str)})
        self.identities.setdefault(user_id, []).append(entry)

    def _factor(self, row: dict[str, object] | None) -> None:
        self.read[FACTORS] += 1
        user_id = text(row, "user_id") if row is not None else ""
        if row is None or not user_id:
            self.unreadable[FACTORS] += 1
            return
        keys = ("factor_type", "status", "secret", "created_at")
        self.factors.setdefault(user_id, []).append({k: text(row, k) for k in keys})


# --------------------------------------------------------------------------- the reader part


def _cells(record: Mapping[str, object]) -> dict[str, object]:
    """The row as kept in its body's record and its dead letter: without one-time tokens."""
    return {k: v for k, v in record.items() if k not in TOKENS}


def _had(record: Mapping[str, object], custom_metadata: tuple[str, ...]) -> dict[str, object]:
    """The columns the "fields not carried" tally looks at (those not carried and unknown ones)
    that hold something, and the metadata columns with custom keys (none with ``--metadata``)."""
    layout = tuple(record)
    keys = _TALLIED.get(layout)
    if keys is None:  # one layout per file: computed once
        keys = tuple(k for k in layout if k in NOT_CARRIED or k not in KNOWN)
        if len(_TALLIED) < 1000:
            _TALLIED[layout] = keys
    had: dict[str, object] = {k: True for k in keys if text(record, k) not in _EMPTY}
    had.update(dict.fromkeys(custom_metadata, True))
    return had


_TALLIED: dict[tuple[str, ...], tuple[str, ...]] = {}  # a row layout → the columns _had looks at
_EMPTY = frozenset({"", "f", "false", "{}", "0"})  # cells that hold nothing of the user


class _SupabasePart(RecordPart[SupabaseFile]):
    """An ``auth.users`` file's rows (CSV or JSON) → rows (``file_reader.py``)."""

    name, source, file_source = "supabase", sb.SOURCE, sb.FILE_SOURCE
    read, unreadable = sb.USERS_READ, sb.UNREADABLE_FILES

    def __init__(self, options: SupabaseOptions):
        self._options = options

    def setup(self) -> None:
        options = self._options
        self._side = SideTables(options.identities, options.factors)
        self._tally = HashTally()
        not_carried = NOT_CARRIED | (
            set() if options.metadata else {"raw_user_meta_data", "raw_app_meta_data"}
        )
        self._fields = FieldTally(sb.PREFIX, KNOWN, frozenset(not_carried))

    def begin(self, unit: SupabaseFile, counts: collections.Counter[str]) -> None:
        counts[sb.FILES + unit.format] += 1
        if unit.index == 0:  # the side tables, counted once per run
            for table, value in self._side.read.items():
                counts[sb.SIDE_ROWS + table] += value
            for table, value in self._side.unreadable.items():
                counts[sb.SIDE_UNREADABLE + table] += value

    def split(self, unit: SupabaseFile, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        if unit.format != "csv":
            items = functools.partial(json_rows, form=unit.format)
            return guarded_records(open_stream(), items, lambda position: {"position": position})
        return csv_records(open_stream())

    def finish(self) -> None:
        self._tally.publish()

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        row = record.value
        user_id = text(row, "id") if isinstance(row, Mapping) else ""
        links, factors = self._side.identities.get(user_id, ()), self._side.factors.get(user_id, ())
        mapped = map_user(row, self._options, links, factors)
        if isinstance(mapped, Refusal):
            self._tally.refused(mapped.refused)
            return Rejected(mapped.reason, mapped.detail, _cells(row) if isinstance(row, Mapping) else row)
        assert isinstance(row, Mapping)
        counts[sb.USERS_MAPPED] += 1
        if mapped.converted is not None:
            counts[sb.WITH_PASSWORD + mapped.converted.algorithm] += 1
            self._tally.add(mapped.converted)
        elif mapped.dropped_hash is not None:
            counts[sb.PASSWORD_DROPPED + mapped.dropped_hash.reason] += 1
        else:
            counts[sb.WITHOUT_PASSWORD] += 1
        if self._options.metadata:
            counts[sb.METADATA_ENTRIES] += len(mapped.metadata)
            counts[sb.METADATA_DROPPED] += mapped.metadata_dropped
        tallies, line = self._written(row, mapped, len(links), len(factors))
        encoded = encode_user(
            sortkey,
            source=sb.SOURCE,
            user_id=user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            password=mapped.converted.verifier if mapped.converted is not None else "",
            record_json=orjson.dumps(_cells(row)),
            tallies=tallies,
            passwordless=line,
        )
        return UserRow(user_id, encoded)

    def _written(
        self, row: Mapping[str, object], mapped: MappedUser, links: int, factors: int
    ) -> tuple[tuple[str, ...], bytes]:
        """What the summary counts about the user once written: its row's tallies, passwordless line."""
        body = mapped.entry["user"]
        assert isinstance(body, dict)
        names = [f"{sb.IDP_LINKS}{outcome}.{provider}" for outcome, provider in mapped.link_outcomes]
        names += [sb.OTP_NOT_CARRIED + cause for cause in mapped.otp_not_carried]
        names += [sb.SIDE_JOINED + IDENTITIES] * links + [sb.SIDE_JOINED + FACTORS] * factors
        line = b""
        if mapped.dropped_hash is not None:
            email = body.get("email")
            name, line = passwordless(
                mapped.dropped_hash.reason,
                mapped.entry["userId"],
                email.get("email") if isinstance(email, dict) else None,
            )
            names.append(name)
            refused = self._tally.refused_name(mapped.dropped_hash.refused)
            names += [refused] if refused is not None else []
        if mapped.converted is None and "idps" not in body:
            names.append(sb.CANNOT_SIGN_IN)
        names += [sb.BANNED_WRITTEN] if mapped.banned else []
        names += [sb.PHONE_PLUS_ADDED] if mapped.phone_plus else []
        names += [counters.note(note) for note in mapped.notes]
        return row_tallies(
            self._fields.names(_had(row, () if self._options.metadata else mapped.custom_metadata)), names
        ), line


def read_supabase(
    pipeline: beam.Pipeline, files: Sequence[SupabaseFile], options: SupabaseOptions, tmp_dir: str | None
) -> ReadUsers:
    """Planned ``auth.users`` files → ``ReadUsers(rows, dead)`` (the plan's ``read``)."""
    part = _SupabasePart(options)
    return pipeline | "ReadSupabase" >> ReadSourceFiles(
        files, part, partitions=NUM_PARTITIONS, tmp_dir=tmp_dir
    )
