"""The admin API's failures: classification by status and gRPC body, scrubbing of secrets."""

from __future__ import annotations

import pytest
from zitadel_fixtures import PAT, fast_client, hash_pool, leaked_secrets, make_user, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from transforms.zitadel_api.api_errors import (
    classify,
    scrub,
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
