"""Checks every command runs before any work starts: can the chosen runner reach every path?

A remote runner (Dataflow, Flink, Spark, a portable job server) runs the pipeline on other
machines, which cannot read or write this machine's disk. Such a run could never succeed, and
without this check it hangs for minutes or fails late with a network error. So, with a runner
that is not one of Beam's local runners, every data path a command takes (inputs, outputs, dead
letters, manifests, ledgers) must be ``gs://`` and ``--temp_location`` must be given (also
``gs://``): the run's spill files go under it, one folder per run id. See ``docs/runners.md``.

Credential files (``--token-file``, ``--client-secret-file``, ``--service-account``) are read by
the launcher on this machine and stay local.

Example::

    check_paths(known_args, ["--runner=DataflowRunner", "--temp_location=gs://b/tmp"])
    tmp = spill_dir(pipeline_args, layout.tmp_dir)
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import time
import uuid
from collections.abc import Iterator

from transforms.common.errors import ConfigError
from transforms.files.storage import is_remote

__all__ = [
    "LOCAL_RUNNERS",
    "REMOTE_RUNNERS",
    "PATH_FLAGS",
    "runner_name",
    "runs_remotely",
    "check_paths",
    "run_id",
    "spill_dir",
    "check_written",
    "check_inputs_read_only",
    "dataflow_client_installed",
]

# Beam 2.77's StandardOptions.LOCAL_RUNNERS, plus InteractiveRunner (which runs on a local runner
# underneath). A test keeps this list equal to Beam's; it is copied so that the check needs no
# `import apache_beam` (seconds) before it can answer.
LOCAL_RUNNERS = (
    "BundleBasedDirectRunner",
    "DirectRunner",
    "SwitchingDirectRunner",
    "FnApiRunner",
    "PrismRunner",
    "TestDirectRunner",
    "InteractiveRunner",
)

# Beam 2.77's other known runners (StandardOptions.ALL_KNOWN_RUNNERS). An unknown bare name is left
# to Beam, which rejects it listing the valid ones; a dotted class path counts as remote.
REMOTE_RUNNERS = (
    "DataflowRunner",
    "TestDataflowRunner",
    "FlinkRunner",
    "SparkRunner",
    "PortableRunner",
    "KafkaStreamsRunner",
)

DATAFLOW_RUNNERS = ("DataflowRunner", "TestDataflowRunner")

# argparse dest → flag, for every flag of any command that names data (not credentials), after
# the source's own that its workers read (``SourceDescription.worker_files``, set by the CLI).
PATH_FLAGS = {
    "output": "--output",
    "dead_letter": "--dead-letter",
    "manifest": "--manifest",
    "body": "--body",
    "results": "--results",
    "work_dir": "--work-dir",
    "gcs_document": "--gcs-document",
    "gcs_output": "--gcs-output",
    "state": "--state",  # the compare step's workers read the state shards
}
_NO_FILE = {"none"}  # `--passwords=none`: no file at all


def _beam_flags(pipeline_args: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for name in ("--runner", "--temp_location", "--staging_location", "--job_name"):
        parser.add_argument(name, default=None)
    known, _ = parser.parse_known_args(pipeline_args)
    return known


def runner_name(pipeline_args: list[str]) -> str | None:
    """The ``--runner`` value as a class name (``dataflow`` → ``DataflowRunner``), or None."""
    runner = _beam_flags(pipeline_args).runner
    if not runner:
        return None
    name = runner.rsplit(".", 1)[-1]
    # Beam accepts any case and an omitted "Runner" suffix (runners/runner.py create_runner).
    if not name.lower().endswith("runner"):
        name += "Runner"
    for local in LOCAL_RUNNERS + REMOTE_RUNNERS:
        if local.lower() == name.lower():
            return local
    return name


def runs_remotely(pipeline_args: list[str]) -> bool:
    """True when the pipeline runs on other machines (any runner but Beam's local ones)."""
    name = runner_name(pipeline_args)
    if name is None or name in LOCAL_RUNNERS:
        return False
    return name in REMOTE_RUNNERS or "." in (_beam_flags(pipeline_args).runner or "")


def _source_flags(known_args: argparse.Namespace, worker: bool) -> dict[str, str]:
    """A source command's flags naming files it reads (``files`` of its description), or only
    those its workers read; {} for the other commands."""
    files: dict[str, str] = dict(getattr(known_args, "_files", None) or {})
    if worker:
        return {
            dest: flag for dest, flag in files.items() if dest in getattr(known_args, "_worker_files", ())
        }
    return files


def _paths(known_args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    for dest, flag in {**_source_flags(known_args, worker=True), **PATH_FLAGS}.items():
        value = getattr(known_args, dest, None)
        for path in value if isinstance(value, list) else [value]:
            if path and path.strip().lower() not in _NO_FILE:
                yield flag, path


def check_paths(known_args: argparse.Namespace, pipeline_args: list[str]) -> None:
    """Raise ConfigError (one line, exit 2) when a remote runner is given a path it cannot reach."""
    if not runs_remotely(pipeline_args):
        return
    runner = runner_name(pipeline_args)
    for flag, path in _paths(known_args):
        if not path.startswith("gs://"):
            raise ConfigError(
                f"{flag} {path!r} is not on Cloud Storage: {runner} workers cannot reach this "
                f"machine's files; use a gs:// path (docs/runners.md)"
            )
    temp = _beam_flags(pipeline_args).temp_location
    if not temp:
        raise ConfigError(
            f"{runner} needs --temp_location=gs://BUCKET/tmp (spill files and staging go "
            f"there; docs/runners.md)"
        )
    if not temp.startswith("gs://"):
        raise ConfigError(
            f"--temp_location {temp!r} is not on Cloud Storage: {runner} workers cannot reach "
            f"this machine's files; use a gs:// path (docs/runners.md)"
        )
    staging = _beam_flags(pipeline_args).staging_location
    if staging and not staging.startswith("gs://"):
        raise ConfigError(
            f"--staging_location {staging!r} is not on Cloud Storage: use a gs:// path (docs/runners.md)"
        )
    if runner in DATAFLOW_RUNNERS and not dataflow_client_installed():
        raise ConfigError(
            f"{runner} needs Beam's gcp extra (the Dataflow service client): "
            f"pip install '.[dataflow]' (docs/runners.md#dataflow)"
        )


def dataflow_client_installed() -> bool:
    """Is the client Beam's DataflowRunner submits jobs with importable? (Found, not imported.)"""
    try:
        return importlib.util.find_spec("google.cloud.dataflow") is not None
    except ModuleNotFoundError:  # no google.cloud at all
        return False


def run_id(pipeline_args: list[str]) -> str:
    """``--job_name`` when given, else a UTC timestamp plus a random suffix."""
    job = _beam_flags(pipeline_args).job_name
    if job and re.fullmatch(r"[A-Za-z0-9._-]{1,100}", job):
        return job
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


def spill_dir(pipeline_args: list[str], local_dir: str) -> str:
    """The run's temporary folder (spill files, temporary bodies, dead-letter shards).

    Local runners: ``local_dir`` (beside the output, as before). Remote runners: a folder per run
    under ``--temp_location``, which ``check_paths`` has made sure is ``gs://``.
    """
    if not runs_remotely(pipeline_args):
        return local_dir
    temp = _beam_flags(pipeline_args).temp_location or ""
    return f"{temp.rstrip('/')}/zitadel-beam/{run_id(pipeline_args)}"


def check_written(manifest_path: str) -> int:
    """After a run: 0 when the bodies on disk (or in the bucket) agree with the manifest, else 3.

    Re-reads every body the manifest lists (sha256, users per body, the run's counters), so a run
    whose outputs went missing or were cut short is never reported as a success.
    """
    from transforms.output.manifest import recount

    problems = recount(manifest_path)
    if not problems:
        return 0
    print(
        f"zitadel-beam: the written bodies disagree with {manifest_path}: {'; '.join(problems[:5])}",
        file=sys.stderr,
    )
    return 3


# argparse dest → flag of every file a command reads (data, credentials, configuration), after a
# source's own (``SourceDescription.files``, set by the CLI).
INPUT_FLAGS = {
    "manifest": "--manifest",
    "body": "--body",
    "zitadel_config": "--zitadel-config",
    "token_file": "--token-file",
    "client_secret_file": "--client-secret-file",
    "key_file": "--key-file",
    "service_account": "--service-account",
    **{
        f"{side}_{name}": f"--{side}-{name.replace('_', '-')}"
        for side in ("source", "target")
        for name in ("token_file", "client_secret_file", "key_file")
    },
}


def _inputs(known_args: argparse.Namespace) -> dict[str, list[str]]:
    inputs: dict[str, list[str]] = {}
    for dest, flag in {**_source_flags(known_args, worker=False), **INPUT_FLAGS}.items():
        value = getattr(known_args, dest, None)
        given = value if isinstance(value, list) else [value]
        values = [str(v) for v in given if v and str(v).strip().lower() not in _NO_FILE]
        if values:
            inputs[flag] = values
    implied = getattr(known_args, "_implied_files", None)
    if implied is not None:  # e.g. Auth0's ./passwords.json (zitadel-tools' default)
        inputs.update(implied(known_args))
    return inputs


def _outputs(known_args: argparse.Namespace) -> dict[str, str]:
    import os
    import posixpath

    from transforms.files.locks import lock_path_for

    command = known_args._path
    outputs: dict[str, str] = {}
    if command[0] == "migrate":
        from pipeline.layout import planned_outputs

        outputs.update(planned_outputs(known_args.output, known_args.dead_letter))
        state = getattr(known_args, "state", None)
        if state:  # the sync state (docs/sync.md#state): its pointer, shards and lock
            from transforms.sync.state import POINTER_NAME

            join = posixpath.join if is_remote(state) else os.path.join
            outputs["--state (its pointer)"] = join(state, POINTER_NAME)
            outputs["--state (its shards)"] = join(state, "gen-000001", "part-00000.ndjson.gz")
            outputs["--state (its lock)"] = join(state, "LOCK")
    elif command == ("export",) and known_args.output:
        outputs["--output"] = known_args.output
        outputs["--output (its lock)"] = lock_path_for(known_args.output)
    elif command == ("copy",):
        outputs.update(_copy_outputs(known_args.work_dir.rstrip("/") or "."))
    results = getattr(known_args, "results", None)
    if not results and command in (("push",), ("verify",)) and getattr(known_args, "manifest", None):
        from transforms.output.manifest import results_dir_for

        results = results_dir_for(known_args.manifest)
    if results:
        outputs.update(_results_outputs(results))
    if command == ("push",) and getattr(known_args, "body", None):
        from transforms.output.manifest import body_manifest_name

        outputs["--body (its push manifest)"] = body_manifest_name(known_args.body[0])
    return outputs


def _copy_outputs(work: str) -> dict[str, str]:
    """What ``copy`` writes in its ``--work-dir`` (pipeline/copy_instance.py)."""
    import posixpath

    from pipeline.layout import output_layout
    from transforms.push.instance_moves import COPY_BODY_NAME as BODY_NAME
    from transforms.push.instance_moves import COPY_EXPORT_NAME as EXPORT_NAME
    from transforms.push.instance_moves import COPY_LOCK_NAME as LOCK_NAME

    bodies = output_layout(BODY_NAME, None)
    outputs: dict[str, str] = {}
    for name in (EXPORT_NAME, BODY_NAME, bodies.numbered(1, 2)):
        outputs[f"--work-dir (its {name})"] = posixpath.join(work, name)
    outputs["--work-dir (its manifest)"] = posixpath.join(work, bodies.manifest)
    outputs["--work-dir (its lock)"] = posixpath.join(work, LOCK_NAME)
    return outputs


def _results_outputs(results: str) -> dict[str, str]:
    """What ``push`` and ``verify`` write in their results folder, and its lock."""
    import os

    from transforms.push.ledger import DEAD_LETTER_NAME
    from transforms.push.verification import MISSING_NAME
    from transforms.sync.apply import CHANGES_DEAD_LETTER

    outputs: dict[str, str] = {}
    for name in (
        "body-00000.json",
        DEAD_LETTER_NAME,
        MISSING_NAME,
        "changes-ledger-g000000.ndjson",
        CHANGES_DEAD_LETTER,
    ):
        outputs[f"--results (its {name})"] = os.path.join(results, name)
    outputs["--results (its lock)"] = results.rstrip("/") + ".lock"
    return outputs


def check_inputs_read_only(known_args: argparse.Namespace) -> None:
    """ConfigError (one line naming both flags) when something a command would write is one of
    its inputs, or would be read as one (transforms/files/guards.py)."""
    from transforms.files.guards import check_inputs_untouched

    check_inputs_untouched(_inputs(known_args), _outputs(known_args))
