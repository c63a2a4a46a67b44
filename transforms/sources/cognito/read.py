"""Cognito exports → user rows: the reader (the shared ``file_reader.py``) and the mapping.

A ``list-users`` user is ``{Username, Attributes: [{Name, Value}], Enabled, UserStatus, ...}``
with every attribute value a string; a row of the get-csv-header CSV holds the same attributes as
columns (``cognito:username`` for ``Username``, ``\\,`` for a comma, ``TRUE``/``FALSE``). Both
become one flat view (:func:`flat_user`: attribute name → value, beside the user's own keys),
which :func:`map_user` turns into a ZITADEL ``humanUsers`` entry (docs/cognito.md). Cognito
exports no password: no user carries one.

Example::

    map_user(flat_user({"Username": "u1", "Enabled": True, "UserStatus": "CONFIRMED",
                        "Attributes": [{"Name": "email", "Value": "ann@example.com"}]}), CognitoOptions())
    # MappedUser(entry={"userId": "u1", "user": {"userName": "ann@example.com", ...}}, ...)
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import datetime
import io
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NamedTuple

import apache_beam as beam
import ijson
import orjson

from transforms.common import counters
from transforms.common.reasons import Reason
from transforms.common.records import SortKey
from transforms.mapping.fields import FieldTally
from transforms.mapping.idp_links import LinkFields, idp_links
from transforms.mapping.ids import EmailChoice, email_or_fallback
from transforms.mapping.validate import MAX_METADATA_KEY, MAX_METADATA_VALUE, ValidationOptions, validate_user
from transforms.sources import cognito
from transforms.sources.file_reader import (
    ReadSourceFiles,
    Record,
    RecordPart,
    Rejected,
    UserRow,
    encode_user,
    guarded_records,
    row_tallies,
)
from transforms.sources.input_stream import DepthGuard, InputStream
from transforms.sources.source_parts import ReadUsers

__all__ = ["CognitoOptions", "MappedUser", "flat_user", "csv_user", "map_user", "ReadCognitoUsers"]

# FORCE_CHANGE_PASSWORD: admin-created, a temporary password; RESET_REQUIRED: must reset (CSV import).
MUST_CHANGE = frozenset({"FORCE_CHANGE_PASSWORD", "RESET_REQUIRED"})
# UserStatusType (API Reference); another value is counted as "other".
STATUSES = frozenset(
    "UNCONFIRMED CONFIRMED ARCHIVED COMPROMISED UNKNOWN RESET_REQUIRED FORCE_CHANGE_PASSWORD EXTERNAL_PROVIDER".split()
)
# The user's own keys in list-users (beside Attributes); an attribute never has these names.
OWN_KEYS = ("Username", "Enabled", "UserStatus", "UserCreateDate", "UserLastModifiedDate", "MFAOptions")
# What the mapping carries into fields (preferred_username and sub: when they are used, below).
CARRIED = frozenset(
    "Username Enabled UserStatus email email_verified phone_number phone_number_verified "
    "given_name family_name name nickname locale identities".split()
)
# Never metadata: no ZITADEL field, and dates that change without the user changing.
NEVER_METADATA = frozenset({"UserLastModifiedDate", "MFAOptions", "cognito:mfa_enabled"})
# Standard attributes and the user's keys ZITADEL has no field for (docs/fields-not-carried.md);
# with --metadata they (but NEVER_METADATA) and custom:* become metadata.
NOT_CARRIED = NEVER_METADATA | frozenset(
    "middle_name zoneinfo gender birthdate website picture profile address updated_at "
    "UserCreateDate preferred_username sub".split()
)
# Carried when used (the user name, the user id), else metadata or not carried.
_USED_IF_SAME = frozenset({"preferred_username", "sub"})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_COMMA = re.compile(r"(?<!\\),")  # get-csv-header's CSV: a comma not escaped by a backslash
_FlatUser = dict[str, object]


@dataclasses.dataclass(frozen=True)
class CognitoOptions:
    include_blocked: bool = False  # --include-blocked or --state
    user_name: str = "auto"  # --user-name
    metadata: bool = False  # --metadata: attributes ZITADEL has no field for → metadata
    email_fallback: str | None = None
    idp_map: tuple[tuple[str, str], ...] = ()
    validation: ValidationOptions = dataclasses.field(default_factory=ValidationOptions)


@dataclasses.dataclass
class MappedUser:
    entry: dict[str, object]
    metadata: list[dict[str, str]]
    metadata_dropped: int  # over ZITADEL's key or value limit
    status: str  # UserStatus ("" for a CSV row)
    blocked: bool
    left_out: tuple[str, ...]  # preferred_username, sub: not carried for this user
    link_outcomes: list[tuple[str, str]]
    notes: list[str]


class Refusal(NamedTuple):
    reason: str
    detail: str


def flat_user(user: object) -> _FlatUser | Refusal:
    """A list-users user → attribute name → value (text, trimmed), beside its own keys; or why it
    cannot be read. ``Username`` and ``UserStatus`` are kept only as text."""
    if not isinstance(user, dict):  # ijson's objects
        return Refusal(Reason.NOT_AN_OBJECT, "a Users entry is not an object")
    flat: _FlatUser = {key: user[key] for key in OWN_KEYS if key in user}
    for key in ("Username", "UserStatus"):
        value = flat.pop(key, None)
        if type(value) is str:
            flat[key] = value.strip()
    attributes = user.get("Attributes", [])
    if not isinstance(attributes, list):
        return Refusal(Reason.INVALID_FIELD_TYPE, "Attributes is not a list of {Name, Value}")
    for number, attribute in enumerate(attributes):
        name = attribute.get("Name") if type(attribute) is dict else None
        value = attribute.get("Value") if type(attribute) is dict else None
        if type(name) is not str or type(value) is not str or name in OWN_KEYS:
            return Refusal(
                Reason.INVALID_FIELD_TYPE, f"Attributes[{number}] is not a {{Name, Value}} of strings"
            )
        flat[name] = value.strip()
    return flat


def csv_user(cells: Mapping[str, str]) -> _FlatUser:
    """A get-csv-header CSV row → the flat view: its non-empty cells, ``cognito:username`` as
    ``Username``, ``cognito:mfa_enabled`` only when true."""
    flat: _FlatUser = {"Username" if k == "cognito:username" else k: v for k, v in cells.items() if v}
    if str(flat.get("cognito:mfa_enabled", "")).casefold() != "true":
        flat.pop("cognito:mfa_enabled", None)
    return flat


def _text(flat: _FlatUser, key: str) -> str:
    """An attribute's text ("" when absent); the flat view's texts are trimmed already."""
    value = flat.get(key)
    return value if type(value) is str else ""


def _user_name(flat: _FlatUser, choice: str, username: str, status: str) -> str:
    """--user-name: the chosen attribute, else ``auto``'s order (docs/cognito.md#user-name)."""
    chosen = _text(flat, "Username" if choice == "username" else choice) if choice != "auto" else ""
    if chosen:
        return chosen
    generated = status == "EXTERNAL_PROVIDER" or _UUID.fullmatch(username)
    own = "" if generated else username
    auto = (_text(flat, "preferred_username"), own, _text(flat, "email"), _text(flat, "phone_number"))
    return next((name for name in auto if name), username)


def _utc(value: object) -> str | None:
    """A list-users date (CLI v1: epoch seconds; v2: ISO 8601 at the exporting machine's offset)
    as UTC ISO 8601 to the millisecond, so both CLIs write the same metadata."""
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment = datetime.datetime.fromtimestamp(value, tz=datetime.UTC)
        elif isinstance(value, str):
            moment = datetime.datetime.fromisoformat(value.strip())
            if moment.tzinfo is None:
                return None
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return moment.astimezone(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _metadata(flat: _FlatUser, left_out: tuple[str, ...]) -> tuple[list[dict[str, str]], int]:
    """Attributes ZITADEL has no field for (and UserCreateDate, in UTC) → ``{key, value (base64)}``,
    and how many were dropped for ZITADEL's limits (counted)."""
    encoded = [
        (key, str((_utc(value) if key == "UserCreateDate" else None) or value).encode())
        for key, value in flat.items()
        if key not in CARRIED and key not in NEVER_METADATA and (key not in _USED_IF_SAME or key in left_out)
    ]
    kept = [(k, v) for k, v in encoded if len(k) <= MAX_METADATA_KEY and len(v) <= MAX_METADATA_VALUE]
    return [{"key": k, "value": base64.b64encode(v).decode("ascii")} for k, v in kept], len(encoded) - len(
        kept
    )


def _link_display(user: Mapping[str, object], entry: Mapping[str, object], external: str) -> str:
    email = user.get("email")
    return email if isinstance(email, str) and email else external


IDENTITIES = LinkFields("identities", "providerName", "userId", _link_display)


def _links(
    text: str, email: str, idp_map: Mapping[str, str]
) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """``identities`` (a JSON array inside the string) → IdP links for the providers in --idp-map."""
    try:
        entries = orjson.loads(text)
    except orjson.JSONDecodeError:
        entries = [None]  # counted as an invalid entry of an unknown provider
    entries = entries if isinstance(entries, list) else [None]
    return idp_links({"identities": entries, "email": email}, idp_map, IDENTITIES)


def map_user(flat: _FlatUser, options: CognitoOptions) -> MappedUser | Refusal:
    """One user's flat view → its entry, metadata and what is counted of it, or why it is refused."""
    text = flat.get  # the flat view's attributes, Username and UserStatus are text
    username = _text(flat, "Username")
    if not username:
        return Refusal(Reason.MISSING_USER_ID, "no Username (cognito:username in the CSV)")
    status = _text(flat, "UserStatus").upper()
    disabled = text("Enabled") is False
    blocked = disabled or status in cognito.BLOCKED_STATUS
    if blocked and not options.include_blocked:
        what = "disabled (Enabled: false)" if disabled else status
        return Refusal(Reason.BLOCKED, f"{what} at Cognito (--include-blocked imports such users)")
    login = _user_name(flat, options.user_name, username, status)
    chosen = email_or_fallback(_text(flat, "email"), options.email_fallback, login, username)
    if not isinstance(chosen, EmailChoice):
        return Refusal(*chosen)
    full = _text(flat, "name")
    first, _, last = full.rpartition(" ")
    profile: dict[str, object] = {
        "firstName": text("given_name") or first or last or login,
        "lastName": text("family_name") or last or login,
    }
    for key, field in (("name", "displayName"), ("nickname", "nickName"), ("locale", "preferredLanguage")):
        if text(key):
            profile[field] = text(key)
    # "true" in list-users, TRUE in the CSV
    verified = _text(flat, "email_verified").lower() == "true" and not chosen.from_fallback
    user: dict[str, object] = {
        "userName": login,
        "profile": profile,
        "email": {"email": chosen.email, "isEmailVerified": verified},
    }
    phone = _text(flat, "phone_number")
    if phone:
        user["phone"] = {
            "phone": phone,
            "isPhoneVerified": _text(flat, "phone_number_verified").lower() == "true",
        }
    identities = _text(flat, "identities")
    links, outcomes = (
        _links(identities, _text(flat, "email"), dict(options.idp_map)) if identities else ([], [])
    )
    if links:
        user["idps"] = links
    entry: dict[str, object] = {"userId": username, "user": user}
    result = validate_user(entry, options.validation)
    if result.reason is not None:
        return Refusal(result.reason, result.detail)
    left_out = tuple(
        key
        for key, used in (("preferred_username", login), ("sub", username))
        if text(key, used) not in (used, "")
    )
    metadata, dropped = _metadata(flat, left_out) if options.metadata else ([], 0)
    return MappedUser(entry, metadata, dropped, status, blocked, left_out, outcomes, list(result.notes))


def csv_records(stream: InputStream) -> Iterator[Record]:
    """get-csv-header's CSV (not RFC 4180: no quotes, ``\\,`` is a comma in a value) → records
    ``{column: text}`` under its header; a row of other cells than the header's is a problem."""
    text = io.TextIOWrapper(io.BufferedReader(stream), encoding="utf-8", errors="strict", newline="")
    header: list[str] | None = None
    position = 0
    for line in text:
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        cells = [cell.replace("\\,", ",").strip() for cell in _COMMA.split(line)]
        if header is None:
            header = cells
            continue
        if len(cells) == len(header):
            yield Record(position, dict(zip(header, cells, strict=True)))
        else:
            detail = f"row {position + 1}: {len(cells)} cells, the header names {len(header)}"
            yield Record(position, {"csv_line": line}, problem=(Reason.MALFORMED_CSV, detail))
        position += 1


def _json_users(guard: DepthGuard) -> Iterator[object]:
    """The ``Users`` of one list-users answer, or of several written one after the other."""
    return ijson.items(guard, "Users.item", multiple_values=True, use_float=True)


class _CognitoPart(RecordPart[cognito.CognitoFile], counters=cognito.COUNTERS):
    """A Cognito export's users (list-users JSON, or the CSV's rows) → rows (``file_reader.py``)."""

    def __init__(self, options: CognitoOptions):
        self._options = options
        self._format = cognito.JSON

    def setup(self) -> None:
        # With --metadata only NEVER_METADATA is not carried: custom:* and the rest become metadata.
        if self._options.metadata:
            self._fields = FieldTally(cognito.COUNTERS.name, frozenset(), NEVER_METADATA)
        else:
            self._fields = FieldTally(
                cognito.COUNTERS.name, CARRIED | _USED_IF_SAME, NOT_CARRIED - _USED_IF_SAME
            )

    def begin(self, unit: cognito.CognitoFile, counts: collections.Counter[str]) -> None:
        self._format = unit.format
        counts[cognito.FILES + unit.format] += 1

    def split(self, unit: cognito.CognitoFile, open_stream: Callable[[], InputStream]) -> Iterator[Record]:
        if unit.format == cognito.CSV:
            return csv_records(open_stream())
        return guarded_records(open_stream(), _json_users, lambda position: {"position": position})

    def convert(
        self, record: Record, sortkey: SortKey, counts: collections.Counter[str]
    ) -> UserRow | Rejected:
        value = record.value
        flat = (
            csv_user(value) if self._format == cognito.CSV and isinstance(value, dict) else flat_user(value)
        )
        mapped = map_user(flat, self._options) if isinstance(flat, dict) else flat
        if not isinstance(mapped, MappedUser):
            return Rejected(mapped.reason, mapped.detail, value)
        assert isinstance(flat, dict)
        counts[cognito.COUNTERS.users_mapped] += 1
        counts[cognito.COUNTERS.metadata_dropped] += mapped.metadata_dropped
        for outcome, provider in mapped.link_outcomes:
            counts[f"{cognito.IDP_LINKS}{outcome}.{provider}"] += 1
        user = mapped.entry["user"]
        assert isinstance(user, dict)
        status = mapped.status if mapped.status in STATUSES else "other"
        names = [cognito.STATUS + status] if mapped.status else []
        names += [cognito.COUNTERS.cannot_sign_in] if "idps" not in user else []
        names += [cognito.CHANGE_NOT_MARKED] if mapped.status in MUST_CHANGE else []
        names += [cognito.BLOCKED_WRITTEN] if mapped.blocked else []
        names += [counters.note(note) for note in mapped.notes]
        if self._options.metadata:
            fields = self._fields.names({k: flat[k] for k in NEVER_METADATA if k in flat})
        else:
            fields = self._fields.names(flat, mapped.left_out)
        user_id = str(mapped.entry["userId"])
        encoded = encode_user(
            sortkey,
            source=cognito.COUNTERS.source,
            user_id=user_id,
            entry=mapped.entry,
            metadata=mapped.metadata,
            password="",  # Cognito exports no password and no hash
            record_json=orjson.dumps(value),
            tallies=row_tallies(fields, names),
        )
        return UserRow(user_id, encoded)


@beam.typehints.with_input_types(beam.pvalue.PBegin)
class ReadCognitoUsers(beam.PTransform):
    """Planned export files → ``ReadUsers(rows, dead)``."""

    def __init__(
        self,
        files: Sequence[cognito.CognitoFile],
        options: CognitoOptions,
        partitions: int,
        tmp_dir: str | None,
    ):
        super().__init__()
        self._read = ReadSourceFiles(files, _CognitoPart(options), partitions=partitions, tmp_dir=tmp_dir)

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadUsers:
        return pbegin | "ReadCognitoFiles" >> self._read
