"""The plain single-process Keycloak converter the pipeline is measured against.

    python benchmarks/baseline_keycloak.py --org=123 --realm=R.json --output=DIR/importBody.json

What a straightforward script does: load the realm document whole with orjson, map and validate
every user with the same pure function as the pipeline (``transforms.sources.keycloak.mapping.map_user``),
drop duplicate ids/names, cut bodies with the same partition-then-remainder rule, write them. Its
bodies are byte-identical to the pipeline's, so the benchmark uses it as an oracle too. The
mapping module does not import Beam.
Split exports are not supported here (one realm file); GC is paused as in the pipeline.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import orjson

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from baseline_common import render_all, write_bodies  # noqa: E402 - after the sys.path set-up above

from transforms.common.records import NUM_PARTITIONS, partition_of, user_name_key  # noqa: E402 - after the sys.path set-up above
from transforms.mapping.otp import realm_policy  # noqa: E402 - after the sys.path set-up above
from transforms.output.batching import to_fragment  # noqa: E402 - after the sys.path set-up above
from transforms.sources.keycloak.mapping import KeycloakOptions, Rejection, map_user  # noqa: E402 - after the sys.path set-up above


def convert(realm: str, org: str, timeout: str, batch_size: int) -> tuple[list[bytes], dict[str, int]]:
    with open(realm, "rb") as handle:
        document = orjson.loads(handle.read())
    users = document["users"]
    options = KeycloakOptions()
    policy = realm_policy(document)  # the realm's otpPolicy*, as the pipeline's planning reads them
    dead: dict[str, int] = {}
    seen_ids: set[str] = set()
    seen_names: set[str] = set()
    parts: dict[int, list] = {}
    for position, user in enumerate(users):
        mapped = map_user(user, options, document.get("realm", ""), policy)
        if isinstance(mapped, Rejection):
            dead[mapped.reason] = dead.get(mapped.reason, 0) + 1
            continue
        entry = mapped.entry
        user_id, name = entry.get("userId") or "", user_name_key(entry["user"].get("userName"))
        reason = (
            "duplicate-user-id"
            if user_id and user_id in seen_ids
            else "duplicate-username"
            if name in seen_names
            else None
        )
        if user_id:
            seen_ids.add(user_id)
        seen_names.add(name)
        if reason:
            dead[reason] = dead.get(reason, 0) + 1
            continue
        key = user_id or entry["user"]["userName"]
        parts.setdefault(partition_of(key, NUM_PARTITIONS), []).append(
            to_fragment([[0, position], entry, mapped.metadata, None, None, []])
        )
    return render_all(parts, org, timeout, batch_size), dead


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
    digests = write_bodies(args.output, bodies)
    print(
        orjson.dumps(
            {
                "bodies": len(bodies),
                "sha256": digests,
                "dead": dead,
                "seconds": round(time.monotonic() - started, 3),
            }
        ).decode()
    )


if __name__ == "__main__":
    main()
