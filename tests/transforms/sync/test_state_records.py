"""transforms/sync/state_records.py: fingerprints over mapped values, the calls a change needs, merging."""

from __future__ import annotations

import orjson
import pytest

from transforms.sync.calls import call_path
from transforms.sync.state_records import (
    ACTIVE,
    INACTIVE,
    LOCKED,
    changed_groups,
    compare_user,
    merge_confirmed,
    quick_digest,
    state_record,
)


def _entry(**user) -> dict:
    base = {
        "userName": "ann",
        "profile": {"firstName": "Ann", "lastName": "Lee", "displayName": "Ann Lee"},
        "email": {"email": "ann@example.com", "isEmailVerified": True},
        "hashedPassword": {"value": "$2b$10$" + "a" * 53},
        "idps": [{"configId": "g", "externalUserId": "1", "displayName": "ann"}],
    }
    base.update(user)
    return {"userId": "u1", "user": {k: v for k, v in base.items() if v is not None}}


META = [{"key": "plan", "value": "Z29sZA=="}, {"key": "team", "value": "cmVk"}]


def _record(entry: dict, metadata=META, blocked: bool = False) -> dict:
    meta_json = orjson.dumps([{"id": "u1", **m} for m in metadata])[1:-1] if metadata else b""
    return state_record(
        entry, metadata, blocked=blocked, quick=quick_digest(orjson.dumps(entry), meta_json, blocked)
    )


def test_key_order_link_order_and_metadata_order_change_no_fingerprint():
    entry = _entry()
    reordered = {
        "user": {
            "idps": list(reversed(entry["user"]["idps"])),
            "profile": dict(reversed(list(entry["user"]["profile"].items()))),
            **{k: v for k, v in entry["user"].items() if k not in ("idps", "profile")},
        },
        "userId": "u1",
    }
    a, b = _record(entry), _record(reordered, list(reversed(META)))
    assert a["q"] != b["q"]  # the bytes differ...
    assert changed_groups(a, b) == []  # ...the mapped values do not
    kind, _, groups, calls, notes = compare_user(
        a, reordered, list(reversed(META)), blocked=False, quick=b["q"]
    )
    assert (kind, groups, calls, notes) == ("unchanged", [], [], [])


def test_no_secret_in_the_state_record():
    record = _record(_entry(otpCode="JBSWY3DPEHPK3PXP"))
    text = orjson.dumps(record).decode()
    assert "$2b$" not in text and "JBSWY3DPEHPK3PXP" not in text and "Z29sZA==" not in text


@pytest.mark.parametrize(
    "change, groups, first_call",
    [
        ({"userName": "ann2"}, ["username"], {"username": "ann2"}),
        ({"profile": {"firstName": "Anne", "lastName": "Lee"}}, ["profile"], None),
        (
            {"email": {"email": "new@example.com"}},
            ["email"],
            {"email": {"email": "new@example.com", "returnCode": {}}},
        ),
        (
            {"phone": {"phone": "+41791234567", "isPhoneVerified": True}},
            ["phone"],
            {"phone": {"phone": "+41791234567", "isVerified": True}},
        ),
        (
            {"hashedPassword": {"value": "$2b$10$" + "b" * 53}},
            ["password"],
            {"password": {"hashedPassword": {"hash": "$2b$10$" + "b" * 53, "changeRequired": False}}},
        ),
    ],
)
def test_one_update_call_carries_exactly_the_changed_groups(change, groups, first_call):
    old = _record(_entry())
    new_entry = _entry(**change)
    kind, _, got_groups, calls, _ = compare_user(old, new_entry, META, blocked=False, quick="x")
    assert kind == "changed" and got_groups == groups
    assert [c["call"] for c in calls] == ["UpdateHumanUser"]
    if first_call is not None:
        assert calls[0]["body"] == first_call
    else:  # the whole v2 profile, optional fields dropped at the source sent empty
        assert calls[0]["body"]["profile"] == {
            "givenName": "Anne",
            "familyName": "Lee",
            "nickName": "",
            "displayName": "Anne Lee",
            "preferredLanguage": "",
        }


def test_links_metadata_phone_removal_blocking_and_otp():
    old = _record(_entry(phone={"phone": "+41791234567"}))
    new_entry = _entry(
        idps=[{"configId": "h", "externalUserId": "2", "displayName": "a"}], otpCode="JBSWY3DPEHPK3PXP"
    )
    meta = [{"key": "plan", "value": "cGxhdA=="}]
    kind, record, groups, calls, notes = compare_user(old, new_entry, meta, blocked=True, quick="x")
    assert kind == "changed"
    assert set(groups) == {"phone", "idps", "metadata", "otp"}
    names = [c["call"] for c in calls]
    assert names == [
        "RemovePhone",
        "RemoveIDPLink",
        "AddIDPLink",
        "DeleteUserMetadata",
        "SetUserMetadata",
        "DeactivateUser",
    ]
    assert calls[3]["keys"] == ["team"] and calls[4]["body"]["metadata"] == [
        {"key": "plan", "value": "cGxhdA=="}
    ]
    assert notes == ["otp-not-applied"]
    assert record["f"]["otp"] == old["f"]["otp"] and record["q"] == ""  # named again next run
    assert call_path("a|b", calls[1]) == ("DELETE", "/v2/users/a%7Cb/links/g/1", None)
    assert call_path("a|b", calls[3])[1] == "/v2/users/a%7Cb/metadata?keys=team"


def test_blocked_states_and_what_unblocking_sends():
    entry = _entry()
    for old_b, blocked, expected in (
        (ACTIVE, True, ["DeactivateUser"]),
        (INACTIVE, False, ["ReactivateUser"]),
        (LOCKED, False, ["UnlockUser"]),
        (LOCKED, True, []),
        (INACTIVE, True, []),
    ):
        old = {**_record(entry), "b": old_b, "q": "other"}
        _, record, _, calls, _ = compare_user(old, entry, META, blocked=blocked, quick="y")
        assert [c["call"] for c in calls] == expected, (old_b, blocked)
        if not expected:
            assert record["b"] == old_b  # the target's state stays


def test_merge_keeps_old_digests_for_calls_that_failed():
    old = _record(_entry())
    new_entry = _entry(userName="ann2", idps=[])
    new = _record(new_entry)
    merged = merge_confirmed(old, new, ["RemoveIDPLink"], complete=False)
    assert merged is not None
    assert merged["f"]["idps"] == new["f"]["idps"] and merged["f"]["username"] == old["f"]["username"]
    assert merged["q"] == ""  # not the target's bytes: compared in full next time
    assert merge_confirmed(old, new, ["UpdateHumanUser", "RemoveIDPLink"], complete=True) == new
    assert merge_confirmed(old, new, ["DeleteUser"], complete=True) is None
    locked = merge_confirmed(old, {**new, "b": INACTIVE}, ["LockUser"], complete=True)
    assert locked is not None and locked["b"] == LOCKED


def test_grants_set_changed_projects_remove_lost_ones_and_merge_only_whole_groups():
    entry = _entry()
    old = state_record(entry, META, blocked=False, quick="q1", grants=(("p1", ("a", "b")), ("p2", ("x",))))
    new_grants = (("p1", ("a", "c")), ("p3", ("y",)))
    kind, new, groups, calls, _ = compare_user(old, entry, META, blocked=False, quick="q2", grants=new_grants)
    assert kind == "changed" and groups == ["grants"]
    assert calls == [
        {"call": "RemoveUserGrant", "projectId": "p2"},
        {"call": "SetUserGrant", "projectId": "p1", "roleKeys": ["a", "c"]},
        {"call": "SetUserGrant", "projectId": "p3", "roleKeys": ["y"]},
    ]
    planned = [c["call"] for c in calls]
    # One SetUserGrant of two confirmed: the grants are not yet the new ones.
    partial = merge_confirmed(old, new, ["RemoveUserGrant", "SetUserGrant"], complete=False, planned=planned)
    assert partial is not None and partial["f"]["grants"] == old["f"]["grants"] and partial["a"] == old["a"]
    whole = merge_confirmed(old, new, planned, complete=False, planned=planned)
    assert whole is not None and whole["f"]["grants"] == new["f"]["grants"] and whole["a"] == new["a"]


def test_a_record_written_before_grants_existed_reads_as_holding_none():
    entry = _entry()
    old = _record(entry)
    del old["f"]["grants"]  # a state from before grants were compared
    assert compare_user(old, entry, META, blocked=False, quick=old["q"])[0] == "unchanged"
    assert changed_groups(old, _record(entry)) == []
