"""Auth0 records → ZITADEL ``humanUsers`` entries: pure functions, no Beam.

Same mapping and fallbacks as ``zitadel-tools migrate auth0`` (docs/source-schemas.md), with its bugs fixed
(the source's ``email_verified`` is kept unless ``--email-verified`` is given). Used by the
pipeline (``transforms/sources/auth0/parse.py``) and by the plain benchmark baseline.

Example::

    >>> map_profile({"user_id": "auth0|1", "email": "ann@example.com", "name": "Ann Lee"}, None, True)["user"]["profile"]
    {'firstName': 'Ann Lee', 'lastName': 'Ann Lee', 'displayName': 'Ann Lee'}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, bcrypt_mcf
from transforms.mapping.fields import counter_safe, present
from transforms.mapping.fields import unknown_fields as shared_unknown_fields
from transforms.mapping.idp_links import LinkFields
from transforms.mapping.idp_links import idp_links as links_from
from transforms.mapping.metadata import json_value, metadata_fits, metadata_within_limits
from transforms.sources.auth0.hashes import convert_auth0

__all__ = [
    "map_profile",
    "metadata_entries",
    "normalise_email",
    "password_oid",
    "password_date",
    "pick_profile",
    "record_email",
    "custom_password_hash",
    "idp_links",
    "counter_safe",
    "fields_not_carried",
    "not_carried_keys",
    "unknown_fields",
    "CARRIED_FIELDS",
    "NOT_CARRIED_FIELDS",
    "DATABASE_PROVIDER",
]

# The provider of Auth0's own database connections: that identity is the password, not an IdP.
DATABASE_PROVIDER = "auth0"

# Profile fields the mapping reads (docs/fields-not-carried.md); `blocked` decides whether the
# user is imported, `identities` become links or are counted per provider.
CARRIED_FIELDS = frozenset(
    {
        "user_id",
        "email",
        "email_verified",
        "username",
        "name",
        "given_name",
        "family_name",
        "nickname",
        "locale",
        "phone_number",
        "phone_verified",
        "identities",
        "custom_password_hash",
        "app_metadata",
        "user_metadata",
        "blocked",
        "mfa_factors",
    }
)
# Fields the import cannot take (or, for the metadata blocks, does not without --metadata).
NOT_CARRIED_FIELDS = frozenset(
    {
        "multifactor",
        "multifactor_last_modified",
        "last_login",
        "logins_count",
        "picture",
        "created_at",
        "updated_at",
        "last_ip",
        "last_password_reset",
        "password_set_date",
    }
)

KNOWN_FIELDS = CARRIED_FIELDS | NOT_CARRIED_FIELDS
_METADATA_BLOCKS = frozenset({"app_metadata", "user_metadata"})


def not_carried_keys(metadata: bool) -> frozenset[str]:
    """The profile fields not carried in a run: the metadata blocks too without ``--metadata``,
    and ``blocked`` (a blocked user imported with ``--include-blocked`` arrives active)."""
    return NOT_CARRIED_FIELDS | {"blocked"} | (frozenset() if metadata else _METADATA_BLOCKS)


def fields_not_carried(profile: dict[str, Any], metadata: bool) -> list[str]:
    """Fields of a profile that hold something the import does not carry."""
    return [k for k in not_carried_keys(metadata).intersection(profile.keys()) if present(profile[k])]


def unknown_fields(profile: dict[str, Any]) -> list[str]:
    """Counter-safe names of the profile's fields the tool does not know."""
    return shared_unknown_fields(profile, KNOWN_FIELDS)


def normalise_email(value: Any) -> str:
    """The join key: the e-mail trimmed and case-folded ('' when there is none)."""
    return value.strip().casefold() if isinstance(value, str) else ""


def record_email(record: dict[str, Any]) -> str:
    """The join key of a password record: ``email``, else the ``email`` entry of ``identifiers[]``
    (the ``"version":"1.1"`` password-export layout), trimmed and case-folded."""
    email = normalise_email(record.get("email"))
    if email:
        return email
    identifiers = record.get("identifiers")
    if isinstance(identifiers, list):
        for ident in identifiers:
            if isinstance(ident, dict) and ident.get("type") == "email":
                email = normalise_email(ident.get("value"))
                if email:
                    return email
    return ""


def custom_password_hash(profile: dict[str, Any]) -> tuple[str | None, tuple[str, str] | None]:
    """The password hash a bulk-import profile carries → ``(hash, None)``, ``(None, problem)``
    or ``(None, None)`` when it carries none.

    Auth0's bulk-import schema has ``custom_password_hash`` (every algorithm, converted by
    transforms/hashing/convert.py) or the top-level ``password_hash`` (a bcrypt string); both at once is
    ambiguous. Whether the target accepts the result is checked where the hash is joined.
    """
    block, top = profile.get("custom_password_hash"), profile.get("password_hash")
    if block is None and top is None:
        return None, None
    if block is not None and top is not None:
        return None, (Reason.AMBIGUOUS_PASSWORD, "profile has both password_hash and custom_password_hash")
    converted = convert_auth0(block) if block is not None else bcrypt_mcf(top)
    if isinstance(converted, ConvertedHash):
        return converted.value, None
    return None, (
        converted.reason,
        converted.detail if block is not None else f"password_hash: {converted.detail}",
    )


def _link_display(profile: Mapping[str, object], identity: Mapping[str, object], external: str) -> str:
    raw_data = identity.get("profileData")
    data: Mapping[str, object] = raw_data if isinstance(raw_data, dict) else {}
    return (
        _text(data, "email")
        or _text(data, "name")
        or _text(profile, "email")
        or _text(profile, "username")
        or external
    )


# ``identities[]``: ``database`` is Auth0's own database (that identity is the password).
IDENTITIES = LinkFields(
    "identities",
    "provider",
    "user_id",
    _link_display,
    own={DATABASE_PROVIDER: "database"},
    numbers=(int, float),
)


def idp_links(
    profile: dict[str, Any], idp_map: dict[str, str]
) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """``identities[]`` → ZITADEL ``idps`` links for the providers in ``idp_map``
    (mapping/idp_links.py: outcomes ``linked``, ``database``, ``unmapped``, ``invalid``)."""
    return links_from(profile, idp_map, IDENTITIES)


def _text(record: Mapping[str, object], key: str) -> str:
    value = record.get(key)
    return value.strip() if isinstance(value, str) else ""


def password_oid(record: dict[str, Any]) -> str:
    """The user id suffix a password record names (``_id``/``_ID``, ``$oid`` or plain string)."""
    for key in ("_id", "_ID"):
        value = record.get(key)
        if isinstance(value, dict):
            value = value.get("$oid")
        if isinstance(value, str) and value:
            return value.rsplit("|", 1)[-1]
    return ""


def password_date(record: dict[str, Any]) -> str:
    """When the password was set (ISO text sorts chronologically), '' when unknown."""
    for key in ("password_set_date", "last_password_reset"):
        value = record.get(key)
        if isinstance(value, dict):
            value = value.get("$date")
        if isinstance(value, str):
            return value
    return ""


def map_profile(
    profile: dict[str, Any], password_hash: str | None, email_verified_flag: bool
) -> dict[str, Any]:
    """An Auth0 profile (+ the chosen password hash) → a ``humanUsers`` entry.

    Same mapping and fallbacks as ``zitadel-tools migrate auth0`` (docs/source-schemas.md), except that
    the source's ``email_verified`` is kept when ``--email-verified`` is not given.
    """
    raw_email = profile.get("email")
    email = raw_email.strip() if isinstance(raw_email, str) else ""
    user_name = _text(profile, "username") or email
    name = _text(profile, "name")
    first = _text(profile, "given_name") or name or user_name
    last = _text(profile, "family_name") or name or user_name or first
    person: dict[str, Any] = {"firstName": first, "lastName": last}
    if _text(profile, "nickname"):
        person["nickName"] = _text(profile, "nickname")
    if name:
        person["displayName"] = name
    if _text(profile, "locale"):
        person["preferredLanguage"] = _text(profile, "locale")
    verified = True if email_verified_flag else profile.get("email_verified") is True
    user: dict[str, Any] = {
        "userName": user_name,
        "profile": person,
        "email": {"email": email, "isEmailVerified": verified} if verified else {"email": email},
    }
    phone = _text(profile, "phone_number")
    if phone:
        user["phone"] = (
            {"phone": phone, "isPhoneVerified": True}
            if profile.get("phone_verified") is True
            else {"phone": phone}
        )
    if password_hash is not None:
        user["hashedPassword"] = {"value": password_hash}
    entry: dict[str, Any] = {"user": user}
    user_id = profile.get("user_id")
    entry = {"userId": user_id, **entry} if user_id is not None else entry
    return entry


def metadata_entries(profile: dict[str, Any]) -> tuple[list[dict[str, str]], int]:
    """``user_metadata`` / ``app_metadata`` top-level keys → ``[{key, value(base64 JSON)}]``.

    A key present in both keeps ``user_metadata``'s under its name and ``app_metadata``'s as
    ``app_metadata.<key>``. Returns the entries and how many were dropped for ZITADEL's limits
    (transforms/mapping/metadata.py).
    """
    pairs: list[tuple[str, bytes]] = []
    seen: set[str] = set()
    for field in ("user_metadata", "app_metadata"):
        block = profile.get(field)
        if not isinstance(block, dict):
            continue
        for key, value in block.items():
            name = key if key not in seen else f"{field}.{key}"
            encoded = json_value(value)
            if metadata_fits(name, encoded):  # a key dropped for its size leaves its name free
                seen.add(name)
            pairs.append((name, encoded))
    return metadata_within_limits(pairs)


def pick_profile(oid: str, user_ids: list[str]) -> int | None:
    """Which of the profiles sharing an e-mail a password record belongs to (an index).

    The record's ``_id`` names the database user (``auth0|<oid>``); only when it names none of
    the candidates do we fall back to the e-mail: the single profile with that e-mail, or the
    single database (``auth0|``) profile among several (the others are social logins).
    """
    if oid:
        for index, user_id in enumerate(user_ids):
            if user_id and user_id.rsplit("|", 1)[-1] == oid:
                return index
    if len(user_ids) == 1:
        return 0
    database = [i for i, user_id in enumerate(user_ids) if user_id.startswith("auth0|")]
    return database[0] if len(database) == 1 else None
