"""Every source's :class:`~transforms.sources.source_parts.SourceKind`, in the command line's order.

The launcher's first look at a file (``input_shape``), the summary's renamed counters
(``pipeline/report.py``) and the ``--state`` refusal of a source that cannot sync read the sources
from here; ``pipeline/sources.py`` registers a new source's kind here with its command. Workers
never read this registry: what the sync needs of a source travels in its ``SyncOptions``.

Example::

    kind("keycloak").records["keycloak-user"].flag      # "--include-disabled"
    [k.name for k in kinds() if k.syncs]                # ["auth0", "keycloak", "table", "firebase"]
"""

from __future__ import annotations

from transforms.sources.auth0.source import KIND as AUTH0
from transforms.sources.firebase.source import KIND as FIREBASE
from transforms.sources.keycloak.source import KIND as KEYCLOAK
from transforms.sources.source_parts import SourceKind, missing_parts
from transforms.sources.table.source import KIND as TABLE
from transforms.sources.zitadel.source import KIND as ZITADEL

__all__ = ["kinds", "kind", "syncing_names", "add_kind", "remove_kind", "SourceDescriptionError"]


class SourceDescriptionError(ValueError):
    """A source described with a part missing or malformed: a bug in that source, named at once."""


_KINDS: dict[str, SourceKind] = {k.name: k for k in (AUTH0, KEYCLOAK, TABLE, FIREBASE, ZITADEL)}


def kinds() -> tuple[SourceKind, ...]:
    """Every source's kind, the built-in ones first, in the order ``zitadel-beam --help`` lists them."""
    return tuple(_KINDS.values())


def kind(name: str) -> SourceKind:
    """The kind of the source ``name``; KeyError naming it when no source has that name."""
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"no source named {name!r} is registered") from None


def syncing_names() -> tuple[str, ...]:
    """The sources that describe their user records, and so take ``--state`` (docs/sync.md)."""
    return tuple(k.name for k in _KINDS.values() if k.syncs)


def add_kind(new: SourceKind) -> None:
    """Register a source's kind (``pipeline.sources.register`` does, with its command);
    SourceDescriptionError naming each part that is missing, or a name or shape already taken."""
    problems = missing_parts(new)
    if problems:
        raise SourceDescriptionError(f"source {new.name!r}: missing or malformed: {'; '.join(problems)}")
    if new.name in _KINDS:
        raise SourceDescriptionError(f"source {new.name!r}: a source of that name is registered")
    for other in _KINDS.values():
        taken = (set(new.records) & set(other.records)) | (set(new.shapes.shapes) & set(other.shapes.shapes))
        if taken:
            raise SourceDescriptionError(
                f"source {new.name!r}: {', '.join(sorted(taken))} already belong to source {other.name!r}"
            )
    _KINDS[new.name] = new


def remove_kind(name: str) -> None:
    """Withdraw a source registered with :func:`add_kind` (a plugin's tests)."""
    _KINDS.pop(name, None)


for _builtin in kinds():  # the built-in sources are held to the same rules at import
    if missing_parts(_builtin):
        raise SourceDescriptionError(f"source {_builtin.name!r}: {'; '.join(missing_parts(_builtin))}")
