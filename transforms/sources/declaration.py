"""What a source declares: its command's flags, the shared flag groups it takes, its plan, its rows.

A source is one package, ``transforms/sources/<name>/``; the name of the package is the source's
name (``migrate <name>``, the prefix of its counters). Its ``command.py`` exports one
:class:`SourceDescription` as ``DESCRIPTION``, which the registry finds (``registry.py``: every
package here that has one, and every installed plugin of the entry point group
``zitadel_beam.sources``). The shared run below the command line (``pipeline/``) builds the rest
from it: the parser with the shared flags of the groups the source declares, ``--help``, the Flex
Template's parameters, the ``--state`` rule, the summary's shared rows and the accounting.

Nothing here imports argparse or Beam: a description is data and functions. Its flags are added
by ``add_arguments(parser)``, which calls ``parser.add_argument`` as on argparse and marks the flags
that name files it reads with :func:`file_flag` (the run's inputs, never written by it, ``gs://``
on a remote runner when its workers read them). Its ``plan(flags, settings)`` checks its own flags,
matches its files and returns a :class:`Plan`: the read transform, the inputs, the manifest's and
the summary's extras. docs/adding-a-source.md walks through one.

Example (the toy source of tests/transforms/sources/test_registry.py, shortened)::

    def add_arguments(parser):
        file_flag(parser, "--users", reads="toy-users", required=True, help="the toy export (NDJSON)")
        parser.add_argument("--include-locked", action="store_true", help="import locked users")

    def plan(flags, settings):
        return Plan(read=lambda pipeline, tmp_dir: pipeline | "Toy" >> ReadToy(flags.users),
                    input_paths=[flags.users], input_names={0: flags.users})

    DESCRIPTION = SourceDescription(
        kind=KIND, help="toy export → import bodies", add_arguments=add_arguments, plan=plan,
        summary_lines=summary_lines, invariant=invariant, groups=frozenset({FlagGroup.HASHES}),
    )
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from transforms.hashing.policy import OnUnsupportedHash
from transforms.sources.source_parts import SourceKind

if TYPE_CHECKING:
    import apache_beam as beam

    from transforms.hashing.policy import HashPolicy
    from transforms.mapping.roles import RoleEntry, RoleSettings
    from transforms.output.manifest import ListedFile
    from transforms.sources.source_parts import ReadUsers

__all__ = [
    "FlagParser",
    "Flags",
    "FlagGroup",
    "IdpLinks",
    "FlexPart",
    "SourceSettings",
    "Plan",
    "DocumentRun",
    "Launcher",
    "OutputPaths",
    "OpenOutputs",
    "SourceDescription",
    "SummaryLine",
    "SummaryLines",
    "Invariant",
    "AddSource",
    "KeepLegacy",
    "file_flag",
    "reads_of",
    "DeclaredFlag",
    "declared_flags",
    "source_name",
]

# One row of a summary table: a label and a count, or a label and a text ("" under a heading).
SummaryLine = tuple[str, int | str]
SummaryLines = Callable[[Mapping[str, int]], list[SummaryLine]]
# ``invariant(counts)`` → ``(holds, text)``: the source's accounting (transforms/common/accounting.py).
Invariant = Callable[[Mapping[str, int]], tuple[bool, str]]
# (passwordless list) → (the list without the users kept, the store of kept hashes)
KeepLegacy = Callable[["ListedFile"], tuple["ListedFile", "ListedFile"]]


class FlagParser(Protocol):
    """What ``add_arguments`` may call: argparse's parser (or one of its groups), as seen without
    importing argparse."""

    def add_argument(self, *name_or_flags: str, **options: Any) -> object: ...

    def add_argument_group(self, title: str) -> FlagParser: ...


class Flags(Protocol):
    """The parsed flags (argparse's namespace): ``flags.users``, by each flag's dest."""

    def __getattr__(self, name: str) -> Any: ...


# The attribute file_flag sets on a flag's argparse action: what the flag's files are read by.
READS = "zitadel_beam_reads"


def file_flag(
    parser: FlagParser, flag: str, *, reads: str | None = None, workers: bool = True, **options: object
) -> object:
    """Add ``flag`` as a flag naming files the run reads: the run never writes them
    (pipeline/preflight.py) and, when ``workers``, Beam's workers read them, so that on a remote
    runner they must be ``gs://`` paths. ``reads``: the key of the reader of ``kind.shapes.readers``
    that takes its files (the first look at a file names this flag for that shape's files)."""
    action = parser.add_argument(flag, **options)
    setattr(action, READS, (workers, reads))
    return action


def reads_of(action: object) -> tuple[bool, str | None] | None:
    """``(read by workers, reader key)`` of a flag added with :func:`file_flag`; None for another flag."""
    found = getattr(action, READS, None)
    return found if isinstance(found, tuple) else None


@dataclasses.dataclass(frozen=True)
class DeclaredFlag:
    """One flag of a source's command, as its ``add_arguments`` declared it."""

    flag: str  # "--users"
    dest: str  # "users"
    options: Mapping[str, object]  # what add_argument was given (action, default, help, ...)
    reads: tuple[bool, str | None] | None  # file_flag's (read by workers, reader key); None


class _Recorder:
    """Stands for a parser: records what ``add_arguments`` declares (no argparse needed)."""

    def __init__(self) -> None:
        self.flags: list[DeclaredFlag] = []

    def add_argument(self, *names: str, **options: object) -> object:
        flag = next(name for name in names if name.startswith("--"))
        dest = str(options.get("dest") or flag[2:].replace("-", "_"))
        recorded = _Recorded()
        self.flags.append(DeclaredFlag(flag, dest, options, None))
        recorded.index = len(self.flags) - 1
        recorded.owner = self
        return recorded

    def add_argument_group(self, title: str) -> FlagParser:
        return self


class _Recorded:
    """The "action" the recorder returns: file_flag's mark lands on the recorded flag."""

    index: int
    owner: _Recorder

    def __setattr__(self, name: str, value: object) -> None:
        if name == READS:
            flag = self.owner.flags[self.index]
            assert isinstance(value, tuple)  # file_flag's (workers, reader)
            self.owner.flags[self.index] = dataclasses.replace(flag, reads=value)
        else:
            object.__setattr__(self, name, value)


def declared_flags(add_arguments: Callable[[FlagParser], None]) -> list[DeclaredFlag]:
    """The flags ``add_arguments`` declares, in its order."""
    recorder = _Recorder()
    add_arguments(recorder)
    return recorder.flags


def source_name(module_name: str) -> str:
    """A built-in source's name: its package's (``transforms.sources.auth0.accounting`` → ``auth0``)."""
    parts = module_name.split(".")
    if parts[:2] != ["transforms", "sources"] or len(parts) < 3:
        raise ValueError(f"{module_name} is not in a source's package (transforms/sources/<name>/)")
    return parts[2]


class FlagGroup(enum.Enum):
    """Shared flags a source takes only when it declares their group (``--help``, the template)."""

    HASHES = "hashes"  # --zitadel-config, --on-unsupported-hash, --bcrypt-min-cost, --bcrypt-max-cost
    LAYOUT = "layout"  # --multiline: the bodies pretty-printed
    ROLES = "roles"  # --project-id, --create-project (docs/roles.md)


@dataclasses.dataclass(frozen=True, kw_only=True)
class IdpLinks:
    """A source whose users link to identity providers: it takes ``--idp-map ALIAS=IDP_ID``.

    ``what``: the entries an alias names, for the flag's help; ``counters``: the prefix of its
    ``+ outcome + "." + provider`` counters (the summary lists aliases that matched none);
    ``reserved``: aliases it cannot map, with the reason shown."""

    what: str
    counters: str
    reserved: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlexPart:
    """The source in the Flex Template: flex_template/metadata.json is written from it
    (``python -m pipeline.flex_metadata``, docs/flex-template.md).

    Its parameters are its command's flags (``--realm-name`` → ``realm_name``) but those the
    template leaves out on purpose (the shared ones in ``pipeline/flex_metadata.py``, this source's
    in ``left_out``). Of its own flags: ``labels``, the console's label of each; ``patterns``, the
    regular expression a value must match (on/off flags, choices and files are derived);
    ``separators``, what separates the values of a repeated flag in one parameter (default ",")."""

    left_out: frozenset[str] = frozenset()
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    patterns: Mapping[str, str] = dataclasses.field(default_factory=dict)
    separators: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SourceSettings:
    """What a source's plan reads of the shared flags, checked by the shared run."""

    metadata: bool = False
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.DEAD_LETTER
    email_fallback: str | None = None
    hash_policy: HashPolicy | None = None
    # Blocked (or disabled) users are read: its flag that imports them, or --state (the sync
    # then deactivates those in ZITADEL and still refuses the new ones without the flag).
    read_blocked: bool = False
    idp_map: tuple[tuple[str, str], ...] = ()  # --idp-map, checked
    roles: RoleSettings | None = None  # --project-id given (FlagGroup.ROLES)
    push_api: str | None = None  # --push-url's --api, None without --push-url
    outputs: tuple[str, ...] = ()  # the run's output paths: reached before a gs:// match


AddSource = Callable[["beam.Pipeline", str], "ReadUsers"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Plan:
    """What a source's plan returns: how to read it, and what the run reports of it.

    ``read(pipeline, tmp_dir)`` adds the source's read transform (``tmp_dir``: the run's temporary
    folder, for spill files) and returns its ``ReadUsers``. ``input_paths``: what the live line
    and the reachability check look at; ``input_names``: file index → path (a cut file is named).
    ``manifest``: the manifest's extra fields; ``summary``: rows after the shared ones (rows that
    need the plan, such as the files read). ``realm``: the ids of users without one need it
    (``UserRecordKind.ids``). ``defined_roles``: the roles the export defines (docs/roles.md).
    ``keep_legacy``: a store of hashes the run keeps for the companion (docs/companion.md)."""

    read: AddSource
    input_paths: Sequence[str]
    input_names: Mapping[int, str]
    manifest: Mapping[str, object] = dataclasses.field(default_factory=dict)
    summary: SummaryLines | None = None
    realm: str | None = None
    defined_roles: list[RoleEntry] | None = None
    keep_legacy: KeepLegacy | None = None


class OutputPaths(Protocol):
    """Where a run's outputs go (the shared run's ``OutputLayout``)."""

    @property
    def output(self) -> str: ...

    @property
    def tmp_dir(self) -> str: ...

    @property
    def manifest(self) -> str: ...

    @property
    def dead_letter(self) -> str: ...


class OpenOutputs(Protocol):
    """A run's outputs, taken and locked (the shared run's ``RunOutputs``)."""

    @property
    def layout(self) -> OutputPaths: ...

    def close(self) -> None: ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class Launcher:
    """The shared run's parts a source of one document runs itself with (``pipeline/document_run.py``
    fills them in: outputs and their lock, Beam, final names, manifest, signals, checks, summary)."""

    max_batch_size: int
    output_layout: Callable[[str, str | None], OutputPaths]
    open_outputs: Callable[..., OpenOutputs]  # (layout, pipeline_args, command=, break_lock=)
    make_pipeline: Callable[[list[str]], beam.Pipeline]
    run_pipeline: Callable[..., object]  # (pipeline, work_dir) → Beam's result
    counters_from_result: Callable[[object], dict[str, int]]
    raise_output_failure: Callable[..., None]  # (error, layout): a full disk, said in one line
    finalize_outputs: Callable[..., tuple[list[dict], int, str]]  # (outputs) → bodies, dead letters
    write_manifest: Callable[..., None]  # (path, manifest)
    finishing: Callable[[], AbstractContextManager[None]]  # a signal waits until the outputs are final
    check_written: Callable[[str], int]  # the manifest → 0, or 3 when the outputs disagree
    summary_table: Callable[[str, list[SummaryLine]], str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class DocumentRun:
    """A source whose one document is cut into bodies as it is, not read user by user (a ZITADEL
    export): ``run(flags, pipeline_args, launcher)`` is its whole run, given the shared run's
    parts; it cannot sync and has no accounting of users. The shared output flags are added
    after its own, with these help texts."""

    run: Callable[[Flags, list[str], Launcher], int]
    batch_help: str
    dead_letter_help: str
    multiline_help: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class SourceDescription:
    """Everything the tool knows of one source, in one place (see the module docstring)."""

    kind: SourceKind  # records (the sync), file shapes (the first look), counters renamed
    help: str  # the command's line in `zitadel-beam migrate --help`
    add_arguments: Callable[[FlagParser], None]  # its own flags (file_flag for files it reads)
    # A source of users: plan, its own summary rows (the shared run adds the shared ones) and its
    # accounting. A source of one document: ``document`` instead.
    plan: Callable[[Flags, SourceSettings], Plan] | None = None
    summary_lines: SummaryLines | None = None
    invariant: Invariant | None = None
    document: DocumentRun | None = None
    groups: frozenset[FlagGroup] = frozenset()
    idp_links: IdpLinks | None = None
    defaults: Mapping[str, object] = dataclasses.field(default_factory=dict)  # shared flags' defaults
    flex: FlexPart | None = None  # None: not offered by the Flex Template
    # Files it reads without a flag naming them (Auth0's ./passwords.json): flag → paths.
    implied_files: Callable[[Flags], dict[str, list[str]]] | None = None
    beam_flags: bool = True  # flags it does not know are Beam's pipeline options

    @property
    def name(self) -> str:
        return self.kind.name


def missing_parts(description: SourceDescription) -> list[str]:
    """The parts of ``description`` missing or malformed, each named (``[]``: it is whole)."""
    from transforms.sources.source_parts import missing_parts as kind_missing_parts

    problems = []
    if not callable(getattr(description, "add_arguments", None)):
        problems.append("add_arguments (a function)")
    if not isinstance(description.help, str) or not description.help.strip():
        problems.append("help (the command's one line)")
    if not isinstance(description.kind, SourceKind):
        problems.append("kind (its SourceKind: records, shapes; transforms/sources/<name>/source.py)")
        return problems
    problems += [f"kind.{problem}" for problem in kind_missing_parts(description.kind)]
    if description.document is not None:
        if not isinstance(description.document, DocumentRun) or description.kind.syncs:
            problems.append("document (a DocumentRun, of a source that cannot sync)")
    else:
        for part in ("plan", "summary_lines", "invariant"):
            if not callable(getattr(description, part, None)):
                problems.append(f"{part} (a source of users has its plan, summary rows and accounting)")
    if not isinstance(description.groups, frozenset) or not all(
        isinstance(group, FlagGroup) for group in description.groups
    ):
        problems.append("groups (a frozenset of FlagGroup)")
    if description.idp_links is not None and not isinstance(description.idp_links, IdpLinks):
        problems.append("idp_links (an IdpLinks, or None: no --idp-map)")
    if description.flex is not None and not isinstance(description.flex, FlexPart):
        problems.append("flex (a FlexPart, or None: not in the Flex Template)")
    return problems
