"""The Okta source: Okta's user export CSV → ZITADEL import bodies (docs/okta.md).

The package's modules: ``command.py`` (its description: kind, flags, plan, summary) and
``read.py`` (the mapping and its part of the shared reader). Here: the names both use.
"""

from __future__ import annotations

from transforms.sources.declaration import source_name
from transforms.sources.source_counters import SourceCounters

__all__ = ["COUNTERS", "STATUS", "CHANGE_NOT_MARKED", "BLOCKED_WRITTEN", "BLOCKED", "ALIASES", "column"]

COUNTERS = SourceCounters(source_name(__name__))  # okta-user, okta.users_read, ...
STATUS = COUNTERS.own("status.")  # + Okta status of a user written (ACTIVE, STAGED, ...)
# A user Okta asks to change its password (PASSWORD_EXPIRED, RECOVERY): no password to mark.
CHANGE_NOT_MARKED = COUNTERS.own("password_change_not_marked")
BLOCKED_WRITTEN = COUNTERS.own("blocked_written")  # SUSPENDED, LOCKED_OUT, DEPROVISIONED read

# Okta's UserStatus values of a user who cannot sign in at Okta (suspended, locked, deactivated).
BLOCKED = frozenset({"SUSPENDED", "LOCKED_OUT", "DEPROVISIONED"})
# A header cell (case-folded) → the profile variable name it stands for.
ALIASES = {
    "okta username": "login",
    "username": "login",
    "primary email": "email",
    "okta user status": "status",
    "user status": "status",
    "user fullname": "displayName",
    "user id": "id",
    "okta id": "id",
}


def column(name: str) -> str:
    """A header cell's name as this source reads it: an alias resolved, else the name itself."""
    return ALIASES.get(name.strip().casefold(), name.strip())
