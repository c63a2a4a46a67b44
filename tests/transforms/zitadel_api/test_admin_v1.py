"""The admin v1 calls against the loopback test server: import answers, events paging, export, the probe."""

from __future__ import annotations

import json

import pytest
from zitadel_fixtures import PAT, fast_client, hash_pool, leaked_secrets, make_user, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from transforms.zitadel_api.api_errors import (
    AdminApiError,
    DeadlineExceeded,
    InvalidRequest,
)
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import Credentials


def _body(*user_ids: str, org: str = "1", timeout: str = "1m") -> bytes:
    users = [make_user(u, hash_pool()[0]) for u in user_ids]
    return json.dumps(
        {"dataOrgs": {"orgs": [{"orgId": org, "humanUsers": users}]}, "timeout": timeout}
    ).encode()


TOKEN = Credentials("token", token=PAT)


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
    with pytest.raises(InvalidRequest, match="PreferredLanguage") as info:
        client.import_data(bad, timeout=5)
    assert info.value.status == 400 and info.value.code == 3
    assert client.stats.requests == 1
    assert zitadel.user_ids() == set()  # one invalid user rejects the whole request


def test_server_deadline_is_raised_not_retried_and_keeps_work_done(zitadel):
    zitadel.faults.per_user_delay = 0.02
    client = fast_client(zitadel.url, TOKEN)
    with pytest.raises(DeadlineExceeded):
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
        with pytest.raises(AdminApiError, match="not a JSON object"):
            client.probe()
    finally:
        httpd.shutdown()
        httpd.server_close()
