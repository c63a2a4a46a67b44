"""transforms/output/body_check.py: push checks bodies written by other tools: which hash families it
accepts, how users are rewritten in migrate's form, and how an invalid user leaves with its records."""

from __future__ import annotations

import pytest

from transforms.mapping.validate import ValidationOptions, hash_problem
from transforms.output.body_check import PUSH_VALIDATION, CheckedBody, camel_keys, check_body


@pytest.mark.parametrize(
    "value, push_ok",
    [
        ("$6$rounds=5000$salt$" + "a" * 86, True),  # sha512 crypt
        ("$5$salt$" + "a" * 43, True),  # sha256 crypt
        ("$1$salt$" + "a" * 22, True),  # md5crypt
        ("$P$" + "B" * 31, True),  # phpass
        ("$scrypt$ln=16,r=8,p=1$c2FsdA$aGFzaA", True),
        ("$2b$04$" + "a" * 53, True),  # bcrypt cost 4: push checks the format only by default
        ("plain-text", False),
        ("$sha1$1$x$y", False),
    ],
)
def test_push_accepts_every_family_the_server_verifies(value, push_ok):
    assert (hash_problem(value, PUSH_VALIDATION) is None) is push_ok
    if value.startswith(("$6$", "$1$", "$P$")):
        assert hash_problem(value, ValidationOptions()) is not None  # never from an Auth0 export


def _entry(user_id: str, user_name: str, **user: object) -> dict:
    return {
        "userId": user_id,
        "user": {
            "userName": user_name,
            "profile": {"firstName": "A", "lastName": "B"},
            "email": {"email": f"{user_name}@example.com"},
            **user,
        },
    }


def test_camel_keys_at_every_level():
    assert camel_keys({"user_name": "a", "hashed_password": {"value": 1}, "list_x": [{"org_id": 2}]}) == {
        "userName": "a",
        "hashedPassword": {"value": 1},
        "listX": [{"orgId": 2}],
    }
    assert camel_keys("first_name") == "first_name"  # values are not names


def test_a_valid_body_is_returned_as_it_was():
    body = {"dataOrgs": {"orgs": [{"orgId": "1", "humanUsers": [_entry("1", "ann")]}]}, "timeout": "5m0s"}
    checked = check_body(body)
    assert checked.body is body and checked.changed is False and checked.rejected == []
    for no_users in ({}, {"dataOrgs": {"orgs": {}}}, {"dataOrgs": {"orgs": [{"orgId": "1"}]}}):
        assert check_body(no_users) == CheckedBody(no_users, [], {}, False)


def test_snake_case_users_are_rewritten_in_migrates_form():
    snake = {
        "userId": "1",
        "user": {
            "user_name": "ann",
            "profile": {"first_name": "A", "last_name": "B"},
            "email": {"email": "ann@example.com"},
            "hashed_password": {"value": "$2b$10$" + "a" * 53, "algorithm": "bcrypt"},
        },
    }
    checked = check_body({"data_orgs": {"orgs": [{"org_id": "9", "human_users": [snake]}]}})
    assert checked.changed and checked.rejected == []
    (user,) = checked.body["data_orgs"]["orgs"][0]["human_users"]
    assert user["user"]["userName"] == "ann" and user["user"]["profile"] == {
        "firstName": "A",
        "lastName": "B",
    }
    assert user["user"]["hashedPassword"] == {"value": "$2b$10$" + "a" * 53}  # no algorithm field


def test_an_invalid_user_leaves_with_its_metadata_and_grants_and_no_hash_in_the_report():
    bad = _entry("2", "bob", hashedPassword={"value": "plain-text"})
    org = {
        "orgId": "1",
        "humanUsers": [_entry("1", "ann"), bad, "not a user"],
        "userMetadata": [{"id": "1", "key": "k", "value": "dg=="}, {"id": "2", "key": "k", "value": "dg=="}],
        "userGrants": [{"userId": "1", "projectId": "p"}, {"userId": "2", "projectId": "p"}],
    }
    checked = check_body({"dataOrgs": {"orgs": [org]}})
    (kept_org,) = checked.body["dataOrgs"]["orgs"]
    assert [u["userId"] for u in kept_org["humanUsers"]] == ["1"]
    assert [m["id"] for m in kept_org["userMetadata"]] == ["1"]
    assert [g["userId"] for g in kept_org["userGrants"]] == ["1"]
    assert [(r["userId"], r["orgId"], r["userName"], r["type"]) for r in checked.rejected] == [
        ("2", "1", "bob", "human_user"),
        ("", "1", "", "human_user"),
    ]
    assert checked.rejected[0]["reason"] == "invalid-hash"
    assert checked.rejected[1]["reason"] == "not-an-object"
    assert "plain-text" not in str(checked.rejected)
    assert [u["userId"] for u in org["humanUsers"][:2]] == ["1", "2"]  # the input is not changed


def test_the_docstring_example():
    body = {
        "data_orgs": {"orgs": [{"orgId": "1", "humanUsers": [{"user": {"user_name": "a"}}]}]},
        "timeout": "10m",
    }
    assert [f["reason"] for f in check_body(body).rejected] == ["invalid-first-name"]
