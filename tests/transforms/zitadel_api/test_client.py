"""The admin API client against the loopback test server: URLs, the probe, credentials in use."""

from __future__ import annotations

import json

import pytest
from zitadel_fixtures import PAT, fast_client, hash_pool, leaked_secrets, make_user, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from transforms.zitadel_api.api_errors import (
    AuthError,
)
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import Credentials, load_credentials

TOKEN = Credentials("token", token=PAT)


def _body(*user_ids: str, org: str = "1", timeout: str = "1m") -> bytes:
    users = [make_user(u, hash_pool()[0]) for u in user_ids]
    return json.dumps(
        {"dataOrgs": {"orgs": [{"orgId": org, "humanUsers": users}]}, "timeout": timeout}
    ).encode()


@pytest.mark.parametrize("url", ["ftp://x", "not a url", "https://", "https://x/?q=1"])
def test_bad_urls_are_rejected(url):
    with pytest.raises(ValueError):
        AdminClient(url, TOKEN)


def test_probe_with_a_bad_token_is_an_auth_error_without_the_token(zitadel):
    client = AdminClient(zitadel.url, Credentials("token", token="wrong-" + PAT))
    with pytest.raises(AuthError) as info:
        client.probe()
    assert "Token.Invalid" in str(info.value)
    assert leaked_secrets(str(info.value), ["wrong-" + PAT]) == []
    assert client.stats.requests == 1


def test_auth_failure_reported_as_http_500_is_not_retried(zitadel):
    # ZITADEL Cloud around v4.11 answered a missing token with 500 / code 2 (zitadel/zitadel#11730).
    zitadel.faults.auth_as_500 = True
    client = fast_client(zitadel.url, Credentials("token", token="nope"))
    with pytest.raises(AuthError, match="Unauthenticated"):
        client.import_data(_body("a"), timeout=5)
    assert client.stats.requests == 1 and client.stats.retries == 0


def test_token_file_credentials(zitadel, tmp_path):
    (tmp_path / "pat").write_text(PAT + "\n")
    credentials = load_credentials(token_file=str(tmp_path / "pat"))
    assert credentials.kind == "token" and credentials.token == PAT  # the trailing newline is dropped
    client = AdminClient(zitadel.url, credentials)
    client.probe()
    assert zitadel.requests[-1] == ("/admin/v1/events/_search", 200)  # the server accepted the token


def test_env_token_credentials(zitadel, monkeypatch):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    credentials = load_credentials()
    assert credentials.kind == "token" and credentials.token == PAT
    client = AdminClient(zitadel.url, credentials)
    client.probe()
    assert zitadel.requests[-1] == ("/admin/v1/events/_search", 200)
