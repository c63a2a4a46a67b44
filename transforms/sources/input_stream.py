"""Opening an input file: compression, byte-order marks, integrity, nesting depth.

Every reader (``json_units`` for Auth0, ``keycloak``, ``zitadel_export``) opens its files here, so
that what a file's bytes mean is decided once, the same way (docs/inputs.md):

- **Compression.** ``.gz`` is read with Python's ``gzip`` (not Beam's decompressor, which stops
  quietly where a cut file ends): a file that ends early, fails its CRC or has a broken header
  raises :class:`InputReadError` naming the file. Other compressions go through Beam.
- **Byte-order marks.** A UTF-8 BOM is skipped. UTF-16 and UTF-32 with a BOM (PowerShell 5's
  default) are decoded to UTF-8 as they are read; ``stream.encoding`` names the encoding so the
  run can count it (``inputs.decoded.<encoding>``).
- **Nesting depth.** :class:`DepthGuard` cuts values nested deeper than :data:`MAX_DEPTH` out of a
  JSON stream before ijson sees them (ijson's prefix bookkeeping grows with the square of the
  depth: 200,000 levels took more than 20 GB), leaving a marker the reader turns into a
  ``too-deep`` dead letter.

The launcher's first look at a file (is there one JSON value in it?) is ``input_sniff.py``.

Example::

    with open_input("users.json.gz") as stream:
        head = stream.read(65536)   # UTF-8, BOM removed; InputReadError if the gzip is damaged
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import zlib
from typing import IO

import orjson
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.common import live_tally
from transforms.common.errors import one_line

__all__ = [
    "InputReadError",
    "UTF8_BOM",
    "InputStream",
    "open_input",
    "detect_bom",
    "DepthGuard",
    "MAX_DEPTH",
    "TOO_DEEP_MARKER",
    "has_marker",
    "marker_problem",
    "MAX_DIGITS",
    "too_deep",
]

UTF8_BOM = b"\xef\xbb\xbf"
# Longest first: the UTF-32-LE mark starts with the UTF-16-LE one.
_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (UTF8_BOM, "utf-8"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)
_CHUNK = 1 << 16


class InputReadError(OSError):
    """An input file that cannot be read to its end (cut or damaged compression); one line."""


def detect_bom(head: bytes) -> tuple[str | None, int]:
    """``(encoding, BOM length)`` of a byte-order mark at the start of ``head``, or ``(None, 0)``."""
    for mark, encoding in _BOMS:
        if head.startswith(mark):
            return encoding, len(mark)
    return None, 0


def _is_gzip(path: str) -> bool:
    return CompressionTypes.detect_compression_type(path) == CompressionTypes.GZIP


def _compressed(path: str) -> bool:
    return CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED


class InputStream(io.RawIOBase):
    """A readable binary stream of UTF-8 JSON text (see module docstring)."""

    def __init__(self, path: str, progress: bool = False):
        super().__init__()
        self.path = path
        self.name_for_errors = os.path.basename(path.rstrip("/")) or path
        self._raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
        self._inner: IO[bytes]
        if _is_gzip(path):
            self._inner = gzip.GzipFile(fileobj=self._raw, mode="rb")  # type: ignore[assignment]
        elif _compressed(path):
            self._raw.close()
            self._raw = FileSystems.open(path, compression_type=CompressionTypes.AUTO)
            self._inner = self._raw
        else:
            self._inner = self._raw
        # With ``progress``: where the reader is in the file's own bytes (compressed ones for .gz),
        # for the live line (transforms/common/live_tally.py); Beam's other decompressors wrap the
        # file as ``_file``. A first look at a file (a sniff) does not count as reading it.
        beam_decompressed = self._inner is self._raw and _compressed(path)
        raw = getattr(self._raw, "_file", None) if beam_decompressed else self._raw
        self._tell = getattr(raw, "tell", None) if progress else None
        self.encoding: str | None = None  # set for UTF-16/32 input (decoded here)
        self._decoder: codecs.IncrementalDecoder | None = None
        self._pending = b""
        self._eof = False
        self._error: InputReadError | None = None
        head = self._inner_read(_CHUNK)
        self._progress()
        encoding, skip = detect_bom(head)
        if encoding is not None and encoding != "utf-8":
            self.encoding = encoding
            self._decoder = codecs.getincrementaldecoder(encoding)("strict")
            self._pending = self._decode(head[skip:], final=False)
        else:
            self._pending = head[skip:]

    def _inner_read(self, size: int) -> bytes:
        try:
            # read1: one decompression step, so the bytes before a damaged spot are returned
            # before the error (a buffered read() would drop them with the exception).
            read1 = getattr(self._inner, "read1", None)
            return (
                read1(size)
                if read1 is not None and isinstance(self._inner, gzip.GzipFile)
                else self._inner.read(size)
            )
        except EOFError:
            raise InputReadError(
                f"{self.name_for_errors}: the compressed data ends early (the file was cut)"
            ) from None
        except (gzip.BadGzipFile, zlib.error) as err:
            raise InputReadError(f"{self.name_for_errors}: damaged gzip data ({one_line(err)})") from None

    def _decode(self, data: bytes, final: bool) -> bytes:
        assert self._decoder is not None
        try:
            return self._decoder.decode(data, final).encode("utf-8", "surrogatepass")
        except UnicodeDecodeError as err:
            raise InputReadError(
                f"{self.name_for_errors}: not valid {self.encoding} ({err.reason})"
            ) from None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes. Damage is reported after the bytes before it: a read that meets
        it returns what it has, and the next read raises :class:`InputReadError`."""
        if self._error is not None and not self._pending:
            raise self._error
        if size is None or size < 0:
            size = 1 << 62
        try:
            while len(self._pending) < size and not self._eof:
                chunk = self._next()
                if not chunk:
                    break
                self._pending += chunk
        except InputReadError as err:
            if not self._pending:
                raise
            self._error, self._eof = err, True
        out, self._pending = self._pending[:size], self._pending[size:]
        return out

    def readinto(self, buffer) -> int:  # io.RawIOBase protocol
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _next(self) -> bytes:
        if self._eof:
            return b""
        data = self._inner_read(_CHUNK * 4)
        self._progress()
        if self._decoder is not None:
            out = self._decode(data, final=not data)
            if not data:
                self._eof = True
            return out if out or not data else self._next()
        if not data:
            self._eof = True
        return data

    def _progress(self) -> None:
        if self._tell is not None:
            live_tally.reached(self.path, 0, self._tell())

    def close(self) -> None:
        try:
            if self._inner is not self._raw:
                self._inner.close()
        finally:
            self._raw.close()
            super().close()


def open_input(path: str, progress: bool = False) -> InputStream:
    """Open ``path`` (local or gs://) as UTF-8 JSON text; see :class:`InputStream`.

    ``progress``: the reading counts for the live line (``transforms/common/live_tally.py``)."""
    return InputStream(path, progress)


# --------------------------------------------------------------------------- nesting depth

# Values nested deeper than this are cut out and the record dead-lettered (``too-deep``). No real
# export comes near it (a Keycloak user is about 6 levels deep); orjson's own limit is 1024.
MAX_DEPTH = 512
# What replaces a value nested too deep: a JSON string no export holds.
TOO_DEEP_MARKER = "\x00zitadel-beam:too-deep"
_MARKER_JSON = orjson.dumps(TOO_DEEP_MARKER)
# Integers longer than this are replaced too: ijson's C backend crashes the process (SIGSEGV) on
# an integer beyond Python's int-to-str digit limit (4300 by default), found by the tests here.
MAX_DIGITS = 4000
LONG_NUMBER_MARKER = "\x00zitadel-beam:long-number"
_NUMBER_MARKER_JSON = orjson.dumps(LONG_NUMBER_MARKER)
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_DIGIT_RUN = b"0" * MAX_DIGITS
_NUMBER = re.compile(rb"-?[0-9]+")
_DIGIT_RUN_START = re.compile(rb"[0-9]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"')  # from inside a string to its end
_NOT_QUOTES_OR_BRACKETS = bytes(b for b in range(256) if b not in b'"[]{}')
_BRACKETS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def too_deep(line: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text ``line`` nests deeper than ``limit`` (brackets in strings ignored).

    Cheap for ordinary records: a C-level count, then a scan only of lines with more than
    ``limit`` opening brackets.
    """
    if line.count(b"[") + line.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", line).translate(_BRACKETS, _NOT_BRACKETS)
    if brackets.count(b"(") <= limit:
        return False
    depth = 0
    for c in brackets:
        depth += 1 if c == 0x28 else -1
        if depth > limit:
            return True
    return False


def has_marker(value, limit: int = MAX_DEPTH + 2) -> str | None:
    """The marker a parsed value holds (:data:`TOO_DEEP_MARKER` or :data:`LONG_NUMBER_MARKER`,
    where :class:`DepthGuard` cut something out), or None."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if item in (TOO_DEEP_MARKER, LONG_NUMBER_MARKER):
                return item
        elif depth < limit:
            if isinstance(item, dict):
                stack.extend((v, depth + 1) for v in item.values())
            elif isinstance(item, list):
                stack.extend((v, depth + 1) for v in item)
    return None


def marker_problem(marker: str) -> tuple[str, str]:
    """``(reason, detail)`` of the dead letter for a record holding ``marker``."""
    from transforms.common.reasons import Reason

    if marker == TOO_DEEP_MARKER:
        return Reason.TOO_DEEP, f"nested deeper than {MAX_DEPTH} levels"
    return Reason.MALFORMED_JSON, f"holds an integer of more than {MAX_DIGITS} digits"


class DepthGuard(io.RawIOBase):
    """Pass a JSON byte stream through, replacing every value nested deeper than ``limit`` (and
    every integer of more than :data:`MAX_DIGITS` digits) by a marker string, so the parser
    behind it never sees more than ``limit`` levels.

    The fast path per 64 KiB chunk is C-level only: escaped quotes and backslashes removed, all
    but quotes and brackets deleted, the brackets between strings counted (the in-string state
    is carried from chunk to chunk). The character-by-character path runs only in a chunk that
    may cross the limit. ``cut`` counts the values replaced.
    """

    def __init__(self, inner, limit: int = MAX_DEPTH, refuse: bool = False):
        super().__init__()
        self._inner = inner
        self._refuse = refuse  # raise InputReadError instead of cutting (one-document inputs)
        self._limit = limit
        self._depth = 0  # outside strings, at the end of what was passed on
        self._in_string = False  # the end of what was passed on is inside a string
        self._in_number = False  # inside an integer being cut out (it goes on in the next chunk)
        self._carry = b""  # trailing backslashes or digits, kept for the next chunk
        self._pending = b""
        self._skip_from = -1  # >= 0 while cutting: the depth at which the cut value started
        self._eof = False
        self.cut = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            super().close()

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = 1 << 62
        while not self._pending and not self._eof:
            chunk = self._inner.read(_CHUNK)
            if not chunk:
                self._eof = True
                self._pending = self._slow(self._carry) if self._carry else b""
                self._carry = b""
                break
            self._pending = self._filter(self._carry + chunk)
        out, self._pending = self._pending[:size], self._pending[size:]
        return out

    def _filter(self, data: bytes) -> bytes:
        self._carry = b""
        if self._in_number:
            return self._slow(data)
        if data.endswith(b"\\"):  # an escape cut by the chunk's end
            run = len(data) - len(data.rstrip(b"\\"))
            data, self._carry = data[: len(data) - run], data[len(data) - run :]
        text = data.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in data else data
        parts = text.translate(None, _NOT_QUOTES_OR_BRACKETS).split(b'"')
        outside = b"".join(parts[1::2] if self._in_string else parts[0::2])
        in_string_end = self._in_string ^ (len(parts) % 2 == 0)
        if not in_string_end and not self._carry:
            # A number at the end may go on in the next chunk: keep it, so its length is known.
            digits = len(data) - len(data.rstrip(b"-0123456789"))
            if 0 < digits <= MAX_DIGITS:
                data, self._carry = data[: len(data) - digits], data[len(data) - digits :]
        if len(data) >= MAX_DIGITS and _DIGIT_RUN in data.translate(_DIGITS):
            return self._slow(data)
        if self._skip_from < 0:
            brackets = outside.translate(_BRACKETS)
            opens = brackets.count(b"(")
            if self._depth + opens <= self._limit:
                self._depth += opens - brackets.count(b")")
                self._in_string = in_string_end
                return data
            # Balanced groups removed level by level: what is left is ")))(((" (closes of
            # values opened before, opens of values that go on), so depth <= depth + opens
            # left + levels removed. Few levels in real data: a handful of replace() calls.
            rest, levels = brackets, 0
            while b"()" in rest and levels <= self._limit:
                rest = rest.replace(b"()", b"")
                levels += 1
            if self._depth + rest.count(b"(") + levels <= self._limit:
                self._depth += opens - brackets.count(b")")
                self._in_string = in_string_end
                return data
        return self._slow(data)

    def _slow(self, data: bytes) -> bytes:
        """Character by character: cut out what goes deeper than the limit."""
        out = bytearray()
        i, n = 0, len(data)
        start = 0 if self._skip_from < 0 else -1  # start of the passed-on run, -1 while cutting
        if self._in_number:  # the rest of an integer cut out in the chunk before
            more = _DIGIT_RUN_START.match(data)
            i = more.end() if more else 0
            if i == n:
                return b""
            self._in_number = False
            start = i if start >= 0 else -1
        if self._in_string:
            rest = _STRING_REST.match(data, i)
            if rest is None:  # the whole chunk is inside one string
                return data[start:] if start >= 0 else b""
            i = rest.end()
            self._in_string = False
        while i < n:
            c = data[i]
            if c == 0x22:  # a string: skip it whole
                match = _STRING.match(data, i)
                if match is None:
                    self._in_string = True
                    break
                i = match.end()
                continue
            if c == 0x2D or 0x30 <= c <= 0x39:  # a number
                number = _NUMBER.match(data, i)
                end = number.end() if number else i + 1
                if end - i > MAX_DIGITS and self._skip_from < 0:
                    if self._refuse:
                        name = getattr(self._inner, "name_for_errors", "the input")
                        raise InputReadError(f"{name}: an integer of more than {MAX_DIGITS} digits")
                    out += data[start:i] + _NUMBER_MARKER_JSON
                    self.cut += 1
                    start = end
                    self._in_number = end == n
                i = end
                continue
            if c in (0x5B, 0x7B):  # [ {
                self._depth += 1
                if self._skip_from < 0 and self._depth > self._limit:
                    if self._refuse:
                        name = getattr(self._inner, "name_for_errors", "the input")
                        raise InputReadError(f"{name}: nested deeper than {self._limit} levels")
                    out += data[start:i] + _MARKER_JSON
                    self._skip_from = self._depth - 1
                    self.cut += 1
                    start = -1
            elif c in (0x5D, 0x7D):  # ] }
                self._depth -= 1
                if self._skip_from >= 0 and self._depth == self._skip_from:
                    self._skip_from = -1
                    start = i + 1
            i += 1
        if start >= 0:
            out += data[start:]
        return bytes(out)
