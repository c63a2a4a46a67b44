"""The Auth0 reader's item kinds and item shapes: what its steps send each other through spill files.

For whoever reads or changes ``parse``, ``route`` and ``join``: every parsed
record becomes one small **item**, a plain tuple whose fields are listed here, once. The items of
one unit and partition are pickled together into one spill file; the blob travels as
``(partition, (Kind, spill path))``.

Why plain tuples and not ``NamedTuple``: millions of items are pickled and unpickled per run, and a
NamedTuple pickles through Python-level ``__getnewargs__``/``__new__`` calls per item (measured here:
2.6x the pickling time and 1.5x the unpickling time of a plain tuple of the same fields). So each
shape below is a tuple type with its fields named in the comment beside it, each is built in one
place (the function named there) and each reader unpacks it once into locals of the same names.

Example (the join, reading a password item)::

    (file_index, position, email_key, oid, date, password_hash, raw, kind, target) = item
"""

from __future__ import annotations

import enum
from typing import Any

from transforms.common.records import intern_tallies

__all__ = [
    "Kind",
    "SOURCES",
    "READ_COUNTERS",
    "PROFILE_SOURCE",
    "PASSWORD_SOURCE",
    "CUSTOM_HASH_SOURCE",
    "MFA_SOURCE",
    "ROLE_SOURCE",
    "EMBEDDED_UNUSED_PREFIX",
    "Problem",
    "JsonObject",
    "ProfileItem",
    "PasswordItem",
    "MfaRecord",
    "RoleRecord",
    "RouteItem",
    "OtpItem",
    "RoleItem",
    "with_written",
]


class Kind(enum.IntEnum):
    """What a blob of items holds (and which input file a record came from)."""

    PROFILES = 0
    PASSWORDS = 1
    # A bulk-import profile's own ``custom_password_hash``: carried by the profile, joined like a
    # password record, so that one accounting covers both.
    CUSTOM_HASHES = 2
    MFA = 3
    # ``user_id → partition`` items that take MFA and role records to their profile's partition.
    ROUTES = 4
    # ``--roles-file`` lines, routed by user_id like MFA records (docs/roles.md).
    ROLE_RECORDS = 5


PROFILE_SOURCE = "auth0-profile"
PASSWORD_SOURCE = "auth0-password"
CUSTOM_HASH_SOURCE = "auth0-custom-hash"
MFA_SOURCE = "auth0-mfa"
ROLE_SOURCE = "auth0-roles"  # --roles-file records (docs/roles.md)

# The ``source`` of a dead letter, by the kind of record it is about.
SOURCES: dict[int, str] = {
    Kind.PROFILES: PROFILE_SOURCE,
    Kind.PASSWORDS: PASSWORD_SOURCE,
    Kind.CUSTOM_HASHES: CUSTOM_HASH_SOURCE,
    Kind.MFA: MFA_SOURCE,
    Kind.ROLE_RECORDS: ROLE_SOURCE,
}
# Records read, by the kind of file (the accounting in ``accounting`` reads them back).
READ_COUNTERS: dict[int, str] = {
    Kind.PROFILES: "auth0.profiles_read",
    Kind.PASSWORDS: "auth0.passwords_read",
    Kind.CUSTOM_HASHES: "auth0.custom_hashes_read",
    Kind.MFA: "auth0.mfa_read",
    Kind.ROLE_RECORDS: "auth0.role_records_read",
}
# Counters of a profile's embedded hash that was not used and has no line of its own (it is part
# of the profile's line, or the profile was written with a newer password record's hash).
EMBEDDED_UNUSED_PREFIX = "auth0.custom_hash_unused."
# The reader's other counters (read back by ``accounting`` and the summary).
PREFIX = "auth0"  # of these names, and of the shared metadata counters' names
PASSWORD_CONFLICTS = "auth0.password_conflicts"  # two password records: the older dropped
IMPORTED_WITHOUT_PASSWORD = "auth0.imported_without_password"
METADATA_DROPPED = "auth0.metadata_dropped"
IDENTITIES = "auth0.identities."  # + "database", or outcome + "." + provider
IDENTITIES_DATABASE = "auth0.identities.database"
MFA_NOT_IMPORTABLE = "auth0.mfa_not_importable."  # + factor kind
MFA_FACTORS = "auth0.mfa_factors"  # bulk-import mfa_factors: ".totp", "_not_carried.<cause>"
MFA_FACTORS_TOTP = "auth0.mfa_factors.totp"
MFA_FACTORS_NOT_CARRIED = "auth0.mfa_factors_not_carried."  # + cause
ROLE_RECORDS_JOINED = "auth0.role_records_joined"

# A reason to reject a record: (reason code, detail).
Problem = tuple[str, str]
# One input record as parsed: a JSON object, its values whatever the export holds.
JsonObject = dict[str, Any]

# A profile (built by ``_ParseUnitFn._profile``):
#   (file_index, position, email_key, user_id, name_key, problem, entry_json, meta_json, written, raw,
#    roles)
# ``problem`` is None or a Problem; a rejected profile is dead-lettered by the parse step and
# still sent (without entry) so that its password records are accounted for as
# ``profile-rejected`` instead of ``orphan-password``. ``roles``: its --roles-from role names
# (sorted, unique; () without --project-id). ``written``: ``(tallies, passwordless line)``, what its
# user adds to the counts and the passwordless list once written (``records.EncodedRow``).
ProfileItem = tuple[
    int,
    int,
    str,
    str,
    str,
    Problem | None,
    bytes,
    bytes,
    tuple[tuple[str, ...], bytes],
    bytes,
    tuple[str, ...],
]

# A password record or a profile's custom hash (built by ``_ParseUnitFn._password`` and
# ``_ParseUnitFn._custom_hash``):
#   (file_index, position, email_key, oid, date, password_hash, raw, kind, target)
# ``kind`` is PASSWORDS or CUSTOM_HASHES; ``target`` the sortkey of the profile carrying a custom
# hash (None for password records, which are matched by id and e-mail).
PasswordItem = tuple[int, int, str, str, str, str, bytes, int, tuple[int, int] | None]

# Records keyed by user_id, before routing (built by ``_ParseUnitFn._mfa`` and ``role_record``):
#   MFA:   (file_index, position, user_id, secret, raw)        secret: the normalised OTP secret
#   roles: (file_index, position, user_id, role_names, raw)    role_names: sorted, unique
MfaRecord = tuple[int, int, str, str, bytes]
RoleRecord = tuple[int, int, str, tuple[str, ...], bytes]

# A profile's route (built by ``_ParseUnitFn._parse_profile``):
#   (user_id, email_partition, file_index, position)
RouteItem = tuple[str, int, int, int]

# The same records after routing, keyed by the sortkey of their profile (built by ``_RouteMfaFn``;
# an OtpItem also by ``_ParseUnitFn._mfa_factors`` for a profile's own ``mfa_factors``):
#   (file_index, position, target_file_index, target_position, secret, raw)
#   (file_index, position, target_file_index, target_position, role_names, raw)
OtpItem = tuple[int, int, int, int, str, bytes]
RoleItem = tuple[int, int, int, int, tuple[str, ...], bytes]


def with_written(item: ProfileItem, names: list[str], dropped: tuple[str, bytes] | None) -> ProfileItem:
    """``item`` with more counter names for its user once written (``names``; ``dropped``: its own
    hash dropped, the name and passwordless line from ``hashing.tally.passwordless``)."""
    (
        file_index,
        position,
        email_key,
        user_id,
        name_key,
        problem,
        entry_json,
        meta_json,
        written,
        raw,
        roles,
    ) = item
    tallies, line = written
    if dropped is not None:
        name, line = dropped
        names = [*names, IMPORTED_WITHOUT_PASSWORD, name]
    written = (intern_tallies((*tallies, *names)), line)
    return (
        file_index,
        position,
        email_key,
        user_id,
        name_key,
        problem,
        entry_json,
        meta_json,
        written,
        raw,
        roles,
    )
