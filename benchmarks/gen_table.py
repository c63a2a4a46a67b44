"""The users of a synthetic Auth0 export (gen_auth0.py) as one CSV table, for ``migrate table``.

    python benchmarks/gen_table.py --auth0 benchmarks/data/auth0-1000000 --out benchmarks/data/table-1000000

Each profile becomes one row with its newest password record's hash (joined on the e-mail as
``migrate auth0`` joins them), so both commands convert the same users with the same hashes
(benchmarks/run.py ``--table``). Malformed profile lines are left out (a CSV has no such line);
the other bad records stay (missing e-mail, duplicate ids, invalid hashes, blocked users).
``MAPPING`` is the mapping the benchmark gives ``migrate table``.
"""

from __future__ import annotations

import argparse
import csv
import os

import orjson

COLUMNS = [
    "user_id",
    "email",
    "email_verified",
    "username",
    "given_name",
    "family_name",
    "name",
    "nickname",
    "locale",
    "phone_number",
    "blocked",
    "created_at",
    "password_hash",
    "user_metadata",
]
MAPPING = [
    "--map=id=user_id",
    "--map=email=email",
    "--map=email_verified=email_verified",
    "--map=username=username",
    "--map=first_name=given_name",
    "--map=last_name=family_name",
    "--map=display_name=name",
    "--map=phone=phone_number",
    "--map=password_hash=password_hash",
    "--map=blocked=blocked",
]


def _passwords(path: str) -> dict[str, str]:
    """e-mail (trimmed, case-folded) → the newest password hash."""
    newest: dict[str, tuple[str, str]] = {}
    with open(path, "rb") as handle:
        for line in handle:
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            email = record.get("email") if isinstance(record, dict) else None
            hashed = record.get("passwordHash") if isinstance(record, dict) else None
            if not isinstance(email, str) or not isinstance(hashed, str):
                continue
            key = email.strip().casefold()
            date = str(record.get("password_set_date") or "")
            if key not in newest or date >= newest[key][0]:
                newest[key] = (date, hashed)
    return {key: hashed for key, (_, hashed) in newest.items()}


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--auth0", required=True, help="folder with users.json and passwords.json")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    hashes = _passwords(os.path.join(args.auth0, "passwords.json"))
    os.makedirs(args.out, exist_ok=True)
    rows = 0
    with (
        open(os.path.join(args.auth0, "users.json"), "rb") as source,
        open(os.path.join(args.out, "users.csv"), "w", newline="", encoding="utf-8") as target,
    ):
        writer = csv.writer(target, lineterminator="\n")
        writer.writerow(COLUMNS)
        for line in source:
            try:
                profile = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(profile, dict):
                continue
            email = profile.get("email")
            key = email.strip().casefold() if isinstance(email, str) else ""
            record = {**profile, "password_hash": hashes.get(key, "")}
            writer.writerow([_cell(record.get(column)) for column in COLUMNS])
            rows += 1
    print(f"{rows:,} rows → {os.path.join(args.out, 'users.csv')}")


if __name__ == "__main__":
    main()
