"""transforms/sources/input_stream.py: the opener and the depth guard, on real files."""

from __future__ import annotations

import gzip
import io
import random

import ijson
import orjson
import pytest

from transforms.sources.input_stream import (
    MAX_DEPTH,
    TOO_DEEP_MARKER,
    DepthGuard,
    InputReadError,
    detect_bom,
    has_marker,
    open_input,
    too_deep,
)

DOC = orjson.dumps([{"a": 'x]]}}"[[{', "b": [1, {"c": "\\\\"}], "é": "東京"} for _ in range(50)])


def _through_guard(data: bytes, chunk: int, limit: int = MAX_DEPTH) -> tuple[bytes, int]:
    class Small(io.RawIOBase):
        def __init__(self):
            self._data = io.BytesIO(data)

        def read(self, size=-1):
            return self._data.read(min(chunk, size if size and size > 0 else chunk))

    guard = DepthGuard(Small(), limit)
    out = b""
    while True:
        piece = guard.read(4096)
        if not piece:
            return out, guard.cut
        out += piece


@pytest.mark.parametrize("chunk", [1, 7, 64, 65536])
def test_guard_passes_ordinary_json_unchanged_at_any_chunk_boundary(chunk):
    # Brackets and escaped quotes inside strings must not count as nesting.
    assert _through_guard(DOC, chunk) == (DOC, 0)


@pytest.mark.parametrize("chunk", [3, 100, 65536])
def test_guard_cuts_what_goes_deeper_than_the_limit_and_keeps_the_rest(chunk):
    deep = b"[" * 50 + b'{"k": "]]"}' + b"]" * 50
    data = b'[{"a": 1}, ' + deep + b', {"b": "[[["}]'
    out, cut = _through_guard(data, chunk, limit=20)
    values = orjson.loads(out)
    assert cut == 1 and values[0] == {"a": 1} and values[2] == {"b": "[[["}
    assert has_marker(values[1]) and not has_marker(values[0])


@pytest.mark.parametrize("chunk", [5, 999, 4096, 65536])
def test_guard_cuts_integers_too_long_for_ijson_across_chunks(chunk):
    data = b'[{"n": 12}, {"n": ' + b"9" * 200_000 + b'}, {"n": -3, "s": "' + b"8" * 5000 + b'"}]'
    out, cut = _through_guard(data, chunk)
    values = list(ijson.items(io.BytesIO(out), "item"))
    assert cut == 1 and values[0] == {"n": 12} and values[2] == {"n": -3, "s": "8" * 5000}
    assert has_marker(values[1]) and not has_marker(values[2])


def test_guard_refuses_instead_of_cutting_for_one_document_inputs():
    with pytest.raises(InputReadError, match="nested deeper than 5 levels"):
        DepthGuard(io.BytesIO(b"[[[[[[[]]]]]]]"), 5, refuse=True).read()


def test_guard_random_documents_match_ijson_below_the_limit():
    rng = random.Random(7)
    for _ in range(200):
        value = [{"s": "".join(rng.choice('ab[]{}"\\') for _ in range(8)), "n": [rng.random()]}]
        data = orjson.dumps(value)
        out, cut = _through_guard(data, rng.randint(1, 40))
        assert cut == 0 and list(ijson.items(io.BytesIO(out), "item", use_float=True)) == value


def test_too_deep_counts_only_brackets_outside_strings():
    assert not too_deep(orjson.dumps({"s": "[" * 2000}))
    assert too_deep(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    assert not too_deep(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    assert TOO_DEEP_MARKER.startswith("\x00")  # no export holds a NUL-led string


@pytest.mark.parametrize(
    ("head", "encoding"),
    [
        (b"\xef\xbb\xbf[", "utf-8"),
        (b"\xff\xfe[\x00", "utf-16-le"),
        (b"\xfe\xff\x00[", "utf-16-be"),
        (b"\xff\xfe\x00\x00", "utf-32-le"),
        (b"\x00\x00\xfe\xff", "utf-32-be"),
        (b"[{", None),
    ],
)
def test_byte_order_marks(head, encoding):
    assert detect_bom(head)[0] == encoding


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be", "utf-32"])
def test_open_input_gives_utf8_without_bom(tmp_path, encoding):
    text = '[{"name": "Zoë 東京 😀"}]'
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    path = tmp_path / "u.json.gz"
    path.write_bytes(gzip.compress(data))
    with open_input(str(path)) as stream:
        assert stream.read() == text.encode()


def test_a_cut_gzip_returns_what_comes_before_the_cut_then_raises(tmp_path):
    data = b"".join(orjson.dumps({"i": i, "pad": "x" * 50}) + b"\n" for i in range(5000))
    packed = gzip.compress(data)
    path = tmp_path / "u.json.gz"
    path.write_bytes(packed[: len(packed) // 2])
    got = b""
    with open_input(str(path)) as stream, pytest.raises(InputReadError, match="ends early"):
        while True:
            piece = stream.read(1 << 16)
            assert piece
            got += piece
    assert 0 < len(got) < len(data) and data.startswith(got)
