"""The first records of a table, read in the launcher: the mapping is checked against them before
anything is written.

A JSON path that matches nothing is a typo until proven otherwise: ``--map
'blocked=not(fields.is_actve)'`` would make every deactivated account active, ``--map
password_hash=fields.pasword`` would drop every password. :func:`check_sample` refuses, with one
line naming the nearest path the records do have, every mapped path (and ``--where`` path) that
none of the first records holds; it refuses an ``id``, ``email`` or ``password_hash`` that none of
them holds a value in, and a ``--where`` that selects none of them. An ``id`` path that is absent
(Django's ``pk`` in a fixture written with natural keys) names a field unique among them.

:func:`read_sample` reads at most :data:`SAMPLE_RECORDS` records (and :data:`SAMPLE_BYTES` of text)
of each file, in order, until that many are read: CSV rows as ``{column: text}``, JSON as NDJSON
lines, array elements, values spread over lines, or the records of a wrapper (``{"data": [...]}``).
docs/table.md#checked-before-the-run.

Example::

    sample = read_sample(files, spec)
    check_sample(sample, spec)   # ConfigError (one line) for a path no record holds
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Callable, Iterator, Sequence

import orjson

from transforms.common.errors import ConfigError
from transforms.sources.csv_rows import read_csv
from transforms.sources.input_shape import read_head
from transforms.sources.input_stream import InputReadError
from transforms.sources.table.spec import FieldPath, TableSpec, did_you_mean
from transforms.sources.table.values import select

__all__ = [
    "SAMPLE_RECORDS",
    "SAMPLE_BYTES",
    "Sample",
    "SampleFile",
    "read_sample",
    "check_sample",
    "lookup",
    "paths_of",
    "wrapper_key",
    "NestedFields",
    "unique_path",
    "selected",
    "held",
    "holds",
    "found",
]

SAMPLE_RECORDS = 2000
SAMPLE_BYTES = 4 << 20
_MAX_PATHS = 5000  # distinct paths remembered (for "did you mean")
_MAX_DEPTH = 6  # of the paths listed; a mapping may go deeper
# Fields a run must not leave empty for every user: without them every user is refused or changed.
_MUST_HOLD = ("id", "email", "password_hash")
_ID_NAMES = ("id", "uuid", "uid", "user_id", "username", "user_name", "login", "email")
_MISSING = object()
_SIMPLE_KEY = re.compile(r"[A-Za-z0-9_-]{1,100}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclasses.dataclass(frozen=True)
class SampleFile:
    """One file to sample: CSV (with its delimiter and encoding) or JSON (``items``: the wrapper's
    ijson prefix, e.g. ``data.item``, or None)."""

    path: str
    csv: bool
    delimiter: str = ","
    encoding: str = "utf-8"
    items: str | None = None


@dataclasses.dataclass
class Sample:
    """The records read (``selected``: those ``--where`` keeps), and whether that was every record."""

    records: list[dict] = dataclasses.field(default_factory=list)
    selected: list[dict] = dataclasses.field(default_factory=list)
    complete: bool = True


def lookup(record: dict, parts: Sequence[str]) -> object:
    """The value at ``parts`` (a CSV column holding a JSON object is read into), ``_MISSING`` when a
    key on the way is absent (null is a value here: the key exists)."""
    value: object = record
    for part in parts:
        if type(value) is str and value is not record and value.lstrip().startswith(("{", "[")):
            try:
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                return _MISSING
        if part[0] == "[" and type(value) is list:  # NAME[KEY=VALUE]: the element chosen by key
            value = select(value, part)
            if value is None:
                return _MISSING
            continue
        if type(value) is not dict:
            return _MISSING
        value = value.get(part, _MISSING)
        if value is _MISSING:
            return _MISSING
    return value


def found(record: dict, path: FieldPath) -> bool:
    return lookup(record, path.parts) is not _MISSING


def held(record: dict, path: FieldPath) -> bool:
    """Whether ``record`` holds a value at ``path`` (not absent, null, "", [] or {})."""
    parts = path.parts
    value = record.get(parts[0], _MISSING) if len(parts) == 1 else lookup(record, parts)
    return value is not _MISSING and value is not None and value != "" and value != [] and value != {}


def holds(path: FieldPath) -> Callable[[dict], bool]:
    """:func:`held` for one path, made once: the reader asks it of every record (a path of one or
    two keys, the common ones, without the general walk)."""
    parts = path.parts
    empty = (None, "")
    if len(parts) == 1:
        (key,) = parts

        def one(record: dict) -> bool:
            value = record.get(key)
            return value not in empty and value != [] and value != {}

        return one
    if len(parts) == 2:
        first, second = parts

        def two(record: dict) -> bool:
            inner = record.get(first)
            if type(inner) is dict:
                value = inner.get(second)
                return value not in empty and value != [] and value != {}
            return held(record, path)

        return two
    return lambda record: held(record, path)


def paths_of(record: dict, prefix: str = "", depth: int = 0) -> Iterator[str]:
    """Every dotted path of ``record``'s keys, nested objects included (to :data:`_MAX_DEPTH`)."""
    for key, value in record.items():
        if not isinstance(key, str):
            continue
        path = f"{prefix}{key}"
        yield path
        if isinstance(value, dict) and depth < _MAX_DEPTH:
            yield from paths_of(value, path + ".", depth + 1)


def selected(record: dict, where: Sequence[tuple[FieldPath, str]]) -> bool:
    """Whether every ``--where PATH=VALUE`` holds for ``record`` (see :func:`where_text`)."""
    return all(where_text(lookup(record, path.parts)) == value for path, value in where)


def where_text(value: object) -> str | None:
    """A value as ``--where`` compares it: text trimmed, numbers as digits, true/false."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return None


def read_sample(files: Sequence[SampleFile], spec: TableSpec, limit: int = SAMPLE_RECORDS) -> Sample:
    """The first records of ``files`` (module docstring); unreadable parts end a file's sample
    (the reader reports them)."""
    sample = Sample()
    for number, file in enumerate(files):
        records, whole = _csv_head(file, limit) if file.csv else _json_head(file, limit)
        for record in records:
            if len(sample.records) >= limit:
                whole = False
                break
            sample.records.append(record)
            if selected(record, spec.where):
                sample.selected.append(record)
        if len(sample.records) >= limit:
            sample.complete = whole and number == len(files) - 1
            break
        sample.complete = sample.complete and whole
    return sample


def _head(path: str) -> tuple[bytes, bool]:
    """The sample's text; nothing when the file cannot be read (the reader says why)."""
    try:
        return read_head(path, SAMPLE_BYTES)
    except (OSError, InputReadError):
        return b"", False


def _csv_head(file: SampleFile, limit: int) -> tuple[list[dict], bool]:
    head, complete = _head(file.path)
    if not complete:  # the last row may be cut: leave it out
        head = head[: head.rfind(b"\n") + 1]
    _, rows = read_csv(io.BytesIO(head), file.delimiter, file.encoding)  # type: ignore[arg-type]
    records = []
    for _, record, problem in rows:
        if problem is None and record is not None:
            records.append(record)
            if len(records) >= limit:
                return records, False
    return records, complete


def _json_head(file: SampleFile, limit: int) -> tuple[list[dict], bool]:
    import ijson

    head, complete = _head(file.path)
    text = head.lstrip()
    records: list[dict] = []
    if file.items is not None or text[:1] == b"[":
        values = ijson.items(io.BytesIO(text), file.items or "item", use_float=True)
    else:
        values = ijson.items(io.BytesIO(text), "", multiple_values=True, use_float=True)
    try:
        for value in values:
            if isinstance(value, dict):
                records.append(value)
            if len(records) >= limit:
                return records, False
    except (ijson.JSONError, ValueError):
        return records, False  # cut by the head's end, or damaged: the reader says which
    return records, complete


def check_sample(sample: Sample, spec: TableSpec) -> None:
    """Refuse (ConfigError, one line) a mapping the first records do not bear out (module docstring)."""
    if not sample.records:
        return  # nothing read: the reader reports the file (empty, or unreadable)
    known = _known_paths(sample.records)
    count = len(sample.records)
    counted = f"its {count:,} records" if sample.complete else f"the first {count:,} records"
    for path, _ in spec.where:
        if not any(found(r, path) for r in sample.records):
            raise ConfigError(
                f"--where {path.text}: none of {counted} has {path.text}{did_you_mean(path.text, known)}"
            )
    if spec.where and not sample.selected:
        first = spec.where[0][0]
        seen = sorted({str(where_text(lookup(r, first.parts))) for r in sample.records})[:8]
        raise ConfigError(f"--where: none of {counted} is selected; {first.text} holds {', '.join(seen)}")
    _one_model(sample.records, spec, counted)
    records = sample.selected
    if spec.where:
        counted = f"the {len(records):,} records --where selects (of {counted})"
    fields = [(field, p) for field, path in spec.fields.items() for p in path.paths()]
    for field, path in [*fields, *(("metadata", p) for p in spec.metadata)]:
        if not any(found(r, path) for r in records):
            raise ConfigError(_absent(field, path, records, known, counted))
        if field in _MUST_HOLD and not any(held(r, path) for r in records):
            outcome = "imported without a password" if field == "password_hash" else "refused"
            raise ConfigError(
                f"mapping {field!r}: {path.text} holds no value in any of {counted}: every user would be "
                f"{outcome}"
                + ("; leave password_hash out if the table holds none" if field == "password_hash" else "")
            )


def _one_model(records: list[dict], spec: TableSpec, counted: str) -> None:
    """A Django ``dumpdata`` file holds every model in one array: without ``--where`` its groups,
    permissions and sessions would be read as users (dead-lettered, or with ``--email-fallback``
    written under ids that collide with the users')."""
    if spec.where:
        return
    models = sorted({r["model"] for r in records if isinstance(r.get("model"), str) and "fields" in r})
    if len(models) > 1:
        users = [m for m in models if m.rsplit(".", 1)[-1].endswith("user")] or models[:1]
        raise ConfigError(
            f"--input: {counted} are of {len(models)} models ({', '.join(models[:6])}): select the users "
            f"with --where model={users[0]}"
        )


def _absent(field: str, path: FieldPath, records: list[dict], known: list[str], counted: str) -> str:
    text = f"mapping {field!r}: none of {counted} has {path.text}"
    if path.text in known:
        return f"{text} (only records --where leaves out have it)"
    if field == "id":
        unique = unique_path(records)
        if unique:
            return f"{text}{did_you_mean(path.text, known)}; a field unique in them: --map id={unique}"
    return text + did_you_mean(path.text, known)


def unique_path(records: list[dict]) -> str | None:
    """A path whose value is text or a whole number in every record and different in each: the
    likeliest id first (``id``, ``uuid``, ``username``, ``email``, ...), else the first found."""
    candidates = []
    for path in _known_paths(records[:1]):
        parts = path.split(".")
        values = [lookup(r, parts) for r in records]
        if all(isinstance(v, str | int) and not isinstance(v, bool) and v != "" for v in values):
            if len(set(map(str, values))) == len(values):
                candidates.append(path)
    if not candidates:
        return None

    def rank(path: str) -> tuple[int, int]:
        last = path.rsplit(".", 1)[-1].lower()
        return (_ID_NAMES.index(last) if last in _ID_NAMES else len(_ID_NAMES), path.count("."))

    return min(candidates, key=rank)


def _known_paths(records: list[dict]) -> list[str]:
    known: dict[str, None] = {}
    for record in records:
        for path in paths_of(record):
            if len(known) >= _MAX_PATHS:
                return list(known)
            known[path] = None
    return list(known)


def wrapper_key(head: bytes, id_key: str) -> str | None:
    """The key of a top-level object's one array of records (``{"data": [...]}``, ``{"users":
    [...]}``) when the object is not itself a record (its keys lack ``id_key``, the first part of
    the mapped id); None for anything else."""
    import ijson

    text = head.lstrip()
    if text[:1] != b"{":
        return None
    keys: list[str] = []
    arrays: list[str] = []
    opened: str | None = None
    try:
        for prefix, event, value in ijson.parse(io.BytesIO(text), multiple_values=True):
            if prefix == "" and event == "map_key":
                keys.append(str(value))
            elif prefix == "" and event == "end_map":
                break
            elif keys and prefix == keys[-1] and event == "start_array":
                opened = keys[-1]
            elif opened is not None and prefix == f"{opened}.item":
                if event == "start_map" and _SIMPLE_KEY.fullmatch(opened):
                    arrays.append(opened)
                opened = None
    except (ijson.JSONError, ValueError):
        pass  # the head ends inside the array: the keys before it are known
    if len(arrays) != 1 or id_key in keys:
        return None
    return arrays[0]


class NestedFields:
    """The keys of the nested objects a mapping reads into that it does not read: Django's
    ``fields.first_name`` when only ``fields.username`` and ``fields.email`` are mapped. :meth:`names`
    gives their dotted paths for one record (values that hold something), counted as fields not
    carried (transforms/mapping/fields.py); at most :data:`MAX_NESTED_NAMES` distinct names per
    worker, the rest as ``<parent>.other``."""

    MAX_NESTED_NAMES = 100

    def __init__(self, spec: TableSpec):
        parents: dict[tuple[str, ...], set[str]] = {}
        for path in spec.paths():
            for cut in range(1, len(path.parts)):
                if path.parts[cut][0] == "[":  # a list's element: its other keys are not fields
                    break
                parents.setdefault(path.parts[:cut], set()).add(path.parts[cut])
        self._parents = {parent: frozenset(read) for parent, read in parents.items()}
        self._seen: set[str] = set()
        self._cache: dict[tuple[tuple[str, ...], object], str] = {}

    def names(self, record: dict) -> tuple[str, ...]:
        if not self._parents:
            return ()
        names: list[str] = []
        for parent, read in self._parents.items():
            value = record.get(parent[0]) if len(parent) == 1 else lookup(record, parent)
            if type(value) is not dict:
                continue
            for key in value.keys() - read:
                item = value[key]
                if (
                    item is not None
                    and item != ""
                    and item is not False
                    and item != 0
                    and item != []
                    and item != {}
                ):
                    name = self._cache.get((parent, key))
                    names.append(name if name is not None else self._name(parent, key))
        return tuple(sorted(names)) if len(names) > 1 else tuple(names)

    def _name(self, parent: tuple[str, ...], key: object) -> str:
        name = _UNSAFE.sub("_", ".".join((*parent, str(key))))[:80]
        if name not in self._seen:
            if len(self._seen) >= self.MAX_NESTED_NAMES:
                return _UNSAFE.sub("_", ".".join((*parent, "other")))[:80]
            self._seen.add(name)
        if len(self._cache) < 10_000:
            self._cache[(parent, key)] = name
        return name
