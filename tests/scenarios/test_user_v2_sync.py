"""A scheduled sync (``migrate --state --push-url``) against a ZITADEL without the admin API, with a
credential that manages one org only: new users through the user service v2, changes as
today, the state committing only what was confirmed (docs/user-v2.md#sync)."""

from __future__ import annotations

import json
from pathlib import Path

import bcrypt
import pytest
import zitadel_user_v2_create as creation
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline.cli import main

ORG = "123456789"
ORG_TOKEN = "org-token-Nightly4SyncOneOrg0123456789"


def _profile(n: int, **extra) -> dict:
    user = {"user_id": f"auth0|{n:024d}", "email": f"user{n}@example.com", "email_verified": True,
            "given_name": f"Given{n}", "family_name": f"Family{n}", "name": f"Given{n} Family{n}"}  # fmt: skip
    user.update(extra)
    return user


def _password(n: int, hashed: str) -> dict:
    return {"_id": {"$oid": f"{n:024d}"}, "email": f"user{n}@example.com", "passwordHash": hashed}


class _Night:
    def __init__(self, tmp: Path, server: ZitadelServer) -> None:
        self.tmp, self.server, self.runs = tmp, server, 0
        self.token_file = tmp / "org-token"
        self.token_file.write_text(ORG_TOKEN)

    def run(self, profiles: list[dict], passwords: list[dict], *extra: str) -> int:
        self.runs += 1
        folder = self.tmp / f"export-{self.runs}"
        folder.mkdir()
        (folder / "users.json").write_text("".join(json.dumps(p) + "\n" for p in profiles))
        (folder / "passwords.json").write_text("".join(json.dumps(p) + "\n" for p in passwords))
        return main(
            ["migrate", "auth0", f"--org={ORG}", f"--users={folder / 'users.json'}",
             f"--passwords={folder / 'passwords.json'}", f"--output={self.tmp / 'out' / 'importBody.json'}",
             f"--state={self.tmp / 'state'}", "--metadata", f"--push-url={self.server.url}",
             f"--token-file={self.token_file}", "--push-verify", *extra]
        )  # fmt: skip


@pytest.fixture(name="night")
def night_fixture(tmp_path):
    server = ZitadelServer(tokens={PAT}).start()
    server.admin_api = False
    creation.add_org(server, ORG)
    creation.add_org_token(server, ORG_TOKEN, ORG)
    yield _Night(tmp_path, server)
    server.stop()


def test_nights_run_end_to_end_without_the_admin_api(night, capsys):
    hashes = hash_pool(3)
    day1 = [_profile(1), _profile(2), _profile(3)]
    assert night.run(day1, [_password(n, hashes[n - 1]) for n in (1, 2, 3)]) == 0, capsys.readouterr().err
    assert night.server.user_ids(ORG) == {p["user_id"] for p in day1}
    capsys.readouterr()
    new_hash = bcrypt.hashpw(b"new", bcrypt.gensalt(10)).decode()
    day2 = [_profile(1, given_name="Renamed"), _profile(2), _profile(3, blocked=True), _profile(4)]
    pws2 = [_password(1, hashes[0]), _password(2, new_hash), _password(3, hashes[2]), _password(4, hashes[0])]
    rc = night.run(day2, pws2)
    out, err = capsys.readouterr()
    assert rc == 0, err[-2000:]
    assert "sync: changed" in out and "verify: ok" in out
    held = {uid: creation.stored_user(night.server, uid) for uid in night.server.user_ids()}
    assert held["auth0|000000000000000000000001"]["user"]["profile"]["firstName"] == "Renamed"
    assert held["auth0|000000000000000000000002"]["user"]["hashedPassword"]["value"] == new_hash
    assert held["auth0|000000000000000000000003"]["state"] == "inactive"
    assert held["auth0|000000000000000000000004"]["org"] == ORG
    assert night.server.state.import_calls == 0 and night.server.v2.notifications == []
    calls = len(night.server.v2.calls)
    assert night.run(day2, pws2) == 0
    assert len(night.server.v2.calls) == calls  # a re-run of the same night sends nothing


def test_a_new_user_refused_tonight_is_not_committed_and_goes_in_the_next_night(night, capsys):
    hashes = hash_pool(2)
    assert night.run([_profile(1)], [_password(1, hashes[0])]) == 0
    creation.add_org(night.server, "999")
    with night.server.state.lock:  # user 2's user name is taken in another org tonight
        night.server.state.user_names.add("user2@example.com")
    day2 = [_profile(1), _profile(2)]
    pws = [_password(1, hashes[0]), _password(2, hashes[1])]
    assert night.run(day2, pws) == 1
    out, err = capsys.readouterr()
    assert "duplicate-username" in err + out
    assert "auth0|000000000000000000000002" not in night.server.user_ids()
    with night.server.state.lock:
        night.server.state.user_names.discard("user2@example.com")
    assert night.run(day2, pws) == 0, capsys.readouterr().err[-2000:]
    assert night.server.user_ids(ORG) == {"auth0|000000000000000000000001", "auth0|000000000000000000000002"}
