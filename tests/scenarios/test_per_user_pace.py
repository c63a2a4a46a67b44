"""The push's limiter (transforms/zitadel_api/limiter.py) on the per-user calls: the user service v2
create path (transforms/push/user_v2_push.py) and a scheduled sync's user-service calls
(transforms/sync/apply.py), against the stand-in's capacity model (tests/standins/capacity.py)
over real sockets. With no concurrency flag every user lands exactly once with no failure and a
rate limit is met only briefly; ``--concurrency N`` is exactly N users at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zitadel_user_v2_create as creation
from zitadel_fixtures import PAT, fast_client, hash_pool, write_manifest
from zitadel_server import ZitadelServer
from zitadel_user_v2_create import CREATE_PATHS

from pipeline.cli import main
from transforms.output.manifest import load_manifest
from transforms.push import engine as push_engine
from transforms.push.api_choice import USER_V2
from transforms.push.user_v2_push import LimiterRunner
from transforms.sync.night import push_night
from transforms.zitadel_api.client import call_kind
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.limiter import Limiter

ORG = "123"
ORG_TOKEN = "org-token-8Hw2ManagerOfOneOrg0123456789"
ORG_CREDS = Credentials("token", token=ORG_TOKEN)
SYNC_ORG = "123456789"


@pytest.fixture(name="v5")
def v5_fixture():
    """A server without the admin API; ``ORG_TOKEN`` may manage org 123's users only."""
    server = ZitadelServer(tokens={PAT}).start()
    server.admin_api = False
    creation.add_org(server, ORG)
    creation.add_org_token(server, ORG_TOKEN, ORG)
    yield server
    server.stop()


def _created_calls(server: ZitadelServer) -> int:
    return sum(1 for path, status in server.requests if path in CREATE_PATHS and status == 200)


def _refused_late(server: ZitadelServer, after: float) -> tuple[int, int]:
    """The refusals (429/503) and arrivals later than ``after`` seconds into the run."""
    summary = server.capacity.summary()
    arrivals = summary["arrivals"]
    start = arrivals[0] if arrivals else 0.0
    late = [t for t in arrivals if t - start > after]
    refused = [t for t, _ in server.capacity.refusals if t - start > after]
    return len(refused), len(late)


def test_calls_of_one_kind_share_a_kind_whatever_their_ids():
    assert call_kind("GET", "/v2/users/123") == call_kind("GET", "/v2/users/456") == "GET /v2/users/*"
    assert call_kind("POST", "/v2/users/human") == "POST /v2/users/human"
    assert call_kind("POST", "/v2/users/9/deactivate") == "POST /v2/users/*/deactivate"


def test_the_limiter_runner_keeps_the_items_order_and_frees_every_slot():
    limiter = Limiter(fixed=3)
    assert LimiterRunner(limiter).run(lambda x: x * 2, list(range(40))) == [x * 2 for x in range(40)]
    assert limiter.stats().in_flight == 0


def test_v2_creation_adapts_and_lands_every_user_once_under_a_rate_limit(v5, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=240, bodies=2, metadata=False)
    v5.capacity.configure(workers=16, per_user_cost=0.004, rate=60.0, burst=6)
    client = fast_client(v5.url, ORG_CREDS, max_attempts=10)
    report = push_engine.push_manifest(
        load_manifest(str(manifest)),
        v5.url,
        ORG_CREDS,
        progress=False,
        client=client,
        api=USER_V2,
        concurrency=None,
    )
    assert report.ok and report.failed == 0 and report.created + report.present == 240
    assert v5.user_ids(ORG) == set(ids) and _created_calls(v5) == report.created
    assert v5.capacity.peak_busy > 1  # it went past one user at a time
    assert v5.capacity.refused[429] > 0  # the limit was met
    refused, late = _refused_late(v5, after=1.0)
    assert late > 0 and refused <= 0.05 * late, v5.capacity.refused  # and only briefly


def test_v2_creation_backs_off_a_full_queue_and_lands_every_user_once(v5, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=300, bodies=1, metadata=False)
    v5.capacity.configure(workers=2, per_user_cost=0.01, queue=2)  # 503 beyond 2 waiting
    client = fast_client(v5.url, ORG_CREDS, max_attempts=10)
    report = push_engine.push_manifest(
        load_manifest(str(manifest)),
        v5.url,
        ORG_CREDS,
        progress=False,
        client=client,
        api=USER_V2,
        concurrency=None,
    )
    assert report.ok and report.failed == 0 and report.created + report.present == 300
    assert v5.user_ids(ORG) == set(ids) and _created_calls(v5) == report.created
    assert report.limiter is not None and report.limiter.limit <= 8  # it did not run away
    assert v5.capacity.refused[503] > 0  # the queue did fill: the limiter met it
    # A queue of 2 gives no rising time to read before it refuses: each probe past it costs a 503
    # (about 7% of the calls here), each halves the limit; none fails a user.
    refused, late = _refused_late(v5, after=0.5)
    assert late > 0 and refused <= 0.15 * late, v5.capacity.refused


def test_v2_concurrency_n_is_exactly_n_users_at_once(v5, tmp_path, monkeypatch, capsys):
    manifest, ids = write_manifest(tmp_path, users=60, bodies=2, metadata=False)
    v5.capacity.configure(workers=16, per_user_cost=0.01)
    monkeypatch.setenv("ZITADEL_TOKEN", ORG_TOKEN)
    rc = main(["push", "--url", v5.url, "--manifest", str(manifest), "--concurrency", "3", "--quiet"])
    assert rc == 0, capsys.readouterr().err
    assert v5.user_ids(ORG) == set(ids) and v5.capacity.peak_busy == 3


# -- a scheduled sync's user-service calls ------------------------------------------------------


def _export(folder: Path, family: str, users: int) -> list[str]:
    folder.mkdir(parents=True)
    hashes = hash_pool(1)
    profiles = [
        {"user_id": f"auth0|{n:024d}", "email": f"user{n}@example.com", "email_verified": True,
         "given_name": f"Given{n}", "family_name": f"{family}{n}", "name": f"Given{n} {family}{n}"}
        for n in range(1, users + 1)
    ]  # fmt: skip
    passwords = [
        {"_id": {"$oid": f"{n:024d}"}, "email": f"user{n}@example.com", "passwordHash": hashes[0]}
        for n in range(1, users + 1)
    ]
    (folder / "users.json").write_text("".join(json.dumps(p) + "\n" for p in profiles))
    (folder / "passwords.json").write_text("".join(json.dumps(p) + "\n" for p in passwords))
    return [f"--users={folder / 'users.json'}", f"--passwords={folder / 'passwords.json'}"]


def _night(tmp: Path, n: int, family: str, users: int, *push: str) -> Path:
    output = tmp / f"out-{n}" / "importBody.json"
    args = ["migrate", "auth0", f"--org={SYNC_ORG}", f"--output={output}", f"--state={tmp / 'state'}"]
    assert main(args + _export(tmp / f"export-{n}", family, users) + list(push)) == 0
    return output.parent / "importBody.manifest.json"


def _last_names(server: ZitadelServer) -> list[str]:
    with server.state.lock:
        return sorted(user["profile"]["lastName"] for _, user in server.state.users.values())


def _sync_night(server: ZitadelServer, tmp_path: Path, users: int) -> Path:
    """Night 1 imports ``users`` users; night 2's manifest renames every one of them."""
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    _night(tmp_path, 1, "Family", users, f"--push-url={server.url}", f"--token-file={token_file}")
    return _night(tmp_path, 2, "New", users)


def test_a_sync_night_adapts_and_lands_every_change_once_under_a_rate_limit(tmp_path):
    with ZitadelServer(tokens={PAT}) as server:
        manifest = _sync_night(server, tmp_path, 150)
        server.capacity.configure(workers=16, per_user_cost=0.004, rate=60.0, burst=6)
        client = fast_client(server.url, Credentials("token", token=PAT), max_attempts=10)
        report = push_night(
            load_manifest(str(manifest)), server.url, Credentials("token", token=PAT), progress=False, client=client,
            concurrency=None,
        )  # fmt: skip
        assert report.ok and report.sync is not None and report.sync.ok, report.sync and report.sync.table()
        assert _last_names(server) == sorted(f"New{n}" for n in range(1, 151))
        updates = [p for p, status in server.requests if p.startswith("/v2/users/human/") and status == 200]
        assert len(updates) == 150 and len(set(updates)) == 150  # each user's change landed once
        assert server.capacity.peak_busy > 1
        refused, late = _refused_late(server, after=1.0)
        assert late > 0 and refused <= 0.05 * late, server.capacity.refused


def test_a_sync_night_with_concurrency_n_runs_exactly_n_users_at_once(tmp_path, monkeypatch, capsys):
    with ZitadelServer(tokens={PAT}) as server:
        manifest = _sync_night(server, tmp_path, 40)
        server.capacity.configure(workers=16, per_user_cost=0.01)
        monkeypatch.setenv("ZITADEL_TOKEN", PAT)
        rc = main(["push", "--url", server.url, "--manifest", str(manifest), "--concurrency", "3", "--quiet"])
        assert rc == 0, capsys.readouterr().err
        assert _last_names(server) == sorted(f"New{n}" for n in range(1, 41))
        assert server.capacity.peak_busy == 3
