"""One Keycloak user → a validated ``humanUsers`` entry: the pure mapping, no Beam.

Same mapping as ``zitadel-tools migrate keycloak`` for the fields it reads
(docs/source-schemas.md), plus name fallbacks, phone, preferred language, metadata, identity
provider links, OTP devices, required actions and every password algorithm. The reader
(``read.py``) calls :func:`map_user` once per user; ``benchmarks/baseline_keycloak.py``
calls it directly.

Example::

    mapped = map_user(user, KeycloakOptions(metadata=True), realm="acme")
    if isinstance(mapped, Rejection): print(mapped.reason, mapped.detail)
    else: print(mapped.entry["userId"], mapped.password)
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from transforms.hashing.convert import ConvertedHash, HashFailure
from transforms.hashing.policy import OnUnsupportedHash
from transforms.mapping.fields import counter_safe, present
from transforms.mapping.fields import unknown_fields as shared_unknown_fields
from transforms.mapping.idp_links import LinkFields
from transforms.mapping.idp_links import idp_links as links_from
from transforms.mapping.ids import EmailChoice, email_or_fallback, keycloak_user_id
from transforms.mapping.otp import OTP_CREDENTIAL_TYPES, OtpPolicy, keycloak_otp, required_actions
from transforms.mapping.validate import (
    DERIVED_ID,
    EMAIL_FALLBACK,
    MAX_METADATA_KEY,
    MAX_METADATA_VALUE,
    Reason,
    ValidationOptions,
    control_char_problem,
    validate_user,
)
from transforms.sources.keycloak.hashes import convert_credential, plaintext_value

__all__ = [
    "KeycloakOptions",
    "MappedUser",
    "Rejection",
    "map_user",
    "attribute_metadata",
    "other_credential_types",
    "idp_links",
    "fields_not_carried",
    "not_carried_keys",
    "unknown_fields",
    "CARRIED_FIELDS",
    "NOT_CARRIED_FIELDS",
    "KNOWN_FIELDS",
]

# --on-unsupported-hash choices.

_PHONE_ATTRIBUTES = ("phoneNumber", "phone_number")
_PHONE_VERIFIED_ATTRIBUTES = ("phoneNumberVerified", "phone_number_verified")
# A user as parsed from the export: a JSON object (values checked where they are read).
_User = Mapping[str, object]


@dataclasses.dataclass(frozen=True, kw_only=True)
class KeycloakOptions:
    """Mapping choices from the command line (all picklable, no clients)."""

    include_disabled: bool = False
    metadata: bool = False
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.DEAD_LETTER
    # Import a plaintext `value` credential as `password` + `passwordChangeRequired` (the
    # server's password complexity policy applies); otherwise it is dead-lettered.
    allow_plaintext_passwords: bool = False
    validation: ValidationOptions = ValidationOptions(allowed_hash_families=("bcrypt", "argon2", "pbkdf2"))
    # --email-fallback TEMPLATE ({username}, {id}): the address of users without one (unverified).
    email_fallback: str | None = None
    # ``(identity-provider alias, ZITADEL IdP id)`` pairs from ``--idp-map``.
    idp_map: tuple[tuple[str, str], ...] = ()


# What the mapping reads from a user (docs/fields-not-carried.md). `enabled` and
# `serviceAccountClientId` decide whether the user is imported at all.
CARRIED_FIELDS = frozenset(
    {
        "id",
        "username",
        "firstName",
        "lastName",
        "email",
        "emailVerified",
        "enabled",
        "serviceAccountClientId",
        "credentials",
        "federatedIdentities",
        "attributes",
        "requiredActions",
    }
)
# Fields Keycloak computes from others or that describe the export, not the user: nothing to carry.
DERIVED_FIELDS = frozenset(
    {"totp", "disableableCredentialTypes", "access", "self", "origin", "userProfileMetadata"}
)
# Fields ZITADEL's import cannot take: counted per field among users written.
NOT_CARRIED_FIELDS = frozenset(
    {
        "createdTimestamp",
        "realmRoles",
        "clientRoles",
        "groups",
        "clientConsents",
        "notBefore",
        "federationLink",
        "socialLinks",
        "applicationRoles",
    }
)
KNOWN_FIELDS = CARRIED_FIELDS | DERIVED_FIELDS | NOT_CARRIED_FIELDS


def not_carried_keys(metadata: bool) -> frozenset[str]:
    """The user fields not carried in a run: ``attributes`` too without ``--metadata`` (unmapped
    links are counted by ``idp_links``)."""
    return NOT_CARRIED_FIELDS if metadata else NOT_CARRIED_FIELDS | {"attributes"}


def fields_not_carried(user: _User, metadata: bool) -> list[str]:
    """Names of the fields of ``user`` that hold something the import does not carry."""
    return [k for k in not_carried_keys(metadata).intersection(user.keys()) if present(user[k])]


def unknown_fields(user: _User) -> list[str]:
    """Counter-safe names of the fields of ``user`` the tool does not know."""
    return shared_unknown_fields(user, KNOWN_FIELDS)


def _link_display(user: _User, identity: _User, external: str) -> str:
    return _text(identity, "userName") or _text(user, "email") or _text(user, "username") or external.strip()


FEDERATED_IDENTITIES = LinkFields("federatedIdentities", "identityProvider", "userId", _link_display)


def idp_links(user: _User, idp_map: Mapping[str, str]) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """``federatedIdentities`` → ZITADEL ``idps`` links for the aliases in ``idp_map``
    (mapping/idp_links.py: outcomes ``linked``, ``unmapped``, ``invalid``).
    docs/fields-not-carried.md#idp-links---idp-map-aliasidp_id-auth0-keycloak-firebase."""
    return links_from(user, idp_map, FEDERATED_IDENTITIES)


@dataclasses.dataclass
class MappedUser:
    """A user that passed mapping and validation, plus what the summary counts about it."""

    entry: dict[str, Any]
    metadata: list[dict[str, str]]
    password: str | None  # hash algorithm label, None when imported without a password
    federated: bool = False
    dropped_hash: HashFailure | None = None  # set with --on-unsupported-hash=import-without-password
    notes: list[str] = dataclasses.field(default_factory=list)
    metadata_dropped: int = 0
    converted: ConvertedHash | None = None  # the hash written, for the run's verifier tally
    derived_id: bool = False  # the user had no ``id``: README "User ids"
    email_fallback: bool = False  # the address came from --email-fallback
    link_outcomes: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    # Per OTP credential not written, its cause (transforms/mapping/otp.py); empty for most users.
    otp_not_carried: Sequence[str] = ()
    # Required actions the import does not carry, by name (UPDATE_PASSWORD when no password).
    required_actions_not_carried: Sequence[str] = ()
    password_change_required: bool = False  # UPDATE_PASSWORD carried as passwordChangeRequired


@dataclasses.dataclass(frozen=True)
class Rejection:
    reason: str
    detail: str
    # The hash when the target's configuration refused it (the summary's config block needs it).
    refused: ConvertedHash | None = None


# --------------------------------------------------------------------------- pure functions


def _text(record: _User, key: str) -> str:
    value = record.get(key)
    return value.strip() if isinstance(value, str) else ""


def _first_attribute(attributes: _User, names: Sequence[str]) -> str:
    """Keycloak exports attributes as lists of strings; a hand-written file may use a string."""
    for name in names:
        value = attributes.get(name)
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and v.strip()), None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def attribute_metadata(attributes: object) -> tuple[list[dict[str, str]], int]:
    """``attributes`` → ``[{key, value(base64)}]`` and how many were dropped for ZITADEL's limits.

    A single value is stored as its text, several values as a JSON list (Keycloak has no other
    way to tell them apart, and a list round-trips). Empty attributes (no value, or one empty
    text) are skipped: ZITADEL's metadata value is at least one byte, and one empty value would
    fail the whole import request and the sync's ``SetUserMetadata`` call (docs/sync.md#schema-check).
    """
    if not isinstance(attributes, Mapping):
        return [], 0
    entries: list[dict[str, str]] = []
    dropped = 0
    for key, value in attributes.items():
        if isinstance(value, list):
            if not value:
                continue
            value = value[0] if len(value) == 1 else value
        if isinstance(value, str):
            encoded = value.encode("utf-8", "surrogatepass")
        else:
            encoded = orjson.dumps(value)
        if not encoded:
            continue
        if not key or len(key) > MAX_METADATA_KEY or len(encoded) > MAX_METADATA_VALUE:
            dropped += 1
            continue
        entries.append({"key": key, "value": base64.b64encode(encoded).decode("ascii")})
    return entries, dropped


def _password_credential(credentials: object) -> _User | None:
    """The first credential of type ``password`` (what Keycloak itself checks at login)."""
    if not isinstance(credentials, list):
        return None
    for credential in credentials:
        if isinstance(credential, Mapping) and credential.get("type") == "password":
            return credential
    return None


def other_credential_types(credentials: object) -> list[str]:
    """Counter-safe names of the credentials neither converted as the password nor as the OTP
    secret (``webauthn``, ``recovery-authn-codes``, ...); OTP devices are counted by cause."""
    if not isinstance(credentials, list):
        return []
    names = []
    for credential in credentials:
        if (
            isinstance(credential, Mapping)
            and credential.get("type") != "password"
            and credential.get("type") not in OTP_CREDENTIAL_TYPES
        ):
            kind = credential.get("type")
            names.append(counter_safe(kind))
    return names


def map_user(
    user: object, options: KeycloakOptions, realm: str = "", otp_policy: OtpPolicy | None = None
) -> MappedUser | Rejection:
    """One element of a realm's ``users`` array → a validated ``humanUsers`` entry, or why not.

    Same mapping as ``zitadel-tools migrate keycloak`` for the fields it reads (docs/source-schemas.md),
    plus name fallbacks, phone, preferred language, metadata and every password algorithm.
    A user without ``id`` gets one derived from ``realm`` and the username (transforms/mapping/ids.py);
    one without e-mail gets ``options.email_fallback``'s address, unverified.
    An OTP device becomes ``otpCode`` when ZITADEL verifies its codes (transforms/mapping/otp.py;
    ``otp_policy``, the realm's ``otpPolicy*``, fills in what a credential leaves out, None when
    unknown); ``requiredActions: ["UPDATE_PASSWORD"]`` becomes ``passwordChangeRequired``.

    The steps run in this order (the first that refuses the user names the reason): who is
    imported at all, identity and contact, the password, IdP links, the second factor, required
    actions, validation and metadata.
    """
    if not isinstance(user, Mapping):
        return Rejection(Reason.NOT_AN_OBJECT, "user is not a JSON object")
    refused = _not_imported(user, options)
    if refused is not None:
        return refused
    raw_attributes = user.get("attributes")
    attributes: _User = raw_attributes if isinstance(raw_attributes, Mapping) else {}
    identity = _identity(user, options, realm, attributes)
    if isinstance(identity, Rejection):
        return identity
    body, user_id, derived, fallback = identity

    federated = bool(user.get("federationLink"))
    credential = None if federated else _password_credential(user.get("credentials"))
    password: _Password = (None, None, None)
    if credential is not None:
        converted = _password(credential, options, body)
        if isinstance(converted, Rejection):
            return converted
        password = converted

    links, link_outcomes = idp_links(user, dict(options.idp_map))
    if links:
        body["idps"] = links
    otp_not_carried = _second_factor(user, credential, otp_policy, body)
    actions_not_carried: Sequence[str] = ()
    forced = False
    if user.get("requiredActions"):
        actions_not_carried, forced = _required_actions(user, body)

    # No id: derived above from realm + username, never empty or per run (metadata, links and
    # MFA are written against it). No username either: validation rejects the user. A
    # non-string id goes to validation, which rejects it.
    entry: dict[str, Any] = {"userId": user_id, "user": body} if user_id not in (None, "") else {"user": body}
    result = validate_user(entry, options.validation)
    if result.reason is not None:
        return Rejection(result.reason, result.detail)
    metadata, dropped = attribute_metadata(attributes) if options.metadata else ([], 0)
    problem = next((p for p in (control_char_problem(m["key"], "metadata key") for m in metadata) if p), None)
    if problem is not None:
        return Rejection(*problem)
    label, dropped_hash, written_hash = password
    return MappedUser(
        entry=entry,
        metadata=metadata,
        password=label,
        federated=federated,
        dropped_hash=dropped_hash,
        notes=result.notes + ([DERIVED_ID] if derived else []) + ([EMAIL_FALLBACK] if fallback else []),
        metadata_dropped=dropped,
        converted=written_hash,
        derived_id=derived,
        email_fallback=fallback,
        link_outcomes=link_outcomes,
        otp_not_carried=otp_not_carried,
        required_actions_not_carried=actions_not_carried,
        password_change_required=forced,
    )


# (hash algorithm label or None, the hash dropped under import-without-password, the hash written)
_Password = tuple[str | None, HashFailure | None, ConvertedHash | None]
# (the body so far, the user id, whether the id was derived, whether the e-mail is the fallback)
_Identity = tuple[dict[str, object], object, bool, bool]


def _not_imported(user: _User, options: KeycloakOptions) -> Rejection | None:
    """Why a user is not imported at all (a client's service account, disabled), or None."""
    if user.get("serviceAccountClientId"):
        return Rejection(Reason.SERVICE_ACCOUNT, "service-account user of a client (a machine user)")
    if user.get("enabled") is not True and not options.include_disabled:
        # Keycloak imports a user without `enabled` as disabled, so a missing flag means disabled.
        state = "disabled" if user.get("enabled") is False else "not marked enabled"
        return Rejection(
            Reason.DISABLED, f"user is {state} in Keycloak (use --include-disabled to import anyway)"
        )
    return None


def _identity(user: _User, options: KeycloakOptions, realm: str, attributes: _User) -> _Identity | Rejection:
    """Names, language, e-mail (or its fallback) and phone: the body's start, and the user id."""
    user_name = _text(user, "username")
    profile: dict[str, object] = {
        "firstName": _text(user, "firstName") or user_name,
        "lastName": _text(user, "lastName") or user_name,
    }
    locale = _first_attribute(attributes, ("locale",))
    if locale:
        profile["preferredLanguage"] = locale
    email = _text(user, "email")
    verified = user.get("emailVerified") is True
    raw_id = user.get("id")
    derived = raw_id in (None, "") and bool(user_name)
    user_id = keycloak_user_id(realm, user_name) if derived else raw_id
    choice = email_or_fallback(email, options.email_fallback, user_name, user_id)
    if not isinstance(choice, EmailChoice):
        return Rejection(*choice)
    email, fallback = choice
    verified = verified and not fallback
    body: dict[str, object] = {
        "userName": user_name,
        "profile": profile,
        # protojson omits false, like zitadel-tools' output.
        "email": {"email": email, "isEmailVerified": True} if verified else {"email": email},
    }
    phone = _first_attribute(attributes, _PHONE_ATTRIBUTES)
    if phone:
        phone_verified = _first_attribute(attributes, _PHONE_VERIFIED_ATTRIBUTES).lower() == "true"
        body["phone"] = {"phone": phone, "isPhoneVerified": True} if phone_verified else {"phone": phone}
    return body, user_id, derived, fallback


def _password(credential: _User, options: KeycloakOptions, body: dict[str, object]) -> _Password | Rejection:
    """The password credential → ``hashedPassword`` (or a plaintext ``password``) in ``body``."""
    converted = convert_credential(credential)
    policy = options.validation.hash_policy
    if isinstance(converted, ConvertedHash) and policy is not None:
        # A verifier the target has not enabled or a parameter outside its limits is handled
        # like an unsupported algorithm (transforms/hashing/policy.py).
        converted = policy.check(converted) or converted
    if isinstance(converted, ConvertedHash):
        body["hashedPassword"] = {"value": converted.value}
        return converted.algorithm, None, converted
    if converted.reason == Reason.PLAINTEXT_PASSWORD and options.allow_plaintext_passwords:
        plaintext = plaintext_value(credential)
        if plaintext is None:
            return Rejection(Reason.INVALID_PASSWORD, "plaintext password credential value is empty")
        # A password that sat in a file in clear text: the user must choose a new one.
        body["password"] = plaintext
        body["passwordChangeRequired"] = True
        return "plaintext", None, None
    if options.on_unsupported_hash == OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD:
        return None, converted, None
    return Rejection(converted.reason, converted.detail, converted.refused)


def _second_factor(
    user: _User, credential: _User | None, otp_policy: OtpPolicy | None, body: dict[str, object]
) -> Sequence[str]:
    """An OTP device → ``otpCode`` in ``body``; returns the causes of the devices not carried.

    Only users that have one pay for more than a look: most users hold exactly their password
    credential, which costs one identity check."""
    credentials = user.get("credentials")
    if isinstance(credentials, list) and not (len(credentials) == 1 and credentials[0] is credential):
        for item in credentials:
            # dict, not Mapping: the ABC check costs 5x more, and parsed JSON is dicts.
            if isinstance(item, dict) and item.get("type") in OTP_CREDENTIAL_TYPES:
                otp_code, otp_not_carried = keycloak_otp(credentials, otp_policy)
                if otp_code is not None:
                    body["otpCode"] = otp_code
                return otp_not_carried
    return ()


def _required_actions(user: _User, body: dict[str, object]) -> tuple[Sequence[str], bool]:
    """``UPDATE_PASSWORD`` → ``passwordChangeRequired``; returns the actions not carried, and
    whether the change was required here."""
    update_password, actions_not_carried = required_actions(user)
    if update_password:
        if "hashedPassword" in body:
            body["passwordChangeRequired"] = True
            return actions_not_carried, True
        if "password" not in body:  # the plaintext path already sets it
            # Nothing to change: the user has no password here and must set one anyway.
            return [*actions_not_carried, "UPDATE_PASSWORD"], False
    return actions_not_carried, False
