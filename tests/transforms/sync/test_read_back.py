"""A change whose outcome is unknown is read back before it is sent again (transforms/sync/read_back.py).

The pure parts in tables; then one user's ``UpdateHumanUser`` over real sockets against the test
server, with a fault that makes the outcome unknown: the server's count of password-changed
events says whether the hash was written twice.
"""

from __future__ import annotations

import time

import pytest
from zitadel_fixtures import PAT, fast_client, hash_pool, make_user
from zitadel_server import ZitadelServer

from transforms.sync.calls import Outcome, Stop, apply_user
from transforms.sync.change_records import Call
from transforms.sync.read_back import CLOCK_SLACK, not_landed, parse_time
from transforms.zitadel_api.credentials import Credentials

ORG = "123456789"
UID = "auth0|1"
SENT = parse_time("2026-11-26T06:00:00Z") or 0.0

_HELD = {
    "user": {
        "username": "ann",
        "human": {
            "profile": {"givenName": "Ann", "familyName": "Lee", "displayName": "Ann Lee", "nickName": None},
            "email": {"email": "ann@example.com", "isVerified": True},
            "phone": {},
            "passwordChanged": "2026-11-26T06:00:01.123456789Z",
        },
    }
}
_PASSWORD = {"hashedPassword": {"hash": "$2b$10$x", "changeRequired": False}}


@pytest.mark.parametrize(
    "body, since, left",
    [
        # Changed after the call was sent: landed, not sent again.
        ({"password": _PASSWORD}, SENT, {}),
        # Changed long before: the call did not land.
        ({"password": _PASSWORD}, SENT + 3600, {"password": _PASSWORD}),
        # Within the clock slack before the call: counted as landed.
        ({"password": _PASSWORD}, SENT + CLOCK_SLACK - 1, {}),
        ({"username": "ann", "profile": {"givenName": "Ann", "familyName": "Lee", "nickName": ""}}, SENT, {}),
        ({"username": "bob"}, SENT, {"username": "bob"}),
        (
            {"profile": {"givenName": "Ann", "familyName": "Li"}},
            SENT,
            {"profile": {"givenName": "Ann", "familyName": "Li"}},
        ),
        ({"email": {"email": "ann@example.com", "isVerified": True}}, SENT, {}),
        ({"email": {"email": "ann@example.com", "returnCode": {}}}, SENT, {}),
        (
            {"email": {"email": "new@example.com", "isVerified": True}},
            SENT,
            {"email": {"email": "new@example.com", "isVerified": True}},
        ),
        (
            {"phone": {"phone": "+41791234567", "isVerified": True}},
            SENT,
            {"phone": {"phone": "+41791234567", "isVerified": True}},
        ),
    ],
)
def test_only_what_did_not_land_is_left(body, since, left):
    assert not_landed(body, _HELD, since) == left


def test_a_password_never_changed_is_sent():
    held = {"user": {"human": {}}}
    assert not_landed({"password": _PASSWORD}, held, SENT) == {"password": _PASSWORD}


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("1970-01-01T00:00:01Z", 1.0),
        ("1970-01-01T00:00:01.5Z", 1.5),
        ("1970-01-01T01:00:00+01:00", 0.0),
        ("not a time", None),
        ("", None),
    ],
)
def test_timestamps_as_zitadel_writes_them(text, seconds):
    assert parse_time(text) == seconds


# --- one user over HTTP ------------------------------------------------------------------------
@pytest.fixture
def seeded():
    """The test server holding one imported user with a password."""
    hashes = hash_pool(2)
    with ZitadelServer(tokens={PAT}) as server:
        user = make_user(UID, hashes[0])
        server.import_data({"dataOrgs": {"orgs": [{"orgId": ORG, "humanUsers": [user]}]}, "timeout": "10s"})
        age_events(server)
        yield server, hashes[1]


def age_events(server: ZitadelServer) -> None:
    """Date every event so far a day back: the import was yesterday's night, not a second ago
    (a password written within CLOCK_SLACK before a call counts as the call's)."""
    with server.state.lock:
        for event in server.state.events:
            event.created = "2026-01-01T00:00:00Z"


def _change(new_hash: str, family: str = "New") -> dict:
    body = {
        "profile": {"givenName": "First", "familyName": family, "displayName": f"First {family}"},
        "password": {"hashedPassword": {"hash": new_hash, "changeRequired": False}},
    }
    return {"userId": UID, "orgId": ORG, "calls": [{"call": Call.UPDATE_HUMAN_USER, "body": body}]}


def _password_writes(server: ZitadelServer) -> int:
    with server.state.lock:
        return sum(
            1
            for e in server.state.events
            if e.event_type == "user.human.password.changed" and e.aggregate_id == UID
        )


def _requests(server: ZitadelServer) -> list[str]:
    return [method for method, path, _ in server.v2_requests if path.startswith("/v2/users/")]


@pytest.mark.parametrize("kind", ["504_after", "drop_after", "deadline_after"])
def test_a_write_that_landed_without_an_answer_is_read_back_and_not_sent_again(seeded, kind):
    server, new_hash = seeded
    server.faults.inject(kind, path="/v2/users/*")
    client = fast_client(server.url, Credentials("token", token=PAT))
    result, sent = apply_user(client, _change(new_hash), "f", "s", Stop(), 5.0)
    assert result.status == Outcome.DONE and result.confirmed == [Call.UPDATE_HUMAN_USER]
    assert result.unknown_at is None
    assert _requests(server) == ["PUT", "GET"] and sent == 2
    assert _password_writes(server) == 1
    assert server.state.users[UID][1]["hashedPassword"]["value"] == new_hash


def test_a_write_dropped_before_its_effect_is_read_back_and_sent_again(seeded):
    server, new_hash = seeded
    server.faults.inject("drop", path="/v2/users/*")
    client = fast_client(server.url, Credentials("token", token=PAT))
    result, _ = apply_user(client, _change(new_hash), "f", "s", Stop(), 5.0)
    assert result.status == Outcome.DONE
    assert _requests(server) == ["GET", "PUT"]  # the dropped PUT never reached the handler
    assert _password_writes(server) == 1


def test_a_write_applied_after_the_client_gave_up_is_not_sent_again(seeded):
    server, new_hash = seeded
    server.faults.inject("late", path="/v2/users/*")
    client = fast_client(server.url, Credentials("token", token=PAT))
    marks: list[float] = []
    result, _ = apply_user(client, _change(new_hash), "f", "s", Stop(), 0.5, mark=marks.append)
    assert result.status == Outcome.DONE
    assert _password_writes(server) == 1
    assert len(marks) == 1  # marked once, before the one PUT that was sent


def test_an_earlier_unknown_outcome_is_read_back_first_and_only_the_rest_is_sent(seeded):
    server, new_hash = seeded
    before = time.time()
    # Last night's write landed late (the password and the profile), the client never knew.
    client = fast_client(server.url, Credentials("token", token=PAT))
    assert apply_user(client, _change(new_hash), "f", "s", Stop(), 5.0)[0].status == Outcome.DONE
    server.v2_requests.clear()
    # Tonight's plan: the same password, a profile changed again at the source.
    result, _ = apply_user(client, _change(new_hash, "Newer"), "f", "s", Stop(), 5.0, unknown_at=before)
    assert result.status == Outcome.DONE
    assert _requests(server) == ["GET", "PUT"]
    put_body = server.v2_requests[1][2]
    assert "password" not in put_body and put_body["profile"]["familyName"] == "Newer"
    assert _password_writes(server) == 1


def test_a_read_back_that_gets_no_answer_keeps_the_outcome_unknown(seeded):
    server, new_hash = seeded
    server.faults.inject("late", count=4, path="/v2/users/*")
    client = fast_client(server.url, Credentials("token", token=PAT), max_attempts=3)
    result, _ = apply_user(client, _change(new_hash), "f", "s", Stop(), 0.3)
    assert result.status == Outcome.FAILED and result.unknown_at is not None
    assert result.confirmed == []
    assert _password_writes(server) == 1  # the PUT landed late, the GETs changed nothing


def test_a_throttled_write_is_sent_again_after_retry_after_without_a_read_back(seeded):
    server, new_hash = seeded
    server.faults.retry_after = "7"
    server.faults.inject("429", path="/v2/users/*")
    waits: list[float] = []
    client = fast_client(server.url, Credentials("token", token=PAT), sleep=waits.append)
    result, _ = apply_user(client, _change(new_hash), "f", "s", Stop(), 5.0)
    assert result.status == Outcome.DONE and result.unknown_at is None
    assert waits == [7.0] and client.stats.retries == 1
    assert _requests(server) == ["PUT"]  # refused before any work: nothing to read back
    assert _password_writes(server) == 1
