"""The admin API client against the loopback test server: auth, retries, classification, paging."""

from __future__ import annotations

import json
import logging
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from zitadel_fixtures import PAT, fast_client, hash_pool, leaked_secrets, make_user, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name
from zitadel_server import ZitadelServer

from transforms.zitadel_api import client as admin_api
from transforms.zitadel_api.client import AdminClient, load_credentials

TOKEN = admin_api.Credentials("token", token=PAT)


def _body(*user_ids: str, org: str = "1", timeout: str = "1m") -> bytes:
    users = [make_user(u, hash_pool()[0]) for u in user_ids]
    return json.dumps(
        {"dataOrgs": {"orgs": [{"orgId": org, "humanUsers": users}]}, "timeout": timeout}
    ).encode()


def _rsa_key_pair() -> tuple[str, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


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
    assert admin_api.classify(status, body).kind == kind


def test_scrub_removes_hashes_tokens_and_known_secrets():
    hashed = hash_pool()[0]
    text = (
        f'rejected {{"hashedPassword":{{"value":"{hashed}"}}}} Authorization: Bearer {PAT} '
        f'"access_token":"abc123" $argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA my-client-secret'
    )
    cleaned = admin_api.scrub(text, secrets=("my-client-secret",))
    assert leaked_secrets(cleaned, ["abc123", "my-client-secret", "$argon2id$v=19"]) == []
    assert "rejected" in cleaned


def test_load_credentials_rejects_none_and_several(tmp_path, monkeypatch):
    monkeypatch.delenv("ZITADEL_TOKEN", raising=False)
    token_file = tmp_path / "pat"
    token_file.write_text(PAT + "\n")
    with pytest.raises(admin_api.CredentialError, match="no credentials"):
        load_credentials()
    with pytest.raises(admin_api.CredentialError, match="one credential"):
        load_credentials(token_file=str(token_file), key_file=str(token_file))
    with pytest.raises(admin_api.CredentialError, match="needs --client-secret-file"):
        load_credentials(client_id="importer")
    with pytest.raises(admin_api.CredentialError, match="lacks"):
        load_credentials(key_file=str(_write(tmp_path / "k.json", '{"type":"serviceaccount"}')))
    assert load_credentials(token_file=str(token_file)).token == PAT
    assert PAT not in repr(load_credentials(token_file=str(token_file)))


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("url", ["ftp://x", "not a url", "https://", "https://x/?q=1"])
def test_bad_urls_are_rejected(url):
    with pytest.raises(ValueError):
        AdminClient(url, TOKEN)


def test_probe_with_a_bad_token_is_an_auth_error_without_the_token(zitadel):
    client = AdminClient(zitadel.url, admin_api.Credentials("token", token="wrong-" + PAT))
    with pytest.raises(admin_api.AuthError) as info:
        client.probe()
    assert "Token.Invalid" in str(info.value)
    assert leaked_secrets(str(info.value), ["wrong-" + PAT]) == []
    assert client.stats.requests == 1


def test_auth_failure_reported_as_http_500_is_not_retried(zitadel):
    # ZITADEL Cloud around v4.11 answered a missing token with 500 / code 2 (zitadel/zitadel#11730).
    zitadel.faults.auth_as_500 = True
    client = fast_client(zitadel.url, admin_api.Credentials("token", token="nope"))
    with pytest.raises(admin_api.AuthError, match="Unauthenticated"):
        client.import_data(_body("a"), timeout=5)
    assert client.stats.requests == 1 and client.stats.retries == 0


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
    retrier = admin_api._Retrier(6, base=0.5, cap=4.0, sleep=lambda s: None, rng=lambda: 1.0)
    assert [retrier.delay(n, None) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert retrier.delay(1, retry_after=3.0) == 3.0
    jittered = admin_api._Retrier(6, base=0.5, cap=4.0, sleep=lambda s: None, rng=lambda: 0.25)
    assert jittered.delay(3, None) == 0.5


def test_client_timeout_is_retried_and_the_lost_work_shows_as_already_existing(zitadel):
    zitadel.faults.slow_seconds = 1.0
    zitadel.faults.inject("slow")
    client = fast_client(zitadel.url, TOKEN)
    answer = client.import_data(_body("u1", "u2"), timeout=0.3)
    # The first call did the work, its answer was lost: the retry reports the users as existing.
    messages = [e["message"] for e in answer["errors"] if e["type"] == "human_user"]
    assert messages == ["ID=COMMAND-ziuna Message=Errors.User.AlreadyExisting"] * 2
    assert client.stats.retries == 1
    assert zitadel.added_event_counts() == {"u1": 1, "u2": 1}


def test_retries_are_bounded(zitadel):
    zitadel.faults.inject("503", count=10)
    client = fast_client(zitadel.url, TOKEN, max_attempts=3)
    with pytest.raises(admin_api.RetriesExhausted, match="after 3 attempts"):
        client.import_data(_body("u1"), timeout=5)
    assert client.stats.requests == 3


def test_invalid_request_is_not_retried(zitadel):
    bad = json.dumps(
        {
            "dataOrgs": {
                "orgs": [
                    {
                        "orgId": "1",
                        "humanUsers": [
                            make_user("ok", hash_pool()[0]),
                            make_user("bad", hash_pool()[1], preferredLanguage="en-u-rg-uszzzz"),
                        ],
                    }
                ]
            },
            "timeout": "1m",
        }
    ).encode()
    client = fast_client(zitadel.url, TOKEN)
    with pytest.raises(admin_api.InvalidRequest, match="PreferredLanguage") as info:
        client.import_data(bad, timeout=5)
    assert info.value.status == 400 and info.value.code == 3
    assert client.stats.requests == 1
    assert zitadel.user_ids() == set()  # one invalid user rejects the whole request


def test_server_deadline_is_raised_not_retried_and_keeps_work_done(zitadel):
    zitadel.faults.per_user_delay = 0.02
    client = fast_client(zitadel.url, TOKEN)
    with pytest.raises(admin_api.DeadlineExceeded):
        client.import_data(_body(*[f"u{i}" for i in range(10)], timeout="70ms"), timeout=5)
    assert client.stats.requests == 1
    assert 1 <= len(zitadel.user_ids()) < 10


def test_events_are_paged_by_sequence(zitadel):
    client = fast_client(zitadel.url, TOKEN)
    client.import_data(_body(*[f"a{i}" for i in range(13)], org="A"), timeout=5)
    client.import_data(_body(*[f"b{i}" for i in range(4)], org="B"), timeout=5)
    before = client.stats.requests
    events = list(client.iter_events(["user.human.added"], resource_owner="A", page_size=5))
    assert [e["aggregate"]["id"] for e in events] == [f"a{i}" for i in range(13)]
    assert client.stats.requests - before == 3
    sequences = [int(e["sequence"]) for e in events]
    assert sequences == sorted(sequences)


def test_export_returns_passwords_only_when_asked(zitadel):
    client = fast_client(zitadel.url, TOKEN)
    client.import_data(_body("u1", org="X"), timeout=5)
    plain = client.export(["X"])
    full = client.export(["X"], with_passwords=True)
    assert "hashedPassword" not in plain["orgs"][0]["humanUsers"][0]["user"]
    assert full["orgs"][0]["humanUsers"][0]["user"]["hashedPassword"]["value"] == hash_pool()[0]


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
        with pytest.raises(admin_api.AuthError, match="token request rejected") as info:
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
    private, public = _rsa_key_pair()
    key_file = tmp_path / "sa.json"
    key_file.write_text(
        json.dumps({"type": "serviceaccount", "keyId": "k1", "key": private, "userId": "sa-1"})
    )
    other_private, _ = _rsa_key_pair()
    wrong_file = tmp_path / "wrong.json"
    wrong_file.write_text(
        json.dumps({"type": "serviceaccount", "keyId": "k1", "key": other_private, "userId": "sa-1"})
    )
    caplog.set_level(logging.DEBUG)
    with ZitadelServer(keys={"k1": ("sa-1", public)}) as server:
        client = AdminClient(server.url, load_credentials(key_file=str(key_file)))
        client.probe()
        assert client.import_data(_body("u1"), timeout=5)["success"]["orgs"][0]["humanUserIds"] == ["u1"]
        with pytest.raises(admin_api.AuthError, match="invalid"):
            AdminClient(server.url, load_credentials(key_file=str(wrong_file))).probe()
        leaks = leaked_secrets(caplog.text, [private.splitlines()[1], *server.issued_tokens])
    assert leaks == []


def test_a_url_that_is_not_the_admin_api_fails_the_probe():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Page(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - stdlib naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b"<html>welcome to my blog</html>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        client = AdminClient(f"http://127.0.0.1:{httpd.server_address[1]}", TOKEN)
        with pytest.raises(admin_api.AdminApiError, match="not a JSON object"):
            client.probe()
    finally:
        httpd.shutdown()
        httpd.server_close()
