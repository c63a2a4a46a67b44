"""Deterministic synthetic Keycloak realm export of N users (one file, or a split export).

    python benchmarks/gen_keycloak.py --users 100000 --out benchmarks/data/keycloak-100000
    python benchmarks/gen_keycloak.py --users 100000 --split 10000 --out benchmarks/data/keycloak-split

A single file is ``<out>/<realm>-realm.json`` with the users inside (``kc.sh export --file``);
``--split K`` writes ``<realm>-realm.json`` without users plus ``<realm>-users-<n>.json`` files of
K users each (``kc.sh export --dir --users different_files --users-per-file K``). Records look
like Keycloak 26 output, pretty-printed the way Keycloak writes it (~1 KB a user, so 1M users is
about 1 GB): credentials are argon2id (Keycloak 25+ default, 55%), pbkdf2-sha256 27500 (25%),
pbkdf2-sha512 210000 (10%), bcrypt from keycloak-bcrypt (5%); about 4% have an OTP credential,
2% are LDAP-federated (no local hash), and a few of each are disabled, service accounts, have an
unsupported hash (``md5``), or carry an invalid e-mail.

Hashes are real, for known passwords ``password-<i>``: a handful are computed once and reused
(argon2 and pbkdf2 at Keycloak's costs take 10-200 ms each).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import unicodedata
import uuid

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
    "",
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
SEEDS = 4  # distinct hashes per algorithm


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _password(secret: dict, data: dict, created: int) -> dict:
    return {
        "id": None,  # filled per user
        "type": "password",
        "userLabel": "My password",
        "createdDate": created,
        "secretData": json.dumps(secret, separators=(",", ":")),
        "credentialData": json.dumps(data, separators=(",", ":")),
    }


def seed_credentials() -> dict[str, list[dict]]:
    """A few real credentials per algorithm, as Keycloak stores them (password-<i>)."""
    import bcrypt
    from argon2.low_level import Type, hash_secret_raw

    out: dict[str, list[dict]] = {
        "argon2": [],
        "pbkdf2-sha256": [],
        "pbkdf2-sha512": [],
        "bcrypt": [],
        "md5": [],
    }
    for i in range(SEEDS):
        pw = f"password-{i}".encode()
        salt = hashlib.sha256(b"salt-%d" % i).digest()[:16]
        digest = hash_secret_raw(
            pw, salt, time_cost=5, memory_cost=7168, parallelism=1, hash_len=32, type=Type.ID
        )
        out["argon2"].append(
            _password(
                {"value": _b64(digest), "salt": _b64(salt), "additionalParameters": {}},
                {
                    "hashIterations": 5,
                    "algorithm": "argon2",
                    "additionalParameters": {
                        "hashLength": ["32"],
                        "memory": ["7168"],
                        "type": ["id"],
                        "version": ["1.3"],
                        "parallelism": ["1"],
                    },
                },
                1735995502485 + i,
            )
        )
        for alg, digest_name, rounds, length in (
            ("pbkdf2-sha256", "sha256", 27500, 64),
            ("pbkdf2-sha512", "sha512", 210000, 64),
        ):
            value = hashlib.pbkdf2_hmac(digest_name, pw, salt, rounds, length)
            out[alg].append(
                _password(
                    {"value": _b64(value), "salt": _b64(salt), "additionalParameters": {}},
                    {"hashIterations": rounds, "algorithm": alg, "additionalParameters": {}},
                    1693888572700 + i,
                )
            )
        mcf = bcrypt.hashpw(pw, bcrypt.gensalt(10)).decode().replace("$2b$", "$2y$", 1)
        out["bcrypt"].append(
            _password(
                {"value": mcf, "salt": "", "additionalParameters": {}},
                {"hashIterations": 10, "algorithm": "bcrypt", "additionalParameters": {}},
                1700000000000 + i,
            )
        )
        out["md5"].append(
            _password(
                {"value": _b64(hashlib.md5(pw).digest()), "salt": ""},
                {"hashIterations": 1, "algorithm": "md5"},
                1600000000000 + i,
            )
        )
    return out


def _ascii(name: str) -> str:
    """Keycloak user names are lower-case; e-mail local parts must be ASCII for ZITADEL."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return folded.lower().replace("'", "")


def _user(i: int, rng: random.Random, seeds: dict[str, list[dict]], realm: str) -> dict:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    username = f"{_ascii(first or 'user')}.{_ascii(last)}.{i}"
    user: dict = {
        "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "createdTimestamp": 1693887631918 + i * 1000,
        "username": username,
        "enabled": True,
        "totp": False,
        "emailVerified": rng.random() < 0.85,
        "firstName": first,
        "lastName": last,
        "email": f"{username}@{rng.choice(DOMAINS)}",
    }
    roll = rng.random()
    if roll < 0.3:
        attributes: dict = {"locale": [rng.choice(["en", "de", "fr", "pt-BR"])]}
        if roll < 0.1:
            attributes["phoneNumber"] = [f"+4179{i:07d}"]
        if roll < 0.05:
            attributes["department"] = ["sales", "emea"]
        user["attributes"] = attributes
    kind = rng.random()
    credentials: list[dict] = []
    if kind < 0.02:
        user["federationLink"] = "3f1b8f0a-ldap-provider"
    elif kind < 0.025:
        user["serviceAccountClientId"] = f"client-{i}"
        user["username"] = f"service-account-client-{i}"
        del user["email"]
    else:
        alg = rng.choices(
            ["argon2", "pbkdf2-sha256", "pbkdf2-sha512", "bcrypt", "md5"], [55, 25, 10, 5, 0.2]
        )[0]
        credential = dict(seeds[alg][i % SEEDS])
        credential["id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        credentials.append(credential)
        if rng.random() < 0.04:
            user["totp"] = True
            credentials.append(
                {
                    "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "type": "otp",
                    "userLabel": "Phone",
                    "createdDate": 1700000000000,
                    "secretData": '{"value":"JBSWY3DPEHPK3PXP"}',
                    "credentialData": '{"subType":"totp","digits":6,"counter":0,"period":30,"algorithm":"HmacSHA1"}',
                }
            )
    if rng.random() < 0.01:
        user["enabled"] = False
    if rng.random() < 0.001:
        user["email"] = "not-an-address"
    user.update(
        {
            "credentials": credentials,
            "disableableCredentialTypes": [],
            "requiredActions": [],
            "realmRoles": [f"default-roles-{realm}"],
            "clientRoles": {"account": ["view-profile", "manage-account"]} if rng.random() < 0.3 else {},
            "notBefore": 0,
            "groups": ["/staff"] if rng.random() < 0.5 else [],
        }
    )
    return user


def _realm_head(realm: str) -> dict:
    return {
        "id": realm,
        "realm": realm,
        "displayName": realm.title(),
        "notBefore": 0,
        "enabled": True,
        "sslRequired": "external",
        "registrationAllowed": False,
        "passwordPolicy": "hashAlgorithm(argon2)",
        "roles": {"realm": [{"id": "r1", "name": f"default-roles-{realm}", "composite": True}]},
        "groups": [{"id": "g1", "name": "staff", "path": "/staff", "subGroups": []}],
    }


def _users_text(users: list[dict]) -> bytes:
    # Keycloak pretty-prints; 2-space indentation keeps the size realistic (~1 KB a user).
    return b",\n".join(orjson.dumps(u, option=orjson.OPT_INDENT_2) for u in users)


def generate(n: int, out_dir: str, split: int = 0, realm: str = "acme", seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    seeds = seed_credentials()
    os.makedirs(out_dir, exist_ok=True)
    head = _realm_head(realm)
    tail = {"clients": [{"clientId": "account", "enabled": True}], "browserFlow": "browser"}
    written: list[str] = []
    realm_path = os.path.join(out_dir, f"{realm}-realm.json")
    with open(realm_path, "wb") as out:
        body = orjson.dumps({**head, **({} if split else {"users": []}), **tail}, option=orjson.OPT_INDENT_2)
        if split:
            out.write(body)
        else:
            # Stream users into the "users" array so generating 1M users needs little memory.
            before, after = body.split(b'"users": []', 1)
            out.write(before + b'"users": [\n')
            for start in range(0, n, 10_000):
                chunk = [_user(i, rng, seeds, realm) for i in range(start, min(n, start + 10_000))]
                out.write((b",\n" if start else b"") + _users_text(chunk))
            out.write(b"\n]" + after)
    written.append(realm_path)
    if split:
        for file_no, start in enumerate(range(0, n, split)):
            chunk = [_user(i, rng, seeds, realm) for i in range(start, min(n, start + split))]
            path = os.path.join(out_dir, f"{realm}-users-{file_no}.json")
            with open(path, "wb") as out:
                out.write(
                    b'{\n  "realm": "%s",\n  "users": [\n' % realm.encode() + _users_text(chunk) + b"\n]\n}"
                )
            written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100_000, help="number of users (default 100000)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument(
        "--split", type=int, default=0, help="users per <realm>-users-N.json file (0: one file)"
    )
    parser.add_argument("--realm", default="acme", help="realm name (default acme)")
    args = parser.parse_args()
    paths = generate(args.users, args.out, args.split, args.realm)
    total = sum(os.path.getsize(p) for p in paths)
    print(f"wrote {len(paths)} file(s), {total / 1e6:.1f} MB, {args.users:,} users → {args.out}")


if __name__ == "__main__":
    main()
