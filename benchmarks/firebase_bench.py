"""Benchmark: ``migrate firebase`` (JSON and CSV) against ``migrate auth0`` on the same users.

    python benchmarks/firebase_bench.py --users 200000 --repeat 3

Generates (once, cached under benchmarks/data/firebase-<n>/) ``n`` deterministic users three
ways: a Firebase JSON export (``{"users": [...]}``, pretty-printed as firebase-tools writes it),
the same users as a Firebase CSV export, and as Auth0 NDJSON profiles (no password file) with the
same ids, e-mails and names, so the three runs write the same number of users. Half of the
Firebase users carry a (placeholder) Firebase scrypt hash, which is dropped and listed; a quarter
have a Google provider entry (linked with ``--idp-map``) and custom claims (``--metadata``; the
Auth0 profiles carry the same claims as ``app_metadata``).

Runs are interleaved (``auth0``, ``firebase-json``, ``firebase-csv``, then again) so that machine
noise hits all alike; it reports the median wall time, users/s, peak RSS and the ratio to
``migrate auth0``, the baseline. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run import PY, ROOT, measure  # noqa: E402 - benchmarks/run.py, beside this script

_CSV_PROVIDER_COLUMNS = 16  # Google, Facebook, Twitter, GitHub: 4 columns each


def _user(i: int) -> dict:
    user: dict = {
        "localId": f"fb{i:012d}",
        "email": f"user{i}@example.com",
        "emailVerified": i % 3 != 0,
        "displayName": f"User {i}",
        "createdAt": str(1_700_000_000_000 + i),
    }
    if i % 2 == 0:
        user["passwordHash"] = base64.b64encode(i.to_bytes(8, "big") * 8).decode()
        user["salt"] = base64.b64encode(i.to_bytes(8, "big")).decode()
    if i % 4 == 1:
        user["providerUserInfo"] = [{"providerId": "google.com", "rawId": f"g{i}", "email": user["email"]}]
        user["customAttributes"] = json.dumps({"tier": i % 5, "team": f"t{i % 17}"}, separators=(",", ":"))
    return user


def _csv_line(user: dict) -> str:
    google = user.get("providerUserInfo", [{}])[0]
    head = [user["localId"], user["email"], "true" if user["emailVerified"] else "false"]
    head += [user.get("passwordHash", ""), user.get("salt", ""), user["displayName"], ""]
    providers = [google.get("rawId", ""), google.get("email", ""), "", ""] + [""] * (
        _CSV_PROVIDER_COLUMNS - 4
    )
    claims = user.get("customAttributes", "")
    tail = [user["createdAt"], "", "", "", '"' + claims.replace('"', '""') + '"' if claims else ""]
    return ",".join(head + providers + tail) + ",\n"


def _auth0(user: dict) -> dict:
    profile = {
        "user_id": user["localId"],
        "email": user["email"],
        "email_verified": user["emailVerified"],
        "name": user["displayName"],
    }
    if "providerUserInfo" in user:
        profile["identities"] = [{"provider": "google-oauth2", "user_id": f"g{user['localId'][2:]}"}]
        profile["app_metadata"] = json.loads(user["customAttributes"])
    return profile


def ensure_data(n: int) -> dict[str, str]:
    out = os.path.join(HERE, "data", f"firebase-{n}")
    paths = {name: os.path.join(out, name) for name in ("users.json", "users.csv", "auth0-users.json")}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    os.makedirs(out, exist_ok=True)
    with (
        open(paths["users.json"], "w") as js,
        open(paths["users.csv"], "w") as csv,
        open(paths["auth0-users.json"], "w") as a0,
    ):
        js.write('{"users": [\n')
        for i in range(n):
            user = _user(i)
            js.write(("" if i == 0 else ",\n") + json.dumps(user, indent=2))
            csv.write(_csv_line(user))
            a0.write(json.dumps(_auth0(user)) + "\n")
        js.write("]}")
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    paths = ensure_data(args.users)
    work = os.path.join(HERE, "data", "firebase-work")
    common = ["--org=123", "--metadata", "--batch-size=2000"]
    runs = {
        "auth0": ["migrate", "auth0", f"--users={paths['auth0-users.json']}", "--passwords=none"]
        + ["--idp-map=google-oauth2=900"],
        "firebase-json": [
            "migrate",
            "firebase",
            f"--users={paths['users.json']}",
            "--idp-map=google.com=900",
        ],
        "firebase-csv": ["migrate", "firebase", f"--users={paths['users.csv']}", "--idp-map=google.com=900"],
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    peaks: dict[str, int] = {name: 0 for name in runs}
    for _ in range(args.repeat):
        for name, cmd in runs.items():
            shutil.rmtree(work, ignore_errors=True)
            output = os.path.join(work, name, "importBody.json")
            wall, peak, _out, _cpu = measure(
                [PY, "-m", "pipeline", *cmd, *common, f"--output={output}"], ROOT
            )
            times[name].append(wall)
            peaks[name] = max(peaks[name], peak)
    shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(times["auth0"])
    print(f"{args.users:,} users, median of {args.repeat} (interleaved); baseline: migrate auth0")
    print(f"{'run':<15} {'seconds':>8} {'users/s':>9} {'peak MiB':>9} {'vs auth0':>9}")
    for name in runs:
        median = statistics.median(times[name])
        print(f"{name:<15} {median:8.1f} {args.users / median:9,.0f} {peaks[name]:9,} {median / base:8.2f}x")


if __name__ == "__main__":
    main()
