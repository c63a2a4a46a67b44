"""The plain single-process Keycloak converter the pipeline is measured against.

    python benchmarks/baseline_keycloak.py --org=123 --realm=R.json --output=DIR/importBody.json

What a straightforward script does: load the realm document whole with orjson, map and validate
every user with the same pure function as the pipeline (``transforms.keycloak.map_user``), drop
duplicate ids/names, cut bodies with the same partition-then-remainder rule, write them. Its
bodies are byte-identical to the pipeline's, so the benchmark uses it as an oracle too. It
imports ``transforms.keycloak``, which imports Beam (about 1.2 s of its wall time).
Split exports are not supported here (one realm file); GC is paused as in the pipeline.
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import os
import sys
import time

import orjson

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from transforms.batching import BodySpec, plan_chunks, render_fragments, to_fragment  # noqa: E402
from transforms.keycloak import KeycloakOptions, Rejection, map_user  # noqa: E402
from transforms.records import NUM_PARTITIONS, partition_of, user_name_key  # noqa: E402


def convert(realm: str, org: str, timeout: str, batch_size: int) -> tuple[list[bytes], dict[str, int]]:
    with open(realm, "rb") as handle:
        users = orjson.loads(handle.read())["users"]
    options = KeycloakOptions()
    dead: dict[str, int] = {}
    seen_ids: set[str] = set()
    seen_names: set[str] = set()
    parts: dict[int, list] = {}
    for position, user in enumerate(users):
        mapped = map_user(user, options)
        if isinstance(mapped, Rejection):
            dead[mapped.reason] = dead.get(mapped.reason, 0) + 1
            continue
        entry = mapped.entry
        user_id, name = entry.get("userId") or "", user_name_key(entry["user"].get("userName"))
        reason = ("duplicate-user-id" if user_id and user_id in seen_ids else
                  "duplicate-username" if name in seen_names else None)
        if user_id:
            seen_ids.add(user_id)
        seen_names.add(name)
        if reason:
            dead[reason] = dead.get(reason, 0) + 1
            continue
        key = user_id or entry["user"]["userName"]
        parts.setdefault(partition_of(key, NUM_PARTITIONS), []).append(
            to_fragment([[0, position], entry, mapped.metadata, None, None, []]))
    spec = BodySpec(org, timeout, batch_size)
    chunks, rest = [], []
    for part in sorted(parts):
        full, remainder = plan_chunks(parts[part], batch_size)
        chunks += full
        rest += remainder
    rest.sort(key=lambda f: (f[0], f[1]))
    full, remainder = plan_chunks(rest, batch_size)
    chunks += full + ([remainder] if remainder else [])
    chunks.sort(key=lambda c: (c[0][0], c[0][1]))
    return [render_fragments(spec, c) for c in chunks], dead


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--org", required=True)
    parser.add_argument("--realm", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--timeout", default="5m0s")
    parser.add_argument("--batch-size", type=int, default=5000)
    args = parser.parse_args()
    gc.disable()
    started = time.monotonic()
    bodies, dead = convert(args.realm, args.org, args.timeout, args.batch_size)
    stem, ext = os.path.splitext(args.output)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    digests = []
    for i, data in enumerate(bodies):
        path = args.output if len(bodies) == 1 else f"{stem}-{i + 1:05d}-of-{len(bodies):05d}{ext}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        digests.append(hashlib.sha256(data).hexdigest())
    print(orjson.dumps({"bodies": len(bodies), "sha256": digests, "dead": dead,
                        "seconds": round(time.monotonic() - started, 3)}).decode())


if __name__ == "__main__":
    main()
