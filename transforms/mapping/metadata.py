"""User metadata within ZITADEL's limits: one check for every source.

ZITADEL keeps a metadata key of 1 to 200 characters and a value of 1 to 500000 bytes
(docs/sync.md#schema-check); an entry outside them would make the import refuse the user, so it is left out and counted instead (each
source adds the count to its ``<source>.metadata_dropped`` counter). A source decides what its
values are (a JSON value, a cell's text) and turns them into bytes with :func:`json_value` or
:func:`text_value`; :func:`metadata_within_limits` keeps what fits and base64-encodes it as the
import body's ``{key, value}`` wants.

Example::

    >>> metadata_within_limits([("plan", json_value("gold")), ("", b"x")])
    ([{'key': 'plan', 'value': 'ImdvbGQi'}], 1)
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

import orjson

from transforms.mapping.validate import MAX_METADATA_KEY, MAX_METADATA_VALUE

__all__ = ["metadata_fits", "metadata_within_limits", "json_value", "text_value"]


def metadata_fits(key: str, value: bytes) -> bool:
    """Whether ZITADEL takes an entry: a key of 1-200 characters, a value of 1-500000 bytes."""
    return 0 < len(key) <= MAX_METADATA_KEY and 0 < len(value) <= MAX_METADATA_VALUE


def metadata_within_limits(pairs: Iterable[tuple[str, bytes]]) -> tuple[list[dict[str, str]], int]:
    """``(key, value bytes)`` pairs → the import's ``[{key, value (base64)}]`` of those that fit,
    and how many were left out for ZITADEL's limits."""
    entries: list[dict[str, str]] = []
    dropped = 0
    for key, value in pairs:
        if metadata_fits(key, value):
            entries.append({"key": key, "value": base64.b64encode(value).decode("ascii")})
        else:
            dropped += 1
    return entries, dropped


def json_value(value: object) -> bytes:
    """A JSON value as metadata bytes: its JSON with sorted keys (the same object, the same bytes)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def text_value(value: str) -> bytes:
    """A text as metadata bytes: UTF-8, lone surrogates (from a JSON ``\\ud800``) kept as they came."""
    return value.encode("utf-8", "surrogatepass")
