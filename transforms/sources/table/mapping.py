"""One table record → a validated ``humanUsers`` entry, or why not: the pure mapping, no Beam.

The reader (``read.py``) calls :func:`map_record` once per record with the run's
:class:`TableOptions`. Fields come from the mapping (``spec.py``), values are read and
type-checked by ``values.py``, the hash column is converted by ``hashes.py``.
Fallbacks are the other sources': userName ← e-mail; first and last name ← display name ←
userName (the import API requires both names).

Example::

    spec = load_spec(None, ["id=id", "email=email", "password_hash=hash"])
    mapped = map_record({"id": "7", "email": "ann@example.com", "hash": "$2a$10$..."}, TableOptions(spec=spec))
    if isinstance(mapped, TableRejection): print(mapped.reason, mapped.detail)
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

import orjson

from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure
from transforms.hashing.forms import HashForm, Rewritten
from transforms.hashing.policy import OnUnsupportedHash
from transforms.mapping.ids import EmailChoice, email_or_fallback
from transforms.mapping.metadata import metadata_within_limits, text_value
from transforms.mapping.validate import (
    EMAIL_FALLBACK,
    ValidationOptions,
    control_char_problem,
    validate_user,
)
from transforms.sources.table.hashes import convert_hash, row_hash
from transforms.sources.table.spec import TableSpec
from transforms.sources.table.values import ValueProblem, Values

__all__ = ["TableOptions", "TableUser", "TableRejection", "map_record"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TableOptions:
    """Mapping choices from the command line (picklable)."""

    spec: TableSpec
    include_blocked: bool = False
    email_verified: bool = False  # --email-verified: every e-mail verified
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.DEAD_LETTER
    email_fallback: str | None = None
    validation: ValidationOptions = ValidationOptions(
        allowed_hash_families=("bcrypt", "argon2", "pbkdf2", "other")
    )
    # --hash-form: the form of every hash (None: detected per value, docs/hash-forms.md)
    hash_form: HashForm | None = None
    # --allow-plaintext-passwords: a value that is plainly a password is imported, change required.
    allow_plaintext_passwords: bool = False
    # The run's "now" for after_now(...): taken once when the options are made (docs/table.md).
    now: float = dataclasses.field(default_factory=time.time)


# A user the table says must change its password, who has none to change: counted (notes.).
CHANGE_WITHOUT_PASSWORD = "password-change-without-password"


@dataclasses.dataclass
class TableUser:
    """A record that passed mapping and validation, and what the summary counts about it."""

    entry: dict[str, Any]
    user_id: str
    blocked: bool
    metadata: list[dict[str, str]]
    metadata_dropped: int = 0
    roles: tuple[str, ...] = ()
    password: str | None = None  # the hash's label, None without a password
    converted: ConvertedHash | None = None
    dropped_hash: HashFailure | None = None  # --on-unsupported-hash=import-without-password
    # The hash's form, written or refused (HashTally.rewritten); None when the target refused it.
    form_outcome: Rewritten | None = None
    notes: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class TableRejection:
    """Why a record is a dead letter; ``user_id`` and ``blocked`` as far as they were read (the
    sync leaves a dead-lettered user of the state alone, docs/sync.md)."""

    reason: str
    detail: str
    user_id: str | None = None
    blocked: bool = False
    refused: ConvertedHash | None = None
    roles: tuple[str, ...] = ()
    form_outcome: Rewritten | None = None


def map_record(record: object, options: TableOptions) -> TableUser | TableRejection:
    """One record (a dict) → a :class:`TableUser`, or a :class:`TableRejection` with its reason."""
    if type(record) is not dict:
        return TableRejection(Reason.NOT_AN_OBJECT, "record is not a JSON object")
    values = Values(record, options.spec.null_text, options.now)
    fields = options.spec.fields
    user_id: str | None = None
    blocked = False
    roles: tuple[str, ...] = ()
    try:
        user_id = values.text(fields["id"]) or None
        blocked = values.flag(fields.get("blocked"))
        roles = values.roles(fields.get("roles"))
        if user_id is None:
            return TableRejection(Reason.MISSING_USER_ID, f"no id in {fields['id'].text}", blocked=blocked)
        if blocked and not options.include_blocked:
            return TableRejection(
                Reason.BLOCKED,
                "user is blocked in the table (--include-blocked imports it anyway)",
                user_id,
                blocked,
                roles=roles,
            )
        return _map(values, options, user_id, blocked, roles)
    except ValueProblem as problem:
        return TableRejection(problem.reason, problem.detail, user_id, blocked, roles=roles)


def _map(
    values: Values, options: TableOptions, user_id: str, blocked: bool, roles: tuple[str, ...]
) -> TableUser | TableRejection:
    fields = options.spec.fields
    email = values.text(fields["email"])
    user_name = values.text(fields.get("username")) or email
    display = values.text(fields.get("display_name"))
    notes: list[str] = []
    verified = options.email_verified or values.flag(fields.get("email_verified"))
    choice = email_or_fallback(
        email, options.email_fallback, user_name, user_id, f" in {fields['email'].text}"
    )
    if not isinstance(choice, EmailChoice):
        return TableRejection(*choice, user_id, blocked, roles=roles)
    if choice.from_fallback:
        email = choice.email
        user_name = user_name or email
        verified = False
        notes.append(EMAIL_FALLBACK)
    profile: dict[str, object] = {
        "firstName": values.text(fields.get("first_name")) or display or user_name,
        "lastName": values.text(fields.get("last_name")) or display or user_name,
    }
    if display:
        profile["displayName"] = display
    body: dict[str, object] = {
        "userName": user_name,
        "profile": profile,
        # protojson omits false, like the other sources' bodies.
        "email": {"email": email, "isEmailVerified": True} if verified else {"email": email},
    }
    phone = values.text(fields.get("phone"))
    if phone:
        # protojson omits false; ZITADEL refuses isVerified false (docs/sync.md#schema-check)
        verified_phone = values.flag(fields.get("phone_verified"))
        body["phone"] = {"phone": phone, "isPhoneVerified": True} if verified_phone else {"phone": phone}
    change = values.flag(fields.get("password_change_required"))
    hash_path = fields.get("password_hash")
    hashed: object = None
    if hash_path is not None:
        hashed = values.text(hash_path) if hash_path.expr is not None else values.raw(hash_path)
    hasher_path = fields.get("password_hasher")
    hasher = values.text(hasher_path) if hasher_path is not None else None
    password = _password(hashed, hash_path.text if hash_path is not None else "", options, body, hasher)
    if isinstance(password, TableRejection):
        return dataclasses.replace(password, user_id=user_id, blocked=blocked, roles=roles)
    if change and password[0] is not None:
        body["passwordChangeRequired"] = True
    elif change:
        notes.append(CHANGE_WITHOUT_PASSWORD)
    entry: dict[str, object] = {"userId": user_id, "user": body}
    result = validate_user(entry, options.validation)
    if result.reason is not None:
        return TableRejection(result.reason, result.detail, user_id, blocked, roles=roles)
    metadata, dropped = _metadata(values, options)
    problem = next((p for p in (control_char_problem(m["key"], "metadata key") for m in metadata) if p), None)
    if problem is not None:
        return TableRejection(*problem, user_id=user_id, blocked=blocked, roles=roles)
    label, converted, dropped_hash, outcome = password
    return TableUser(
        entry=entry,
        user_id=user_id,
        blocked=blocked,
        metadata=metadata,
        metadata_dropped=dropped,
        roles=roles,
        password=label,
        converted=converted,
        dropped_hash=dropped_hash,
        form_outcome=outcome,
        notes=notes + result.notes,
    )


# (the hash's label or None, the hash written, the hash dropped under import-without-password,
# the form outcome the run counts)
_Password = tuple[str | None, ConvertedHash | None, HashFailure | None, Rewritten | None]


def _password(
    hashed: object, where: str, options: TableOptions, body: dict[str, object], hasher: str | None = None
) -> _Password | TableRejection:
    """The hash column → ``hashedPassword`` in ``body``; no value: no password. With a
    ``password_hasher`` column, its value names the row's form (``hashes.row_hash``)."""
    if hashed is None or hashed == "":
        return None, None, None, None
    if type(hashed) is not str:
        return TableRejection(Reason.INVALID_FIELD_TYPE, f"{where} is not text (a password hash)")
    form = options.hash_form
    value = hashed.strip()
    if hasher is not None:
        declared = row_hash(value, hasher)
        if isinstance(declared, HashFailure):
            if options.on_unsupported_hash == OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD:
                return None, None, declared, None
            return TableRejection(declared.reason, declared.detail)
        value, form = declared
    converted, outcome = convert_hash(value, form, options.validation.hash_policy)
    if isinstance(converted, ConvertedHash):
        body["hashedPassword"] = {"value": converted.value}
        return converted.algorithm, converted, None, outcome
    if form is None and hasher is None and plaintext_like(value):
        if options.allow_plaintext_passwords:
            # A password that sat in a table in clear text (a seed row): the user must choose a new one.
            body["password"] = hashed.strip()
            body["passwordChangeRequired"] = True
            return PLAINTEXT, None, None, None
        converted = HashFailure(
            Reason.PLAINTEXT_PASSWORD,
            f"{where} holds a password in clear text, not a hash (--allow-plaintext-passwords imports it "
            "with a forced change)",
        )
        outcome = None
    if options.on_unsupported_hash == OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD:
        return None, None, converted, outcome
    return TableRejection(converted.reason, converted.detail, refused=converted.refused, form_outcome=outcome)


# The label of a clear-text password imported with --allow-plaintext-passwords.
PLAINTEXT = "plaintext"
# A value no hash form matched that is plainly a password: short, without the `$`, `:`, `{` of
# hash layouts, and not the 13 characters of a DES crypt.
_DES_CRYPT = re.compile(r"[./0-9A-Za-z]{13}")


def plaintext_like(value: str) -> bool:
    """Whether ``value`` (which no hash form matched) is plainly a password, not a hash: at most
    24 characters, none of ``$ : { }``, not a DES crypt (Laravel's seed row ``password123``)."""
    return (
        0 < len(value) <= 24
        and not any(c in value for c in "${}:")
        and _DES_CRYPT.fullmatch(value) is None
        and not value.isspace()
    )


def _metadata(values: Values, options: TableOptions) -> tuple[list[dict[str, str]], int]:
    """The mapped metadata paths → ``[{key, value(base64)}]``, and how many broke ZITADEL's limits.
    Text is stored as it is, anything else as its JSON."""
    return metadata_within_limits(
        (key, text_value(value) if isinstance(value, str) else orjson.dumps(value))
        for key, value in values.present_items(options.spec.metadata)
    )
