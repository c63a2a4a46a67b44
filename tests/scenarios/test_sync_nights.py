"""Scheduled syncs end to end: day 1 imports, day 2 changes, over HTTP to the test server.

Each scenario runs the real CLI (``migrate ... --state --push-url``) against the loopback server,
which keeps users, their states (initial, inactive, locked) and events (tests/standins/zitadel_user_v2.py).
"The target holds what a fresh import of day 2 would hold" is checked by importing day 2 into a
second, empty server and comparing the users both hold.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import bcrypt
import pytest
from repo_files import DATA_DIR
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline.cli import main

ORG = "123456789"


def _hash(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(10)).decode()


def _profile(n: int, **extra) -> dict:
    user = {
        "user_id": f"auth0|{n:024d}",
        "email": f"user{n}@example.com",
        "email_verified": True,
        "given_name": f"Given{n}",
        "family_name": f"Family{n}",
        "name": f"Given{n} Family{n}",
    }
    user.update(extra)
    return {k: v for k, v in user.items() if v is not None}


def _password(n: int, hashed: str) -> dict:
    return {"_id": {"$oid": f"{n:024d}"}, "email": f"user{n}@example.com", "passwordHash": hashed}


def _write_export(folder: Path, profiles: list[dict], passwords: list[dict]) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    users = folder / "users.json"
    users.write_text("".join(json.dumps(p) + "\n" for p in profiles))
    pws = folder / "passwords.json"
    pws.write_text("".join(json.dumps(p) + "\n" for p in passwords))
    return users, pws


class Day:
    """One night's run: write the export, migrate --state --push-url, return rc and output."""

    def __init__(self, tmp: Path, server: ZitadelServer, token_file: Path):
        self.tmp, self.server, self.token_file = tmp, server, token_file
        self.state = tmp / "state"
        self.runs = 0

    def run(self, profiles, passwords, *extra: str, push: bool = True, capsys=None) -> int:
        self.runs += 1
        users, pws = _write_export(self.tmp / f"export-{self.runs}", profiles, passwords)
        args = [
            "migrate",
            "auth0",
            f"--org={ORG}",
            f"--users={users}",
            f"--passwords={pws}",
            f"--output={self.tmp / 'out' / 'importBody.json'}",
            f"--state={self.state}",
            "--metadata",
            *extra,
        ]
        if push:
            args += [f"--push-url={self.server.url}", f"--token-file={self.token_file}"]
        return main(args)


@pytest.fixture
def night(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    with ZitadelServer(tokens={PAT}) as server:
        yield Day(tmp_path, server, token_file)


def _held(server: ZitadelServer) -> dict[str, dict]:
    """What the server holds per user: the user, its state and its metadata."""
    with server.state.lock:
        out = {}
        for uid, (org, user) in server.state.users.items():
            if server.state.user_states.get(uid) == "removed":
                continue
            meta = {k: v for (u, k), v in server.state.metadata.items() if u == uid}
            out[uid] = {"org": org, "user": json.loads(json.dumps(user)), "meta": meta}
        return out


def _fresh_import(tmp: Path, profiles, passwords) -> dict[str, dict]:
    """What an empty server holds after a plain import of the same export."""
    users, pws = _write_export(tmp / "fresh-export", profiles, passwords)
    token_file = tmp / "fresh-token"
    token_file.write_text(PAT)
    with ZitadelServer(tokens={PAT}) as fresh:
        rc = main(
            [
                "migrate",
                "auth0",
                f"--org={ORG}",
                f"--users={users}",
                f"--passwords={pws}",
                f"--output={tmp / 'fresh' / 'importBody.json'}",
                "--metadata",
                f"--push-url={fresh.url}",
                f"--token-file={token_file}",
            ]
        )
        assert rc == 0
        return _held(fresh)


def _events(server: ZitadelServer, kind: str) -> list[str]:
    with server.state.lock:
        return [e.aggregate_id for e in server.state.events if e.event_type == kind]


def test_day2_renames_new_password_block_and_new_user_reach_zitadel_and_rerun_sends_nothing(
    night, tmp_path, capsys
):
    hashes = hash_pool(4)
    day1 = [_profile(1), _profile(2), _profile(3, app_metadata={"plan": "gold"}), _profile(4)]
    pws1 = [
        _password(1, hashes[0]),
        _password(2, hashes[1]),
        _password(3, hashes[2]),
        _password(4, hashes[3]),
    ]
    assert night.run(day1, pws1) == 0
    assert set(night.server.user_ids(ORG)) == {p["user_id"] for p in day1}
    assert (night.state / "CURRENT.json").exists()
    capsys.readouterr()

    new_hash = _hash("a-new-password")
    day2 = [
        _profile(1, given_name="Renamed", name="Renamed Family1"),  # renamed
        _profile(2),  # new password (below)
        _profile(3, app_metadata={"plan": "platinum"}, blocked=True),  # blocked, metadata changed
        _profile(4, phone_number="+41791234567", phone_verified=False),  # phone added, unverified
        _profile(5),  # new user
    ]
    pws2 = [_password(1, hashes[0]), _password(2, new_hash), _password(3, hashes[2]), _password(4, hashes[3])]
    pws2.append(_password(5, hashes[0]))
    calls_before = len(night.server.v2.calls)
    assert night.run(day2, pws2) == 0
    out = capsys.readouterr().out
    assert "sync: changed" in out

    held = _held(night.server)
    assert held["auth0|000000000000000000000001"]["user"]["profile"]["firstName"] == "Renamed"
    assert held["auth0|000000000000000000000002"]["user"]["hashedPassword"]["value"] == new_hash
    assert bcrypt.checkpw(
        b"a-new-password", held["auth0|000000000000000000000002"]["user"]["hashedPassword"]["value"].encode()
    )
    assert night.server.state.user_states["auth0|000000000000000000000003"] == "inactive"
    assert "auth0|000000000000000000000005" in held
    # Exactly one password change: user 2's, never a re-sent hash of an unchanged user.
    assert _events(night.server, "user.human.password.changed") == ["auth0|000000000000000000000002"]
    # No code went to anybody: the unverified phone was set with returnCode.
    assert night.server.v2.notifications == []
    # The target holds what a fresh import of day 2 holds (blocked user apart: the import
    # cannot carry the blocked state, the sync deactivated it instead).
    fresh = _fresh_import(tmp_path, [p for p in day2 if not p.get("blocked")], pws2)
    for uid, expected in fresh.items():
        assert held[uid] == expected, uid

    # Re-running day 2 sends nothing and writes no body and no change file.
    calls = len(night.server.v2.calls)
    imports = night.server.state.import_calls
    assert night.run(day2, pws2) == 0
    assert len(night.server.v2.calls) == calls and night.server.state.import_calls == imports
    out_dir = tmp_path / "out"
    assert not list(out_dir.glob("importBody*.changes-*.ndjson"))
    assert not (out_dir / "importBody.json").exists()
    assert calls > calls_before


def test_change_files_are_private_listed_and_reviewable_before_push(night, tmp_path):
    hashes = hash_pool(2)
    assert night.run([_profile(1), _profile(2)], [_password(1, hashes[0]), _password(2, hashes[1])]) == 0
    rc = night.run(
        [_profile(1, family_name="Changed"), _profile(2)],
        [_password(1, hashes[0]), _password(2, hashes[1])],
        push=False,
    )
    assert rc == 0
    manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
    changes = manifest["sync"]["changes"]
    assert len(changes) == 1 and changes[0]["users"] == 1 and changes[0]["calls"] == 1
    path = tmp_path / "out" / changes[0]["path"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    record = json.loads(path.read_text())
    assert record["fields"] == ["profile"] and record["calls"][0]["call"] == "UpdateHumanUser"
    assert record["calls"][0]["body"]["profile"]["familyName"] == "Changed"
    assert manifest["sync"]["counts"]["unchanged"] == 1
    # Nothing was sent yet: the target still holds day 1.
    assert night.server.state.users["auth0|000000000000000000000001"][1]["profile"]["lastName"] == "Family1"
    # push applies it and commits.
    push = [
        "push",
        f"--url={night.server.url}",
        f"--manifest={tmp_path / 'out' / 'importBody.manifest.json'}",
        f"--token-file={night.token_file}",
        "--quiet",
    ]
    assert main(push) == 0
    assert night.server.state.users["auth0|000000000000000000000001"][1]["profile"]["lastName"] == "Changed"
    # A second push of the same manifest is refused: the state moved on.
    rc = main(push)
    assert rc == 2


@pytest.mark.parametrize("policy", ["report", "deactivate", "delete"])
def test_removed_users_follow_the_policy(night, policy, capsys):
    hashes = hash_pool(3)
    profiles = [_profile(n) for n in range(1, 41)]
    passwords = [_password(n, hashes[n % 3]) for n in range(1, 41)]
    assert night.run(profiles, passwords) == 0
    capsys.readouterr()
    gone = "auth0|000000000000000000000040"
    assert night.run(profiles[:-1], passwords[:-1], f"--on-removed={policy}") == 0
    states = night.server.state.user_states
    if policy == "report":
        assert states[gone] == "active"
        assert night.server.v2.calls == []
    elif policy == "deactivate":
        assert states[gone] == "inactive"
    else:
        assert states[gone] == "removed"
    # The next night sends nothing more for them.
    calls = len(night.server.v2.calls)
    assert night.run(profiles[:-1], passwords[:-1], f"--on-removed={policy}") == 0
    assert len(night.server.v2.calls) == calls


def test_a_truncated_export_is_refused_by_the_removal_guard(night, capsys):
    hashes = hash_pool(3)
    profiles = [_profile(n) for n in range(1, 41)]
    passwords = [_password(n, hashes[n % 3]) for n in range(1, 41)]
    assert night.run(profiles, passwords) == 0
    capsys.readouterr()
    rc = night.run(profiles[:20], passwords[:20], "--on-removed=deactivate")
    err = capsys.readouterr().err
    assert rc == 2
    assert "--max-removals" in err and "20" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert night.server.v2.calls == []
    assert all(s == "active" for s in night.server.state.user_states.values())
    # Raising the guard lets it through.
    assert night.run(profiles[:20], passwords[:20], "--on-removed=deactivate", "--max-removals=50%") == 0
    assert sum(1 for s in night.server.state.user_states.values() if s == "inactive") == 20


def test_a_dead_lettered_user_is_left_alone_and_its_dead_letter_says_so(night, tmp_path):
    hashes = hash_pool(2)
    assert night.run([_profile(1), _profile(2)], [_password(1, hashes[0]), _password(2, hashes[1])]) == 0
    # Day 2: user 2's e-mail went bad: it must not be deactivated or changed.
    rc = night.run(
        [_profile(1), _profile(2, email="not-an-email", family_name="X")],
        [_password(1, hashes[0])],
        "--on-removed=deactivate",
    )
    assert rc == 0
    assert night.server.state.user_states["auth0|000000000000000000000002"] == "active"
    assert night.server.v2.calls == []
    letters = [
        json.loads(line)
        for line in (tmp_path / "out" / "importBody.dead-letter.ndjson").read_text().splitlines()
    ]
    noted = [d for d in letters if "sync" in d]
    assert noted and "left exactly as ZITADEL holds it" in noted[0]["sync"]


def test_a_changed_hash_the_target_cannot_verify_leaves_the_user_as_zitadel_holds_it(night, tmp_path):
    hashes = hash_pool(2)
    assert night.run([_profile(1), _profile(2)], [_password(1, hashes[0]), _password(2, hashes[1])]) == 0
    # bcrypt cost 4 is below ZITADEL's default minimum (10): the same rules as an import.
    weak = bcrypt.hashpw(b"weak", bcrypt.gensalt(4)).decode()
    assert (
        night.run([_profile(1, family_name="X"), _profile(2)], [_password(1, weak), _password(2, hashes[1])])
        == 0
    )
    assert night.server.v2_requests == []
    assert (
        night.server.state.users["auth0|000000000000000000000001"][1]["hashedPassword"]["value"] == hashes[0]
    )
    letters = [
        json.loads(x) for x in (tmp_path / "out" / "importBody.dead-letter.ndjson").read_text().splitlines()
    ]
    assert any("sync" in d and d["reason"].startswith("bcrypt") for d in letters), letters


def test_unblocking_reactivates_and_an_initial_user_is_locked_instead(night):
    hashes = hash_pool(2)
    day1 = [_profile(1), _profile(2, email_verified=False)]  # 2 has an unverified e-mail: initial
    pws = [_password(1, hashes[0]), _password(2, hashes[1])]
    assert night.run(day1, pws) == 0
    assert night.server.state.user_states["auth0|000000000000000000000002"] == "initial"
    blocked = [_profile(1, blocked=True), _profile(2, email_verified=False, blocked=True)]
    # Blocking counts against its own guard (a wrong export could block everybody), not removals.
    assert night.run(blocked, pws, "--max-removals=0") == 2
    assert night.run(blocked, pws, "--max-removals=0", "--max-blocks=2") == 0
    assert night.server.state.user_states["auth0|000000000000000000000001"] == "inactive"
    assert night.server.state.user_states["auth0|000000000000000000000002"] == "locked"
    assert night.run(day1, pws) == 0
    assert night.server.state.user_states["auth0|000000000000000000000001"] == "active"
    assert night.server.state.user_states["auth0|000000000000000000000002"] == "initial"


def test_faults_on_change_calls_still_end_in_the_target_holding_day2(night):
    hashes = hash_pool(3)
    profiles = [_profile(n) for n in range(1, 21)]
    passwords = [_password(n, hashes[n % 3]) for n in range(1, 21)]
    assert night.run(profiles, passwords) == 0
    changed = [_profile(n, family_name=f"New{n}", blocked=(n == 7) or None) for n in range(1, 21)]
    faults = night.server.faults
    # A 504 after the change was made (the retry meets its own effect), throttling, a 503 and an
    # answer lost after the work, on the v2 paths; 5 in a row, within the 6 attempts of a call.
    for kind, count in (("504_after", 2), ("429", 1), ("503", 1), ("drop_after", 1)):
        faults.inject(kind, count=count, path="/v2/users/*")
    assert night.run(changed, passwords, "--max-removals=1", "--max-blocks=1") == 0
    assert len(faults.fired) == 5
    held = _held(night.server)
    assert all(held[p["user_id"]]["user"]["profile"]["lastName"].startswith("New") for p in changed)
    assert night.server.state.user_states["auth0|000000000000000000000007"] == "inactive"
    calls = len(night.server.v2_requests)
    assert night.run(changed, passwords, "--max-removals=1", "--max-blocks=1") == 0
    assert len(night.server.v2_requests) == calls


def test_a_server_that_stops_answering_ends_the_push_and_the_next_run_resumes(night, tmp_path, capsys):
    hashes = hash_pool(3)
    profiles = [_profile(n) for n in range(1, 31)]
    passwords = [_password(n, hashes[n % 3]) for n in range(1, 31)]
    assert night.run(profiles, passwords) == 0
    changed = [_profile(n, family_name=f"New{n}") for n in range(1, 31)]
    assert night.run(changed, passwords, push=False) == 0
    manifest = tmp_path / "out" / "importBody.manifest.json"
    url = night.server.url
    night.server.faults.inject("drop", count=10_000, path="/v2/users/*")
    capsys.readouterr()
    rc = main(
        [
            "push",
            f"--url={url}",
            f"--manifest={manifest}",
            f"--token-file={night.token_file}",
            "--quiet",
            "--max-attempts=2",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 1 and "answer" in out and "run push again" in out
    night.server.faults.clear()
    with night.server.faults._lock:  # the drops still queued: the server answers again
        night.server.faults._queue.clear()
    held = _held(night.server)
    assert not any(held[p["user_id"]]["user"]["profile"]["lastName"].startswith("New") for p in changed)
    rc = main(
        ["push", f"--url={url}", f"--manifest={manifest}", f"--token-file={night.token_file}", "--quiet"]
    )
    assert rc == 0
    held = _held(night.server)
    assert all(held[p["user_id"]]["user"]["profile"]["lastName"].startswith("New") for p in changed)


def test_verify_reads_the_changes_back_and_names_a_user_whose_change_did_not_arrive(night, capsys):
    hashes = hash_pool(3)
    profiles = [_profile(n) for n in range(1, 6)]
    passwords = [_password(n, hashes[n % 3]) for n in range(1, 6)]
    assert night.run(profiles, passwords) == 0
    day2 = [_profile(n, family_name="Later") for n in range(1, 6)]
    day2[1] = _profile(2, family_name="Later", blocked=True)
    capsys.readouterr()
    assert night.run(day2, passwords, "--push-verify", "--max-removals=1", "--max-blocks=1") == 0
    out = capsys.readouterr().out
    assert "verify changes: ok" in out
    # The server answers 200 for user 4 but keeps the old name: verify names that user.
    night.server.v2.lost_updates.add("auth0|000000000000000000000004")
    day3 = [_profile(n, family_name="Third") for n in range(1, 6)]
    day3[1] = _profile(2, family_name="Later", blocked=True)
    assert night.run(day3, passwords, "--push-verify") == 1
    out = capsys.readouterr().out
    assert "verify changes: 1 user(s) differ" in out
    assert "auth0|000000000000000000000004" in out and "familyName is 'Later', not 'Third'" in out
    # Not committed: once the server applies it again, the next night sends user 4's change.
    night.server.v2.lost_updates.clear()
    requests = len(night.server.v2_requests)
    assert night.run(day3, passwords, "--push-verify") == 0
    assert [path for _, path, _ in night.server.v2_requests[requests:] if "human" in path] == [
        "/v2/users/human/auth0%7C000000000000000000000004"
    ]


def test_a_second_run_on_the_same_state_is_refused_and_a_stale_lock_is_taken_over(night, capsys):
    import socket
    import time

    hashes = hash_pool(1)
    profiles, passwords = [_profile(1)], [_password(1, hashes[0])]
    assert night.run(profiles, passwords) == 0
    lock = night.state / "LOCK"
    # A live holder on this host (our own pid stands for "another run"): refused, one line.
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(), "token": "x"}
    lock.write_text(json.dumps({**holder, "what": "migrate auth0 --state=elsewhere"}))
    capsys.readouterr()
    assert night.run(profiles, passwords) == 2
    err = capsys.readouterr().err.strip()
    assert (
        "held by another run (migrate auth0" in err and "--break-lock" in err and len(err.splitlines()) == 1
    )
    assert lock.exists()  # not ours: left alone
    assert night.run(profiles, passwords, "--break-lock") == 0
    assert not lock.exists()
    # A holder whose process is gone (same host) is stale: taken over without a flag.
    lock.write_text(json.dumps({**holder, "pid": 2**22 + 12345, "what": "push"}))
    assert night.run(profiles, passwords) == 0
    assert not lock.exists()


def test_state_on_gcs_emulator_syncs_and_locks(gcs_emulator, tmp_path):
    from repo_files import GCS_BUCKET

    from transforms.files.locks import LockHeld
    from transforms.sync.state import StateStore, acquire_state_lock

    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    state = f"gs://{GCS_BUCKET}/sync/acme"
    hashes = hash_pool(2)
    with ZitadelServer(tokens={PAT}) as server:
        night = Day(tmp_path, server, token_file)
        night.state = state  # type: ignore[assignment]
        assert night.run([_profile(1), _profile(2)], [_password(1, hashes[0]), _password(2, hashes[1])]) == 0
        assert gcs_emulator.blob("sync/acme/CURRENT.json").exists()
        assert (
            night.run(
                [_profile(1, family_name="Moved"), _profile(2)],
                [_password(1, hashes[0]), _password(2, hashes[1])],
            )
            == 0
        )
        assert server.state.users["auth0|000000000000000000000001"][1]["profile"]["lastName"] == "Moved"
        pointer = StateStore(state).read_pointer()
        assert pointer is not None and pointer["generation"] == 2 and pointer["users"] == 2
        # A second holder is refused while the first holds the lock object. (The race of two
        # creates is settled by if_generation_match=0 on Cloud Storage; gcp-storage-emulator
        # ignores preconditions, so only the sequential case is tested here.)
        with acquire_state_lock(state, "first"):
            with pytest.raises(LockHeld, match="held by another run"):
                acquire_state_lock(state, "second")
        assert not gcs_emulator.blob("sync/acme/LOCK").exists()


def test_a_change_refused_for_one_user_is_sent_again_the_next_night(night, capsys):
    hashes = hash_pool(3)
    profiles = [_profile(n, username=f"name{n}") for n in range(1, 11)]
    passwords = [_password(n, hashes[n % 3]) for n in range(1, 11)]
    assert night.run(profiles, passwords) == 0
    # Night 2: everybody gets a new family name; user 3 also takes the user name user 5 still
    # holds: the server refuses user 3's update (Errors.User.AlreadyExists), the rest lands.
    day2 = [_profile(n, username=f"name{n}", family_name="Two") for n in range(1, 11)]
    day2[2] = _profile(3, username="name5", family_name="Two")
    capsys.readouterr()
    assert night.run(day2, passwords) == 1
    out = capsys.readouterr().out
    assert "changes-dead-letter.ndjson" in out and "failed 1" in out
    held = _held(night.server)
    assert held["auth0|000000000000000000000003"]["user"]["profile"]["lastName"] == "Family3"
    assert all(h["user"]["profile"]["lastName"] == "Two" for uid, h in held.items() if not uid.endswith("03"))
    # Night 3, same export: only user 3's update is sent again (refused again: 1 call).
    calls, requests = len(night.server.v2.calls), len(night.server.v2_requests)
    assert night.run(day2, passwords) == 1
    assert len(night.server.v2_requests) - requests == 1
    assert len(night.server.v2.calls) == calls
    # Night 4: user 5 gave the name up at the source: both updates land, nothing else is sent.
    day4 = list(day2)
    day4[4] = _profile(5, username="other5", family_name="Two")
    requests = len(night.server.v2_requests)
    # One user at a time, so the order is the change file's: with users at once, user 3's update
    # may meet the name before user 5 gave it up, and is sent once more after the rest.
    assert night.run(day4, passwords, "--push-concurrency=1") == 0
    held = _held(night.server)
    assert held["auth0|000000000000000000000003"]["user"]["userName"] == "name5"
    assert held["auth0|000000000000000000000003"]["user"]["profile"]["lastName"] == "Two"
    assert len(night.server.v2_requests) - requests == 2
    assert night.run(day4, passwords) == 0
    assert len(night.server.v2_requests) - requests == 2


KC_DATA = DATA_DIR


def _kc_user(n: int, password: str | None = None, **extra) -> dict:
    import base64
    import hashlib

    pw = password or f"pw{n}"
    salt = hashlib.sha256(pw.encode()).digest()[:16]
    digest = hashlib.pbkdf2_hmac("sha256", pw.encode(), salt, 1000, 32)
    user = {
        "id": f"kc-{n}",
        "username": f"kcuser{n}",
        "enabled": True,
        "emailVerified": True,
        "firstName": f"First{n}",
        "lastName": f"Last{n}",
        "email": f"kcuser{n}@example.com",
        "credentials": [
            {
                "type": "password",
                "secretData": json.dumps(
                    {"value": base64.b64encode(digest).decode(), "salt": base64.b64encode(salt).decode()}
                ),
                "credentialData": json.dumps({"hashIterations": 1000, "algorithm": "pbkdf2-sha256"}),
            }
        ],
    }
    user.update(extra)
    return user


def _keycloak_night(
    tmp_path: Path, url: str, token_file: Path, realm_doc: dict, users: list[dict], n: int, *extra: str
) -> int:
    """One night of a Keycloak realm: write it, migrate --state --push-url, return the exit status."""
    realm = tmp_path / f"realm-{n}.json"
    realm.write_text(json.dumps({**realm_doc, "users": users}))
    return main(
        [
            "migrate",
            "keycloak",
            f"--org={ORG}",
            f"--realm={realm}",
            f"--output={tmp_path / 'out' / 'importBody.json'}",
            f"--state={tmp_path / 'state'}",
            f"--push-url={url}",
            f"--token-file={token_file}",
            *extra,
        ]
    )


def test_keycloak_day1_day2_follows_the_realm(tmp_path, capsys):
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    config = KC_DATA / "zitadel-config" / "verifiers-enabled.yaml"

    def run(users: list[dict], n: int, *extra: str) -> int:
        return _keycloak_night(
            tmp_path,
            server.url,
            token_file,
            {"realm": "acme"},
            users,
            n,
            f"--zitadel-config={config}",
            "--max-removals=50%",
            "--max-blocks=50%",
            *extra,
        )

    with ZitadelServer(tokens={PAT}, hash_verifiers=("pbkdf2",)) as server:
        day1 = [_kc_user(n) for n in range(1, 6)]
        assert run(day1, 1) == 0
        assert server.user_ids(ORG) == {f"kc-{n}" for n in range(1, 6)}
        day2 = [
            _kc_user(1, lastName="Changed"),
            _kc_user(2, enabled=False),
            _kc_user(3, password="a-new-one"),
            _kc_user(4, emailVerified=False, email="moved@example.com"),
            # 5 is gone from the realm
            _kc_user(6),
        ]
        capsys.readouterr()
        assert run(day2, 2, "--on-removed=deactivate") == 0
        states = server.state.user_states
        users = {uid: u for uid, (_, u) in server.state.users.items()}
        assert users["kc-1"]["profile"]["lastName"] == "Changed"
        assert states["kc-2"] == "inactive" and states["kc-5"] == "inactive"
        assert users["kc-4"]["email"] == {"email": "moved@example.com"}
        assert server.v2.notifications == []
        assert "kc-6" in users
        import passwap_rules

        assert passwap_rules.verify(users["kc-3"]["hashedPassword"]["value"], "a-new-one")
        assert _events(server, "user.human.password.changed") == ["kc-3"]
        calls = len(server.v2.calls)
        assert run(day2, 3, "--on-removed=deactivate") == 0
        assert len(server.v2.calls) == calls


def test_another_order_key_order_and_layout_of_the_same_data_changes_nothing(night, tmp_path):
    import gzip
    import random

    hashes = hash_pool(3)
    profiles = [
        _profile(n, app_metadata={"plan": "gold", "team": f"t{n}"}, nickname=f"nick{n}") for n in range(1, 31)
    ]
    passwords = [_password(n, hashes[n % 3]) for n in range(1, 31)]
    assert night.run(profiles, passwords) == 0
    # Day 2: the same data as a gzip'ed, pretty-printed JSON array, records and keys shuffled.
    rng = random.Random(7)
    shuffled = [dict(rng.sample(list(p.items()), len(p))) for p in profiles]
    for p in shuffled:
        p["app_metadata"] = dict(reversed(list(p["app_metadata"].items())))
    rng.shuffle(shuffled)
    folder = tmp_path / "layout"
    folder.mkdir()
    users = folder / "users.json.gz"
    users.write_bytes(gzip.compress(json.dumps(shuffled, indent=2).encode()))
    pws = folder / "passwords.json"
    pws.write_text(json.dumps(list(reversed(passwords))))
    imports = night.server.state.import_calls
    rc = main(
        [
            "migrate",
            "auth0",
            f"--org={ORG}",
            f"--users={users}",
            f"--passwords={pws}",
            f"--output={tmp_path / 'out' / 'importBody.json'}",
            f"--state={night.state}",
            "--metadata",
            f"--push-url={night.server.url}",
            f"--token-file={night.token_file}",
        ]
    )
    assert rc == 0
    manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
    assert manifest["bodies"] == [] and manifest["sync"]["changes"] == []
    assert manifest["sync"]["counts"]["unchanged"] == 30
    assert night.server.v2_requests == [] and night.server.state.import_calls == imports


def test_grants_follow_the_realm_roles_on_scheduled_runs(tmp_path, capsys):
    """Keycloak roles with --project-id and --state: added and removed roles, a user who lost all
    roles, a role new to the project, and nothing sent for users whose roles did not change."""
    from tests.transforms.mapping.test_roles import realm_doc, user

    token_file = tmp_path / "token"
    token_file.write_text(PAT)

    def run(users: list[dict], n: int, doc: dict | None = None) -> int:
        return _keycloak_night(
            tmp_path,
            server.url,
            token_file,
            doc or realm_doc(),
            users,
            n,
            "--project-id=2873423",
            "--create-project=Acme",
            "--on-unsupported-hash=import-without-password",
            "--push-verify",
        )

    def grants() -> dict[str, list[str]]:
        with server.state.lock:
            return {
                user_id: sorted(server.state.grant_keys[grant_id])
                for (org, user_id, project, _), grant_id in server.state.user_grants.items()
                if org == ORG and project == "2873423"
            }

    with ZitadelServer(tokens={PAT}) as server:
        day1 = [
            user(1, realmRoles=["viewer"]),
            user(2, realmRoles=["editor"]),
            user(3, realmRoles=["admin"]),
            user(4, realmRoles=["viewer"]),
        ]
        assert run(day1, 1) == 0
        assert grants() == {
            "id-1": ["viewer"],
            "id-2": ["editor", "shop:buyer", "viewer"],
            "id-3": ["admin", "editor", "shop:buyer", "viewer"],
            "id-4": ["viewer"],
        }
        # Day 2: user 1 gains editor, user 2 loses every role, user 3 is unchanged, user 4 gets a
        # role the realm defines only from today; user 5 is new with roles.
        doc = realm_doc()
        doc["roles"]["realm"].append({"name": "auditor", "description": "Reads the books"})
        day2 = [
            user(1, realmRoles=["editor"]),
            user(2),
            user(3, realmRoles=["admin"]),
            user(4, realmRoles=["viewer", "auditor"]),
            user(5, realmRoles=["viewer"]),
        ]
        requests = len(server.state.events)
        capsys.readouterr()
        rc = run(day2, 2, doc)
        captured = capsys.readouterr()
        assert rc == 0, captured.out[-1500:] + captured.err
        assert grants() == {
            "id-1": ["editor", "shop:buyer", "viewer"],
            "id-3": ["admin", "editor", "shop:buyer", "viewer"],
            "id-4": ["auditor", "viewer"],
            "id-5": ["viewer"],
        }
        with server.state.lock:
            touched = {
                e.aggregate_id for e in server.state.events[requests:] if e.event_type.startswith("user.")
            }
        assert "id-3" not in touched  # unchanged roles: nothing sent for user 3
        assert server.v2.notifications == []
        # The same day again: no grant call, no body (the roles body too: the state holds it).
        calls, imports = len(server.management.calls), server.state.import_calls
        assert run(day2, 3, doc) == 0
        assert len(server.management.calls) == calls and server.state.import_calls == imports
        manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
        assert manifest["bodies"] == [] and manifest["sync"]["changes"] == []
        assert not (tmp_path / "out" / "importBody.authorizations.json").exists()
