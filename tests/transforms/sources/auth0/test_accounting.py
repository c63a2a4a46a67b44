"""The Auth0 run's invariant (transforms/sources/auth0/accounting.py) over counter tables."""

from __future__ import annotations

from transforms.sources.auth0.accounting import invariant

BALANCED = {
    "auth0.profiles_read": 10,
    "users_written": 7,
    "dead_letter.auth0-profile.blocked": 2,
    "dead_letter.auth0-profile.duplicate-user-id": 1,
    "auth0.passwords_read": 6,
    "auth0.custom_hashes_read": 2,
    "users_with_password": 5,
    "dead_letter.auth0-password.orphan-password": 1,
    "dead_letter.auth0-custom-hash.unsupported-hash": 1,
    "auth0.custom_hash_unused.superseded": 1,
}


def test_balanced_counts_hold():
    holds, text = invariant(BALANCED)
    assert holds
    assert text == "profiles 10 = written 7 + dead-lettered 3; password records 8 = used 5 + dead-lettered 3"


def test_users_compared_by_a_sync_are_their_own_term():
    # A sync night: 4 new users written (2 with a password), 3 compared with the state (3 with one).
    counts = dict(
        BALANCED,
        users_written=4,
        users_with_password=2,
        **{"sync.rows_not_imported": 3, "sync.compared_with_password": 3},
    )
    assert invariant(counts) == (
        True,
        "profiles 10 = written 4 + compared with the state 3 + dead-lettered 3; "
        "password records 8 = used 5 + dead-lettered 3",
    )


def test_a_missing_dead_letter_breaks_it():
    counts = dict(BALANCED)
    del counts["dead_letter.auth0-password.orphan-password"]
    assert invariant(counts) == (
        False,
        "profiles 10 = written 7 + dead-lettered 3; password records 8 = used 5 + dead-lettered 2",
    )


def test_mfa_and_role_records_are_accounted_when_read():
    counts = dict(
        BALANCED,
        **{
            "auth0.mfa_read": 4,
            "auth0.mfa_factors.totp": 1,
            "users_with_otp": 2,
            "auth0.mfa_not_importable.recovery-code": 2,
            "dead_letter.auth0-mfa.unknown-user": 1,
            "auth0.role_records_read": 3,
            "auth0.role_records_joined": 2,
            "dead_letter.auth0-roles.unknown-user": 1,
        },
    )
    holds, text = invariant(counts)
    assert holds
    assert text.endswith(
        "; MFA records 4 + mfa_factors totp 1 = OTP written 2 + not importable 2 + dead-lettered 1"
        "; role records 3 = joined 2 + dead-lettered 1"
    )
    counts["auth0.role_records_joined"] = 1
    assert not invariant(counts)[0]
