"""Stable, machine-readable dead-letter reason codes, shared by every source and check.

A module of its own so that the hash conversions (transforms/hashing/convert.py) and the request rules
(transforms/mapping/validate.py) can both name reasons without importing each other. The README's
"Dead-letter reasons" section documents each code.
"""

from __future__ import annotations

__all__ = ["Reason"]


class Reason:
    """Stable, machine-readable dead-letter reason codes (documented in the README)."""

    MALFORMED_JSON = "malformed-json"
    NOT_AN_OBJECT = "not-an-object"
    MISSING_USER_ID = "missing-user-id"
    MISSING_EMAIL = "missing-email"
    INVALID_EMAIL = "invalid-email"
    INVALID_USERNAME = "invalid-username"
    INVALID_FIRST_NAME = "invalid-first-name"
    INVALID_LAST_NAME = "invalid-last-name"
    INVALID_USER_ID = "invalid-user-id"
    INVALID_HASH = "invalid-hash"
    BCRYPT_COST = "bcrypt-cost-out-of-range"
    DUPLICATE_USER_ID = "duplicate-user-id"
    DUPLICATE_USERNAME = "duplicate-username"
    BLOCKED = "blocked"
    ORPHAN_PASSWORD = "orphan-password"
    PASSWORD_SUPERSEDED = "password-superseded"
    AMBIGUOUS_PASSWORD = "ambiguous-password"
    MISSING_PASSWORD_HASH = "missing-password-hash"
    PROFILE_REJECTED = "profile-rejected"
    UNREADABLE_INPUT = "unreadable-input"
    # A record nested deeper than transforms/sources/input_stream.py MAX_DEPTH (docs/inputs.md).
    TOO_DEEP = "too-deep"
    # Keycloak realms (docs/source-schemas.md#keycloak).
    UNSUPPORTED_HASH = "unsupported-hash"
    PLAINTEXT_PASSWORD = "plaintext-password"
    DISABLED = "disabled"
    SERVICE_ACCOUNT = "service-account"
    # Real-world inputs, MFA and identities (docs/source-schemas.md#auth0).
    INVALID_PASSWORD = "invalid-password"
    INVALID_OTP_SECRET = "invalid-otp-secret"
    OTP_SUPERSEDED = "otp-superseded"
    UNKNOWN_USER = "unknown-user"
    INVALID_IDP_LINK = "invalid-idp-link"
    # Password hashes against the target's passwap rules (docs/password-hashes.md).
    UNSUPPORTED_SALTED_SHA = "unsupported-hash-salted-sha"
    UNSUPPORTED_HMAC = "unsupported-hash-hmac"
    UNSUPPORTED_MD4 = "unsupported-hash-md4"
    UNSUPPORTED_LDAP = "unsupported-hash-ldap"
    UNSUPPORTED_PBKDF2_DIGEST = "unsupported-hash-pbkdf2-digest"
    UNSUPPORTED_ARGON2_VARIANT = "unsupported-hash-argon2-variant"
    UNSUPPORTED_SCRYPT_COST = "unsupported-hash-scrypt-cost"
    UNSUPPORTED_SALT = "unsupported-hash-salt"
    UNSUPPORTED_PASSWORD_ENCODING = "unsupported-password-encoding"
    HASH_VERIFIER_DISABLED = "hash-verifier-disabled"
    HASH_OUT_OF_LIMITS = "hash-parameter-out-of-limits"
    # The user service v2 takes a hash of at most 200 characters (HashedPassword.hash); the import takes longer.
    HASH_TOO_LONG_FOR_USER_V2 = "hash-too-long-for-user-v2"
    # Users without id or e-mail, text hygiene (README "Text rules").
    CONTROL_CHARACTERS = "control-characters"
    INVALID_EMAIL_FALLBACK = "invalid-email-fallback"
    # Tables of users (docs/table.md): a mapped value of the wrong type, a path through a non-object.
    INVALID_FIELD_TYPE = "invalid-field-type"
    BAD_PATH = "bad-path"
    MALFORMED_CSV = "malformed-csv"  # a CSV row whose cells do not match the header
