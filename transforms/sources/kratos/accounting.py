"""The Kratos reader's counter names, its dead letters' source and its accounting invariant.

The reader (``read.py``) writes these; the summary (``command.py``) and :func:`invariant`
read them. Names shared with other stages are in ``transforms/common/counters.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.common.accounting import reader_invariant
from transforms.sources.declaration import source_name

PREFIX = source_name(__name__)  # the source's name: of the counter names below
SOURCE = f"{PREFIX}-identity"  # the source of an identity's rows and dead letters
FILE_SOURCE = f"{PREFIX}-file"  # the dead letter of a file's unreadable rest
USERS_READ = f"{PREFIX}.users_read"
USERS_MAPPED = f"{PREFIX}.users_mapped"  # passed mapping and validation (written or duplicate)
UNREADABLE_FILES = f"{PREFIX}.unreadable_files"
WITH_PASSWORD = f"{PREFIX}.with_password."  # + the hash's form (bcrypt, argon2, scrypt, ...)
NO_PASSWORD = f"{PREFIX}.no_password."  # + why: no-credentials, not-exported, migration-hook, none
PASSWORD_DROPPED = f"{PREFIX}.password_dropped."  # + reason (--on-unsupported-hash=import-without-password)
MIGRATION_HOOK = "password-migration-hook"  # the passwordless list's reason of such a user
IDP_LINKS = f"{PREFIX}.idp_links."  # + outcome + "." + provider
TOTP_NOT_CARRIED = f"{PREFIX}.totp_not_carried."  # + cause
OTHER_CREDENTIALS = f"{PREFIX}.other_credentials."  # + credential type (lookup_secret, webauthn, ...)
BLOCKED_WRITTEN = f"{PREFIX}.inactive_written"  # state inactive, read for --include-blocked or --state
METADATA_ENTRIES = f"{PREFIX}.metadata_entries"
METADATA_DROPPED = f"{PREFIX}.metadata_dropped"  # the summary's "metadata entries dropped (limits)"


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """identities read = written + dead-lettered; mapped = written + dropped as duplicates."""
    return reader_invariant(
        counts,
        read=counts.get(USERS_READ, 0),
        noun="identities",
        source=SOURCE,
        passed=counts.get(USERS_MAPPED, 0),
        passed_label="mapped",
        refused_label="inactive",
    )
