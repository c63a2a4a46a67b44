"""Roles of Auth0 users (transforms/sources/auth0/roles.py): where they are found, how they join."""

from __future__ import annotations

import pytest

from transforms.common.records import partition_of
from transforms.mapping.validate import Reason
from transforms.sources.auth0.items import Kind
from transforms.sources.auth0.roles import holds_roles, profile_roles, role_record


@pytest.mark.parametrize(
    ("profile", "path", "expected"),
    [
        ({"app_metadata": {"roles": ["b", "a", "b"]}}, ("app_metadata", "roles"), ("a", "b")),
        ({"app_metadata": {"roles": [{"name": "x"}, "y"]}}, ("app_metadata", "roles"), ("x", "y")),
        ({"app_metadata": {"roles": []}}, ("app_metadata", "roles"), ()),
        ({"app_metadata": "roles"}, ("app_metadata", "roles"), ()),
        ({}, ("app_metadata", "roles"), ()),
    ],
)
def test_profile_roles(profile, path, expected):
    assert profile_roles(profile, path) == expected


@pytest.mark.parametrize(
    ("profile", "holds"),
    [
        ({"app_metadata": {"roles": ["a"]}}, True),
        ({"app_metadata": {"authorization": {"roles": ["a"]}}}, True),
        ({"app_metadata": {"roles": []}}, False),
        ({"app_metadata": None}, False),
    ],
)
def test_holds_roles(profile, holds):
    assert holds_roles(profile) is holds


def test_role_record_is_routed_by_user_id():
    routes: dict = {}
    raw = b'{"user_id":"auth0|1","roles":["b",{"name":"a"}]}'
    assert role_record((2, 7), {"user_id": "auth0|1", "roles": ["b", {"name": "a"}]}, raw, routes, 8) is None
    assert routes == {(Kind.ROLE_RECORDS, partition_of("auth0|1", 8)): [(2, 7, "auth0|1", ("a", "b"), raw)]}


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"roles": ["a"]}, Reason.MISSING_USER_ID),
        ({"user_id": "auth0|1", "roles": "a"}, Reason.NOT_AN_OBJECT),
    ],
)
def test_role_record_problems(record, reason):
    routes: dict = {}
    problem = role_record((0, 0), record, b"{}", routes, 8)
    assert problem is not None and problem[0] == reason and routes == {}
