"""HTTP with retries against the loopback test server: what is retried, backoff, Retry-After, bounds."""

from __future__ import annotations

import json
import time

import pytest
from zitadel_fixtures import PAT, fast_client, hash_pool, leaked_secrets, make_user, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from transforms.zitadel_api.api_errors import (
    RetriesExhausted,
)
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.transport import Retrier


def _body(*user_ids: str, org: str = "1", timeout: str = "1m") -> bytes:
    users = [make_user(u, hash_pool()[0]) for u in user_ids]
    return json.dumps(
        {"dataOrgs": {"orgs": [{"orgId": org, "humanUsers": users}]}, "timeout": timeout}
    ).encode()


TOKEN = Credentials("token", token=PAT)


@pytest.mark.parametrize("kind", ["502", "503", "504", "drop", "429"])
def test_transient_failures_are_retried(zitadel, kind):
    zitadel.faults.inject(kind, count=2)
    client = fast_client(zitadel.url, TOKEN)
    answer = client.import_data(_body("u1"), timeout=5)
    assert answer["success"]["orgs"][0]["humanUserIds"] == ["u1"]
    assert client.stats.retries == 2
    assert client.stats.throttled == (2 if kind == "429" else 0)


def test_retry_after_is_honoured(zitadel):
    zitadel.faults.retry_after = "1"
    zitadel.faults.inject("429")
    client = fast_client(zitadel.url, TOKEN)
    started = time.monotonic()
    client.import_data(_body("u1"), timeout=5)
    assert time.monotonic() - started >= 1.0


def test_backoff_grows_exponentially_with_full_jitter():
    retrier = Retrier(6, base=0.5, cap=4.0, sleep=lambda s: None, rng=lambda: 1.0)
    assert [retrier.delay(n, None) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert retrier.delay(1, retry_after=3.0) == 3.0
    jittered = Retrier(6, base=0.5, cap=4.0, sleep=lambda s: None, rng=lambda: 0.25)
    assert jittered.delay(3, None) == 0.5


def test_client_timeout_is_retried_and_the_lost_work_shows_as_already_existing(zitadel):
    # The timeout is far from both the slow answer and a quick one, so that a busy machine, which
    # slows every answer, turns no quick answer into a second timeout.
    zitadel.faults.slow_seconds = 6.0
    zitadel.faults.inject("slow")
    client = fast_client(zitadel.url, TOKEN)
    answer = client.import_data(_body("u1", "u2"), timeout=2.0)
    # The first call did the work, its answer was lost: the retry reports the users as existing.
    messages = [e["message"] for e in answer["errors"] if e["type"] == "human_user"]
    assert messages == ["ID=COMMAND-ziuna Message=Errors.User.AlreadyExisting"] * 2
    assert client.stats.retries == 1
    assert zitadel.added_event_counts() == {"u1": 1, "u2": 1}


def test_retries_are_bounded(zitadel):
    zitadel.faults.inject("503", count=10)
    client = fast_client(zitadel.url, TOKEN, max_attempts=3)
    with pytest.raises(RetriesExhausted, match="after 3 attempts"):
        client.import_data(_body("u1"), timeout=5)
    assert client.stats.requests == 3
