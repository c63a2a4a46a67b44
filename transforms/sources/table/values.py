"""Reading one mapped field out of a table record, with its type checked: pure, no Beam.

A record is a dict: a CSV row (header → text) or a JSON object. :class:`Values` reads the
fields of one record by :class:`~transforms.sources.table.spec.FieldPath`, parses a CSV
column holding a JSON object once (``raw_user_meta_data.full_name``), and raises
:class:`ValueProblem` with a dead-letter reason for a value of the wrong type or a path through
something that is not an object (docs/table.md#values). A part ``[KEY=VALUE]`` reads the first
object of a list whose ``KEY`` holds ``VALUE``; the tests and forms of a field's expression
(``in``, ``after_now``, ``among``, ``all``, ``any``, ``first``) are evaluated here
(docs/table.md#expressions).

Example::

    values = Values({"id": 7, "meta": '{"plan": "gold"}'})
    values.text(FieldPath("id", ("id",)))          # '7'
    values.raw(FieldPath("meta.plan", ("meta", "plan")))  # 'gold'
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Iterator

import orjson

from transforms.common.reasons import Reason
from transforms.sources.table.spec import Expr, FieldPath

__all__ = ["Values", "ValueProblem", "role_list", "select", "several", "timestamp"]

_TRUE = frozenset({"true", "t", "1", "yes", "y"})
_FALSE = frozenset({"false", "f", "0", "no", "n", ""})
_MISSING = object()
# What separates the values of a multi-valued cell (Clerk's "a|b", "a,b").
_SEVERAL = re.compile(r"[|,;]")
# ISO 8601 and the database forms of a timestamp: a space or T, fractions of up to 9 digits (SQL
# Server writes 7), an offset as Z, +00, +0000 or +00:00 (PostgreSQL writes +00), or none (UTC).
_DATE = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?)?"
    r"\s*(Z|[+-]\d\d(?::?\d\d)?)?",
    re.IGNORECASE,
)
# Epoch numbers above this are milliseconds (1e11 seconds is the year 5138).
_MILLIS_FROM = 100_000_000_000


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

    __slots__ = ("_record", "_parsed", "_null", "_now")

    def __init__(self, record: dict, null_text: str | None = None, now: float | None = None):
        self._record = record
        self._parsed: dict[str, object] | None = None
        self._null = null_text  # the export's text for SQL NULL: absent
        self._now = now  # for after_now(...): the run's time, else the clock's

    def raw(self, path: FieldPath) -> object:
        """The value at ``path``; ``None`` when it is absent. ValueProblem for a bad path."""
        parts = path.parts
        value = self._record.get(parts[0], _MISSING)
        if len(parts) == 1:
            if value is _MISSING or (self._null is not None and value == self._null):
                return None
            return value
        if (
            value is _MISSING
            or value is None
            or value == ""
            or (self._null is not None and value == self._null)
        ):
            return None
        if type(value) is str:
            value = self._json_column(parts[0], value)
        for depth, part in enumerate(parts[1:], 1):
            if part[0] == "[":
                if type(value) is not list:
                    where = ".".join(parts[:depth])
                    raise ValueProblem(Reason.BAD_PATH, f"{path.text}: {where} is {_kind(value)}, not a list")
                value = select(value, part)
                if value is None:
                    return None
                continue
            if type(value) is not dict:
                where = ".".join(parts[:depth])
                raise ValueProblem(
                    Reason.BAD_PATH,
                    f"{path.text}: {where} is {_kind(value)}, not an object",
                )
            value = value.get(part)
            if value is None:
                return None
        return None if self._null is not None and value == self._null else value

    def _json_column(self, column: str, text: str) -> object:
        """A CSV column that holds a JSON object, parsed once per record."""
        if self._parsed is None:
            self._parsed = {}
        if column not in self._parsed:
            if not text.lstrip().startswith(("{", "[")):
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
        value = self._first(path.expr) if path.expr is not None else self.raw(path)
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
        if path.expr is not None:
            return self._test(path.expr)
        value = self.raw(path)
        if path.negate:
            return value not in (None, "") and not self._flag(path, value)
        if path.present:
            return value not in (None, "", False, [], {})
        return self._flag(path, value)

    def _test(self, expr: Expr) -> bool:
        """A yes/no expression's answer for this record (docs/table.md#expressions)."""
        op, args = expr.op, expr.args
        if op in ("all", "any", "not"):
            answers = (self._test(a) if isinstance(a, Expr) else self._leaf(a, op) for a in args)
            if op == "not":
                return not next(answers)
            return all(answers) if op == "all" else any(answers)
        path = args[0]
        assert isinstance(path, FieldPath)
        value = self.raw(path)
        if op == "present":
            return value not in (None, "", False, [], {})
        if op == "in":
            word = _word(value)
            return word is not None and word in {str(a).strip().casefold() for a in args[1:]}
        if op == "after_now":
            moment = timestamp(value, path.text)
            return moment is not None and moment > (self._now if self._now is not None else time.time())
        if op == "among":
            listed = args[1]
            assert isinstance(listed, FieldPath)
            word = _word(value)
            return word is not None and word in {v.casefold() for v in several(self.raw(listed))}
        raise ValueProblem(
            Reason.INVALID_FIELD_TYPE, f"{op}(...) is not a yes/no test"
        )  # not reached: spec.py checks

    def _leaf(self, path: object, op: str) -> bool:
        """A path inside all/any/not: its yes/no value (``not(PATH)`` nested keeps the top-level
        rule: absent or empty is not a no)."""
        assert isinstance(path, FieldPath)
        value = self.raw(path)
        if op == "not" and value in (None, ""):
            return True  # not(...) of absent: false once negated
        return self._flag(path, value)

    def _first(self, expr: Expr) -> object:
        """``first(PATH)``: the first of the values at the path (a list, or a cell of several)."""
        path = expr.args[0]
        assert isinstance(path, FieldPath)
        value = self.raw(path)
        if isinstance(value, (str, list)):
            return next(iter(several(value)), None)
        return value

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


def select(items: list, part: str) -> object:
    """``[KEY=VALUE]`` in a list of objects → the first object whose KEY holds VALUE (compared as
    text), ``None`` when none does."""
    key, _, wanted = part[1:-1].partition("=")
    for item in items:
        if type(item) is dict and _word(item.get(key), fold=False) == wanted:
            return item
    return None


def several(value: object) -> list[str]:
    """The values of a multi-valued cell: a list's text items, or text cut at ``|``, ``,`` or
    ``;`` (Clerk's ``a|b``); trimmed, empty ones left out. A JSON array as text is read as one."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                pass
        if isinstance(value, str):
            return [v.strip() for v in _SEVERAL.split(value) if v.strip()]
    if isinstance(value, list):
        return [w for w in (_word(v, fold=False) for v in value) if w]
    word = _word(value, fold=False)
    return [word] if word else []


def _word(value: object, fold: bool = True) -> str | None:
    """A value as text to compare: trimmed (case-folded with ``fold``), a whole number as its
    digits, true/false as ``true``/``false``; None when absent or an object or list."""
    if value is None or isinstance(value, (dict, list)):
        return None
    if type(value) is bool:
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    else:
        text = str(value).strip()
    return text.casefold() if fold else text


def timestamp(value: object, where: str) -> float | None:
    """A date → epoch seconds: ISO 8601 or a database's text (``2126-01-01 00:00:00+00``,
    ``9999-12-31 23:59:59.9999999 +00:00``; without an offset, UTC), epoch seconds or
    milliseconds (a number, or digits), PostgreSQL's ``infinity``/``-infinity``. None when absent;
    ValueProblem naming the path when it is not a date."""
    if value is None or value == "":
        return None
    if type(value) is not bool and isinstance(value, (int, float)):
        return value / 1000 if abs(value) >= _MILLIS_FROM else float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("infinity", "-infinity"):
            return float("inf") if text[0] != "-" else float("-inf")
        if re.fullmatch(r"-?\d+(\.\d+)?", text):
            return timestamp(float(text), where)
        match = _DATE.fullmatch(text)
        if match:
            year, month, day, hour, minute, second, fraction, offset = match.groups()
            try:
                moment = datetime.datetime(
                    int(year),
                    int(month),
                    int(day),
                    int(hour or 0),
                    int(minute or 0),
                    int(second or 0),
                    tzinfo=_zone(offset),
                )
            except ValueError:
                moment = None
            if moment is not None:
                return moment.timestamp() + (float(f"0.{fraction}") if fraction else 0.0)
    raise ValueProblem(
        Reason.INVALID_FIELD_TYPE,
        f"{where} is not a date (ISO 8601 like 2026-01-31T12:00:00Z, or epoch seconds or milliseconds)",
    )


def _zone(offset: str | None) -> datetime.timezone:
    if offset is None or offset.upper() == "Z":
        return datetime.timezone.utc
    digits = offset[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) > 2 else 0)
    return datetime.timezone(datetime.timedelta(minutes=-minutes if offset[0] == "-" else minutes))


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
