"""The commit point of a scheduled sync: changes applied, verified, and the state committed once.

Night 1 imports 6 users with a state folder; night 2 renames them (change files, no new users).
``apply_and_commit`` with the bodies' push stopped sends nothing and commits nothing; run again,
it applies and commits, so a third night finds nothing to change.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from zitadel_fixtures import PAT, fast_client, hash_pool
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.output.manifest import load_manifest
from transforms.sync.commit import apply_and_commit
from transforms.zitadel_api.credentials import Credentials

ORG = "123456789"


def _export(folder: Path, family: str) -> list[str]:
    folder.mkdir(parents=True)
    hashes = hash_pool(1)
    profiles = [
        {"user_id": f"auth0|{n:024d}", "email": f"user{n}@example.com", "email_verified": True,
         "given_name": f"Given{n}", "family_name": f"{family}{n}", "name": f"Given{n} {family}{n}"}
        for n in range(1, 7)
    ]  # fmt: skip
    passwords = [
        {"_id": {"$oid": f"{n:024d}"}, "email": f"user{n}@example.com", "passwordHash": hashes[0]}
        for n in range(1, 7)
    ]
    (folder / "users.json").write_text("".join(json.dumps(p) + "\n" for p in profiles))
    (folder / "passwords.json").write_text("".join(json.dumps(p) + "\n" for p in passwords))
    return [f"--users={folder / 'users.json'}", f"--passwords={folder / 'passwords.json'}"]


def _night(tmp: Path, n: int, family: str, *push: str) -> Path:
    output = tmp / f"out-{n}" / "importBody.json"
    args = [
        "migrate",
        "auth0",
        f"--org={ORG}",
        f"--output={output}",
        f"--state={tmp / 'state'}",
        "--metadata",
    ]
    assert main(args + _export(tmp / f"export-{n}", family) + list(push)) == 0
    return output.parent / "importBody.manifest.json"


def _last_names(server: ZitadelServer) -> set[str]:
    with server.state.lock:
        return {user["profile"]["lastName"] for _, user in server.state.users.values()}


@pytest.fixture(name="server")
def server_fixture():
    with ZitadelServer(tokens={PAT}) as server:
        yield server


def test_changes_are_committed_only_once_applied(server, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    _night(tmp_path, 1, "Family", f"--push-url={server.url}", f"--token-file={token_file}")
    manifest = load_manifest(str(_night(tmp_path, 2, "New")))
    assert manifest.raw["sync"]["changes"] and manifest.bodies == ()
    client = fast_client(server.url, Credentials("token", token=PAT))
    settings = dict(concurrency=1, request_timeout=None, progress=False, stream=io.StringIO(), verify=True)
    results = str(tmp_path / "results")

    stopped = apply_and_commit(manifest, client, results, [], bodies_stopped=True, **settings)
    assert stopped.fatal == "not started: the bodies' push stopped" and not stopped.ok
    assert _last_names(server) == {f"Family{n}" for n in range(1, 7)}

    applied = apply_and_commit(manifest, client, results, [], bodies_stopped=False, **settings)
    assert applied.ok, applied.table()
    assert _last_names(server) == {f"New{n}" for n in range(1, 7)}
    third = load_manifest(str(_night(tmp_path, 3, "New")))
    assert not third.raw["sync"].get("changes") and third.bodies == ()
