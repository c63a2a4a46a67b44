"""Accounting for the source fields an import does not carry (docs/fields-not-carried.md).

Every source counts the users written who had a field the import cannot take
(``not_carried.<source>.<field>``) and the fields the tool does not know at all
(``unknown_field.<source>.<field>``, at most :data:`MAX_UNKNOWN_FIELD_NAMES` names per worker, the
rest as ``other``); the launcher reads the counters into the manifest (pipeline/report.py).
The work per record is one key-set difference, so it stays cheap at millions of users.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from transforms.common import counters
from transforms.common.records import intern_tallies

__all__ = ["MAX_UNKNOWN_FIELD_NAMES", "present", "counter_safe", "unknown_fields", "FieldTally"]

# Distinct unknown field names counted by name (per worker, and again in the manifest).
MAX_UNKNOWN_FIELD_NAMES = 100

_COUNTER_SAFE = re.compile(r"[^a-z0-9_-]+")
_FIELD_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
_SAFE_NAMES: dict[str, str] = {}


def present(value: object) -> bool:
    """A field counts as had when it holds something (not null, "", [], {}, 0 or false)."""
    return value not in (None, "", [], {}, 0, False)


def counter_safe(name: object) -> str:
    """A provider, alias or credential type as a counter-name part (``[a-z0-9_-]``, at most 40)."""
    if not isinstance(name, str):
        return "unknown"
    safe = _SAFE_NAMES.get(name)
    if safe is None:  # a handful of distinct providers per tenant: remember them
        safe = _COUNTER_SAFE.sub("_", name.strip().lower())[:40] or "unknown"
        if len(_SAFE_NAMES) < 10_000:
            _SAFE_NAMES[name] = safe
    return safe


def unknown_fields(record: Mapping[str, object], known: frozenset[str]) -> list[str]:
    """Counter-safe names of the keys of ``record`` that are not in ``known``."""
    extra = record.keys() - known
    return [_FIELD_SAFE.sub("_", k)[:60] or "_" for k in extra] if extra else []


class FieldTally:
    """One worker's names of the fields not carried and of unknown fields, for one source.

    ``not_carried`` names the fields the import cannot take (with this run's flags); a record
    counts for one of them when its value is :func:`present`. :meth:`names` gives the counter
    names a record's user adds one to once it is written (they travel in its row's ``tallies``,
    transforms/common/records.py, and are counted after de-duplication). Work per record is small
    because exports repeat a handful of key layouts: the key-set arithmetic is done once per
    layout (the keys in their order), and the names once per outcome (per-record set operations
    and counter names cost ~4 s per million users).

    >>> tally = FieldTally("auth0", frozenset({"email", "picture"}), frozenset({"picture"}))
    >>> tally.names({"email": "a@b.co", "picture": "p.png", "shoe": 4})
    ('not_carried.auth0.picture', 'unknown_field.auth0.shoe')
    """

    _MAX_LAYOUTS = 10_000

    def __init__(self, source: str, known: frozenset[str], not_carried: frozenset[str]):
        self._source = source
        self._known = known | not_carried
        self._not_carried = not_carried
        self._names: set[str] = set()
        self._layouts: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {}
        self._outcomes: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, ...]] = {}

    def names(self, record: Mapping[str, object], extra: tuple[str, ...] = ()) -> tuple[str, ...]:
        """``not_carried.<source>.<field>`` and ``unknown_field.<source>.<name>`` of ``record`` (and
        of ``extra``, more names not carried that the caller found)."""
        layout = tuple(record)
        cached = self._layouts.get(layout)
        if cached is None:
            cached = self._layout(record)
            if len(self._layouts) < self._MAX_LAYOUTS:
                self._layouts[layout] = cached
        candidates, unknown_keys = cached
        had = tuple([k for k in candidates if present(record[k])]) if candidates else ()
        # A key holding null (or "") is no data: JSON exports write "totp_secret": null for everyone.
        unknown = (
            tuple([name for key, name in unknown_keys if record[key] is not None and record[key] != ""])
            if unknown_keys
            else ()
        )
        outcome = (had + extra if extra else had, unknown)
        names = self._outcomes.get(outcome)
        if names is None:
            names = intern_tallies(
                [f"{counters.NOT_CARRIED}{self._source}.{field}" for field in outcome[0]]
                + [f"{counters.UNKNOWN_FIELD}{self._source}.{field}" for field in unknown]
            )
            if len(self._outcomes) < self._MAX_LAYOUTS:
                self._outcomes[outcome] = names
        return names

    def _layout(self, record: Mapping[str, object]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        """The layout's fields not carried, and its unknown keys with their counter-safe names."""
        keys = record.keys()
        pairs = []
        for field, key in sorted((_FIELD_SAFE.sub("_", k)[:60] or "_", k) for k in keys - self._known):
            if field not in self._names:
                if len(self._names) >= MAX_UNKNOWN_FIELD_NAMES:
                    field = "other"
                else:
                    self._names.add(field)
            pairs.append((field, key))
        pairs.sort()
        return tuple(sorted(self._not_carried.intersection(keys))), tuple(
            (key, field) for field, key in pairs
        )
