"""The Firebase reader's counter names, its dead letters' source and its accounting invariant.

The reader (``read.py``) writes these; the launcher's summary
(``command.py``) and :func:`invariant` read them. Names shared with other
stages (bodies, dead letters, notes) are in ``transforms/common/counters.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.common.accounting import reader_invariant
from transforms.sources.declaration import source_name

__all__ = [
    "PREFIX",
    "SOURCE",
    "FILE_SOURCE",
    "USERS_READ",
    "USERS_MAPPED",
    "NO_PASSWORD",
    "PASSWORD_DROPPED",
    "PLAINTEXT_IMPORTED",
    "DISABLED_WRITTEN",
    "IDP_LINKS",
    "MFA",
    "METADATA_ENTRIES",
    "METADATA_DROPPED",
    "UNREADABLE_FILES",
    "FILES",
    "invariant",
]

PREFIX = source_name(
    __name__
)  # the source's name: of the names below (and of the shared metadata counters' names)
SOURCE = f"{PREFIX}-user"  # the source of a user's dead letters
# Dead letters about a file rather than a user (the rest of a file that cannot be read on).
FILE_SOURCE = f"{PREFIX}-file"

USERS_READ = f"{PREFIX}.users_read"
USERS_MAPPED = f"{PREFIX}.users_mapped"  # passed mapping and validation (written or duplicate)
NO_PASSWORD = f"{PREFIX}.no_password_in_export"  # no passwordHash (IdP or phone sign-in only)
PASSWORD_DROPPED = f"{PREFIX}.password_dropped."  # + reason: imported without it, must reset
# An emulator export's clear-text password imported with --allow-plaintext-passwords (change required).
PLAINTEXT_IMPORTED = f"{PREFIX}.plaintext_passwords_imported"
DISABLED_WRITTEN = f"{PREFIX}.disabled_written"  # disabled users read for --state or --include-disabled
IDP_LINKS = f"{PREFIX}.idp_links."  # + outcome (linked, unmapped, invalid, firebase) + "." + provider
MFA = f"{PREFIX}.mfa."  # + kind (phone, totp, other): second factors, not carried
METADATA_ENTRIES = f"{PREFIX}.metadata_entries"
METADATA_DROPPED = f"{PREFIX}.metadata_dropped"
UNREADABLE_FILES = f"{PREFIX}.unreadable_files"
FILES = f"{PREFIX}.files."  # + format (json, csv): input files read


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """users read = written + dead-lettered; users mapped = written + dropped as duplicates."""
    return reader_invariant(
        counts,
        read=counts.get(USERS_READ, 0),
        noun="users",
        source=SOURCE,
        passed=counts.get(USERS_MAPPED, 0),
        passed_label="mapped",
        refused_label="disabled",
    )
