"""Reading one mapped field out of a table record, with its type checked: pure, no Beam.

A record is a dict: a CSV row (header → text) or a JSON object. :class:`Values` reads the
fields of one record by :class:`~transforms.sources.table.spec.FieldPath`, parses a CSV
column holding a JSON object once (``raw_user_meta_data.full_name``), and raises
:class:`ValueProblem` with a dead-letter reason for a value of the wrong type or a path through
something that is not an object (docs/table.md#values).

Example::

    values = Values({"id": 7, "meta": '{"plan": "gold"}'})
    values.text(FieldPath("id", ("id",)))          # '7'
    values.raw(FieldPath("meta.plan", ("meta", "plan")))  # 'gold'
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from transforms.common.reasons import Reason
from transforms.sources.table.spec import FieldPath

__all__ = ["Values", "ValueProblem", "role_list"]

_TRUE = frozenset({"true", "t", "1", "yes", "y"})
_FALSE = frozenset({"false", "f", "0", "no", "n", ""})
_MISSING = object()


class ValueProblem(Exception):
    """A field whose value cannot be read; ``reason`` is the dead-letter code."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", bool: "true/false", float: "a number", int: "a number"}.get(
        type(value), "a string"
    )


class Values:
    """The mapped fields of one record (see module docstring)."""

    __slots__ = ("_record", "_parsed")

    def __init__(self, record: dict):
        self._record = record
        self._parsed: dict[str, object] | None = None

    def raw(self, path: FieldPath) -> object:
        """The value at ``path``; ``None`` when it is absent. ValueProblem for a bad path."""
        parts = path.parts
        value = self._record.get(parts[0], _MISSING)
        if len(parts) == 1:
            return None if value is _MISSING else value
        if value is _MISSING or value is None or value == "":
            return None
        if type(value) is str:
            value = self._json_column(parts[0], value)
        for depth, part in enumerate(parts[1:], 1):
            if type(value) is not dict:
                where = ".".join(parts[:depth])
                raise ValueProblem(
                    Reason.BAD_PATH,
                    f"{path.text}: {where} is {_kind(value)}, not an object",
                )
            value = value.get(part)
            if value is None:
                return None
        return value

    def _json_column(self, column: str, text: str) -> object:
        """A CSV column that holds a JSON object, parsed once per record."""
        if self._parsed is None:
            self._parsed = {}
        if column not in self._parsed:
            if not text.lstrip().startswith("{"):
                self._parsed[column] = text
            else:
                try:
                    self._parsed[column] = orjson.loads(text)
                except orjson.JSONDecodeError as err:
                    raise ValueProblem(
                        Reason.MALFORMED_JSON, f"column {column!r} does not hold valid JSON ({err.msg})"
                    ) from None
        return self._parsed[column]

    def text(self, path: FieldPath | None) -> str:
        """A text field, trimmed; ``""`` when absent. A whole number is taken as its digits."""
        if path is None:
            return ""
        value = self.raw(path)
        if value is None:
            return ""
        if isinstance(value, str):
            return value.strip()
        if type(value) is int:  # not bool
            return str(value)
        raise ValueProblem(Reason.INVALID_FIELD_TYPE, f"{path.text} is {_kind(value)}, not text")

    def flag(self, path: FieldPath | None) -> bool:
        """A yes/no field: JSON true/false, 1/0, or text true/false/t/f/yes/no/1/0 (any case);
        with ``present(...)``, whether the path holds anything; ``not(...)`` the opposite of the
        value (absent: False). Absent: False."""
        if path is None:
            return False
        value = self.raw(path)
        if path.negate:
            return value not in (None, "") and not self._flag(path, value)
        if path.present:
            return value not in (None, "", False, [], {})
        return self._flag(path, value)

    @staticmethod
    def _flag(path: FieldPath, value: object) -> bool:
        if value is None or type(value) is bool:
            return bool(value)
        if type(value) is int and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _TRUE:
                return True
            if word in _FALSE:
                return False
        raise ValueProblem(
            Reason.INVALID_FIELD_TYPE,
            f"{path.text} is not true or false (give true/false, 1/0, yes/no, or present({path.text}))",
        )

    def roles(self, path: FieldPath | None) -> tuple[str, ...]:
        """Role names, sorted and unique: a JSON list of names, or text (see :func:`role_list`)."""
        if path is None:
            return ()
        value = self.raw(path)
        if value is None:
            return ()
        if isinstance(value, str):
            value = role_list(value)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(sorted({v.strip() for v in value if v.strip()}))
        raise ValueProblem(Reason.INVALID_FIELD_TYPE, f"{path.text} is not a list of role names")

    def present_items(self, paths: tuple[FieldPath, ...]) -> Iterator[tuple[str, object]]:
        """``(path text, value)`` of each path that holds something (metadata)."""
        for path in paths:
            value = self.raw(path)
            if value not in (None, "", [], {}):
                yield path.text, value


def role_list(text: str) -> object:
    """Roles written as text: a JSON array (``["a","b"]``), a PostgreSQL array (``{a,b}``) or
    names separated by commas or semicolons (``a, b``). A JSON array that does not parse is
    returned as the text (then refused as not a list)."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            return orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return text
    if stripped.startswith("{") and stripped.endswith("}"):
        stripped = stripped[1:-1]
    return [name.strip().strip('"') for name in stripped.replace(";", ",").split(",")]
