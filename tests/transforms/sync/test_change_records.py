"""transforms/sync/change_records.py: the names and key order of a change file's lines."""

from __future__ import annotations

import orjson

from transforms.sync.change_records import Call, ChangeKind, change_line


def test_a_changed_user_line_keeps_its_key_order_and_plain_names():
    line = change_line(
        "123",
        "auth0|1",
        "ann",
        ChangeKind.CHANGED,
        ["profile"],
        [{"call": Call.UPDATE_HUMAN_USER, "body": {"profile": {"givenName": "Ann"}}}],
        {"id": "auth0|1", "q": ""},
        notes=["otp-not-applied"],
        previous={"id": "auth0|1", "q": "9f"},
    )
    assert line == (
        b'{"userId":"auth0|1","orgId":"123","userName":"ann","kind":"changed","fields":["profile"],'
        b'"calls":[{"call":"UpdateHumanUser","body":{"profile":{"givenName":"Ann"}}}],'
        b'"notApplied":["otp-not-applied"],"state":{"id":"auth0|1","q":""},"previous":{"id":"auth0|1","q":"9f"}}'
    )


def test_optional_keys_appear_only_when_they_say_something():
    new_blocked = orjson.loads(
        change_line("1", "u", None, ChangeKind.NEW_BLOCKED, [], [{"call": Call.DEACTIVATE_USER}], {"id": "u"})
    )
    assert list(new_blocked) == ["userId", "orgId", "userName", "kind", "fields", "calls", "state"]
    assert new_blocked["kind"] == "new-blocked" and new_blocked["calls"] == [{"call": "DeactivateUser"}]
    removed = change_line(
        "1", "u", "n", ChangeKind.REMOVED, [], [], {"id": "u"}, previous={"id": "u"}, policy="report"
    )
    assert list(orjson.loads(removed)) == [
        "userId",
        "orgId",
        "userName",
        "kind",
        "policy",
        "fields",
        "calls",
        "state",
        "previous",
    ]


def test_call_names_are_the_names_in_the_files():
    assert Call("SetUserGrant") is Call.SET_USER_GRANT
    assert Call.DELETE_USER == "DeleteUser" and f"{Call.LOCK_USER}" == "LockUser"
