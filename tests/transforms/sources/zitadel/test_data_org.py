"""A body's DataOrg from its segments (transforms/sources/zitadel/data_org.py)."""

from __future__ import annotations

from transforms.sources.zitadel.data_org import render_data_org


def test_render_data_org_orders_fields_like_the_proto():
    segments = [b'["userMetadata",{"id":"u"}]\n["humanUsers",{"userId":"u"}]\n["=labelPolicy",{"x":1}]\n']
    org = render_data_org("7", b'{"name":"A"}', segments)
    assert list(org) == ["orgId", "org", "labelPolicy", "humanUsers", "userMetadata"]
