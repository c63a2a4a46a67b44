"""Okta user export CSV files → user rows: the Okta part of the shared reader (``file_reader.py``).

Example::

    files = match_inputs(["users.csv"], 0, "--users")
    result = pipeline | "ReadOkta" >> ReadOktaUsers(files, OktaOptions(), 32, tmp_dir)
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator, Sequence

import apache_beam as beam
import orjson

from transforms.common import counters
from transforms.common.records import SortKey
from transforms.mapping.fields import FieldTally
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    SourceFile,
    UserRow,
    csv_records,
    encode_user,
    row_tallies,
)
from transforms.sources.input_stream import InputStream
from transforms.sources.okta import accounting as okta
from transforms.sources.okta.mapping import (
    KNOWN_FIELDS,
    MUST_CHANGE,
    NOT_CARRIED,
    MappedUser,
    OktaOptions,
    canonical,
    map_row,
)
from transforms.sources.okta.source import BLOCKED
from transforms.sources.source_parts import ReadUsers

__all__ = ["ReadOktaUsers"]


class _OktaPart(RecordPart[SourceFile]):
    """An Okta export's CSV rows → rows (``file_reader.py``)."""

    name, source, file_source = "okta", okta.SOURCE, okta.FILE_SOURCE
    read, unreadable = okta.USERS_READ, okta.UNREADABLE_FILES

    def __init__(self, options: OktaOptions):
        self._options = options

    def setup(self) -> None:
        # With --metadata every column carries (the rest as metadata): none is counted.
        self._fields = None if self._options.metadata else FieldTally(okta.PREFIX, KNOWN_FIELDS, NOT_CARRIED)

    def split(self, unit: SourceFile, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        return csv_records(open_stream())

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        row = record.value
        assert isinstance(row, dict)  # csv_records: {column: text}
        mapped, cells = map_row(row, self._options), canonical(row)
        if not isinstance(mapped, MappedUser):
            return Rejected(mapped.reason, mapped.detail, cells)
        counts[okta.USERS_MAPPED] += 1
        counts[okta.METADATA_DROPPED] += mapped.metadata_dropped
        names = [counters.CANNOT_SIGN_IN + okta.PREFIX, okta.STATUS + mapped.status]
        names += [okta.CHANGE_NOT_MARKED] if mapped.status in MUST_CHANGE else []
        names += [okta.BLOCKED_WRITTEN] if mapped.status in BLOCKED else []
        names += [counters.note(note) for note in mapped.notes]
        user_id = str(mapped.entry["userId"])
        encoded = encode_user(
            sortkey,
            source=okta.SOURCE,
            user_id=user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            password="",  # Okta exports no password and no hash
            record_json=orjson.dumps(cells),
            tallies=row_tallies(self._fields.names(cells) if self._fields else (), names),
        )
        return UserRow(user_id, encoded)


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadOktaUsers(beam.PTransform):
    """Planned export files → ``ReadUsers(rows, dead)``."""

    def __init__(
        self, files: Sequence[SourceFile], options: OktaOptions, partitions: int, tmp_dir: str | None
    ):
        super().__init__()
        self._read = ReadSourceFiles(files, _OktaPart(options), partitions=partitions, tmp_dir=tmp_dir)

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        return pbegin | "ReadOktaFiles" >> self._read
