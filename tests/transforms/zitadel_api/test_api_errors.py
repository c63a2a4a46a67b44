"""The admin API's failures: classification by status and gRPC body, scrubbing of secrets."""

from __future__ import annotations

import pytest
from zitadel_fixtures import PAT, fast_client, hash_pool, leaked_secrets, make_user, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from transforms.zitadel_api import api_errors
from transforms.zitadel_api.api_errors import (
    classify,
    classify_error,
    scrub,
    send_again,
    unknown_outcome,
)


@pytest.mark.parametrize(
    "status, body, kind",
    [
        (401, b'{"code":16,"message":"auth header missing"}', "auth"),
        (
            500,
            b'{"code":2,"message":"rpc error: code = Unauthenticated desc = auth header missing ()"}',
            "auth",
        ),
        (403, b'{"code":7,"message":"No matching permissions found"}', "auth"),
        (400, b'{"code":3,"message":"invalid ImportHumanUserRequest.UserName"}', "invalid"),
        (504, b'{"code":4,"message":"context deadline exceeded"}', "deadline"),
        (504, b"<html>gateway timeout</html>", "retry"),
        (502, b"", "retry"),
        (503, b'{"code":14,"message":"unavailable"}', "retry"),
        (429, b'{"code":8,"message":"rate limit"}', "retry"),
        (500, b'{"code":13,"message":"internal"}', "fatal"),
    ],
)
def test_classify_by_status_and_grpc_body(status, body, kind):
    assert classify(status, body).kind == kind


def test_scrub_removes_hashes_tokens_and_known_secrets():
    hashed = hash_pool()[0]
    text = (
        f'rejected {{"hashedPassword":{{"value":"{hashed}"}}}} Authorization: Bearer {PAT} '
        f'"access_token":"abc123" $argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA my-client-secret'
    )
    cleaned = scrub(text, secrets=("my-client-secret",))
    assert leaked_secrets(cleaned, ["abc123", "my-client-secret", "$argon2id$v=19"]) == []
    assert "rejected" in cleaned


_QUOTA = (
    b'{"code":8,"message":"Errors.Quota.Access.Exhausted (QUOTA-vjAy8)","details":'
    b'[{"@type":"type.googleapis.com/zitadel.v1.ErrorDetail","id":"QUOTA-vjAy8"}]}'
)


@pytest.mark.parametrize(
    "err, unknown, again",
    [
        # The work may have been done: no answer, a gateway that lost the answer, a deadline.
        (api_errors.RetriesExhausted("no answer", 0), True, True),
        (classify_error(504, b'{"code": 4, "message": "context deadline exceeded"}'), True, True),
        (classify_error(504, b"<html>gateway timeout</html>"), True, True),
        (classify_error(502, b""), True, True),
        (classify_error(503, b"upstream connect error or disconnect/reset before headers"), True, True),
        # Refused before the work: sent again after the backoff, nothing to read back.
        (classify_error(503, b"no healthy upstream"), False, True),
        (classify_error(503, b'{"code":14,"message":"unavailable"}'), False, True),
        (classify_error(429, b'{"code":8,"message":"rate limit"}'), False, True),
        # Definitive: ZITADEL answered the request itself.
        (classify_error(400, b'{"code":3,"message":"invalid"}'), False, False),
        (classify_error(409, b'{"code":6,"message":"exists"}'), False, False),
        (classify_error(500, b'{"code":13,"message":"internal"}'), False, False),
        (classify_error(401, b'{"code":16,"message":"auth header missing"}'), False, False),
        (classify_error(429, _QUOTA), False, False),
        (api_errors.ServerGone("3 requests in a row got no answer"), False, False),  # never sent
    ],
)
def test_one_rule_says_whether_a_failed_write_may_have_done_its_work(err, unknown, again):
    assert (unknown_outcome(err), send_again(err)) == (unknown, again)
