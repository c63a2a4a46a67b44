"""Role names → grants of --project-id, for any reader (transforms/sources/role_grants.py)."""

from __future__ import annotations

from transforms.sources.role_grants import JoinRoles


def test_join_roles_unites_profile_and_file_roles():
    roles = JoinRoles("p1", joined="toy.role_records_joined")
    grants = roles.user(("a",), [("b", "a")], dead=False)
    assert grants == (("p1", ("a", "b")),)
    assert [entry[:2] for entry in roles.publish()] == [("p1", "a"), ("p1", "b")]


def test_join_roles_of_a_dead_user_give_no_grant():
    roles = JoinRoles("p1")
    assert roles.user(("a", "b"), [], dead=True) == ()
    assert roles.publish() == []


def test_join_roles_without_a_project_give_nothing():
    assert JoinRoles(None).user(("a",), [], dead=False) == ()
