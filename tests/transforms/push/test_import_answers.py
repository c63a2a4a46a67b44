"""Reading an import answer: created, present, failed with a reason, users in another org."""

from __future__ import annotations

from transforms.push.import_answers import IN_ANOTHER_ORG, Counts, fail_all, interpret
from transforms.push.ledger import BodyResult


def _part(*users: tuple[str, str], metadata: list[dict] | None = None) -> dict:
    orgs: dict[str, dict] = {}
    for org_id, uid in users:
        orgs.setdefault(org_id, {"orgId": org_id, "humanUsers": []})["humanUsers"].append({"userId": uid})
    if metadata:
        next(iter(orgs.values()))["userMetadata"] = metadata
    return {"dataOrgs": {"orgs": list(orgs.values())}}


def _result() -> BodyResult:
    return BodyResult(0, "body-1", "sha", 3)


def test_created_present_and_failed_users_are_told_apart():
    part = _part(("o1", "u1"), ("o1", "u2"), ("o1", "u3"))
    answer = {
        "success": {"orgs": [{"orgId": "o1", "humanUserIds": ["u1"]}]},
        "errors": [
            {"type": "human_user", "id": "u2", "message": "ID=Errors.User.AlreadyExisting"},
            {"type": "human_user", "id": "u3", "message": "ID=Errors.User.AlreadyExists (user name taken)"},
            {"type": "org", "id": "o1", "message": "ID=Errors.Org.AlreadyExisting"},
        ],
    }
    result = _result()
    counts = interpret(answer, part, result, (), after_lost_answer=True)
    assert counts == Counts(created=1, present=1, failed=1)
    assert result.created == ["u1"] and result.present == ["u2"] and result.orgs_present == ["o1"]
    assert result.present_after_lost_answer == 1
    assert result.failed == [
        {
            "userId": "u3",
            "orgId": "o1",
            "reason": "duplicate-username",
            "type": "human_user",
            "message": "ID=Errors.User.AlreadyExists (user name taken)",
        }
    ]


def test_a_user_created_in_another_org_and_a_user_not_in_the_answer_fail():
    part = _part(("o1", "u1"), ("o1", "u2"))
    answer = {"success": {"orgs": [{"orgId": "o9", "humanUserIds": ["u1"]}]}}
    result = _result()
    assert interpret(answer, part, result, ()) == Counts(0, 0, 2)
    reasons = {entry["userId"]: entry["reason"] for entry in result.failed}
    assert reasons == {"u1": IN_ANOTHER_ORG, "u2": "no-result"}


def test_rejected_metadata_fails_a_created_user_with_the_metadata_id():
    part = _part(("o1", "u1"), metadata=[{"id": "u1", "key": "k"}])
    answer = {
        "success": {"orgs": [{"orgId": "o1", "humanUserIds": ["u1"]}]},
        "errors": [{"type": "user_metadata", "id": "u1_k", "message": "bad value token=abc"}],
    }
    result = _result()
    assert interpret(answer, part, result, ("abc",)) == Counts(0, 0, 1)
    assert result.created == []
    (entry,) = result.failed
    assert list(entry) == ["userId", "orgId", "reason", "type", "id", "message"]
    assert entry["reason"] == "metadata-rejected" and entry["id"] == "u1_k"
    assert "abc" not in entry["message"]


def test_users_sent_without_an_id_take_the_ids_the_server_assigned():
    part = _part(("o1", ""), ("o1", ""))
    answer = {"success": {"orgs": [{"orgId": "o1", "humanUserIds": ["b", "a"]}]}}
    result = _result()
    assert interpret(answer, part, result, ()) == Counts(2, 0, 0)
    assert result.created == ["a", "b"]


def test_fail_all_fails_every_user_of_the_part():
    result = _result()
    assert fail_all(_part(("o1", "u1"), ("o2", "u2")), result, "invalid-request", "no") == 2
    assert [(e["orgId"], e["userId"], e["reason"]) for e in result.failed] == [
        ("o1", "u1", "invalid-request"),
        ("o2", "u2", "invalid-request"),
    ]
