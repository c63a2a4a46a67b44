"""companion/old_system/application.py: the documented contract: a signed POST; 2xx right, 401/403
wrong, anything else unknown."""

from __future__ import annotations

import json

import pytest

from companion.old_system.answer import Outcome
from companion.old_system.application import Application
from companion.old_system.transport import Poster, Reply
from companion.signature import SignatureCheck

CHECK = Application(
    Poster(1.0), url="https://legacy.example.com/check-password", key=b"k", clock=lambda: 1_700_000_000
)


def test_the_request_is_signed_as_zitadel_signs_its_calls():
    request = CHECK.request("ana", "pw ✓")
    assert json.loads(request.body) == {"loginName": "ana", "password": "pw ✓"}
    SignatureCheck(b"k", clock=lambda: 1_700_000_000).verify(
        request.body, request.headers["ZITADEL-Signature"]
    )


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(200, Outcome.RIGHT), (204, Outcome.RIGHT), (401, Outcome.WRONG), (403, Outcome.WRONG),
     (423, Outcome.UNKNOWN), (429, Outcome.UNKNOWN), (404, Outcome.UNKNOWN), (500, Outcome.UNKNOWN)],
)  # fmt: skip
def test_statuses_classify_as_the_contract_says(status, outcome):
    assert CHECK.classify(Reply(status, b"", {})).outcome is outcome
