"""Fixtures for the push / verify / admin API tests: a running test server and manifests.

Test modules import what they use (the shared tests/conftest.py belongs to the pipeline tests)::

    from zitadel_fixtures import PAT, write_manifest, zitadel_fixture  # noqa: F401  (the `zitadel` fixture)

    def test_something(zitadel, tmp_path):
        manifest, users = write_manifest(tmp_path, users=40, bodies=2)
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
from collections.abc import Iterator, Sequence

import bcrypt
import pytest
from zitadel_server import ZitadelServer

__all__ = [
    "PAT",
    "zitadel_fixture",
    "write_manifest",
    "make_user",
    "hash_pool",
    "leaked_secrets",
    "fast_client",
    "make_export",
    "rsa_key_pair",
]

# Recognisable fake secrets: any of them in captured output is a leak.
PAT = "pat-7Hq2SECRETvalueXyZ0987654321abcdef"

_HASHES: list[str] = []


def hash_pool(size: int = 8) -> list[str]:
    """A few real bcrypt hashes (cost 10, the lowest a default server accepts), made once."""
    while len(_HASHES) < size:
        _HASHES.append(bcrypt.hashpw(f"pw-{len(_HASHES)}".encode(), bcrypt.gensalt(10)).decode())
    return _HASHES[:size]


def make_user(user_id: str, hashed: str | None = None, **profile: str) -> dict:
    """One humanUsers entry as the migrate pipeline writes it."""
    name = user_id.replace("|", "-") + "@example.com"
    user: dict = {
        "userName": name,
        "profile": {"firstName": "First", "lastName": "Last", **profile},
        "email": {"email": name, "isEmailVerified": True},
    }
    if hashed:
        user["hashedPassword"] = {"value": hashed}
    return {"userId": user_id, "user": user}


def write_manifest(
    directory: pathlib.Path | str,
    users: int = 20,
    bodies: int = 2,
    org_id: str = "123",
    timeout: str = "5m0s",
    stem: str = "importBody",
    prefix: str = "auth0|",
    metadata: bool = True,
    invalid: Sequence[int] = (),
    after: Sequence[Sequence[int]] | None = None,
    body_orgs: Sequence[dict] | None = None,
) -> tuple[pathlib.Path, list[str]]:
    """Write ``users`` users into ``bodies`` bodies plus ``<stem>.manifest.json``.

    ``invalid`` lists user numbers given a 14-character preferredLanguage (rejected by the API).
    ``body_orgs`` optionally gives an extra first body per entry (e.g. ``{"org": {"name": "Acme"}}``)
    that the user bodies must follow (``after``). Returns the manifest path and the user ids.
    """
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    hashes = hash_pool()
    ids = [f"{prefix}{i:05d}" for i in range(users)]
    per_body = -(-users // bodies) if bodies else 0
    entries: list[dict] = []
    documents: list[dict] = []
    for extra in body_orgs or ():
        documents.append({"dataOrgs": {"orgs": [{"orgId": org_id, **extra}]}, "timeout": timeout})
    for b in range(bodies):
        chunk = list(range(b * per_body, min(users, (b + 1) * per_body)))
        human = []
        for i in chunk:
            extra = {"preferredLanguage": "en-u-rg-uszzzz"} if i in invalid else {}
            human.append(make_user(ids[i], hashes[i % len(hashes)], **extra))
        org: dict = {"orgId": org_id, "humanUsers": human}
        if metadata:
            org["userMetadata"] = [
                {
                    "id": ids[i],
                    "key": "auth0_app_metadata",
                    "value": base64.b64encode(b'{"plan":"pro"}').decode(),
                }
                for i in chunk
            ]
        documents.append({"dataOrgs": {"orgs": [org]}, "timeout": timeout})
    n_docs = len(documents)
    for i, doc in enumerate(documents):
        name = f"{stem}.json" if n_docs == 1 else f"{stem}-{i + 1:05d}-of-{n_docs:05d}.json"
        data = json.dumps(doc).encode()
        path = directory / name
        path.write_bytes(data)
        os.chmod(path, 0o600)
        deps = list(after[i]) if after else ([0] if body_orgs and i >= len(body_orgs) else [])
        entries.append(
            {
                "path": name,
                "users": sum(len(o.get("humanUsers", [])) for o in doc["dataOrgs"]["orgs"]),
                "sha256": hashlib.sha256(data).hexdigest(),
                "org_ids": [org_id],
                "after": deps,
            }
        )
    manifest = {
        # Not "zitadel-beam": these bodies are written here (some invalid on purpose, for push to
        # refuse), so the suite's schema check of the tool's own bodies leaves them out.
        "version": 1,
        "tool": "tests/helpers/zitadel_fixtures.py",
        "source": "auth0",
        "org_id": org_id,
        "timeout": timeout,
        "batch_size": per_body,
        "bodies": entries,
        "dead_letter": {"path": "dead-letter.ndjson", "count": 0},
        "counts": {"users_written": users},
    }
    manifest_path = directory / f"{stem}.manifest.json"
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return manifest_path, ids


def leaked_secrets(text: str, extra: Sequence[str] = ()) -> list[str]:
    """The secrets (PAT, test hashes, ``extra``) that appear in ``text``."""
    return [s for s in [PAT, *hash_pool(), *extra] if s and s in text]


def fast_client(url: str, credentials, **options):
    """An AdminClient with millisecond backoff, so fault tests stay fast."""
    from transforms.zitadel_api.client import AdminClient

    settings = {"backoff_base": 0.01, "backoff_cap": 0.05, "max_attempts": 10, **options}
    return AdminClient(url, credentials, **settings)


@pytest.fixture(name="zitadel")
def zitadel_fixture() -> Iterator[ZitadelServer]:
    """A running test server that accepts ``PAT``."""
    server = ZitadelServer(tokens={PAT}).start()
    try:
        yield server
    finally:
        server.stop()


def make_export(
    users_per_org: Sequence[int] = (3, 12_000, 5),
    with_passwords: bool = True,
    ghost_grants: int = 2,
    org_ids: Sequence[str] | None = None,
) -> dict:
    """A synthetic v1 export document (``{"orgs": [DataOrg]}``) with everything a split must keep.

    Per org: policies, a domain, texts, a project with roles, an OIDC app, human users (every third
    with two metadata keys, every fifth with a grant, every 97th an org member), one machine user
    with metadata, and a project member. Org 1's project is granted to org 0 (a ``projectGrants``
    entry), and a user of org 0 gets a grant on it (a cross-org dependency); org 2 has a member
    from org 0; ``ghost_grants`` grants name users that are not in the export.
    """
    hashes = hash_pool(4)
    org_ids = list(org_ids or [f"2000000000000000{i:02d}" for i in range(len(users_per_org))])
    orgs = []
    for o, count in enumerate(users_per_org):
        oid = org_ids[o]
        project = f"p{oid}"
        ids = [f"{oid}-{i:06d}" for i in range(count)]
        humans = []
        for i, uid in enumerate(ids):
            user: dict = {
                "userName": f"user{i}@org{o}.example.com",
                "profile": {"firstName": f"F{i}", "lastName": f"L{o}", "preferredLanguage": "en"},
                "email": {"email": f"user{i}@org{o}.example.com", "isEmailVerified": i % 2 == 0},
            }
            if with_passwords:
                user["hashedPassword"] = {"value": hashes[i % len(hashes)]}
            humans.append({"userId": uid, "user": user})
        machine = f"{oid}-machine"
        org: dict = {
            "orgId": oid,
            "org": {"name": f"Org {o}"},
            "labelPolicy": {"primaryColor": "#5469d4", "hideLoginNameSuffix": True},
            "loginPolicy": {"allowUsernamePassword": True, "passwordlessType": "PASSWORDLESS_TYPE_ALLOWED"},
            "projects": [{"projectId": project, "project": {"name": f"App {o}"}}],
            "projectRoles": [{"projectId": project, "roleKey": "reader", "displayName": "Reader"}],
            "oidcApps": [
                {
                    "appId": f"app{oid}",
                    "app": {"projectId": project, "name": "web", "redirectUris": ["https://example.com/cb"]},
                }
            ],
            "humanUsers": humans,
            "machineUsers": [{"userId": machine, "user": {"userName": f"svc-{o}", "name": "Service"}}],
            "userGrants": [
                {"userId": uid, "projectId": project, "roleKeys": ["reader"]}
                for i, uid in enumerate(ids)
                if i % 5 == 0
            ]
            + [
                {"userId": f"ghost-{o}-{g}", "projectId": project, "roleKeys": ["reader"]}
                for g in range(ghost_grants)
            ],
            "orgMembers": [
                {"userId": uid, "roles": ["ORG_OWNER"]} for i, uid in enumerate(ids) if i % 97 == 0
            ],
            "projectMembers": [{"projectId": project, "userId": machine, "roles": ["PROJECT_OWNER"]}],
            "userMetadata": [
                {"id": uid, "key": key, "value": base64.b64encode(f"{key}:{uid}".encode()).decode()}
                for i, uid in enumerate(ids)
                if i % 3 == 0
                for key in ("plan", "tier")
            ]
            + [{"id": machine, "key": "owner", "value": base64.b64encode(b"ops").decode()}],
            "loginTexts": [{"language": "en", "passwordlessPromptText": {"title": "Hi"}}],
            "domains": [{"domainName": f"org{o}.example.com", "isVerified": True, "isPrimary": True}],
        }
        orgs.append(org)
    if len(orgs) >= 2 and users_per_org[0]:
        granted, owner = orgs[0], orgs[1]
        grant_id = f"grant-{owner['orgId']}"
        owner["projectGrants"] = [
            {
                "grantId": grant_id,
                "projectGrant": {
                    "projectId": owner["projects"][0]["projectId"],
                    "grantedOrgId": granted["orgId"],
                    "roleKeys": ["reader"],
                },
            }
        ]
        granted["userGrants"].append(
            {
                "userId": granted["humanUsers"][0]["userId"],
                "projectId": owner["projects"][0]["projectId"],
                "projectGrantId": grant_id,
                "roleKeys": ["reader"],
            }
        )
    if len(orgs) >= 3 and users_per_org[0]:
        orgs[2]["orgMembers"].append(
            {"userId": orgs[0]["humanUsers"][-1]["userId"], "roles": ["ORG_USER_MANAGER"]}
        )
    return {"orgs": orgs}


def rsa_key_pair() -> tuple[str, bytes]:
    """A fresh RSA key: the private key as PEM text (a service-account key's ``key``) and the public
    key as PEM bytes (what the stand-in server checks JWT-profile assertions with)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public
