"""Keycloak realm files: which files (and realms) to read, and streaming their users.

Which files to read is decided in the launcher by :func:`plan_realm_sources`, which accepts a
single realm export, a multi-realm array (``realm_name`` picks one), or a directory / glob of a
split export (``kc.sh export --users different_files`` writes ``<realm>-realm.json`` and
``<realm>-users-N.json``), and raises :class:`RealmInputError` (one line) when the input cannot be
used. Workers then stream one file's users with :func:`iter_users` (ijson's C backend, straight
from ``FileSystems.open``, local or gs://), so a 1 GB realm never sits in memory whole.

Example::

    sources = plan_realm_sources("exports/", realm_name="acme")
    with open_realm_file(sources[0].path) as handle:
        for user in iter_users(sources[0], DepthGuard(handle)): ...
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import ijson
from apache_beam.io.filesystems import FileSystems

from transforms.common.errors import one_line
from transforms.mapping.otp import REALM_POLICY_KEYS, OtpPolicy, realm_policy
from transforms.sources.input_plan import file_problem
from transforms.sources.input_sniff import describe_head
from transforms.sources.input_stream import DepthGuard, InputStream, open_input

__all__ = [
    "RealmSource",
    "RealmInputError",
    "TopLevel",
    "plan_realm_sources",
    "expand_realm",
    "scan_top_level",
    "is_users_part",
    "open_realm_file",
    "iter_users",
]

_LOGGER = logging.getLogger(__name__)

# <realm>-realm.json and <realm>-users-<n>.json, as `kc.sh export --users different_files` names them.
_SPLIT_NAME = re.compile(r"^(?P<realm>.+)-(?:realm|users-(?P<n>\d+))\.json(?:\.gz)?$")
_GLOB_CHARS = re.compile(r"[*?\[]")
_IJSON_BUF = 1 << 20
# A parse event of ijson: (prefix, event, value).
_Event = tuple[str, str, object]


@dataclasses.dataclass(frozen=True)
class RealmSource:
    """One file to read: ``item`` is the realm's position in a multi-realm array, else None."""

    index: int
    path: str
    item: int | None = None
    realm: str = ""  # the realm's name: derived ids of users without ``id`` depend on it
    # The realm's otpPolicy* (transforms/mapping/otp.py); None when not read (a multi-realm array, or a
    # split export's users files without their <realm>-realm.json).
    otp_policy: OtpPolicy | None = None


class RealmInputError(ValueError):
    """The realm input cannot be used (missing, not JSON, no users, ambiguous realm); one line."""


class _Candidate(NamedTuple):
    """A realm found while planning: its file, its position in a multi-realm array, its name."""

    path: str
    item: int | None
    realm: str


def open_realm_file(path: str, progress: bool = False) -> InputStream:
    """UTF-8 text (BOM skipped, UTF-16/32 decoded), gzip checked; wrap it in a DepthGuard to read.
    ``progress``: the users' reader, counted for the live line (transforms/common/live_tally.py)."""
    return open_input(path, progress)


def is_users_part(path: str) -> bool:
    """Whether ``path`` is a split export's ``<realm>-users-N.json`` (it holds no definitions)."""
    match = _SPLIT_NAME.match(os.path.basename(path))
    return bool(match and match.group("n") is not None)


@dataclasses.dataclass
class TopLevel:
    """What the launcher learns from the top of a file without reading its users."""

    array: bool
    has_users: bool = False
    realm: str | None = None
    realms: list[str] = dataclasses.field(default_factory=list)
    # Top-level otpPolicy* values seen before ``users`` (Keycloak writes them first).
    otp_policy: dict[str, object] = dataclasses.field(default_factory=dict)


def scan_top_level(path: str) -> TopLevel:
    """Read a realm file's top level up to its ``users`` array (Keycloak writes it before the
    large ``clients`` section, and a users file has it second), or the realm names of an array."""
    name = os.path.basename(path)
    try:
        with open_realm_file(path) as handle:
            events = ijson.parse(DepthGuard(handle), buf_size=64 * 1024)
            try:
                first = next(events, None)
            except ijson.JSONError as err:
                if "premature EOF" not in str(err):
                    raise
                first = None
            if first is None:
                raise RealmInputError(f"{name}: the file is empty")
            if first[1] not in ("start_array", "start_map"):
                raise RealmInputError(
                    f"{name}: not a Keycloak realm export (expected a JSON object): {_describe(path)}"
                )
            if first[1] == "start_map":
                top = TopLevel(array=False)
                expect_users = False
                for prefix, event, value in events:
                    if expect_users:
                        top.has_users = event == "start_array"
                        return top
                    if prefix == "" and event == "map_key":
                        expect_users = value == "users"
                    elif prefix == "realm" and event == "string":
                        top.realm = value
                    elif prefix in REALM_POLICY_KEYS and event in ("string", "number"):
                        top.otp_policy[prefix] = value
                return top
        # A multi-realm export: read again for the realm names (the C backend skips the rest).
        # Keycloak writes `realm` in every realm, so the list lines up with the array items.
        with open_realm_file(path) as handle:
            realms = [r if isinstance(r, str) else "" for r in ijson.items(DepthGuard(handle), "item.realm")]
        return TopLevel(array=True, has_users=True, realms=realms)
    except ijson.JSONError as err:
        raise RealmInputError(f"{name}: not valid JSON ({one_line(err)}): {_describe(path)}") from None
    except (OSError, ValueError) as err:
        if isinstance(err, RealmInputError):
            raise
        raise RealmInputError(f"cannot read {path}: {one_line(err)}") from None


def _describe(path: str) -> str:
    """What the file's first bytes look like (transforms/sources/input_sniff.py ``describe_head``)."""
    try:
        with open_realm_file(path) as handle:
            return describe_head(handle.read(4096))
    except OSError as err:
        return one_line(err)


def _missing_parts(paths: Sequence[str]) -> list[str]:
    """The ``<realm>-users-N.json`` names a split export's numbering skips (0 to the highest N)."""
    numbers: dict[tuple[str, str, str], set[int]] = {}
    for path in paths:
        match = _SPLIT_NAME.match(os.path.basename(path))
        if match and match.group("n") is not None:
            base = path[: len(path) - len(os.path.basename(path))]
            suffix = ".json.gz" if path.endswith(".gz") else ".json"
            numbers.setdefault((base, match.group("realm"), suffix), set()).add(int(match.group("n")))
    missing = []
    for (base, realm, suffix), found in sorted(numbers.items()):
        missing += [f"{base}{realm}-users-{n}{suffix}" for n in range(max(found)) if n not in found]
    return missing


def _match(pattern: str) -> list[str]:
    try:
        result = FileSystems.match([pattern])[0]
    except Exception as err:  # Beam wraps every backend error in BeamIOError
        raise RealmInputError(f"cannot read realm {pattern!r}: {one_line(err)}") from None
    return sorted(m.path for m in result.metadata_list if not m.path.endswith("/"))


def _match_directory(directory: str) -> list[str]:
    base = directory.rstrip("/")
    return _match(base + "/*.json") + _match(base + "/*.json.gz")


def expand_realm(realm: str) -> list[str]:
    """A file, a directory (its ``*.json`` files) or a glob → the matched paths."""
    if _GLOB_CHARS.search(realm):
        paths = _match(realm)
    elif realm.endswith("/") or (not realm.startswith("gs://") and os.path.isdir(realm)):
        paths = _match_directory(realm)
    else:
        paths = _match(realm)
        if not paths and realm.startswith("gs://"):
            paths = _match_directory(realm)  # a gs:// "directory" given without '/'
    if not paths:
        raise RealmInputError(f"realm {realm!r}: no such file")
    return paths


def _sort_key(path: str) -> tuple[str, int, int, str]:
    match = _SPLIT_NAME.match(os.path.basename(path))
    if not match:
        return ("", 0, 0, path)
    users_n = match.group("n")
    return (match.group("realm"), 1 if users_n is not None else 0, int(users_n or 0), path)


def plan_realm_sources(
    realm: str, realm_name: str | None = None, allow_missing_parts: bool = False
) -> list[RealmSource]:
    """The files (and realms) to read for ``--realm``/``--realm-name``, in sort-key order.

    Raises RealmInputError when nothing matches, a file is not a realm export (or is another
    export or a SQL dump: input_plan.py), several realms
    are present without ``realm_name``, no file holds a ``users`` array, or (unless
    ``allow_missing_parts``) the numbering of a split export's ``<realm>-users-N.json`` has a gap.
    """
    paths = expand_realm(realm)
    if len(paths) == 1:
        match = _SPLIT_NAME.match(os.path.basename(paths[0]))
        if match and match.group("n") is None:
            # `<realm>-realm.json` given on its own: its users may sit next to it.
            base = paths[0][: len(paths[0]) - len(os.path.basename(paths[0]))]
            paths += _match(f"{base}{match.group('realm')}-users-*.json")
    paths.sort(key=_sort_key)
    missing = _missing_parts(paths)
    if missing and not allow_missing_parts:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise RealmInputError(
            f"{realm}: the split export has a gap: {missing[0]} is missing{more}; "
            "--allow-missing-parts reads the parts that are there"
        )
    if missing:
        _LOGGER.warning(
            "split export: %d part(s) missing, e.g. %s (--allow-missing-parts)", len(missing), missing[0]
        )

    candidates: list[_Candidate] = []
    without_users: list[str] = []
    policies: dict[str, OtpPolicy] = {}  # realm name → otpPolicy* of its realm file
    for path in paths:
        # Its first records only: an Auth0 export or a ZITADEL document is named as such, not
        # scanned to its end for a "users" array it does not have.
        problem = file_problem(path, "keycloak-realm")
        if problem:
            raise RealmInputError(f"{os.path.basename(path)}: {problem}")
        top = scan_top_level(path)
        if top.array:
            candidates += [_Candidate(path, i, name) for i, name in enumerate(top.realms)]
            continue
        match = _SPLIT_NAME.match(os.path.basename(path))
        name = top.realm or (match.group("realm") if match else "")
        if not (match and match.group("n") is not None):  # a realm file, not a users-N file
            policies.setdefault(name, realm_policy(top.otp_policy))
        if top.has_users:
            candidates.append(_Candidate(path, None, name))
        else:
            without_users.append(name)

    names = sorted({c.realm for c in candidates} | set(without_users))
    if realm_name is not None:
        if realm_name not in names:
            raise RealmInputError(
                f"no realm named {realm_name!r} in {realm} (found: {', '.join(names) or 'none'})"
            )
        candidates = [c for c in candidates if c.realm == realm_name]
    elif len(names) > 1:
        raise RealmInputError(
            f"{realm} holds several realms ({', '.join(n or '?' for n in names)}): choose one with --realm-name"
        )
    if not candidates:
        raise RealmInputError(
            f'{realm}: no "users" array (and no <realm>-users-N.json files of a split export)'
        )
    return [
        RealmSource(
            index=index,
            path=c.path,
            item=c.item,
            realm=c.realm,
            otp_policy=None if c.item is not None else policies.get(c.realm),
        )
        for index, c in enumerate(candidates)
    ]


def _only_item(events: Iterable[_Event], item: int) -> Iterator[_Event]:
    """The parse events of one realm of a multi-realm array (stops after it)."""
    current = -1
    for prefix, event, value in events:
        if prefix == "item" and event == "start_map":
            current += 1
        if current == item:
            yield prefix, event, value
        elif current > item:
            return


def iter_users(source: RealmSource, handle: DepthGuard) -> Iterator[object]:
    """Stream the users of ``source`` from an open binary ``handle`` (wrap it in a
    ``DepthGuard`` first: ijson's memory grows with the square of the nesting depth)."""
    if source.item is None:
        return ijson.items(handle, "users.item", use_float=True, buf_size=_IJSON_BUF)
    events = _only_item(ijson.parse(handle, buf_size=_IJSON_BUF), source.item)
    return ijson.items(events, "item.users.item", use_float=True)
