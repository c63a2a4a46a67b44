"""The mapping of ``migrate table``: which column or JSON path holds each field of a user.

Given as a small JSON file (``--mapping=FILE``), as flags (``--map FIELD=PATH``, repeatable,
winning over the file), or both. Pure functions, no Beam; every problem is one line naming the
key and, for a misspelling, the key meant (docs/table.md).

A path is a column name (CSV) or a top-level key (JSON), or dotted keys into a nested object
(``raw_user_meta_data.full_name``); in a CSV file the first part may name a column that holds
a JSON object. ``present(PATH)`` makes a yes/no field true when the path holds anything (a
timestamp like Supabase's ``email_confirmed_at``), ``not(PATH)`` true when the path holds false
(Django's ``is_active`` as ``blocked``).

Example::

    spec = load_spec('{"id": "id", "email": "email", "password_hash": "encrypted_password"}',
                     ["email_verified=present(email_confirmed_at)"])
    spec.fields["email"].parts  # ('email',)
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping, Sequence

import orjson

__all__ = [
    "FIELDS",
    "BOOLEAN_FIELDS",
    "FieldPath",
    "TableSpec",
    "SpecError",
    "load_spec",
    "did_you_mean",
    "for_columns",
]

# The fields a mapping can name, in the order docs/table.md lists them.
FIELDS = (
    "id",
    "username",
    "email",
    "email_verified",
    "first_name",
    "last_name",
    "display_name",
    "phone",
    "password_hash",
    "metadata",
    "roles",
    "blocked",
)
BOOLEAN_FIELDS = frozenset({"email_verified", "blocked"})
# Options of the mapping file besides the fields.
OPTIONS = ("hash_form",)
_WRAPPED = re.compile(r"^(present|not)\((.+)\)$")
_MAX_PATH = 10  # parts of a dotted path: deeper than any real export


class SpecError(ValueError):
    """A mapping that cannot be used; one readable line."""


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(word.lower(), [c.lower() for c in choices], n=1, cutoff=0.6)
    if not close:
        return ""
    original = next(c for c in choices if c.lower() == close[0])
    return f" (did you mean {original!r}?)"


@dataclasses.dataclass(frozen=True)
class FieldPath:
    """Where one field is read: the path's parts, and whether a yes/no field means "present"."""

    text: str  # as given, for messages and metadata keys
    parts: tuple[str, ...]
    present: bool = False  # present(PATH): true when the path holds anything
    negate: bool = False  # not(PATH): true when the path holds false (Django's is_active)


@dataclasses.dataclass(frozen=True)
class TableSpec:
    """A checked mapping: field → path (``metadata``: a tuple of paths), and the options."""

    fields: Mapping[str, FieldPath]
    metadata: tuple[FieldPath, ...] = ()
    hash_form: str | None = None
    # --where PATH=VALUE: the records read as users (all must hold); the others are not selected.
    where: tuple[tuple[FieldPath, str], ...] = ()

    def first_parts(self) -> list[str]:
        """The first part of every path: the columns a CSV header must have (or the top keys)."""
        paths = [*self.fields.values(), *self.metadata, *(path for path, _ in self.where)]
        return list(dict.fromkeys(p.parts[0] for p in paths))


def _path(field: str, value: object) -> FieldPath:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"mapping {field!r}: give a column name or a dotted JSON path as text")
    text = value.strip()
    present = negate = False
    match = _WRAPPED.match(text)
    if match:
        if field not in BOOLEAN_FIELDS:
            raise SpecError(
                f"mapping {field!r}: {match.group(1)}(...) is for the yes/no fields "
                f"({', '.join(sorted(BOOLEAN_FIELDS))})"
            )
        text = match.group(2).strip()
        present, negate = match.group(1) == "present", match.group(1) == "not"
    # A column name may hold a dot ("user.email"): parts are matched against the header first.
    parts = tuple(text.split("."))
    if any(not p for p in parts) or len(parts) > _MAX_PATH:
        raise SpecError(f"mapping {field!r}: {value!r} is not a column name or a dotted path (a.b.c)")
    return FieldPath(text, parts, present, negate)


def _metadata(value: object) -> tuple[FieldPath, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not value:
        raise SpecError("mapping 'metadata': give a list of columns or paths (--map metadata=a,b)")
    paths = tuple(_path("metadata", v) for v in value)
    keys = [p.text for p in paths]
    if len(set(keys)) != len(keys):
        raise SpecError("mapping 'metadata': a column is named twice")
    return paths


def _check_key(key: str, where: str) -> None:
    if key not in FIELDS and key not in OPTIONS:
        raise SpecError(
            f"{where}: unknown field {key!r}{did_you_mean(key, [*FIELDS, *OPTIONS])}; "
            f"the fields are {', '.join(FIELDS)}"
        )


def _from_file(text: str | bytes | None) -> dict[str, object]:
    if text is None:
        return {}
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise SpecError(f"--mapping: not a JSON object ({err.msg})") from None
    if not isinstance(raw, dict):
        raise SpecError('--mapping: not a JSON object ({"id": "...", "email": "...", ...})')
    for key in raw:
        _check_key(key, "--mapping")
    return raw


def _from_flags(flags: Sequence[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for flag in flags:
        key, sep, value = flag.partition("=")
        key = key.strip()
        if not sep:
            raise SpecError(f"--map {flag!r}: expected FIELD=PATH, e.g. --map email=mail")
        _check_key(key, f"--map {flag!r}")
        if key in out:
            raise SpecError(f"--map: {key!r} is given twice")
        out[key] = value
    return out


def _where(flags: Sequence[str]) -> tuple[tuple[FieldPath, str], ...]:
    """``--where PATH=VALUE`` flags → (path, value) pairs; the value is compared as text."""
    where = []
    for flag in flags:
        path, sep, value = flag.partition("=")
        if not sep or not path.strip():
            raise SpecError(f"--where {flag!r}: expected PATH=VALUE, e.g. --where model=auth.user")
        parts = tuple(path.strip().split("."))
        if any(not p for p in parts) or len(parts) > _MAX_PATH:
            raise SpecError(f"--where {flag!r}: {path!r} is not a column name or a dotted path (a.b.c)")
        where.append((FieldPath(path.strip(), parts), value.strip()))
    return tuple(where)


def load_spec(
    file_text: str | bytes | None, flags: Sequence[str] = (), where: Sequence[str] = ()
) -> TableSpec:
    """The mapping file's JSON text (or None), the ``--map`` flags and the ``--where`` flags → a
    :class:`TableSpec`."""
    raw = {**_from_file(file_text), **_from_flags(flags)}
    if "id" not in raw:
        raise SpecError("the mapping names no 'id' (--map id=COLUMN): every user needs a stable id")
    if "email" not in raw:
        raise SpecError("the mapping names no 'email' (--map email=COLUMN)")
    form = raw.pop("hash_form", None)
    if form is not None and (not isinstance(form, str) or not form.strip()):
        raise SpecError("mapping 'hash_form': give a hash form name as text")
    metadata = _metadata(raw.pop("metadata")) if "metadata" in raw else ()
    fields = {key: _path(key, value) for key, value in raw.items()}
    return TableSpec(
        fields=fields, metadata=metadata, hash_form=form.strip() if form else None, where=_where(where)
    )


def for_columns(spec: TableSpec, columns: Sequence[str]) -> tuple[TableSpec, list[str]]:
    """The mapping with its paths spelled as a CSV header spells its columns, and the paths
    that match no column. Columns match exactly, else ignoring case and surrounding blanks; a
    dotted path matches the longest column name it starts with (``user.email`` may be a column)."""
    exact = {c: c for c in columns}
    folded: dict[str, str] = {}
    for column in columns:
        folded.setdefault(column.strip().casefold(), column)
    missing: list[str] = []

    def spelled(path: FieldPath) -> FieldPath:
        for cut in range(len(path.parts), 0, -1):
            name = ".".join(path.parts[:cut])
            column = exact.get(name) or folded.get(name.strip().casefold())
            if column is not None:
                return dataclasses.replace(path, parts=(column, *path.parts[cut:]))
        missing.append(path.text)
        return path

    fields = {key: spelled(path) for key, path in spec.fields.items()}
    metadata = tuple(spelled(path) for path in spec.metadata)
    where = tuple((spelled(path), value) for path, value in spec.where)
    return dataclasses.replace(spec, fields=fields, metadata=metadata, where=where), missing
