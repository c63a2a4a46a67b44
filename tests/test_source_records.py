"""transforms/sync/source_records.py: what the sync reads from each source's user record."""

from __future__ import annotations

import orjson
import pytest

from transforms.common.reasons import Reason
from transforms.mapping.ids import auth0_user_id, keycloak_user_id
from transforms.sync.source_records import USER_SOURCES, candidate_ids, is_blocked, refusal


@pytest.mark.parametrize(
    ("source", "record", "blocked"),
    [
        ("auth0-profile", {"user_id": "auth0|1"}, False),
        ("auth0-profile", {"user_id": "auth0|1", "blocked": True}, True),
        ("auth0-profile", {"user_id": "auth0|1", "blocked": "true"}, False),  # only JSON true
        ("keycloak-user", {"id": "k1", "enabled": True}, False),
        ("keycloak-user", {"id": "k1", "enabled": False}, True),
        ("keycloak-user", {"id": "k1"}, True),  # enabled not true: disabled
        ("keycloak-file", {"users": []}, False),
        ("auth0-password", {"blocked": True}, False),  # not a user record
        ("firebase-user", {"localId": "fb-1"}, False),
        ("firebase-user", {"localId": "fb-1", "disabled": True}, True),
        ("firebase-user", {"localId": "fb-1", "disabled": "true"}, False),  # only JSON true
    ],
)
def test_blocked_or_disabled_at_the_source(source, record, blocked):
    assert is_blocked(source, orjson.dumps(record)) is blocked


def test_candidate_ids_of_a_dead_lettered_record():
    assert candidate_ids("auth0-profile", {"user_id": "auth0|1", "email": "a@example.com"}, None) == [
        "auth0|1"
    ]
    assert candidate_ids("auth0-profile", {"email": "a@example.com"}, None) == [
        auth0_user_id("a@example.com")
    ]
    assert candidate_ids("auth0-profile", {"user_id": "  ", "email": ""}, None) is None
    both = candidate_ids("keycloak-user", {"id": "k1", "username": "ann"}, "realm")
    assert both == ["k1", keycloak_user_id("realm", "ann")]
    assert candidate_ids("keycloak-user", {"username": "ann"}, None) is None  # no realm: no derived id
    assert candidate_ids("keycloak-file", {"users": []}, "realm") is None
    assert candidate_ids("auth0-profile", ["not", "an", "object"], None) is None
    assert set(USER_SOURCES) == {
        "auth0-profile",
        "keycloak-user",
        "keycloak-file",
        "table-user",
        "table-file",
        "firebase-user",
        "firebase-file",
    }
    assert candidate_ids("firebase-user", {"localId": "fb-1", "email": "a@example.com"}, None) == ["fb-1"]
    assert candidate_ids("firebase-user", {"localId": " ", "email": "a@example.com"}, None) is None
    assert candidate_ids("firebase-file", {"file": "users.csv"}, None) is None


def test_a_table_record_carries_its_id_and_blocked_flag_as_the_mapping_read_them():
    envelope = {"id": "t1", "blocked": True, "record": {"blocked": "false", "id": "other"}}
    assert is_blocked("table-user", orjson.dumps(envelope))
    assert not is_blocked("table-user", orjson.dumps({**envelope, "blocked": False}))
    assert candidate_ids("table-user", envelope, None) == ["t1"]
    assert candidate_ids("table-user", {"id": None, "blocked": False, "record": "{broken"}, None) is None
    assert candidate_ids("table-file", {"file": "users.csv"}, None) is None


def test_a_new_blocked_user_is_refused_with_the_sources_reason_and_flag():
    assert refusal("auth0-profile") == (Reason.BLOCKED, "--include-blocked")
    assert refusal("keycloak-user") == (Reason.DISABLED, "--include-disabled")
    assert refusal("firebase-user") == (Reason.DISABLED, "--include-disabled")
