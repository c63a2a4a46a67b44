"""A rich Auth0 export (phones, social links, OTP secrets, metadata) through the user service v2 on a
server without the admin API that answers as ZITADEL does (errors in the instance's language, read
by code and detail id): the same users as the admin import gives, exactly once under 30% faults, a
re-run creates nothing, a server without AddHumanUser gets them through CreateUser with their
metadata, and a sync night after a failed one completes (docs/user-v2.md)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import zitadel_user_v2_create as creation
from zitadel_fixtures import PAT, fast_client, hash_pool
from zitadel_server import FAULT_KINDS, ZitadelServer

from pipeline.cli import main
from transforms.output.manifest import load_manifest
from transforms.push import engine as push_engine
from transforms.push.api_choice import ADMIN_IMPORT, USER_V2
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.user_v2 import ADD_HUMAN_PATH, CREATE_USER_PATH

ORG = "123456789"
ORG_TOKEN = "org-token-Rich9Auth0Export0123456789ab"
USERS = 36
IDP_MAP = ("--idp-map=google-oauth2=301", "--idp-map=github=302")


def _uid(n: int) -> str:
    return f"google-oauth2|{n:021d}" if n % 9 == 4 else f"auth0|{n:024d}"


def _export(folder: Path, count: int = USERS) -> list[str]:
    """Profiles with phones, social links and metadata; passwords; an MFA export of OTP secrets."""
    folder.mkdir(parents=True, exist_ok=True)
    hashes = hash_pool(4)
    profiles, passwords, mfa = [], [], []
    for n in range(count):
        uid = _uid(n)
        native = uid.startswith("auth0|")
        identities = [{"provider": uid.split("|")[0], "user_id": uid.split("|")[1], "connection": "c",
                       "isSocial": not native}]  # fmt: skip
        if native and n % 3 == 1:
            identities.append(
                {"provider": "google-oauth2", "user_id": f"g-{n}", "connection": "g", "isSocial": True}
            )
        if native and n % 7 == 2:
            identities.append(
                {"provider": "github", "user_id": f"gh-{n}", "connection": "gh", "isSocial": True}
            )
        profile = {"user_id": uid, "email": f"rich{n}@example.com", "email_verified": n % 4 != 0,
                   "given_name": f"Given{n}", "family_name": f"Family{n}", "name": f"Given{n} Family{n}",
                   "identities": identities, "app_metadata": {"plan": "pro", "n": n}}  # fmt: skip
        if n % 3 == 0:
            profile.update(phone_number=f"+4179{n:07d}", phone_verified=n % 2 == 0)
        profiles.append(profile)
        if native and n % 6 != 5:
            oid = uid.split("|")[1]
            passwords.append({"_id": {"$oid": oid}, "email": profile["email"], "passwordHash": hashes[n % 4]})
        if native and n % 4 == 1:
            secret = base64.b32encode(f"secret-{n:03d}".encode()).decode().rstrip("=")
            mfa.append({"user_id": uid, "type": "otp", "otp_secret": secret})
    (folder / "users.json").write_text("".join(json.dumps(p) + "\n" for p in profiles))
    (folder / "passwords.json").write_text("".join(json.dumps(p) + "\n" for p in passwords))
    (folder / "mfa.json").write_text("".join(json.dumps(m) + "\n" for m in mfa))
    return [p["user_id"] for p in profiles]


def _inputs(folder: Path) -> list[str]:
    return [f"--users={folder / 'users.json'}", f"--passwords={folder / 'passwords.json'}",
            f"--mfa={folder / 'mfa.json'}", *IDP_MAP, "--metadata"]  # fmt: skip


def _v5() -> ZitadelServer:
    server = ZitadelServer(tokens={PAT}).start()
    server.admin_api = False
    creation.add_org(server, ORG)
    creation.add_org_token(server, ORG_TOKEN, ORG)
    return server


def _push(manifest: Path, server: ZitadelServer, results: Path, **options):
    creds = Credentials("token", token=ORG_TOKEN)
    client = fast_client(server.url, creds, max_attempts=options.pop("max_attempts", 12))
    return push_engine.push_manifest(
        load_manifest(str(manifest)), server.url, creds, progress=False, client=client, api=USER_V2,
        results_dir=str(results), **options,
    )  # fmt: skip


@pytest.fixture(name="written")
def written_fixture(tmp_path) -> tuple[Path, list[str], dict[str, dict]]:
    """The export migrated to bodies, and what the admin import of those bodies holds."""
    ids = _export(tmp_path / "export")
    out = tmp_path / "out"
    rc = main(
        [
            "migrate",
            "auth0",
            f"--org={ORG}",
            *_inputs(tmp_path / "export"),
            f"--output={out / 'importBody.json'}",
        ]
    )
    assert rc == 0
    manifest = out / "importBody.manifest.json"
    with ZitadelServer(tokens={PAT}) as imported:
        report = push_engine.push_manifest(
            load_manifest(str(manifest)), imported.url, Credentials("token", token=PAT), progress=False,
            results_dir=str(tmp_path / "admin"), api=ADMIN_IMPORT,
        )  # fmt: skip
        assert report.ok and report.created == USERS
        expected = {uid: creation.stored_user(imported, uid) for uid in ids}
    return manifest, ids, expected


def test_the_same_users_as_the_import_exactly_once_under_faults_and_a_rerun_creates_nothing(
    written, tmp_path
):
    manifest, ids, expected = written
    rich = [e for e in expected.values() if e["metadata"] and e["user"].get("idps")]
    assert rich and any(e["user"].get("phone") for e in expected.values())
    assert any(e["user"].get("otpCode") for e in expected.values())
    server = _v5()
    try:
        server.faults.slow_seconds = 0.5
        kinds = [k for k in FAULT_KINDS if k != "deadline"]
        server.faults.randomize(0.3, kinds=kinds, paths=("/v2/users*",), seed=40)
        report = _push(manifest, server, tmp_path / "v2", concurrency=4, request_timeout=0.3)
        server.faults.clear()
        assert report.ok, report.table()
        assert report.created + report.present == USERS and report.failed == 0
        assert {"504_after", "drop_after"} & set(server.faults.fired)
        assert server.added_event_counts() == {uid: 1 for uid in ids}
        for uid in ids:
            assert creation.same_but_state(creation.stored_user(server, uid), expected[uid]), uid
        again = _push(manifest, server, tmp_path / "again")  # a fresh ledger: every create refused
        assert again.ok and again.created == 0 and again.present == USERS
        assert server.added_event_counts() == {uid: 1 for uid in ids}
        metadata_sets = [e for e in server.state.events if e.event_type == "user.metadata.set"]
        assert len(metadata_sets) == sum(len(e["metadata"]) for e in expected.values())  # each key once
        assert server.v2_schema_problems == []
    finally:
        server.stop()


def test_a_server_without_add_human_user_gets_the_same_users_through_create_user(written, tmp_path):
    manifest, ids, expected = written
    server = _v5()
    server.add_human_user = False  # and CreateUser drops the metadata it is given (#11826)
    try:
        report = _push(manifest, server, tmp_path / "v2", verify=True)
        assert report.ok and report.created == USERS, report.table()
        assert report.verify is not None and report.verify.ok
        assert not any(path == ADD_HUMAN_PATH for path, _ in server.requests)
        for uid in ids:
            assert creation.same_but_state(creation.stored_user(server, uid), expected[uid]), uid
    finally:
        server.stop()


def test_a_sync_night_after_a_failed_one_completes(tmp_path, capsys):
    """Night 1 fails (some creates landed, their answers lost, the night gave up on them: unknown,
    not failed); night 2 reads those users back before sending anything, counts them present
    without a second create, and the state commits them."""
    ids = _export(tmp_path / "export")
    token_file = tmp_path / "org-token"
    token_file.write_text(ORG_TOKEN)
    server = _v5()

    def night(*extra: str) -> int:
        return main(["migrate", "auth0", f"--org={ORG}", *_inputs(tmp_path / "export"),
                     f"--output={tmp_path / 'out' / 'importBody.json'}", f"--state={tmp_path / 'state'}",
                     f"--push-url={server.url}", f"--token-file={token_file}", "--push-verify",
                     "--push-concurrency=2", *extra])  # fmt: skip

    try:
        # Night 1: the first creates land but their answers are lost, and the night gives up on
        # them (one attempt each): those users are on the server, not in the state.
        server.faults.inject("drop_after", count=5, path=CREATE_USER_PATH)
        assert night("--push-max-attempts=1") != 0
        landed = server.user_ids(ORG)
        assert 0 < len(landed) < USERS, capsys.readouterr().err[-3000:]
        server.faults.clear()
        capsys.readouterr()
        before = len(server.refusals)
        assert night() == 0, capsys.readouterr().err[-2000:]
        assert server.user_ids(ORG) == set(ids)
        assert server.added_event_counts() == {uid: 1 for uid in ids}
        assert [m for p, m in server.refusals[before:] if p == CREATE_USER_PATH] == []  # read back first
        calls = len(server.v2.calls)
        assert night() == 0 and len(server.v2.calls) == calls  # the next night has nothing to send
    finally:
        server.stop()
