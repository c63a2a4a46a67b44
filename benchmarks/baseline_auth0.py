"""The plain single-process converter: what the Beam pipeline is measured against.

    python benchmarks/baseline_auth0.py --org=123 --users=U --passwords=P --output=DIR/importBody.json

One process, orjson, dicts: read both files whole, join on the normalised e-mail, map and
validate with the same pure functions, drop duplicate ids/names, cut bodies with the same
partition-then-remainder rule, write them. It writes the same bodies as the pipeline (same
names, same bytes), so the benchmark also uses it as a correctness oracle for the Beam plumbing
(partitioning, grouping, de-duplication, remainder merge).
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

from transforms.common.records import NUM_PARTITIONS, partition_of  # noqa: E402 - after the sys.path set-up above
from transforms.mapping.validate import ValidationOptions, validate_user  # noqa: E402 - after the sys.path set-up above
from transforms.output.batching import to_fragment  # noqa: E402 - after the sys.path set-up above
from transforms.sources.auth0.mapping import map_profile, normalise_email, password_date, password_oid  # noqa: E402 - after the sys.path set-up above


def _read(path: str) -> list[tuple[int, object]]:
    out = []
    offset = 0
    with open(path, "rb") as handle:
        for line in handle:
            position = offset
            offset += len(line)
            if line.strip():
                try:
                    out.append((position, orjson.loads(line)))
                except orjson.JSONDecodeError:
                    out.append((position, None))
    return out


def _target(oid: str, candidates: list) -> list | None:
    """The profile row a password record belongs to: its id, else the only profile, else the only
    database profile."""
    for row in candidates:
        if oid and str(row[1].get("user_id", "")).rsplit("|", 1)[-1] == oid:
            return row
    if len(candidates) == 1:
        return candidates[0]
    db = [r for r in candidates if str(r[1].get("user_id", "")).startswith("auth0|")]
    return db[0] if len(db) == 1 else None


def convert(users: str, passwords: str, org: str, timeout: str, batch_size: int, email_verified: bool):
    """Returns (bodies as bytes in final order, dead-letter count by reason)."""
    dead: dict[str, int] = {}

    def reject(reason: str) -> None:
        dead[reason] = dead.get(reason, 0) + 1

    profiles = _read(users)
    by_email: dict[str, list] = {}
    valid_profiles = []
    for pos, rec in profiles:
        if not isinstance(rec, dict):
            reject("malformed-json")
            continue
        row = [[0, pos], rec]
        valid_profiles.append(row)
        by_email.setdefault(normalise_email(rec.get("email")), []).append(row)
    chosen: dict[int, list] = {}
    for pos, rec in _read(passwords):
        if not isinstance(rec, dict):
            reject("malformed-json")
            continue
        email = normalise_email(rec.get("email"))
        if not email or not rec.get("passwordHash"):
            reject("missing-email" if not email else "missing-password-hash")
            continue
        candidates = by_email.get(email, [])
        target = _target(password_oid(rec), candidates)
        if target is None:
            reject("orphan-password" if not candidates else "ambiguous-password")
            continue
        old = chosen.get(id(target))
        if old is None:
            chosen[id(target)] = [[1, pos], rec]
        else:
            reject("password-superseded")
            new = [[1, pos], rec]
            if (password_date(rec), 1, pos) > (password_date(old[1]), old[0][0], old[0][1]):
                chosen[id(target)] = new
    opts = ValidationOptions()
    parts: dict[int, list] = {}
    seen_ids: set[str] = set()
    seen_names: set[str] = set()
    for row in valid_profiles:
        rec = row[1]
        pw = chosen.get(id(row))
        if not isinstance(rec.get("user_id"), str) or not rec["user_id"].strip():
            reason = "missing-user-id"
        elif not normalise_email(rec.get("email")):
            reason = "missing-email"
        elif rec.get("blocked") is True:
            reason = "blocked"
        else:
            entry = map_profile(rec, pw[1]["passwordHash"] if pw else None, email_verified)
            reason = validate_user(entry, opts).reason
        if reason is None:
            name = entry["user"]["userName"].casefold()
            if entry["userId"] in seen_ids:
                reason = "duplicate-user-id"
            elif name in seen_names:
                reason = "duplicate-username"
            seen_ids.add(entry["userId"])
            seen_names.add(name)
        if reason is not None:
            reject(reason)
            if pw:
                reject("profile-rejected")
            continue
        part = partition_of(normalise_email(rec.get("email")), NUM_PARTITIONS)
        parts.setdefault(part, []).append(to_fragment([row[0], entry, [], None, None, None]))
    return render_all(parts, org, timeout, batch_size), dead


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--org", required=True)
    parser.add_argument("--users", required=True)
    parser.add_argument("--passwords", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--timeout", default="5m0s")
    parser.add_argument("--batch-size", type=int, default=5000)
    parser.add_argument("--email-verified", action="store_true")
    args = parser.parse_args()
    # The pipeline pauses the cyclic GC in its heavy steps; the baseline gets the same advantage
    # so that the comparison measures Beam's overhead, not the collector's.
    gc.disable()
    started = time.monotonic()
    bodies, dead = convert(
        args.users, args.passwords, args.org, args.timeout, args.batch_size, args.email_verified
    )
    digests = write_bodies(args.output, bodies)
    print(
        orjson.dumps(
            {
                "bodies": len(bodies),
                "sha256": digests,
                "dead": dead,
                "users": sum(d.count(b'"userId":') for d in bodies),
                "seconds": round(time.monotonic() - started, 3),
            }
        ).decode()
    )


if __name__ == "__main__":
    main()
