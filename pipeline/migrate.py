"""The launcher every ``migrate`` command shares: the pipeline after the source, and the run.

A source's plan (``transforms/sources/<name>/command.py``, run by ``source_command.run_source``)
checks its own flags, matches its input files and returns a function that adds its read transform
to the pipeline, which ``run_migration`` is handed. Everything after the source is shared:

    source ─► rows ─ UsersToBodies ─► temporary bodies ─┐
          │              └─► written users ─ CountWrittenUsers ─┤
          └─► dead letters ──────────── WriteDeadLetterShards ─┤
                                                        └─ finalize (launcher): final names,
                                                           dead-letter file, manifest, summary

The flags are in ``pipeline/migrate_options.py``, running Beam in ``beam_run.py``, the outputs
in ``run_outputs.py``, the summary and push in ``migrate_report.py``; the manifest's schema is
``transforms.output.manifest.build_manifest``.

Run locally (FnApiRunner, in-process; add ``--direct_running_mode=multi_processing
--direct_num_workers=2`` for both cores) or on Dataflow (``--runner=DataflowRunner --project=P
--region=R --temp_location=gs://B/tmp --setup_file=./setup.py``).
"""

from __future__ import annotations

import dataclasses
import posixpath
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from pipeline import signals
from pipeline.beam_run import make_pipeline, raise_output_failure, run_pipeline
from pipeline.layout import OutputLayout, output_layout
from pipeline.migrate_options import CommonArgs, removal_limit
from pipeline.migrate_progress import live_line
from pipeline.migrate_report import FinishedRun, SummaryLines, report_and_push
from pipeline.report import counters_from_result, dead_letter_totals, not_carried_fields
from pipeline.run_outputs import (
    RunOutputs,
    finalize_outputs,
    finalize_passwordless,
    open_outputs,
    write_authorizations,
    write_manifest,
)
from transforms.common import counters
from transforms.common.errors import ConfigError
from transforms.files.storage import check_gcs_reachable
from transforms.output.manifest import ListedFile, UserFields, build_manifest
from transforms.output.waiting import KeepWaiting
from transforms.sources.declaration import AddSource, Invariant, KeepLegacy
from transforms.sources.registry import kind, syncing_names

if TYPE_CHECKING:
    import apache_beam as beam

    from transforms.mapping.roles import RoleEntry, RoleSettings
    from transforms.sync.change_files import SyncSection
    from transforms.sync.compare import SyncOptions
    from transforms.sync.state import StatePointer

__all__ = ["build_pipeline", "run_migration"]

# ``add_source(pipeline, tmp_dir)`` → the source's ``ReadUsers(rows, dead, roles)`` (AddSource);
# ``invariant(counts)`` → ``(holds, text)``: the source's accounting (Invariant).


def build_pipeline(
    add_source: AddSource,
    common: CommonArgs,
    layout: OutputLayout,
    pipeline_args: list[str],
    sync: tuple[SyncOptions, Mapping[int, str]] | None = None,
    defined_roles: list[RoleEntry] | None = None,
) -> beam.Pipeline:
    """Build (and return, not run) the pipeline: source → bodies + dead letters.

    A source with roles (``--project-id``) also returns ``roles``; with ``defined_roles`` (the
    roles the export defines), ``transforms.output.grants.ResolveRoles`` turns them into the catalogue
    and the case-collision losers the bodies leave out (docs/roles.md).

    With ``sync`` (``(SyncOptions, state shard paths)``), the source's users are compared with
    the state first (transforms/sync/compare.py): only new users reach the bodies.

    ``add_source(pipeline, tmp_dir)`` adds the source and returns its ``ReadUsers``;
    ``tmp_dir`` is the run's temporary folder for spill files (removed when the run ends).
    """
    import apache_beam as beam

    from transforms.files.sinks import WriteDeadLetterShards
    from transforms.output.bodies import BodySpec, UsersToBodies
    from transforms.output.written import CountWrittenUsers

    pipeline = make_pipeline(pipeline_args)
    source = add_source(pipeline, layout.tmp_dir)
    compared = []  # with --state: the users compared with the state count as written ones
    if sync is not None:
        from transforms.sync.compare import CompareWithState, SourceUsers

        options, shards = sync
        synced = SourceUsers(source.rows, source.dead) | "Sync" >> CompareWithState(
            options, shards, layout.tmp_dir
        )
        compared = [synced.written]
        # Roles come from every user read, new or not: the catalogue stays whole.
        source = source._replace(rows=synced.rows, dead=synced.dead)
    spec = BodySpec(common.org_id, common.timeout, common.batch_size, common.multiline)
    if source.roles is None:
        bodies = source.rows | "ToBodies" >> UsersToBodies(spec, layout.tmp_dir)
    else:
        from transforms.output.bodies import RowsWithRoles
        from transforms.output.grants import ResolveRoles

        losers = source.roles | "Roles" >> ResolveRoles(defined_roles or [], layout.tmp_dir)
        bodies = RowsWithRoles(source.rows, losers) | "ToBodies" >> UsersToBodies(spec, layout.tmp_dir)
    dead = (source.dead, bodies.dead) | "AllDeadLetters" >> beam.Flatten()
    _ = dead | "DeadLetters" >> WriteDeadLetterShards(layout.tmp_dir)
    # Counts and lists about users written come from the users kept (after de-duplication).
    written = (bodies.written, *compared) | "AllWritten" >> beam.Flatten()
    _ = written | "CountWritten" >> CountWrittenUsers(layout.tmp_dir)
    return pipeline


class SyncSource(TypedDict):
    """What a source that can sync tells the compare (docs/sync.md)."""

    include_blocked: bool
    realm: str | None  # Keycloak: derived ids of users without id need the realm


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Job:
    """One migrate run, as its source command described it (``run_migration``'s arguments)."""

    source_name: str
    add_source: AddSource
    common: CommonArgs
    pipeline_args: list[str]
    input_paths: list[str]
    summary_lines: SummaryLines
    invariant: Invariant
    extra_manifest: Mapping[str, Any] | None
    sync_source: SyncSource | None
    input_names: Mapping[int, str]
    roles: RoleSettings | None
    defined_roles: list[RoleEntry] | None
    keep_legacy: KeepLegacy | None = None
    keep_waiting: KeepWaiting | None = None


def run_migration(
    *,
    source_name: str,
    add_source: AddSource,
    common: CommonArgs,
    pipeline_args: list[str],
    input_paths: list[str],
    summary_lines: SummaryLines,
    invariant: Invariant,
    extra_manifest: Mapping[str, Any] | None = None,
    sync_source: SyncSource | None = None,
    input_names: Mapping[int, str] | None = None,
    roles: RoleSettings | None = None,
    defined_roles: list[RoleEntry] | None = None,
    keep_legacy: KeepLegacy | None = None,
    keep_waiting: KeepWaiting | None = None,
) -> int:
    """Run the pipeline, finalize the outputs, write the manifest, print the summary; the exit status.

    With ``--state``, the state's lock is held throughout, push included, so that two runs on one
    state cannot interleave (docs/sync.md#state).

    ``sync_source`` is given by sources that can sync; with ``--state`` the run compares with the
    state (docs/sync.md).

    ``invariant(counts)`` returns ``(holds, text)``: the run's accounting (every input record
    written or dead-lettered). A broken invariant is reported and exits 3: it is a bug.
    ``input_names`` (file index → path) names the input files the readers counted as cut
    (``inputs.partial.<index>``): without ``--allow-partial`` the run exits 1 and pushes nothing.
    ``keep_legacy`` (Firebase's ``--legacy-hashes``) writes the companion's store
    and takes its users off the passwordless list before the manifest is written;
    ``keep_waiting`` (``--old-system-store``) does the same, once the bodies have their final names,
    for the users written without a usable password (transforms/output/waiting.py).
    """
    job = _Job(
        source_name=source_name,
        add_source=add_source,
        common=common,
        pipeline_args=pipeline_args,
        input_paths=input_paths,
        summary_lines=summary_lines,
        invariant=invariant,
        extra_manifest=extra_manifest,
        sync_source=sync_source,
        input_names=input_names or {},
        roles=roles,
        defined_roles=defined_roles,
        keep_legacy=keep_legacy,
        keep_waiting=keep_waiting,
    )
    if not common.state:
        return _run_migration(job)
    from transforms.sync.state import acquire_state_lock

    check_gcs_reachable([common.state])
    with acquire_state_lock(common.state, f"migrate {source_name}", common.break_lock):
        return _run_migration(job)


def _run_migration(job: _Job) -> int:
    """Plan the sync, take the outputs, run, finalize (a signal waits), then report and push."""
    common = job.common
    layout = output_layout(common.output, common.dead_letter)
    check_gcs_reachable(job.input_paths + [layout.output, layout.dead_letter])
    sync = _plan_sync(job)
    target = None
    if common.push_url:  # the one probe, before an hour of conversion: a bad URL or token fails now
        from pipeline.push_entry import open_target

        assert common.push_credentials is not None and common.push is not None  # common_args: with push_url
        target = open_target(common.push_url, common.push_credentials, common.push)
    run = open_outputs(
        layout, job.pipeline_args, command=f"migrate {job.source_name}", break_lock=common.break_lock
    )
    layout = run.layout
    try:
        ran = _run_beam(job, run, sync)
        with signals.finishing():
            finished = _finish(job, run, sync, ran)
    except BaseException as err:
        run.close()  # spill files and temporary bodies hold password hashes: never left behind
        raise_output_failure(err, layout)
        raise
    run.remove_work()
    try:
        return report_and_push(finished, job.summary_lines, job.input_names, target)
    finally:
        run.close()  # the lock is held until the push (if any) is done


@dataclasses.dataclass(frozen=True, kw_only=True)
class _SyncPlan:
    """With ``--state``: how the run compares with the state, and what the state holds."""

    options: SyncOptions
    shards: dict[int, str]  # partition → the state's shard
    root: str
    pointer: StatePointer | None  # None: nothing committed yet
    users_in_state: int
    max_removals: int
    max_blocks: int


def _plan_sync(job: _Job) -> _SyncPlan | None:
    """Read the state's pointer (``--state``); None without ``--state``."""
    common = job.common
    if not common.state:
        return None
    from transforms.sync.compare import SyncOptions
    from transforms.sync.state import StateStore

    # The sources that describe their user records (docs/sync.md); tests/pipeline/test_migrate.py runs
    # each of them with --state.
    records = kind(job.source_name).records
    if job.sync_source is None or not records:
        can = syncing_names()
        raise ConfigError(
            f"--state: migrate {job.source_name} cannot sync ({', '.join(can[:-1])} and {can[-1]} can)"
        )
    store = StateStore(common.state)
    pointer = store.read_pointer()
    options = SyncOptions(
        org_id=common.org_id,
        source=job.source_name,
        records=records,
        partitions=store.partitions(pointer),
        on_removed=common.on_removed,
        include_blocked=bool(job.sync_source.get("include_blocked")),
        realm=job.sync_source.get("realm"),
    )
    users_in_state = int((pointer or {}).get("users", 0))
    max_removals = removal_limit(common.max_removals, users_in_state)
    max_blocks = removal_limit(common.max_blocks, users_in_state, "--max-blocks")
    shards = store.shard_paths(pointer)
    return _SyncPlan(
        options=options,
        shards=shards,
        root=store.root,
        pointer=pointer,
        users_in_state=users_in_state,
        max_removals=max_removals,
        max_blocks=max_blocks,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Ran:
    """A pipeline that ran to the end: its counters, their accounting, its hash fields."""

    counts: dict[str, int]
    elapsed: float
    hash_fields: dict[str, Any]
    holds: bool
    invariant_text: str


def _run_beam(job: _Job, run: RunOutputs, sync: _SyncPlan | None) -> _Ran:
    """Build and run the pipeline; read its counters. ConfigError past ``--max-removals``."""
    from transforms.hashing.summary import hash_manifest, hash_ranges_from_result

    common, layout = job.common, run.layout
    compare = (sync.options, sync.shards) if sync is not None else None
    pipeline = build_pipeline(job.add_source, common, layout, job.pipeline_args, compare, job.defined_roles)
    started = time.monotonic()
    with live_line(job.input_paths, job.pipeline_args, common.quiet):  # on a terminal only
        result = run_pipeline(pipeline, layout.tmp_dir)
    elapsed = time.monotonic() - started
    counts = counters_from_result(result)
    refused_ranges = hash_ranges_from_result(result, counters.REFUSED_HASH_PARAM)
    hash_fields = hash_manifest(counts, hash_ranges_from_result(result), common.hash_policy, refused_ranges)
    holds, invariant_text = job.invariant(counts)
    if sync is not None:
        _guard(
            sync,
            counts.get(counters.SYNC_REMOVALS, 0),
            common.max_removals,
            counts.get(counters.SYNC_BLOCKS, 0),
            common.max_blocks,
        )
    return _Ran(
        counts=counts, elapsed=elapsed, hash_fields=hash_fields, holds=holds, invariant_text=invariant_text
    )


def _guard(sync: _SyncPlan, removals: int, removals_flag: str, blocks: int, blocks_flag: str) -> None:
    """Refuse a night past either guard (docs/sync.md#guards): ``--max-removals`` counts the users
    gone from the export (a truncated or wrong export), ``--max-blocks`` the users blocked at the
    source (a wrong mapping of the blocked flag); each names its own count and limit."""
    of_state = f"of {sync.users_in_state:,} users in the state"
    if removals > sync.max_removals:
        raise ConfigError(
            f"--max-removals: refused: this run would deactivate or delete {removals:,} users gone from "
            f"the export, more than the limit of {sync.max_removals:,} ({removals_flag} {of_state}); "
            "check the export, or raise --max-removals"
        )
    if blocks > sync.max_blocks:
        raise ConfigError(
            f"--max-blocks: refused: this run would deactivate or lock {blocks:,} users blocked at the "
            f"source, more than the limit of {sync.max_blocks:,} ({blocks_flag} {of_state}); check "
            "the export's blocked or disabled flags, or raise --max-blocks"
        )


def _finish(job: _Job, run: RunOutputs, sync: _SyncPlan | None, ran: _Ran) -> FinishedRun:
    """Give every output its final name, write the authorizations body and then the manifest."""
    common, layout, counts = job.common, run.layout, ran.counts
    sync_fields: SyncSection | None = None  # the manifest's "sync"
    if sync is not None:
        from transforms.sync.change_files import finalize_changes, sync_manifest

        changes = finalize_changes(
            layout.tmp_dir, layout.stem, posixpath.dirname(layout.manifest), run.check_replaceable
        )
        sync_fields = sync_manifest(
            counts, sync.root, sync.pointer, common.on_removed, sync.max_removals, changes
        )
    passwordless = ListedFile(*finalize_passwordless(run))
    kept: ListedFile | None = None
    if job.keep_legacy is not None:  # --legacy-hashes: those users leave the reset list
        passwordless, kept = job.keep_legacy(passwordless)
    catalogue: list[RoleEntry] = []
    if job.roles is not None:  # the authorizations body, first in the manifest (docs/roles.md)
        from transforms.output.grants import read_catalogue

        catalogue = read_catalogue(layout.tmp_dir)
    bodies, dead_count, dead_sha = finalize_outputs(run)
    passwordless, waiting = _keep_waiting(job, layout.manifest, bodies, passwordless, kept)
    holds, invariant_text = ran.holds, ran.invariant_text
    authorizations: dict[str, Any] = {}
    if job.roles is not None:
        held = (sync.pointer or {}).get("authorizations_sha256") if sync is not None else None
        bodies, authorizations, roles_digest = write_authorizations(
            run, common, job.roles, catalogue, bodies, counts, held
        )
        if sync_fields is not None:  # push records it in the state once the target confirmed it
            sync_fields["authorizations_sha256"] = roles_digest
        holds = holds and authorizations["invariant"]["holds"]
        invariant_text += "; " + authorizations["invariant"]["text"]
    elif counts.get(counters.ROLES_USERS_HOLDING):
        authorizations = {"users_holding_roles": counts[counters.ROLES_USERS_HOLDING]}
    manifest = build_manifest(
        manifest_path=layout.manifest,
        source=job.source_name,
        org_id=common.org_id,
        timeout=common.timeout,
        batch_size=common.batch_size,
        bodies=bodies,
        dead_letter=ListedFile(layout.dead_letter, dead_count, dead_sha),
        counts=counts,
        dead_letters_by_reason=dead_letter_totals(counts),
        holds=holds,
        invariant=invariant_text,
        seconds=ran.elapsed,
        hash_fields=ran.hash_fields,
        users=_user_fields(counts, passwordless),
        extra={
            **(job.extra_manifest or {}),
            **_kept_fields(layout.manifest, kept),
            **_kept_fields(layout.manifest, waiting, "old_system_store"),
        },
        sync=sync_fields,
        authorizations=authorizations,
    )
    write_manifest(layout.manifest, manifest)
    return FinishedRun(
        source_name=job.source_name,
        common=common,
        layout=layout,
        counts=counts,
        hash_fields=ran.hash_fields,
        holds=holds,
        invariant_text=invariant_text,
        bodies=bodies,
        dead_count=dead_count,
        elapsed=ran.elapsed,
        passwordless_path=passwordless.path,
        passwordless_count=passwordless.count,
        sync=sync_fields,
        roles=job.roles,
        legacy_hashes=kept,
        old_system_store=waiting,
    )


def _keep_waiting(
    job: _Job, manifest: str, bodies: list[dict[str, Any]], passwordless: ListedFile, kept: ListedFile | None
) -> tuple[ListedFile, ListedFile | None]:
    """``--old-system-store``: the users written without a usable password go to the companion's
    store and leave the reset list (transforms/output/waiting.py); nothing without the flag."""
    if job.keep_waiting is None:
        return passwordless, None
    from transforms.files.storage import resolve

    folder = posixpath.dirname(manifest)
    return job.keep_waiting(passwordless, [resolve(folder, body["path"]) for body in bodies], kept)


def _kept_fields(
    manifest_path: str, kept: ListedFile | None, name: str = "legacy_hashes"
) -> dict[str, object]:
    """The manifest's ``legacy_hashes`` or ``old_system_store`` (docs/companion.md#store);
    nothing without the flag."""
    if kept is None:
        return {}
    from transforms.files.storage import relative_path

    path = relative_path(posixpath.dirname(manifest_path), kept.path)
    return {name: {"path": path, "count": kept.count, "sha256": kept.sha256}}


def _user_fields(counts: Mapping[str, int], passwordless: ListedFile) -> UserFields:
    """The manifest's sections of a user migration: fields not carried, passwordless users, notes."""
    return UserFields(
        not_carried=not_carried_fields(counts),
        passwordless=passwordless,
        # Users without e-mail given --email-fallback's address; users given a derived id.
        email_fallback=counts.get("notes.email-fallback", 0),
        derived_ids=counts.get("notes.derived-id", 0),
        control_chars_removed=counts.get("notes.control-chars-removed", 0),
    )
