"""The Okta reader's counter names, its dead letters' source and its accounting invariant."""

from __future__ import annotations

from collections.abc import Mapping

from transforms.common.accounting import reader_invariant
from transforms.sources.declaration import source_name

PREFIX = source_name(__name__)  # the source's name: of the names below
SOURCE = f"{PREFIX}-user"  # the source of a user's rows and dead letters
FILE_SOURCE = f"{PREFIX}-file"  # the dead letter of a file's unreadable rest
USERS_READ = f"{PREFIX}.users_read"
USERS_MAPPED = f"{PREFIX}.users_mapped"  # passed mapping and validation (written or duplicate)
UNREADABLE_FILES = f"{PREFIX}.unreadable_files"
STATUS = f"{PREFIX}.status."  # + Okta status of a user written (ACTIVE, STAGED, ...)
# A user Okta asks to change its password (PASSWORD_EXPIRED, RECOVERY): no password to mark.
CHANGE_NOT_MARKED = f"{PREFIX}.password_change_not_marked"
BLOCKED_WRITTEN = f"{PREFIX}.blocked_written"  # SUSPENDED, LOCKED_OUT, DEPROVISIONED read
METADATA_DROPPED = f"{PREFIX}.metadata_dropped"  # the summary's "metadata entries dropped (limits)"


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """users read = written + dead-lettered; users mapped = written + dropped as duplicates."""
    return reader_invariant(
        counts,
        read=counts.get(USERS_READ, 0),
        noun="users",
        source=SOURCE,
        passed=counts.get(USERS_MAPPED, 0),
        passed_label="mapped",
        refused_label="blocked",
    )
