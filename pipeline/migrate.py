"""The launcher every ``migrate`` command shares: flags, Beam options, outputs, manifest, summary.

A source command (``migrate_auth0``, ``migrate_keycloak``, ...) adds its own flags, matches its
input files, and hands ``run_migration`` a function that adds its source transform to the
pipeline. Everything after the source is shared:

    source ─► rows ─ UsersToBodies ─► temporary bodies ─┐
          └─► dead letters ──────────── WriteDeadLetterShards ─┤
                                                        └─ finalize (launcher): final names,
                                                           dead-letter file, manifest, summary

Run locally (FnApiRunner, in-process; add ``--direct_running_mode=multi_processing
--direct_num_workers=2`` for both cores) or on Dataflow (``--runner=DataflowRunner --project=P
--region=R --temp_location=gs://B/tmp --setup_file=./setup.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import os
import posixpath
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from pipeline import signals
from pipeline.errors import ConfigError
from pipeline.layout import OutputLayout, output_layout, passwordless_path, planned_outputs
from pipeline.preflight import check_written, spill_dir
from pipeline.report import counters_from_result, dead_letter_totals, not_carried_fields, summary_table
from transforms.common.durations import normalise_duration
from transforms.files.storage import check_gcs_reachable, check_local_outputs, relative_path, remove_workdir
from transforms.output.manifest import MANIFEST_VERSION

__all__ = [
    "add_common_arguments",
    "add_output_arguments",
    "CommonArgs",
    "common_args",
    "OutputLayout",
    "output_layout",
    "build_pipeline",
    "run_migration",
    "check_gcs_reachable",
    "check_local_outputs",
    "make_pipeline",
    "prepare_tmp",
    "finalize_outputs",
    "finalize_passwordless",
    "open_outputs",
    "RunOutputs",
    "run_pipeline",
    "write_manifest",
    "raise_output_failure",
    "planned_outputs",
    "batch_size_type",
    "MAX_BATCH_SIZE",
    "delete_tree",
    "relative_path",
    "MANIFEST_VERSION",
]

_LOGGER = logging.getLogger(__name__)


def add_output_arguments(
    parser: argparse.ArgumentParser,
    *,
    batch_help: str = "at most this many users per body (default 5000, about what fits in 5 minutes)",
    dead_letter_help: str = "NDJSON file for rejected records (default <stem>.dead-letter.ndjson)",
    multiline_help: str = "pretty-print the bodies (input layout is detected)",
) -> None:
    """The flags of every command that writes import bodies: where, how big, how strict."""
    parser.add_argument(
        "--output",
        default="./importBody.json",
        help="import body path (local or gs://); several bodies are written as "
        "<stem>-00001-of-0000N<ext> beside it (default ./importBody.json)",
    )
    parser.add_argument(
        "--timeout",
        default="5m0s",
        help="timeout written into each body, a Go duration (default 5m0s, the hosted limit)",
    )
    parser.add_argument("--multiline", action="store_true", help=multiline_help)
    parser.add_argument("--batch-size", type=batch_size_type, default=5000, help=batch_help)
    parser.add_argument("--dead-letter", default=None, help=dead_letter_help)
    parser.add_argument("--strict", action="store_true", help="exit 1 if anything was dead-lettered")
    add_break_lock_argument(parser)


MAX_BATCH_SIZE = 5000  # users per body: what the hosted endpoint imports within its 5-minute timeout


def batch_size_type(text: str) -> int:
    """``--batch-size``: an integer in 1...MAX_BATCH_SIZE (argparse turns the error into one line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (1...{MAX_BATCH_SIZE})") from None
    if not 1 <= value <= MAX_BATCH_SIZE:
        raise argparse.ArgumentTypeError(
            f"{text} is outside 1...{MAX_BATCH_SIZE} (users per body; the hosted import endpoint "
            f"takes about {MAX_BATCH_SIZE} within its 5-minute timeout, docs/zitadel-import-api.md)"
        )
    return value


def add_break_lock_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--break-lock",
        action="store_true",
        help="remove another run's lock on this output (only when that run is certainly gone)",
    )


def add_hash_arguments(parser: argparse.ArgumentParser) -> None:
    """What the target ZITADEL accepts as password hashes, and what to do with the rest."""
    group = parser.add_argument_group("password hashes (docs/password-hashes.md)")
    group.add_argument(
        "--zitadel-config",
        metavar="FILE",
        default=None,
        help="the target ZITADEL's config YAML: SystemDefaults.PasswordHasher.Verifiers and "
        ".Limits decide which hashes import (default: ZITADEL's defaults, bcrypt only); "
        "ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_* variables apply on top",
    )
    group.add_argument(
        "--on-unsupported-hash",
        choices=("dead-letter", "import-without-password"),
        default="dead-letter",
        help="a user whose hash the target cannot verify (unsupported algorithm, verifier not "
        "enabled, parameter out of limits): dead-letter them (default), or import them "
        "without a password and list them in <stem>.passwordless.ndjson for reset mails",
    )
    group.add_argument(
        "--bcrypt-min-cost",
        type=int,
        default=None,
        help="lowest bcrypt cost the server accepts; overrides Limits.Bcrypt.MinCost (default 10)",
    )
    group.add_argument(
        "--bcrypt-max-cost",
        type=int,
        default=None,
        help="highest bcrypt cost the server accepts; overrides Limits.Bcrypt.MaxCost (default 16)",
    )


def hash_policy_from_args(args: argparse.Namespace, environ=None):
    """--zitadel-config + environment + --bcrypt-*-cost → the HashPolicy; ConfigError on problems."""
    import os

    from transforms.hashing.policy import load_policy

    policy = load_policy(args.zitadel_config, os.environ if environ is None else environ)
    overrides = {}
    if args.bcrypt_min_cost is not None:
        overrides["Bcrypt_MinCost"] = args.bcrypt_min_cost
    if args.bcrypt_max_cost is not None:
        overrides["Bcrypt_MaxCost"] = args.bcrypt_max_cost
    policy = policy.with_limits(**overrides) if overrides else policy
    if not 4 <= policy.limit("Bcrypt.MinCost") <= policy.limit("Bcrypt.MaxCost") <= 31:
        raise ConfigError("--bcrypt-min-cost/--bcrypt-max-cost must satisfy 4 <= min <= max <= 31")
    return policy


def add_sync_arguments(parser: argparse.ArgumentParser) -> None:
    """Scheduled runs: compare with the state of the previous runs (docs/sync.md)."""
    group = parser.add_argument_group("scheduled sync (docs/sync.md)")
    group.add_argument(
        "--state",
        metavar="PATH",
        default=None,
        help="sync state folder (local or gs://): users already in ZITADEL are compared with what "
        "the state says the target holds; new users go to bodies, changed, blocked and removed "
        "users to <stem>.changes-*.ndjson, unchanged users nowhere. push commits the state",
    )
    group.add_argument(
        "--on-removed",
        choices=("report", "deactivate", "delete"),
        default="report",
        help="users in the state but gone from the export: list them (default), deactivate or "
        "delete them in ZITADEL",
    )
    group.add_argument(
        "--max-removals",
        metavar="N|P%",
        default="5%",
        help="refuse a run that would deactivate or delete more users than this (a count, or a "
        "percentage of the users in the state; default 5%%)",
    )


def removal_limit(text: str, users_in_state: int) -> int:
    """``--max-removals``: ``N`` or ``P%`` of the users in the state (rounded up)."""
    value = (text or "").strip()
    try:
        if value.endswith("%"):
            percent = float(value[:-1])
            if not 0 <= percent <= 100:
                raise ValueError
            # Rounded up: 5% of a 4-user state still allows one (a 0 limit would refuse any block).
            return math.ceil(users_in_state * percent / 100)
        count = int(value)
        if count < 0:
            raise ValueError
        return count
    except ValueError:
        raise ConfigError(
            f"--max-removals {text!r}: give a count (e.g. 50) or a percentage (e.g. 5%)"
        ) from None


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every user migrate command shares (zitadel-tools' plus ours)."""
    parser.add_argument("--org", required=True, help="id of the ZITADEL organization the users go to")
    add_output_arguments(parser)
    parser.add_argument("--metadata", action="store_true", help="carry source metadata into userMetadata")
    parser.add_argument(
        "--email-fallback",
        metavar="TEMPLATE",
        default=None,
        help="address for users without e-mail, e.g. '{username}@users.example.com' "
        "(placeholders {username}, {id}); always imported unverified (default: "
        "such users are dead letters)",
    )
    add_hash_arguments(parser)
    add_sync_arguments(parser)
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="a compressed input that ends early or is damaged: keep what was read and exit 0 "
        "(default: the records before the damage are written, but the run exits 1)",
    )
    push = parser.add_argument_group("push straight from the pipeline (see `zitadel-beam push`)")
    push.add_argument("--push-url", help="ZITADEL base URL: push the bodies when they are written")
    push.add_argument("--push-concurrency", type=int, default=1, help="bodies sent at once (default 1)")
    push.add_argument(
        "--push-verify", action="store_true", help="verify through events search after the push"
    )
    from pipeline.options import add_credential_arguments

    add_credential_arguments(parser)


@dataclasses.dataclass(frozen=True)
class CommonArgs:
    org_id: str
    output: str
    timeout: str
    multiline: bool
    batch_size: int
    dead_letter: str | None
    strict: bool
    metadata: bool
    bcrypt_min_cost: int
    bcrypt_max_cost: int
    push_url: str | None = None
    push_concurrency: int = 1
    push_verify: bool = False
    push_credentials: Any = None
    hash_policy: Any = None  # transforms.hashing.policy.HashPolicy
    on_unsupported_hash: str = "dead-letter"
    email_fallback: str | None = None  # --email-fallback TEMPLATE (transforms/common/ids.py)
    state: str | None = None  # --state PATH (docs/sync.md)
    on_removed: str = "report"
    max_removals: str = "5%"
    break_lock: bool = False
    allow_partial: bool = False  # --allow-partial: a cut input file does not fail the run


def common_args(args: argparse.Namespace) -> CommonArgs:
    """Check the shared flags; every problem is one ConfigError line."""
    org = (args.org or "").strip()
    if not org or not re.fullmatch(r"[A-Za-z0-9_-]{1,200}", org):
        raise ConfigError(f"--org {args.org!r} is not an organization id (digits, e.g. --org=123456789)")
    try:
        timeout = normalise_duration(args.timeout)
    except ValueError as err:
        raise ConfigError(f"--timeout: {err}") from None
    policy = hash_policy_from_args(args)
    fallback = getattr(args, "email_fallback", None)
    if fallback is not None:
        from transforms.common.ids import check_template

        problem = check_template(fallback)
        if problem is not None:
            raise ConfigError(problem)
    if not args.output or args.output.endswith("/"):
        raise ConfigError(f"--output {args.output!r} must name a file")
    if getattr(args, "state", None) is not None:
        removal_limit(args.max_removals, 0)  # the syntax, now; the limit needs the state's size
    credentials = None
    if args.push_url:
        from pipeline.options import credentials_from_args
        from transforms.zitadel_api.client import connect

        if args.push_concurrency < 1:
            raise ConfigError("--push-concurrency must be at least 1")
        credentials = credentials_from_args(args)
        # Probe now: a bad URL or token must fail before an hour of conversion, not after it.
        connect(args.push_url, credentials, max_attempts=2)
    return CommonArgs(
        org,
        args.output,
        timeout,
        args.multiline,
        args.batch_size,
        args.dead_letter,
        args.strict,
        args.metadata,
        policy.limit("Bcrypt.MinCost"),
        policy.limit("Bcrypt.MaxCost"),
        args.push_url,
        args.push_concurrency,
        args.push_verify,
        credentials,
        policy,
        args.on_unsupported_hash,
        fallback,
        getattr(args, "state", None),
        getattr(args, "on_removed", "report"),
        getattr(args, "max_removals", "5%"),
        bool(getattr(args, "break_lock", False)),
        getattr(args, "allow_partial", False),
    )


def make_pipeline(pipeline_args: list[str]):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

    options = PipelineOptions(pipeline_args)
    runner_name = options.view_as(StandardOptions).runner
    if runner_name in (None, "FnApiRunner"):
        # The plain DirectRunner tries to download Prism first and falls back to a far slower
        # runner (docs/runners.md#local); the FnApiRunner is what "the local runner" means here.
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        options.view_as(StandardOptions).runner = None
        return beam.Pipeline(runner=FnApiRunner(), options=options)
    try:
        return beam.Pipeline(options=options)
    except ValueError as err:  # e.g. an unknown --runner: Beam lists the valid ones
        raise ConfigError(f"--runner: {str(err).splitlines()[0]}") from None


def build_pipeline(
    add_source: Callable[[Any, str], Mapping[str, Any]],
    common: CommonArgs,
    layout: OutputLayout,
    pipeline_args: list[str],
    sync: tuple[Any, Mapping[int, str]] | None = None,
    defined_roles: list | None = None,
):
    """Build (and return, not run) the pipeline: source → bodies + dead letters.

    A source with roles (``--project-id``) also returns ``'roles'``; with ``defined_roles`` (the
    roles the export defines), ``transforms.output.grants.ResolveRoles`` turns them into the catalogue
    and the case-collision losers the bodies leave out (docs/roles.md).

    With ``sync`` (``(SyncOptions, state shard paths)``), the source's users are compared with
    the state first (transforms/sync/compare.py): only new users reach the bodies.

    ``add_source(pipeline, tmp_dir)`` adds the source and returns ``{'rows', 'dead'}``;
    ``tmp_dir`` is the run's temporary folder for spill files (removed when the run ends).
    """
    import apache_beam as beam

    from transforms.files.sinks import WriteDeadLetterShards
    from transforms.output.bodies import BodySpec, UsersToBodies

    pipeline = make_pipeline(pipeline_args)
    source = add_source(pipeline, layout.tmp_dir)
    if sync is not None:
        from transforms.sync.compare import CompareWithState

        options, shards = sync
        synced = source["rows"] | "Sync" >> CompareWithState(
            options, shards, layout.tmp_dir, dead=source["dead"]
        )
        # Roles come from every user read, new or not: the catalogue stays whole.
        source = {**synced, **({"roles": source["roles"]} if "roles" in source else {})}
    spec = BodySpec(common.org_id, common.timeout, common.batch_size, common.multiline)
    role_losers = None
    if "roles" in source:
        from transforms.output.grants import ResolveRoles

        role_losers = source["roles"] | "Roles" >> ResolveRoles(defined_roles or [], layout.tmp_dir)
    bodies = source["rows"] | "ToBodies" >> UsersToBodies(spec, layout.tmp_dir, role_losers)
    dead = (source["dead"], bodies["dead"]) | "AllDeadLetters" >> beam.Flatten()
    _ = dead | "DeadLetters" >> WriteDeadLetterShards(layout.tmp_dir)
    return pipeline


# --------------------------------------------------------------------------- finalize


def prepare_tmp(tmp_dir: str) -> None:
    """A gs:// work folder (remote runners: one per run id under --temp_location) starts empty."""
    from apache_beam.io.filesystems import FileSystems

    if "://" in tmp_dir and FileSystems.exists(tmp_dir):
        delete_tree(tmp_dir)


def delete_tree(path: str) -> None:
    """Remove a run's work folder: local ones through ``remove_workdir`` (never into a link)."""
    if "://" not in path:
        remove_workdir(path)
        return
    from apache_beam.io.filesystems import FileSystems

    matched = FileSystems.match([path.rstrip("/") + "/*"])[0].metadata_list
    if matched:
        FileSystems.delete([m.path for m in matched])


def _existing_bodies(layout: OutputLayout) -> list[str]:
    """Files at the names a run's bodies take (the single body and any numbered one)."""
    pattern = f"{layout.stem}-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]{layout.ext}"
    if "://" in layout.output:
        from apache_beam.io.filesystems import FileSystems

        found = [m.path for m in FileSystems.match([pattern])[0].metadata_list]
        return sorted(found + ([layout.output] if FileSystems.exists(layout.output) else []))
    import glob

    found = glob.glob(glob.escape(layout.stem) + pattern[len(layout.stem) :])
    return sorted(found + ([layout.output] if os.path.lexists(layout.output) else []))


@dataclasses.dataclass
class RunOutputs:
    """What a migrate run holds while it runs: its lock, its work folder, the files it may replace.

    ``close()`` removes the work folder (only what the run created) and releases the lock; it is
    also registered as the clean-up of an interrupted run (pipeline/signals.py).
    """

    layout: OutputLayout
    lock: Any
    owned: dict[str, str | None]
    _token: int = 0

    def check_replaceable(self, paths: list[str]) -> None:
        from transforms.files.guards import check_owned

        check_owned(paths, self.owned, {self.layout.dead_letter: "--dead-letter"})

    def remove_work(self) -> None:
        try:
            delete_tree(self.layout.tmp_dir)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        from transforms.files.storage import unregister_cleanup

        try:
            self.remove_work()
        finally:
            self.lock.release()
            unregister_cleanup(self._token)


def open_outputs(
    layout: OutputLayout, pipeline_args: list[str], *, command: str, break_lock: bool
) -> RunOutputs:
    """Before a migrate run reads anything: outputs writable, the lock taken, every file already at
    an output name the earlier run's own, and a private work folder made. ConfigError otherwise."""
    from transforms.files.guards import check_owned, owned_digests, previous_manifest
    from transforms.files.locks import acquire_lock, lock_path_for
    from transforms.files.storage import private_workdir, register_cleanup

    check_local_outputs({"--output": layout.output, "--dead-letter": layout.dead_letter})
    lock = acquire_lock(
        lock_path_for(layout.output), what=f"{command} --output={layout.output}", break_lock=break_lock
    )
    try:
        owned = owned_digests(previous_manifest(layout.manifest), layout.manifest)
        existing = _existing_bodies(layout) + [layout.dead_letter, passwordless_path(layout)]
        check_owned(existing, owned, {layout.dead_letter: "--dead-letter"})
        tmp = spill_dir(pipeline_args, "")
        if not tmp and "://" in layout.output:
            import uuid

            from transforms.files.storage import WORKDIR_MARK

            folder, name = posixpath.split(layout.output)
            tmp = f"{folder}/.{name}{WORKDIR_MARK}{uuid.uuid4().hex[:12]}"  # a new name per run
        if tmp:
            prepare_tmp(tmp)
        else:
            try:
                tmp = private_workdir(layout.output)
            except OSError as err:
                raise ConfigError(
                    f"--output {layout.output!r}: cannot create a work folder beside it ({err.strerror or err})"
                ) from None
        run = RunOutputs(dataclasses.replace(layout, tmp_dir=tmp), lock, owned)
    except BaseException:
        lock.release()
        raise
    run._token = register_cleanup(run.close)
    return run


def finalize_outputs(run: RunOutputs) -> tuple[list[dict[str, Any]], int, str]:
    """Rename temporary bodies to final names, assemble the dead-letter file.

    Returns the bodies, the dead-letter count and the dead-letter file's sha256. A file at a
    body's name is replaced or deleted only when the earlier run's manifest names it with a
    sha256 that still matches (checked again here, right before).
    """
    import hashlib

    from apache_beam.io.filesystems import FileSystems

    from transforms.files.sinks import DEAD_SHARDS, dead_shard_name, open_private
    from transforms.output.bodies import parse_body_temp_name

    layout = run.layout
    tmp = layout.tmp_dir
    found = FileSystems.match([FileSystems.join(tmp, "body-*")])[0].metadata_list
    parsed = sorted((parse_body_temp_name(posixpath.basename(m.path)), m.path) for m in found)
    total = len(parsed)
    finals = [layout.output] if total == 1 else [layout.numbered(i + 1, total) for i in range(total)]
    existing = _existing_bodies(layout)
    run.check_replaceable(existing + [layout.dead_letter])
    stale = [path for path in existing if path not in finals]
    if stale:
        FileSystems.delete(stale)
    if parsed:
        FileSystems.rename([path for _, path in parsed], finals)
    manifest_dir = posixpath.dirname(layout.manifest)
    bodies = [
        {"path": relative_path(manifest_dir, final), "users": users, "sha256": digest, "after": []}
        for ((_, users, digest), _), final in zip(parsed, finals, strict=True)
    ]
    count = 0
    digest = hashlib.sha256()
    with open_private(layout.dead_letter) as out:
        for shard in range(DEAD_SHARDS):
            path = FileSystems.join(tmp, dead_shard_name(shard))
            if not FileSystems.exists(path):
                continue
            with FileSystems.open(path) as handle:
                for line in handle:
                    out.write(line)
                    digest.update(line)
                    count += 1
    return bodies, count, digest.hexdigest()


def finalize_passwordless(run: RunOutputs) -> tuple[str, int, str | None]:
    """Join the run's passwordless listings (transforms/hashing/tally.py) into
    ``<stem>.passwordless.ndjson`` (mode 0600); repeats from retried bundles are dropped.

    Returns the path, the count and the file's sha256 (None when there is no list: an earlier
    run's list, checked to be that run's own, is deleted, as it would be wrong for this one)."""
    import hashlib

    from apache_beam.io.filesystems import FileSystems

    from transforms.files.sinks import open_private
    from transforms.hashing.tally import PASSWORDLESS_PREFIX

    layout = run.layout
    path = passwordless_path(layout)
    run.check_replaceable([path])
    found = sorted(
        m.path
        for m in FileSystems.match([FileSystems.join(layout.tmp_dir, PASSWORDLESS_PREFIX + "*")])[
            0
        ].metadata_list
    )
    if not found:
        if FileSystems.exists(path):
            FileSystems.delete([path])
        return path, 0, None
    seen: set[bytes] = set()
    digest = hashlib.sha256()
    with open_private(path) as out:
        for part in found:
            with FileSystems.open(part) as handle:
                for line in handle:
                    if line not in seen:
                        seen.add(line)
                        out.write(line)
                        digest.update(line)
    return path, len(seen), digest.hexdigest()


def write_manifest(path: str, manifest: Mapping[str, Any]) -> None:
    """The manifest goes last, whole or not at all (temp name + rename, mode 0600)."""
    import orjson

    from transforms.files.sinks import open_private

    with open_private(path, fsync=True) as handle:
        handle.write(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")


def run_pipeline(pipeline, work_dir: str | None = None):
    """Run and wait; a signal stops it (pipeline/signals.py), whatever the runner is doing.

    With a local ``work_dir``, stderr is captured in it while the pipeline runs (worker
    processes print a failing step's traceback there) and shown afterwards unless the run ends
    in a one-line report (a full disk, an interruption).
    """
    captured = os.path.join(work_dir, "stderr.txt") if work_dir and "://" not in work_dir else None
    if captured and not signals.capture_stderr(captured):
        captured = None
    replay = True
    try:
        result = pipeline.run()
        result.wait_until_finish()
    except BaseException as err:
        replay = not (signals.received() or _no_space(err))
        raise
    finally:
        if captured:
            signals.restore_stderr(captured, replay)
    return result


_NO_SPACE = re.compile(
    r"\[Errno (?:28|27|122)\][^\n\\\[\]'\"]*|No space left on device|File too large|Disk quota exceeded"
)


def _no_space(err: BaseException) -> str | None:
    """The cause, when ``err`` is a full disk, a file-size limit or a quota (Beam wraps a worker's
    OSError in a RuntimeError holding its text, so the text is searched too)."""
    if isinstance(err, OSError) and err.errno in (27, 28, 122):
        return f"[Errno {err.errno}] {err.strerror}"
    found = _NO_SPACE.search(str(err).split("\n", 1)[0] + " " + repr(err)[:2000])
    return found.group(0).strip() if found else None


def raise_output_failure(err: BaseException, layout: OutputLayout) -> None:
    """A full disk (or a file-size or quota limit) while writing: one ConfigError line, no traceback.

    Beam reports a worker's OSError as a RuntimeError holding its traceback text, so the text is
    searched as well as the exception itself.
    """
    if isinstance(err, ConfigError) or signals.received():
        return
    cause = _no_space(err)
    if cause is None:
        return
    raise ConfigError(
        f"--output {layout.output!r}: writing failed ({cause[:160]}): free space or raise the limit, then "
        "run again; nothing was kept (no manifest)"
    ) from None


def partial_input_lines(counts: Mapping[str, int], names: Mapping[int, str]) -> list[str]:
    """One line per input file the readers found cut short or damaged (docs/inputs.md)."""
    lines = []
    for name, value in sorted(counts.items()):
        if name.startswith("inputs.partial."):
            index = int(name.rsplit(".", 1)[1])
            path = names.get(index, f"input file #{index}")
            lines.append(
                f"{path} was cut short or is damaged: {value} records were read before it "
                "(an unreadable-input dead letter; --allow-partial accepts this)"
            )
    return lines


def _write_authorizations(
    run: RunOutputs,
    common: CommonArgs,
    roles: Any,
    catalogue: list,
    bodies: list[dict[str, Any]],
    counts: dict[str, int],
    held: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    """Write ``<stem>.authorizations<ext>`` and list it first; every user body comes ``after`` it.

    ``held``: the sha256 of the authorizations body the sync state says the target holds (docs/
    sync.md#grants); the same body is not written again, so a night with nothing new writes none.
    Returns the bodies, the manifest's ``authorizations`` and the body's sha256.
    """
    import hashlib

    from transforms.files.sinks import open_private
    from transforms.output.grants import authorizations_body, authorizations_fields

    layout = run.layout
    data = authorizations_body(common.org_id, common.timeout, roles, catalogue, common.multiline)
    digest = hashlib.sha256(data).hexdigest()
    fields = authorizations_fields(counts, roles, len(catalogue))
    path = f"{layout.stem}.authorizations{layout.ext}"
    run.check_replaceable([path])  # an earlier run's own file only (transforms/files/guards.py)
    if digest == held:
        if os.path.lexists(path) and "://" not in path:
            os.unlink(path)  # checked above: the earlier run's own file
        return bodies, fields, digest
    with open_private(path) as handle:
        handle.write(data)
    first = {
        "path": relative_path(posixpath.dirname(layout.manifest), path),
        "users": 0,
        "sha256": digest,
        "after": [],
        "kind": "authorizations",
    }
    shifted = [{**b, "after": [0] + [a + 1 for a in b["after"]]} for b in bodies]
    counts["bodies_written"] = counts.get("bodies_written", 0) + 1
    return [first] + shifted, fields, digest


def run_migration(**kwargs: Any) -> int:
    """Run a migration (``_run_migration``); with ``--state``, hold the state's lock throughout,
    push included, so that two runs on one state cannot interleave (docs/sync.md#state)."""
    common: CommonArgs = kwargs["common"]
    if not common.state:
        return _run_migration(**kwargs)
    from transforms.sync.state import acquire_state_lock

    check_gcs_reachable([common.state])
    with acquire_state_lock(common.state, f"migrate {kwargs['source_name']}", common.break_lock):
        return _run_migration(**kwargs)


def _run_migration(
    *,
    source_name: str,
    add_source: Callable[[Any, str], Mapping[str, Any]],
    common: CommonArgs,
    pipeline_args: list[str],
    input_paths: list[str],
    summary_lines: Callable[[Mapping[str, int]], list[tuple[str, Any]]],
    invariant: Callable[[Mapping[str, int]], tuple[bool, str]],
    extra_manifest: Mapping[str, Any] | None = None,
    sync_source: Mapping[str, Any] | None = None,
    input_names: Mapping[int, str] | None = None,
    roles: Any = None,
    defined_roles: list | None = None,
) -> int:
    """Run the pipeline, finalize the outputs, write the manifest, print the summary.

    ``sync_source`` (``{"include_blocked": bool, "realm": str | None}``) is given by sources that
    can sync; with ``--state`` the run compares with the state (docs/sync.md).

    ``invariant(counts)`` returns ``(holds, text)``: the run's accounting (every input record
    written or dead-lettered). A broken invariant is reported and exits 3: it is a bug.
    ``input_names`` (file index → path) names the input files the readers counted as cut
    (``inputs.partial.<index>``): without ``--allow-partial`` the run exits 1 and pushes nothing.
    """
    from transforms.hashing.summary import hash_manifest, hash_ranges_from_result

    layout = output_layout(common.output, common.dead_letter)
    check_gcs_reachable(input_paths + [layout.output, layout.dead_letter])
    sync = None
    if common.state:
        from transforms.sync.compare import SyncOptions
        from transforms.sync.state import StateStore

        if sync_source is None:
            raise ConfigError(f"--state: migrate {source_name} cannot sync (auth0 and keycloak can)")
        store = StateStore(common.state)
        pointer = store.read_pointer()
        sync_options = SyncOptions(
            org_id=common.org_id,
            source=source_name,
            partitions=store.partitions(pointer),
            on_removed=common.on_removed,
            include_blocked=bool(sync_source.get("include_blocked")),
            realm=sync_source.get("realm"),
        )
        users_in_state = int((pointer or {}).get("users", 0))
        max_removals = removal_limit(common.max_removals, users_in_state)
        sync = (sync_options, store.shard_paths(pointer))
    run = open_outputs(layout, pipeline_args, command=f"migrate {source_name}", break_lock=common.break_lock)
    layout = run.layout
    try:
        pipeline = build_pipeline(add_source, common, layout, pipeline_args, sync, defined_roles)
        started = time.monotonic()
        result = run_pipeline(pipeline, layout.tmp_dir)
        elapsed = time.monotonic() - started
        counts = counters_from_result(result)
        hash_fields = hash_manifest(counts, hash_ranges_from_result(result), common.hash_policy)
        holds, invariant_text = invariant(counts)
        sync_fields: dict[str, Any] = {}
        if sync is not None:
            removals = counts.get("sync.removals", 0)
            if removals > max_removals:
                raise ConfigError(
                    f"--max-removals: refused: this run would deactivate or delete {removals:,} users, "
                    f"more than the limit of {max_removals:,} ({common.max_removals} of "
                    f"{users_in_state:,} users in the state); check the export, or raise --max-removals"
                )
        with signals.finishing():
            if sync is not None:
                from transforms.sync.change_files import finalize_changes, sync_manifest

                changes = finalize_changes(
                    layout.tmp_dir, layout.stem, posixpath.dirname(layout.manifest), run.check_replaceable
                )
                sync_fields = {
                    "sync": sync_manifest(
                        counts, store.root, pointer, common.on_removed, max_removals, changes
                    )
                }
            passwordless, passwordless_count, passwordless_sha = finalize_passwordless(run)
            if roles is not None:  # the authorizations body, first in the manifest (docs/roles.md)
                from transforms.output.grants import read_catalogue

                catalogue = read_catalogue(layout.tmp_dir)
            bodies, dead_count, dead_sha = finalize_outputs(run)
            authorizations: dict[str, Any] = {}
            if roles is not None:
                held = (pointer or {}).get("authorizations_sha256") if sync is not None else None
                bodies, authorizations, roles_digest = _write_authorizations(
                    run, common, roles, catalogue, bodies, counts, held
                )
                if sync is not None:  # push records it in the state once the target confirmed it
                    sync_fields["sync"]["authorizations_sha256"] = roles_digest
                holds = holds and authorizations["invariant"]["holds"]
                invariant_text += "; " + authorizations["invariant"]["text"]
            elif counts.get("roles.users_holding"):
                authorizations = {"users_holding_roles": counts["roles.users_holding"]}
            manifest_dir = posixpath.dirname(layout.manifest)
            manifest = {
                "version": MANIFEST_VERSION,
                "tool": "zitadel-beam",
                "source": source_name,
                "org_id": common.org_id,
                "timeout": common.timeout,
                "batch_size": common.batch_size,
                "bodies": bodies,
                "dead_letter": {
                    "path": relative_path(manifest_dir, layout.dead_letter),
                    "count": dead_count,
                    "sha256": dead_sha,
                },
                "counts": counts,
                "dead_letters_by_reason": dead_letter_totals(counts),
                "invariant": {"holds": holds, "text": invariant_text},
                "seconds": round(elapsed, 3),
                **hash_fields,
                **not_carried_fields(counts),
                "passwordless": {
                    "path": relative_path(manifest_dir, passwordless),
                    "count": passwordless_count,
                    **({"sha256": passwordless_sha} if passwordless_sha else {}),
                },
                # Users without e-mail given --email-fallback's address; users given a derived id.
                "email_fallback": counts.get("notes.email-fallback", 0),
                "derived_ids": counts.get("notes.derived-id", 0),
                "control_chars_removed": counts.get("notes.control-chars-removed", 0),
                **(extra_manifest or {}),
                **sync_fields,
                **({"authorizations": authorizations} if authorizations else {}),
            }
            write_manifest(layout.manifest, manifest)
    except BaseException as err:
        run.close()  # spill files and temporary bodies hold password hashes: never left behind
        raise_output_failure(err, layout)
        raise
    run.remove_work()
    try:
        return _report_and_push(
            _Finished(
                source_name,
                common,
                layout,
                counts,
                hash_fields,
                holds,
                invariant_text,
                bodies,
                dead_count,
                elapsed,
                passwordless,
                passwordless_count,
                sync_fields.get("sync"),
                roles,
            ),
            summary_lines,
            input_names or {},
        )
    finally:
        run.close()  # the lock is held until the push (if any) is done


@dataclasses.dataclass(frozen=True)
class _Finished:
    """What a finished migrate run reports (and pushes)."""

    source_name: str
    common: CommonArgs
    layout: OutputLayout
    counts: dict[str, int]
    hash_fields: dict[str, Any]
    holds: bool
    invariant_text: str
    bodies: list[dict[str, Any]]
    dead_count: int
    elapsed: float
    passwordless_path: str
    passwordless_count: int
    sync: dict[str, Any] | None
    roles: Any  # transforms.mapping.roles.RoleSettings with --project-id, else None


def _report_and_push(
    done: _Finished,
    summary_lines: Callable[[Mapping[str, int]], list[tuple[str, Any]]],
    input_names: Mapping[int, str],
) -> int:
    from transforms.hashing.summary import hash_summary

    common, layout, counts, bodies = done.common, done.layout, done.counts, done.bodies
    lines = summary_lines(counts)
    if done.roles is not None or counts.get("roles.users_holding"):
        from transforms.output.grants import summary_lines as role_lines

        lines += role_lines(counts, done.roles)
    if done.sync is not None:
        from transforms.sync.change_files import sync_summary_lines

        lines += sync_summary_lines(counts)
    lines += [
        ("", ""),
        ("bodies written", len(bodies)),
        ("dead letters written", done.dead_count),
        ("seconds", f"{done.elapsed:.1f}"),
    ]
    print(summary_table(f"zitadel-beam migrate {done.source_name}: summary", lines))
    if hash_summary(done.hash_fields):
        print(hash_summary(done.hash_fields))
    print(f"accounting: {done.invariant_text} [{'ok' if done.holds else 'BROKEN'}]")
    print(f"manifest: {layout.manifest}")
    if bodies:
        print(f"bodies: {bodies[0]['path']}" + (f" ... {bodies[-1]['path']}" if len(bodies) > 1 else ""))
    if done.dead_count:
        print(f"dead letters: {layout.dead_letter}")
    for change in (done.sync or {}).get("changes", []):
        print(f"changes: {change['path']} ({change['users']} users, {change['calls']} calls)")
    if done.passwordless_count:
        print(
            f"imported without password ({done.passwordless_count}, for password-reset mails): "
            f"{done.passwordless_path}"
        )
    sys.stdout.flush()
    if not done.holds or check_written(layout.manifest):
        return 3
    partial = partial_input_lines(counts, input_names)
    if partial:
        for line in partial:
            print(f"zitadel-beam: {line}", file=sys.stderr)
        if not common.allow_partial:
            return 1
    if common.push_url:
        from transforms.push.engine import push_manifest

        signals.set_resume_hint(
            f"the bodies and {layout.manifest} are written and bodies the ledger records as done are "
            f"kept; resume with zitadel-beam push --manifest={layout.manifest}"
        )
        report = push_manifest(
            layout.manifest,
            common.push_url,
            common.push_credentials,
            concurrency=common.push_concurrency,
            verify=common.push_verify,
            hash_policy=common.hash_policy,
        )
        print(report.table())
        if report.verify is not None:
            print(report.verify.table())
        if not report.ok:
            print(f"zitadel-beam: push: {report.failure_line()}", file=sys.stderr)
            return 1
    if common.strict and done.dead_count:
        print(f"zitadel-beam: --strict: {done.dead_count} record(s) dead-lettered", file=sys.stderr)
        return 1
    return 0
