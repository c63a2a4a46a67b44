"""Every counter name a run shares between the code that writes it and the code that reads it.

A migrate run counts with Beam metrics (``records.NAMESPACE``); the launcher reads them back
into a ``{name: value}`` map, checks each source's accounting invariant and prints the summary,
and the manifest keeps the map under ``counts``. A name written in one module and read in another
is spelled once, here (a renamed counter used to surface only as a BROKEN invariant at the end
of a run). Names that only one source writes and reads sit beside that source's code
(``transforms/sources/<source>/<source>_accounting.py``, with its invariant).

Names ending in ``.`` are prefixes: the full name adds a suffix (a reason, a verifier, a field).

>>> dead_letter("keycloak", "invalid-email")
'dead_letter.keycloak.invalid-email'
>>> count_prefix({"dead_letter.a.x": 2, "dead_letter.b.y": 3, "users_written": 9}, DEAD_LETTER)
5
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "USERS_WRITTEN",
    "USERS_WITH_PASSWORD",
    "USERS_WITH_OTP",
    "METADATA_WRITTEN",
    "BODIES_WRITTEN",
    "DEAD_LETTER",
    "dead_letter",
    "NOTES",
    "note",
    "CANNOT_SIGN_IN",
    "PASSWORD_HASHES",
    "WITHOUT_PASSWORD",
    "HASH_PARAM",
    "REFUSED_HASHES",
    "REFUSED_HASH_PARAM",
    "HASH_FORMS",
    "REFUSED_HASH_FORMS",
    "NOT_CARRIED",
    "UNKNOWN_FIELD",
    "INPUTS_DECODED",
    "INPUTS_PARTIAL",
    "ROLES",
    "ROLES_ASSIGNED",
    "ROLES_UNDEFINED",
    "ROLES_USERS_HOLDING",
    "ROLES_SKIPPED",
    "ROLES_SKIPPED_DEAD_LETTERED",
    "AUTHORIZATIONS_GRANTS",
    "AUTHORIZATIONS_KEYS_CARRIED",
    "AUTHORIZATIONS_USERS_WITH_ROLES",
    "AUTHORIZATIONS_ROLES",
    "SYNC",
    "SYNC_ROWS_NOT_IMPORTED",
    "SYNC_ROWS_REJECTED",
    "SYNC_NEW",
    "SYNC_UNCHANGED",
    "SYNC_CHANGED",
    "SYNC_CHANGED_FIELDS",
    "SYNC_NOT_APPLIED",
    "SYNC_COMPARED_WITH_PASSWORD",
    "SYNC_COMPARED_WITH_OTP",
    "SYNC_DEACTIVATE",
    "SYNC_LOCK",
    "SYNC_REACTIVATE",
    "SYNC_CALLS",
    "SYNC_PLANNED",
    "SYNC_REMOVALS",
    "SYNC_BLOCKS",
    "SYNC_REMOVED",
    "SYNC_LEFT_ALONE_DEAD_LETTERED",
    "count_prefix",
    "by_suffix",
]

# Bodies (transforms/output/bodies.py): what reached an import body.
USERS_WRITTEN = "users_written"
USERS_WITH_PASSWORD = "users_with_password"
USERS_WITH_OTP = "users_with_otp"
METADATA_WRITTEN = "metadata_written"
BODIES_WRITTEN = "bodies_written"

# Dead letters, counted where they are written (transforms/files/sinks.py): dead_letter.<source>.<reason>.
DEAD_LETTER = "dead_letter."


def dead_letter(source: str, reason: str = "") -> str:
    """``dead_letter.<source>.<reason>``; without a reason, the prefix of one source's letters."""
    return f"{DEAD_LETTER}{source}.{reason}"


# Fields changed or dropped on the way (transforms/mapping/validate.py's notes): notes.<note>.
NOTES = "notes."


def note(name: str) -> str:
    """``notes.<name>`` (``phone-dropped``, ``derived-id``, ...)."""
    return NOTES + name


# Written users with neither a password nor an IdP link: cannot_sign_in.<source>.
CANNOT_SIGN_IN = "cannot_sign_in."

# Password hashes (transforms/hashing/tally.py): by verifier, by reason dropped, parameter spread.
PASSWORD_HASHES = "password_hashes."
WITHOUT_PASSWORD = "without_password."
HASH_PARAM = "hash_param."
# Users whose hash the target's config refuses (verifier off, parameter out of limits): by
# verifier, and the parameters' spread, so the summary can print the config that admits them.
REFUSED_HASHES = "refused_hashes."
REFUSED_HASH_PARAM = "refused_hash_param."
# Hashes by the form they came in (transforms/hashing/forms.py): rewritten, and refused
# (the form, or "unrecognised"), so the report can say which source forms became which verifiers.
HASH_FORMS = "hash_forms."
REFUSED_HASH_FORMS = "refused_hash_forms."

# Source fields the import does not carry (transforms/mapping/fields.py): <prefix><source>.<field>.
NOT_CARRIED = "not_carried."
UNKNOWN_FIELD = "unknown_field."

# Input files (transforms/sources/json_units.py, the Keycloak reader).
INPUTS_DECODED = "inputs.decoded."
INPUTS_PARTIAL = "inputs.partial."

# Roles and grants (transforms/mapping/roles.py, transforms/output/grants.py).
ROLES = "roles."  # + what a role source counts of its own
ROLES_ASSIGNED = "roles.assigned"
ROLES_UNDEFINED = "roles.undefined"
ROLES_USERS_HOLDING = "roles.users_holding"
ROLES_SKIPPED = "roles.skipped."  # + why a role was not granted
ROLES_SKIPPED_DEAD_LETTERED = "roles.skipped.user-dead-lettered"
AUTHORIZATIONS_GRANTS = "authorizations.grants"
AUTHORIZATIONS_KEYS_CARRIED = "authorizations.keys_carried"
AUTHORIZATIONS_USERS_WITH_ROLES = "authorizations.users_with_roles"
AUTHORIZATIONS_ROLES = "authorizations.roles"

# Scheduled syncs: written by transforms/sync/compare.py, read by change_files.py (the summary and
# the manifest's sync counts, without the prefix) and the launcher (the removal guard).
SYNC = "sync."
SYNC_ROWS_NOT_IMPORTED = "sync.rows_not_imported"  # compared with the state instead of written
# Of those: with a password, with an OTP secret (USERS_WITH_PASSWORD/OTP count the written ones).
SYNC_COMPARED_WITH_PASSWORD = "sync.compared_with_password"
SYNC_COMPARED_WITH_OTP = "sync.compared_with_otp"
SYNC_ROWS_REJECTED = "sync.rows_rejected"  # disabled users new to ZITADEL
SYNC_NEW = "sync.new"
SYNC_UNCHANGED = "sync.unchanged"
SYNC_CHANGED = "sync.changed"
SYNC_CHANGED_FIELDS = "sync.changed_fields."  # + the field group
SYNC_NOT_APPLIED = "sync.not_applied."  # + what an existing user cannot be given
SYNC_DEACTIVATE = "sync.deactivate"  # blocked at the source: DeactivateUser
SYNC_LOCK = "sync.lock"  # blocked at the source, an initial user: LockUser (docs/sync.md#initial-users)
SYNC_REACTIVATE = "sync.reactivate"
SYNC_CALLS = "sync.calls"
SYNC_PLANNED = "sync.planned."  # + the call name: SYNC_CALLS by kind
SYNC_REMOVALS = "sync.removals"  # users gone from the export, deactivated or deleted (--max-removals)
SYNC_BLOCKS = "sync.blocks"  # users of the state blocked at the source, deactivated or locked (--max-blocks)
# + what was planned: report, deactivate, lock, delete, already-inactive, already-locked, held
SYNC_REMOVED = "sync.removed."
SYNC_LEFT_ALONE_DEAD_LETTERED = "sync.left_alone_dead_lettered"


def count_prefix(counts: Mapping[str, int], prefix: str) -> int:
    """The sum of every counter whose name starts with ``prefix``."""
    return sum(value for name, value in counts.items() if name.startswith(prefix))


def by_suffix(counts: Mapping[str, int], prefix: str) -> list[tuple[str, int]]:
    """``(what follows prefix, value)`` of the counters named ``prefix...``, in ``counts``' order."""
    return [(name[len(prefix) :], value) for name, value in counts.items() if name.startswith(prefix)]
