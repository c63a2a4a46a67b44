"""One run per output: a lock beside what a run writes, local or on Cloud Storage.

A run takes the lock before it reads or writes anything and releases it at the end (also on
failure or interruption). A second run on the same output is refused at once with one line
naming the holder (pid, host, age) and the way out. The lock holds a small JSON document:
``{"pid", "host", "started", "token", "what"}``.

- Local: the file is created ``O_CREAT|O_EXCL|O_NOFOLLOW`` with mode 0600 (a link at its name is
  refused, never followed). A lock left by a process that is gone (same host, pid not running,
  or running but started after the lock was taken) is stale and taken over.
- ``gs://``: an object created with ``if_generation_match=0`` through google-cloud-storage, so
  two creators cannot both succeed on Cloud Storage; release deletes it with the generation it
  was created with, so a lock broken and re-taken by someone else is never deleted by us.
- ``break_lock=True`` (the commands' ``--break-lock``) removes a lock whatever its holder.

:meth:`Lock.release` is idempotent and removes the lock only while it is still ours (same token,
and for a local file the same inode).

Example::

    with acquire_lock("out/importBody.lock", what="migrate --output=out/importBody.json"):
        ...   # LockHeld (str: the one-line message) when another run holds it
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time
import uuid
from typing import Any

from transforms.common.errors import ConfigError

__all__ = ["LockHeld", "Lock", "acquire_lock", "lock_path_for"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class LockHeld(ConfigError):
    """Another run holds the lock; ``str(err)`` is one line naming the holder and its age."""


def lock_path_for(output: str) -> str:
    """``out/importBody.json`` → ``out/importBody.lock`` (beside it; gs:// alike)."""
    head, tail = output.rsplit("/", 1) if "/" in output else ("", output)
    stem = tail.rsplit(".", 1)[0] if "." in tail.lstrip(".") else tail
    name = f"{stem or tail}.lock"
    return f"{head}/{name}" if head else name


def _age(started: Any) -> str:
    try:
        seconds = max(0, int(time.time() - float(started)))
    except (TypeError, ValueError):
        return "unknown age"
    if seconds < 120:
        return f"{seconds} s old"
    if seconds < 7200:
        return f"{seconds // 60} min old"
    return f"{seconds // 3600} h old"


def _held_message(path: str, holder: dict) -> str:
    return (
        f"{path} is held by another run ({holder.get('what') or 'zitadel-beam'}: pid "
        f"{holder.get('pid', '?')} on {holder.get('host', '?')}, {_age(holder.get('started'))}); "
        f"wait for it to finish, or pass --break-lock if it is certain that run is gone"
    )


def _process_started(pid: int) -> float | None:
    """Start time (epoch seconds) of a local process from /proc, None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])
        with open("/proc/stat", "rb") as handle:
            btime = next(int(line.split()[1]) for line in handle if line.startswith(b"btime"))
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _is_stale(holder: dict) -> bool:
    """The holder ran on this host and its process is gone (or the pid now belongs to a newer one)."""
    if holder.get("host") != socket.gethostname():
        return False
    try:
        pid = int(holder["pid"])
    except (KeyError, TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, someone else's
    started = _process_started(pid)
    try:
        taken = float(holder.get("started"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    # A reused pid: that process started after the lock was taken (1 s of clock slack).
    return started is not None and started > taken + 1.0


class Lock:
    """A held lock; a context manager. ``release()`` is idempotent and removes only our own lock."""

    def __init__(self, path: str, record: dict, inode: int | None = None, generation: int | None = None):
        self.path = path
        self.record = record
        self._inode = inode
        self._generation = generation
        self.released = False

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        if self.path.startswith("gs://"):
            _gcs_release(self)
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW)
        except OSError:
            return  # gone (broken by another run) or a link now: not ours to touch
        try:
            info = os.fstat(fd)
            data = os.read(fd, 65536)
        finally:
            os.close(fd)
        try:
            token = json.loads(data).get("token")
        except (ValueError, AttributeError):
            return
        if token == self.record["token"] and info.st_ino == self._inode:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


def _record(what: str) -> dict:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": round(time.time(), 3),
        "token": uuid.uuid4().hex,
        "what": what,
    }


def acquire_lock(path: str, *, what: str, break_lock: bool = False) -> Lock:
    """Take the lock at ``path`` (local or gs://); LockHeld when another live run holds it."""
    if path.startswith("gs://"):
        return _gcs_acquire(path, what, break_lock)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    record = _record(what)
    data = json.dumps(record).encode() + b"\n"
    for _ in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        except FileExistsError:
            _clear_local(path, break_lock)
            continue
        try:
            os.write(fd, data)
            inode = os.fstat(fd).st_ino
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        os.close(fd)
        return Lock(path, record, inode=inode)
    raise LockHeld(f"{path}: could not take the lock (other runs keep taking it); try again")


def _clear_local(path: str, break_lock: bool) -> None:
    """An existing lock file: remove it when stale or broken on purpose, else raise LockHeld."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return  # released meanwhile: try again
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ConfigError(
                f"{path} is a symbolic link: the lock is never written through a link; remove it"
            ) from None
        raise ConfigError(f"{path}: cannot read the lock ({err.strerror or err})") from None
    try:
        inode = os.fstat(fd).st_ino
        raw = os.read(fd, 65536)
    finally:
        os.close(fd)
    try:
        holder = json.loads(raw)
        if not isinstance(holder, dict):
            raise ValueError
    except ValueError:
        holder = {}
    if not (break_lock or (holder and _is_stale(holder))):
        if not holder:
            raise LockHeld(
                f"{path} exists but is not a lock this tool wrote (or is being written); "
                "pass --break-lock to remove it"
            )
        raise LockHeld(_held_message(path, holder))
    # Remove exactly the file we read: moved aside first, so a lock another run has just taken
    # in its place is put back instead of deleted.
    aside = f"{path}.{uuid.uuid4().hex}.broken"
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    if os.lstat(aside).st_ino == inode:
        os.unlink(aside)
        return
    try:
        os.link(aside, path)
    except FileExistsError:
        pass
    os.unlink(aside)
    raise LockHeld(f"{path} was taken by another run at the same moment; try again")


# --- gs:// ---------------------------------------------------------------------------------------
def _gcs_blob(path: str) -> Any:  # a google.cloud.storage Blob (the library ships no types)
    import importlib

    storage = importlib.import_module("google.cloud.storage")
    bucket, _, name = path[5:].partition("/")
    return storage.Client().bucket(bucket).blob(name)


def _gcs_acquire(path: str, what: str, break_lock: bool) -> Lock:
    from google.api_core import exceptions

    blob = _gcs_blob(path)
    record = _record(what)
    for _ in range(3):
        # Read first: the emulator used by the tests ignores generation preconditions, and a
        # refusal naming the holder needs its record anyway.
        try:
            raw = blob.download_as_bytes()
            generation = blob.generation
        except exceptions.NotFound:
            raw, generation = None, None
        if raw is not None:
            try:
                holder = json.loads(raw)
                if not isinstance(holder, dict):
                    raise ValueError
            except ValueError:
                holder = {}
            if not (break_lock or (holder and _is_stale(holder))):
                raise LockHeld(_held_message(path, holder))
            try:
                blob.delete(if_generation_match=generation)
            except (exceptions.NotFound, exceptions.PreconditionFailed):
                pass
            continue
        try:
            blob.upload_from_string(
                json.dumps(record), content_type="application/json", if_generation_match=0
            )
        except exceptions.PreconditionFailed:
            continue  # someone created it between our read and our write
        return Lock(path, record, generation=blob.generation)
    raise LockHeld(f"{path}: could not take the lock (other runs keep taking it); try again")


def _gcs_release(lock: Lock) -> None:
    from google.api_core import exceptions

    blob = _gcs_blob(lock.path)
    try:
        raw = blob.download_as_bytes()
        if json.loads(raw).get("token") != lock.record["token"]:
            return
        blob.delete(if_generation_match=blob.generation)
    except (exceptions.NotFound, exceptions.PreconditionFailed, ValueError, AttributeError):
        pass
    except Exception:  # noqa: BLE001 - unreachable bucket on the way out: the lock goes stale
        pass
