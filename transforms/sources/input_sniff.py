"""The launcher's first look at an input file: is there one JSON value in it, and what is it if not.

:func:`check_readable` reads the head of a file (through ``input_stream.open_input``, so
compression, byte-order marks and damage are handled as the readers handle them) and refuses,
with one line, a file from which not one JSON value can be read (binary data, HTML, a ZIP),
saying what its first bytes look like (:func:`describe_head`), and, asked which export it should
be, one whose first records are another export's (``input_shape.wrong_shape``). docs/inputs.md.

Example::

    check_readable("users.json.gz", "--users")           # ConfigError if nothing can be read
    describe_head(b"<!DOCTYPE html>...")                 # "looks like HTML (...)"
"""

from __future__ import annotations

import io
import re

import orjson

from transforms.common.errors import ConfigError, one_line
from transforms.sources.input_shape import read_head, sql_dump_problem, text_shape, wrong_shape
from transforms.sources.input_stream import MAX_DEPTH, DepthGuard, InputReadError

__all__ = ["check_readable", "describe_head"]

_PRINTABLE = re.compile(rb"[\x20-\x7e]")


def describe_head(head: bytes) -> str:
    """What the first bytes of a file look like, in words, with a short printable preview."""
    start = head.lstrip()
    lower = start[:200].lower()
    if not head:
        return "it is empty (0 bytes)"
    if not start:
        return "it holds only white space"
    if head.startswith(b"\x1f\x8b"):
        return "looks like gzip data in a file whose name does not end in .gz (rename it to .gz)"
    if head.startswith(b"PK\x03\x04"):
        return "looks like a ZIP archive (unzip it first)"
    if lower.startswith((b"<!doctype html", b"<html")) or b"<html" in lower or b"<head" in lower:
        return "looks like HTML (an error or login page saved instead of the export?)"
    if lower.startswith(b"<?xml") or lower.startswith(b"<"):
        return "looks like XML or HTML, not JSON"
    known = sql_dump_problem(head) or text_shape(head)  # a SQL dump; a source's CSV export
    if known:
        return known
    sample = head[:64]
    if b"\x00" in sample and sample.count(b"\x00") * 3 >= len(sample):
        return "looks like UTF-16 or UTF-32 text without a byte-order mark (save it as UTF-8)"
    printable = len(_PRINTABLE.findall(sample)) + sample.count(b"\n") + sample.count(b"\t")
    if printable < len(sample) * 0.9:
        return f"looks like binary data (first bytes {sample[:16].hex(' ')})"
    preview = start[:40].decode("ascii", "replace").replace("\n", "\\n").replace("\r", "\\r")
    return f"looks like text that is not JSON (starts {preview!r})"


def _readable(head: bytes, complete: bool) -> bool:
    """Whether ``head`` (UTF-8, BOM removed) holds at least one JSON value a reader would yield,
    or cannot be decided from the head alone (a first value longer than the head)."""
    import ijson

    text = head.lstrip()
    if not text:
        return False
    lines = text.split(b"\n")
    if not complete:
        lines = lines[:-1]  # the last line may be cut by the head's end
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            orjson.loads(line)
            return True
        except orjson.JSONDecodeError as err:
            refused = "depth" in err.msg or "surrogate" in err.msg or "UTF-8" in err.msg
            if refused and line[:1] in (b"{", b"[") and line[-1:] in (b"}", b"]"):
                return True  # a record, refused for its content: the reader dead-letters it
    if text[:1] not in (b"[", b"{"):
        return False
    try:
        events = ijson.basic_parse(DepthGuard(io.BytesIO(text)), multiple_values=True)
        depth = 0
        for event, _ in events:
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
                if depth <= 1:  # a whole element of the array (or a whole top-level value)
                    return True
            elif depth <= 1 and text[:1] == b"[":
                return True  # a scalar element: read, then dead-lettered as not an object
            if depth > MAX_DEPTH:
                return True  # too deep to decide here; the reader dead-letters it
    except ijson.IncompleteJSONError as err:
        # The head ended inside the first value: readable as far as anyone can tell here.
        return not complete and "premature EOF" in str(err)
    except ijson.JSONError:
        return False
    return not complete


def check_readable(path: str, what: str, allow_empty: bool = False, expected: str | None = None) -> None:
    """Refuse (ConfigError, one line) a file from which not one JSON value can be read, or (with
    ``expected``, a key of ``input_shape.readers()``) whose first records are another export's.

    Reads at most 64 KiB (decompressed) of the head. A 0-byte file is refused unless
    ``allow_empty`` (docs/inputs.md: an empty password or MFA export is legitimate, an empty
    users export is almost always a mistake). A file that breaks further on is the reader's
    business (``unreadable-input`` dead letter, counted).
    """
    name = path
    try:
        head, complete = read_head(path)
    except InputReadError as err:  # a broken gzip header: nothing at all can be read
        raise ConfigError(f"{what} {name}: cannot be read: {one_line(err)}") from None
    except OSError as err:
        raise ConfigError(f"{what} {name}: cannot be read ({err.strerror or one_line(err)})") from None
    # Damage further on (a cut or a bad CRC) ends the head early: the reader keeps what comes
    # before it and reports the rest (unreadable-input, exit 1 unless --allow-partial).
    if not head:
        if allow_empty:
            return
        raise ConfigError(
            f"{what} {name}: the file is empty (0 bytes); an export without users is '[]' "
            "(see docs/inputs.md)"
        )
    if not _readable(head, complete):
        raise ConfigError(f"{what} {name}: not one JSON record could be read: {describe_head(head)}")
    problem = wrong_shape(head, expected) if expected else None
    if problem:
        raise ConfigError(f"{what} {name}: {problem}")
