"""The Auth0 reader's accounting: every record read ends written or dead-lettered, in counters.

For whoever renames a counter of the Auth0 reader: the run's invariant (printed in the summary,
stored in the manifest) reads those counters back, so it lives here, beside the code that writes
them (``parse``, ``join``; ``users_written`` and friends come from
``transforms/output/bodies.py``, ``sync.rows_not_imported`` from ``transforms/sync/compare.py``).

Example::

    holds, text = invariant(counts)  # counts: counter name → value, from the run's metrics
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.common import counters
from transforms.sources.auth0.items import (
    CUSTOM_HASH_SOURCE,
    EMBEDDED_UNUSED_PREFIX,
    MFA_FACTORS_TOTP,
    MFA_NOT_IMPORTABLE,
    MFA_SOURCE,
    PASSWORD_SOURCE,
    PROFILE_SOURCE,
    READ_COUNTERS,
    ROLE_RECORDS_JOINED,
    ROLE_SOURCE,
    Kind,
)

__all__ = ["invariant"]


_sum = counters.count_prefix


def _dead(counts: Mapping[str, int], source: str) -> int:
    """Dead letters of one source (``dead_letter.<source>.<reason>``, counted where they are written)."""
    return _sum(counts, counters.dead_letter(source))


def _compared(compared: int) -> str:
    """The accounting's term for users compared with the sync state (none without ``--state``)."""
    return f" + compared with the state {compared:,}" if compared else ""


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """profiles read = users written (+ compared with the state) + profiles dead-lettered; password
    hashes read (records and custom_password_hash) = used + dead-lettered; MFA records read +
    bulk-import ``mfa_factors`` totp secrets = OTP secrets written (+ compared) + not importable +
    dead-lettered (both are OTP items of the join, dead-lettered as ``auth0-mfa``)."""
    profiles = counts.get(READ_COUNTERS[Kind.PROFILES], 0)
    # With --state, users already in ZITADEL are compared instead of written (docs/sync.md).
    written = counts.get(counters.USERS_WRITTEN, 0)
    compared = counts.get(counters.SYNC_ROWS_NOT_IMPORTED, 0)
    dead_profiles = _dead(counts, PROFILE_SOURCE)
    passwords = counts.get(READ_COUNTERS[Kind.PASSWORDS], 0) + counts.get(
        READ_COUNTERS[Kind.CUSTOM_HASHES], 0
    )
    with_pw = counts.get(counters.USERS_WITH_PASSWORD, 0) + counts.get(
        counters.SYNC_COMPARED_WITH_PASSWORD, 0
    )
    # A profile's own hash that was not used has no line of its own (counted under
    # EMBEDDED_UNUSED_PREFIX): one dead-letter line per rejected record.
    dead_pw = (
        _dead(counts, PASSWORD_SOURCE)
        + _dead(counts, CUSTOM_HASH_SOURCE)
        + _sum(counts, EMBEDDED_UNUSED_PREFIX)
    )
    mfa = counts.get(READ_COUNTERS[Kind.MFA], 0)
    factors = counts.get(MFA_FACTORS_TOTP, 0)
    with_otp = counts.get(counters.USERS_WITH_OTP, 0)
    compared_otp = counts.get(counters.SYNC_COMPARED_WITH_OTP, 0)
    not_importable = _sum(counts, MFA_NOT_IMPORTABLE)
    dead_mfa = _dead(counts, MFA_SOURCE)
    holds = (
        profiles == written + compared + dead_profiles
        and passwords == with_pw + dead_pw
        and mfa + factors == with_otp + compared_otp + not_importable + dead_mfa
    )
    text = (
        f"profiles {profiles:,} = written {written:,}{_compared(compared)} + dead-lettered {dead_profiles:,}; "
        f"password records {passwords:,} = used {with_pw:,} + dead-lettered {dead_pw:,}"
    )
    if mfa or factors:
        read = (
            f"MFA records {mfa:,}" if not factors else f"MFA records {mfa:,} + mfa_factors totp {factors:,}"
        )
        text += (
            f"; {read} = OTP written {with_otp:,}{_compared(compared_otp)} + not importable {not_importable:,}"
            f" + dead-lettered {dead_mfa:,}"
        )
    role_records = counts.get(READ_COUNTERS[Kind.ROLE_RECORDS], 0)
    if role_records:  # --roles-file (docs/roles.md): joined to a profile, or a dead letter
        joined = counts.get(ROLE_RECORDS_JOINED, 0)
        dead_roles = _dead(counts, ROLE_SOURCE)
        holds = holds and role_records == joined + dead_roles
        text += f"; role records {role_records:,} = joined {joined:,} + dead-lettered {dead_roles:,}"
    return holds, text
