"""Okta user export rows → user rows: the mapping and Okta's part of the shared reader.

Columns are Okta's profile variable names (docs/okta.md#columns), read whatever their case;
``ALIASES`` (the package's ``__init__``) maps the report's labels to them. Okta exports no password or hash, no
verified flag and no IdP subject id, so every user arrives without a password, with e-mail and
phone unverified unless ``--trust-email`` / ``--trust-phone`` say otherwise. Everything else of
reading (files, decoding, counting, chunks, the unreadable rest) is ``file_reader.py``'s.

Example::

    map_row({"id": "00u1", "status": "ACTIVE", "login": "ann@example.com", "email": "ann@example.com",
             "firstName": "Ann", "lastName": "Lee"}, OktaOptions())
    # MappedUser(entry={"userId": "00u1", "user": {"userName": "ann@example.com", ...}}, ...)
    result = read_okta(pipeline, files, OktaOptions(), tmp_dir)  # ReadUsers(rows, dead)
"""

from __future__ import annotations

import base64
import collections
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NamedTuple

import apache_beam as beam
import orjson

from transforms.common import counters
from transforms.common.reasons import Reason
from transforms.common.records import NUM_PARTITIONS, SortKey
from transforms.mapping.fields import FieldTally
from transforms.mapping.ids import EmailChoice, email_or_fallback
from transforms.mapping.validate import MAX_METADATA_KEY, MAX_METADATA_VALUE, ValidationOptions, validate_user
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    SourceFile,
    UserRow,
    csv_records,
    encode_user,
    row_tallies,
)
from transforms.sources.input_stream import InputStream
from transforms.sources.okta import (
    BLOCKED,
    BLOCKED_WRITTEN,
    CHANGE_NOT_MARKED,
    COUNTERS,
    STATUS,
    column,
)
from transforms.sources.source_parts import ReadUsers

__all__ = [
    "OktaOptions",
    "MappedUser",
    "Refusal",
    "map_row",
    "canonical",
    "read_okta",
    "KNOWN_FIELDS",
    "NOT_CARRIED",
]

# Okta statuses that ask the user to change its password at the next sign-in.
MUST_CHANGE = frozenset({"PASSWORD_EXPIRED", "RECOVERY"})
# What this mapping carries into the body (and ``id``, ``status``, read for the user's identity).
CARRIED = ("id", "status", "login", "email", "firstName", "lastName", "displayName", "nickName")
CARRIED_PHONE_LANGUAGE = ("mobilePhone", "primaryPhone", "preferredLanguage", "locale")
KNOWN_FIELDS = frozenset(CARRIED + CARRIED_PHONE_LANGUAGE)
# Okta's default profile properties ZITADEL has no field for (docs/fields-not-carried.md);
# with --metadata they, and custom attributes, become metadata.
NOT_CARRIED = frozenset(
    "secondEmail middleName honorificPrefix honorificSuffix title profileUrl streetAddress city "
    "state zipCode countryCode postalAddress timezone userType employeeNumber costCenter "
    "organization division department managerId manager".split()
)


@dataclasses.dataclass(frozen=True)
class OktaOptions:
    include_blocked: bool = False  # --include-blocked or --state
    trust_email: bool = False  # --trust-email: the e-mail arrives verified
    trust_phone: bool = False  # --trust-phone: the phone arrives verified
    metadata: bool = False  # --metadata: columns ZITADEL has no field for → metadata
    email_fallback: str | None = None
    validation: ValidationOptions = dataclasses.field(default_factory=ValidationOptions)


@dataclasses.dataclass
class MappedUser:
    entry: dict[str, object]
    metadata: list[dict[str, str]]
    metadata_dropped: int  # over ZITADEL's key or value limit
    status: str
    notes: list[str]


class Refusal(NamedTuple):
    reason: str
    detail: str


def canonical(row: Mapping[str, str]) -> dict[str, str]:
    """The row's non-empty cells by the profile variable name of their column (alias resolved)."""
    return {column(name): value.strip() for name, value in row.items() if value and value.strip()}


def _names(cells: Mapping[str, str], login: str) -> tuple[str, str]:
    """First and last name: each given one, else the display name cut at its last space, else the login."""
    first, _, last = cells.get("displayName", "").rpartition(" ")
    return cells.get("firstName") or first or last or login, cells.get("lastName") or last or login


def _metadata(cells: Mapping[str, str]) -> tuple[list[dict[str, str]], int]:
    """Every non-empty cell this mapping does not carry: ``{key, value (base64 of its text)}``, and
    how many were dropped for ZITADEL's limits (counted)."""
    extra = [(key, value.encode()) for key, value in cells.items() if key not in KNOWN_FIELDS]
    kept = [(k, v) for k, v in extra if len(k) <= MAX_METADATA_KEY and len(v) <= MAX_METADATA_VALUE]
    return [{"key": k, "value": base64.b64encode(v).decode("ascii")} for k, v in kept], len(extra) - len(kept)


def map_row(row: Mapping[str, str], options: OktaOptions) -> MappedUser | Refusal:
    """One export row → its entry, metadata and Okta status, or the reason it is refused."""
    cells = canonical(row)
    status = cells.get("status", "").upper()
    if status in BLOCKED and not options.include_blocked:
        return Refusal(Reason.BLOCKED, f"{status} at Okta (--include-blocked imports such users)")
    login = cells.get("login") or cells.get("email", "")
    if not login:
        return Refusal(Reason.INVALID_USERNAME, "no login (Okta username) and no e-mail")
    user_id = cells.get("id", "")
    if not user_id:
        return Refusal(Reason.MISSING_USER_ID, "no id column value (Okta's user id, 00u...)")
    chosen = email_or_fallback(cells.get("email", ""), options.email_fallback, login, user_id)
    if not isinstance(chosen, EmailChoice):
        return Refusal(*chosen)
    first, last = _names(cells, login)
    profile: dict[str, object] = {"firstName": first, "lastName": last}
    for key in ("displayName", "nickName"):
        if key in cells:
            profile[key] = cells[key]
    language = cells.get("preferredLanguage") or cells.get("locale")
    if language:
        profile["preferredLanguage"] = language
    verified = options.trust_email and not chosen.from_fallback
    user: dict[str, object] = {
        "userName": login,
        "profile": profile,
        "email": {"email": chosen.email, "isEmailVerified": verified},
    }
    phone = cells.get("mobilePhone") or cells.get("primaryPhone")
    if phone:
        user["phone"] = {"phone": _e164(phone), "isPhoneVerified": options.trust_phone}
    entry: dict[str, object] = {"userId": user_id, "user": user}
    result = validate_user(entry, options.validation)
    if result.reason is not None:
        return Refusal(result.reason, result.detail)
    metadata, dropped = _metadata(cells) if options.metadata else ([], 0)
    return MappedUser(entry, metadata, dropped, status or "UNKNOWN", list(result.notes))


def _e164(phone: str) -> str:
    """``+1 415 555 0101`` → ``+14155550101``: spaces, dots, dashes and brackets removed; a number
    without ``+`` stays as it is (validation drops it, counted as phone-dropped)."""
    digits = phone.translate(str.maketrans("", "", " .-()"))
    return digits if digits.startswith("+") else phone


class _OktaPart(RecordPart[SourceFile], counters=COUNTERS):
    """An Okta export's CSV rows → rows (``file_reader.py``)."""

    def __init__(self, options: OktaOptions):
        self._options = options

    def setup(self) -> None:
        # With --metadata every column carries (the rest as metadata): none is counted.
        self._fields = (
            None if self._options.metadata else FieldTally(COUNTERS.name, KNOWN_FIELDS, NOT_CARRIED)
        )

    def split(self, unit: SourceFile, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        return csv_records(open_stream())

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        row = record.value
        assert isinstance(row, dict)  # csv_records: {column: text}
        mapped, cells = map_row(row, self._options), canonical(row)
        if not isinstance(mapped, MappedUser):
            return Rejected(mapped.reason, mapped.detail, cells)
        counts[COUNTERS.users_mapped] += 1
        counts[COUNTERS.metadata_dropped] += mapped.metadata_dropped
        names = [COUNTERS.cannot_sign_in, STATUS + mapped.status]
        names += [CHANGE_NOT_MARKED] if mapped.status in MUST_CHANGE else []
        names += [BLOCKED_WRITTEN] if mapped.status in BLOCKED else []
        names += [counters.note(note) for note in mapped.notes]
        user_id = str(mapped.entry["userId"])
        encoded = encode_user(
            sortkey,
            source=COUNTERS.source,
            user_id=user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            password="",  # Okta exports no password and no hash
            record_json=orjson.dumps(cells),
            tallies=row_tallies(self._fields.names(cells) if self._fields else (), names),
        )
        return UserRow(user_id, encoded)


def read_okta(
    pipeline: beam.Pipeline, files: Sequence[SourceFile], options: OktaOptions, tmp_dir: str | None
) -> ReadUsers:
    """Planned export files → ``ReadUsers(rows, dead)`` (the plan's ``read``)."""
    part = _OktaPart(options)
    return pipeline | "ReadOkta" >> ReadSourceFiles(files, part, partitions=NUM_PARTITIONS, tmp_dir=tmp_dir)
