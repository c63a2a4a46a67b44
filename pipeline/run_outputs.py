"""What a migrate run holds and leaves: its lock and work folder, the final bodies, the
dead-letter and passwordless files, the authorizations body and the manifest.

For ``pipeline/migrate.py`` and a source that runs itself (``document_run.py``). ``open_outputs`` runs before
anything is read (outputs writable, the lock taken, every file already at an output name the
earlier run's own); the ``finalize_*`` functions run after the pipeline, under
``signals.finishing()``, and ``write_manifest`` goes last.

Example::

    run = open_outputs(layout, pipeline_args, command="migrate auth0", break_lock=False)
    try:
        ...  # run the pipeline into run.layout.tmp_dir
        bodies, dead_count, dead_sha = finalize_outputs(run)
        write_manifest(run.layout.manifest, manifest)
    finally:
        run.close()   # the work folder removed, the lock released
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pipeline.layout import OutputLayout, passwordless_path
from pipeline.preflight import spill_dir
from transforms.common.errors import ConfigError
from transforms.files.storage import check_local_outputs, is_remote, relative_path, remove_workdir

if TYPE_CHECKING:
    from pipeline.migrate_options import CommonArgs
    from transforms.files.locks import Lock
    from transforms.mapping.roles import RoleEntry, RoleSettings

__all__ = [
    "RunOutputs",
    "open_outputs",
    "prepare_tmp",
    "delete_tree",
    "finalize_outputs",
    "finalize_passwordless",
    "write_authorizations",
    "write_manifest",
]


def prepare_tmp(tmp_dir: str) -> None:
    """A gs:// work folder (remote runners: one per run id under --temp_location) starts empty."""
    from apache_beam.io.filesystems import FileSystems

    if is_remote(tmp_dir) and FileSystems.exists(tmp_dir):
        delete_tree(tmp_dir)


def delete_tree(path: str) -> None:
    """Remove a run's work folder: local ones through ``remove_workdir`` (never into a link)."""
    if not is_remote(path):
        remove_workdir(path)
        return
    from apache_beam.io.filesystems import FileSystems

    matched = [m.path for m in FileSystems.match([path.rstrip("/") + "/*"])[0].metadata_list]
    if matched and all(found.startswith("gs://") for found in matched):
        # Beam's GCS FileSystems.delete looks each path up and deletes it in a batch of its own
        # (three requests per object); GcsIO.delete_batch sends up to 100 deletes per request.
        from apache_beam.io.gcp.gcsio import GcsIO

        failed = [found for found, error in GcsIO().delete_batch(matched) if error]
        if failed:
            raise OSError(f"could not delete {len(failed)} temporary object(s), e.g. {failed[0]}")
    elif matched:
        FileSystems.delete(matched)


def _existing_bodies(layout: OutputLayout) -> list[str]:
    """Files at the names a run's bodies take (the single body and any numbered one)."""
    pattern = f"{layout.stem}-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]{layout.ext}"
    if is_remote(layout.output):
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
    lock: Lock
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
        if not tmp and is_remote(layout.output):
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

    from transforms.files.storage import open_private
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

    from transforms.files.storage import open_private

    with open_private(path, fsync=True) as handle:
        handle.write(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")


def write_authorizations(
    run: RunOutputs,
    common: CommonArgs,
    roles: RoleSettings,
    catalogue: list[RoleEntry],
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

    from transforms.files.storage import open_private
    from transforms.output.grants import authorizations_body, authorizations_fields

    layout = run.layout
    data = authorizations_body(common.org_id, common.timeout, roles, catalogue, common.multiline)
    digest = hashlib.sha256(data).hexdigest()
    fields = authorizations_fields(counts, roles, len(catalogue))
    path = f"{layout.stem}.authorizations{layout.ext}"
    run.check_replaceable([path])  # an earlier run's own file only (transforms/files/guards.py)
    if digest == held:
        if os.path.lexists(path) and not is_remote(path):
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
