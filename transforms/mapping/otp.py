"""Second factors and forced password changes → ZITADEL's ``otpCode`` / ``passwordChangeRequired``.

Pure functions, no Beam; used by the Keycloak mapping (``transforms/sources/keycloak/mapping.py``) and the Auth0
bulk-import profiles (``transforms/sources/auth0/parse.py``). The facts and their sources are in
docs/source-schemas.md ("Second factors"); what is not carried, per cause, in
docs/fields-not-carried.md.

ZITADEL's import takes one TOTP secret per user (``otpCode``, base32) and verifies codes with
HMAC-SHA1, 6 digits and a 30-second period. A secret is written only when the source used
exactly these parameters: a secret with other parameters would give the user codes ZITADEL
refuses, locking them out. Everything else is returned as a *cause* (a counter-name part) so
that the caller can count it.

Example::

    >>> secret, causes = keycloak_otp([{"type": "otp", "createdDate": 1,
    ...     "secretData": '{"value":"12345678901234567890"}',
    ...     "credentialData": '{"subType":"totp","digits":6,"period":30,"algorithm":"HmacSHA1"}'}], None)
    >>> secret, causes
    ('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', [])
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import orjson

from transforms.mapping.validate import normalise_otp, otp_problem

__all__ = [
    "OtpPolicy",
    "KEYCLOAK_DEFAULT_POLICY",
    "REALM_POLICY_KEYS",
    "OTP_CREDENTIAL_TYPES",
    "UPDATE_PASSWORD",
    "realm_policy",
    "keycloak_otp",
    "required_actions",
    "auth0_mfa_factors",
    "cause_name",
]

# What ZITADEL verifies (docs/source-schemas.md "Second factors").
ZITADEL_ALGORITHM, ZITADEL_DIGITS, ZITADEL_PERIOD = "HmacSHA1", 6, 30

# Credential types Keycloak stores OTP devices under: "otp" in current exports, "totp"/"hotp" in
# the deprecated representation (RepresentationToModel.convertDeprecatedCredentialsFormat).
OTP_CREDENTIAL_TYPES = frozenset({"otp", "totp", "hotp"})

# The required action that makes the user choose a new password at the next sign-in.
UPDATE_PASSWORD = "UPDATE_PASSWORD"

_CAUSE_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


def cause_name(value: object) -> str:
    """A source value as a counter-name part, case kept (``HmacSHA256``, ``CONFIGURE_TOTP``)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return "unknown"
    return _CAUSE_SAFE.sub("_", str(value).strip())[:40] or "unknown"


@dataclasses.dataclass(frozen=True)
class OtpPolicy:
    """A Keycloak realm's ``otpPolicy*`` values (what a credential that leaves one out gets)."""

    type: str = "totp"
    algorithm: str = "HmacSHA1"
    digits: int = 6
    period: int = 30


# OTPPolicy.DEFAULT_POLICY: a realm export without otpPolicy* values gets these.
KEYCLOAK_DEFAULT_POLICY = OtpPolicy()

# Realm export keys → OtpPolicy fields.
REALM_POLICY_KEYS = {
    "otpPolicyType": "type",
    "otpPolicyAlgorithm": "algorithm",
    "otpPolicyDigits": "digits",
    "otpPolicyPeriod": "period",
}


def _int(value: object) -> int | None:
    """A positive whole number from JSON (hand-written files write "6"); None when absent or 0."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and value > 0 else None


def _str(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def realm_policy(values: Mapping[str, object]) -> OtpPolicy:
    """``{"otpPolicyDigits": 8, ...}`` (a realm's top-level values) → its policy; a value left
    out or unusable keeps Keycloak's default."""
    fields: dict[str, Any] = {}
    for key, field in REALM_POLICY_KEYS.items():
        value = _int(values.get(key)) if field in ("digits", "period") else _str(values.get(key))
        if value is not None:
            fields[field] = value
    return dataclasses.replace(KEYCLOAK_DEFAULT_POLICY, **fields)


def _json_object(value: object) -> Mapping[str, object] | None:
    """``credentialData``/``secretData``: JSON text in exports, an object in hand-written files."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, Mapping) else None
    return None


def _base32_key(text: str) -> bytes | None:
    """Keycloak's ``Base32.decode``: RFC 4648 letters, case-insensitive; padding and spaces ignored."""
    cleaned = text.strip().replace(" ", "").rstrip("=").upper()
    if not cleaned:
        return None
    try:
        return base64.b32decode(cleaned + "=" * (-len(cleaned) % 8))
    except (binascii.Error, ValueError):
        return None


def _legacy_config_base64(config: object) -> bool:
    """Some older Keycloak releases marked OTP values stored Base64-encoded with ``config.base64Encoded``."""
    if not isinstance(config, Mapping):
        return False
    flag = config.get("base64Encoded")
    if isinstance(flag, list):
        flag = flag[0] if flag else None
    return flag is True or (isinstance(flag, str) and flag.strip().lower() == "true")


@dataclasses.dataclass(frozen=True)
class _Device:
    created: int
    secret: str | None  # base32 of the key, when every parameter is ZITADEL's
    cause: str | None  # why not, otherwise


def _device(credential: Mapping[str, object], policy: OtpPolicy | None) -> _Device:
    """One Keycloak OTP credential → the base32 secret ZITADEL verifies, or the cause why not."""
    created = _int(credential.get("createdDate")) or 0
    kind = credential.get("type")
    data = _json_object(credential.get("credentialData"))
    secret_data = _json_object(credential.get("secretData"))
    encoding: str | None = None
    key: bytes | None
    if data is not None and secret_data is not None:
        # Current exports: OTPCredentialData / OTPSecretData (JSON text on the credential).
        sub_type, algorithm = _str(data.get("subType")), _str(data.get("algorithm"))
        digits, period = _int(data.get("digits")), _int(data.get("period"))
        encoding = _str(data.get("secretEncoding"))
        text = secret_data.get("value")
    elif isinstance(credential.get("value"), str):
        # A hand-written realm: a plain `value` and no stored parameters, so every parameter
        # is the realm's policy (docs/source-schemas.md "Second factors").
        sub_type = algorithm = None
        digits = period = None
        text = credential["value"]
    else:
        # The deprecated representation: parameters and `hashedSaltedValue` on the credential.
        sub_type = kind if kind in ("totp", "hotp") else None
        algorithm = _str(credential.get("algorithm"))
        digits, period = _int(credential.get("digits")), _int(credential.get("period"))
        text = credential.get("hashedSaltedValue")
        if isinstance(text, str) and _legacy_config_base64(credential.get("config")):
            try:
                decoded = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                return _Device(created, None, "unreadable-secret")
            return _check(created, decoded, sub_type, algorithm, digits, period, policy)
    if not isinstance(text, str) or not text:
        return _Device(created, None, "no-secret")
    if encoding is None:
        key = text.encode("utf-8", "surrogatepass")  # OTPCredentialModel.getDecodedSecret
    elif encoding.upper() == "BASE32":
        key = _base32_key(text)
        if key is None:
            return _Device(created, None, "unreadable-secret")
    else:
        return _Device(created, None, f"encoding-{cause_name(encoding)}")
    return _check(created, key, sub_type, algorithm, digits, period, policy)


def _check(
    created: int,
    key: bytes,
    sub_type: str | None,
    algorithm: str | None,
    digits: int | None,
    period: int | None,
    policy: OtpPolicy | None,
) -> _Device:
    if None in (sub_type, algorithm, digits, period):
        if policy is None:
            # The realm's policy was not read (a multi-realm array): never guess.
            return _Device(created, None, "realm-policy-unknown")
        sub_type = sub_type or policy.type
        algorithm = algorithm or policy.algorithm
        digits = digits or policy.digits
        period = period or policy.period
    if sub_type != "totp":
        return _Device(created, None, "hotp" if sub_type == "hotp" else f"type-{cause_name(sub_type)}")
    if algorithm != ZITADEL_ALGORITHM:
        return _Device(created, None, f"algorithm-{cause_name(algorithm)}")
    if digits != ZITADEL_DIGITS:
        return _Device(created, None, f"digits-{digits}")
    if period != ZITADEL_PERIOD:
        return _Device(created, None, f"period-{period}")
    secret = base64.b32encode(key).decode("ascii").rstrip("=")
    if otp_problem(secret) is not None:
        return _Device(created, None, "secret-length")
    return _Device(created, secret, None)


def keycloak_otp(credentials: object, policy: OtpPolicy | None) -> tuple[str | None, list[str]]:
    """A Keycloak user's ``credentials`` → ``(otpCode or None, causes)``.

    One cause per OTP credential not written: its refused parameter (``hotp``,
    ``algorithm-HmacSHA256``, ``digits-8``, ``period-60``), ``superseded`` (a newer device by
    ``createdDate`` is written), ``no-secret``, ``unreadable-secret``, ``encoding-<name>``,
    ``secret-length`` or ``realm-policy-unknown``. ``policy`` fills in what a credential
    leaves out (None: the realm's policy is unknown).
    """
    if not isinstance(credentials, list):
        return None, []
    devices = [
        _device(c, policy)
        for c in credentials
        if isinstance(c, Mapping) and c.get("type") in OTP_CREDENTIAL_TYPES
    ]
    if not devices:
        return None, []
    causes = [d.cause for d in devices if d.cause is not None]
    usable = [d for d in devices if d.secret is not None]
    if not usable:
        return None, causes
    # The newest device wins; on equal dates the later one in the list (Keycloak lists in order).
    newest = max(range(len(usable)), key=lambda i: (usable[i].created, i))
    causes += ["superseded"] * (len(usable) - 1)
    return usable[newest].secret, causes


def required_actions(user: Mapping[str, object]) -> tuple[bool, list[str]]:
    """``requiredActions`` → ``(UPDATE_PASSWORD present, the other actions' names)``."""
    actions = user.get("requiredActions")
    if not isinstance(actions, list):
        return False, []
    update = False
    others: list[str] = []
    for action in actions:
        if action == UPDATE_PASSWORD:
            update = True
        else:
            others.append(cause_name(action))
    return update, others


def auth0_mfa_factors(factors: object) -> tuple[str | None, list[str]]:
    """A bulk-import profile's ``mfa_factors`` → ``(otpCode or None, causes not carried)``.

    Auth0's schema: an array of objects each holding one of ``totp {secret}`` (unpadded base32),
    ``phone {value}`` or ``email {value}``. The first valid ``totp`` secret is written; causes are
    ``phone``, ``email``, ``totp-invalid-secret``, ``totp-additional`` (a second totp),
    another factor's name, or ``invalid`` (not an object with one factor).
    """
    if factors is None:
        return None, []
    if not isinstance(factors, list):
        return None, ["invalid"]
    secret: str | None = None
    causes: list[str] = []
    for factor in factors:
        if not isinstance(factor, Mapping) or len(factor) != 1:
            causes.append("invalid")
            continue
        ((name, value),) = factor.items()
        if name != "totp":
            causes.append(cause_name(name))
            continue
        raw = value.get("secret") if isinstance(value, Mapping) else None
        if not isinstance(raw, str) or otp_problem(raw) is not None:
            causes.append("totp-invalid-secret")
        elif secret is not None:
            causes.append("totp-additional")
        else:
            secret = normalise_otp(raw).rstrip("=")
    return secret, causes
