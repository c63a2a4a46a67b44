"""The Cognito source: ``aws cognito-idp list-users`` answers and the get-csv-header CSV → ZITADEL
import bodies (docs/cognito.md).

The package's modules: ``command.py`` (its description: kind, flags, plan, summary) and
``read.py`` (the reader and the mapping). Here: the names both use.
"""

from __future__ import annotations

import dataclasses

from transforms.sources.declaration import source_name
from transforms.sources.source_counters import SourceCounters

__all__ = [
    "COUNTERS",
    "FILES",
    "STATUS",
    "CHANGE_NOT_MARKED",
    "BLOCKED_WRITTEN",
    "IDP_LINKS",
    "BLOCKED_STATUS",
    "JSON",
    "CSV",
    "CognitoFile",
]

COUNTERS = SourceCounters(source_name(__name__))  # cognito-user, cognito.users_read, ...
FILES = COUNTERS.own("files.")  # + format (json, csv): files read
STATUS = COUNTERS.own("status.")  # + UserStatus of a user mapped (CONFIRMED, UNCONFIRMED, ...)
# FORCE_CHANGE_PASSWORD, RESET_REQUIRED: Cognito asks for a new password, there is none to mark.
CHANGE_NOT_MARKED = COUNTERS.own("password_change_not_marked")
BLOCKED_WRITTEN = COUNTERS.own("blocked_written")  # Enabled false (or ARCHIVED, COMPROMISED) read
IDP_LINKS = COUNTERS.own("idp_links.")  # + outcome (linked, unmapped, invalid) + "." + providerName

# UserStatus values of a user who cannot sign in at Cognito (Enabled false is the other mark).
BLOCKED_STATUS = frozenset({"ARCHIVED", "COMPROMISED"})
JSON, CSV = "json", "csv"


@dataclasses.dataclass(frozen=True)
class CognitoFile:
    """A planned input file: its sort-key ``index``, ``path`` and ``format`` (json, csv)."""

    index: int
    path: str
    format: str
