"""Each source's ``migrate <name>``, built from its description: its flags, the shared ones it
takes, and its run.

A source declares (``transforms/sources/declaration.py``); this module does what every source of
users shares, once: the parser gets the source's own flags, then the shared flags of the groups it
declares (``FlagGroup``: hashes, the bodies' layout, roles; ``--idp-map`` with ``IdpLinks``); the
run checks the shared flags (``common_args``), applies the ``--state`` rule (a user blocked at the
source is read when the source's flag asks for it or when the run syncs: the sync then deactivates
those already in ZITADEL and still refuses new ones), asks the source for its plan and runs it
(``migrate.run_migration``), the summary ending with the shared rows. Which files a command reads
comes from the flags the source marked with ``file_flag``.

Example::

    description = registry.get("keycloak")
    add_source_arguments(parser, description)          # its flags, then the shared ones it takes
    run_source(description, known_args, pipeline_args)  # the exit status
    input_flags(description)   # ({"realm": "--realm"}, ("realm",)): files it reads, those workers read
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from pipeline.migrate import SyncSource, run_migration
from pipeline.migrate_options import (
    add_common_arguments,
    add_output_arguments,
    add_role_arguments,
    common_args,
    role_settings,
)
from pipeline.options import add_idp_map_argument, parse_idp_map
from pipeline.report import SummaryLine, shared_summary_lines, unmatched_alias_lines
from transforms.output import waiting
from transforms.sources.declaration import (
    FlagGroup,
    Plan,
    SourceDescription,
    SourceSettings,
    declared_flags,
)

__all__ = ["add_source_arguments", "run_source", "input_flags", "blocked_flag"]


def add_source_arguments(parser: argparse.ArgumentParser, description: SourceDescription) -> None:
    """The source's own flags, then the shared ones of the groups it declares."""
    description.add_arguments(parser)
    if description.idp_links is not None:
        add_idp_map_argument(parser, description.idp_links.what)
    document = description.document
    if document is not None:  # it runs itself: the output flags only
        add_output_arguments(
            parser,
            batch_help=document.batch_help,
            dead_letter_help=document.dead_letter_help,
            multiline_help=document.multiline_help,
        )
    else:
        add_common_arguments(parser, description.groups)
        if FlagGroup.ROLES in description.groups:
            add_role_arguments(parser)
        waiting.add_argument(parser)  # --old-system-store: every source of users
    if description.defaults:
        parser.set_defaults(**description.defaults)


def input_flags(description: SourceDescription) -> tuple[dict[str, str], tuple[str, ...]]:
    """The source's flags that name files it reads (dest → flag), and of those the ones Beam's
    workers read (pipeline/preflight.py: never written by the run; gs:// on a remote runner)."""
    files, workers = {}, []
    for flag in declared_flags(description.add_arguments):
        if flag.reads is not None:
            files[flag.dest] = flag.flag
            if flag.reads[0]:
                workers.append(flag.dest)
    return files, tuple(workers)


def blocked_flag(description: SourceDescription) -> str | None:
    """The dest of the flag that imports users blocked at the source (``--include-disabled`` →
    ``include_disabled``): its user records' ``flag``; None for a source that cannot sync."""
    flags = {record.flag for record in description.kind.records.values()}
    own = {flag.flag for flag in declared_flags(description.add_arguments)}
    declared = sorted(flags & own)
    return declared[0][2:].replace("-", "_") if declared else None


def run_source(
    description: SourceDescription, known_args: argparse.Namespace, pipeline_args: list[str]
) -> int:
    """Check the shared flags, ask the source for its plan, run it; the exit status."""
    if description.document is not None:
        from pipeline import document_run

        return description.document.run(known_args, pipeline_args, document_run.LAUNCHER)
    assert description.plan is not None and description.summary_lines is not None  # registry checked
    assert description.invariant is not None
    common = common_args(known_args)
    idp_links = description.idp_links
    idp_map = parse_idp_map(known_args.idp_map, idp_links.reserved) if idp_links is not None else ()
    roles = role_settings(known_args) if FlagGroup.ROLES in description.groups else None
    dest = blocked_flag(description)
    include_blocked = bool(getattr(known_args, dest, False)) if dest else False
    settings = SourceSettings(
        metadata=common.metadata,
        on_unsupported_hash=common.on_unsupported_hash,
        email_fallback=common.email_fallback,
        hash_policy=common.hash_policy,
        read_blocked=include_blocked or bool(common.state),
        idp_map=idp_map,
        roles=roles,
        push_api=common.push.api if common.push is not None else None,
        outputs=tuple(path for path in (common.output, common.dead_letter) if path),
    )
    plan = description.plan(known_args, settings)
    keep_waiting = waiting.waiting_keeper(
        getattr(known_args, "old_system_store", None),
        inputs=plan.input_paths,
        outputs=settings.outputs,
        push_api=settings.push_api,
        email_fallback=common.email_fallback,
        legacy_hashes=getattr(known_args, "legacy_hashes", None),
    )
    sync: SyncSource | None = (
        {"include_blocked": include_blocked, "realm": plan.realm} if description.kind.syncs else None
    )
    return run_migration(
        source_name=description.name,
        add_source=plan.read,
        common=common,
        pipeline_args=pipeline_args,
        input_paths=list(plan.input_paths),
        summary_lines=lambda counts: _summary(description, plan, idp_map, counts),
        invariant=description.invariant,
        extra_manifest=plan.manifest,
        sync_source=sync,
        input_names=plan.input_names,
        roles=roles,
        defined_roles=plan.defined_roles,
        keep_legacy=plan.keep_legacy,
        keep_waiting=keep_waiting,
    )


def _summary(
    description: SourceDescription,
    plan: Plan,
    idp_map: tuple[tuple[str, str], ...],
    counts: Mapping[str, int],
) -> list[SummaryLine]:
    """The source's rows, the shared ones, the ``--idp-map`` aliases that matched nothing, the plan's."""
    assert description.summary_lines is not None
    idp_links = description.idp_links
    lines = description.summary_lines(counts)
    lines += shared_summary_lines(counts, description.name, idp_map=idp_links is not None)
    if idp_links is not None:
        lines += unmatched_alias_lines(counts, idp_links.counters, [alias for alias, _ in idp_map])
    if plan.summary is not None:
        lines += plan.summary(counts)
    return lines
