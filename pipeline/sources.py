"""The registry of sources: each ``pipeline/migrate_<name>.py``'s ``DESCRIPTION``, in the
command line's order (``zitadel-beam migrate --help``).

Adding a source is writing its package (``transforms/sources/<name>/``, with its ``SourceKind``),
its command module (``pipeline/migrate_<name>.py``, with its ``SourceDescription``), and listing
it here; docs/adding-a-source.md walks through it. A plugin (or a test) registers one at run time
with :func:`register`, which refuses a description missing a part, naming the part.

Example::

    [d.name for d in sources()]                      # ["auth0", "keycloak", "table", "firebase", "zitadel"]
    get("keycloak").kind.records["keycloak-user"]    # what the sync reads of a Keycloak user
    register(DESCRIPTION)                            # SourceDescriptionError if a part is missing
"""

from __future__ import annotations

from pipeline import migrate_auth0, migrate_firebase, migrate_keycloak, migrate_table, migrate_zitadel
from pipeline.source_description import SourceDescription, missing_parts
from transforms.sources.registry import SourceDescriptionError, add_kind, kind, remove_kind

__all__ = ["sources", "get", "register", "unregister", "SourceDescriptionError"]

_BUILT_IN = (
    migrate_auth0.DESCRIPTION,
    migrate_keycloak.DESCRIPTION,
    migrate_table.DESCRIPTION,
    migrate_firebase.DESCRIPTION,
    migrate_zitadel.DESCRIPTION,
)
_SOURCES: dict[str, SourceDescription] = {}


def sources() -> tuple[SourceDescription, ...]:
    """Every registered source, the built-in ones first."""
    return tuple(_SOURCES.values())


def get(name: str) -> SourceDescription:
    """The source ``name`` (KeyError when none has that name)."""
    return _SOURCES[name]


def register(description: SourceDescription) -> SourceDescription:
    """Add a source: its command, its Flex Template part, its kind (for the sync, the first look at
    files and the report). SourceDescriptionError, naming each part, when one is missing or
    malformed or its name is taken."""
    name = getattr(description, "name", None)
    if not isinstance(description, SourceDescription):
        raise SourceDescriptionError(f"source {name!r}: not a SourceDescription")
    problems = missing_parts(description)
    if problems:
        raise SourceDescriptionError(f"source {name!r}: missing or malformed: {'; '.join(problems)}")
    if name in _SOURCES:
        raise SourceDescriptionError(f"source {name!r}: a source of that name is registered")
    if not _kind_listed(description):  # the built-in kinds are listed below the CLI already
        add_kind(description.kind)
    _SOURCES[description.name] = description
    return description


def unregister(name: str) -> None:
    """Withdraw a source added with :func:`register` (a plugin's tests); the built-in ones stay."""
    if name in _SOURCES and _SOURCES[name] not in _BUILT_IN:
        del _SOURCES[name]
        remove_kind(name)


def _kind_listed(description: SourceDescription) -> bool:
    """Whether transforms/sources/registry.py lists the description's kind already (a built-in
    source); SourceDescriptionError when it lists another kind under that name."""
    try:
        listed = kind(description.name)
    except KeyError:
        return False
    if listed is not description.kind:
        raise SourceDescriptionError(
            f"source {description.name!r}: kind is not the one transforms/sources/registry.py lists"
        )
    return True


for _description in _BUILT_IN:
    register(_description)
