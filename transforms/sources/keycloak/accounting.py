"""The Keycloak reader's counter names, its dead letters' source and its accounting invariant, beside the code that counts.

The reader (``read.py``) writes these; the launcher's summary
(``command.py``) and :func:`invariant` read them. Names shared with other
stages (bodies, dead letters, notes, roles) are in ``transforms/common/counters.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.common import counters
from transforms.common.accounting import reader_invariant

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

PREFIX = "keycloak"  # of the names below (and of the shared metadata counters' names)
SOURCE = "keycloak-user"  # the source of a user's dead letters
# Dead letters about a file rather than a user (a syntax error ends the file), so that
# "users read = written + dead-lettered users" stays exact.
FILE_SOURCE = "keycloak-file"

USERS_READ = "keycloak.users_read"
WITH_PASSWORD = "keycloak.with_password."  # + the hash algorithm converted
WITHOUT_PASSWORD = "keycloak.without_password"
FEDERATED = "keycloak.federated"  # LDAP/Kerberos users: no local hash
PASSWORD_DROPPED = "keycloak.password_dropped."  # + reason
OTHER_CREDENTIALS = "keycloak.other_credentials."  # + credential type not converted
IDP_LINKS = "keycloak.idp_links."  # + outcome (linked, unmapped, invalid) + "." + alias
OTP_NOT_CARRIED = "keycloak.otp_not_carried."  # + cause
REQUIRED_ACTIONS_NOT_CARRIED = "keycloak.required_actions_not_carried."  # + action
PASSWORD_CHANGE_REQUIRED = "keycloak.password_change_required"
METADATA_ENTRIES = "keycloak.metadata_entries"
METADATA_DROPPED = "keycloak.metadata_dropped"
UNREADABLE_FILES = "keycloak.unreadable_files"


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
