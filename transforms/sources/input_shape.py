"""Which export a file is, from its first records: each reader refuses the shapes of the others.

A Keycloak realm given as ``--users`` used to become one profile without ``user_id`` (exit 0,
its users never mentioned); an Auth0 password export given as ``--users`` became users without
passwords. :func:`wrong_shape` looks at the head the launcher already reads
(``input_sniff.check_readable``: at most 64 KiB, whatever the file's size) and names what the file
is and which command takes it. Only a positive match on another shape refuses: a file whose first
records match none (damaged, unusual) is left to the reader, which dead-letters what it cannot use.

Example::

    wrong_shape(b'{"realm": "acme", "users": [', "auth0-users")
    # 'looks like a Keycloak realm export (a "realm" key), not an Auth0 user export;
    #  migrate keycloak --realm reads it'
    shape_problem("realm.json", "zitadel-export")   # the same for a file (its head only)
"""

from __future__ import annotations

import dataclasses
import io

from transforms.sources.input_stream import DepthGuard, InputReadError, open_input

__all__ = [
    "EXPECTED",
    "SHAPES",
    "identify",
    "wrong_shape",
    "shape_problem",
    "read_head",
    "firebase_csv",
]

HEAD_BYTES = 1 << 16
_RECORDS = 8  # records looked at: one of the expected shape among them is enough to go on


@dataclasses.dataclass(frozen=True)
class Shape:
    what: str  # "a Keycloak realm export"
    takes: str  # the command (and flag) that reads it, or what to do with it


SHAPES = {
    "auth0-users": Shape("an Auth0 user export", "migrate auth0 --users reads it"),
    "auth0-passwords": Shape("an Auth0 password export", "migrate auth0 --passwords reads it"),
    "auth0-mfa": Shape("an Auth0 MFA export", "migrate auth0 --mfa reads it"),
    "keycloak-realm": Shape("a Keycloak realm export", "migrate keycloak --realm reads it"),
    "zitadel-export": Shape("a ZITADEL export document", "migrate zitadel --export reads it"),
    "import-body-v1": Shape(
        "a ZITADEL dataOrgsv1 import body", "push --body sends it as it is (migrate zitadel --export cuts it)"
    ),
    "import-body": Shape("a ZITADEL import body", "push --body sends it as it is"),
    "firebase-users": Shape("a Firebase Auth export", "migrate firebase --users reads it"),
}

# The shapes each reader takes (the key of SHAPES naming it first).
EXPECTED = {
    "auth0-users": ("auth0-users",),
    "auth0-passwords": ("auth0-passwords",),
    "auth0-mfa": ("auth0-mfa",),
    "keycloak-realm": ("keycloak-realm",),
    "zitadel-export": ("zitadel-export", "import-body-v1"),
    "firebase-users": ("firebase-users",),
}

# Keys only an Auth0 profile has (Management API, user export job and bulk-import schema).
_PROFILE_KEYS = (
    "user_id",
    "identities",
    "given_name",
    "family_name",
    "user_metadata",
    "app_metadata",
    "password_hash",
    "custom_password_hash",
    "mfa_factors",
    "logins_count",
    "last_login",
)
# Stands in the top-level keys for "the users array holds records with localId" (not a JSON key).
_FIREBASE_USER = "\x00users[].localId"


def _identify_record(keys: dict[str, str]) -> tuple[str, str] | None:
    """(shape, evidence) for one JSON object's top-level keys (key → its value's first parse
    event, ``string``, ``start_array``, ...), or None when nothing marks it."""
    for key in ("dataOrgs", "data_orgs"):
        if key in keys:
            return "import-body", f'a top-level "{key}"'
    for key in ("dataOrgsv1", "data_orgsv1"):
        if key in keys:
            return "import-body-v1", f'a top-level "{key}"'
    if keys.get("orgs") == "start_array":
        return "zitadel-export", 'a top-level "orgs" array'
    if keys.get("realm") == "string":
        return "keycloak-realm", 'a "realm" key'
    if _FIREBASE_USER in keys:
        return "firebase-users", 'a "users" array of records with "localId"'
    if "localId" in keys:
        return "firebase-users", 'records with "localId"'
    for key in ("otp_secret", "recovery_code"):
        if key in keys:
            return "auth0-mfa", f'records with "{key}"'
    for key in ("passwordHash", "_tmp_is_unique"):
        if key in keys:
            return "auth0-passwords", f'records with "{key}"'
    if "user_id" not in keys:
        for key in ("_id", "_ID"):
            if key in keys:
                return "auth0-passwords", f'records keyed "{key}"'
    if keys.get("type") == "string" and "user_id" in keys and "email" not in keys:
        return "auth0-mfa", 'records with "user_id" and "type"'
    for key in _PROFILE_KEYS:
        if key in keys:
            return "auth0-users", f'records with "{key}"'
    return None


def _first_objects(head: bytes) -> list[dict[str, str]]:
    """The top-level keys of the first JSON objects in ``head``: of the document or of each
    concatenated value (NDJSON), or of the first elements of a top-level array. A key whose value
    the head cuts off is still listed; a parse error ends the list."""
    import ijson

    objects: list[dict[str, str]] = []
    base: str | None = None
    current: dict[str, str] | None = None
    pending: str | None = None
    events = ijson.parse(DepthGuard(io.BytesIO(head)), multiple_values=True)
    try:
        for prefix, event, value in events:
            if base is None:
                if event not in ("start_map", "start_array"):
                    break
                base = "item" if event == "start_array" else ""
            if pending is not None and current is not None:
                current[pending] = event
                pending = None
            if base == "" and prefix == "users.item" and event == "map_key" and value == "localId":
                objects[0][_FIREBASE_USER] = "string"  # firebase auth:export: {"users": [...]}
            if prefix != base:
                continue
            if event == "start_map":
                current = {}
                objects.append(current)
            elif event == "map_key" and current is not None:
                pending = str(value)
            elif event == "end_map" and len(objects) >= _RECORDS:
                break
    except ijson.JSONError:
        pass  # the head ends inside a value, or the file is damaged further on
    if pending is not None and current is not None:
        current[pending] = ""
    return objects


def identify(head: bytes) -> tuple[str, str] | None:
    """(shape, evidence) of the first object that shows one, or None."""
    for keys in _first_objects(head):
        found = _identify_record(keys)
        if found is not None:
            return found
    return None


def wrong_shape(head: bytes, expected: str) -> str | None:
    """Why a file whose head is ``head`` is not what the ``expected`` reader (a key of EXPECTED)
    takes, in words, or None when it may be: its first objects show another shape and none of
    them shows an expected one."""
    marked = [_identify_record(keys) for keys in _first_objects(head)]
    shapes = [m for m in marked if m is not None]
    if not shapes or any(shape in EXPECTED[expected] for shape, _ in shapes):
        return None
    shape, evidence = shapes[0]
    found, wanted = SHAPES[shape], SHAPES[expected]
    return f"looks like {found.what} ({evidence}), not {wanted.what}; {found.takes}"


def firebase_csv(head: bytes) -> bool:
    """Whether ``head`` starts like ``firebase auth:export users.csv``: no header, a first line
    of at least 23 columns whose third (emailVerified) is ``true`` or ``false``."""
    import csv

    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    if first.count(",") < 22:
        return False
    row = next(csv.reader([first]), [])
    _, _, verified, *_ = row + ["", "", ""]
    return len(row) >= 23 and verified.strip() in ("true", "false")


def read_head(path: str) -> tuple[bytes, bool]:
    """At most 64 KiB of the file's text (decompressed, UTF-8) and whether that is all of it.

    Damage after the first bytes ends the head early (the reader reports it); OSError and
    InputReadError before any byte are the caller's to report."""
    head = b""
    complete = False
    try:
        with open_input(path) as stream:
            while len(head) < HEAD_BYTES:
                piece = stream.read(HEAD_BYTES - len(head))
                if not piece:
                    complete = True
                    break
                head += piece
    except InputReadError:
        if not head:
            raise
    return head, complete


def shape_problem(path: str, expected: str) -> str | None:
    """:func:`wrong_shape` for a file, reading its head; None also when it cannot be read (the
    reader says why)."""
    try:
        head, _ = read_head(path)
    except (OSError, InputReadError, ValueError):
        return None
    return wrong_shape(head, expected)
