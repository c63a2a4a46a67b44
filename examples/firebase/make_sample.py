"""Write the Firebase Auth sample export (users.json and users.csv) beside this script.

The users, their fields and the file layouts follow ``firebase auth:export`` (docs/firebase.md).
``passwordHash`` and ``salt`` are placeholders of the right shape (base64 of 64 and 8 bytes made
from the user's name), not hashes of any password: ZITADEL cannot verify Firebase's scrypt, so
the values are never used, only noticed. Run ``python examples/firebase/make_sample.py`` to
write the files again (the output is deterministic).
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CREATED = "1700000000000"


def _placeholder(name: str, size: int) -> str:
    return base64.b64encode(hashlib.sha512(name.encode()).digest()[:size]).decode()


def _password(name: str) -> dict:
    return {"passwordHash": _placeholder(f"{name}-hash", 64), "salt": _placeholder(f"{name}-salt", 8)}


USERS = [
    {
        "localId": "fb-ann-0001",
        "email": "ann@example.com",
        "emailVerified": True,
        **_password("ann"),
        "displayName": "Ann Example",
        "createdAt": CREATED,
        "lastSignedInAt": "1700000500000",
        "customAttributes": '{"role":"admin","tier":2}',
        "providerUserInfo": [
            {"providerId": "password", "rawId": "ann@example.com", "email": "ann@example.com"}
        ],
    },
    {
        "localId": "fb-bo-0002",
        "email": "bo@example.com",
        "emailVerified": True,
        **_password("bo"),
        "displayName": "Bo Example",
        "phoneNumber": "+41790000002",
        "createdAt": CREATED,
        "providerUserInfo": [
            {
                "providerId": "google.com",
                "rawId": "109876543210",
                "email": "bo@gmail.example",
                "displayName": "Bo",
            },
            {"providerId": "password", "rawId": "bo@example.com", "email": "bo@example.com"},
        ],
        "mfaInfo": [{"mfaEnrollmentId": "enr-bo-1", "displayName": "phone", "phoneInfo": "+41790000002"}],
    },
    {
        "localId": "fb-cy-0003",
        "email": "cy@example.com",
        "emailVerified": True,
        "displayName": "Cy, Example",
        "createdAt": CREATED,
        "providerUserInfo": [
            {"providerId": "github.com", "rawId": "4242", "email": "cy@example.com", "displayName": "cy"}
        ],
    },
    {
        "localId": "fb-dee-0004",
        "email": "dee@example.com",
        "emailVerified": False,
        **_password("dee"),
        "displayName": "Dee Example",
        "createdAt": CREATED,
        "disabled": True,
        "providerUserInfo": [
            {"providerId": "password", "rawId": "dee@example.com", "email": "dee@example.com"}
        ],
    },
    {
        "localId": "fb-eve-0005",
        "phoneNumber": "+41790000005",
        "createdAt": CREATED,
        "providerUserInfo": [{"providerId": "phone", "rawId": "+41790000005"}],
    },
    {
        "localId": "fb-fay-0006",
        "email": "fay@example.com",
        "emailVerified": True,
        "displayName": "Fay Example",
        "createdAt": CREATED,
        "customAttributes": '{"plan":"pro"}',
        "providerUserInfo": [
            {"providerId": "apple.com", "rawId": "001234.abcdef.0042", "email": "fay@example.com"}
        ],
        "mfaInfo": [{"mfaEnrollmentId": "enr-fay-1", "displayName": "app", "totpInfo": {}}],
    },
]

_CSV_PROVIDERS = ("google.com", "facebook.com", "twitter.com", "github.com")


def _csv_field(text: str) -> str:
    return f'"{text}"' if "," in text else text


def _csv_line(user: dict) -> str:
    """One line as firebase-tools writes it: 28 columns, then a trailing comma (docs/firebase.md)."""
    fields = [user["localId"], user.get("email", ""), "true" if user.get("emailVerified") else "false"]
    fields += [
        user.get("passwordHash", ""),
        user.get("salt", ""),
        _csv_field(user.get("displayName", "")),
        "",
    ]
    by_provider = {p["providerId"]: p for p in user.get("providerUserInfo", [])}
    for provider in _CSV_PROVIDERS:
        info = by_provider.get(provider, {})
        fields += [info.get("rawId", ""), info.get("email", ""), _csv_field(info.get("displayName", "")), ""]
    fields += [user.get("createdAt", ""), user.get("lastSignedInAt", ""), user.get("phoneNumber", "")]
    fields += ["true" if user.get("disabled") else ""]  # undefined, written as nothing
    claims = user.get("customAttributes")
    fields += ['"' + claims.replace('"', '""') + '"' if claims else ""]
    return ",".join(fields) + ",\n"


def main() -> None:
    # mfaInfo is kept although firebase-tools' exporter drops it today: the Admin SDK's
    # downloadAccount answer has it, and other export scripts write it.
    text = '{"users": [\n' + ",\n".join(json.dumps(u, indent=2) for u in USERS) + "]}"
    (HERE / "users.json").write_text(text)
    (HERE / "users.csv").write_text("".join(_csv_line(u) for u in USERS))


if __name__ == "__main__":
    main()
