"""Accounting for the source fields an import does not carry (docs/fields-not-carried.md).

Both sources count, per worker, the users who had a field the import cannot take
(``not_carried.<source>.<field>``) and the fields the tool does not know at all
(``unknown_field.<source>.<field>``, at most :data:`MAX_UNKNOWN_FIELD_NAMES` names per worker, the
rest as ``other``); the launcher reads the counters into the manifest (pipeline/report.py).
The work per record is one key-set difference, so it stays cheap at millions of users.
"""
from __future__ import annotations

import collections
import re
from typing import Any, Iterable, Mapping

__all__ = ["MAX_UNKNOWN_FIELD_NAMES", "present", "counter_safe", "unknown_fields", "FieldTally"]

# Distinct unknown field names counted by name (per worker, and again in the manifest).
MAX_UNKNOWN_FIELD_NAMES = 100

_COUNTER_SAFE = re.compile(r"[^a-z0-9_-]+")
_FIELD_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
_SAFE_NAMES: dict[str, str] = {}


def present(value: Any) -> bool:
    """A field counts as had when it holds something (not null, "", [], {}, 0 or false)."""
    return value not in (None, "", [], {}, 0, False)


def counter_safe(name: Any) -> str:
    """A provider, alias or credential type as a counter-name part (``[a-z0-9_-]``, at most 40)."""
    if not isinstance(name, str):
        return "unknown"
    safe = _SAFE_NAMES.get(name)
    if safe is None:  # a handful of distinct providers per tenant: remember them
        safe = _COUNTER_SAFE.sub("_", name.strip().lower())[:40] or "unknown"
        if len(_SAFE_NAMES) < 10_000:
            _SAFE_NAMES[name] = safe
    return safe


def unknown_fields(record: Mapping[str, Any], known: frozenset[str]) -> list[str]:
    """Counter-safe names of the keys of ``record`` that are not in ``known``."""
    extra = record.keys() - known
    return [_FIELD_SAFE.sub("_", k)[:60] or "_" for k in extra] if extra else []


class FieldTally:
    """One worker's counts of fields not carried and of unknown fields, for one source.

    >>> counts = collections.Counter()
    >>> FieldTally("auth0", frozenset({"email"})).count({"email": "a@b.co", "shoe": 4}, ["picture"], counts)
    >>> sorted(counts)
    ['not_carried.auth0.picture', 'unknown_field.auth0.shoe']
    """

    def __init__(self, source: str, known: frozenset[str]):
        self._source = source
        self._known = known
        self._names: set[str] = set()

    def count(self, record: Mapping[str, Any], not_carried: Iterable[str],
              counts: collections.Counter[str]) -> None:
        for field in not_carried:
            counts[f"not_carried.{self._source}.{field}"] += 1
        for field in unknown_fields(record, self._known):
            if field not in self._names:
                if len(self._names) >= MAX_UNKNOWN_FIELD_NAMES:
                    field = "other"
                else:
                    self._names.add(field)
            counts[f"unknown_field.{self._source}.{field}"] += 1
