"""AspNetUsers CSV files (with AspNetUserLogins, AspNetUserTokens, AspNetUserClaims) → user rows:
the ASP.NET Identity part of the shared reader (``file_reader.py``); the mapping is ``mapping.py``.

The side tables hold a few rows per user: each worker loads them whole, once, keyed by
``UserId`` (:func:`load_side`); the launcher counts their rows (:func:`count_rows`) so that the
summary can say how many were not used.

Example::

    files = match_inputs(["AspNetUsers.csv"], 0, "--users")
    result = read_aspnet(pipeline, files, AspnetOptions(now=time.time()), tmp_dir)  # ReadUsers(rows, dead)
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator, Mapping, Sequence

import apache_beam as beam
import orjson

from transforms.common import counters
from transforms.common.records import NUM_PARTITIONS, SortKey
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.fields import FieldTally
from transforms.sources import aspnet as asp
from transforms.sources.aspnet import key
from transforms.sources.aspnet.mapping import (
    IDENTITY,
    NAME_COLUMNS,
    NOT_CARRIED,
    AspnetOptions,
    MappedUser,
    Refusal,
    Side,
    canonical,
    map_row,
)
from transforms.sources.csv_rows import read_csv
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    SourceFile,
    UserRow,
    encode_user,
    row_tallies,
)
from transforms.sources.input_stream import InputStream, open_input
from transforms.sources.source_parts import ReadUsers

__all__ = ["read_aspnet", "load_side", "count_rows"]


def load_side(options: AspnetOptions) -> dict[str, Side]:
    """The side tables' rows by UserId (a row that did not read, or without a UserId, is skipped:
    the summary counts the rows not used, ``count_rows`` against ``SIDE_ROWS``)."""
    users: dict[str, Side] = collections.defaultdict(Side)
    for paths, add in (
        (options.logins, _add_login),
        (options.tokens, _add_token),
        (options.claims, _add_claim),
    ):
        for path in paths:
            for row, problem in _rows(path, options.delimiter(path)):
                user_id = row.get("userid", "")
                if problem is None and user_id and user_id != "NULL":
                    add(users[user_id], row)
    return dict(users)


def count_rows(paths: Sequence[str], options: AspnetOptions) -> int:
    """How many data rows the files hold, read or not (the launcher's count of a side table)."""
    return sum(1 for path in paths for _ in _rows(path, options.delimiter(path)))


def _rows(path: str, delimiter: str) -> Iterator[tuple[dict[str, str], object]]:
    """A side table's rows, cells by their column's ``key()``, and each row's problem (None: it read)."""
    with open_input(path) as stream:
        _, rows = read_csv(stream, delimiter)
        for _, row, problem in rows:
            yield {key(name): value.strip() for name, value in (row or {}).items()}, problem


def _add_login(side: Side, cells: dict[str, str]) -> None:
    side.logins.append(
        {"LoginProvider": cells.get("loginprovider", ""), "ProviderKey": cells.get("providerkey", "")}
    )


def _add_token(side: Side, cells: dict[str, str]) -> None:
    if cells.get("value", "NULL") != "NULL":
        side.tokens[cells.get("loginprovider", ""), cells.get("name", "")] = cells["value"]


def _add_claim(side: Side, cells: dict[str, str]) -> None:
    if cells.get("claimtype") and cells.get("claimvalue", "NULL") != "NULL":
        side.claims.append((cells["claimtype"], cells["claimvalue"]))


class _AspnetPart(RecordPart[SourceFile]):
    """AspNetUsers CSV rows → rows (``file_reader.py``)."""

    name, source, file_source = "aspnet", asp.SOURCE, asp.FILE_SOURCE
    read, unreadable = asp.USERS_READ, asp.UNREADABLE_FILES

    def __init__(self, options: AspnetOptions):
        self._options = options

    def setup(self) -> None:
        self._side = load_side(self._options)
        self._tally = HashTally()

    def split(self, unit: SourceFile, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        header, rows = read_csv(open_stream(), self._options.delimiter(unit.path))
        columns = {IDENTITY.get(key(name), name) for name in header}
        self._layout = "core" if "LockoutEnd" in columns else "identity2"
        # Known: Identity's columns, the name columns, and with --metadata the app's own columns.
        known = {*IDENTITY.values(), *(c for c in columns if key(c) in NAME_COLUMNS)}
        known |= columns if self._options.metadata else set()
        self._fields = FieldTally(asp.PREFIX, frozenset(known - NOT_CARRIED), NOT_CARRIED)
        return (Record(position, record, None, problem) for position, record, problem in rows)

    def finish(self) -> None:
        self._tally.publish()

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        row = record.value
        assert isinstance(row, dict)  # read_csv: {column: text}
        cells = canonical(row)
        counts[asp.LAYOUT + self._layout] += 1
        side = self._side.get(cells.get("Id", ""))
        if side is not None:
            for table, rows in (("logins", side.logins), ("tokens", side.tokens), ("claims", side.claims)):
                counts[asp.SIDE_ROWS + table] += len(rows)
        mapped = map_row(cells, side or Side(), self._options)
        envelope = {"id": cells.get("Id"), "locked": mapped.locked, "record": cells}
        if isinstance(mapped, Refusal):
            self._tally.refused(mapped.failure.refused if mapped.failure else None)
            if mapped.outcome is not None:
                self._tally.rewritten(mapped.outcome)
            return Rejected(mapped.reason, mapped.detail, envelope)
        self._count(mapped, counts)
        user_id = str(mapped.entry["userId"])
        tallies, line = self._written(mapped, cells)
        encoded = encode_user(
            sortkey,
            source=asp.SOURCE,
            user_id=user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            password=mapped.converted.verifier if mapped.converted else "",
            record_json=orjson.dumps(envelope),
            tallies=tallies,
            passwordless=line,
        )
        return UserRow(user_id, encoded)

    def _count(self, mapped: MappedUser, counts: collections.Counter[str]) -> None:
        """What the summary counts of a user converted (written or, later, a duplicate)."""
        counts[asp.USERS_MAPPED] += 1
        if mapped.outcome is not None and mapped.converted is not None:
            counts[asp.WITH_PASSWORD + str(mapped.outcome.form)] += 1
        elif mapped.dropped_hash is None:
            counts[asp.WITHOUT_PASSWORD] += 1
        else:
            counts[asp.PASSWORD_DROPPED + mapped.dropped_hash.reason] += 1
        counts[asp.LOCKED_WRITTEN] += mapped.locked
        counts[asp.CLAIMS_USED] += mapped.claims_used
        if mapped.metadata or mapped.metadata_dropped:
            counts[asp.METADATA_ENTRIES] += len(mapped.metadata)
            counts[asp.METADATA_DROPPED] += mapped.metadata_dropped

    def _written(self, mapped: MappedUser, cells: Mapping[str, str]) -> tuple[tuple[str, ...], bytes]:
        """The row's ``tallies`` and passwordless line, counted once the user is written."""
        names = [f"{asp.IDP_LINKS}{outcome}.{alias}" for outcome, alias in mapped.link_outcomes]
        user = mapped.entry["user"]
        assert isinstance(user, dict)
        if mapped.converted is None and "idps" not in user:
            names.append(counters.CANNOT_SIGN_IN + asp.PREFIX)
        if mapped.outcome is not None:
            names.append(self._tally.form_name(mapped.outcome))
        line = b""
        if mapped.dropped_hash is not None:
            name, line = passwordless(mapped.dropped_hash.reason, mapped.entry["userId"], cells.get("Email"))
            names.append(name)
            refused = self._tally.refused_name(mapped.dropped_hash.refused)
            names += [refused] if refused is not None else []
        names += [counters.note(note) for note in mapped.notes]
        names += [asp.OTP_NOT_CARRIED + cause for cause in mapped.otp_not_carried]
        names += [asp.PHONE_NOT_CARRIED + mapped.phone_cause] if mapped.phone_cause else []
        return row_tallies(self._fields.names(cells, mapped.not_carried), names), line


def read_aspnet(
    pipeline: beam.Pipeline, files: Sequence[SourceFile], options: AspnetOptions, tmp_dir: str | None
) -> ReadUsers:
    """Planned AspNetUsers files → ``ReadUsers(rows, dead)`` (the plan's ``read``)."""
    part = _AspnetPart(options)
    return pipeline | "ReadAspnet" >> ReadSourceFiles(files, part, partitions=NUM_PARTITIONS, tmp_dir=tmp_dir)
