"""companion/old_system/transport.py: HTTPS only (plain HTTP to loopback), the certificate checked,
no redirects, and every call bounded end to end, over real sockets."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from legacy_server import make_certificate

from companion.old_system.transport import MAX_ANSWER, NoAnswer, Poster, check_url


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://tenant.auth0.com/oauth/token", True),
        ("http://127.0.0.1:8080/x", True),
        ("http://127.8.9.1/x", True),
        ("http://[::1]:80/x", True),
        ("http://localhost:1/", True),
        ("http://sso.example.com/realms/a", False),
        ("http://10.0.0.1/", False),
        ("ftp://127.0.0.1/", False),
        ("/relative", False),
    ],
)
def test_only_https_or_loopback_http(url, ok):
    if ok:
        check_url(url)
    else:
        with pytest.raises(ValueError):
            check_url(url)


class _Server:
    def __init__(self, handler, tls=None):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        if tls:
            import ssl

            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*map(str, tls))
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _handler(status=200, body=b"{}", delay=0.0, trickle=False, headers=()):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(delay)
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for byte in body if trickle else [body]:
                    self.wfile.write(bytes([byte]) if trickle else byte)
                    self.wfile.flush()
                    if trickle:
                        time.sleep(0.2)
            except OSError:
                pass

    return Handler


def test_an_answer_is_read_with_status_body_and_headers():
    server = _Server(_handler(403, b'{"error": "x"}', headers=[("Retry-After", "3")]))
    try:
        reply = Poster(2.0).post(f"http://127.0.0.1:{server.port}/t", b"a=b", {"Content-Type": "x"})
        assert (reply.status, reply.json(), reply.retry_after()) == (403, {"error": "x"}, 3.0)
    finally:
        server.stop()


def test_a_slow_and_a_trickling_server_are_cut_at_the_bound():
    for handler in (_handler(delay=3.0), _handler(body=b"x" * 50, trickle=True)):
        server = _Server(handler)
        try:
            started = time.monotonic()
            with pytest.raises(NoAnswer, match="timed out"):
                Poster(0.5).post(f"http://127.0.0.1:{server.port}/", b"", {})
            assert time.monotonic() - started < 1.0
        finally:
            server.stop()


def test_a_shorter_budget_wins_and_none_left_means_no_call():
    server = _Server(_handler(delay=2.0))
    try:
        started = time.monotonic()
        with pytest.raises(NoAnswer):
            Poster(5.0).post(f"http://127.0.0.1:{server.port}/", b"", {}, timeout=0.3)
        assert time.monotonic() - started < 0.8
        with pytest.raises(NoAnswer, match="no time left"):
            Poster(5.0).post(f"http://127.0.0.1:{server.port}/", b"", {}, timeout=0)
    finally:
        server.stop()


def test_refused_connection_and_redirects_are_not_followed():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(NoAnswer, match="connection refused"):
        Poster(1.0).post(f"http://127.0.0.1:{port}/", b"", {})
    server = _Server(_handler(307, b"", headers=[("Location", "https://elsewhere.example/")]))
    try:
        assert Poster(1.0).post(f"http://127.0.0.1:{server.port}/", b"pw", {}).status == 307
    finally:
        server.stop()


def test_an_oversized_answer_is_dropped():
    server = _Server(_handler(200, b"x" * (MAX_ANSWER + 10)))
    try:
        assert Poster(2.0).post(f"http://127.0.0.1:{server.port}/", b"", {}).body == b""
    finally:
        server.stop()


def test_the_certificate_is_checked_and_a_ca_file_trusts_a_private_one(tmp_path):
    cert, key = make_certificate(tmp_path)
    server = _Server(_handler(200, b'{"ok": true}'), tls=(cert, key))
    try:
        with pytest.raises(NoAnswer, match="TLS certificate not trusted"):
            Poster(2.0).post(f"https://127.0.0.1:{server.port}/", b"", {})
        assert Poster(2.0, ca_file=str(cert)).post(f"https://127.0.0.1:{server.port}/", b"", {}).json() == {
            "ok": True
        }
    finally:
        server.stop()
