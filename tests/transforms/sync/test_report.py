"""Summaries that add up: migrate, sync and push, read the way a person reads them.

``transforms/sync/report.py`` tallies what became of every planned call; the scenario runs
three nights through the real CLI against the loopback server (tests/standins/): a migrate that
imports users (two of them *initial*: an unverified e-mail, no password), a sync night that renames,
blocks and removes users (initial ones among them) and adds one, pushed by ``push``; then a night
that unblocks and adds nobody. Every summary is parsed and its counts are checked against each
other: none negative, ``users written`` equal to the accounting line's ``written``, the calls the
migrate summary plans equal, kind by kind, to what the push confirmed, failed or did not send;
the change files name ``LockUser`` for the initial users; no empty table is printed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from repo_files import DATA_DIR
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline.cli import main
from pipeline.report import users_lines
from transforms.push.ledger import BodyResult
from transforms.push.report import PushReport
from transforms.push.verification import VerifyReport
from transforms.sources.keycloak.accounting import invariant as keycloak_invariant
from transforms.sync.calls import ChangeResult, Outcome
from transforms.sync.report import SyncReport, planned_calls
from transforms.sync.state import decode_shard, encode_shard
from transforms.sync.state_records import INITIAL
from transforms.zitadel_api.transport import CallStats

ORG = "123456789"
REALWORLD = DATA_DIR / "realworld"
# A target with the pbkdf2 verifier enabled (Keycloak's pbkdf2-sha256 hashes import).
VERIFIERS = DATA_DIR / "zitadel-config" / "verifiers-enabled.yaml"
_ROW = re.compile(r"^(\s*\S.*?)\s{2,}(-?[\d,]+)$")
_ACCOUNTING = re.compile(
    r"^accounting: (?:profiles|users read) (\d+) = written (\d+)(?: \+ compared with the state (\d+))? "
    r"\+ dead-lettered (\d+);"
)
_KIND = re.compile(r"^    (\w+): planned (\d+) = confirmed (\d+) \+ failed (\d+) \+ not sent (\d+)$")
_CALLS = re.compile(r"^  calls planned (\d+) = confirmed (\d+) \+ failed (\d+) \+ not sent (\d+)$")


def _uid(n: int) -> str:
    return f"auth0|{n:024d}"


# ---------------------------------------------------------------------------------------------
# The tally on its own


def _change(user_id: str, *calls: str) -> dict:
    return {"userId": user_id, "calls": [{"call": c} for c in calls]}


def test_planned_calls_add_up_per_kind_whatever_became_of_them():
    changes = [
        _change("done", "UpdateHumanUser", "DeactivateUser"),
        _change("failed", "UpdateHumanUser", "SetUserMetadata", "DeactivateUser"),
        _change("stopped", "UpdateHumanUser"),
        _change("verify", "UpdateHumanUser"),
        _change("initial", "DeactivateUser"),
        _change("reported"),
    ]
    results = [
        ChangeResult("f", "s", "done", Outcome.DONE, ["UpdateHumanUser", "DeactivateUser"]),
        ChangeResult("f", "s", "failed", Outcome.FAILED, ["UpdateHumanUser"], "SetUserMetadata: x"),
        ChangeResult("f", "s", "stopped", Outcome.NOT_SENT),
        ChangeResult("f", "s", "verify", Outcome.FAILED, [], "verify: e-mail differs"),
        ChangeResult("f", "s", "initial", Outcome.DONE, ["LockUser"]),  # ZITADEL refused to deactivate
        ChangeResult("f", "s", "reported", Outcome.DONE),
    ]
    report = SyncReport(results, 0.2, 9, planned=planned_calls(changes))
    kinds, locked_instead = report.tally()
    as_tuples = {k: (t.planned, t.confirmed, t.failed, t.not_sent) for k, t in kinds.items()}
    assert as_tuples == {
        "DeactivateUser": (3, 2, 0, 1),
        "SetUserMetadata": (1, 0, 1, 0),
        "UpdateHumanUser": (4, 2, 1, 1),
    }
    assert locked_instead == 1
    for planned, confirmed, failed, not_sent in as_tuples.values():
        assert planned == confirmed + failed + not_sent
    table = report.table().splitlines()
    assert table[0] == "changes: users 6, done 3, failed 2, requests 9, 0.2 s  FAILED"
    assert table[1] == "  calls planned 8 = confirmed 4 + failed 2 + not sent 2"
    assert "  locked instead of deactivated (initial users): 1" in table


def test_a_push_without_bodies_prints_no_body_table_and_verify_no_org_table():
    report = PushReport([], 0.1, "out/results", None, CallStats(requests=2), sync=SyncReport([], 0.1, 2))
    lines = report.table().splitlines()
    assert lines[0] == "bodies: none to send"
    assert not any(line.startswith(("body ", "total ", "-")) for line in lines)
    verify = VerifyReport(orgs=[])
    assert not any(line.startswith(("org ", "-")) for line in verify.table().splitlines())
    with_body = PushReport(
        [BodyResult(0, "b1", "s", 1, status="done", created=["u"])], 0.1, "r", None, CallStats()
    )
    assert with_body.table().splitlines()[0].startswith("body ")


def test_summary_rows_and_accounting_agree_on_a_sync_night():
    # Keycloak: 9 read, 2 new written (1 with a password), 5 compared (5 with one), 1 dead letter,
    # 1 disabled user new to ZITADEL (dead-lettered too).
    counts = {
        "keycloak.users_read": 9,
        "users_written": 2,
        "users_with_password": 1,
        "sync.rows_not_imported": 5,
        "sync.compared_with_password": 5,
        "sync.rows_rejected": 1,
        "dead_letter.keycloak-user.disabled": 1,
        "dead_letter.keycloak-user.missing-email": 1,
        "keycloak.with_password.pbkdf2-sha256": 6,
        "keycloak.without_password": 2,
    }
    holds, text = keycloak_invariant(counts)
    assert holds, text
    assert text == (
        "users read 9 = written 2 + compared with the state 5 + dead-lettered 2; "
        "converted 8 = written 2 + compared with the state 5 + duplicates 0 + disabled, not in ZITADEL yet 1"
    )
    assert users_lines(counts) == [
        ("users written", 2),
        ("  with password", 1),
        ("  without password", 1),
        ("users compared with the state (in ZITADEL)", 5),
        ("  with password", 5),
        ("  without password", 0),
    ]
    # Without --state the rows are the ones every migrate printed.
    assert [label for label, _ in users_lines({"users_written": 3})] == [
        "users written",
        "  with password",
        "  without password",
    ]


# ---------------------------------------------------------------------------------------------
# Three nights end to end


def _profile(n: int, **extra) -> dict:
    user = {
        "user_id": _uid(n),
        "email": f"user{n}@example.com",
        "email_verified": True,
        "given_name": f"Given{n}",
        "family_name": f"Family{n}",
        "name": f"Given{n} Family{n}",
    }
    user.update(extra)
    return user


def _export(folder: Path, profiles: list[dict], hashes: dict[int, str]) -> tuple[Path, Path]:
    folder.mkdir(parents=True)
    users, passwords = folder / "users.json", folder / "passwords.json"
    users.write_text("".join(json.dumps(p) + "\n" for p in profiles))
    records = [
        {"_id": {"$oid": f"{n:024d}"}, "email": f"user{n}@example.com", "passwordHash": h}
        for n, h in hashes.items()
    ]
    passwords.write_text("".join(json.dumps(r) + "\n" for r in records))
    return users, passwords


def _summary(out: str) -> list[tuple[str, int]]:
    """The migrate summary's rows (label, number), in order, up to the accounting line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("zitadel-beam migrate"))
    end = next(i for i, line in enumerate(lines) if line.startswith("accounting:"))
    return [(m.group(1), int(m.group(2).replace(",", ""))) for m in map(_ROW.match, lines[start:end]) if m]


def _block(rows: list[tuple[str, int]], label: str) -> tuple[int, dict[str, int]]:
    """A row's value and its indented detail rows."""
    index = [r[0] for r in rows].index(label)
    details: dict[str, int] = {}
    for detail, value in rows[index + 1 :]:
        if not detail.startswith("  "):
            break
        details[detail.strip()] = value
    return rows[index][1], details


def _check_migrate_summary(out: str) -> dict[str, int]:
    """Every count of one migrate summary against the others; returns the planned calls by kind."""
    rows = _summary(out)
    assert all(value >= 0 for _, value in rows), rows
    accounting = next(_ACCOUNTING.match(line) for line in out.splitlines() if line.startswith("accounting:"))
    assert accounting is not None and out.count("[ok]") >= 1
    profiles, written, compared, dead = (int(g or 0) for g in accounting.groups())
    users_written, split = _block(rows, "users written")
    assert users_written == written and split["with password"] + split["without password"] == written
    if compared:
        in_state, split = _block(rows, "users compared with the state (in ZITADEL)")
        assert in_state == compared and split["with password"] + split["without password"] == compared
    else:
        assert "users compared with the state (in ZITADEL)" not in dict(rows)
    assert profiles == written + compared + dead
    if "sync: calls planned (the change files)" not in dict(rows):
        return {}
    planned, kinds = _block(rows, "sync: calls planned (the change files)")
    assert sum(kinds.values()) == planned
    values = dict(rows)
    assert values["sync: new (to bodies)"] == written
    assert values["sync: unchanged (nothing sent)"] + values["sync: changed"] <= compared
    blocking = (
        values["sync: to deactivate (blocked at the source)"]
        + values["sync: to lock (blocked at the source, initial users)"]
    )
    removals = sum(v for k, v in values.items() if k.startswith("sync: gone from the export: to "))
    assert kinds.get("DeactivateUser", 0) + kinds.get("LockUser", 0) == blocking + removals
    return kinds


def _check_push_report(out: str, planned: dict[str, int]) -> dict[str, tuple[int, int, int, int]]:
    """The push's call lines add up, kind by kind, and match what migrate planned."""
    kinds = {
        m.group(1): tuple(int(g) for g in m.groups()[1:]) for m in map(_KIND.match, out.splitlines()) if m
    }
    total = next(m for m in map(_CALLS.match, out.splitlines()) if m)
    assert {k: v[0] for k, v in kinds.items()} == planned
    for kind_planned, confirmed, failed, not_sent in kinds.values():
        assert kind_planned == confirmed + failed + not_sent
    sums = [sum(v[i] for v in kinds.values()) for i in range(4)]
    assert [int(g) for g in total.groups()] == sums
    return kinds  # type: ignore[return-value]


def _changes(out_dir: Path) -> dict[str, list[str]]:
    manifest = json.loads((out_dir / "importBody.manifest.json").read_text())
    calls: dict[str, list[str]] = {}
    for entry in manifest["sync"]["changes"]:
        for line in (out_dir / entry["path"]).read_text().splitlines():
            change = json.loads(line)
            calls[change["userId"]] = [c["call"] for c in change["calls"]]
    return calls


def test_migrate_sync_and_push_summaries_add_up_and_initial_users_are_planned_locked(tmp_path, capsys):
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    out_dir = tmp_path / "out"
    hashed = hash_pool(1)[0]
    # 5: an unverified e-mail (initial); 6: no password record (initial); the rest are active.
    day1 = [_profile(n) for n in (1, 2, 3, 4, 6)] + [_profile(5, email_verified=False)]
    day1_hashes = {n: hashed for n in (1, 2, 3, 4, 5)}

    with ZitadelServer(tokens={PAT}) as server:

        def migrate(night: int, profiles: list[dict], hashes: dict[int, str], *extra: str) -> str:
            users, passwords = _export(tmp_path / f"export-{night}", profiles, hashes)
            args = ["migrate", "auth0", f"--org={ORG}", f"--users={users}", f"--passwords={passwords}"]
            args += [f"--output={out_dir / 'importBody.json'}", f"--state={tmp_path / 'state'}", *extra]
            assert main(args) == 0, capsys.readouterr()
            return capsys.readouterr().out

        def push(status: int = 0) -> str:
            manifest = out_dir / "importBody.manifest.json"
            args = ["push", f"--url={server.url}", f"--manifest={manifest}", f"--token-file={token_file}"]
            assert main([*args, "--verify"]) == status, capsys.readouterr()
            return capsys.readouterr().out

        # Night 1: everybody imported (migrate pushes).
        night1 = migrate(1, day1, day1_hashes, f"--push-url={server.url}", f"--token-file={token_file}")
        assert _check_migrate_summary(night1) == {}
        assert dict(_summary(night1))["users written"] == 6
        states = server.state.user_states
        assert (states[_uid(5)], states[_uid(6)], states[_uid(1)]) == ("initial", "initial", "active")

        # Night 2: 1 renamed and blocked, 2 and 5 blocked, 3 and 6 gone, 7 new, 8 new and blocked
        # (--include-blocked; unverified: initial once imported). User 1 also takes the user name
        # user 4 holds: ZITADEL refuses its update, so its DeactivateUser is not sent.
        day2 = [
            _profile(1, family_name="Renamed", username="user4@example.com", blocked=True),
            _profile(2, blocked=True),
            _profile(4),
            _profile(5, email_verified=False, blocked=True),
            _profile(7),
            _profile(8, email_verified=False, blocked=True),
        ]
        hashes2 = {n: hashed for n in (1, 2, 4, 5, 7, 8)}
        night2 = migrate(
            2,
            day2,
            hashes2,
            "--on-removed=deactivate",
            "--max-removals=10",
            "--max-blocks=10",
            "--include-blocked",
        )
        planned = _check_migrate_summary(night2)
        rows = dict(_summary(night2))
        assert rows["users written"] == 2 and rows["users compared with the state (in ZITADEL)"] == 4
        assert rows["sync: to deactivate (blocked at the source)"] == 2
        assert rows["sync: to lock (blocked at the source, initial users)"] == 2
        assert rows["sync: gone from the export: to deactivate"] == 1
        assert rows["sync: gone from the export: to lock (initial users)"] == 1
        assert planned == {"DeactivateUser": 3, "LockUser": 3, "UpdateHumanUser": 1}
        # The change files name the call that is sent.
        calls = _changes(out_dir)
        assert calls[_uid(2)] == ["DeactivateUser"] and calls[_uid(3)] == ["DeactivateUser"]
        assert calls[_uid(5)] == calls[_uid(6)] == calls[_uid(8)] == ["LockUser"]
        pushed2 = push(status=1)
        kinds = _check_push_report(pushed2, planned)
        assert kinds == {
            "DeactivateUser": (3, 2, 0, 1),
            "LockUser": (3, 3, 0, 0),
            "UpdateHumanUser": (1, 0, 1, 0),
        }
        assert "locked instead" not in pushed2 and pushed2.startswith("body ")
        states = server.state.user_states
        assert [states[_uid(n)] for n in (1, 2, 3, 5, 6, 8)] == [
            "active",
            "inactive",
            "inactive",
            "locked",
            "locked",
            "locked",
        ]
        assert not [
            p
            for _, p in server.v2.calls
            if p.endswith("/deactivate") and any(_uid(n) in p for n in (5, 6, 8))
        ]

        # Night 3: 2 and 5 unblocked, nobody new, 8 still blocked; 3 and 6 still gone (one
        # deactivated, one locked).
        day3 = [
            _profile(1, family_name="Renamed"),
            _profile(2),
            _profile(4),
            _profile(5, email_verified=False),
            _profile(7),
            _profile(8, email_verified=False, blocked=True),
        ]
        night3 = migrate(3, day3, hashes2, "--on-removed=deactivate", "--max-removals=10", "--max-blocks=10")
        planned = _check_migrate_summary(night3)
        rows = dict(_summary(night3))
        assert rows["users written"] == 0 and rows["users compared with the state (in ZITADEL)"] == 6
        assert rows["sync: gone from the export: already deactivated"] == 1
        assert rows["sync: gone from the export: already locked"] == 1
        # User 1 gave the name back at the source: its rename is sent again, it is not blocked now.
        assert planned == {"ReactivateUser": 1, "UnlockUser": 1, "UpdateHumanUser": 1}
        pushed3 = push()
        _check_push_report(pushed3, planned)
        # No body was sent: no body table, no org table.
        assert pushed3.startswith("bodies: none to send")
        assert not any(line.startswith(("body ", "org ", "total ", "---")) for line in pushed3.splitlines())
        assert (states[_uid(2)], states[_uid(5)], states[_uid(8)]) == ("active", "initial", "locked")


def test_a_keycloak_realm_of_another_project_syncs_with_summaries_that_add_up(tmp_path, capsys):
    """strimzi's realm (tests/data/README.md): alice and bob (pbkdf2-sha256), zero (a plaintext
    password), 22 service accounts. Night 1 imports the three (bob's e-mail made unverified: initial);
    night 2 disables alice and bob and drops zero, with --on-removed=deactivate."""
    realm = json.loads((REALWORLD / "keycloak" / "strimzi-kafka-authz-realm.json").read_text())
    by_name = {u["username"]: u for u in realm["users"]}
    by_name["bob"]["emailVerified"] = False
    token_file = tmp_path / "token"
    token_file.write_text(PAT)

    with ZitadelServer(tokens={PAT}, hash_verifiers=("bcrypt", "pbkdf2")) as server:

        def night(number: int, *extra: str) -> str:
            path = tmp_path / f"realm-{number}.json"
            path.write_text(json.dumps(realm))
            args = ["migrate", "keycloak", f"--org={ORG}", f"--realm={path}", "--allow-plaintext-passwords"]
            args += [f"--output={tmp_path / 'out' / 'importBody.json'}", f"--state={tmp_path / 'state'}"]
            args += [
                f"--push-url={server.url}",
                f"--token-file={token_file}",
                f"--zitadel-config={VERIFIERS}",
                *extra,
            ]
            assert main(args) == 0, capsys.readouterr()
            return capsys.readouterr().out

        first = night(1)
        assert _check_migrate_summary(first) == {}
        assert dict(_summary(first))["users written"] == 3, first
        ids = {user["userName"]: uid for uid, (_, user) in server.state.users.items()}
        assert server.state.user_states[ids["bob"]] == "initial"

        by_name["alice"]["enabled"] = by_name["bob"]["enabled"] = False
        realm["users"] = [u for u in realm["users"] if u["username"] != "zero"]
        second = night(2, "--on-removed=deactivate", "--max-removals=10", "--max-blocks=10")
        planned = _check_migrate_summary(second)
        rows = dict(_summary(second))
        assert rows["users written"] == 0 and rows["users compared with the state (in ZITADEL)"] == 2
        assert planned == {"DeactivateUser": 2, "LockUser": 1}
        push_part = second[second.index("changes: users") :]
        kinds = _check_push_report(push_part, planned)
        assert kinds == {"DeactivateUser": (2, 2, 0, 0), "LockUser": (1, 1, 0, 0)}
        assert "locked instead" not in second
        assert not any(line.startswith(("body ", "total ")) for line in second.splitlines())
        states = server.state.user_states
        assert [states[ids[n]] for n in ("alice", "bob", "zero")] == ["inactive", "locked", "inactive"]


def _forget_initial_marks(state: Path) -> int:
    """Rewrite the committed shards as a state written before records marked initial users."""
    pointer = json.loads((state / "CURRENT.json").read_text())
    dropped = 0
    for shard in pointer["shards"].values():
        path = state / shard
        records = decode_shard(path.read_bytes())
        dropped += sum(record.pop(INITIAL, None) is not None for record in records.values())
        path.write_bytes(encode_shard(records.values()))
    return dropped


def test_an_initial_user_an_older_state_did_not_mark_is_locked_instead_and_named_so(tmp_path, capsys):
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    hashed = hash_pool(1)[0]
    out_dir, state = tmp_path / "out", tmp_path / "state"

    with ZitadelServer(tokens={PAT}) as server:

        def night(number: int, profiles: list[dict], *extra: str) -> str:
            users, passwords = _export(
                tmp_path / f"export-{number}", profiles, {1: hashed, 2: hashed, 3: hashed}
            )
            args = ["migrate", "auth0", f"--org={ORG}", f"--users={users}", f"--passwords={passwords}"]
            args += [
                f"--output={out_dir / 'importBody.json'}",
                f"--state={state}",
                "--max-removals=10",
                "--max-blocks=10",
            ]
            args += [f"--push-url={server.url}", f"--token-file={token_file}", *extra]
            assert main(args) == 0, capsys.readouterr()
            return capsys.readouterr().out

        night(1, [_profile(1), _profile(2, email_verified=False), _profile(3)])
        assert server.state.user_states[_uid(2)] == "initial"
        assert _forget_initial_marks(state) == 1
        # Night 2: both blocked. The state does not know 2 is initial: DeactivateUser is planned,
        # ZITADEL refuses it, push locks the user and says so; the calls still add up.
        second = night(
            2, [_profile(1, blocked=True), _profile(2, email_verified=False, blocked=True), _profile(3)]
        )
        planned = _check_migrate_summary(second)
        assert planned == {"DeactivateUser": 2}
        kinds = _check_push_report(second[second.index("changes: users") :], planned)
        assert kinds == {"DeactivateUser": (2, 2, 0, 0)}
        assert "  locked instead of deactivated (initial users): 1" in second.splitlines()
        assert (server.state.user_states[_uid(1)], server.state.user_states[_uid(2)]) == (
            "inactive",
            "locked",
        )
        # Night 3: both gone from the export: the summary names each as the target holds it.
        third = night(3, [_profile(3)], "--on-removed=deactivate")
        assert _check_migrate_summary(third) == {}
        rows = dict(_summary(third))
        assert rows["sync: gone from the export: already deactivated"] == 1
        assert rows["sync: gone from the export: already locked"] == 1


def test_users_with_an_unknown_outcome_stay_listed_until_a_push_settles_them():
    results = [
        ChangeResult("f", "s", "settled", Outcome.DONE),
        ChangeResult(
            "f", "s", "read-back-then-refused", Outcome.FAILED, ["UpdateHumanUser"], "SetUserMetadata: x"
        ),
        ChangeResult("f", "s", "new", Outcome.FAILED, [], "UpdateHumanUser: no answer", unknown_at=20.0),
        ChangeResult("f", "s", "not-reached", Outcome.NOT_SENT),
        ChangeResult("f", "s", "gone-again", Outcome.NOT_SENT, unknown_at=3.0),
    ]
    before = {"settled": 1.0, "read-back-then-refused": 1.5, "not-reached": 2.0, "gone-again": 3.0}
    report = SyncReport(results, 0.1, 5, unknown_before=before)
    assert report.still_unknown() == {"new": 20.0, "not-reached": 2.0, "gone-again": 3.0}
    assert "outcome unknown (read back before sending again): 3 user(s)" in report.table()
    assert "outcome unknown" not in SyncReport(results[:1], 0.1, 1, unknown_before={}).table()


def test_a_change_of_unknown_outcome_is_named_unknown_with_its_file_not_failed():
    changes = [
        _change("refused", "UpdateHumanUser"),
        _change("lost", "UpdateHumanUser", "LockUser"),
    ]
    results = [
        ChangeResult("changes-p00000.ndjson", "s", "refused", Outcome.FAILED, [], "UpdateHumanUser: invalid"),
        ChangeResult(
            "changes-p00001.ndjson",
            "s",
            "lost",
            Outcome.FAILED,
            ["UpdateHumanUser"],
            "LockUser: x",
            unknown_at=5.0,
        ),
    ]
    parts = SyncReport(results, 0.1, 4, planned=planned_calls(changes)).failure_parts()
    assert parts == [
        "1 change(s) of 1 user(s) not confirmed",
        "1 user(s) with an unknown outcome, not failed: the next run reads them back before sending "
        "(in changes-p00001.ndjson)",
    ]
    only_lost = SyncReport(results[1:], 0.1, 2, planned=planned_calls(changes[1:])).failure_parts()
    assert len(only_lost) == 1 and "not confirmed" not in only_lost[0]
