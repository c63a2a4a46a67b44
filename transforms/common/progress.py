"""A live progress line on stderr, shared by push's bodies and the sync's changes.

On a terminal the line is rewritten in place every ``TTY_INTERVAL`` (0.5 s); otherwise (a log
file, CI) one line is written every ``LOG_INTERVAL`` (10 s). A subclass says what the line holds
(:meth:`LiveLine.line`) and counts under ``self._lock``; the rate and ETA helper is here.

Example::

    class _Counting(LiveLine):
        def line(self) -> str:
            with self._lock:
                return f"done {self.done}  ETA {self.eta(self.done, self.total)}"

    with _Counting(sys.stderr, enabled=True):
        ...
"""

from __future__ import annotations

import threading
import time
from typing import Self, TextIO

__all__ = ["LiveLine", "TTY_INTERVAL", "LOG_INTERVAL"]

TTY_INTERVAL = 0.5  # seconds between rewrites of the line on a terminal
LOG_INTERVAL = 10.0  # seconds between lines when the stream is not a terminal


class LiveLine:
    """Runs a thread that emits :meth:`line` until the ``with`` block ends, then a final line."""

    def __init__(self, stream: TextIO, enabled: bool, name: str, interval: float | None = None) -> None:
        self._stream = stream
        self._enabled = enabled
        self._tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self._interval = interval or (TTY_INTERVAL if self._tty else LOG_INTERVAL)
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def __enter__(self) -> Self:
        if self._enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._enabled:
            self._thread.join()
            self._emit(final=True)

    def line(self) -> str:
        raise NotImplementedError

    def rate_and_eta(self, done: int, left: int) -> tuple[float, str]:
        """Items per second so far, and ``m:ss`` for ``left`` more at that rate (``?`` before any)."""
        rate = done / max(time.monotonic() - self._start, 1e-6)
        eta = f"{int(left / rate) // 60}:{int(left / rate) % 60:02d}" if rate > 0 else "?"
        return rate, eta

    def _emit(self, final: bool = False) -> None:
        text = self.line()
        if self._tty:
            self._stream.write("\r" + text + ("\n" if final else ""))
        else:
            self._stream.write(text + "\n")
        self._stream.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._emit()
