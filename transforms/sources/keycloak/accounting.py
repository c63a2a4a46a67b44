"""The Keycloak reader's counter names, its dead letters' source and its accounting invariant, beside the code that counts.

The reader (``read.py``) writes these; the launcher's summary
(``command.py``) and :func:`invariant` read them. Names shared with other
stages (bodies, dead letters, notes, roles) are in ``transforms/common/counters.py``.
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
    "USERS_READ",
    "WITH_PASSWORD",
    "WITHOUT_PASSWORD",
    "FEDERATED",
    "PASSWORD_DROPPED",
    "OTHER_CREDENTIALS",
    "IDP_LINKS",
    "OTP_NOT_CARRIED",
    "REQUIRED_ACTIONS_NOT_CARRIED",
    "PASSWORD_CHANGE_REQUIRED",
    "METADATA_ENTRIES",
    "METADATA_DROPPED",
    "UNREADABLE_FILES",
    "invariant",
]

PREFIX = source_name(
    __name__
)  # the source's name: of the names below (and of the shared metadata counters' names)
SOURCE = f"{PREFIX}-user"  # the source of a user's dead letters
# Dead letters about a file rather than a user (a syntax error ends the file), so that
# "users read = written + dead-lettered users" stays exact.
FILE_SOURCE = f"{PREFIX}-file"

USERS_READ = f"{PREFIX}.users_read"
WITH_PASSWORD = f"{PREFIX}.with_password."  # + the hash algorithm converted
WITHOUT_PASSWORD = f"{PREFIX}.without_password"
FEDERATED = f"{PREFIX}.federated"  # LDAP/Kerberos users: no local hash
PASSWORD_DROPPED = f"{PREFIX}.password_dropped."  # + reason
OTHER_CREDENTIALS = f"{PREFIX}.other_credentials."  # + credential type not converted
IDP_LINKS = f"{PREFIX}.idp_links."  # + outcome (linked, unmapped, invalid) + "." + alias
OTP_NOT_CARRIED = f"{PREFIX}.otp_not_carried."  # + cause
REQUIRED_ACTIONS_NOT_CARRIED = f"{PREFIX}.required_actions_not_carried."  # + action
PASSWORD_CHANGE_REQUIRED = f"{PREFIX}.password_change_required"
METADATA_ENTRIES = f"{PREFIX}.metadata_entries"
METADATA_DROPPED = f"{PREFIX}.metadata_dropped"
UNREADABLE_FILES = f"{PREFIX}.unreadable_files"


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """users read = written + dead-lettered; users converted = written + dropped as duplicates."""
    converted = counters.count_prefix(counts, WITH_PASSWORD) + counts.get(WITHOUT_PASSWORD, 0)
    return reader_invariant(
        counts,
        read=counts.get(USERS_READ, 0),
        noun="users",
        source=SOURCE,
        passed=converted,
        passed_label="converted",
        refused_label="disabled",
    )
