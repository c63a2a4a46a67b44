"""``push`` through the user service v2 (transforms/push/user_v2_push.py) against the test server
without the admin API and with an org-scoped credential: created once, resumable, faults, 409s."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import zitadel_user_v2_create as creation
from repo_files import ROOT
from zitadel_fixtures import PAT, fast_client, leaked_secrets, write_manifest
from zitadel_server import FAULT_KINDS, ZitadelServer

from pipeline.cli import main
from transforms.output.manifest import load_manifest
from transforms.push import engine as push_engine
from transforms.push.api_choice import ADMIN_IMPORT, USER_V2
from transforms.push.user_v2_push import ThreadRunner
from transforms.zitadel_api.credentials import Credentials

ORG = "123"
ORG_TOKEN = "org-token-8Hw2ManagerOfOneOrg0123456789"
ORG_CREDS = Credentials("token", token=ORG_TOKEN)
REPO = str(ROOT)


@pytest.fixture(name="v5")
def v5_fixture():
    """A server without the admin API; ``ORG_TOKEN`` may manage org 123's users only."""
    server = ZitadelServer(tokens={PAT}).start()
    server.admin_api = False
    creation.add_org(server, ORG)
    creation.add_org(server, "999")
    creation.add_org_token(server, ORG_TOKEN, ORG)
    yield server
    server.stop()


def _push(manifest, server, creds=ORG_CREDS, **options):
    client = fast_client(server.url, creds, max_attempts=options.pop("max_attempts", 10))
    return push_engine.push_manifest(
        load_manifest(str(manifest)), server.url, creds, progress=False, client=client, api=USER_V2, **options
    )


def test_the_cli_picks_the_user_service_and_lands_users_as_an_import_would(v5, tmp_path, monkeypatch, capsys):
    manifest, ids = write_manifest(tmp_path, users=30, bodies=2)
    monkeypatch.setenv("ZITADEL_TOKEN", ORG_TOKEN)
    rc = main(["push", "--url", v5.url, "--manifest", str(manifest), "--concurrency", "4", "--verify"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "verify: ok, every user was added" in out  # read through ListUsers, with the org's credential
    assert "push: --api=auto: the user service v2, one call per user: the server has no admin API" in err
    assert "created 30" in err and "total" in out and leaked_secrets(out + err, [ORG_TOKEN]) == []
    assert v5.user_ids(ORG) == set(ids)
    with ZitadelServer(tokens={PAT}) as imported:
        report = push_engine.push_manifest(load_manifest(str(manifest)), imported.url, Credentials("token", token=PAT),
                                           results_dir=str(tmp_path / "admin"), progress=False,
                                           api=ADMIN_IMPORT)  # fmt: skip
        assert report.ok
        for uid in ids:
            assert creation.same_but_state(creation.stored_user(v5, uid), creation.stored_user(imported, uid))
    posts = sum(1 for path, _ in v5.requests if path == "/v2/users/new")
    rc = main(["push", "--url", v5.url, "--manifest", str(manifest)])
    assert rc == 0 and sum(1 for path, _ in v5.requests if path == "/v2/users/new") == posts


def test_permission_denied_on_the_admin_api_also_picks_the_user_service(tmp_path, monkeypatch, capsys):
    manifest, ids = write_manifest(tmp_path, users=4, bodies=1)
    with ZitadelServer(tokens={PAT}) as server:
        creation.add_org(server, ORG)
        creation.add_org_token(server, ORG_TOKEN, ORG)
        monkeypatch.setenv("ZITADEL_TOKEN", ORG_TOKEN)
        assert main(["push", "--url", server.url, "--manifest", str(manifest)]) == 0
        err = capsys.readouterr().err
        assert "the user service v2, one call per user: this credential may not use the admin API" in err
        assert server.user_ids(ORG) == set(ids) and server.state.import_calls == 0
        monkeypatch.setenv("ZITADEL_TOKEN", PAT)
        again = tmp_path / "again"
        manifest2, _ = write_manifest(again, users=2, bodies=1, prefix="k|")
        assert main(["push", "--url", server.url, "--manifest", str(manifest2)]) == 0
        assert "--api=auto" not in capsys.readouterr().err  # the admin import, as before
        assert server.state.import_calls == 1


def test_faults_create_every_user_exactly_once(v5, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=120, bodies=3)
    faults = v5.faults
    faults.slow_seconds = 0.5
    for kind in ("429", "502", "503", "504", "drop", "drop_after", "504_after"):
        faults.inject(kind, path="/v2/users/new")
    faults.randomize(0.3, kinds=[k for k in FAULT_KINDS if k != "deadline"], paths=("/v2/users*",), seed=4)
    report = _push(manifest, v5, concurrency=4, request_timeout=0.3, max_attempts=12)
    assert report.ok, report.table()
    assert report.created + report.present == 120 and report.failed == 0
    assert {"504_after", "drop_after"} <= set(faults.fired)
    assert v5.added_event_counts() == {uid: 1 for uid in ids}
    assert sum(b.present_after_lost_answer for b in report.bodies) == report.present


def test_a_user_in_another_org_fails_with_the_servers_message(v5, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=6, bodies=1)
    admin = fast_client(v5.url, Credentials("token", token=PAT))
    from transforms.zitadel_api.user_v2 import ADD_HUMAN_PATH, add_human_request

    other = {"userId": ids[2], "user": {"userName": "x@example.com", "profile": {"firstName": "X", "lastName": "Y"},
             "email": {"email": "x@example.com", "isEmailVerified": True}}}  # fmt: skip
    admin.request("POST", ADD_HUMAN_PATH, add_human_request("999", other))
    report = _push(manifest, v5)
    assert not report.ok and report.created == 5 and report.failed == 1
    with open(report.dead_letter, encoding="utf-8") as handle:
        (line,) = [json.loads(raw) for raw in handle]
    assert line["userId"] == ids[2] and line["reason"] == "in-another-org"
    # Recognised by its code and detail id: the server's text is German, and kept for the operator.
    assert "may not read it" in line["message"] and "(COMMAND-7yiox1isql)" in line["message"]
    assert "AlreadyExist" not in line["message"] and "Benutzer existiert bereits" in line["message"]
    admin_report = _push(
        manifest, v5, creds=Credentials("token", token=PAT), results_dir=str(tmp_path / "r2")
    )
    (failure,) = [f for b in admin_report.bodies for f in b.failed]
    assert failure["message"] == "it already exists in org 999, not in org 123"


def test_grants_follow_through_the_syncs_calls(v5, tmp_path):
    with v5.state.lock:
        v5.state.projects["p1"] = ORG
        v5.state.project_roles["p1"] = {"reader": "reader"}
    manifest, ids = write_manifest(tmp_path, users=3, bodies=1)
    body_path = tmp_path / "importBody.json"
    body = json.loads(body_path.read_text())
    org = body["dataOrgs"]["orgs"][0]
    org["userGrants"] = [{"userId": uid, "projectId": "p1", "roleKeys": ["reader"]} for uid in ids[:2]]
    org["userGrants"].append({"userId": ids[2], "projectId": "p1", "roleKeys": ["nope"]})
    _rewrite(manifest, body_path, body)
    report = _push(manifest, v5)
    assert report.created == 2 and [f["reason"] for f in report.bodies[0].failed] == ["grant-rejected"]
    assert sorted(uid for (_, uid, _, _) in v5.state.user_grants) == sorted(ids[:2])


def _rewrite(manifest, body_path, body) -> None:
    import hashlib

    data = json.dumps(body).encode()
    body_path.write_bytes(data)
    raw = json.loads(manifest.read_text())
    raw["bodies"][0]["sha256"] = hashlib.sha256(data).hexdigest()
    manifest.write_text(json.dumps(raw))


def test_a_body_with_org_settings_needs_the_admin_import(v5, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=2, bodies=1, body_orgs=[{"org": {"name": "Acme"}}])
    report = _push(manifest, v5)
    assert [b.status for b in report.bodies] == ["failed", "blocked"]
    assert "only the admin import creates" in report.bodies[0].failed[0]["message"]
    assert v5.user_ids(ORG) == set()
    manifest, ids = write_manifest(tmp_path / "roles", users=2, bodies=1)
    body_path = tmp_path / "roles" / "importBody.json"
    body = json.loads(body_path.read_text())
    body["dataOrgs"]["orgs"][0]["projectRoles"] = [{"projectId": "p1", "roleKey": "reader"}]
    _rewrite(manifest, body_path, body)
    report = _push(manifest, v5)
    assert [(f["userId"], f["reason"]) for f in report.bodies[0].failed] == [
        (u, "needs-admin-import") for u in ids
    ]


def test_a_server_gone_mid_body_stops_and_a_rerun_resumes_per_user(v5, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=20, bodies=1)
    # Gone for every call: a server that still answers the read-backs of lost creates is not gone.
    v5.faults.silent_after(8, "drop", path="/v2/users*")
    report = _push(manifest, v5, max_attempts=2)
    assert report.fatal and "stopped answering" in report.fatal and report.bodies[0].status == "not-sent"
    first = len(v5.user_ids(ORG))
    assert 0 < first < 20
    v5.faults.clear()
    posts = sum(1 for path, _ in v5.requests if path == "/v2/users/new")
    again = _push(manifest, v5)
    assert again.ok and again.created == 20 and again.present == 0
    assert v5.added_event_counts() == {uid: 1 for uid in ids}
    resent = sum(1 for path, _ in v5.requests if path == "/v2/users/new") - posts
    assert resent == 20 - first  # the users the ledger holds are not sent again


def test_a_killed_push_resumes_without_duplicates(v5, tmp_path):
    v5.faults.per_user_delay = 0.02
    manifest, ids = write_manifest(tmp_path, users=60, bodies=1)
    env = {**os.environ, "ZITADEL_TOKEN": ORG_TOKEN, "PYTHONPATH": REPO}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "push", "--url", v5.url, "--manifest", str(manifest), "--quiet"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while len(v5.user_ids(ORG)) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate()
    assert proc.returncode == 130, err.decode()[-400:]
    assert "interrupted (SIGINT)" in err.decode() and leaked_secrets((out + err).decode(), [ORG_TOKEN]) == []
    v5.faults.per_user_delay = 0.0
    report = _push(manifest, v5, concurrency=3)
    assert report.ok and report.created + report.present == 60
    assert v5.added_event_counts() == {uid: 1 for uid in ids}


def test_the_thread_runner_keeps_the_items_order():
    assert ThreadRunner(4).run(lambda x: x * 2, list(range(50))) == [x * 2 for x in range(50)]
    assert ThreadRunner(1).run(str, [1, 2]) == ["1", "2"]


def test_users_without_an_id_are_read_back_by_name_after_a_lost_answer(v5, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=6, bodies=1)
    body_path = tmp_path / "importBody.json"
    body = json.loads(body_path.read_text())
    org = body["dataOrgs"]["orgs"][0]
    for entry in org["humanUsers"]:
        del entry["userId"]  # the server assigns the id
    del org["userMetadata"]
    _rewrite(manifest, body_path, body)
    v5.faults.inject("504_after", path="/v2/users/new")
    v5.faults.inject("drop_after", path="/v2/users/new")
    report = _push(manifest, v5, verify=True)
    assert report.ok, report.table()
    # Two users created, each answer lost (a 504, a dropped line), each read back by name, not sent again.
    assert report.created + report.present == 6 and report.present == 2
    assert len(v5.user_ids(ORG)) == 6 and set(v5.added_event_counts().values()) == {1}
    assert report.verify is not None and report.verify.ok


def test_a_throttled_create_waits_at_least_the_servers_retry_after(v5, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=3, bodies=1)
    v5.faults.retry_after = "7"
    v5.faults.inject("429", path="/v2/users/new")
    waits: list[float] = []
    client = fast_client(v5.url, ORG_CREDS, sleep=waits.append)
    report = push_engine.push_manifest(
        load_manifest(str(manifest)), v5.url, ORG_CREDS, progress=False, client=client, api=USER_V2
    )
    assert report.ok and report.created == 3 and report.stats.throttled == 1
    assert waits == [7.0]  # no real sleep: the client's clock is the list
