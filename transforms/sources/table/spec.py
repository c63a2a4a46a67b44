"""The mapping of ``migrate table``: which column or JSON path holds each field of a user.

Given as a small JSON file (``--mapping=FILE``), as flags (``--map FIELD=PATH``, repeatable,
winning over the file), or both. Pure functions, no Beam; every problem is one line naming the
key and, for a misspelling, the key meant (docs/table.md).

A path is a column name (CSV) or a top-level key (JSON), or dotted keys into a nested object
(``raw_user_meta_data.full_name``); in a CSV file the first part may name a column that holds
a JSON object. ``present(PATH)`` makes a yes/no field true when the path holds anything (a
timestamp like Supabase's ``email_confirmed_at``), ``not(PATH)`` true when the path holds false
(Django's ``is_active`` as ``blocked``). A part ``NAME[KEY=VALUE]`` picks the element of a list
of objects whose ``KEY`` is ``VALUE`` (Cognito's ``Attributes[Name=email].Value``). Tests for the
yes/no fields (``in``, ``after_now``, ``among``, ``all``, ``any``) and ``first(PATH)`` for the
first of several values are :class:`Expr` trees (docs/table.md#expressions).

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
    "Expr",
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
    "phone_verified",
    "password_hash",
    "password_hasher",
    "password_change_required",
    "metadata",
    "roles",
    "blocked",
)
BOOLEAN_FIELDS = frozenset({"email_verified", "phone_verified", "blocked", "password_change_required"})
# Options of the mapping file besides the fields.
OPTIONS = ("hash_form", "null")
_WRAPPED = re.compile(r"^(present|not)\((.+)\)$")
_CALL = re.compile(r"^([a-z_]+)\((.*)\)$", re.DOTALL)
_SELECTOR = re.compile(r"\[([^\[\]=]+)=([^\[\]]*)\]")
# The tests a yes/no field can be (their arguments: paths, or for ``in`` a path then values).
TESTS = ("present", "not", "in", "after_now", "among", "all", "any")
# The one form a text field can take besides a path.
TEXT_FORMS = ("first",)
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
class Expr:
    """A test or form over paths: ``op`` is one of :data:`TESTS` or :data:`TEXT_FORMS`; ``args``
    are paths and tests (``in``: a path, then the values as text)."""

    op: str
    args: tuple[FieldPath | Expr | str, ...]

    def paths(self) -> list[FieldPath]:
        """Every path the expression reads, in order."""
        out: list[FieldPath] = []
        for arg in self.args:
            if isinstance(arg, FieldPath):
                out.append(arg)
            elif isinstance(arg, Expr):
                out += arg.paths()
        return out


@dataclasses.dataclass(frozen=True)
class FieldPath:
    """Where one field is read: the path's parts, and whether a yes/no field means "present".

    A field given as an expression (``in(status,SUSPENDED)``) has it in ``expr``, its whole text in
    ``text`` and the parts of its first path in ``parts``; :meth:`paths` names every path read."""

    text: str  # as given, for messages and metadata keys
    parts: tuple[str, ...]
    present: bool = False  # present(PATH): true when the path holds anything
    negate: bool = False  # not(PATH): true when the path holds false (Django's is_active)
    expr: Expr | None = None

    def paths(self) -> list[FieldPath]:
        """The paths this field reads: itself, or those of its expression."""
        return [self] if self.expr is None else self.expr.paths()


@dataclasses.dataclass(frozen=True)
class TableSpec:
    """A checked mapping: field → path (``metadata``: a tuple of paths), and the options."""

    fields: Mapping[str, FieldPath]
    metadata: tuple[FieldPath, ...] = ()
    hash_form: str | None = None
    # --where PATH=VALUE: the records read as users (all must hold); the others are not selected.
    where: tuple[tuple[FieldPath, str], ...] = ()
    # "null": the text a table export writes for SQL NULL (SQL Server's "NULL"): read as absent.
    null_text: str | None = None

    def paths(self) -> list[FieldPath]:
        """Every path the mapping reads (those inside expressions too), fields first."""
        fields = [p for path in self.fields.values() for p in path.paths()]
        return [*fields, *self.metadata, *(path for path, _ in self.where)]

    def first_parts(self) -> list[str]:
        """The first part of every path: the columns a CSV header must have (or the top keys)."""
        return list(dict.fromkeys(p.parts[0] for p in self.paths()))


def _path(field: str, value: object) -> FieldPath:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"mapping {field!r}: give a column name or a dotted JSON path as text")
    text = value.strip()
    match = _CALL.match(text)
    if match is None or (
        match.group(1) not in TESTS + TEXT_FORMS and not did_you_mean(match.group(1), TESTS + TEXT_FORMS)
    ):
        return _plain(field, text)  # a column named like "max(id)"
    name, inner = match.group(1), match.group(2)
    if name in ("present", "not") and field in BOOLEAN_FIELDS and _WRAPPED.match(text):
        plain = _split_args(inner)
        if len(plain) == 1 and _CALL.match(plain[0]) is None:  # present(PATH), not(PATH)
            return dataclasses.replace(
                _plain(field, plain[0]), present=name == "present", negate=name == "not"
            )
    expr = _expr(field, text, field in BOOLEAN_FIELDS)
    first = expr.paths()[0]
    return FieldPath(text, first.parts, expr=expr)


def _plain(field: str, text: str) -> FieldPath:
    """A path: dotted keys, and ``NAME[KEY=VALUE]`` parts choosing a list element."""
    parts: list[str] = []
    at = 0
    for selector in _SELECTOR.finditer(text):
        parts += _dotted(field, text, text[at : selector.start()], bool(parts))
        parts.append(f"[{selector.group(1).strip()}={selector.group(2).strip()}]")
        at = selector.end()
    parts += _dotted(field, text, text[at:], bool(parts))
    if not parts or parts[0].startswith("[") or len(parts) > _MAX_PATH or any(not p for p in parts):
        raise SpecError(f"mapping {field!r}: {text!r} is not a column name or a dotted path (a.b.c)")
    if any(c in p for p in parts if not p.startswith("[") for c in "[]"):
        raise SpecError(
            f"mapping {field!r}: {text!r}: a list element is chosen by a key of its objects, "
            "NAME[KEY=VALUE] (Attributes[Name=email].Value)"
        )
    return FieldPath(text, tuple(parts))


def _dotted(field: str, text: str, piece: str, after_selector: bool) -> list[str]:
    if piece == "":
        return []
    if after_selector:  # "[Name=email].Value": the dot after a selector starts the next key
        if not piece.startswith("."):
            raise SpecError(f"mapping {field!r}: {text!r}: a '.' must follow ']' (NAME[KEY=VALUE].KEY)")
        piece = piece[1:]
    return piece.split(".")


def _split_args(inner: str) -> list[str]:
    """The arguments of a call, split at the commas outside parentheses and brackets."""
    args, depth, start = [], 0, 0
    for i, char in enumerate(inner):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            args.append(inner[start:i].strip())
            start = i + 1
    args.append(inner[start:].strip())
    return args


def _expr(field: str, text: str, boolean: bool) -> Expr:
    """``text`` (a call) → its :class:`Expr`, every problem one line naming the expression."""
    match = _CALL.match(text)
    assert match is not None
    name, args = match.group(1), _split_args(match.group(2))
    allowed = TESTS if boolean else TEXT_FORMS
    if name not in allowed:
        kind = "yes/no" if boolean else "text"
        other = (
            f"; {name}(...) is for the yes/no fields ({', '.join(sorted(BOOLEAN_FIELDS))})"
            if name in TESTS
            else ""
        )
        raise SpecError(
            f"mapping {field!r}: {text!r}: {name}(...) is not a {kind} form"
            f"{did_you_mean(name, allowed)}; a {kind} field takes a path or {', '.join(f'{t}(...)' for t in allowed)}{other}"
        )
    if any(not a for a in args):
        raise SpecError(f"mapping {field!r}: {text!r}: an argument of {name}(...) is empty")
    counts = {"present": (1, 1), "not": (1, 1), "after_now": (1, 1), "first": (1, 1), "among": (2, 2)}
    low, high = counts.get(name, (2, 100))
    if not low <= len(args) <= high:
        usage = {
            "in": "in(PATH,VALUE,...), e.g. in(status,SUSPENDED,DEPROVISIONED)",
            "among": "among(PATH,LIST_PATH), e.g. among(primary_email_address,verified_email_addresses)",
            "all": "all(TEST,TEST,...), e.g. all(LockoutEnabled,after_now(LockoutEnd))",
            "any": "any(TEST,TEST,...), e.g. any(banned,locked)",
        }.get(name, f"{name}(PATH)")
        raise SpecError(f"mapping {field!r}: {text!r}: give {usage}")
    if name == "in":
        return Expr(name, (_plain(field, args[0]), *args[1:]))
    nested = name in ("not", "all", "any")
    return Expr(
        name, tuple(_expr(field, a, True) if nested and _CALL.match(a) else _plain(field, a) for a in args)
    )


def _metadata(value: object) -> tuple[FieldPath, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not value:
        raise SpecError("mapping 'metadata': give a list of columns or paths (--map metadata=a,b)")
    paths = tuple(_path("metadata", v) for v in value)
    _paths_only("metadata", paths)
    keys = [p.text for p in paths]
    if len(set(keys)) != len(keys):
        raise SpecError("mapping 'metadata': a column is named twice")
    return paths


def _paths_only(field: str, paths: Sequence[FieldPath]) -> None:
    """``metadata`` and ``roles`` read whole values: a path each, never an expression."""
    for path in paths:
        if path.expr is not None:
            raise SpecError(f"mapping {field!r}: {path.text!r}: give a path here, not an expression")


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
    if form is not None and "password_hasher" in raw:
        raise SpecError(
            "mapping: give 'hash_form' (one form for all) or 'password_hasher' (a column per row), not both"
        )
    null_text = raw.pop("null", None)
    if null_text is not None and (not isinstance(null_text, str) or not null_text.strip()):
        raise SpecError("mapping 'null': give the text the export writes for NULL, e.g. \"NULL\"")
    metadata = _metadata(raw.pop("metadata")) if "metadata" in raw else ()
    fields = {key: _path(key, value) for key, value in raw.items()}
    _paths_only("roles", [fields["roles"]] if "roles" in fields else [])
    return TableSpec(
        fields=fields,
        metadata=metadata,
        hash_form=form.strip() if form else None,
        where=_where(where),
        null_text=null_text.strip() if null_text else None,
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

    def spelled_expr(expr: Expr) -> Expr:
        args = tuple(
            spelled(a) if isinstance(a, FieldPath) else spelled_expr(a) if isinstance(a, Expr) else a
            for a in expr.args
        )
        return Expr(expr.op, args)

    def spelled_field(path: FieldPath) -> FieldPath:
        if path.expr is None:
            return spelled(path)
        expr = spelled_expr(path.expr)
        return dataclasses.replace(path, parts=expr.paths()[0].parts, expr=expr)

    fields = {key: spelled_field(path) for key, path in spec.fields.items()}
    metadata = tuple(spelled(path) for path in spec.metadata)
    where = tuple((spelled(path), value) for path, value in spec.where)
    return dataclasses.replace(spec, fields=fields, metadata=metadata, where=where), missing
