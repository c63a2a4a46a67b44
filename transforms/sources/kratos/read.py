"""Ory Kratos identity files → user rows: the Kratos part of the shared reader (``file_reader.py``).

A file's layout is told from its head in the launcher (:func:`file_layout`); each identity is
mapped by ``mapping.map_identity``; this module says how a file splits into identities and what a
user's row holds and counts.

Example::

    files = [KratosFile(0, "identities.json", ARRAY)]
    result = pipeline | "ReadKratos" >> ReadKratosIdentities(files, KratosOptions(), 32, tmp_dir)
"""

from __future__ import annotations

import collections
import dataclasses
import io
import re
from collections.abc import Callable, Iterator, Mapping, Sequence

import apache_beam as beam
import ijson
import orjson

from transforms.common import counters
from transforms.common.reasons import Reason
from transforms.common.records import SortKey
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.fields import FieldTally
from transforms.sources import json_units
from transforms.sources import kratos as kr
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
from transforms.sources.kratos.mapping import (
    KNOWN,
    METADATA_FIELDS,
    NOT_CARRIED,
    KratosOptions,
    MappedUser,
    Refusal,
    map_identity,
    shown,
)
from transforms.sources.source_parts import ReadUsers

__all__ = ["KratosFile", "ReadKratosIdentities", "file_layout", "ARRAY", "PAGE", "LINES", "VALUES"]

ARRAY, PAGE, LINES, VALUES = "array", "page", "lines", "values"
# ijson's prefix of each layout's identities, and whether the file holds several JSON values.
_ITEMS = {ARRAY: ("item", False), PAGE: ("identities.item", False), VALUES: ("", True)}
_FIELD_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclasses.dataclass(frozen=True)
class KratosFile:
    """A planned file: its ``index`` (the sort key), ``path`` and layout: ``array`` (an admin API
    page, ``kratos get identity`` of several), ``page`` (``kratos list identities``'s object),
    ``lines`` (NDJSON) or ``values`` (one identity, or several one after another)."""

    index: int
    path: str
    layout: str


def file_layout(path: str, head: bytes) -> str:
    """The layout of a file whose first bytes (decoded) are ``head``."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return LINES  # an empty file: no identity, nothing dead-lettered
    if text[:1] == b"[":
        return ARRAY
    keys: set[str] = set()
    try:
        for prefix, event, value in ijson.parse(io.BytesIO(text), multiple_values=True):
            if prefix == "" and event == "map_key":
                keys.add(str(value))
            elif prefix == "" and event == "end_map":
                break
    except ijson.JSONError:
        pass  # the head ends inside the first object
    if "identities" in keys:
        return PAGE
    return LINES if json_units.sniff_layout(path) == json_units.NDJSON else VALUES


def _lines(stream: InputStream) -> Iterator[Record]:
    """NDJSON: one identity a line; a line that does not parse is a problem record, the rest read on."""
    for number, line in enumerate(io.BufferedReader(stream), 1):
        if not line.strip():
            continue
        try:
            yield Record(number, orjson.loads(line))
        except orjson.JSONDecodeError as err:
            yield Record(
                number, {"line": number}, problem=(Reason.MALFORMED_JSON, f"line {number}: {err.msg}")
            )


class _KratosPart(RecordPart[KratosFile], counters=kr.COUNTERS):
    """A Kratos export's identities → rows (``file_reader.py``)."""

    def __init__(self, options: KratosOptions):
        self._options = options

    def setup(self) -> None:
        carried = self._options.metadata
        known = KNOWN | METADATA_FIELDS if carried else KNOWN
        self._fields = FieldTally(
            kr.COUNTERS.name, known, NOT_CARRIED if carried else NOT_CARRIED | METADATA_FIELDS
        )
        self._tally = HashTally()

    def finish(self) -> None:
        self._tally.publish()

    def split(self, unit: KratosFile, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        if unit.layout == LINES:
            return _lines(open_stream())
        prefix, several = _ITEMS[unit.layout]
        return guarded_records(
            open_stream(),
            lambda guard: ijson.items(guard, prefix, use_float=True, multiple_values=several),
            lambda position: {"position": position},
        )

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        identity = record.value
        mapped = map_identity(identity, self._options)
        if isinstance(mapped, Refusal):
            if mapped.form is not None:
                self._tally.rewritten(mapped.form)
            self._tally.refused(mapped.refused)
            record_shown = orjson.Fragment(shown(identity)) if isinstance(identity, Mapping) else identity
            return Rejected(mapped.reason, mapped.detail, record_shown)
        assert isinstance(identity, Mapping)  # map_identity took it
        user_id = str(mapped.entry["userId"])
        counts[kr.COUNTERS.users_mapped] += 1
        counts[kr.METADATA_ENTRIES] += len(mapped.metadata)
        counts[kr.COUNTERS.metadata_dropped] += mapped.metadata_dropped
        if mapped.verifier and mapped.form is not None:
            counts[kr.WITH_PASSWORD + str(mapped.form.form)] += 1
        if mapped.dropped is not None:
            counts[kr.PASSWORD_DROPPED + mapped.dropped.reason] += 1
        if mapped.why_none is not None:
            counts[kr.NO_PASSWORD + mapped.why_none] += 1
        for outcome, provider in mapped.links:
            counts[f"{kr.IDP_LINKS}{outcome}.{provider}"] += 1
        tallies, line = self._written(identity, mapped, user_id)
        row = encode_user(
            sortkey,
            source=kr.COUNTERS.source,
            user_id=user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            password=mapped.verifier,
            record_json=shown(identity),
            tallies=tallies,
            passwordless=line,
        )
        return UserRow(user_id, row)

    def _written(
        self, identity: Mapping[str, object], mapped: MappedUser, user_id: str
    ) -> tuple[tuple[str, ...], bytes]:
        """What is counted of the user once it is written: its row's ``tallies`` and its line of the
        passwordless list (transforms/output/written.py counts them)."""
        body = mapped.entry["user"]
        assert isinstance(body, dict)
        names = [counters.note(note) for note in mapped.notes]
        line = b""
        if mapped.form is not None and mapped.form.form is not None:
            names.append(self._tally.form_name(mapped.form))
        if mapped.dropped is not None or mapped.why_none == "migration-hook":
            reason = mapped.dropped.reason if mapped.dropped is not None else kr.MIGRATION_HOOK
            name, line = passwordless(reason, user_id, body["email"].get("email"))
            names.append(name)
            refused = self._tally.refused_name(mapped.dropped.refused) if mapped.dropped is not None else None
            names += [refused] if refused is not None else []
        if "hashedPassword" not in body and "idps" not in body:
            names.append(kr.COUNTERS.cannot_sign_in)
        names += [kr.TOTP_NOT_CARRIED + cause for cause in mapped.totp_not_carried]
        names += [kr.OTHER_CREDENTIALS + kind for kind in mapped.other_credentials]
        names += [kr.BLOCKED_WRITTEN] if mapped.inactive else []
        extra = (
            ()
            if self._options.metadata
            else tuple(f"traits.{_FIELD_SAFE.sub('_', k)[:60]}" for k in mapped.unmapped_traits)
        )
        return row_tallies(self._fields.names(identity, extra), names), line


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadKratosIdentities(beam.PTransform):
    """Planned identity files → ``ReadUsers(rows, dead)``.

    Example::

        files = [KratosFile(0, "identities.json", ARRAY)]
        result = pipeline | "ReadKratos" >> ReadKratosIdentities(files, KratosOptions(), 32, tmp_dir)
    """

    def __init__(
        self, files: Sequence[KratosFile], options: KratosOptions, partitions: int, tmp_dir: str | None
    ):
        super().__init__()
        self._read = ReadSourceFiles(files, _KratosPart(options), partitions=partitions, tmp_dir=tmp_dir)

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        return pbegin | "ReadKratosFiles" >> self._read
