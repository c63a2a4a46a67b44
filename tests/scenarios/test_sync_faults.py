"""Two scheduled nights under faults, and the night after one that gave up.

Real CLI, real sockets, the test server answering as ZITADEL does. Day 1 imports an Auth0 export;
day 2 changes it in every way a live source does (names, hashes, e-mails and their verified
flags, phones, metadata; users blocked, unblocked, removed and new). Each night of the faulty
run meets 30% of its calls failing with one kind of fault:

- ``503``: refused before anything was applied;
- ``drop``: the connection closed without an answer (the client cannot tell whether it landed);
- ``504_after``: applied, then a gateway's 504 (it landed, the answer lost);
- ``deadline_after``: applied, then ZITADEL's own HTTP 504 ``{"code": 4, "message": "context
  deadline exceeded"}`` (the request's deadline passed as the command committed);
- ``mixed``: ``503``, ``drop`` and ``deadline_after`` at random in one run.

The same two days run on a server without faults. Both targets must end holding the same users,
states and metadata as a fresh import of day 2 (blocked and removed users apart, which an import
cannot carry: they are inactive or locked), and their event logs must hold the same effects:
a change that landed is never sent again (one more ``password.changed`` would be one more event,
and a re-sent ``LockUser`` a refusal).
"""

from __future__ import annotations

import collections
import re

import pytest
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline.cli import main
from tests.scenarios.test_sync_nights import Day, _fresh_import, _held, _password, _profile
from tests.scenarios.test_sync_unknown import age_events
from transforms.sync import read_back

USERS = 60  # day 1: 1..60; the last tenth (55..60) are blocked at the source on day 1; day 2 adds 6


def _blocked_from(users: int) -> int:
    """The first of day 1's users blocked at the source (the last tenth)."""
    return users - users // 10 + 1


_PATHS = ("/v2/users/*", "/management/v1/*", "/admin/v1/import")
# Answers that mean "the effect you asked for is already there": a change sent after it landed.
_ALREADY = re.compile(
    r"AlreadyInactive|NotInactive|ShouldBeActiveOrInitial|NotLocked|AlreadyLocked|User\.NotFound|"
    r"KeyNotExisting|ExternalIDP\.AlreadyExists|Phone\.NotFound|UserGrant\.AlreadyExists"
)
_EFFECTS = (
    "user.human.password.changed",
    "user.deactivated",
    "user.reactivated",
    "user.locked",
    "user.unlocked",
    "user.removed",
    "user.metadata.removed",
    "user.human.phone.removed",
)


def _uid(n: int) -> str:
    return f"auth0|{n:024d}"


def _day1(hashes: list[str], users: int = USERS) -> tuple[list[dict], list[dict]]:
    profiles = []
    for n in range(1, users + 1):
        extra: dict = {"app_metadata": {"plan": "gold"}}
        if n % 10 == 8:
            extra["phone_number"] = f"+4179123{n:04d}"
            extra["phone_verified"] = True
        if n % 10 == 9:
            extra["email_verified"] = False  # an initial user at ZITADEL
        if n >= _blocked_from(users):
            extra["blocked"] = True
        profiles.append(_profile(n, **extra))
    return profiles, [_password(n, hashes[n % 2]) for n in range(1, users + 1)]


def _day2(hashes: list[str], users: int = USERS) -> tuple[list[dict], list[dict]]:
    """Every kind of change a live source makes in a day, spread over the users."""
    profiles, passwords = [], []
    for n in range(1, users + users // 10 + 1):  # a tenth more: day 2's new users
        extra: dict = {"app_metadata": {"plan": "gold"}}
        if n % 10 == 8:
            extra["phone_number"] = f"+4179123{n:04d}"
            extra["phone_verified"] = True
        if n % 10 == 9:
            extra["email_verified"] = False
        kind = n % 10
        if n >= _blocked_from(users):
            pass  # new users; day 1's blocked users are unblocked
        elif kind == 0:
            continue  # removed from the export
        elif kind == 1:
            extra["family_name"] = f"Renamed{n}"
            extra["name"] = f"Given{n} Renamed{n}"
        elif kind == 3:
            extra["email"] = f"moved{n}@example.com"
            extra["email_verified"] = n % 20 != 3  # half verified, half not
        elif kind in (4, 9):
            extra["blocked"] = True  # an active user deactivated, an initial one locked
        elif kind == 6:
            extra["app_metadata"] = {"plan": "platinum", "team": f"t{n}"}
        elif kind == 7:
            extra["phone_number"] = f"+4179555{n:04d}"
            extra["phone_verified"] = False
        elif kind == 8:
            extra["phone_number"] = None  # the phone removed at the source
            extra["phone_verified"] = None
        profile = _profile(n, **extra)
        if "email" in extra:
            profile["email"] = extra["email"]
        profiles.append(profile)
        password = hashes[2 + n % 2] if kind in (2, 5) or n > users else hashes[n % 2]
        if "email" in extra:
            passwords.append({**_password(n, password), "email": extra["email"]})
        else:
            passwords.append(_password(n, password))
    return profiles, passwords


_NIGHT_FLAGS = (
    "--include-blocked",
    "--on-removed=deactivate",
    "--max-removals=20%",
    "--max-blocks=25%",
    "--quiet",
)


def _effects(server: ZitadelServer) -> collections.Counter:
    """Each user's effects: its events, and its ``SetUserMetadata`` calls that were applied (an
    import body sent again after a lost answer sets its users' metadata again, as ZITADEL's import
    does; only the change calls must never repeat what landed)."""
    with server.state.lock:
        effects = collections.Counter(
            (e.event_type, e.aggregate_id) for e in server.state.events if e.event_type in _EFFECTS
        )
    for method, path in server.v2.calls:
        if method == "POST" and path.endswith("/metadata"):
            effects[("SetUserMetadata", path)] += 1
    return effects


def _already_answers(server: ZitadelServer) -> list[tuple[str, str]]:
    """Calls the server refused because their effect was already there."""
    return [(path, message) for path, message in server.refusals if _ALREADY.search(message)]


def _two_nights(server: ZitadelServer, tmp_path, fault: str | None) -> list[int]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    night = Day(tmp_path, server, token_file)
    hashes = hash_pool(4)
    rcs = []
    if fault:
        server.faults.randomize(0.3, kinds=tuple(fault.split("+")), paths=_PATHS, seed=37)
    rcs.append(night.run(*_day1(hashes), *_NIGHT_FLAGS))
    age_events(server)  # day 1 was yesterday
    rcs.append(night.run(*_day2(hashes), *_NIGHT_FLAGS))
    server.faults.clear()
    return rcs


def _assert_holds_day2(server: ZitadelServer, tmp_path) -> None:
    hashes = hash_pool(4)
    profiles, passwords = _day2(hashes)
    held = _held(server)
    states = server.state.user_states
    blocked = {p["user_id"] for p in profiles if p.get("blocked")}
    removed = {_uid(n) for n in range(1, _blocked_from(USERS)) if n % 10 == 0}
    kept = [(p, pw) for p, pw in zip(profiles, passwords, strict=True) if p["user_id"] not in blocked]
    fresh = _fresh_import(tmp_path / "fresh", [p for p, _ in kept], [pw for _, pw in kept])
    for uid, expected in fresh.items():
        assert held[uid] == expected, uid
        assert states[uid] in ("active", "initial"), (uid, states[uid])
    for uid in blocked:
        assert states[uid] in ("inactive", "locked"), (uid, states[uid])
    for uid in removed:
        assert states[uid] == "inactive", (uid, states[uid])


@pytest.fixture(scope="module")
def expected(tmp_path_factory) -> collections.Counter:
    """The effects of the two nights on a server without faults."""
    with ZitadelServer(tokens={PAT}) as clean:
        assert _two_nights(clean, tmp_path_factory.mktemp("clean"), None) == [0, 0]
        return _effects(clean)


@pytest.mark.parametrize("fault", ["503", "drop", "504_after", "deadline_after", "503+drop+deadline_after"])
def test_two_nights_under_30_percent_faults_end_as_a_fresh_import_of_day2(tmp_path, fault, expected, capsys):
    with ZitadelServer(tokens={PAT}) as server:
        rcs = _two_nights(server, tmp_path / "faulty", fault)
        out = capsys.readouterr().out
        kinds = fault.split("+")
        fired = collections.Counter(server.faults.fired)
        for kind in kinds:  # about 25 faults in the two nights: each kind of a mix of three several times
            assert fired[kind] >= (10 if len(kinds) == 1 else 3), f"the {kind} faults did not happen: {fired}"
        assert rcs == [0, 0], out[-3000:]
        _assert_holds_day2(server, tmp_path / "faulty")
        assert _already_answers(server) == [], "a change was sent again after it had landed"
        assert _effects(server) == expected
        # The state is what the target holds: one more night sends nothing.
        calls = len(server.v2_requests)
        night = Day(tmp_path / "faulty", server, tmp_path / "faulty" / "token")
        night.runs = 2
        assert night.run(*_day2(hash_pool(4)), *_NIGHT_FLAGS) == 0
        assert len(server.v2_requests) == calls


def test_a_night_that_gives_up_half_way_then_the_next_night(tmp_path, expected, capsys, monkeypatch):
    # The stalled calls land as their client gives up: the next night need not wait a minute.
    monkeypatch.setattr(read_back, "SETTLE", 2.0)
    with ZitadelServer(tokens={PAT}) as server:
        token_file = tmp_path / "token"
        token_file.write_text(PAT)
        night = Day(tmp_path, server, token_file)
        hashes = hash_pool(4)
        assert night.run(*_day1(hashes), *_NIGHT_FLAGS) == 0
        age_events(server)
        # Half-way through day 2 the server stalls: the calls it still gets land after the client
        # gave up on them, and the night gives up.
        server.faults.silent_after(25, kind="late", path="/v2/users/*")
        capsys.readouterr()
        assert night.run(*_day2(hashes), *_NIGHT_FLAGS, push=False) == 0
        manifest = tmp_path / "out" / "importBody.manifest.json"
        push = ["push", f"--url={server.url}", f"--manifest={manifest}", f"--token-file={token_file}"]
        rc = main([*push, "--quiet", "--max-attempts=2", "--request-timeout=0.5", "--concurrency=2"])
        out = capsys.readouterr().out
        assert rc == 1, out[-3000:]
        assert "late" in server.faults.fired
        assert re.search(r"outcome unknown \(read back before sending again\): [1-9]", out), out[-3000:]
        assert "run push again" in out
        server.faults.clear()
        # The next night: same export, the server answers again.
        assert night.run(*_day2(hashes), *_NIGHT_FLAGS) == 0
        _assert_holds_day2(server, tmp_path)
        assert _already_answers(server) == [], "a change was sent again after it had landed"
        assert _effects(server) == expected


def test_the_guards_count_what_their_flags_name_on_a_keycloak_realm_of_300(tmp_path, capsys):
    """10 users gone from the realm and 10 disabled at the source, of 300: neither guard's 5%
    (15) is passed, so the night runs; 16 disabled is refused by --max-blocks, in its own words."""
    from tests.scenarios.test_sync_nights import KC_DATA, _kc_user, _keycloak_night

    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    config = KC_DATA / "zitadel-config" / "verifiers-enabled.yaml"
    with ZitadelServer(tokens={PAT}, hash_verifiers=("pbkdf2",)) as server:

        def night(users: list[dict], n: int, *extra: str) -> int:
            flags = (f"--zitadel-config={config}", "--on-removed=deactivate", "--quiet", *extra)
            return _keycloak_night(tmp_path, server.url, token_file, {"realm": "acme"}, users, n, *flags)

        assert night([_kc_user(n) for n in range(1, 301)], 1) == 0
        too_many = [_kc_user(n, enabled=n > 16) for n in range(1, 301)]
        capsys.readouterr()
        assert night(too_many, 2) == 2
        err = capsys.readouterr().err
        assert (
            "--max-blocks: refused: this run would deactivate or lock 16 users blocked at the source" in err
        )
        assert "limit of 15" in err and len(err.strip().splitlines()) == 1
        assert not any(method == "POST" for method, _ in server.v2.calls)
        # 10 gone from the realm, 10 disabled: each within its own limit.
        day2 = [_kc_user(n, enabled=n > 10) for n in range(1, 291)]
        capsys.readouterr()
        assert night(day2, 3) == 0
        out = capsys.readouterr().out
        assert re.search(r"sync: to deactivate \(blocked at the source\)\s+10\b", out), out
        states = server.state.user_states
        assert sum(states[f"kc-{n}"] == "inactive" for n in range(1, 11)) == 10
        assert sum(states[f"kc-{n}"] == "inactive" for n in range(291, 301)) == 10
        assert all(states[f"kc-{n}"] == "active" for n in range(11, 291))


def test_the_closing_line_names_what_failed_when_only_changes_failed(tmp_path, capsys):
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    hashes = hash_pool(2)
    with ZitadelServer(tokens={PAT}) as server:
        night = Day(tmp_path, server, token_file)
        pws = [_password(1, hashes[0]), _password(2, hashes[1])]
        assert night.run([_profile(1), _profile(2)], pws, "--quiet") == 0
        # Every attempt of user 1's update is refused before it is applied: the change fails.
        server.faults.inject("503", count=12, path="/v2/users/human/*")  # both of the night's tries
        capsys.readouterr()
        assert night.run([_profile(1, family_name="Changed"), _profile(2)], pws, "--quiet") == 1
        captured = capsys.readouterr()
        assert "bodies: none to send\n" in captured.out  # no body: neither ok nor FAILED
        line = [x for x in captured.err.splitlines() if x.startswith("zitadel-beam: push:")]
        assert len(line) == 1, captured.err
        assert "1 change(s) of 1 user(s) not confirmed (see " in line[0], line[0]
        assert "changes-dead-letter.ndjson" in line[0] and "not every user was created" not in line[0]
