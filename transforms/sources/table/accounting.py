"""The table reader's counter names, its dead letters' sources and its accounting invariant.

The reader (``read.py``) writes these; the launcher's summary (``command.py``)
and :func:`invariant` read them. Names shared with other stages (bodies, dead letters, notes,
roles) are in ``transforms/common/counters.py``.

Example::

    holds, text = invariant(counts)  # counts: counter name → value, from the run's metrics
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.common import counters
from transforms.common.accounting import reader_invariant
from transforms.sources.declaration import source_name

__all__ = [
    "PREFIX",
    "SOURCE",
    "FILE_SOURCE",
    "RECORDS_READ",
    "WITH_PASSWORD",
    "WITHOUT_PASSWORD",
    "PASSWORD_DROPPED",
    "METADATA_ENTRIES",
    "METADATA_DROPPED",
    "UNREADABLE_FILES",
    "NOT_SELECTED",
    "MAPPED",
    "invariant",
]

PREFIX = source_name(
    __name__
)  # the source's name: of the names below (and of the shared metadata counters' names)
SOURCE = f"{PREFIX}-user"  # the source of a record's dead letters
# Dead letters about a file rather than a record (the rest of a file that cannot be read on), so
# that "records read = written + dead-lettered records" stays exact.
FILE_SOURCE = f"{PREFIX}-file"

RECORDS_READ = f"{PREFIX}.records_read"
WITH_PASSWORD = f"{PREFIX}.with_password."  # + the hash's label
WITHOUT_PASSWORD = f"{PREFIX}.without_password"
PASSWORD_DROPPED = f"{PREFIX}.password_dropped."  # + reason (--on-unsupported-hash=import-without-password)
METADATA_ENTRIES = f"{PREFIX}.metadata_entries"
METADATA_DROPPED = f"{PREFIX}.metadata_dropped"
UNREADABLE_FILES = f"{PREFIX}.unreadable_files"
# --where: records that are not users, neither written nor dead-lettered
NOT_SELECTED = f"{PREFIX}.records_not_selected"
MAPPED = f"{PREFIX}.mapped."  # + field: records (selected) that held a value at the field's path


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """records read - not selected (``--where``) = written + dead-lettered; records converted =
    written + duplicates."""
    converted = counters.count_prefix(counts, WITH_PASSWORD) + counts.get(WITHOUT_PASSWORD, 0)
    read, skipped = counts.get(RECORDS_READ, 0), counts.get(NOT_SELECTED, 0)
    holds, text = reader_invariant(
        counts,
        read=read - skipped,
        noun="records",
        source=SOURCE,
        passed=converted,
        passed_label="converted",
        refused_label="blocked",
    )
    if skipped:
        text = text.replace(
            f"records read {read - skipped:,} =", f"records read {read:,} - not selected {skipped:,} =", 1
        )
    return holds, text
