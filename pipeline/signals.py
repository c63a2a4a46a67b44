"""Ctrl-C and SIGTERM stop every command within seconds, cleanly.

The command line (``pipeline/cli.py``) calls :func:`install` first thing when it is the
process's entry point. From then on:

- SIGINT and SIGTERM are blocked in every thread, so every thread and every process started
  later (Beam's runner threads, the worker processes of ``multi_processing`` mode) inherits the
  block: a signal sent to the whole process group cannot kill a worker half-way or make it print
  a traceback. One watcher thread takes the signals with ``sigwait``.
- On the first signal the watcher silences stderr (the one line below is the only thing printed
  after it), kills the command's child processes (SIGKILL: they hold no state of their own), and
  raises :class:`Interrupted` in the main thread (through SIGUSR2, which also breaks a blocking
  system call). The main thread unwinds: work folders are removed, locks released, nothing
  half-written is renamed into place, no manifest is written. Inside :func:`finishing` (renaming
  the bodies and writing the manifest, well under a second) the interruption waits for the end
  of that block, so the outputs are either the earlier run's or this run's, whole.
- If the main thread has not finished within ``DEADLINE`` seconds (a runner stuck in a wait that
  ignores signals), the watcher runs the registered clean-ups itself (``transforms/files/storage.py``
  ``register_cleanup``: work folders, locks, temporary files), prints the line and exits.

Exit status 130 for SIGINT and 143 for SIGTERM (128 + the signal number, as shells report it).
One line on stderr: ``zitadel-beam: interrupted (SIGINT): <what was done>; <how to resume>``.

Example::

    signals.install()            # once, in the main thread, before anything starts threads
    with signals.finishing():    # a block that must not be cut in the middle
        rename_bodies(); write_manifest()
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

__all__ = [
    "Interrupted",
    "install",
    "installed",
    "received",
    "exit_code",
    "finishing",
    "set_resume_hint",
    "report",
    "exit_now",
    "capture_stderr",
    "restore_stderr",
    "DEADLINE",
]

DEADLINE = 3.5  # seconds from the signal to the process's end, at the latest
_STOP = (signal.SIGINT, signal.SIGTERM)
_POKE = signal.SIGUSR2


class Interrupted(BaseException):
    """Raised in the main thread when SIGINT or SIGTERM arrived (a BaseException, like
    KeyboardInterrupt, so that ``except Exception`` blocks do not swallow it)."""


_state: dict = {"installed": False, "signal": None, "raised": False, "finishing": 0, "hint": None}
_stderr_fd: int | None = None
_lock = threading.Lock()


def installed() -> bool:
    return bool(_state["installed"])


def received() -> int | None:
    """The signal that stopped the run (None: none)."""
    return _state["signal"]


def exit_code() -> int:
    return 128 + int(_state["signal"] or signal.SIGINT)


def set_resume_hint(text: str) -> None:
    """What the one line says was done and how to resume (set by each command)."""
    _state["hint"] = text


def install() -> None:
    """Block SIGINT/SIGTERM everywhere and start the watcher (main thread only; once)."""
    if _state["installed"] or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(_POKE, _poked)
    signal.pthread_sigmask(signal.SIG_BLOCK, set(_STOP))
    # Ignored as well: a blocked signal stays pending for the watcher's sigwait (Linux never
    # discards a signal a thread blocks), and child processes inherit "ignored" through the
    # shell Beam starts them with (dash clears the block, not an ignored disposition) and Python
    # keeps it, so a Ctrl-C to the group cannot kill a worker half-way or make it print a traceback.
    for signum in _STOP:
        signal.signal(signum, signal.SIG_IGN)
    _state["installed"] = True
    threading.Thread(target=_watch, name="zitadel-beam-signals", daemon=True).start()


def _poked(signum, frame) -> None:
    if _state["signal"] is None or _state["raised"] or _state["finishing"]:
        return  # inside finishing(): raised when the block ends
    _state["raised"] = True
    raise Interrupted(signal.Signals(_state["signal"]).name)


@contextlib.contextmanager
def finishing() -> Iterator[None]:
    """A block an interruption waits for (up to the deadline); raises Interrupted after it."""
    _state["finishing"] += 1
    try:
        yield
    finally:
        _state["finishing"] -= 1
    if _state["signal"] is not None and not _state["finishing"] and not _state["raised"]:
        _state["raised"] = True
        raise Interrupted(signal.Signals(_state["signal"]).name)


def _silence_stderr() -> None:
    """After a signal, only our one line reaches stderr (Beam's threads log their failures)."""
    global _stderr_fd
    logging.disable(logging.CRITICAL)
    threading.excepthook = lambda args: None
    with _lock:
        try:
            _stderr_fd = _state.pop("real_stderr", None) or os.dup(2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
        except OSError:
            _stderr_fd = None


def capture_stderr(path: str) -> bool:
    """Point fd 2 (this process's and every child's started from now on) at a new private file.

    Beam's worker processes print a failing step's traceback straight to the stderr they
    inherit, before the launcher gets the error; captured, it is shown after the run only when
    the run did not end in a one-line report (:func:`restore_stderr`). False: not captured.
    """
    with _lock:
        if _state["signal"] is not None or _state.get("real_stderr") is not None:
            return False
        sys.stderr.flush()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        real = os.dup(2)
        os.dup2(fd, 2)
        os.close(fd)
        _state["real_stderr"] = real
    return True


def restore_stderr(path: str, replay: bool) -> None:
    """Undo :func:`capture_stderr`; with ``replay``, copy what was captured to the real stderr."""
    with _lock:
        real = _state.pop("real_stderr", None)
        if real is None:
            return  # a signal took it over (stderr stays silenced; the one line goes there)
        sys.stderr.flush()
        os.dup2(real, 2)
        os.close(real)
    if replay:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return
        if data:
            sys.stderr.flush()
            os.write(2, data)


def _children(root: int) -> list[int]:
    """Every descendant process of ``root`` (from /proc; empty where there is none)."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                ppid = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_children() -> None:
    for pid in _children(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _watch() -> None:
    signum = signal.sigwait(set(_STOP))
    with _lock:
        _state["signal"] = signum
    started = time.monotonic()
    _silence_stderr()
    _kill_children()
    try:
        signal.pthread_kill(threading.main_thread().ident or 0, _POKE)
    except (OSError, ValueError):
        pass
    # Worker processes started while the main thread unwinds are killed too.
    while time.monotonic() - started < DEADLINE:
        time.sleep(0.25)
        _kill_children()
    from transforms.files.storage import run_cleanups

    run_cleanups()
    report()
    exit_now(exit_code())


def report(done: str | None = None) -> None:
    """The one line on stderr: which signal, what was done, how to resume."""
    name = signal.Signals(_state["signal"] or signal.SIGINT).name
    hint = done or _state["hint"] or "run the same command again"
    line = f"zitadel-beam: interrupted ({name}): {hint}\n".encode()
    with _lock:
        if _state.get("reported"):
            return
        _state["reported"] = True
        fd = _stderr_fd if _stderr_fd is not None else 2
        try:
            os.write(fd, line)
        except OSError:
            pass


def exit_now(code: int) -> None:
    """End the process now (Beam's non-daemon threads would hold a normal exit)."""
    from transforms.files.storage import run_cleanups

    run_cleanups()
    _kill_children()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
