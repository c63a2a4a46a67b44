"""A ZITADEL export document (``{"orgs": [DataOrg]}``, the v1 form), streamed item by item.

:func:`iter_export` reads the document once with ijson's event stream (never whole: a large
tenant's export is several GB) and yields each org's fields and array items. The planner
(``plan.py``) and the instance moves (``transforms/push/instance_moves.py``: counting an export,
listing its user ids) read exports through it.

Example::

    for org_pos, field, value, is_item in iter_export(handle):
        if field == "":  # the end of an org
            ...
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from typing import IO

import ijson

__all__ = ["ExportFormatError", "ExportItem", "iter_export"]

_ROOTS = ("orgs", "dataOrgsv1.orgs", "data_orgsv1.orgs")

# What iter_export yields: (org position, field, value, is_item). A plain tuple: one per item of
# a multi-GB export, unpacked at once by every reader.
ExportItem = tuple[int, str, object, bool]
_Event = tuple[str, str, object]


class ExportFormatError(ValueError):
    """The document is not a ZITADEL export (or is truncated); the message is one line."""


def _snake_to_camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def iter_export(handle: IO[bytes]) -> Iterator[ExportItem]:
    """Stream ``(org_position, field, value, is_item)`` from an export document.

    Array fields give one tuple per element (``(0, "humanUsers", {...}, True)``), other fields
    one tuple with the whole value (``is_item`` False); ``(pos, "", None, False)`` marks the end of
    an org. snake_case field names are
    folded to lowerCamel (protojson accepts both). Raises ExportFormatError.
    """
    events = ijson.parse(handle, use_float=True)
    top_keys: list[str] = []
    first = None
    try:
        first = next(events, None)
        if first is None:
            raise ExportFormatError("the document is empty")
        if first[1] != "start_map":
            raise ExportFormatError('the document is not a JSON object (an export is {"orgs": [...]})')
        root = yield from _walk(events, top_keys)
    except ijson.JSONError as err:
        if first is None and "premature EOF" in str(err):
            raise ExportFormatError("the document is empty") from None
        if first is None:
            raise ExportFormatError("not a JSON document") from None
        text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ExportFormatError(f"truncated or invalid JSON ({text})") from None
    if root is None:
        if any(k in ("dataOrgs", "data_orgs") for k in top_keys):
            raise ExportFormatError("this is a dataOrgs import body, not an export: push it as it is")
        keys = ", ".join(repr(k) for k in top_keys[:5]) or "none"
        raise ExportFormatError(f"not a ZITADEL export: no 'orgs' array at the top (top-level keys: {keys})")


def _walk(events: Iterable[_Event], top_keys: list[str]) -> Generator[ExportItem, None, str | None]:
    """The events after the document's opening brace → items; returns the orgs array's prefix
    (None when there is none) and collects the top-level keys into ``top_keys``."""
    root: str | None = None
    pos = -1
    field = raw_field = ""
    array_field = False
    builder: ijson.ObjectBuilder | None = None
    depth = 0
    in_array = False
    for prefix, event, value in events:
        if builder is not None:
            builder.event(event, value)
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
            if depth == 0:
                yield pos, field, builder.value, in_array
                builder = None
            continue
        if root is None or root == "<done>":
            if prefix == "" and event == "map_key":
                top_keys.append(str(value))
            elif prefix in _ROOTS and root is None:
                if event != "start_array":
                    raise ExportFormatError(f"'{prefix}' is not an array of organizations")
                root = prefix
            continue
        item = root + ".item"
        if prefix == root and event == "end_array":
            root = "<done>"
            continue
        if prefix == item:
            if event == "start_map":
                pos += 1
            elif event == "end_map":
                yield pos, "", None, False
            elif event == "map_key":
                raw_field, field = str(value), _snake_to_camel(str(value))
                array_field = False
            else:
                raise ExportFormatError(f"organization {pos + 2} is not a JSON object")
            continue
        if prefix == f"{item}.{raw_field}":
            if event == "start_array" and not array_field:
                array_field = True
                continue
            if event == "end_array" and array_field:
                array_field = False
                continue
        # The start of a value: an array element or a singular field.
        in_array = array_field
        builder = ijson.ObjectBuilder()
        builder.event(event, value)
        depth = 1 if event in ("start_map", "start_array") else 0
        if depth == 0:
            yield pos, field, builder.value, in_array
            builder = None
    return root
