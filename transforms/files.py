"""Local-or-gs:// file helpers shared by every command: read, write atomically, check, join.

Beam's ``FileSystems`` reads and writes both local paths and ``gs://``; it is imported only when
a gs:// path is met (its import takes seconds). Files holding hashes are written mode 0600.
See ``docs/gcs.md`` for running against Cloud Storage or its emulator.

Example::

    write_atomic("out/ledger.json", b"{}")   # temp file + fsync + rename
    data = read_bytes("gs://bucket/importBody.json")
"""

from __future__ import annotations

import os
import posixpath
import re
import socket
import tempfile
from collections.abc import Mapping

from transforms.errors import ConfigError

__all__ = [
    "is_gcs",
    "resolve",
    "join",
    "read_bytes",
    "exists",
    "size",
    "write_atomic",
    "check_gcs_reachable",
    "check_local_outputs",
    "split_gcs_url",
]


def is_gcs(path: str) -> bool:
    return path.startswith("gs://")


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
    """Temp file + fsync + rename in the same folder: a kill leaves the old file or the new one."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
        if "://" in path:
            continue
        if os.path.isdir(path):
            raise ConfigError(f"{flag} {path!r} is a directory, not a file")
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
