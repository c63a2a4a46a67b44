"""A rich Auth0 export (metadata, social links, phones, TOTP) pushed under 30% faults of each kind
that loses or refuses a call: a 503 before the work, a connection dropped before the work, and
ZITADEL's own HTTP 504 ``{"code": 4, "message": "context deadline exceeded"}`` *after* the work.
Through the user service v2 and through the admin import, each run ends ok with every user created
once, as the fault-free admin import holds it, and the verify passes: an answer lost after the work
is read back, never reported failed (docs/zitadel-admin-api.md#unknown-outcomes)."""

from __future__ import annotations

import pytest
import zitadel_user_v2_create as creation
from zitadel_fixtures import PAT, fast_client
from zitadel_server import ZitadelServer

from tests.scenarios.test_user_v2_rich_auth0 import (  # noqa: F401 - written_fixture: a pytest fixture, used by name
    ORG,
    ORG_TOKEN,
    USERS,
    _v5,
    written_fixture,
)
from transforms.output.manifest import load_manifest
from transforms.push import engine as push_engine
from transforms.push.api_choice import ADMIN_IMPORT, USER_V2
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.user_v2 import CREATE_USER_PATH, user_path

KINDS = ("503", "drop", "deadline_after")


def _push(manifest, server, creds, api, results):
    client = fast_client(server.url, creds, max_attempts=6)  # the default --max-attempts
    return push_engine.push_manifest(
        load_manifest(str(manifest)), server.url, creds, progress=False, client=client, api=api,
        results_dir=str(results), verify=True, concurrency=4,
    )  # fmt: skip


@pytest.mark.parametrize(
    "kinds", [(k,) for k in KINDS] + [KINDS], ids=["503", "drop", "deadline_after", "mixed"]
)
def test_the_user_service_under_faults_creates_every_user_once_and_reports_none_failed(
    written, tmp_path, kinds
):
    manifest, ids, expected = written
    server = _v5()
    try:
        server.faults.randomize(0.3, kinds=kinds, paths=("/v2/users*",), seed=49)
        report = _push(manifest, server, Credentials("token", token=ORG_TOKEN), USER_V2, tmp_path / "v2")
        fired = set(server.faults.fired)
        server.faults.clear()
        assert set(kinds) <= fired
        assert report.ok, report.failure_line()
        assert report.created + report.present == USERS and report.failed == 0 and report.unknown == 0
        assert report.verify is not None and report.verify.ok
        assert server.added_event_counts() == {uid: 1 for uid in ids}
        for uid in ids:
            assert creation.same_but_state(creation.stored_user(server, uid), expected[uid]), uid
        metadata_sets = [e for e in server.state.events if e.event_type == "user.metadata.set"]
        assert len(metadata_sets) == sum(len(e["metadata"]) for e in expected.values())  # each key once
    finally:
        server.stop()


@pytest.mark.parametrize(
    "kinds", [(k,) for k in KINDS] + [KINDS], ids=["503", "drop", "deadline_after", "mixed"]
)
def test_the_admin_import_under_faults_creates_every_user_once_and_reports_none_failed(
    written, tmp_path, kinds
):
    manifest, ids, expected = written
    with ZitadelServer(tokens={PAT}) as server:
        server.faults.randomize(0.3, kinds=kinds, paths=("/admin/v1/import",), seed=49)
        # Every kind at least once, on the first bodies' calls.
        for kind in kinds:
            server.faults.inject(kind)
        report = _push(
            manifest, server, Credentials("token", token=PAT), ADMIN_IMPORT, tmp_path / "admin-faults"
        )
        server.faults.clear()
        assert report.ok, report.failure_line()
        assert report.created + report.present == USERS and report.failed == 0
        assert report.verify is not None and report.verify.ok
        assert server.added_event_counts() == {uid: 1 for uid in ids}
        for uid in ids:
            assert creation.stored_user(server, uid) == expected[uid], uid


def test_a_user_whose_create_stays_unknown_is_reported_unknown_and_read_back_first_next_run(
    written, tmp_path
):
    manifest, ids, _ = written
    server = _v5()
    creds = Credentials("token", token=ORG_TOKEN)
    try:
        # One attempt per write: the first create lands, ZITADEL's deadline answer leaves it unknown.
        server.faults.inject("deadline_after", path=CREATE_USER_PATH)
        client = fast_client(server.url, creds, max_attempts=1)
        first = push_engine.push_manifest(
            load_manifest(str(manifest)), server.url, creds, progress=False, client=client, api=USER_V2,
            results_dir=str(tmp_path / "v2"), concurrency=1,
        )  # fmt: skip
        assert not first.ok and first.failed == 0 and first.unknown == 1
        assert first.created == USERS - 1 and len(server.user_ids(ORG)) == USERS
        line = first.failure_line()
        assert "1 user(s) with an unknown outcome, not failed" in line and "importBody" in line
        assert "not created" not in line
        (uid,) = [entry["userId"] for body in first.bodies for entry in body.unknown]
        requests = len(server.requests)
        again = _push(manifest, server, creds, USER_V2, tmp_path / "v2")  # the same ledger
        assert again.ok and again.failed == 0 and again.unknown == 0 and again.present == 1
        assert server.added_event_counts() == {u: 1 for u in ids}
        after = [path for path, _ in server.requests[requests:]]
        assert user_path(uid) in after and CREATE_USER_PATH not in after  # read back, not created again
    finally:
        server.stop()
