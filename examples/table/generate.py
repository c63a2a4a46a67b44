"""Write the ``migrate table`` samples: a Supabase-like ``auth.users`` CSV and a Django-like
``auth_user`` export (``manage.py dumpdata auth.user``, a JSON array), with known passwords.

    python examples/table/generate.py            # rewrites the files beside this script

Written for this project (no data from any real system). Every password is ``pw-<username>``
(``pw-ann``, ...). The hashes are made here with a fixed salt per user, so the files are the same
on every run: bcrypt (cost 10, ``$2a$`` as Supabase's GoTrue writes it) for the CSV, and
Django's ``pbkdf2_sha256$<iterations>$<salt>$<base64 hash>`` for the JSON export.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os

import bcrypt

HERE = os.path.dirname(os.path.abspath(__file__))
DJANGO_ITERATIONS = 600_000
_BCRYPT64 = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"  # Django 4.2's default for pbkdf2_sha256

SUPABASE_COLUMNS = [
    "instance_id",
    "id",
    "aud",
    "role",
    "email",
    "encrypted_password",
    "email_confirmed_at",
    "raw_app_meta_data",
    "raw_user_meta_data",
    "created_at",
    "phone",
    "banned_until",
]

# (username, e-mail, confirmed, full name, phone, banned, plan, roles)
SUPABASE_USERS = [
    ("ann", "ann@example.com", True, "Ann Lee", "+41791234567", False, "pro", ["admin"]),
    ("ben", "ben@example.com", True, "Ben Østergaard", "", False, "free", []),
    ("cleo", "Cleo@Example.com", False, 'Cléo "CJ" Jones', "", False, "free", ["editor", "viewer"]),
    ("dan", "dan@example.com", True, "Dan\nNewline", "15551234567", False, "pro", []),
    ("eve", "eve@example.com", True, "Eve Banned", "", True, "free", []),
    ("fay", "fay@example.com", True, "", "", False, "team", ["viewer"]),
]

# (username, e-mail, first, last, active, staff)
DJANGO_USERS = [
    ("gus", "gus@example.com", "Gus", "Grant", True, True),
    ("hal", "hal@example.com", "Hal", "", True, False),
    ("ida", "ida@example.com", "", "", True, False),
    ("jon", "jon@example.com", "Jon", "Inactive", False, False),
]


def _salt(name: str, size: int) -> bytes:
    return hashlib.sha256(f"zitadel-beam example {name}".encode()).digest()[:size]


def bcrypt_hash(name: str) -> str:
    """A bcrypt hash of ``pw-<name>`` with a salt derived from the name (the same every run)."""
    seed = _salt(name, 22)
    # bcrypt's own base64 alphabet; the 22nd character carries 2 bits only (one of ".Oeu").
    chars = "".join(_BCRYPT64[b % 64] for b in seed[:21]) + ".Oeu"[seed[21] % 4]
    salt = f"$2a$10${chars}".encode()
    return bcrypt.hashpw(f"pw-{name}".encode(), salt).decode()


def django_hash(name: str) -> str:
    """Django's PBKDF2PasswordHasher string for ``pw-<name>``."""
    salt = base64.b64encode(_salt(name, 12)).decode().replace("+", "a").replace("/", "b")
    digest = hashlib.pbkdf2_hmac("sha256", f"pw-{name}".encode(), salt.encode(), DJANGO_ITERATIONS)
    return f"pbkdf2_sha256${DJANGO_ITERATIONS}${salt}${base64.b64encode(digest).decode()}"


def supabase_csv() -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(SUPABASE_COLUMNS)
    for n, (name, email, confirmed, full, phone, banned, plan, roles) in enumerate(SUPABASE_USERS, 1):
        app = {"provider": "email", "providers": ["email"], "plan": plan}
        if roles:
            app["roles"] = roles
        writer.writerow(
            [
                "00000000-0000-0000-0000-000000000000",
                f"5b6c1f0e-0000-4000-8000-{n:012d}",
                "authenticated",
                "authenticated",
                email,
                bcrypt_hash(name),
                f"2024-03-0{n} 10:00:00+00" if confirmed else "",
                json.dumps(app),
                json.dumps({"full_name": full} if full else {}),
                f"2024-02-0{n} 09:00:00+00",
                phone,
                "2099-01-01 00:00:00+00" if banned else "",
            ]
        )
    return out.getvalue()


def django_json() -> str:
    records = []
    for n, (name, email, first, last, active, staff) in enumerate(DJANGO_USERS, 1):
        records.append(
            {
                "model": "auth.user",
                "pk": n,
                "fields": {
                    "password": django_hash(name),
                    "last_login": None,
                    "is_superuser": False,
                    "username": name,
                    "first_name": first,
                    "last_name": last,
                    "email": email,
                    "is_staff": staff,
                    "is_active": active,
                    "date_joined": f"2023-05-0{n}T08:00:00Z",
                    "groups": [],
                    "user_permissions": [],
                },
            }
        )
    return json.dumps(records, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    # A UTF-8 BOM, as spreadsheet tools write it: the reader skips it.
    with open(os.path.join(HERE, "supabase_auth_users.csv"), "w", encoding="utf-8-sig", newline="") as handle:
        handle.write(supabase_csv())
    with open(os.path.join(HERE, "django_auth_user.json"), "w", encoding="utf-8") as handle:
        handle.write(django_json())


if __name__ == "__main__":
    main()
