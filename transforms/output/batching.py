"""Import bodies from user rows: pure functions shared by the pipeline and the plain baseline.

A body is an ImportDataRequest ``{"dataOrgs": {"orgs": [{"orgId", "humanUsers", "userMetadata"?}]},
"timeout"}``. Each user is encoded once into a *fragment*; a body is its fragments joined, which
gives exactly the bytes ``orjson.dumps`` would give for the whole dict.

Example::

    spec = BodySpec("123", "5m0s", batch_size=5000)
    full, rest = plan_chunks(sorted_fragments, spec.batch_size)
    data = render_fragments(spec, full[0])
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from transforms.common.records import EncodedRow, encode_row
from transforms.mapping.roles import grant_items

__all__ = [
    "BodySpec",
    "Fragment",
    "to_fragment",
    "fragment_of",
    "render_fragments",
    "plan_chunks",
    "plan_bodies",
    "body_temp_name",
    "parse_body_temp_name",
]


@dataclasses.dataclass(frozen=True)
class BodySpec:
    """What every body of a run shares."""

    org_id: str
    timeout: str
    batch_size: int
    multiline: bool = False


# One user, encoded (built by ``fragment_of``; read by unpacking it into locals of these names):
#   (file_index, position, user_json, metadata_json, password, grants_json)
# ``metadata_json``: its userMetadata JSON items or b""; ``password``: the hash's ZITADEL verifier,
# "password" for plaintext, "" for none (see records.EncodedRow); ``grants_json``: its userGrants
# JSON items or b"". A plain tuple: the remainders of every partition are shuffled as fragments.
Fragment = tuple[int, int, bytes, bytes, str, bytes]


def to_fragment(row: list[Any]) -> Fragment:
    """A source row (see ``records``) → the fragment a body is built from."""
    encoded = encode_row(row)
    (_, _, user_id, _, _, _, _, _, _, _, grants, _, _) = encoded
    return fragment_of(encoded, grant_items(user_id, grants))


def fragment_of(encoded: EncodedRow, grants: bytes = b"") -> Fragment:
    """``grants``: the user's ``userGrants`` items (``grants.grant_items``), b"" for none."""
    (file_index, position, _, _, entry_json, metadata_json, password, _, _, _, _, _, _) = encoded
    return (file_index, position, entry_json, metadata_json, password, grants)


def render_fragments(spec: BodySpec, fragments: list[Fragment]) -> bytes:
    """The ImportDataRequest for ``fragments`` (in order): exactly ``orjson.dumps`` of the dict
    ``{"dataOrgs": {"orgs": [{"orgId", "humanUsers", "userMetadata"?, "userGrants"?}]}, "timeout"}``."""
    users = b",".join(user_json for _, _, user_json, _, _, _ in fragments)
    metadata = b",".join(metadata_json for _, _, _, metadata_json, _, _ in fragments if metadata_json)
    body = b'{"dataOrgs":{"orgs":[{"orgId":' + orjson.dumps(spec.org_id) + b',"humanUsers":[' + users + b"]"
    if metadata:
        body += b',"userMetadata":[' + metadata + b"]"
    grants = b",".join(grants_json for _, _, _, _, _, grants_json in fragments if grants_json)
    if grants:
        body += b',"userGrants":[' + grants + b"]"
    body += b'}]},"timeout":' + orjson.dumps(spec.timeout) + b"}"
    if spec.multiline:
        body = orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2)
    return body + b"\n"


def plan_chunks(items: list[Any], size: int) -> tuple[list[list[Any]], list[Any]]:
    """Split sorted items into full chunks of ``size`` and the remainder."""
    full = len(items) - len(items) % size
    return [items[i : i + size] for i in range(0, full, size)], items[full:]


def body_temp_name(first_sortkey: tuple[int, int], users: int, sha256: str) -> str:
    return f"body-{first_sortkey[0]:06d}-{first_sortkey[1]:015d}-{users}-{sha256}.json"


def parse_body_temp_name(name: str) -> tuple[tuple[int, int], int, str]:
    """Inverse of ``body_temp_name``: ``((file, position), users, sha256)``."""
    _, file_index, position, users, rest = name.split("-", 4)
    return (int(file_index), int(position)), int(users), rest.split(".", 1)[0]


def plan_bodies(partitions: dict[int, list[Fragment]], batch_size: int) -> list[list[Fragment]]:
    """The batching rule of ``UsersToBodies``, in one process (the plain baselines use it).

    Each partition's users, in input order, fill bodies of exactly ``batch_size``; the
    remainders of all partitions are merged in input order and cut again; bodies are ordered by
    their first user's position.
    """
    chunks: list[list[Fragment]] = []
    rest: list[Fragment] = []
    for part in sorted(partitions):
        full, remainder = plan_chunks(sorted(partitions[part], key=lambda f: (f[0], f[1])), batch_size)
        chunks += full
        rest += remainder
    rest.sort(key=lambda f: (f[0], f[1]))
    full, remainder = plan_chunks(rest, batch_size)
    chunks += full + ([remainder] if remainder else [])
    chunks.sort(key=lambda c: (c[0][0], c[0][1]))
    return chunks
