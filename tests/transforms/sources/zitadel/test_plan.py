"""The data_orgsv1 planner: which body each item of an export goes to, and in what order
(transforms/sources/zitadel/plan.py)."""

from __future__ import annotations

import io

import orjson

from transforms.files.spill import read_spill
from transforms.sources.zitadel.plan import plan_export


def _human(uid: str) -> dict:
    return {"userId": uid, "user": {"userName": f"{uid}@example.com"}}


def _plan(tmp_path, doc: dict, batch_size: int):
    work = tmp_path / "work"
    work.mkdir()
    dead = io.BytesIO()
    plan = plan_export(io.BytesIO(orjson.dumps(doc)), str(tmp_path), batch_size, str(work), dead)
    return plan, [orjson.loads(line) for line in dead.getvalue().splitlines()]


DOC = {
    "orgs": [
        {
            "orgId": "a",
            "org": {"name": "A"},
            "projects": [{"projectId": "pa"}],
            "humanUsers": [_human("a1"), _human("a2"), _human("a3")],
            # b1 lives in org b: this grant travels in a cross body after b1's users body.
            "userGrants": [{"userId": "b1", "projectId": "pa"}, {"userId": "a1", "projectId": "pa"}],
            "orgMembers": [{"userId": "ghost"}],
        },
        {
            "orgId": "b",
            "org": {"name": "B"},
            "humanUsers": [_human("b1")],
            "projectGrants": [{"projectId": "pa", "grantedOrgId": "a"}],
        },
    ]
}


def test_bodies_in_document_order_with_their_order_constraints(tmp_path):
    plan, _ = _plan(tmp_path, DOC, batch_size=2)
    got = [(b.index, b.kind, b.org_id, b.users, b.records, b.after) for b in plan.bodies]
    assert got == [
        (0, "head", "a", 0, 1, []),
        (1, "users", "a", 2, 1, [0]),  # a1's grant on org a's project
        (2, "users", "a", 1, 0, [0]),
        (3, "cross", "a", 0, 1, [0, 6]),  # after the body holding b1
        (4, "head", "b", 0, 0, []),
        (5, "grants", "b", 0, 1, [0, 4]),  # the granted org's head first
        (6, "users", "b", 1, 0, [4]),
    ]
    assert plan.org_ids == ["a", "b"]


def test_a_record_naming_a_user_outside_the_export_is_a_dead_letter(tmp_path):
    plan, dead = _plan(tmp_path, DOC, batch_size=2)
    assert [(d["reason"], d["record"]["orgId"], d["record"]["field"]) for d in dead] == [
        ("user-not-in-export", "a", "orgMembers")
    ]
    assert plan.dead_by_reason == {"user-not-in-export": 1}
    placed = sum(b.users + b.machines + b.records for b in plan.bodies)
    assert plan.counts["items_read"] == placed + len(dead)


def test_segments_hold_each_body_items_as_field_and_item_lines(tmp_path):
    plan, _ = _plan(tmp_path, DOC, batch_size=2)
    cross = plan.bodies[3]
    lines = [orjson.loads(raw) for path in cross.segments for raw in read_spill(path).splitlines()]
    assert lines == [["userGrants", {"userId": "b1", "projectId": "pa"}]]
    assert cross.element() == (3, "a", b'{"name":"A"}', tuple(cross.segments))
