"""``zitadel-beam migrate zitadel``: split a ZITADEL export document into ``dataOrgsv1`` bodies.

Examples::

    zitadel-beam migrate zitadel --export=export.json --output=out/importBody.json
    zitadel-beam migrate zitadel --export=gs://B/export.json --output=gs://B/bodies/importBody.json \\
        --batch-size=2000 --timeout=5m0s
    zitadel-beam push --url=https://target.zitadel.cloud --manifest=out/importBody.manifest.json --verify

A large tenant's export will not import within the hosted 5-minute timeout as one document. This
cuts it into bodies that each are an export document themselves (``{"dataOrgsv1": {"orgs":
[DataOrg]}, "timeout": ...}``): an org's first body holds the org and everything org-level, the
users follow in bodies of at most ``--batch-size`` users with their own records (metadata, links,
grants, memberships); the manifest's ``after`` lists what each body must wait for, and ``push``
honours it (see ``transforms/sources/zitadel/plan.py`` for the placement rules).

Shape of the run::

    export ─ plan (launcher: one streamed pass) ─► segment files + plan ─┐
                                   └─► dead letters                       │
    Create(one element per body) ─ Reshuffle ─ RenderBodies (Beam) ◄──────┘ ─► temporary bodies
    finalize (launcher): numbered names, dead-letter file, manifest with ``after``, summary

The plan is one sequential read (a JSON document cannot be split by byte ranges); rendering,
hashing and writing the bodies (to local disk or gs://) run in parallel. Run on both cores with
``--direct_running_mode=multi_processing --direct_num_workers=2``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from transforms.common.counters import PASSWORD_HASHES
from transforms.common.durations import normalise_duration
from transforms.common.errors import ConfigError
from transforms.files.storage import is_remote, size
from transforms.hashing.policy import load_policy
from transforms.hashing.summary import hash_manifest
from transforms.sources.declaration import (
    DocumentRun,
    FlagParser,
    Flags,
    Launcher,
    OpenOutputs,
    SourceDescription,
    SummaryLine,
    file_flag,
)
from transforms.sources.zitadel.plan import BodyElement, ExportPlan
from transforms.sources.zitadel.source import KIND

__all__ = ["DESCRIPTION", "add_arguments", "run", "split_export", "SplitResult"]

_LOGGER = logging.getLogger(__name__)
SOURCE = KIND.name


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--export",
        reads="zitadel-export",
        required=True,
        help="the export document (POST /admin/v1/export, or `zitadel-beam export`); "
        "local or gs://, plain or .gz",
    )
    parser.add_argument(
        "--zitadel-config",
        metavar="FILE",
        default=None,
        help="the target ZITADEL's config YAML: the summary warns when its password verifiers "
        "or limits do not cover the export's hashes (default: ZITADEL's defaults)",
    )


def run(known_args: Flags, pipeline_args: list[str], launcher: Launcher) -> int:
    policy = load_policy(known_args.zitadel_config, os.environ)  # a bad config fails before the run
    result = split_export(
        known_args.export,
        known_args.output,
        launcher=launcher,
        timeout=known_args.timeout,
        batch_size=known_args.batch_size,
        dead_letter=known_args.dead_letter,
        multiline=known_args.multiline,
        pipeline_args=pipeline_args,
        break_lock=known_args.break_lock,
    )
    print(result.summary())
    _print_hash_report(result.manifest, policy)
    sys.stdout.flush()
    if not result.holds or launcher.check_written(result.manifest):
        return 3
    if known_args.strict and result.dead_count:
        print(f"zitadel-beam: --strict: {result.dead_count} item(s) dead-lettered", file=sys.stderr)
        return 1
    return 0


def _print_hash_report(manifest_path: str, policy) -> None:
    """The export's hashes by verifier, the config they need, and what ``policy`` lacks."""
    from transforms.hashing.summary import hash_summary, uncovered_hashes
    from transforms.output.manifest import load_manifest

    manifest = load_manifest(manifest_path).raw
    text = hash_summary(manifest)
    if text:
        print(text)
    for line in uncovered_hashes(manifest, policy):
        print(f"warning: the target's config does not cover this export: {line}")


def build_pipeline(
    elements: list[BodyElement],
    tmp_dir: str,
    timeout: str,
    multiline: bool,
    pipeline_args: list[str],
    launcher: Launcher,
):
    """Build (not run) the render pipeline for a plan's body elements."""
    import apache_beam as beam

    from transforms.sources.zitadel.render import RenderBodies

    pipeline = launcher.make_pipeline(pipeline_args)
    _ = (
        pipeline
        | "Bodies" >> beam.Create(elements, reshuffle=False).with_output_types(BodyElement)
        | "Render" >> RenderBodies(tmp_dir, timeout, multiline)
    )
    return pipeline


# --- the launcher --------------------------------------------------------------------------------
@dataclasses.dataclass
class SplitResult:
    manifest: str
    bodies: list[dict]
    counts: dict[str, int]
    dead_by_reason: dict[str, int]
    dead_count: int
    dead_letter: str
    holds: bool
    invariant: str
    seconds: float
    summary_table: Callable[[str, list[SummaryLine]], str]  # the shared run's

    def summary(self) -> str:
        c = self.counts
        lines: list[SummaryLine] = [
            ("organizations", c.get("orgs", 0)),
            ("items read", c.get("items_read", 0)),
            ("  human users", c.get("human_users", 0)),
            ("  machine users", c.get("machine_users", 0)),
            ("dead letters", self.dead_count),
        ]
        lines += [(f"  {reason}", n) for reason, n in self.dead_by_reason.items()]
        kinds: dict[str, int] = {}
        for body in self.bodies:
            kinds[body["kind"]] = kinds.get(body["kind"], 0) + 1
        lines += [("", ""), ("bodies written", len(self.bodies))]
        lines += [(f"  {kind}", n) for kind, n in kinds.items()]
        lines += [("seconds", f"{self.seconds:.1f}")]
        text = self.summary_table(f"zitadel-beam migrate {SOURCE}: summary", lines)
        text += f"\naccounting: {self.invariant} [{'ok' if self.holds else 'BROKEN'}]"
        text += f"\nmanifest: {self.manifest}"
        if self.bodies:
            text += f"\nbodies: {self.bodies[0]['path']}" + (
                f" ... {self.bodies[-1]['path']}" if len(self.bodies) > 1 else ""
            )
        if self.dead_count:
            text += f"\ndead letters: {self.dead_letter}"
        return text


def _open_export(path: str):
    from apache_beam.io.filesystems import FileSystems

    from transforms.sources.input_stream import DepthGuard, open_input

    if not is_remote(path):
        if not os.path.isfile(path):
            raise ConfigError(f"--export {path!r}: no such file")
    elif not FileSystems.exists(path):
        raise ConfigError(f"--export {path!r}: no such object")
    # UTF-8 BOM skipped, UTF-16/32 decoded, a damaged .gz an error (transforms/sources/input_stream.py);
    # one document: a value nested too deep makes it unusable (exit 2), not a dead letter.
    stream = open_input(path)
    if stream.encoding:
        _LOGGER.warning("%s: decoded from %s", path, stream.encoding)
    return DepthGuard(stream, refuse=True)


def _describe_export(path: str) -> str:
    from transforms.sources.input_sniff import describe_head
    from transforms.sources.input_stream import open_input

    try:
        with open_input(path) as stream:
            return describe_head(stream.read(4096))
    except OSError as err:
        return str(err).splitlines()[0] if str(err) else type(err).__name__


def split_export(
    export: str,
    output: str,
    *,
    launcher: Launcher,
    timeout: str = "5m0s",
    batch_size: int = 5000,
    dead_letter: str | None = None,
    multiline: bool = False,
    pipeline_args: list[str] | None = None,
    break_lock: bool = False,
) -> SplitResult:
    """Plan, render and finalize; writes the manifest. Raises ConfigError (one line) on bad input.

    >>> split_export("export.json", "out/importBody.json", launcher=LAUNCHER, batch_size=2000).manifest  # doctest: +SKIP
    'out/importBody.manifest.json'
    """
    from transforms.files.storage import check_gcs_reachable, register_cleanup, unregister_cleanup

    timeout = _checked_settings(output, timeout, batch_size, launcher.max_batch_size)
    # Beam's FileSystems: imported once the flags are checked.
    from transforms.sources.input_plan import file_problem
    from transforms.sources.zitadel.export_reader import ExportFormatError

    layout = launcher.output_layout(output, dead_letter)
    check_gcs_reachable([export, layout.output, layout.dead_letter])
    # Its first records only: a realm or an Auth0 export is named as such, not streamed to its
    # end for an "orgs" array it does not have; a SQL dump or a CSV export is named too
    # (transforms/sources/input_plan.py).
    problem = file_problem(export, "zitadel-export")
    if problem:
        raise ConfigError(f"--export {export}: {problem}")
    run = launcher.open_outputs(
        layout, list(pipeline_args or []), command=f"migrate {SOURCE}", break_lock=break_lock
    )
    layout = run.layout
    scratch = tempfile.mkdtemp(prefix="zitadel-beam-plan-")
    os.chmod(scratch, 0o700)
    scratch_cleanup = register_cleanup(lambda: shutil.rmtree(scratch, ignore_errors=True))
    try:
        plan, manifest, dead_count = _split(
            export, run, scratch, timeout, batch_size, multiline, list(pipeline_args or []), launcher
        )
    except ExportFormatError as err:
        run.close()
        text = str(err)
        if text == "not a JSON document":  # say what it is instead (docs/inputs.md)
            text += ": " + _describe_export(export)
        raise ConfigError(f"--export {export}: {text}") from None
    except BaseException as err:
        run.close()  # segments hold password hashes: don't leave them behind
        launcher.raise_output_failure(err, layout)
        if isinstance(err, OSError):
            raise ConfigError(f"--export {export}: cannot read ({err.strerror or err})") from None
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        unregister_cleanup(scratch_cleanup)
    run.close()
    return SplitResult(
        manifest=layout.manifest,
        bodies=manifest["bodies"],
        counts=manifest["counts"],
        dead_by_reason=plan.dead_by_reason,
        dead_count=dead_count,
        dead_letter=layout.dead_letter,
        holds=manifest["invariant"]["holds"],
        invariant=manifest["invariant"]["text"],
        seconds=manifest["seconds"],
        summary_table=launcher.summary_table,
    )


def _checked_settings(output: str, timeout: str, batch_size: int, max_batch_size: int) -> str:
    """The normalised ``--timeout``; ConfigError (one line) for a setting the split cannot use."""
    try:
        timeout = normalise_duration(timeout)
    except ValueError as err:
        raise ConfigError(f"--timeout: {err}") from None
    if not 1 <= batch_size <= max_batch_size:
        raise ConfigError(f"--batch-size {batch_size} is outside 1...{max_batch_size}")
    if not output or output.endswith("/"):
        raise ConfigError(f"--output {output!r} must name a file")
    return timeout


def _split(
    export: str,
    run: OpenOutputs,
    scratch: str,
    timeout: str,
    batch_size: int,
    multiline: bool,
    pipeline_args: list[str],
    launcher: Launcher,
) -> tuple[ExportPlan, dict[str, Any], int]:
    """Plan (one streamed pass), render the bodies with Beam, finalize the outputs and write the
    manifest; returns the plan, the manifest and the number of dead letters."""
    from apache_beam.io.filesystems import FileSystems

    from transforms.files.sinks import dead_shard_name, open_private
    from transforms.sources.zitadel.plan import plan_export

    layout = run.layout
    started = time.monotonic()
    with (
        _open_export(export) as handle,
        open_private(FileSystems.join(layout.tmp_dir, dead_shard_name(0))) as dead,
    ):
        plan = plan_export(handle, layout.tmp_dir, batch_size, scratch, dead)
    planned = time.monotonic() - started
    _LOGGER.info("planned %d bodies in %.1f s", len(plan.bodies), planned)
    elements = [b.element() for b in plan.bodies]
    pipeline = build_pipeline(elements, layout.tmp_dir, timeout, multiline, pipeline_args, launcher)
    result = launcher.run_pipeline(pipeline, layout.tmp_dir)
    beam_counts = launcher.counters_from_result(result)
    with launcher.finishing():
        bodies, dead_count, dead_sha = launcher.finalize_outputs(run)
        manifest = _manifest(
            plan,
            bodies,
            beam_counts,
            export,
            layout,
            timeout,
            batch_size,
            dead_count,
            dead_sha,
            started,
            planned,
        )
        launcher.write_manifest(layout.manifest, manifest)
    return plan, manifest, dead_count


def _manifest(
    plan, bodies, beam_counts, export, layout, timeout, batch_size, dead_count, dead_sha, started, planned
) -> dict[str, Any]:
    from transforms.output.manifest import ExportFields, ListedFile, build_manifest

    elapsed = time.monotonic() - started
    export_bytes = size(export)
    if len(bodies) != len(plan.bodies):
        raise RuntimeError(f"planned {len(plan.bodies)} bodies, {len(bodies)} were written")  # a bug
    for entry, body in zip(bodies, plan.bodies, strict=True):
        entry.update(
            {
                "after": body.after,
                "kind": body.kind,
                "org_id": body.org_id,
                "machine_users": body.machines,
                "records": body.records,
            }
        )
    counts = {**plan.counts, **beam_counts}
    placed = sum(b.users + b.machines + b.records for b in plan.bodies)
    read = counts.get("items_read", 0)
    holds = read == placed + dead_count and beam_counts.get("bodies_written", len(bodies)) == len(bodies)
    invariant = f"{read} items read = {placed} in bodies + {dead_count} dead-lettered"
    return build_manifest(
        manifest_path=layout.manifest,
        source=SOURCE,
        org_id=None,
        timeout=timeout,
        batch_size=batch_size,
        bodies=bodies,
        dead_letter=ListedFile(layout.dead_letter, dead_count, dead_sha),
        counts=counts,
        dead_letters_by_reason={"zitadel-export": plan.dead_by_reason},
        holds=holds,
        invariant=invariant,
        seconds=elapsed,
        hash_fields=hash_manifest(
            {PASSWORD_HASHES + v: n for v, n in plan.hash_counts.items()}, plan.hash_ranges, None
        ),
        export=ExportFields(path=export, size=export_bytes, org_ids=plan.org_ids, plan_seconds=planned),
    )


# The one description of this source (the registry finds it; the command line, the first look
# at input files and the report are built from it). It runs itself: it cannot sync.
DESCRIPTION = SourceDescription(
    kind=KIND,
    help="ZITADEL export document → dataOrgsv1 import bodies",
    add_arguments=add_arguments,
    document=DocumentRun(
        run=run,
        batch_help="at most this many users (human + machine) per body (default 5000)",
        dead_letter_help="NDJSON file for items that cannot be imported (default <stem>.dead-letter.ndjson)",
        multiline_help="pretty-print the bodies",
    ),
)
