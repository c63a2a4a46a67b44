"""What the run counts and lists about the users it wrote, from the users written.

A source does not count what it knows about a user it accepts (no password and no IdP link,
an e-mail from ``--email-fallback``, fields the import does not carry, the form its hash came
in, imported without password, ...): it puts the counter names in the user's row (``tallies``,
``passwordless``: transforms/common/records.py) and the steps that keep a user (the bodies
after de-duplication, transforms/output/bodies.py, and with ``--state`` the users compared with
the state, transforms/sync/compare.py) gather them with :class:`WrittenTally`. So a user
dropped later as a duplicate is neither counted nor listed for password-reset mails.

Shape of the work::

    kept rows' tallies ─► (counter name → users, passwordless lines) per partition
        ─ CountWrittenUsers ─┬─► counters (the summary and the manifest read them)
                             └─► <tmp_dir>/passwordless-written.ndjson, in input order
                                 (the launcher joins it into <stem>.passwordless.ndjson)

Example::

    tally = WrittenTally()
    for row in kept_rows:
        tally.add(row)
    yield from tally.tagged("written")
    ...
    written | "CountWritten" >> CountWrittenUsers(tmp_dir)
"""

from __future__ import annotations

import collections
import operator
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.common.records import NAMESPACE, EncodedRow, SortKey
from transforms.hashing.tally import PASSWORDLESS_PREFIX

__all__ = ["Written", "WrittenTally", "CountWrittenUsers"]

# What one step's kept users add: (counter name → users, [(sort key, passwordless line), ...]).
Written = tuple[dict[str, int], list[tuple[SortKey, bytes]]]

# The slots of an ``EncodedRow`` this module reads: its sort key, tallies and passwordless line.
_tallies_of = operator.itemgetter(0, 1, 11, 12)


class WrittenTally:
    """The tallies of the rows one step keeps; cheap per row (a dict update when it has any)."""

    def __init__(self) -> None:
        self._users: collections.Counter[tuple[str, ...]] = collections.Counter()
        self._lines: list[tuple[SortKey, bytes]] = []

    def add(self, row: EncodedRow) -> None:
        """A user kept: its tallies and its passwordless line (if any) count."""
        file_index, position, tallies, passwordless = _tallies_of(row)
        if tallies:
            self._users[tallies] += 1
        if passwordless:
            self._lines.append(((file_index, position), passwordless))

    def tagged(self, tag: str) -> Iterator[beam.pvalue.TaggedOutput]:
        """What was added since the last call, as one ``tag`` output of the DoFn (none for nothing)."""
        taken = self.take()
        if taken is not None:
            yield beam.pvalue.TaggedOutput(tag, taken)

    def take(self) -> Written | None:
        """What was added since the last ``take`` (None for nothing), and start again."""
        if not self._users and not self._lines:
            return None
        counts: collections.Counter[str] = collections.Counter()
        for names, users in self._users.items():
            for name in names:
                counts[name] += users
        written = (dict(counts), self._lines)
        self._users = collections.Counter()
        self._lines = []
        return written


class _CountFn(beam.DoFn):
    def process(self, written: Written) -> None:
        counts, _ = written
        for name, value in counts.items():
            Metrics.counter(NAMESPACE, name).inc(value)


class _WriteListFn(beam.DoFn):
    """All passwordless lines, in input order, into one file (mode 0600: it lists e-mails)."""

    def __init__(self, tmp_dir: str):
        self._tmp_dir = tmp_dir

    def process(self, lines: list[tuple[Any, bytes]]) -> None:
        if not lines:
            return
        from apache_beam.io.filesystems import FileSystems

        from transforms.files.storage import open_private

        lines.sort(key=lambda item: (item[0][0], item[0][1]))
        path = FileSystems.join(self._tmp_dir, f"{PASSWORDLESS_PREFIX}written.ndjson")
        with open_private(path) as handle:
            handle.write(b"".join(line + b"\n" for _, line in lines))


@beam.typehints.with_input_types(Written)
class CountWrittenUsers(beam.PTransform):
    """:data:`Written` elements → counters, and the passwordless list in ``tmp_dir``."""

    def __init__(self, tmp_dir: str):
        super().__init__()
        self._tmp_dir = tmp_dir

    def expand(self, written: beam.PCollection[Written]) -> beam.pvalue.PDone:
        _ = written | "Count" >> beam.ParDo(_CountFn())
        _ = (
            written
            | "Lines" >> beam.FlatMap(lambda item: item[1])
            | "AllLines" >> beam.combiners.ToList()
            | "WriteList" >> beam.ParDo(_WriteListFn(self._tmp_dir))
        )
        return beam.pvalue.PDone(written.pipeline)
