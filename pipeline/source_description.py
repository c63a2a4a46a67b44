"""One description per source: its command, its flags, its run, its accounting, its template part.

Each source's command module (``pipeline/migrate_<name>.py``) exports one :class:`SourceDescription`
as ``DESCRIPTION``; it carries the source's :class:`~transforms.sources.source_parts.SourceKind`
(record kinds for the sync, file shapes, counters renamed in the manifest: the part read below the
command line). ``pipeline/sources.py`` registers them; the command line (``cli.py``), the Flex
Template (``flex_entry.py``), ``--state`` (``migrate.py``), the first look at input files
(``input_shape``) and the report (``report.py``) are built from that registry. A description
missing a part fails when it is registered, naming the part (:func:`missing_parts`).

Example (a source ``toy``; see tests/pipeline/test_sources.py for one that runs end to end)::

    DESCRIPTION = SourceDescription(
        name="toy",
        help="toy export → import bodies",
        add_arguments=add_arguments,       # parser → None: its flags (with add_common_arguments)
        run=run,                           # (known_args, pipeline_args) → exit status (run_migration)
        summary_lines=summary_lines,       # counts → the summary's rows
        invariant=invariant,               # counts → (holds, "users read 2 = written 2 + ...")
        kind=KIND,                         # records, shapes, second factors (transforms/sources/)
        flex=FlexPart(left_out=frozenset({"allow_plaintext_passwords"})),  # or None: no template
        files={"users": "--users"},        # files it reads: never written by the run
        worker_files=("users",),           # read by workers: gs:// on a remote runner
    )
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from transforms.sources.source_parts import SourceKind
from transforms.sources.source_parts import missing_parts as kind_missing_parts

if TYPE_CHECKING:
    import argparse

    from pipeline.migrate import Invariant
    from pipeline.migrate_report import SummaryLines

__all__ = ["SourceDescription", "FlexPart", "missing_parts"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlexPart:
    """The source in the Flex Template (flex_template/metadata.json, docs/flex-template.md).

    The template's parameters of this source are its command's flags (``--realm-name`` →
    ``realm_name``) but those shared ones the template leaves out on purpose
    (``flex_entry.LEFT_OUT``) and ``left_out``, this command's own."""

    left_out: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True, kw_only=True)
class SourceDescription:
    """Everything the tool knows of one source, in one place (see the module docstring)."""

    name: str  # `migrate <name>`; the kind's name
    help: str  # the command's line in `zitadel-beam migrate --help`
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, list[str]], int]
    kind: SourceKind
    # The run's summary rows and accounting; None for a command that prints its own (migrate
    # zitadel, which reads no users one by one and so cannot sync).
    summary_lines: SummaryLines | None
    invariant: Invariant | None
    flex: FlexPart | None  # None: not offered by the Flex Template
    # Its flags that name files it reads (argparse dest → flag): none of them may be written by
    # the run (pipeline/preflight.py); of those, ``worker_files`` are read by Beam's workers,
    # which on a remote runner must be gs:// paths. ``implied_files(known_args)``: files it reads
    # without a flag naming them (Auth0's ./passwords.json, zitadel-tools' default).
    files: Mapping[str, str]
    worker_files: tuple[str, ...]
    implied_files: Callable[[argparse.Namespace], dict[str, list[str]]] | None = None
    beam_flags: bool = True  # flags it does not know are Beam's pipeline options


def missing_parts(description: SourceDescription) -> list[str]:
    """The parts of ``description`` missing or malformed, each named (``[]``: it is whole)."""
    problems = []
    for part in ("add_arguments", "run"):
        if not callable(getattr(description, part, None)):
            problems.append(f"{part} (a function)")
    if not isinstance(description.help, str) or not description.help.strip():
        problems.append("help (the command's one line)")
    if not isinstance(description.kind, SourceKind):
        problems.append("kind (its SourceKind: records, shapes; transforms/sources/<name>/)")
    else:
        if description.kind.name != description.name:
            problems.append(f"kind (named {description.kind.name!r}, not {description.name!r})")
        problems += [f"kind.{problem}" for problem in kind_missing_parts(description.kind)]
        if description.kind.syncs:  # run_migration reports and checks these for a source of users
            for part in ("summary_lines", "invariant"):
                if not callable(getattr(description, part, None)):
                    problems.append(f"{part} (a source of users has its summary rows and accounting)")
    files = getattr(description, "files", None)
    if not isinstance(files, Mapping) or not all(str(flag).startswith("--") for flag in files.values()):
        problems.append("files (dest → flag of each file it reads; {} for none)")
    elif not set(description.worker_files) <= set(files):
        problems.append("worker_files (dests among files)")
    if description.flex is not None and not isinstance(description.flex, FlexPart):
        problems.append("flex (a FlexPart, or None: not in the Flex Template)")
    return problems
