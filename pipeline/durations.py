"""Go duration strings (``5m``, ``1h30m``, ``300s``) as the import API's ``timeout`` field wants them."""
from __future__ import annotations

import re

__all__ = ["parse_duration", "format_duration", "normalise_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string; raises ValueError like Go's time.ParseDuration."""
    s = text.strip()
    if s in ("0", ""):
        if s == "":
            raise ValueError("empty duration")
        return 0.0
    pos, total = 0, 0.0
    while pos < len(s):
        match = _PART.match(s, pos)
        if not match:
            raise ValueError(f"invalid duration {text!r} (use e.g. 5m0s, 30m, 1h)")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return total


def format_duration(seconds: float) -> str:
    """Go's Duration.String() for whole-second and sub-second values: 1800 → ``30m0s``."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        ms = seconds * 1000
        return f"{ms:g}ms" if ms >= 1 else f"{seconds * 1e6:g}µs"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    if minutes:
        return f"{int(minutes)}m{text}"
    return text


def normalise_duration(text: str) -> str:
    """``30m`` → ``30m0s`` (what zitadel-tools writes into the body)."""
    return format_duration(parse_duration(text))
