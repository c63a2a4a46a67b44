"""Auth0 as the tool below the command line sees it: its record kinds, its files, its counters.

The command's half is ``command.py`` (``DESCRIPTION``, which the registry finds). Example::

    KIND.records["auth0-profile"].blocked(b'{"user_id":"auth0|1","blocked":true}')  # True
    KIND.shapes.identify({"passwordHash": "string"})  # ("auth0-passwords", 'records with "passwordHash"')
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from transforms.mapping.ids import auth0_user_id
from transforms.sources.auth0 import items as a0
from transforms.sources.declaration import source_name
from transforms.sources.source_parts import FileShapes, Shape, SourceKind, UserRecordKind

__all__ = ["KIND"]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _blocked(record_json: bytes) -> bool:
    if b'"blocked"' not in record_json:  # the common case, without parsing
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("blocked") is True


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = _text(record.get("user_id"))
    if user_id is not None:
        return [user_id]
    email = _text(record.get("email"))
    return [auth0_user_id(email)] if email is not None else None


# Keys only an Auth0 profile has (Management API, user export job and bulk-import schema).
_PROFILE_KEYS = (
    "user_id",
    "identities",
    "given_name",
    "family_name",
    "user_metadata",
    "app_metadata",
    "password_hash",
    "custom_password_hash",
    "mfa_factors",
    "logins_count",
    "last_login",
)


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    """Auth0's three exports by their keys; the profile's keys are broad, so Auth0 is asked last."""
    for key in ("otp_secret", "recovery_code"):
        if key in keys:
            return "auth0-mfa", f'records with "{key}"'
    for key in ("passwordHash", "_tmp_is_unique"):
        if key in keys:
            return "auth0-passwords", f'records with "{key}"'
    if "user_id" not in keys:
        for key in ("_id", "_ID"):
            if key in keys:
                return "auth0-passwords", f'records keyed "{key}"'
    if keys.get("type") == "string" and "user_id" in keys and "email" not in keys:
        return "auth0-mfa", 'records with "user_id" and "type"'
    for key in _PROFILE_KEYS:
        if key in keys:
            return "auth0-users", f'records with "{key}"'
    return None


KIND = SourceKind(
    name=source_name(__name__),  # the package's name
    records={a0.PROFILE_SOURCE: UserRecordKind(blocked=_blocked, ids=_ids)},
    shapes=FileShapes(
        shapes={
            "auth0-users": Shape(what="an Auth0 user export"),
            "auth0-passwords": Shape(what="an Auth0 password export"),
            "auth0-mfa": Shape(what="an Auth0 MFA export"),
        },
        readers={
            "auth0-users": ("auth0-users",),
            "auth0-passwords": ("auth0-passwords",),
            "auth0-mfa": ("auth0-mfa",),
        },
        identify=_identify,
        rank=90,
    ),
    second_factors={a0.MFA_FACTORS_NOT_CARRIED: "auth0.mfa_factors.", a0.MFA_NOT_IMPORTABLE: "auth0.mfa."},
)
