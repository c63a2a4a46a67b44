"""The server every old-system stand-in runs on: real HTTP (or HTTPS) on 127.0.0.1, in-memory users.

Each vendor's stand-in (legacy_auth0.py, legacy_keycloak.py, legacy_cognito.py, legacy_okta.py,
legacy_firebase.py, legacy_app.py) is one ``answer(server, path, headers, body)`` function that
answers as the vendor documents (cited in its module and in docs/companion.md#old-systems); this
module holds what they share:

- ``users``: login name → ``LegacyUser`` (password and state: ``active``, ``disabled``, ``mfa``
  (a second factor enrolled), ``pending`` (the system's "right, but more to do" state: a required
  action, a new password, an expired password));
- the system's own brute-force protection: ``lockout_after`` consecutive wrong passwords lock the
  user (``locked``), as each vendor does it;
- ``mode``: ``normal``, ``slow`` (answers after ``delay`` seconds), ``rate-limit`` (the vendor's
  rate-limit answer), ``error`` (a 500);
- ``calls``: every request's path and parsed body, for assertions (e.g. that no call left);
- ``tls``: a certificate for 127.0.0.1 made on the spot (``make_certificate``), so a test can show
  that the companion refuses one it does not trust and accepts it with ``--old-system-ca-file``.

In tests::

    server = LegacyServer(legacy_auth0.answer, {"ana@example.com": LegacyUser("old-pass")},
                          client_id="companion", client_secret="s3cret").start()
    ... server.url ...
    server.stop()
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

Response = tuple[int, dict[str, str], bytes]
Answer = Callable[["LegacyServer", str, dict[str, str], bytes], Response]


@dataclasses.dataclass
class LegacyUser:
    password: str
    state: str = "active"  # active, disabled, mfa, pending, locked
    failures: int = 0


def json_response(status: int, body: dict, headers: dict[str, str] | None = None) -> Response:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode()


def form(body: bytes) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))


class LegacyServer:
    def __init__(
        self,
        answer: Answer,
        users: dict[str, LegacyUser],
        *,
        lockout_after: int = 0,
        tls: tuple[Path, Path] | None = None,
        **config: str,
    ) -> None:
        self.answer_fn = answer
        self.users = users
        self.lockout_after = lockout_after
        self.config = config
        self.mode = "normal"
        self.delay = 0.0
        self.calls: list[tuple[str, dict[str, str], bytes]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> LegacyServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def user(self, login: str) -> LegacyUser | None:
        return self.users.get(login)

    def password_check(self, login: str, password: str) -> str:
        """``unknown``, ``locked``, ``wrong`` or ``right``; counts consecutive failures and locks the
        user at ``lockout_after``, as the vendors' brute-force protections do."""
        with self._lock:
            user = self.users.get(login)
            if user is None:
                return "unknown"
            if user.state == "locked":
                return "locked"
            if user.password != password:
                user.failures += 1
                if self.lockout_after and user.failures >= self.lockout_after:
                    user.state = "locked"
                return "wrong"
            user.failures = 0
            return "right"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                with server._lock:
                    server.calls.append((self.path, headers, body))
                if server.mode == "slow":
                    time.sleep(server.delay)
                if server.mode == "error":
                    status, extra, data = json_response(500, {"error": "internal"})
                else:
                    status, extra, data = server.answer_fn(server, self.path, headers, body)
                try:
                    self.send_response(status)
                    for name, value in extra.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the companion gave up (its bound passed)

        return Handler


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (and its key), written to ``directory``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "legacy stand-in")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "legacy-cert.pem", directory / "legacy-key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path
