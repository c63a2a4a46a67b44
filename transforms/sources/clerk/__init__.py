"""The Clerk source: Clerk's dashboard CSV and JSON user exports → ZITADEL import bodies (docs/clerk.md).

The package's modules: ``command.py`` (its description: kind, flags, plan, summary), ``read.py``
(its part of the shared reader) and ``mapping.py`` (a user → its body). Here: the names they share.
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.sources.declaration import source_name
from transforms.sources.source_counters import SourceCounters

__all__ = ["COUNTERS", "blocked"]

COUNTERS = SourceCounters(source_name(__name__))  # clerk-user, clerk.users_read, ...
FILES = COUNTERS.own("files.")  # + csv / json
HASHERS = COUNTERS.own("password_hasher.")  # + Clerk's hasher name, of users mapped with a digest
NO_PASSWORD = COUNTERS.own("no_password_in_export")
AWSCOGNITO = COUNTERS.own("awscognito_no_password")  # Clerk's Cognito marker: not a hash, no password
PASSWORD_DROPPED = COUNTERS.own("password_dropped.")  # + reason: imported without it (reset list)
BLOCKED_WRITTEN = COUNTERS.own("blocked_written")  # banned or locked users read (--include-blocked, --state)
PRIMARY_CHOSEN = COUNTERS.own("primary_email_chosen")  # no primary named: the first address taken
OTHER_EMAILS = COUNTERS.own("other_emails_not_carried")  # users written with more addresses than one
OTHER_PHONES = COUNTERS.own("other_phones_not_carried")
OTP_NOT_CARRIED = COUNTERS.own("otp_not_carried.")  # + cause (transforms/mapping/otp.py)
IDP_LINKS = COUNTERS.own("idp_links.")  # + outcome + "." + provider
METADATA_ENTRIES = COUNTERS.own("metadata_entries")

# The Dashboard CSV's columns that tell it (docs/clerk.md#the-dashboard-csv).
CSV_MARKS = frozenset(
    {"password_digest", "password_hasher", "primary_email_address", "verified_email_addresses"}
)
# The JSON exports' keys that tell a Clerk user (the support export's, the migration tool's, the CLI's).
JSON_MARKS = ("password_hasher", "password_digest", "primary_email_address", "verified_email_addresses")


def _truthy(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"))


def blocked(record: Mapping[str, object]) -> bool:
    """Banned or locked at Clerk (the Backend API's ``banned`` / ``locked``; "true" in a CSV)."""
    return _truthy(record.get("banned")) or _truthy(record.get("locked"))
