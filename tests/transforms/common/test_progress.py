"""transforms/common/progress.py: the live progress line on stderr."""

from __future__ import annotations

import io
import time

from transforms.common.progress import LiveLine


class _Counting(LiveLine):
    done = 0

    def line(self) -> str:
        with self._lock:
            return f"done {self.done}"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_disabled_writes_nothing():
    stream = io.StringIO()
    with _Counting(stream, enabled=False, name="test-progress") as progress:
        progress.done = 3
    assert stream.getvalue() == ""


def test_a_log_gets_whole_lines_and_a_final_one():
    stream = io.StringIO()
    with _Counting(stream, enabled=True, name="test-progress", interval=0.01) as progress:
        deadline = time.monotonic() + 60  # ends as soon as two lines are out
        while stream.getvalue().count("\n") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        progress.done = 7
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3
    assert all(line.startswith("done ") for line in lines)
    assert lines[-1] == "done 7"
    assert "\r" not in stream.getvalue()


def test_a_terminal_gets_the_line_rewritten_in_place():
    stream = _Tty()
    with _Counting(stream, enabled=True, name="test-progress", interval=0.01) as progress:
        progress.done = 2
    text = stream.getvalue()
    assert text.startswith("\r") and text.endswith("\rdone 2\n")
    assert text.count("\n") == 1


def test_default_intervals():
    assert _Counting(io.StringIO(), enabled=True, name="t")._interval == 10.0
    assert _Counting(_Tty(), enabled=True, name="t")._interval == 0.5


def test_rate_and_eta():
    progress = _Counting(io.StringIO(), enabled=False, name="test-progress")
    assert progress.rate_and_eta(0, 100) == (0.0, "?")
    progress._start = time.monotonic() - 10  # ten seconds in
    rate, eta = progress.rate_and_eta(100, 1500)
    assert 9 < rate <= 10
    minutes, seconds = eta.split(":")
    assert minutes == "2" and 30 <= int(seconds) <= 47 and len(seconds) == 2
