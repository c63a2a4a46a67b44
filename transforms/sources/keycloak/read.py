"""Keycloak realm exports → user rows: stream the ``users`` array, map, convert hashes, validate.

Shape of the work (few, large elements; see ``transforms/common/records.py``)::

    RealmSource per file ─ Reshuffle ─ ReadRealmFile ──► (partition, rows_blob or spill path)
                                            │                   one per partition and ~20,000 users
                                            └─► dead letters (sortkey, line)

Each file is read by one worker with ijson's C backend straight from ``FileSystems.open``
(local or gs://), so a 1 GB realm never sits in memory whole and the ``<realm>-users-N.json``
files of a split export (``kc.sh export --users different_files``) are read in parallel.

Which files to read is decided in the launcher by :func:`plan_realm_sources`, which accepts a
single realm export, a multi-realm array (``realm_name`` picks one), or a directory / glob of a
split export, and raises :class:`RealmInputError` (one line) when the input cannot be used.

Example::

    sources = plan_realm_sources("exports/", realm_name="acme")
    result = pipeline | "ReadKeycloak" >> ReadKeycloakUsers(sources, KeycloakOptions(), 32, tmp_dir)
    rows, dead = result["rows"], result["dead"]
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import apache_beam as beam
import ijson
import orjson
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from transforms.common.ids import fallback_email, keycloak_user_id
from transforms.common.records import (
    NAMESPACE,
    DeadLetter,
    EncodedRow,
    PartitionRows,
    dead_letter,
    encode_row,
    no_gc,
    pack_rows,
    partition_of,
)
from transforms.files.spill import write_spill
from transforms.hashing.convert import ConvertedHash, HashFailure, convert_credential, plaintext_value
from transforms.hashing.tally import HashTally
from transforms.mapping.fields import FieldTally, counter_safe, present
from transforms.mapping.fields import unknown_fields as shared_unknown_fields
from transforms.mapping.otp import (
    OTP_CREDENTIAL_TYPES,
    REALM_POLICY_KEYS,
    OtpPolicy,
    keycloak_otp,
    realm_policy,
    required_actions,
)
from transforms.mapping.roles import KeycloakRoles, RoleSettings, direct_roles_beyond_builtin
from transforms.mapping.validate import (
    MAX_METADATA_KEY,
    MAX_METADATA_VALUE,
    Reason,
    ValidationOptions,
    control_char_problem,
    validate_user,
)
from transforms.sources.input_stream import (
    DepthGuard,
    InputReadError,
    describe_head,
    has_marker,
    marker_problem,
    open_input,
)

__all__ = [
    "load_keycloak_roles",
    "KeycloakOptions",
    "MappedUser",
    "Rejection",
    "RealmSource",
    "RealmInputError",
    "ReadKeycloakUsers",
    "plan_realm_sources",
    "map_user",
    "attribute_metadata",
    "other_credential_types",
    "idp_links",
    "fields_not_carried",
    "unknown_fields",
    "CARRIED_FIELDS",
    "NOT_CARRIED_FIELDS",
    "iter_users",
    "SOURCE",
    "FILE_SOURCE",
    "ON_UNSUPPORTED_HASH",
    "DEAD_LETTER",
    "IMPORT_WITHOUT_PASSWORD",
    "CHUNK_USERS",
]

_LOGGER = logging.getLogger(__name__)

SOURCE = "keycloak-user"
_ROLES = "roles"  # the project roles users hold that the export does not define (with roles)
# Dead letters about a file rather than a user (a syntax error ends the file), so that
# "users read = written + dead-lettered users" stays exact.
FILE_SOURCE = "keycloak-file"
_DEAD = "dead"

# Users read before the buffered rows are flushed as one blob per partition: large enough that
# Beam moves few elements, small enough that a worker holds only a slice of a 1 GB realm.
CHUNK_USERS = 20_000

# --on-unsupported-hash choices.
DEAD_LETTER, IMPORT_WITHOUT_PASSWORD = "dead-letter", "import-without-password"
ON_UNSUPPORTED_HASH = (DEAD_LETTER, IMPORT_WITHOUT_PASSWORD)

_PHONE_ATTRIBUTES = ("phoneNumber", "phone_number")
_PHONE_VERIFIED_ATTRIBUTES = ("phoneNumberVerified", "phone_number_verified")
# <realm>-realm.json and <realm>-users-<n>.json, as `kc.sh export --users different_files` names them.
_SPLIT_NAME = re.compile(r"^(?P<realm>.+)-(?:realm|users-(?P<n>\d+))\.json(?:\.gz)?$")
_GLOB_CHARS = re.compile(r"[*?\[]")
_IJSON_BUF = 1 << 20


@dataclasses.dataclass(frozen=True)
class KeycloakOptions:
    """Mapping choices from the command line (all picklable, no clients)."""

    include_disabled: bool = False
    metadata: bool = False
    on_unsupported_hash: str = DEAD_LETTER
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


def fields_not_carried(user: Mapping[str, Any], metadata: bool) -> list[str]:
    """Names of the fields of ``user`` that hold something the import does not carry."""
    return [k for k in not_carried_keys(metadata).intersection(user.keys()) if present(user[k])]


def unknown_fields(user: Mapping[str, Any]) -> list[str]:
    """Counter-safe names of the fields of ``user`` the tool does not know."""
    return shared_unknown_fields(user, KNOWN_FIELDS)


def idp_links(
    user: Mapping[str, Any], idp_map: Mapping[str, str]
) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """``federatedIdentities`` → ZITADEL ``idps`` links for the aliases in ``idp_map``.

    Returns the links and one ``(outcome, alias)`` per entry: ``linked``, ``unmapped`` (no
    ``--idp-map`` for the alias) or ``invalid`` (no usable ``userId``). docs/fields-not-carried.md#idp-links---idp-map-aliasidp_id-both-sources.
    """
    identities = user.get("federatedIdentities")
    if not isinstance(identities, list):
        return [], []
    links: list[dict[str, str]] = []
    outcomes: list[tuple[str, str]] = []
    for identity in identities:
        if not isinstance(identity, Mapping):
            outcomes.append(("invalid", "unknown"))
            continue
        alias = identity.get("identityProvider")
        alias = alias if isinstance(alias, str) else ""
        name = counter_safe(alias)
        config_id = idp_map.get(alias)
        if config_id is None:
            outcomes.append(("unmapped", name))
            continue
        external = identity.get("userId")
        if not isinstance(external, str) or not external.strip() or len(external) > 200:
            outcomes.append(("invalid", name))
            continue
        display = (
            _text(identity, "userName") or _text(user, "email") or _text(user, "username") or external.strip()
        )
        links.append(
            {"configId": config_id, "externalUserId": external.strip(), "displayName": display[:200]}
        )
        outcomes.append(("linked", name))
    return links, outcomes


@dataclasses.dataclass(frozen=True)
class RealmSource:
    """One file to read: ``item`` is the realm's position in a multi-realm array, else None."""

    index: int
    path: str
    item: int | None = None
    realm: str = ""  # the realm's name: derived ids of users without ``id`` depend on it
    # The realm's otpPolicy* (transforms/mapping/otp.py); None when not read (a multi-realm array, or a
    # split export's users files without their <realm>-realm.json).
    otp_policy: OtpPolicy | None = None


class RealmInputError(ValueError):
    """The realm input cannot be used (missing, not JSON, no users, ambiguous realm); one line."""


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


# --------------------------------------------------------------------------- pure functions


def _text(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    return value.strip() if isinstance(value, str) else ""


def _first_attribute(attributes: Mapping[str, Any], names: Sequence[str]) -> str:
    """Keycloak exports attributes as lists of strings; a hand-written file may use a string."""
    for name in names:
        value = attributes.get(name)
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and v.strip()), None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def attribute_metadata(attributes: Any) -> tuple[list[dict[str, str]], int]:
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


def _password_credential(credentials: Any) -> Mapping[str, Any] | None:
    """The first credential of type ``password`` (what Keycloak itself checks at login)."""
    if not isinstance(credentials, list):
        return None
    for credential in credentials:
        if isinstance(credential, Mapping) and credential.get("type") == "password":
            return credential
    return None


def other_credential_types(credentials: Any) -> list[str]:
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
    user: Any, options: KeycloakOptions, realm: str = "", otp_policy: OtpPolicy | None = None
) -> MappedUser | Rejection:
    """One element of a realm's ``users`` array → a validated ``humanUsers`` entry, or why not.

    Same mapping as ``zitadel-tools migrate keycloak`` for the fields it reads (docs/source-schemas.md),
    plus name fallbacks, phone, preferred language, metadata and every password algorithm.
    A user without ``id`` gets one derived from ``realm`` and the username (transforms/common/ids.py);
    one without e-mail gets ``options.email_fallback``'s address, unverified.
    An OTP device becomes ``otpCode`` when ZITADEL verifies its codes (transforms/mapping/otp.py;
    ``otp_policy``, the realm's ``otpPolicy*``, fills in what a credential leaves out, None when
    unknown); ``requiredActions: ["UPDATE_PASSWORD"]`` becomes ``passwordChangeRequired``.
    """
    if not isinstance(user, Mapping):
        return Rejection(Reason.NOT_AN_OBJECT, "user is not a JSON object")
    if user.get("serviceAccountClientId"):
        return Rejection(Reason.SERVICE_ACCOUNT, "service-account user of a client (a machine user)")
    if user.get("enabled") is not True and not options.include_disabled:
        # Keycloak imports a user without `enabled` as disabled, so a missing flag means disabled.
        state = "disabled" if user.get("enabled") is False else "not marked enabled"
        return Rejection(
            Reason.DISABLED, f"user is {state} in Keycloak (use --include-disabled to import anyway)"
        )

    user_name = _text(user, "username")
    raw_attributes = user.get("attributes")
    attributes: Mapping[str, Any] = raw_attributes if isinstance(raw_attributes, Mapping) else {}
    profile: dict[str, Any] = {
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
    fallback = False
    if not email:
        if options.email_fallback is None:
            return Rejection(Reason.MISSING_EMAIL, "no e-mail address (--email-fallback TEMPLATE gives one)")
        email = fallback_email(options.email_fallback, user_name, user_id) or ""
        if not email:
            return Rejection(
                Reason.INVALID_EMAIL_FALLBACK,
                f"--email-fallback {options.email_fallback!r} gives no valid e-mail address for this user",
            )
        verified, fallback = False, True
    body: dict[str, Any] = {
        "userName": user_name,
        "profile": profile,
        # protojson omits false, like zitadel-tools' output.
        "email": {"email": email, "isEmailVerified": True} if verified else {"email": email},
    }
    phone = _first_attribute(attributes, _PHONE_ATTRIBUTES)
    if phone:
        phone_verified = _first_attribute(attributes, _PHONE_VERIFIED_ATTRIBUTES).lower() == "true"
        body["phone"] = {"phone": phone, "isPhoneVerified": True} if phone_verified else {"phone": phone}

    federated = bool(user.get("federationLink"))
    password: str | None = None
    dropped_hash: HashFailure | None = None
    written_hash: ConvertedHash | None = None
    credential = None if federated else _password_credential(user.get("credentials"))
    if credential is not None:
        converted = convert_credential(credential)
        policy = options.validation.hash_policy
        if isinstance(converted, ConvertedHash) and policy is not None:
            # A verifier the target has not enabled or a parameter outside its limits is handled
            # like an unsupported algorithm (transforms/hashing/policy.py).
            converted = policy.check(converted) or converted
        if isinstance(converted, ConvertedHash):
            body["hashedPassword"] = {"value": converted.value}
            password = converted.algorithm
            written_hash = converted
        elif converted.reason == Reason.PLAINTEXT_PASSWORD and options.allow_plaintext_passwords:
            plaintext = plaintext_value(credential)
            if plaintext is None:
                return Rejection(Reason.INVALID_PASSWORD, "plaintext password credential value is empty")
            # A password that sat in a file in clear text: the user must choose a new one.
            body["password"] = plaintext
            body["passwordChangeRequired"] = True
            password = "plaintext"
        elif options.on_unsupported_hash == IMPORT_WITHOUT_PASSWORD:
            dropped_hash = converted
        else:
            return Rejection(converted.reason, converted.detail)

    links, link_outcomes = idp_links(user, dict(options.idp_map))
    if links:
        body["idps"] = links

    # Second factor and required actions: only users that have them pay for more than a look.
    # Most users hold exactly their password credential: that costs one identity check.
    otp_not_carried: Sequence[str] = ()
    credentials = user.get("credentials")
    if isinstance(credentials, list) and not (len(credentials) == 1 and credentials[0] is credential):
        for item in credentials:
            # dict, not Mapping: the ABC check costs 5x more, and parsed JSON is dicts.
            if isinstance(item, dict) and item.get("type") in OTP_CREDENTIAL_TYPES:
                otp_code, otp_not_carried = keycloak_otp(credentials, otp_policy)
                if otp_code is not None:
                    body["otpCode"] = otp_code
                break
    actions_not_carried: Sequence[str] = ()
    forced = False
    if user.get("requiredActions"):
        update_password, actions_not_carried = required_actions(user)
        if update_password:
            if "hashedPassword" in body:
                body["passwordChangeRequired"] = forced = True
            elif "password" not in body:  # the plaintext path already sets it
                # Nothing to change: the user has no password here and must set one anyway.
                actions_not_carried = [*actions_not_carried, "UPDATE_PASSWORD"]

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
    notes = result.notes + (["derived-id"] if derived else []) + (["email-fallback"] if fallback else [])
    return MappedUser(
        entry,
        metadata,
        password,
        federated,
        dropped_hash,
        notes,
        dropped,
        written_hash,
        derived,
        fallback,
        link_outcomes,
        otp_not_carried,
        actions_not_carried,
        forced,
    )


# --------------------------------------------------------------------------- planning (launcher)


def _open(path: str):
    """UTF-8 text (BOM skipped, UTF-16/32 decoded), gzip checked, nesting cut at MAX_DEPTH."""
    return open_input(path)


def _first_line(err: BaseException) -> str:
    # yajl's messages continue with a snippet of the input (which may hold hashes): keep line 1.
    lines = str(err).strip().splitlines()
    return lines[0][:200] if lines else type(err).__name__


@dataclasses.dataclass
class _TopLevel:
    """What the launcher learns from the top of a file without reading its users."""

    array: bool
    has_users: bool = False
    realm: str | None = None
    realms: list[str] = dataclasses.field(default_factory=list)
    # Top-level otpPolicy* values seen before ``users`` (Keycloak writes them first).
    otp_policy: dict[str, Any] = dataclasses.field(default_factory=dict)


def _scan(path: str) -> _TopLevel:
    """Read a realm file's top level up to its ``users`` array (Keycloak writes it before the
    large ``clients`` section, and a users file has it second), or the realm names of an array."""
    name = os.path.basename(path)
    try:
        with _open(path) as handle:
            events = ijson.parse(DepthGuard(handle), buf_size=64 * 1024)
            try:
                first = next(events, None)
            except ijson.JSONError as err:
                if "premature EOF" not in str(err):
                    raise
                first = None
            if first is None:
                raise RealmInputError(f"{name}: the file is empty")
            if first[1] not in ("start_array", "start_map"):
                raise RealmInputError(
                    f"{name}: not a Keycloak realm export (expected a JSON object): {_describe(path)}"
                )
            if first[1] == "start_map":
                top = _TopLevel(array=False)
                expect_users = False
                for prefix, event, value in events:
                    if expect_users:
                        top.has_users = event == "start_array"
                        return top
                    if prefix == "" and event == "map_key":
                        expect_users = value == "users"
                    elif prefix == "realm" and event == "string":
                        top.realm = value
                    elif prefix in REALM_POLICY_KEYS and event in ("string", "number"):
                        top.otp_policy[prefix] = value
                return top
        # A multi-realm export: read again for the realm names (the C backend skips the rest).
        # Keycloak writes `realm` in every realm, so the list lines up with the array items.
        with _open(path) as handle:
            realms = [r if isinstance(r, str) else "" for r in ijson.items(DepthGuard(handle), "item.realm")]
        return _TopLevel(array=True, has_users=True, realms=realms)
    except ijson.JSONError as err:
        raise RealmInputError(f"{name}: not valid JSON ({_first_line(err)}): {_describe(path)}") from None
    except (OSError, ValueError) as err:
        if isinstance(err, RealmInputError):
            raise
        raise RealmInputError(f"cannot read {path}: {_first_line(err)}") from None


def _describe(path: str) -> str:
    """What the file's first bytes look like (transforms/sources/input_stream.py ``describe_head``)."""
    try:
        with _open(path) as handle:
            return describe_head(handle.read(4096))
    except OSError as err:
        return _first_line(err)


def _missing_parts(paths: Sequence[str]) -> list[str]:
    """The ``<realm>-users-N.json`` names a split export's numbering skips (0 to the highest N)."""
    numbers: dict[tuple[str, str, str], set[int]] = {}
    for path in paths:
        match = _SPLIT_NAME.match(os.path.basename(path))
        if match and match.group("n") is not None:
            base = path[: len(path) - len(os.path.basename(path))]
            suffix = ".json.gz" if path.endswith(".gz") else ".json"
            numbers.setdefault((base, match.group("realm"), suffix), set()).add(int(match.group("n")))
    missing = []
    for (base, realm, suffix), found in sorted(numbers.items()):
        missing += [f"{base}{realm}-users-{n}{suffix}" for n in range(max(found)) if n not in found]
    return missing


def _match(pattern: str) -> list[str]:
    try:
        result = FileSystems.match([pattern])[0]
    except Exception as err:  # Beam wraps every backend error in BeamIOError
        raise RealmInputError(f"cannot read realm {pattern!r}: {_first_line(err)}") from None
    return sorted(m.path for m in result.metadata_list if not m.path.endswith("/"))


def _match_directory(directory: str) -> list[str]:
    base = directory.rstrip("/")
    return _match(base + "/*.json") + _match(base + "/*.json.gz")


def _expand(realm: str) -> list[str]:
    """A file, a directory (its ``*.json`` files) or a glob → the matched paths."""
    if _GLOB_CHARS.search(realm):
        paths = _match(realm)
    elif realm.endswith("/") or (not realm.startswith("gs://") and os.path.isdir(realm)):
        paths = _match_directory(realm)
    else:
        paths = _match(realm)
        if not paths and realm.startswith("gs://"):
            paths = _match_directory(realm)  # a gs:// "directory" given without '/'
    if not paths:
        raise RealmInputError(f"realm {realm!r}: no such file")
    return paths


def _sort_key(path: str) -> tuple[str, int, int, str]:
    match = _SPLIT_NAME.match(os.path.basename(path))
    if not match:
        return ("", 0, 0, path)
    users_n = match.group("n")
    return (match.group("realm"), 1 if users_n is not None else 0, int(users_n or 0), path)


def plan_realm_sources(
    realm: str, realm_name: str | None = None, allow_missing_parts: bool = False
) -> list[RealmSource]:
    """The files (and realms) to read for ``--realm``/``--realm-name``, in sort-key order.

    Raises RealmInputError when nothing matches, a file is not a realm export, several realms
    are present without ``realm_name``, no file holds a ``users`` array, or (unless
    ``allow_missing_parts``) the numbering of a split export's ``<realm>-users-N.json`` has a gap.
    """
    paths = _expand(realm)
    if len(paths) == 1:
        match = _SPLIT_NAME.match(os.path.basename(paths[0]))
        if match and match.group("n") is None:
            # `<realm>-realm.json` given on its own: its users may sit next to it.
            base = paths[0][: len(paths[0]) - len(os.path.basename(paths[0]))]
            paths += _match(f"{base}{match.group('realm')}-users-*.json")
    paths.sort(key=_sort_key)
    missing = _missing_parts(paths)
    if missing and not allow_missing_parts:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise RealmInputError(
            f"{realm}: the split export has a gap: {missing[0]} is missing{more}; "
            "--allow-missing-parts reads the parts that are there"
        )
    if missing:
        _LOGGER.warning(
            "split export: %d part(s) missing, e.g. %s (--allow-missing-parts)", len(missing), missing[0]
        )

    candidates: list[tuple[str, int | None, str]] = []  # (path, array item, realm name)
    without_users: list[str] = []
    policies: dict[str, OtpPolicy] = {}  # realm name → otpPolicy* of its realm file
    for path in paths:
        top = _scan(path)
        if top.array:
            candidates += [(path, i, name) for i, name in enumerate(top.realms)]
            continue
        match = _SPLIT_NAME.match(os.path.basename(path))
        name = top.realm or (match.group("realm") if match else "")
        if not (match and match.group("n") is not None):  # a realm file, not a users-N file
            policies.setdefault(name, realm_policy(top.otp_policy))
        if top.has_users:
            candidates.append((path, None, name))
        else:
            without_users.append(name)

    names = sorted({name for _, _, name in candidates} | set(without_users))
    if realm_name is not None:
        if realm_name not in names:
            raise RealmInputError(
                f"no realm named {realm_name!r} in {realm} (found: {', '.join(names) or 'none'})"
            )
        candidates = [c for c in candidates if c[2] == realm_name]
    elif len(names) > 1:
        raise RealmInputError(
            f"{realm} holds several realms ({', '.join(n or '?' for n in names)}): choose one with --realm-name"
        )
    if not candidates:
        raise RealmInputError(
            f'{realm}: no "users" array (and no <realm>-users-N.json files of a split export)'
        )
    return [
        RealmSource(index, path, item, name, None if item is not None else policies.get(name))
        for index, (path, item, name) in enumerate(candidates)
    ]


# --------------------------------------------------------------------------- reading (workers)


def _only_item(events: Iterable[tuple[str, str, Any]], item: int) -> Iterator[tuple[str, str, Any]]:
    """The parse events of one realm of a multi-realm array (stops after it)."""
    current = -1
    for prefix, event, value in events:
        if prefix == "item" and event == "start_map":
            current += 1
        if current == item:
            yield prefix, event, value
        elif current > item:
            return


def iter_users(source: RealmSource, handle) -> Iterator[Any]:
    """Stream the users of ``source`` from an open binary ``handle`` (wrap it in a
    ``DepthGuard`` first: ijson's memory grows with the square of the nesting depth)."""
    if source.item is None:
        return ijson.items(handle, "users.item", use_float=True, buf_size=_IJSON_BUF)
    events = _only_item(ijson.parse(handle, buf_size=_IJSON_BUF), source.item)
    return ijson.items(events, "item.users.item", use_float=True)


class _ReadRealmFileFn(beam.DoFn):
    """Stream one file's users; emit ``(partition, rows_blob)`` per partition every chunk."""

    def __init__(
        self,
        options: KeycloakOptions,
        partitions: int,
        chunk_users: int,
        tmp_dir: str | None,
        roles: Any = None,
    ):
        self._options = options
        self._partitions = partitions
        self._chunk = chunk_users
        self._tmp_dir = tmp_dir
        # transforms.mapping.roles.KeycloakRoles with --project-id (grants in rows), else None.
        self._roles = roles
        self._held: set[tuple[str, str, str, str]] = set()

    def setup(self):
        self._tally = HashTally(self._tmp_dir)
        not_carried = not_carried_keys(self._options.metadata)
        if self._roles is not None:  # carried as grants (transforms/mapping/roles.py)
            not_carried = not_carried - {"realmRoles", "clientRoles", "groups"}
        self._fields = FieldTally("keycloak", KNOWN_FIELDS, not_carried)

    def process(self, source: RealmSource):
        counts: collections.Counter[str] = collections.Counter()
        parts: dict[int, list[EncodedRow]] = {}
        position = 0
        try:
            # no_gc: many small dicts per chunk, and the cyclic GC would rescan them all.
            with no_gc(), _open(source.path) as handle:
                if handle.encoding:
                    counts[f"inputs.decoded.{handle.encoding}"] += 1
                guard = DepthGuard(handle)
                users = iter_users(source, guard)
                seen_cuts = 0
                while True:
                    try:
                        user = next(users)
                    except StopIteration:
                        break
                    except InputReadError as err:  # a .gz cut short or damaged
                        detail = (
                            f"{_first_line(err)}; {position} users were read before it, "
                            "the rest of the file was not read"
                        )
                        counts[f"inputs.partial.{source.index}"] += position
                        yield _unreadable_rest(source, position, detail, counts)
                        break
                    except (ijson.JSONError, ValueError) as err:  # ValueError: bad UTF-8, numbers
                        # Nothing after a syntax error can be located reliably: one dead letter
                        # for the rest of the file, and the run goes on with the other files.
                        detail = (
                            f"{os.path.basename(source.path)}: JSON syntax error after user {position} "
                            f"({_first_line(err)}); the rest of the file was not read"
                        )
                        yield _unreadable_rest(source, position, detail, counts)
                        break
                    dead: tuple[tuple[int, int], bytes] | None
                    marker = has_marker(user) if guard.cut > seen_cuts else None
                    if marker is not None:
                        seen_cuts += 1
                        counts["keycloak.users_read"] += 1
                        reason, detail = marker_problem(marker)
                        dead = dead_letter(
                            (source.index, position),
                            reason,
                            f"user {position}: {detail}",
                            SOURCE,
                            {"file": source.path, "position": position},
                        )
                    else:
                        dead = self._one(
                            user, (source.index, position), parts, counts, source.realm, source.otp_policy
                        )
                    position += 1
                    if dead is not None:
                        yield beam.pvalue.TaggedOutput(_DEAD, dead)
                    if position % self._chunk == 0:
                        yield from self._flush(source, position, parts)
            yield from self._flush(source, position, parts)
            if self._roles is not None:  # the roles users hold that the export does not define
                yield beam.pvalue.TaggedOutput(_ROLES, sorted(self._held))
                self._held = set()
        finally:
            counts["keycloak.users_read"] += 0  # always reported, even for an empty realm
            self._fields.flush(counts)
            for name, value in counts.items():
                Metrics.counter(NAMESPACE, name).inc(value)
            self._tally.publish()

    def _one(
        self,
        user: Any,
        sortkey: tuple[int, int],
        parts: dict[int, list[EncodedRow]],
        counts: collections.Counter[str],
        realm: str = "",
        otp_policy: OtpPolicy | None = None,
    ) -> tuple[tuple[int, int], bytes] | None:
        counts["keycloak.users_read"] += 1
        others = other_credential_types(user.get("credentials")) if isinstance(user, Mapping) else []
        for kind in others:
            counts[f"keycloak.other_credentials.{kind}"] += 1
        mapped = map_user(user, self._options, realm, otp_policy)
        if isinstance(mapped, Rejection):
            if self._roles is not None and isinstance(user, Mapping):  # roles: docs/roles.md
                self._count_roles(user, counts, dead=True)
            return _dead_letter(sortkey, mapped.reason, mapped.detail, user)
        grants = self._count_roles(user, counts, realm=realm)
        try:
            # Each row is encoded here, one at a time, so a value JSON cannot carry (an integer
            # beyond 64 bits from a non-C ijson backend) rejects this user, not the whole chunk.
            row = encode_row(
                [
                    list(sortkey),
                    mapped.entry,
                    mapped.metadata,
                    user,
                    SOURCE,
                    [],
                    mapped.converted.verifier if mapped.converted is not None else "",
                    grants,
                ]
            )
        except orjson.JSONEncodeError as err:
            counts["roles.skipped.user-dead-lettered"] += sum(len(keys) for _, keys in grants)
            return _dead_letter(
                sortkey,
                Reason.UNREADABLE_INPUT,
                f"user holds a value JSON output cannot carry ({_first_line(err)})",
                user,
            )
        if mapped.password is not None:
            counts[f"keycloak.with_password.{mapped.password}"] += 1
        else:
            counts["keycloak.without_password"] += 1
        if mapped.federated:
            counts["keycloak.federated"] += 1
        for outcome, alias in mapped.link_outcomes:
            counts[f"keycloak.idp_links.{outcome}.{alias}"] += 1
        if mapped.password is None and "idps" not in mapped.entry["user"]:
            counts["cannot_sign_in.keycloak"] += 1
        self._fields.count(user, tuple(f"credentials.{kind}" for kind in others) if others else ())
        if mapped.dropped_hash is not None:
            counts[f"keycloak.password_dropped.{mapped.dropped_hash.reason}"] += 1
            email = mapped.entry["user"].get("email")
            self._tally.without_password(
                mapped.dropped_hash.reason,
                mapped.entry.get("userId"),
                email.get("email") if isinstance(email, dict) else None,
            )
        if mapped.converted is not None:
            self._tally.add(mapped.converted)
        for note in mapped.notes:
            counts[f"notes.{note}"] += 1
        if mapped.otp_not_carried or mapped.required_actions_not_carried:
            for cause in mapped.otp_not_carried:
                counts[f"keycloak.otp_not_carried.{cause}"] += 1
            for action in mapped.required_actions_not_carried:
                counts[f"keycloak.required_actions_not_carried.{action}"] += 1
        if mapped.password_change_required:
            counts["keycloak.password_change_required"] += 1
        if self._options.metadata:
            counts["keycloak.metadata_entries"] += len(mapped.metadata)
            counts["keycloak.metadata_dropped"] += mapped.metadata_dropped
        key = mapped.entry.get("userId") or mapped.entry["user"]["userName"]
        parts.setdefault(partition_of(key, self._partitions), []).append(row)
        return None

    def _count_roles(
        self, user: Mapping[str, Any], counts: collections.Counter[str], dead: bool = False, realm: str = ""
    ) -> tuple:
        """The user's grants (transforms/mapping/roles.py); its role outcomes counted under ``roles.``."""
        if self._roles is None:
            if direct_roles_beyond_builtin(user, realm):
                counts["roles.users_holding"] += 1
            return ()
        grants, outcomes = self._roles.user_grants(user)
        for name, value in outcomes:
            if not (dead and name == "undefined"):
                counts["roles." + name] += value
        if dead:
            counts["roles.skipped.user-dead-lettered"] += sum(len(keys) for _, keys in grants)
            return ()
        if any(name == "undefined" for name, _ in outcomes):
            self._held.update(self._roles.held_entries(user))
        return grants

    def _flush(
        self, source: RealmSource, position: int, parts: dict[int, list[EncodedRow]]
    ) -> Iterator[tuple[int, bytes | str]]:
        """One blob per partition (rows already encoded one by one in ``_one``), or the path of
        its spill file. Names are deterministic, so a retried bundle overwrites its own files."""
        for part, rows in parts.items():
            blob = pack_rows(rows)
            if self._tmp_dir is None:
                yield part, blob
            else:
                name = f"keycloak-{source.index:05d}-{source.item or 0:03d}-{position:010d}-p{part:03d}.pkl"
                yield part, write_spill(self._tmp_dir, name, blob)
        parts.clear()


def _dead_letter(
    sortkey: tuple[int, int], reason: str, detail: str, user: Any
) -> tuple[tuple[int, int], bytes]:
    try:
        return dead_letter(sortkey, reason, detail, SOURCE, user)
    except orjson.JSONEncodeError:
        # The record itself cannot be written as JSON: point at it instead.
        return dead_letter(
            sortkey, reason, detail, SOURCE, {"unencodable_record": True, "position": sortkey[1]}
        )


# --------------------------------------------------------------------------- PTransform


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadKeycloakUsers(beam.PTransform):
    """Realm files → ``{'rows': (partition, rows_blob), 'dead': (sortkey, line)}``.

    ``sources`` come from :func:`plan_realm_sources` (run in the launcher, so a missing or
    unusable realm fails before the pipeline starts). With ``tmp_dir``, each blob is written to
    a spill file there and the element carries its path (``transforms/files/spill.py``), which keeps
    the runner's memory small; without it, the blobs themselves are the elements.
    """

    def __init__(
        self,
        sources: Sequence[RealmSource],
        options: KeycloakOptions,
        partitions: int,
        tmp_dir: str | None = None,
        chunk_users: int = CHUNK_USERS,
        roles: Any = None,
    ):
        super().__init__()
        self._roles = roles  # transforms.mapping.roles.KeycloakRoles (--project-id), or None
        if options.on_unsupported_hash not in ON_UNSUPPORTED_HASH:
            raise ValueError(f"on_unsupported_hash must be one of {', '.join(ON_UNSUPPORTED_HASH)}")
        self._sources = list(sources)
        self._options = options
        self._partitions = partitions
        self._chunk = chunk_users
        self._tmp_dir = tmp_dir

    def expand(self, pbegin: beam.pvalue.PBegin) -> dict[str, beam.PCollection]:
        """Returns ``{'rows': PCollection[PartitionRows], 'dead': PCollection[DeadLetter]}``."""
        read = (
            pbegin
            | "ListRealmFiles" >> beam.Create(self._sources)
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadRealmFiles"
            >> beam.ParDo(
                _ReadRealmFileFn(self._options, self._partitions, self._chunk, self._tmp_dir, self._roles)
            )
            .with_output_types(PartitionRows, **{_DEAD: DeadLetter, _ROLES: Any})
            .with_outputs(_DEAD, _ROLES, main="rows")
        )
        if self._roles is not None:  # with roles: transforms/output/grants.py resolves them
            return {"rows": read.rows, "dead": read[_DEAD], "roles": read[_ROLES]}
        return {"rows": read.rows, "dead": read[_DEAD]}


def _unreadable_rest(source: RealmSource, position: int, detail: str, counts) -> beam.pvalue.TaggedOutput:
    """The one dead letter for the rest of a realm file that cannot be read on (logged, counted)."""
    _LOGGER.error("%s", detail)
    counts["keycloak.unreadable_files"] += 1
    return beam.pvalue.TaggedOutput(
        _DEAD,
        dead_letter(
            (source.index, position),
            Reason.UNREADABLE_INPUT,
            detail,
            FILE_SOURCE,
            {"file": source.path, "position": position},
        ),
    )


# --------------------------------------------------------------------------- role definitions

_DEFINITION_KEYS = ("realm", "roles", "groups", "defaultRole", "defaultRoles")


def load_keycloak_roles(realm: str, realm_name: str | None, settings: RoleSettings) -> KeycloakRoles:
    """The role definitions of ``--realm`` (a file, a multi-realm array, or a split export's
    files) for ``realm_name`` (None: the only realm). Users files of a split export hold none and
    are not read; a single-file realm is streamed once per definition key (ijson's C backend
    skips the users array without building it). Raises ValueError with one line."""
    import os

    import ijson

    parts: list[Mapping[str, Any]] = []
    for path in _expand(realm):
        match = _SPLIT_NAME.match(os.path.basename(path))
        if match and match.group("n") is not None:
            continue  # <realm>-users-N.json
        try:
            top = _scan(path)
            if top.array:
                with _open(path) as handle:
                    for item in ijson.items(handle, "item", use_float=True):
                        if isinstance(item, Mapping) and (
                            realm_name is None or item.get("realm") == realm_name
                        ):
                            parts.append({k: item.get(k) for k in _DEFINITION_KEYS})
                continue
            doc: dict[str, Any] = {}
            for key in _DEFINITION_KEYS:
                with _open(path) as handle:
                    found = next(iter(ijson.items(handle, key, use_float=True)), None)
                if found is not None:
                    doc[key] = found
        except (OSError, ijson.JSONError, RealmInputError) as err:
            raise ValueError(f"cannot read the roles of {path}: {_first_line(err)}") from None
        if realm_name is not None and doc.get("realm") not in (None, realm_name):
            continue
        parts.append(doc)
    return KeycloakRoles.from_parts(parts, settings)
