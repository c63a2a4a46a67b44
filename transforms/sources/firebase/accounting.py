"""The Firebase reader's counter names, its dead letters' source and its accounting invariant.

The reader (``read.py``) writes these; the launcher's summary
(``command.py``) and :func:`invariant` read them. Names shared with other
stages (bodies, dead letters, notes) are in ``transforms/common/counters.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.common.accounting import reader_invariant

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

PREFIX = "firebase"  # of the names below (and of the shared metadata counters' names)
SOURCE = "firebase-user"  # the source of a user's dead letters
# Dead letters about a file rather than a user (the rest of a file that cannot be read on).
FILE_SOURCE = "firebase-file"

USERS_READ = "firebase.users_read"
USERS_MAPPED = "firebase.users_mapped"  # passed mapping and validation (written or duplicate)
NO_PASSWORD = "firebase.no_password_in_export"  # no passwordHash (IdP or phone sign-in only)
PASSWORD_DROPPED = "firebase.password_dropped."  # + reason: imported without it, must reset
# An emulator export's clear-text password imported with --allow-plaintext-passwords (change required).
PLAINTEXT_IMPORTED = "firebase.plaintext_passwords_imported"
DISABLED_WRITTEN = "firebase.disabled_written"  # disabled users read for --state or --include-disabled
IDP_LINKS = "firebase.idp_links."  # + outcome (linked, unmapped, invalid, firebase) + "." + provider
MFA = "firebase.mfa."  # + kind (phone, totp, other): second factors, not carried
METADATA_ENTRIES = "firebase.metadata_entries"
METADATA_DROPPED = "firebase.metadata_dropped"
UNREADABLE_FILES = "firebase.unreadable_files"
FILES = "firebase.files."  # + format (json, csv): input files read


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
