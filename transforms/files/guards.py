"""Inputs are read-only, and a run replaces only what it wrote itself.

Two checks every command that writes runs before it reads anything:

- :func:`check_inputs_untouched`: no output (body, manifest, dead letters, passwordless list,
  lock, work folder, ledger, export) may be an input file or a name an input path, glob or
  folder would match. Paths are compared resolved (``realpath``, the same inode for hard links
  and case-insensitive file systems), a glob component by component as ``glob`` matches it.
- :func:`check_owned`: a file already at one of a run's output names is replaced or deleted only
  when the previous run's manifest names it with a sha256 that still matches (bodies, dead
  letters, passwordless list) or when it is that manifest itself. Anything else there is refused
  with one line naming it, and nothing is removed.

Example::

    check_inputs_untouched({"--users": ["export/*.json"]}, {"--output": "export/importBody.json"})
    # ConfigError: --output 'export/importBody.json' would be read as --users 'export/*.json' ...
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import json
import os
import posixpath
import re
from collections.abc import Iterable, Mapping

from transforms.common.errors import ConfigError
from transforms.files.storage import is_gcs, read_bytes, refuse_link

__all__ = ["check_inputs_untouched", "check_owned", "previous_manifest", "owned_digests", "sha256_of"]

_GLOB = re.compile(r"[*?[]")


def _resolved(path: str) -> str:
    return path if is_gcs(path) else os.path.realpath(os.path.abspath(path))


def _same_file(a: str, b: str) -> bool:
    if is_gcs(a) or is_gcs(b):
        return a == b
    if _resolved(a) == _resolved(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _split_glob(pattern: str) -> tuple[str, list[str]]:
    """``a/b/*.json`` → (``a/b``, [``*.json``]): the literal folder and the glob components."""
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if _GLOB.search(part):
            return "/".join(parts[:i]) or ("/" if pattern.startswith("/") else "."), parts[i:]
    return pattern, []


def _glob_matches(pattern: str, path: str) -> bool:
    """Would ``pattern`` (local or gs://) match ``path``? Component by component, like glob."""
    if is_gcs(pattern) != is_gcs(path):
        return False
    base, rest = _split_glob(pattern)
    if is_gcs(pattern):
        base_parts, target = base.rstrip("/").split("/"), path
    else:
        base_parts, target = _resolved(base).split("/"), _resolved(path)
    target_parts = target.split("/")
    if target_parts[: len(base_parts)] != base_parts:
        return False
    tail = target_parts[len(base_parts) :]
    return _match_parts(rest, tail)


def _match_parts(pattern: list[str], parts: list[str]) -> bool:
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_match_parts(pattern[1:], parts[i:]) for i in range(len(parts) + 1))
    if not parts:
        return False
    # fnmatch per component: '*' never crosses '/'; case as the file system has it (exact here;
    # a case-insensitive file system is covered by the same-inode check of matched files).
    return fnmatch.fnmatchcase(parts[0], pattern[0]) and _match_parts(pattern[1:], parts[1:])


# Flags whose folder is read whole (Keycloak's split export); other readers refuse a folder.
FOLDER_FLAGS = frozenset({"--realm"})


def _read_by(flag: str, pattern: str, output: str) -> str | None:
    """Why ``output`` would be read by input ``pattern`` (None: it would not)."""
    if not is_gcs(pattern) and os.path.isdir(pattern):
        if flag not in FOLDER_FLAGS:
            return None
        inside = _resolved(output).startswith(_resolved(pattern).rstrip("/") + "/")
        return f"is inside the folder {flag} {pattern!r} reads" if inside else None
    if _GLOB.search(pattern):
        if _glob_matches(pattern, output):
            return f"would be read as {flag} {pattern!r}"
        if not is_gcs(pattern) and os.path.lexists(output):
            for match in glob.glob(pattern):
                if _same_file(match, output):
                    return f"is the file {match!r} that {flag} {pattern!r} reads"
        return None
    if _same_file(pattern, output):
        return f"is the input {flag} {pattern!r}"
    return None


def check_inputs_untouched(inputs: Mapping[str, Iterable[str]], outputs: Mapping[str, str]) -> None:
    """ConfigError (one line naming both flags) when an output is, or would be read as, an input.

    ``inputs``: flag → paths, globs or folders the command reads; ``outputs``: a label naming the
    flag (e.g. ``"--output"``, ``"manifest (from --output)"``) → a path the command would write.
    """
    for out_flag, output in outputs.items():
        if not output:
            continue
        for in_flag, patterns in inputs.items():
            for pattern in patterns:
                if not pattern:
                    continue
                why = _read_by(in_flag, pattern, output)
                if why:
                    raise ConfigError(
                        f"{out_flag} {output!r} {why}: inputs are never written; choose another {out_flag.split()[0]}"
                    )


def sha256_of(path: str) -> str | None:
    try:
        data = read_bytes(path)
    except Exception:  # noqa: BLE001 - unreadable (or a gs:// NotFound): not the recorded file
        return None
    return hashlib.sha256(data).hexdigest()


def previous_manifest(manifest_path: str) -> dict | None:
    """The earlier run's manifest at ``manifest_path`` (written by this tool), else None.

    A file there that is not such a manifest is refused: it is not ours to replace.
    """
    refuse_link(manifest_path, "manifest")
    if is_gcs(manifest_path):
        from apache_beam.io.filesystems import FileSystems

        if not FileSystems.exists(manifest_path):
            return None
    try:
        raw = read_bytes(manifest_path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ConfigError(f"{manifest_path}: cannot read it ({err.strerror or err})") from None
    try:
        manifest = json.loads(raw)
    except ValueError:
        manifest = None
    if not isinstance(manifest, dict) or not str(manifest.get("tool", "")).startswith("zitadel-beam"):
        raise ConfigError(
            f"{manifest_path} exists and is not a manifest this tool wrote: it is never replaced; "
            "move it away or choose another --output"
        )
    return manifest


def owned_digests(manifest: dict | None, manifest_path: str) -> dict[str, str | None]:
    """Path → sha256 (None: no digest recorded) of every file ``manifest`` says its run wrote."""
    if not manifest:
        return {}
    folder = posixpath.dirname(manifest_path) if is_gcs(manifest_path) else os.path.dirname(manifest_path)
    owned: dict[str, str | None] = {}

    def add(entry: object) -> None:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str) and entry["path"]:
            path = entry["path"]
            if not (is_gcs(path) or os.path.isabs(path)):
                path = posixpath.join(folder, path) if is_gcs(folder) else os.path.join(folder, path)
            owned[_resolved(path)] = entry.get("sha256") if isinstance(entry.get("sha256"), str) else None

    for body in manifest.get("bodies") or []:
        add(body)
    add(manifest.get("dead_letter"))
    add(manifest.get("passwordless"))
    sync = manifest.get("sync")
    for change in (sync.get("changes") if isinstance(sync, dict) else None) or []:
        add(change)  # change files of a sync run (docs/sync.md#change-files)
    return owned


def check_owned(paths: Iterable[str], owned: Mapping[str, str | None], flag_of: Mapping[str, str]) -> None:
    """ConfigError naming the first of ``paths`` that exists and is not the earlier run's own file.

    ``owned``: from :func:`owned_digests`; a file is ours when the manifest names it and its sha256
    still matches (files the manifest lists without a digest are accepted by name).
    """
    for path in paths:
        flag = flag_of.get(path, "--output")
        refuse_link(path, flag)
        if is_gcs(path):
            from apache_beam.io.filesystems import FileSystems

            present = FileSystems.exists(path)
        else:
            present = os.path.lexists(path)
        if not present:
            continue
        key = _resolved(path)
        if key in owned and (owned[key] is None or owned[key] == sha256_of(path)):
            continue
        why = (
            "changed since the earlier run's manifest recorded it"
            if key in owned
            else "no earlier manifest of this output names it"
        )
        raise ConfigError(
            f"{flag} {path!r} exists and was not written by an earlier run of this output ({why}): "
            "it is never replaced or deleted; move it away or choose another --output"
        )
