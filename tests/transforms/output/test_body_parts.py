"""transforms/output/body_parts.py: reading and splitting ImportDataRequest bodies."""

from __future__ import annotations

import pytest

from transforms.output.body_parts import (
    UserRef,
    body_user_ids,
    metadata_of,
    org_id_of,
    orgs_of,
    shape_problem,
    split_body,
    user_id_of,
    user_name_of,
    users_of,
    with_orgs,
)


def _user(user_id: str, name: str = "") -> dict:
    return {"userId": user_id, "user": {"userName": name or user_id}}


def _meta(user_id: str) -> dict:
    return {"id": user_id, "key": "k", "value": "dg=="}


BODY = {
    "timeout": "30m0s",
    "dataOrgs": {
        "orgs": [
            {
                "orgId": "1",
                "humanUsers": [_user("a"), _user("b"), _user("c")],
                "userMetadata": [_meta("a"), _meta("c")],
            },
            {"orgId": "2", "humanUsers": [_user("d")], "userMetadata": [_meta("d")]},
        ]
    },
}


def test_readers_take_both_spellings():
    snake = {
        "data_orgs": {"orgs": [{"org_id": 7, "human_users": [{"user_id": "u", "user": {"user_name": "n"}}]}]}
    }
    (org,) = orgs_of(snake)
    assert org_id_of(org) == "7"
    (entry,) = users_of(org)
    assert user_id_of(entry) == "u" and user_name_of(entry) == "n"
    assert metadata_of(org) == []
    assert body_user_ids(snake) == [UserRef("7", "u")]
    assert user_name_of({"user": {"userName": "ann"}}) == "ann"
    assert user_name_of({}) == "" and user_id_of({}) == ""


def test_body_user_ids_in_order():
    assert body_user_ids(BODY) == [("1", "a"), ("1", "b"), ("1", "c"), ("2", "d")]
    assert body_user_ids({"dataOrgsv1": {"orgs": [{"orgId": "1", "humanUsers": [{}]}]}}) == [UserRef("1", "")]
    assert body_user_ids({}) == []


@pytest.mark.parametrize(
    "body, problem",
    [
        (BODY, None),
        ({}, None),
        ({"dataOrgs": None}, None),
        ({"dataOrgs": {}}, None),
        ([{"dataOrgs": {}}], "an array in JSON, not an import request (an object with dataOrgs)"),
        ("text", "a string in JSON, not an import request (an object with dataOrgs)"),
        ({"dataOrgs": []}, "dataOrgs is an array, not an object"),
        ({"data_orgs": {"orgs": {}}}, "data_orgs.orgs is an object, not an array"),
        ({"dataOrgs": {"orgs": [1]}}, "dataOrgs.orgs[0] is a number, not an object"),
        (
            {"dataOrgs": {"orgs": [{"humanUsers": {}}]}},
            "dataOrgs.orgs[0].humanUsers is an object, not an array",
        ),
        (
            {"dataOrgs": {"orgs": [{"userMetadata": [{}, None]}]}},
            "dataOrgs.orgs[0].userMetadata[1] is null, not an object",
        ),
    ],
)
def test_shape_problem(body, problem):
    assert shape_problem(body) == problem


def test_with_orgs_keeps_everything_else():
    out = with_orgs(BODY, [])
    assert out["timeout"] == "30m0s" and out["dataOrgs"] == {"orgs": []}
    assert len(orgs_of(BODY)) == 2  # the original is not changed
    assert with_orgs({}, [{"orgId": "1"}]) == {"dataOrgs": {"orgs": [{"orgId": "1"}]}}


def test_split_body_halves_the_users_and_metadata_follows_its_user():
    first, second = split_body(BODY)
    assert body_user_ids(first) == [("1", "a"), ("1", "b")]
    assert body_user_ids(second) == [("1", "c"), ("2", "d")]
    assert [m["id"] for org in orgs_of(first) for m in metadata_of(org)] == ["a"]
    assert [m["id"] for org in orgs_of(second) for m in metadata_of(org)] == ["c", "d"]
    assert first["timeout"] == second["timeout"] == "30m0s"
    # Every user and metadata item is in exactly one half.
    assert sorted(body_user_ids(first) + body_user_ids(second)) == sorted(body_user_ids(BODY))


def test_split_body_keeps_org_settings_in_the_first_half_and_records_follow_users():
    export = {
        "dataOrgsv1": {
            "orgs": [
                {
                    "orgId": "1",
                    "org": {"name": "Acme"},
                    "domains": [{"domainName": "acme.example"}],
                    "humanUsers": [_user("a"), _user("b")],
                    "userGrants": [{"userId": "a", "projectId": "p"}, {"userId": "b", "projectId": "p"}],
                }
            ]
        }
    }
    first, second = split_body(export)
    (org1,) = orgs_of(first)
    (org2,) = orgs_of(second)
    assert org1["domains"] == [{"domainName": "acme.example"}] and "domains" not in org2
    assert org2["org"] == {"name": "Acme"}  # an export's org travels so that it is found, not created
    assert org1["userGrants"] == [{"userId": "a", "projectId": "p"}]
    assert org2["userGrants"] == [{"userId": "b", "projectId": "p"}]


def test_split_body_of_users_without_ids_goes_by_position():
    body = {"dataOrgs": {"orgs": [{"orgId": "1", "humanUsers": [{"user": {"userName": n}} for n in "wxyz"]}]}}
    first, second = split_body(body)
    assert [user_name_of(u) for org in orgs_of(first) for u in users_of(org)] == ["w", "x"]
    assert [user_name_of(u) for org in orgs_of(second) for u in users_of(org)] == ["y", "z"]
