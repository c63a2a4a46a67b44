"""tests/standins/schema_check.py: ZITADEL's published import schema, and the tool's bodies against it.

Every body a migrate run of the suite writes is also checked by the autouse fixture in
conftest.py; these tests pin the checker itself (it must refuse what ZITADEL refuses) and run
the tool on inputs with control characters, whose bodies must still pass.
"""

from __future__ import annotations

import copy
import json

import pytest
from schema_check import checker

from pipeline.cli import main

USER = {
    "userId": "auth0|1",
    "user": {
        "userName": "ann@example.com",
        "profile": {
            "firstName": "Ann",
            "lastName": "Lee",
            "displayName": "Ann Lee",
            "preferredLanguage": "en",
        },
        "email": {"email": "ann@example.com", "isEmailVerified": True},
        "phone": {"phone": "+41791234567"},
        "hashedPassword": {"value": "$2b$10$" + "a" * 53},
        "idps": [{"configId": "2873423", "externalUserId": "1234", "displayName": "Ann"}],
    },
}
BODY = {
    "dataOrgs": {
        "orgs": [
            {
                "orgId": "123",
                "humanUsers": [USER],
                "userMetadata": [{"id": "auth0|1", "key": "plan", "value": "InBybyI="}],
            }
        ]
    },
    "timeout": "5m0s",
}


def _with(path: str, value) -> dict:
    """BODY with the field at ``path`` (dotted, below the first user) set; None deletes it."""
    body = copy.deepcopy(BODY)
    node = body["dataOrgs"]["orgs"][0]["humanUsers"][0]
    *parents, last = path.split(".")
    for key in parents:
        node = node[key]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return body


def test_a_complete_body_passes():
    assert checker().check(BODY) == []


@pytest.mark.parametrize(
    "path, value, expected",
    [
        ("user.profile.displayName", "Ann\x00Lee", "displayName: holds NUL"),
        ("user.profile.firstName", "Ann\x00", "firstName: holds NUL"),
        ("user.profile.lastName", "", "lastName: at least 1 characters"),
        ("user.profile.lastName", None, "lastName: at least 1 characters"),
        ("user.profile.firstName", "x" * 201, "firstName: at most 200 characters"),
        ("user.userName", "", "userName: at least 1 characters"),
        ("user.profile.preferredLanguage", "en-u-rg-uszzzz", "preferredLanguage: at most 10 characters"),
        ("user.phone", {"phone": "0791234567"}, "phone.phone: must start with '+'"),
        ("user.email", {"email": "not an address"}, "email.email: not an e-mail address"),
        ("user.email", None, "user.email: required"),
        ("user.profile", None, "user.profile: required"),
    ],
)
def test_what_zitadel_refuses_is_refused(path, value, expected):
    problems = checker().check(_with(path, value))
    assert any(expected in problem for problem in problems), problems


@pytest.mark.parametrize(
    "body",
    [
        {**BODY, "unknownKey": 1},
        _with(
            "user.hashedPassword", {"value": "$2b$10$x", "algorithm": "bcrypt"}
        ),  # zitadel-tools' 2023 shape
        _with("user.profile.gender", "GENDER_UNICORN"),
        {**BODY, "timeout": 300},
    ],
)
def test_bodies_that_do_not_decode_strictly_are_refused(body):
    problems = checker().check(body)
    assert len(problems) == 1 and "does not decode" in problems[0]


def test_duration_rules_come_from_the_schema():
    """The import's own ``timeout`` has no range; an action's does (at most 20 s), and a body
    that carries an action shows the rule is read from the descriptors."""
    action = {"actionId": "1", "action": {"name": "a", "script": "x", "timeout": "25s"}}
    body = copy.deepcopy(BODY)
    body["dataOrgs"]["orgs"][0]["actions"] = [action]
    assert any("timeout: at most 20 s" in p for p in checker().check(body))
    action["action"]["timeout"] = "10s"
    assert checker().check(body) == []
    assert checker().check({**BODY, "timeout": "30m0s"}) == []


def test_control_characters_never_reach_a_body(tmp_path):
    """A profile with NUL and TAB in its names converts into a body the schema accepts."""
    users = tmp_path / "users.json"
    users.write_text(
        json.dumps(
            {
                "user_id": "auth0|1",
                "email": "ann@example.com",
                "email_verified": True,
                "name": "Ann\x00 Lee",
                "given_name": "Ann\tMarie",
                "family_name": "Lee\x07",
            }
        )
        + "\n"
    )
    out = tmp_path / "importBody.json"
    assert main(["migrate", "auth0", "--org=1", f"--users={users}", f"--output={out}"]) == 0
    body = json.loads(out.read_text())
    profile = body["dataOrgs"]["orgs"][0]["humanUsers"][0]["user"]["profile"]
    assert profile == {"firstName": "Ann Marie", "lastName": "Lee", "displayName": "Ann Lee"}
    assert checker().check(body) == []
