"""Deterministic synthetic Auth0 export: a profile file and a password-hash file (NDJSON).

    python benchmarks/gen_auth0.py --users 100000 --out benchmarks/data/100k

Records look like Auth0's export-job output (identities, metadata, timestamps; ~550 bytes a
profile). About 8% of users have no password (social logins), 1% have two password records
(older one superseded), and a few hundred bad records of each kind are mixed in: malformed
lines, missing e-mail, duplicate user_id, invalid hash, blocked users, orphan passwords,
over-long locales and phones without '+'. Hashes are real bcrypt strings (a handful computed
once and reused, since bcrypt at cost 10 takes ~80 ms each).
"""

from __future__ import annotations

import argparse
import os
import random

import orjson

FIRST = [
    "Anna",
    "Ben",
    "Chloé",
    "David",
    "Emma",
    "Fatima",
    "Georg",
    "Hana",
    "Ivan",
    "Julia",
    "Kenji",
    "Lena",
    "Mateo",
    "Nora",
    "Oskar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
    "Umar",
    "Vera",
]
LAST = [
    "Müller",
    "Smith",
    "García",
    "Nguyen",
    "Kowalski",
    "O'Brien",
    "Rossi",
    "Yamamoto",
    "Dubois",
    "Schmidt",
    "Johansson",
    "Silva",
    "Novak",
    "Kim",
    "Brown",
    "Fischer",
    "Wagner",
    "Costa",
]
DOMAINS = ["example.com", "example.org", "mail.example.net", "corp.example.io"]
LOCALES = ["en", "en-US", "de-CH", "fr-FR", "ja", "pt-BR", None, None]
# Real bcrypt hashes (cost 10) of "password-<i>"; computed once with bcrypt.hashpw.
HASH_SEED_COUNT = 8


ROLES = ["member", "admin", "editor", "viewer", "billing", "support", "auditor", "owner"]


def _hashes() -> list[str]:
    import bcrypt

    return [
        bcrypt.hashpw(f"password-{i}".encode(), bcrypt.gensalt(10)).decode() for i in range(HASH_SEED_COUNT)
    ]


def generate(n: int, out_dir: str, seed: int = 42) -> dict[str, int]:
    rng = random.Random(seed)
    # Roles from their own generator, so the rest of the data is the same as before they were added.
    role_rng = random.Random(seed + 1)
    hashes = _hashes()
    os.makedirs(out_dir, exist_ok=True)
    stats = {"profiles": 0, "passwords": 0}
    with (
        open(os.path.join(out_dir, "users.json"), "wb") as users,
        open(os.path.join(out_dir, "passwords.json"), "wb") as passwords,
    ):
        for i in range(n):
            oid = f"{0x60425DC43519D90068F00000 + i:024x}"
            first, last = rng.choice(FIRST), rng.choice(LAST)
            email = f"{first.lower().replace('é', 'e')}.{i}@{rng.choice(DOMAINS)}"
            kind = rng.random()
            social = kind < 0.08
            user_id = f"google-oauth2|{100000000000000000000 + i}" if social else f"auth0|{oid}"
            profile = {
                "user_id": user_id,
                "email": email if rng.random() > 0.02 else email.upper(),
                "email_verified": rng.random() < 0.9,
                "given_name": first,
                "family_name": last,
                "name": f"{first} {last}",
                "nickname": first.lower(),
                "picture": f"https://s.gravatar.com/avatar/{oid}?s=480&r=pg&d=https%3A%2F%2Fcdn.auth0.com%2Favatars%2F{first[:2].lower()}.png",
                "created_at": f"2021-0{1 + i % 9}-1{i % 10}T16:34:49.502Z",
                "updated_at": "2023-05-01T10:00:00.000Z",
                "last_login": "2024-02-03T08:15:00.000Z",
                "logins_count": rng.randint(1, 500),
                "identities": [
                    {
                        "provider": "google-oauth2" if social else "auth0",
                        "user_id": user_id.split("|", 1)[1],
                        "connection": "google-oauth2" if social else "Username-Password-Authentication",
                        "isSocial": social,
                    }
                ],
                "user_metadata": {
                    "plan": rng.choice(["free", "pro", "team"]),
                    "newsletter": rng.random() < 0.3,
                },
                # One to three roles each (benchmarks/run.py --roles carries them: docs/roles.md).
                "app_metadata": {"roles": role_rng.sample(ROLES, role_rng.randint(1, 3))},
            }
            locale = rng.choice(LOCALES)
            if locale:
                profile["locale"] = locale
            if rng.random() < 0.3:
                profile["phone_number"] = f"+4179{rng.randint(1000000, 9999999)}"
                profile["phone_verified"] = rng.random() < 0.5
            if rng.random() < 0.2:
                profile["username"] = f"{first.lower()}{i}"
            # A few hundred bad records of each kind (per million).
            bad = rng.random()
            if bad < 0.0003:
                users.write(b'{"user_id": "auth0|broken", "email": ' + email.encode() + b"\n")
                stats["profiles"] += 1
                continue
            if bad < 0.0006:
                profile.pop("email")
            elif bad < 0.0009 and i > 0:
                profile["user_id"] = f"auth0|{0x60425DC43519D90068F00000 + i - 1:024x}"
            elif bad < 0.0012:
                profile["blocked"] = True
            elif bad < 0.0015:
                profile["locale"] = "en-u-rg-uszzzz"
            elif bad < 0.0018:
                profile["phone_number"] = "0041 79 123 45 67"
            users.write(orjson.dumps(profile) + b"\n")
            stats["profiles"] += 1
            if social:
                continue
            record = {
                "_id": {"$oid": oid},
                "email_verified": profile["email_verified"],
                "email": email,
                "passwordHash": rng.choice(hashes) if rng.random() > 0.0003 else "$2b$10$tooshort",
                "password_set_date": {"$date": f"2021-03-0{1 + i % 9}T16:35:16.775Z"},
                "tenant": "dev-rwsbs6ym",
                "connection": "Username-Password-Authentication",
                "_tmp_is_unique": True,
            }
            if rng.random() < 0.01:
                older = dict(
                    record,
                    password_set_date={"$date": "2019-01-01T00:00:00.000Z"},
                    passwordHash=rng.choice(hashes),
                )
                passwords.write(orjson.dumps(older) + b"\n")
                stats["passwords"] += 1
            passwords.write(orjson.dumps(record) + b"\n")
            stats["passwords"] += 1
            if rng.random() < 0.0003:
                orphan = dict(record, email=f"nobody.{i}@example.com", _id={"$oid": f"{i:024x}"})
                passwords.write(orjson.dumps(orphan) + b"\n")
                stats["passwords"] += 1
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    print(generate(args.users, args.out, args.seed))


if __name__ == "__main__":
    main()
