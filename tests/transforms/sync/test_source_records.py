"""transforms/sync/source_records.py: what the sync reads from each source's user record (as each
source describes it, transforms/sources/<name>/source.py)."""

from __future__ import annotations

import orjson
import pytest

from transforms.common.reasons import Reason
from transforms.mapping.ids import auth0_user_id, keycloak_user_id
from transforms.sources.registry import kinds
from transforms.sync.source_records import UnknownRecord, candidate_ids, is_blocked, refusal

# Every source's record kinds (each run's SyncOptions carries its own source's).
RECORDS = {source: record for kind in kinds() for source, record in kind.records.items()}


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
        ("firebase-user", {"localId": "fb-1"}, False),
        ("firebase-user", {"localId": "fb-1", "disabled": True}, True),
        ("firebase-user", {"localId": "fb-1", "disabled": "true"}, False),  # only JSON true
    ],
)
def test_blocked_or_disabled_at_the_source(source, record, blocked):
    assert is_blocked(RECORDS, source, orjson.dumps(record)) is blocked


def test_candidate_ids_of_a_dead_lettered_record():
    assert candidate_ids(
        RECORDS, "auth0-profile", {"user_id": "auth0|1", "email": "a@example.com"}, None
    ) == ["auth0|1"]
    assert candidate_ids(RECORDS, "auth0-profile", {"email": "a@example.com"}, None) == [
        auth0_user_id("a@example.com")
    ]
    assert candidate_ids(RECORDS, "auth0-profile", {"user_id": "  ", "email": ""}, None) is None
    both = candidate_ids(RECORDS, "keycloak-user", {"id": "k1", "username": "ann"}, "realm")
    assert both == ["k1", keycloak_user_id("realm", "ann")]
    assert (
        candidate_ids(RECORDS, "keycloak-user", {"username": "ann"}, None) is None
    )  # no realm: no derived id
    assert candidate_ids(RECORDS, "keycloak-file", {"users": []}, "realm") is None
    assert candidate_ids(RECORDS, "auth0-profile", ["not", "an", "object"], None) is None
    # The record kinds this test names are registered, and every source's record kinds carry its
    # name (a source added later joins RECORDS without an edit here).
    assert {
        "auth0-profile",
        "keycloak-user",
        "keycloak-file",
        "table-user",
        "table-file",
        "firebase-user",
        "firebase-file",
    } <= set(RECORDS)
    assert all(source.startswith(f"{kind.name}-") for kind in kinds() for source in kind.records)
    assert candidate_ids(RECORDS, "firebase-user", {"localId": "fb-1", "email": "a@example.com"}, None) == [
        "fb-1"
    ]
    assert candidate_ids(RECORDS, "firebase-user", {"localId": " ", "email": "a@example.com"}, None) is None
    assert candidate_ids(RECORDS, "firebase-file", {"file": "users.csv"}, None) is None


def test_a_table_record_carries_its_id_and_blocked_flag_as_the_mapping_read_them():
    envelope = {"id": "t1", "blocked": True, "record": {"blocked": "false", "id": "other"}}
    assert is_blocked(RECORDS, "table-user", orjson.dumps(envelope))
    assert not is_blocked(RECORDS, "table-user", orjson.dumps({**envelope, "blocked": False}))
    assert candidate_ids(RECORDS, "table-user", envelope, None) == ["t1"]
    assert (
        candidate_ids(RECORDS, "table-user", {"id": None, "blocked": False, "record": "{broken"}, None)
        is None
    )
    assert candidate_ids(RECORDS, "table-file", {"file": "users.csv"}, None) is None


def test_a_new_blocked_user_is_refused_with_the_sources_reason_and_flag():
    assert refusal(RECORDS, "auth0-profile") == (Reason.BLOCKED, "--include-blocked")
    assert refusal(RECORDS, "keycloak-user") == (Reason.DISABLED, "--include-disabled")
    assert refusal(RECORDS, "firebase-user") == (Reason.DISABLED, "--include-disabled")


def test_a_row_of_a_kind_its_source_did_not_describe_stops_the_run_rather_than_stay_active():
    """Before the registry, an unknown source answered "not blocked": a user blocked at a source
    the sync did not know stayed active in ZITADEL."""
    with pytest.raises(UnknownRecord, match="'auth0-password' is not among"):
        is_blocked(RECORDS, "auth0-password", orjson.dumps({"blocked": True}))
    with pytest.raises(UnknownRecord):
        refusal({}, "toy-user")
    # A dead letter that is not one user's (a password record) tells no ids, and passes by.
    assert candidate_ids(RECORDS, "auth0-password", {"user_id": "auth0|1"}, None) is None
