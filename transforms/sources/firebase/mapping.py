"""One Firebase Auth user → a validated ``humanUsers`` entry: the pure mapping, no Beam.

A user is an element of ``firebase auth:export``'s ``{"users": [...]}`` (or a CSV row turned
into the same keys by :func:`csv_user`); docs/firebase.md lists the fields and where the facts
come from. The reader (``read.py``) calls :func:`map_user` once per user.

- ``localId`` is the user id (validated like every source's: a string of 1-200 characters
  without control characters); the user name is the e-mail, else the ``localId``.
- ``displayName`` fills first, last and display name (Firebase has no other name fields).
- ``disabled: true`` refuses the user (``disabled``) unless ``include_disabled`` (``--state``
  reads them so that the sync deactivates them in ZITADEL).
- ``passwordHash`` is Firebase's modified scrypt, which ZITADEL cannot verify: with
  ``on_unsupported_hash=import-without-password`` (this source's default) the user comes without
  a password and is listed for a reset; with ``dead-letter`` the user is dead-lettered.
- ``providerUserInfo`` entries become IdP links for the providers in ``idp_map``; ``password``
  and ``phone`` are Firebase's own sign-in methods, not IdPs.
- ``customAttributes`` (a JSON object as a string) becomes metadata with ``metadata``; a value
  that is not a JSON object dead-letters the user.
- ``mfaInfo`` is counted by kind (``phone``, ``totp``); the import cannot carry it.

Example::

    mapped = map_user({"localId": "u1", "email": "ann@example.com"}, FirebaseOptions())
    if isinstance(mapped, Rejection): print(mapped.reason, mapped.detail)
    else: print(mapped.entry["userId"])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import orjson

from transforms.hashing.convert import HashFailure
from transforms.hashing.policy import OnUnsupportedHash
from transforms.mapping.idp_links import LinkFields
from transforms.mapping.idp_links import idp_links as links_from
from transforms.mapping.ids import EmailChoice, email_or_fallback
from transforms.mapping.metadata import json_value, metadata_within_limits
from transforms.mapping.validate import (
    EMAIL_FALLBACK,
    Reason,
    ValidationOptions,
    control_char_problem,
    validate_user,
)

__all__ = [
    "FirebaseOptions",
    "MappedUser",
    "Rejection",
    "map_user",
    "idp_links",
    "mfa_kinds",
    "custom_metadata",
    "csv_user",
    "CSV_COLUMNS",
    "CSV_MIN_COLUMNS",
    "CSV_PROVIDERS",
    "FIREBASE_PROVIDERS",
    "FIREBASE_SCRYPT",
    "EMULATOR_HASH",
    "emulator_password",
    "KNOWN_FIELDS",
    "not_carried_keys",
]

# A user as parsed from the export: a JSON object (values checked where they are read).
_User = Mapping[str, object]

# The hash of every exported password: firebase-tools exports only hashes of the project's
# default algorithm (accountExporter.ts drops the others), Firebase's modified scrypt.
FIREBASE_SCRYPT = "firebase-scrypt"
# The Firebase Auth Emulator keeps passwords as ``fakeHash:salt=<salt>:password=<password>``
# (firebase-tools src/emulator/auth/operations.ts, hashPassword): the password in clear text.
EMULATOR_HASH = "fakeHash:"
# providerUserInfo providers that are Firebase's own sign-in, not an identity provider.
FIREBASE_PROVIDERS = frozenset({"password", "phone"})

# `firebase auth:export users.csv`: no header, one user per line, these columns in this order
# (firebase-tools src/accountExporter.ts transUserToArray; docs/firebase.md). Exports before
# `disabled` and `customAttributes` were added end after phoneNumber.
CSV_COLUMNS = (
    "localId",
    "email",
    "emailVerified",
    "passwordHash",
    "salt",
    "displayName",
    "photoUrl",
    "google.com.rawId",
    "google.com.email",
    "google.com.displayName",
    "google.com.photoUrl",
    "facebook.com.rawId",
    "facebook.com.email",
    "facebook.com.displayName",
    "facebook.com.photoUrl",
    "twitter.com.rawId",
    "twitter.com.email",
    "twitter.com.displayName",
    "twitter.com.photoUrl",
    "github.com.rawId",
    "github.com.email",
    "github.com.displayName",
    "github.com.photoUrl",
    "createdAt",
    "lastSignedInAt",
    "phoneNumber",
    "disabled",
    "customAttributes",
)
# auth:import takes lines of at least 23 columns (up to the GitHub photo URL; firebase-tools
# README, "Auth Commands"); exports before `disabled` and `customAttributes` end after phoneNumber.
CSV_MIN_COLUMNS = 23
CSV_PROVIDERS = ("google.com", "facebook.com", "twitter.com", "github.com")

# What the mapping reads (docs/fields-not-carried.md).
CARRIED_FIELDS = frozenset(
    {
        "localId",
        "email",
        "emailVerified",
        "displayName",
        "phoneNumber",
        "disabled",
        "passwordHash",
        "salt",
        "providerUserInfo",
        "customAttributes",
    }
)
# Fields the import cannot take: counted per field among users written.
# validSince (tokens issued before it are refused: a session cut-off) is not carried either.
NOT_CARRIED_FIELDS = frozenset(
    {
        "photoUrl",
        "createdAt",
        "lastSignedInAt",
        "lastLoginAt",
        "mfaInfo",
        "passwordUpdatedAt",
        "tenantId",
        "validSince",
    }
)
KNOWN_FIELDS = CARRIED_FIELDS | NOT_CARRIED_FIELDS | frozenset({"version"})


def not_carried_keys(metadata: bool) -> frozenset[str]:
    """The user fields not carried in a run: ``customAttributes`` too without ``--metadata``."""
    return NOT_CARRIED_FIELDS if metadata else NOT_CARRIED_FIELDS | {"customAttributes"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class FirebaseOptions:
    """Mapping choices from the command line (all picklable, no clients)."""

    include_disabled: bool = False
    metadata: bool = False
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD
    validation: ValidationOptions = ValidationOptions()
    # --email-fallback TEMPLATE ({username}, {id}): the address of users without one (unverified).
    email_fallback: str | None = None
    # ``(providerId, ZITADEL IdP id)`` pairs from ``--idp-map``.
    idp_map: tuple[tuple[str, str], ...] = ()
    # --allow-plaintext-passwords: an emulator export's clear-text passwords, with a forced change.
    allow_plaintext_passwords: bool = False


@dataclasses.dataclass
class MappedUser:
    """A user that passed mapping and validation, plus what the summary counts about it."""

    entry: dict[str, object]
    metadata: list[dict[str, str]]
    dropped_hash: HashFailure | None = None  # the Firebase hash, not imported
    notes: list[str] = dataclasses.field(default_factory=list)
    metadata_dropped: int = 0
    link_outcomes: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    mfa: Sequence[str] = ()  # kinds of second factors (not carried)
    disabled: bool = False
    plaintext: bool = False  # an emulator export's clear-text password, --allow-plaintext-passwords


@dataclasses.dataclass(frozen=True)
class Rejection:
    reason: str
    detail: str


def _text(record: _User, key: str) -> str:
    value = record.get(key)
    return value.strip() if isinstance(value, str) else ""


def _link_display(user: _User, info: _User, external: str) -> str:
    return _text(info, "email") or _text(info, "displayName") or _text(user, "email") or external.strip()


# ``password`` and ``phone`` are Firebase's own sign-in, not identity providers.
PROVIDER_USER_INFO = LinkFields(
    "providerUserInfo",
    "providerId",
    "rawId",
    _link_display,
    own=dict.fromkeys(FIREBASE_PROVIDERS, "firebase"),
    numbers=(int,),
)


def idp_links(user: _User, idp_map: Mapping[str, str]) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """``providerUserInfo`` → ZITADEL ``idps`` links for the providers in ``idp_map``
    (mapping/idp_links.py: outcomes ``linked``, ``firebase``, ``unmapped``, ``invalid``)."""
    return links_from(user, idp_map, PROVIDER_USER_INFO)


def mfa_kinds(user: _User) -> list[str]:
    """The kinds of the user's ``mfaInfo`` entries (Identity Platform's MfaEnrollment, whose
    value is one of ``phoneInfo``, ``totpInfo``, ``emailInfo``): ``phone``, ``totp``, ``email``
    or ``other``."""
    infos = user.get("mfaInfo")
    if not isinstance(infos, list):
        return []
    kinds = []
    for info in infos:
        if isinstance(info, Mapping) and "phoneInfo" in info:
            kinds.append("phone")
        elif isinstance(info, Mapping) and "totpInfo" in info:
            kinds.append("totp")
        elif isinstance(info, Mapping) and "emailInfo" in info:
            kinds.append("email")
        else:
            kinds.append("other")
    return kinds


def custom_metadata(value: object) -> tuple[list[dict[str, str]], int] | Rejection:
    """``customAttributes`` (a JSON object as a string) → ``[{key, value(base64 JSON)}]`` and how
    many entries were dropped for ZITADEL's limits; a Rejection when it is not a JSON object."""
    if value in (None, ""):
        return [], 0
    if not isinstance(value, str):
        return Rejection(Reason.MALFORMED_JSON, "customAttributes is not a string of JSON")
    try:
        claims = orjson.loads(value)
    except orjson.JSONDecodeError:
        return Rejection(Reason.MALFORMED_JSON, "customAttributes is not valid JSON")
    if not isinstance(claims, dict):
        return Rejection(Reason.MALFORMED_JSON, "customAttributes is not a JSON object")
    return metadata_within_limits((key, json_value(item)) for key, item in claims.items())


def _flag(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text.strip().lower())


def csv_user(row: Sequence[str]) -> dict[str, object]:
    """A row of a Firebase CSV export → the keys of the JSON export (empty columns left out,
    ``true``/``false`` as booleans, the provider columns as ``providerUserInfo``). Spaces around
    a field are removed, as auth:import does."""
    fields = dict(zip(CSV_COLUMNS, (field.strip() for field in row), strict=False))
    user: dict[str, object] = {}
    for key, text in fields.items():
        if text == "" or key.rpartition(".")[0] in CSV_PROVIDERS:
            continue
        flag = _flag(text) if key in ("emailVerified", "disabled") else None
        user[key] = flag if flag is not None else text
    infos = []
    for provider in CSV_PROVIDERS:
        raw_id = fields.get(f"{provider}.rawId", "")
        if raw_id:
            info: dict[str, object] = {"providerId": provider, "rawId": raw_id}
            for key in ("email", "displayName", "photoUrl"):
                if fields.get(f"{provider}.{key}"):
                    info[key] = fields[f"{provider}.{key}"]
            infos.append(info)
    if infos:
        user["providerUserInfo"] = infos
    return user


def map_user(user: object, options: FirebaseOptions) -> MappedUser | Rejection:
    """One user of the export → a validated ``humanUsers`` entry, or why not (module docstring).

    The steps run in this order (the first that refuses the user names the reason): the id,
    disabled, identity and contact, the password, IdP links, validation, metadata.
    """
    if not isinstance(user, Mapping):
        return Rejection(Reason.NOT_AN_OBJECT, "user is not a JSON object")
    user_id = user.get("localId")
    if user_id is None or user_id == "":
        return Rejection(Reason.MISSING_USER_ID, "user has no localId")
    if not isinstance(user_id, str) or not user_id.strip() or user_id != user_id.strip():
        return Rejection(
            Reason.INVALID_USER_ID, "localId is not a non-empty string without surrounding spaces"
        )
    disabled = user.get("disabled") is True
    if disabled and not options.include_disabled:
        return Rejection(
            Reason.DISABLED, "user is disabled in Firebase (use --include-disabled to import anyway)"
        )
    identity = _identity(user, user_id, options)
    if isinstance(identity, Rejection):
        return identity
    body, fallback = identity
    dropped_hash = _password(_text(user, "passwordHash"), options, body)
    if dropped_hash is not None:
        if options.on_unsupported_hash != OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD:
            return Rejection(
                dropped_hash.reason, dropped_hash.detail + " (--on-unsupported-hash=dead-letter)"
            )
    links, link_outcomes = idp_links(user, dict(options.idp_map))
    if links:
        body["idps"] = links
    entry: dict[str, object] = {"userId": user_id, "user": body}
    result = validate_user(entry, options.validation)
    if result.reason is not None:
        return Rejection(result.reason, result.detail)
    entries: list[dict[str, str]] = []
    dropped = 0
    if options.metadata:
        metadata = custom_metadata(user.get("customAttributes"))
        if isinstance(metadata, Rejection):
            return metadata
        entries, dropped = metadata
        problem = next(
            (p for p in (control_char_problem(m["key"], "metadata key") for m in entries) if p), None
        )
        if problem is not None:
            return Rejection(*problem)
    return MappedUser(
        entry=entry,
        metadata=entries,
        dropped_hash=dropped_hash,
        notes=result.notes + ([EMAIL_FALLBACK] if fallback else []),
        metadata_dropped=dropped,
        link_outcomes=link_outcomes,
        mfa=mfa_kinds(user),
        disabled=disabled,
        plaintext="password" in body,
    )


def emulator_password(value: str) -> str | None:
    """The password a Firebase Auth Emulator export holds in clear text
    (``fakeHash:salt=<salt>:password=<password>``, firebase-tools' emulator ``hashPassword``), or
    None when ``value`` is not one."""
    if not value.startswith(EMULATOR_HASH):
        return None
    _, sep, password = value.partition(":password=")
    return password if sep else None


def _password(hashed: str, options: FirebaseOptions, body: dict[str, object]) -> HashFailure | None:
    """The export's ``passwordHash`` → why it cannot be imported, or None (none, or an emulator
    export's clear-text password imported with ``--allow-plaintext-passwords``: ``password`` and
    ``passwordChangeRequired`` in ``body``)."""
    if not hashed:
        return None
    plaintext = emulator_password(hashed)
    if plaintext is None:
        return HashFailure(
            Reason.UNSUPPORTED_HASH,
            "Firebase's modified scrypt: ZITADEL cannot verify it; the user must set a new password",
        )
    if options.allow_plaintext_passwords and plaintext:
        # A password that sat in a file in clear text (a test tenant's): the user must choose a new one.
        body["password"] = plaintext
        body["passwordChangeRequired"] = True
        return None
    return HashFailure(
        Reason.PLAINTEXT_PASSWORD,
        "a Firebase Auth Emulator export: its passwordHash (fakeHash:...) holds the password in clear "
        "text, not a hash; --allow-plaintext-passwords imports it with a forced change (test tenants)",
    )


def _identity(
    user: _User, user_id: str, options: FirebaseOptions
) -> tuple[dict[str, object], bool] | Rejection:
    """User name, names, e-mail (or its fallback) and phone: the body's start, and whether the
    e-mail came from ``--email-fallback``."""
    own_email = _text(user, "email")
    user_name = own_email or user_id
    choice = email_or_fallback(own_email, options.email_fallback, user_id, user_id)
    if not isinstance(choice, EmailChoice):
        return Rejection(*choice)
    email, fallback = choice
    verified = user.get("emailVerified") is True and not fallback
    name = _text(user, "displayName")
    profile: dict[str, object] = {"firstName": name or user_name, "lastName": name or user_name}
    if name:
        profile["displayName"] = name
    body: dict[str, object] = {
        "userName": user_name,
        "profile": profile,
        # protojson omits false, like the other sources' bodies.
        "email": {"email": email, "isEmailVerified": True} if verified else {"email": email},
    }
    phone = _text(user, "phoneNumber")
    if phone:
        # Unverified: the Admin SDK can set a number that was never confirmed by SMS.
        body["phone"] = {"phone": phone}
    return body, fallback
