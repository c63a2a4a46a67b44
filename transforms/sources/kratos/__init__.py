"""The Ory Kratos source: identities JSON (admin API, kratos CLI, NDJSON) → ZITADEL import bodies
(docs/kratos.md).

The package's modules: ``command.py`` (its description: kind, flags, plan, summary), ``read.py``
(its part of the shared reader) and ``mapping.py`` (an identity → its body). Here: the counter
names the reader writes and the summary reads (names shared with other stages are in
``transforms/common/counters.py``).
"""

from __future__ import annotations

import dataclasses

from transforms.sources.declaration import source_name
from transforms.sources.source_counters import SourceCounters

__all__ = ["COUNTERS"]


@dataclasses.dataclass(frozen=True)
class _KratosCounters(SourceCounters):
    """The shared names, but an identity's rows and dead letters are ``kratos-identity``."""

    @property
    def source(self) -> str:
        return f"{self.name}-identity"


COUNTERS = _KratosCounters(source_name(__name__))  # kratos-identity, kratos.users_read, ...
WITH_PASSWORD = COUNTERS.own("with_password.")  # + the hash's form (bcrypt, argon2, scrypt, ...)
NO_PASSWORD = COUNTERS.own("no_password.")  # + why: no-credentials, not-exported, migration-hook, none
PASSWORD_DROPPED = COUNTERS.own(
    "password_dropped."
)  # + reason (--on-unsupported-hash=import-without-password)
MIGRATION_HOOK = "password-migration-hook"  # the passwordless list's reason of such a user
IDP_LINKS = COUNTERS.own("idp_links.")  # + outcome + "." + provider
TOTP_NOT_CARRIED = COUNTERS.own("totp_not_carried.")  # + cause
OTHER_CREDENTIALS = COUNTERS.own("other_credentials.")  # + credential type (lookup_secret, webauthn, ...)
BLOCKED_WRITTEN = COUNTERS.own("inactive_written")  # state inactive, read for --include-blocked or --state
METADATA_ENTRIES = COUNTERS.own("metadata_entries")
