"""The companion's SetPassword against the test server: a password whose answer was lost (a 504
with ZITADEL's ``context deadline exceeded``, a gateway's 504, a dropped answer) is read back and
not set again; one refused before the work is sent again; a refusal is raised (companion/zitadel.py)."""

from __future__ import annotations

import pytest
from zitadel_fixtures import PAT, fast_client, make_user
from zitadel_server import ZitadelServer

from companion.zitadel import ZitadelCalls
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.credentials import Credentials

ORG, UID = "123456789", "fb-1"
PASSWORD_PATH = f"/v2/users/{UID}/password"


@pytest.fixture(name="server")
def server_fixture():
    """The test server holding one active user with a password, imported a day ago."""
    with ZitadelServer(tokens={PAT}) as server:
        user = make_user(UID, None)
        user["user"]["email"]["isEmailVerified"] = True
        user["user"]["password"] = "legacy-unknown"
        server.import_data({"dataOrgs": {"orgs": [{"orgId": ORG, "humanUsers": [user]}]}, "timeout": "10s"})
        with server.state.lock:
            server.state.user_states[UID] = "active"
            for event in server.state.events:
                event.created = "2026-01-01T00:00:00Z"
        yield server


def _writes(server: ZitadelServer) -> int:
    with server.state.lock:
        return sum(1 for e in server.state.events if e.event_type == "user.human.password.changed")


def _calls(server: ZitadelServer) -> list[tuple[str, int]]:
    return [(path, status) for path, status in server.requests if path.startswith(f"/v2/users/{UID}")]


@pytest.mark.parametrize("kind", ["deadline_after", "504_after", "drop_after"])
def test_a_password_that_landed_without_an_answer_is_read_back_not_set_twice(server, kind):
    server.faults.inject(kind, path=PASSWORD_PATH)
    calls = ZitadelCalls(fast_client(server.url, Credentials("token", token=PAT), max_attempts=2))
    calls.set_password(UID, "new-secret-1")
    assert _writes(server) == 1
    assert [path for path, _ in _calls(server)] == [PASSWORD_PATH, f"/v2/users/{UID}"]
    assert server.state.users[UID][1]["password"] == "new-secret-1"


def test_a_password_refused_before_the_work_is_sent_again_without_a_read(server):
    server.faults.inject("503", path=PASSWORD_PATH)  # a load balancer's "no healthy upstream"
    calls = ZitadelCalls(fast_client(server.url, Credentials("token", token=PAT), max_attempts=2))
    calls.set_password(UID, "new-secret-2")
    assert _calls(server) == [(PASSWORD_PATH, 503), (PASSWORD_PATH, 200)]
    assert _writes(server) == 1


def test_a_password_dropped_before_the_work_is_read_back_then_sent(server):
    server.faults.inject("drop", path=PASSWORD_PATH)
    calls = ZitadelCalls(fast_client(server.url, Credentials("token", token=PAT), max_attempts=2))
    calls.set_password(UID, "new-secret-3")
    assert [p for p, _ in _calls(server)] == [PASSWORD_PATH, f"/v2/users/{UID}", PASSWORD_PATH]
    assert _writes(server) == 1


def test_still_unknown_when_the_attempts_are_spent_raises_and_a_refusal_is_raised(server):
    server.faults.inject("deadline_after", count=1, path=PASSWORD_PATH)
    calls = ZitadelCalls(fast_client(server.url, Credentials("token", token=PAT), max_attempts=1))
    calls.set_password(UID, "new-secret-4")  # the last attempt's outcome read back: it landed
    assert _writes(server) == 1
    with server.state.lock:  # a day later: a password written within CLOCK_SLACK would count as this call's
        for event in server.state.events:
            event.created = "2026-01-02T00:00:00Z"
    server.faults.inject("drop", count=1, path=PASSWORD_PATH)
    with pytest.raises(api_errors.AdminApiError) as caught:
        calls.set_password(UID, "new-secret-5")  # dropped before the work, no attempt left
    assert api_errors.unknown_outcome(caught.value) and _writes(server) == 1
    with pytest.raises(api_errors.InvalidRequest):
        calls.set_password("nobody", "x")
