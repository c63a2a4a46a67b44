"""Local-or-gs:// file helpers shared by every command: read, write privately, check, join.

Beam's ``FileSystems`` reads and writes both local paths and ``gs://``; it is imported only when
a gs:// path is met (its import takes seconds). See ``docs/gcs.md`` for Cloud Storage.

Every local file the tool writes goes through :func:`open_private`: the bytes go to a fresh
temporary name in the same folder (created ``O_CREAT|O_EXCL|O_NOFOLLOW``, mode 0600 from its
first byte) that is renamed over the target when complete. A link at the target's name is
refused (:class:`LinkRefused`, one line naming it), never written through; a kill leaves the old
file or the new one, never half of one. The run's work folder comes from :func:`private_workdir`
(``tempfile.mkdtemp`` beside the output) and :func:`remove_workdir` removes only what is inside
that very folder, never following a link.

Example::

    with open_private("out/importBody.manifest.json") as handle:
        handle.write(data)
    write_atomic("out/ledger.json", b"{}")   # the same, in one call, with fsync
    work = private_workdir("out/importBody.json")
    remove_workdir(work)
"""

from __future__ import annotations

import os
import posixpath
import re
import socket
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, BinaryIO, cast

from transforms.common.errors import ConfigError

__all__ = [
    "relative_path",
    "is_gcs",
    "is_remote",
    "resolve",
    "join",
    "read_bytes",
    "exists",
    "size",
    "write_atomic",
    "write_lines_or_remove",
    "open_private",
    "LinkRefused",
    "refuse_link",
    "private_workdir",
    "remove_workdir",
    "WORKDIR_MARK",
    "register_cleanup",
    "unregister_cleanup",
    "run_cleanups",
    "check_gcs_reachable",
    "check_local_outputs",
    "split_gcs_url",
]


def is_gcs(path: str) -> bool:
    """A Cloud Storage path (``gs://bucket/...``)."""
    return path.startswith("gs://")


def is_remote(path: str) -> bool:
    """A path with a scheme (``gs://``, ``s3://``, ...): read and written through Beam's
    FileSystems, never with the local file functions. The one test of local-or-remote."""
    return "://" in path


def resolve(directory: str, path: str) -> str:
    if is_gcs(path) or os.path.isabs(path):
        return path
    return posixpath.join(directory, path) if is_gcs(directory) else os.path.join(directory, path)


def read_bytes(path: str) -> bytes:
    if is_gcs(path):
        from apache_beam.io.filesystems import FileSystems  # only when needed: Beam's import is slow

        with FileSystems.open(path) as handle:
            return handle.read()
    with open(path, "rb") as handle:
        return handle.read()


def write_atomic(path: str, data: bytes) -> None:
    """Temp file + fsync + rename in the same folder: a kill leaves the old file or the new one.

    For files a command rewrites as it goes (the push ledger, its dead-letter and verify lists): a
    link at the name is replaced by the file, never written through, so a push never stops half-way.
    """
    with open_private(path, fsync=True, replace_link=True) as handle:
        handle.write(data)


def write_lines_or_remove(path: str, lines: list[str]) -> str | None:
    """A failures file rewritten from the current results: ``lines`` written atomically (one per
    line), or the file removed when there are none. Returns the path, or None when there is no file."""
    if not lines:
        if os.path.exists(path):
            os.unlink(path)
        return None
    write_atomic(path, ("\n".join(lines) + "\n").encode())
    return path


class LinkRefused(ConfigError):
    """A link (or something else that is not a plain file) sits where the tool would write."""


def refuse_link(path: str, flag: str = "") -> None:
    """ConfigError naming ``path`` when it is a symbolic link or not a regular file (local only)."""
    if is_gcs(path):
        return
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there (a folder that is a file is reported by whoever creates it)
    except OSError as err:
        raise ConfigError(f"{flag + ' ' if flag else ''}{path!r}: {err.strerror or err}") from None
    what = f"{flag + ' ' if flag else ''}{path!r}"
    if stat.S_ISLNK(info.st_mode):
        raise LinkRefused(
            f"{what} is a symbolic link (to {os.readlink(path)!r}): the tool never writes through a "
            "link; remove it or choose another path"
        )
    if not stat.S_ISREG(info.st_mode):
        raise LinkRefused(f"{what} exists and is not a regular file; remove it or choose another path")


# Temporary names this process has open: removed by run_cleanups() when a signal ends the run
# before the writer could (pipeline/signals.py).
_PENDING: set[str] = set()
_CLEANUPS: dict[int, Callable[[], Any]] = {}
_CLEANUP_LOCK = threading.Lock()


def register_cleanup(action: Callable[[], Any]) -> int:
    """Remember an idempotent clean-up (remove a work folder, release a lock) for an interrupted
    run; returns a token for :func:`unregister_cleanup`."""
    with _CLEANUP_LOCK:
        token = max(_CLEANUPS, default=0) + 1
        _CLEANUPS[token] = action
    return token


def unregister_cleanup(token: int) -> None:
    with _CLEANUP_LOCK:
        _CLEANUPS.pop(token, None)


def run_cleanups() -> None:
    """Every registered clean-up (newest first) and every pending temporary file; never raises."""
    with _CLEANUP_LOCK:
        actions = [_CLEANUPS[t] for t in sorted(_CLEANUPS, reverse=True)]
        _CLEANUPS.clear()
        pending = list(_PENDING)
    for action in actions:
        try:
            action()
        except Exception:  # noqa: BLE001 - best effort on the way out; the next one still runs
            pass
    for tmp in pending:
        try:
            os.unlink(tmp)
        except OSError:
            pass


class _PrivateFile:
    """A file being written under a temporary name; renamed over its target when closed."""

    def __init__(self, fd: int, tmp: str, path: str, fsync: bool):
        self._file = os.fdopen(fd, "wb")
        self._tmp, self._path, self._fsync = tmp, path, fsync
        self._done = False

    def write(self, data: bytes) -> int:
        return self._file.write(data)

    def writelines(self, lines: Iterable[bytes]) -> None:
        self._file.writelines(lines)

    def flush(self) -> None:
        self._file.flush()

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            self._file.flush()
            if self._fsync:
                os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self._tmp, self._path)  # replaces a link at the name, never writes through it
        except BaseException:
            self._discard()
            raise
        _PENDING.discard(self._tmp)

    def abort(self) -> None:
        if self._done:
            return
        self._done = True
        self._discard()

    def _discard(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass
        try:
            os.unlink(self._tmp)
        except OSError:
            pass
        _PENDING.discard(self._tmp)

    def __enter__(self) -> _PrivateFile:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def open_private(path: str, *, fsync: bool = False, replace_link: bool = False) -> BinaryIO:
    """Open ``path`` for writing, privately and atomically (see the module docstring).

    Local: a fresh ``.<name>.*.tmp`` beside it (mode 0600, ``O_EXCL|O_NOFOLLOW``), renamed over
    ``path`` when closed without error, removed otherwise. A link or non-file at ``path`` is
    refused (:class:`LinkRefused`); with ``replace_link`` a link is replaced by the new file
    (the rename swaps the name; the link's target is never opened). ``gs://``: Beam's ``FileSystems.create`` (objects appear
    whole when the upload completes; access is the bucket's IAM).
    """
    if is_remote(path):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.create(path, mime_type="application/json")
    if not (replace_link and os.path.islink(path)):
        refuse_link(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    # mkstemp: O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, a name nobody else has.
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)[:80]}.", suffix=".tmp", dir=folder)
    _PENDING.add(tmp)
    return cast(BinaryIO, _PrivateFile(fd, tmp, path, fsync))


WORKDIR_MARK = ".zitadel-beam-work-"


def private_workdir(output: str) -> str:
    """A new folder (mode 0700, ``tempfile.mkdtemp``) beside ``output`` for one run's spill files."""
    folder = os.path.dirname(os.path.abspath(output))
    name = os.path.basename(output) or "output"
    return tempfile.mkdtemp(prefix=f".{name[:80]}{WORKDIR_MARK}", dir=folder)


def remove_workdir(path: str) -> None:
    """Remove a folder :func:`private_workdir` made and everything in it; never follows a link.

    The folder is opened ``O_NOFOLLOW`` and emptied through its descriptor, so a link put in its
    place (or inside it) is removed as a link, and nothing outside the folder is touched. Missing
    already: nothing to do. Files still being created by other threads are caught by a second
    pass.
    """
    for _ in range(5):
        try:
            _remove_tree_at(path, None)
            return
        except FileNotFoundError:
            return
        except OSError:
            continue  # a file appeared while emptying (a worker still writing): once more
    _remove_tree_at(path, None)


def _remove_tree_at(name: str, parent_fd: int | None) -> None:
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(name, flags, dir_fd=parent_fd)
    except OSError as err:
        if err.errno in (20, 40):  # ENOTDIR, ELOOP: a file or a link where the folder was
            os.unlink(name, dir_fd=parent_fd)
            return
        raise
    try:
        with os.scandir(fd) as entries:
            children = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        for child, is_dir in children:
            if is_dir:
                _remove_tree_at(child, fd)
            else:
                try:
                    os.unlink(child, dir_fd=fd)
                except FileNotFoundError:
                    pass
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent_fd)


def join(folder: str, name: str) -> str:
    return posixpath.join(folder, name) if folder.startswith("gs://") else os.path.join(folder, name)


def exists(path: str) -> bool:
    if path.startswith("gs://"):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.exists(path)
    return os.path.isfile(path)


def size(path: str) -> int:
    if path.startswith("gs://"):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    return os.path.getsize(path)


def check_gcs_reachable(paths: list[str], timeout: float = 5.0) -> None:
    """Fail in seconds, not after Beam's ~120 s of retries, when gs:// cannot be reached."""
    if not any(p.startswith("gs://") for p in paths):
        return
    emulator = os.environ.get("STORAGE_EMULATOR_HOST")
    if emulator:
        hostport = re.sub(r"^https?://", "", emulator).rstrip("/")
        host, _, port = hostport.rpartition(":")
        address = (host or hostport, int(port) if port.isdigit() else 80)
    else:
        address = ("storage.googleapis.com", 443)
    try:
        socket.create_connection(address, timeout=timeout).close()
    except OSError as err:
        raise ConfigError(
            f"cannot reach Cloud Storage at {address[0]}:{address[1]} ({err.strerror or err})"
        ) from None


def check_local_outputs(paths: Mapping[str, str]) -> None:
    """Fail before the run, in one line, when a local output cannot be written (not after it)."""
    for flag, path in paths.items():
        if is_remote(path):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            raise ConfigError(f"{flag} {path!r} is a directory, not a file")
        refuse_link(path, flag)
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise ConfigError(f"{flag} {path!r}: {folder!r} is a file, not a folder")
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"{flag} {path!r}: cannot create folder {folder!r} ({err.strerror or err})"
            ) from None
        if not os.access(folder, os.W_OK):
            raise ConfigError(f"{flag} {path!r}: folder {folder!r} is not writable")


def split_gcs_url(url: str, flag: str) -> tuple[str, str]:
    """``gs://bucket/a/b.json`` → ``("bucket", "a/b.json")``; ConfigError otherwise."""
    if not url.startswith("gs://") or "/" not in url[5:] or url.endswith("/"):
        raise ConfigError(f"{flag} {url!r} must be gs://BUCKET/PATH")
    bucket, _, path = url[5:].partition("/")
    if not bucket or not path:
        raise ConfigError(f"{flag} {url!r} must be gs://BUCKET/PATH")
    return bucket, path


def relative_path(directory: str, path: str) -> str:
    """``path`` as a manifest lists it: relative to the manifest's folder when inside it."""
    if is_remote(path):
        return posixpath.basename(path) if posixpath.dirname(path) == directory else path
    rel = os.path.relpath(path, directory or ".")
    return path if rel.startswith("..") else rel
