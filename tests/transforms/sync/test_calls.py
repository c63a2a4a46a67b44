"""transforms/sync/calls.py: the requests of each change call, and what a read-back checks.

Sending against a server is exercised end to end in tests/transforms/sync/test_apply.py and tests/scenarios/test_sync_nights.py.
"""

from __future__ import annotations

import pytest

from transforms.sync.calls import call_path, expected_problems
from transforms.sync.change_records import Call


@pytest.mark.parametrize(
    ("call", "method", "path", "body"),
    [
        (
            {"call": Call.UPDATE_HUMAN_USER, "body": {"username": "b"}},
            "PUT",
            "/v2/users/human/a%7Cb",
            b'{"username":"b"}',
        ),
        ({"call": Call.DEACTIVATE_USER}, "POST", "/v2/users/a%7Cb/deactivate", b"{}"),
        ({"call": Call.REACTIVATE_USER}, "POST", "/v2/users/a%7Cb/reactivate", b"{}"),
        ({"call": Call.LOCK_USER}, "POST", "/v2/users/a%7Cb/lock", b"{}"),
        ({"call": Call.UNLOCK_USER}, "POST", "/v2/users/a%7Cb/unlock", b"{}"),
        ({"call": Call.DELETE_USER}, "DELETE", "/v2/users/a%7Cb", None),
        ({"call": Call.REMOVE_PHONE}, "DELETE", "/v2/users/a%7Cb/phone", None),
        (
            {"call": "RemoveIDPLink", "idpId": "g/1", "linkedUserId": "x y"},
            "DELETE",
            "/v2/users/a%7Cb/links/g%2F1/x%20y",
            None,
        ),
        (
            {"call": "DeleteUserMetadata", "keys": ["a", "b c"]},
            "DELETE",
            "/v2/users/a%7Cb/metadata?keys=a&keys=b+c",
            None,
        ),
    ],
)
def test_each_call_is_one_v2_request(call, method, path, body):
    assert call_path("a|b", call) == (method, path, body)


def test_an_unknown_call_is_refused():
    with pytest.raises(ValueError, match="unknown change call"):
        call_path("u", {"call": "SetPassword"})


def test_read_back_names_what_differs_from_the_confirmed_calls_only():
    change = {
        "calls": [
            {"call": "UpdateHumanUser", "body": {"username": "ann", "profile": {"givenName": "Ann"}}},
            {"call": "DeactivateUser"},
        ]
    }
    answer = {
        "user": {"username": "bob", "state": "USER_STATE_ACTIVE", "human": {"profile": {"givenName": "Ann"}}}
    }
    assert expected_problems(change, ["UpdateHumanUser", "DeactivateUser"], answer) == [
        "username is 'bob', not 'ann'",
        "state is USER_STATE_ACTIVE, not USER_STATE_INACTIVE",
    ]
    assert expected_problems(change, [], answer) == []  # nothing confirmed: nothing to check
    locked = {
        "user": {"username": "ann", "state": "USER_STATE_LOCKED", "human": {"profile": {"givenName": "Ann"}}}
    }
    assert expected_problems(change, ["UpdateHumanUser", "LockUser", "DeactivateUser"], locked) == []
