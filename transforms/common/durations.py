"""Go duration strings (``5m``, ``1h30m``, ``300s``) as the import API's ``timeout`` field wants them."""

from __future__ import annotations

import re

from transforms.common.errors import ConfigError

__all__ = ["parse_duration", "format_duration", "normalise_duration", "flag_duration", "flag_seconds"]

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


def flag_duration(flag: str, text: str) -> str:
    """``normalise_duration`` for a flag's value; ConfigError naming the flag otherwise."""
    try:
        return normalise_duration(text)
    except ValueError as err:
        raise ConfigError(f"{flag}: {err}") from None


def flag_seconds(flag: str, text: str) -> float:
    """``parse_duration`` for a flag's value; ConfigError naming the flag otherwise."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise ConfigError(f"{flag}: {err}") from None
