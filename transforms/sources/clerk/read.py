"""Clerk's user exports → user rows: the Clerk part of the shared reader (``file_reader.py``); what
one user becomes is ``mapping.py``.

Example::

    files = [ClerkFile(0, "clerk-users.csv", "csv")]  # planned by command.plan
    result = pipeline | "ReadClerk" >> ReadClerkUsers(files, ClerkOptions(), 32, tmp_dir)
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence

import apache_beam as beam
import orjson

from transforms.common.reasons import Reason
from transforms.common.records import SortKey
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.fields import FieldTally
from transforms.sources import clerk as ck
from transforms.sources import json_units
from transforms.sources.clerk.mapping import (
    KNOWN_FIELDS,
    METADATA_FIELDS,
    NOT_CARRIED,
    ClerkOptions,
    MappedUser,
    Refusal,
    map_user,
)
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    RestUnreadable,
    UserRow,
    csv_records,
    encode_user,
    row_tallies,
)
from transforms.sources.input_stream import InputStream
from transforms.sources.source_parts import ReadUsers

__all__ = ["ClerkFile", "ClerkOptions", "ReadClerkUsers"]


@dataclasses.dataclass(frozen=True)
class ClerkFile:
    """A planned export file: ``layout`` "csv" or json_units' (ndjson, array, stream, empty);
    ``items``, the ijson prefix of a JSON array's users ("users.item" in an envelope)."""

    index: int
    path: str
    layout: str
    items: str = "item"


# --------------------------------------------------------------------------- the reader's part


class _ClerkPart(RecordPart[ClerkFile], counters=ck.COUNTERS):
    """A Clerk export's users (CSV rows or JSON records) → rows (``file_reader.py``)."""

    def __init__(self, options: ClerkOptions):
        self._options = options

    def setup(self) -> None:
        self._tally = HashTally()
        not_carried = NOT_CARRIED if self._options.metadata else NOT_CARRIED | frozenset(METADATA_FIELDS)
        self._fields = FieldTally(ck.COUNTERS.name, KNOWN_FIELDS - not_carried, not_carried)

    def begin(self, unit: ClerkFile, counts: collections.Counter[str]) -> None:
        counts[ck.FILES + ("csv" if unit.layout == "csv" else "json")] += 1

    def split(self, unit: ClerkFile, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        if unit.layout == "csv":
            return csv_records(open_stream())
        return _json_records(json_units.Unit(unit.index, unit.path, unit.layout, items=unit.items))

    def finish(self) -> None:
        self._tally.publish()

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        value = record.value
        mapped = map_user(value, self._options)
        if isinstance(mapped, Refusal):
            self._tally.refused(mapped.refused)
            if mapped.hash is not None:
                self._tally.rewritten(mapped.hash)
            return Rejected(mapped.reason, mapped.detail, value)
        assert isinstance(value, Mapping)
        counts[ck.COUNTERS.users_mapped] += 1
        for name in mapped.counts:
            counts[name] += 1
        if self._options.metadata:
            counts[ck.METADATA_ENTRIES] += len(mapped.metadata)
            counts[ck.COUNTERS.metadata_dropped] += mapped.metadata_dropped
        user_id = str(mapped.entry["userId"])
        tallies, line = self._written(mapped, value)
        row = encode_user(
            sortkey,
            source=ck.COUNTERS.source,
            user_id=user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            password=mapped.hash.converted.verifier if mapped.hash and mapped.hash.converted else "",
            record_json=record.raw if record.raw is not None else orjson.dumps(value),
            tallies=tallies,
            passwordless=line,
        )
        return UserRow(user_id, row)

    def _written(self, mapped: MappedUser, record: Mapping[str, object]) -> tuple[tuple[str, ...], bytes]:
        """The row's ``tallies`` (counted once the user is written) and its passwordless line."""
        names, line = list(mapped.tallies), b""
        body = mapped.entry["user"]
        assert isinstance(body, dict)
        if mapped.hash is not None:
            names.append(self._tally.form_name(mapped.hash))
        if "hashedPassword" not in body and "idps" not in body:
            names.append(ck.COUNTERS.cannot_sign_in)
        if mapped.dropped is not None:
            email = body.get("email")
            name, line = passwordless(
                mapped.dropped.reason,
                mapped.entry["userId"],
                email.get("email") if isinstance(email, dict) else None,
            )
            names.append(name)
            refused = self._tally.refused_name(mapped.dropped.refused)
            names += [refused] if refused is not None else []
        return row_tallies(self._fields.names(record), names), line


def _json_records(unit: json_units.Unit) -> Iterator[Record]:
    """A JSON unit's users (``json_units.read_unit``); one that did not parse is a problem record."""
    for position, raw, value, error in json_units.read_unit(unit):
        if error is None:
            yield Record(position, value, raw)
            continue
        reason = getattr(error, "reason", Reason.MALFORMED_JSON)
        if reason == Reason.UNREADABLE_INPUT and raw is None:  # the rest of the file
            raise RestUnreadable(str(error), position, logged=True)
        shown_text = raw.decode("utf-8", "replace") if raw is not None else {"position": position}
        yield Record(position, {"record": shown_text}, None, (reason, str(error)))


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadClerkUsers(beam.PTransform):
    """Planned export files (``command.plan``) → ``ReadUsers(rows, dead)``."""

    def __init__(
        self, files: Sequence[ClerkFile], options: ClerkOptions, partitions: int, tmp_dir: str | None
    ):
        super().__init__()
        self._read = ReadSourceFiles(files, _ClerkPart(options), partitions=partitions, tmp_dir=tmp_dir)

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        return pbegin | "ReadClerkFiles" >> self._read
