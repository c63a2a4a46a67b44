"""Every source, found rather than listed: the built-in packages here and the installed plugins.

A built-in source is a package ``transforms/sources/<name>/`` whose ``command.py`` exports a
:class:`~transforms.sources.declaration.SourceDescription` as ``DESCRIPTION``; a plugin is an
installed distribution whose entry point of the group ``zitadel_beam.sources`` names one
(``toy = toy_source.command:DESCRIPTION`` in its ``entry_points.txt``). Both are found the first
time the registry is read, built-in sources first, by name. Adding a source edits no module here.

The command line, ``--help``, the Flex Template, the ``--state`` refusal, the first look at a
file (``input_shape``) and the summary's renamed counters read the sources from here. Workers
never read this registry: what the sync needs of a source travels in its ``SyncOptions``.

Example::

    kind("keycloak").records["keycloak-user"].flag      # "--include-disabled"
    [d.name for d in descriptions()]                     # ["auth0", "firebase", "keycloak", "table", "zitadel"]
    register(DESCRIPTION)                                # a plugin's tests: SourceDescriptionError if a part is missing
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
from pathlib import Path

from transforms.sources.declaration import SourceDescription, declared_flags, missing_parts
from transforms.sources.source_parts import SourceKind

__all__ = [
    "ENTRY_POINTS",
    "descriptions",
    "get",
    "kinds",
    "kind",
    "syncing_names",
    "takes",
    "register",
    "unregister",
    "SourceDescriptionError",
]

ENTRY_POINTS = "zitadel_beam.sources"  # the entry point group of a plugin's sources
_HERE = Path(__file__).resolve().parent


class SourceDescriptionError(ValueError):
    """A source described with a part missing or malformed: a bug in that source, named at once."""


_SOURCES: dict[str, SourceDescription] = {}
_BUILT_IN: set[str] = set()
_found = False


def _built_in() -> list[SourceDescription]:
    """The description of every package here that has a ``command`` module, by package name."""
    found = []
    for package in sorted(info.name for info in pkgutil.iter_modules([str(_HERE)]) if info.ispkg):
        if not (_HERE / package / "command.py").is_file():
            continue  # a package of shared parts, not a source
        module = importlib.import_module(f"transforms.sources.{package}.command")
        description = getattr(module, "DESCRIPTION", None)
        if not isinstance(description, SourceDescription) or description.name != package:
            raise SourceDescriptionError(
                f"source {package!r}: transforms/sources/{package}/command.py has no DESCRIPTION "
                "whose kind is named after its package"
            )
        found.append(description)
    return found


def _plugins() -> list[SourceDescription]:
    """The descriptions installed distributions offer through the entry point group."""
    found = []
    for entry in sorted(importlib.metadata.entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        description = entry.load()
        if not isinstance(description, SourceDescription) or description.name != entry.name:
            raise SourceDescriptionError(
                f"source {entry.name!r}: the entry point {entry.value} is not a SourceDescription of that name"
            )
        found.append(description)
    return found


def _find() -> None:
    global _found
    if _found:
        return
    _found = True  # set first: a source's own import that reads the registry finds it filling
    for description in _built_in():
        _add(description)
        _BUILT_IN.add(description.name)
    for description in _plugins():
        _add(description)


def descriptions() -> tuple[SourceDescription, ...]:
    """Every source, the built-in ones first, in the order ``zitadel-beam migrate --help`` lists them."""
    _find()
    return tuple(_SOURCES.values())


def get(name: str) -> SourceDescription:
    """The source ``name``; KeyError naming it when no source has that name."""
    _find()
    try:
        return _SOURCES[name]
    except KeyError:
        raise KeyError(f"no source named {name!r} is registered") from None


def kinds() -> tuple[SourceKind, ...]:
    """Every source's kind (the part read below the command line), in the registry's order."""
    return tuple(d.kind for d in descriptions())


def kind(name: str) -> SourceKind:
    """The kind of the source ``name``; KeyError naming it when no source has that name."""
    return get(name).kind


def syncing_names() -> tuple[str, ...]:
    """The sources that describe their user records, and so take ``--state`` (docs/sync.md)."""
    return tuple(d.name for d in descriptions() if d.kind.syncs)


def takes(shape: str) -> str:
    """What reads files of ``shape`` (a key of a kind's ``shapes.shapes``), in words: the command and
    the flag whose reader takes that shape first (``"migrate keycloak --realm reads it"``); "" when none."""
    for description in descriptions():
        readers = description.kind.shapes.readers
        for flag in declared_flags(description.add_arguments):
            reader = flag.reads[1] if flag.reads is not None else None
            if reader is not None and readers.get(reader, ())[:1] == (shape,):
                return f"migrate {description.name} {flag.flag} reads it"
    return ""


def register(description: SourceDescription) -> SourceDescription:
    """Add a source the way an installed plugin is added (a plugin's tests); SourceDescriptionError
    naming each part that is missing, or a name or shape already taken."""
    _find()
    _add(description)
    return description


def unregister(name: str) -> None:
    """Withdraw a source added with :func:`register`; the built-in ones stay."""
    if name not in _BUILT_IN:
        _SOURCES.pop(name, None)


def _add(new: SourceDescription) -> None:
    name = getattr(getattr(new, "kind", None), "name", None)
    if not isinstance(new, SourceDescription):
        raise SourceDescriptionError(f"source {name!r}: not a SourceDescription")
    problems = missing_parts(new)
    if problems:
        raise SourceDescriptionError(f"source {name!r}: missing or malformed: {'; '.join(problems)}")
    if new.name in _SOURCES:
        raise SourceDescriptionError(f"source {new.name!r}: a source of that name is registered")
    for other in _SOURCES.values():
        mine, theirs = new.kind, other.kind
        taken = (set(mine.records) & set(theirs.records)) | (
            set(mine.shapes.shapes) & set(theirs.shapes.shapes)
        )
        if taken:
            raise SourceDescriptionError(
                f"source {new.name!r}: {', '.join(sorted(taken))} already belong to source {other.name!r}"
            )
    _SOURCES[new.name] = new
