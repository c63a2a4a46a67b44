"""The one HTTP call a check makes: HTTPS with the certificate checked, bounded in time and size.

- ``https://`` only, checked against the system's trust store (or ``ca_file``); plain ``http://``
  only to a loopback address (127.0.0.0/8, ::1, ``localhost``): the password never crosses a
  network in clear text (``check_url`` refuses anything else when the service starts).
- No redirects are followed (a redirect could carry the password elsewhere), no retries (each
  attempt counts against the user at the old system).
- The whole call, from connect to the last byte of the answer, ends by its bound: a timer shuts
  the socket down at the deadline, so a server that trickles bytes cannot hold a sign-in.
- Failures raise ``NoAnswer`` with a fixed phrase (timeout, refused, certificate not trusted, ...),
  never the URL's query (a Firebase Web API key travels there) or anything the server sent.

Example::

    poster = Poster(timeout=3.0)
    reply = poster.post("https://tenant.auth0.com/oauth/token", body, {"Content-Type": "..."})
"""

from __future__ import annotations

import dataclasses
import http.client
import ipaddress
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping

import orjson

__all__ = ["MAX_ANSWER", "NoAnswer", "Poster", "Reply", "check_url"]

MAX_ANSWER = 64 * 1024  # a token answer is a few KiB; more is not an answer a check needs


class NoAnswer(Exception):
    """The old system did not answer in time or at all; ``str()`` is a fixed phrase."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> urllib.parse.SplitResult:
    """The parsed URL, or ValueError (one line, naming scheme and host only) when it is not
    ``https://`` or ``http://`` to a loopback address."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if not host:
        raise ValueError("not an absolute http(s) URL")
    if parts.scheme == "https":
        return parts
    if parts.scheme == "http" and _loopback(host):
        return parts
    raise ValueError(
        f"{parts.scheme}://{host}: the password would travel unencrypted; use https:// "
        "(plain http only to a loopback address, for tests)"
    )


@dataclasses.dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    headers: Mapping[str, str]  # lower-cased names

    def json(self) -> dict[str, object]:
        """The body as a JSON object, or {} (an answer that is not one classifies as unexpected)."""
        try:
            value = orjson.loads(self.body)
        except orjson.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}

    def retry_after(self) -> float:
        """``Retry-After`` in seconds (0 when absent or a date), at most 300."""
        value = self.headers.get("retry-after", "")
        return min(float(value), 300.0) if value.isdigit() else 0.0


def _shutdown(held: list[socket.socket]) -> None:
    # The connection hands its socket to the response (and forgets it) once the headers are read;
    # the socket itself is held here so the deadline can always end the call.
    for sock in held:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Poster:
    """POSTs to one old system; ``timeout`` bounds each call end to end (seconds)."""

    def __init__(self, timeout: float, ca_file: str | None = None) -> None:
        if timeout <= 0:
            raise ValueError("the old system's timeout must be positive")
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=ca_file)  # verifies chain and host name

    def _connection(self, parts: urllib.parse.SplitResult, timeout: float) -> http.client.HTTPConnection:
        host, port = parts.hostname or "", parts.port
        if parts.scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=self.context)
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def post(self, url: str, body: bytes, headers: Mapping[str, str], timeout: float | None = None) -> Reply:
        """The old system's answer to one POST, or NoAnswer. ``timeout`` (at most the poster's)
        shortens the bound when less time is left."""
        parts = check_url(url)
        bound = min(self.timeout, timeout) if timeout is not None else self.timeout
        if bound <= 0:
            raise NoAnswer("no time left for the call")
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        deadline = time.monotonic() + bound
        connection = self._connection(parts, bound)
        held: list[socket.socket] = []
        timer = threading.Timer(bound, _shutdown, [held])
        timer.daemon = True
        timer.start()
        try:
            connection.connect()  # bounded by the socket's own timeout
            if connection.sock is not None:
                held.append(connection.sock)
            if time.monotonic() >= deadline:
                raise TimeoutError
            connection.request(
                "POST", target, body=body, headers={**headers, "Content-Length": str(len(body))}
            )
            answer = connection.getresponse()
            data = answer.read(MAX_ANSWER + 1)
            status = answer.status
            names = {name.lower(): value for name, value in answer.getheaders()}
        except ssl.SSLCertVerificationError:
            raise NoAnswer("TLS certificate not trusted") from None
        except ssl.SSLError:
            raise NoAnswer("TLS failed") from None
        except TimeoutError:
            raise NoAnswer("timed out") from None
        except ConnectionRefusedError:
            raise NoAnswer("connection refused") from None
        except (OSError, http.client.HTTPException):
            late = time.monotonic() >= deadline
            raise NoAnswer("timed out" if late else "connection failed") from None
        finally:
            timer.cancel()
            connection.close()
        if time.monotonic() > deadline:
            raise NoAnswer("timed out")
        if len(data) > MAX_ANSWER:
            return Reply(status, b"", names)  # too large to be a sign-in answer: unexpected
        return Reply(status, data, names)
