"""A ZITADEL export streamed item by item (transforms/sources/zitadel/export_reader.py)."""

from __future__ import annotations

import io

import pytest

from transforms.sources.zitadel.export_reader import ExportFormatError, iter_export


def test_iter_export_streams_items_and_folds_snake_case():
    doc = (
        b'{"timeout":"1m","data_orgsv1":{"orgs":[{"org_id":"1","label_policy":{"a":1},'
        b'"human_users":[{"userId":"u"},{"userId":"v"}],"orgMembers":[]}]}}'
    )
    items = list(iter_export(io.BytesIO(doc)))
    assert items == [
        (0, "orgId", "1", False),
        (0, "labelPolicy", {"a": 1}, False),
        (0, "humanUsers", {"userId": "u"}, True),
        (0, "humanUsers", {"userId": "v"}, True),
        (0, "", None, False),
    ]


@pytest.mark.parametrize(
    "raw, message",
    [
        (b'{"orgs": [{"orgId": "1", "humanUsers": [{"userId": "a"', "truncated or invalid JSON"),
        (b'{"users": []}', "not a ZITADEL export: no 'orgs' array"),
        (b'[{"orgId": "1"}]', "not a JSON object"),
        (b"", "empty"),
        (b'{"dataOrgs": {"orgs": []}, "timeout": "5m"}', "dataOrgs import body, not an export"),
        (b'{"orgs": {"orgId": "1"}}', "not an array of organizations"),
        (b'{"orgs": [1, 2]}', "organization 1 is not a JSON object"),
    ],
)
def test_iter_export_rejects_what_is_not_an_export(raw, message):
    with pytest.raises(ExportFormatError, match=message):
        list(iter_export(io.BytesIO(raw)))
