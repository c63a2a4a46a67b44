"""Bearer tokens: client credentials fetched and refreshed, a revoked token replaced once, the JWT profile."""

from __future__ import annotations

import json
import logging
import time

import pytest
from zitadel_fixtures import (  # noqa: F401 - pytest fixtures, used by name
    PAT,
    fast_client,
    hash_pool,
    leaked_secrets,
    make_user,
    rsa_key_pair,
    zitadel_fixture,
)
from zitadel_server import ZitadelServer

from transforms.zitadel_api.api_errors import (
    AuthError,
)
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import load_credentials


def _body(*user_ids: str, org: str = "1", timeout: str = "1m") -> bytes:
    users = [make_user(u, hash_pool()[0]) for u in user_ids]
    return json.dumps(
        {"dataOrgs": {"orgs": [{"orgId": org, "humanUsers": users}]}, "timeout": timeout}
    ).encode()


def test_client_credentials_fetch_and_refresh_tokens_before_expiry(tmp_path):
    secret = "client-secret-Q9zz"
    (tmp_path / "secret").write_text(secret)
    with ZitadelServer(clients={"importer": secret}, token_ttl=1) as server:
        creds = load_credentials(client_id="importer", client_secret_file=str(tmp_path / "secret"))
        client = AdminClient(server.url, creds)
        client.probe()
        time.sleep(0.9)  # past the refresh point (80% of the lifetime), before expiry
        client.import_data(_body("u1"), timeout=5)
        assert len(server.issued_tokens) == 2
        assert all(status != 401 for _, status in server.requests)


def test_client_credentials_with_a_wrong_secret_fail_cleanly(tmp_path):
    (tmp_path / "secret").write_text("wrong-secret-123")
    with ZitadelServer(clients={"importer": "right"}) as server:
        client = AdminClient(
            server.url, load_credentials(client_id="importer", client_secret_file=str(tmp_path / "secret"))
        )
        with pytest.raises(AuthError, match="token request rejected") as info:
            client.probe()
        assert "wrong-secret-123" not in str(info.value)


def test_revoked_token_is_replaced_once(tmp_path):
    (tmp_path / "secret").write_text("s3cr3t")
    with ZitadelServer(clients={"importer": "s3cr3t"}) as server:
        client = AdminClient(
            server.url, load_credentials(client_id="importer", client_secret_file=str(tmp_path / "secret"))
        )
        client.probe()
        server.revoke_all_tokens()
        client.import_data(_body("u1"), timeout=5)
        assert len(server.issued_tokens) == 2


def test_key_file_jwt_profile(tmp_path, caplog):
    private, public = rsa_key_pair()
    key_file = tmp_path / "sa.json"
    key_file.write_text(
        json.dumps({"type": "serviceaccount", "keyId": "k1", "key": private, "userId": "sa-1"})
    )
    other_private, _ = rsa_key_pair()
    wrong_file = tmp_path / "wrong.json"
    wrong_file.write_text(
        json.dumps({"type": "serviceaccount", "keyId": "k1", "key": other_private, "userId": "sa-1"})
    )
    caplog.set_level(logging.DEBUG)
    with ZitadelServer(keys={"k1": ("sa-1", public)}) as server:
        client = AdminClient(server.url, load_credentials(key_file=str(key_file)))
        client.probe()
        assert client.import_data(_body("u1"), timeout=5)["success"]["orgs"][0]["humanUserIds"] == ["u1"]
        with pytest.raises(AuthError, match="invalid"):
            AdminClient(server.url, load_credentials(key_file=str(wrong_file))).probe()
        leaks = leaked_secrets(caplog.text, [private.splitlines()[1], *server.issued_tokens])
    assert leaks == []
