"""The ZITADEL admin API client: credentials, token refresh, retries, error classification.

It knows nothing of Beam; ``pipeline/push.py`` and ``pipeline/verify.py`` use it, and a DoFn can
open one in ``setup()``. Example::

    creds = load_credentials(token_file="pat.txt")
    client = AdminClient("https://my-instance.zitadel.cloud", creds, max_attempts=6)
    client.probe()                                   # one cheap authenticated call: fail fast
    answer = client.import_data(body_bytes, timeout=330.0)
    for event in client.iter_events(["user.human.added"], resource_owner="123"):
        ...

Failures are classified by the HTTP status *and* the gRPC ``code``/``message`` of the body
(docs/zitadel-import-api.md#error-bodies: ZITADEL Cloud once answered a missing token with HTTP 500 and code 2
"Unauthenticated"): auth failures and invalid requests are never retried; 429, 502, 503, 504
(other than the server's own ``context deadline exceeded``), dropped connections and client
timeouts are retried with exponential backoff, full jitter and ``Retry-After``. No token, secret or
password hash ever reaches a log line or an exception message: response texts are scrubbed.
"""

from __future__ import annotations

import base64
import dataclasses
import email.utils
import http.client
import json
import logging
import os
import random
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from transforms.common.errors import ConfigError

__all__ = [
    "connect",
    "AdminApiError",
    "AuthError",
    "InvalidRequest",
    "DeadlineExceeded",
    "RetriesExhausted",
    "ServerGone",
    "NoAnswerStop",
    "CredentialError",
    "Credentials",
    "load_credentials",
    "normalise_base_url",
    "TokenSource",
    "AdminClient",
    "classify",
    "scrub",
    "ZITADEL_SCOPE",
]

_LOGGER = logging.getLogger(__name__)

ZITADEL_SCOPE = "openid urn:zitadel:iam:org:project:id:zitadel:aud"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_MAX_ERROR_TEXT = 300
_RETRYABLE_STATUS = {429, 502, 503, 504}

# Password hashes (MCF / PHC), bearer tokens, JWTs and token fields in echoed bodies.
_SCRUB_PATTERNS = [
    re.compile(r"\$(?:2[aby]|argon2(?:id|i|d)?|pbkdf2[-\w]*|scrypt|md5|[156PH])\$[^\s\"',}]*"),
    re.compile(r"(?i)bearer\s+[^\s\"',}]+"),
    re.compile(r"eyJ[\w-]+\.[\w-]+\.[\w-]*"),
    re.compile(
        r"(?i)(\"?(?:access_token|client_secret|assertion|password|token|key)\"?\s*[:=]\s*\"?)[^\s\"',}&]+"
    ),
]


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove hashes, tokens and known secrets from ``text`` and cut it to a readable length.

    >>> scrub('bad {"hashedPassword":{"value":"$2b$10$abc"}}')
    'bad {"hashedPassword":{"value":"[redacted]"}}'
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    for pattern in _SCRUB_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + "[redacted]", text)
        else:
            text = pattern.sub("[redacted]", text)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_ERROR_TEXT else text[:_MAX_ERROR_TEXT] + "…"


# --- errors ---------------------------------------------------------------------------------
class AdminApiError(Exception):
    """A failed call. ``status`` (0 for no answer), gRPC ``code`` and a scrubbed ``message``."""

    def __init__(self, message: str, status: int = 0, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class AuthError(AdminApiError):
    """Unauthenticated or permission denied: a bad or expired credential. Never retried."""


class InvalidRequest(AdminApiError):
    """The server rejected the request (gRPC InvalidArgument and other 4xx). Never retried."""


class DeadlineExceeded(AdminApiError):
    """The server's own import ``timeout`` elapsed; work done so far is kept (split and retry)."""


class RetriesExhausted(AdminApiError):
    """A retryable failure persisted through ``max_attempts`` attempts."""


class CredentialError(ValueError):
    """Credentials could not be loaded (missing file, malformed key file)."""


@dataclasses.dataclass(frozen=True)
class _Failure:
    kind: str  # "auth" | "invalid" | "deadline" | "retry" | "fatal"
    status: int
    code: int | None
    message: str
    retry_after: float | None = None


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def classify(status: int, body: bytes, retry_after: str | None = None) -> _Failure:
    """Classify a non-2xx answer by its status and its gRPC-gateway body.

    >>> classify(500, b'{"code":2,"message":"rpc error: code = Unauthenticated desc = auth header missing ()"}').kind
    'auth'
    >>> classify(503, b"<html>upstream</html>").kind
    'retry'
    """
    code: int | None = None
    message = ""
    try:
        parsed = json.loads(body or b"{}")
        if isinstance(parsed, dict):
            code = parsed.get("code") if isinstance(parsed.get("code"), int) else None
            message = str(
                parsed.get("message") or parsed.get("error_description") or parsed.get("error") or ""
            )
    except ValueError:
        message = body[:200].decode("utf-8", "replace")
    message = scrub(message) or f"HTTP {status}"
    lowered = message.lower()
    auth_words = ("unauthenticated", "permissiondenied", "permission denied", "auth header missing")
    if status in (401, 403) or code in (7, 16) or any(w in lowered for w in auth_words):
        return _Failure("auth", status, code, message)
    if code == 4 and "deadline exceeded" in lowered:
        return _Failure("deadline", status, code, message)
    if status in _RETRYABLE_STATUS or code in (8, 14):
        return _Failure("retry", status, code, message, _parse_retry_after(retry_after))
    if 400 <= status < 500 or code in (3, 5, 9):
        return _Failure("invalid", status, code, message)
    return _Failure("fatal", status, code, message)


# --- credentials ----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Credentials:
    """One of: a bearer ``token`` (PAT / access token), ``client_id`` + ``client_secret``, or a
    service-account ``key`` (the parsed JSON key file). ``repr`` never shows a secret."""

    kind: str  # "token" | "client" | "key"
    token: str = dataclasses.field(default="", repr=False)
    client_id: str = ""
    client_secret: str = dataclasses.field(default="", repr=False)
    key: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)

    def secrets(self) -> tuple[str, ...]:
        """Strings to scrub from anything that is logged."""
        return tuple(s for s in (self.token, self.client_secret, self.key.get("key", "")) if s)


# A bearer token is one header value: visible ASCII, no space, no line break (RFC 6750 b64token
# and the opaque tokens ZITADEL issues). Checked before any header is built, so http.client's
# "Invalid header value" error, which would print the whole header, can never happen.
_TOKEN_CHARS = re.compile(r"[\x21-\x7e]+")
_KEY_FIELDS = ("type", "keyId", "key", "userId")


def _looks_like(value: str, what: str, key_flag: str, header: bool = True) -> str | None:
    """Why ``value`` (stripped) cannot be a token or secret, in words that never quote it.

    ``header``: the value is sent as it is in a header (a bearer token), so it must also be one
    run of visible characters and not JSON; a client secret (sent base64-encoded) is only refused
    when it spans several lines or is a key file.

    >>> _looks_like('{"type":"serviceaccount","keyId":"1","key":"-----BEGIN"}', "token file t", "--key-file")
    'token file t is a service-account key: give it as --key-file'
    >>> _looks_like("abc\\ndef", "ZITADEL_TOKEN", "ZITADEL_KEY_FILE")
    'ZITADEL_TOKEN holds 2 lines: a token is one line'
    """
    if value[:1] in '{["':
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and (
            parsed.get("type") in ("serviceaccount", "application")
            or any(k in parsed for k in _KEY_FIELDS[1:])
        ):
            return f"{what} is a service-account key: give it as {key_flag}"
        if header and isinstance(parsed, dict | list | str):
            kind = {dict: "a JSON object", list: "a JSON array", str: "a quoted JSON string"}[type(parsed)]
            return f"{what} holds {kind}, not a token: a token is one line of text"
    lines = len(value.splitlines())
    if lines > 1:
        return f"{what} holds {lines} lines: a token is one line"
    if header and not _TOKEN_CHARS.fullmatch(value):
        return f"{what} holds a space or a character a token cannot have (not shown)"
    return None


def _read_text(path: str, what: str) -> str:
    """A credential file's text, surrounding whitespace stripped; one line naming the flag (never
    the file's name, which may be a secret pasted in its place, nor its content) when it cannot be
    read, is not UTF-8 or is empty."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read().strip()
    except UnicodeDecodeError:
        raise CredentialError(f"{what} is not UTF-8 text (a binary file?)") from None
    except OSError as err:
        raise CredentialError(
            f"cannot read {what}: {err.strerror} (the name given is not shown: it may be a secret)"
        ) from None
    if not text:
        raise CredentialError(f"{what} is empty")
    return text


def _read_secret(path: str, what: str, header: bool = True) -> str:
    """A file's text with surrounding whitespace stripped, checked by ``_looks_like``; never quoted."""
    value = _read_text(path, what)
    problem = _looks_like(value, what, "--key-file", header)
    if problem:
        raise CredentialError(problem)
    return value


def _read_key_file(path: str, what: str, token_flag: str) -> Credentials:
    """A service-account JSON key (``{type, keyId, key, userId}``); its text is never quoted."""
    text = _read_text(path, what)
    try:
        key = json.loads(text)
    except ValueError:
        hint = f" (one line: a token? give it as {token_flag})" if len(text.splitlines()) == 1 else ""
        raise CredentialError(f"{what} is not JSON{hint}") from None
    missing = [f for f in _KEY_FIELDS[1:] if not isinstance(key, dict) or not key.get(f)]
    if missing:
        raise CredentialError(f"{what} lacks {', '.join(missing)}")
    return Credentials("key", key={k: str(key[k]) for k in _KEY_FIELDS[1:]})


def load_credentials(
    token_file: str | None = None,
    client_id: str | None = None,
    client_secret_file: str | None = None,
    key_file: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Credentials:
    """Pick the credential from the flags (at most one kind), else env ``ZITADEL_TOKEN`` or
    ``ZITADEL_KEY_FILE`` (one of them).

    A token's surrounding whitespace is stripped; a token of several lines, or one that is JSON (a
    service-account key given as a token is the usual mistake), is refused with one line that says
    what it looks like and never quotes it.

    >>> load_credentials(environ={"ZITADEL_TOKEN": "pat"}).kind
    'token'
    """
    environ = os.environ if environ is None else environ
    given = [
        name
        for name, v in (("--token-file", token_file), ("--client-id", client_id), ("--key-file", key_file))
        if v
    ]
    if len(given) > 1:
        raise CredentialError(f"give one credential, not {' and '.join(given)}")
    if client_secret_file and not client_id:
        raise CredentialError("--client-secret-file needs --client-id")
    if token_file:
        return Credentials("token", token=_read_secret(token_file, "the --token-file file"))
    if client_id:
        if not client_secret_file:
            raise CredentialError("--client-id needs --client-secret-file")
        return Credentials(
            "client",
            client_id=client_id,
            client_secret=_read_secret(client_secret_file, "the --client-secret-file file", header=False),
        )
    if key_file:
        return _read_key_file(key_file, "the --key-file file", "--token-file")
    token = environ.get("ZITADEL_TOKEN", "").strip()
    env_key_file = environ.get("ZITADEL_KEY_FILE", "").strip()
    if token and env_key_file:
        raise CredentialError("both ZITADEL_TOKEN and ZITADEL_KEY_FILE are set: unset one")
    if env_key_file:
        return _read_key_file(env_key_file, "the ZITADEL_KEY_FILE file", "ZITADEL_TOKEN")
    if token:
        problem = _looks_like(token, "ZITADEL_TOKEN", "ZITADEL_KEY_FILE (a path)")
        if problem:
            raise CredentialError(problem)
        return Credentials("token", token=token)
    raise CredentialError(
        "no credentials: give --token-file, --client-id/--client-secret-file, --key-file or set "
        "ZITADEL_TOKEN or ZITADEL_KEY_FILE"
    )


def normalise_base_url(url: str) -> str:
    """Check and normalise the instance URL (``https://x.zitadel.cloud/`` → without the slash)."""
    parsed = urllib.parse.urlsplit(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    if parsed.query or parsed.fragment:
        raise ValueError(f"the URL must not have a query or fragment: {url!r}")
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, parsed.path.rstrip("/"), "", ""))


# --- HTTP ------------------------------------------------------------------------------------
@dataclasses.dataclass
class _Answer:
    status: int
    body: bytes
    retry_after: str | None


class _Transport:
    """One request per connection: imports are slow, and a fresh socket never reuses a dead one.

    ``timeout`` bounds the whole request, from connect to the last byte of the answer: the socket
    timeout alone bounds each read, so a server that drips a byte a second would never time out.
    A timer shuts the socket down when the deadline passes; whatever was blocked then fails, and
    the request ends as a ``TimeoutError``.
    """

    def __init__(self, base_url: str) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname or ""
        self._port = parsed.port
        self._prefix = parsed.path

    def post(self, path: str, body: bytes, headers: dict[str, str], timeout: float) -> _Answer:
        return self.request("POST", path, body, headers, timeout)

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> _Answer:
        if not _PATH.fullmatch(path):
            # http.client would raise InvalidURL, an HTTPException: retried like a dropped line.
            raise _BadPath(f"{method} {path!r}: the path has a space or control character (quote ids)")
        for name, value in headers.items():
            if not _HEADER_VALUE.fullmatch(value):
                # Never reach http.client, whose ValueError quotes the whole header (a token).
                raise _BadHeader(f"the {name} header holds a character a header cannot carry (not shown)")
        deadline = time.monotonic() + timeout
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=timeout)
        expired = threading.Event()
        timer: threading.Timer | None = None
        try:
            conn.connect()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no complete answer within {timeout:g} s")
            assert conn.sock is not None
            conn.sock.settimeout(left)
            timer = threading.Timer(left, _cut, (conn.sock, expired))
            timer.daemon = True
            timer.start()
            conn.request(method, self._prefix + path, body=body, headers=headers)
            response = conn.getresponse()
            answer = _Answer(response.status, response.read(), response.getheader("Retry-After"))
            if expired.is_set():  # the answer may have been cut short: not an answer
                raise TimeoutError(f"no complete answer within {timeout:g} s")
            return answer
        except _CONNECTION_ERRORS:
            if expired.is_set():
                raise TimeoutError(f"no complete answer within {timeout:g} s") from None
            raise
        finally:
            if timer is not None:
                timer.cancel()
            conn.close()


# Visible ASCII and inner spaces: what every header the client builds holds ("Bearer <token>",
# "Basic <base64>", media types). Anything else is refused before http.client sees it.
_HEADER_VALUE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")


class _BadHeader(ValueError):
    """A header value the client refuses to send; the message never holds the value."""


_PATH = re.compile(r"/[\x21-\x7e]*")


class _BadPath(ValueError):
    """A request path with a space or control character (an id not URL-quoted)."""


def _cut(sock: Any, expired: threading.Event) -> None:
    """The request's deadline passed: shut its socket down so the blocked read or write returns."""
    expired.set()
    try:
        # socket.socket's own shutdown also for TLS sockets: it only wakes the blocked call.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


_CONNECTION_ERRORS = (OSError, http.client.HTTPException)  # socket.timeout is an OSError


class _Retrier:
    """Bounded attempts with exponential backoff and full jitter, at least ``Retry-After``."""

    def __init__(
        self,
        max_attempts: int,
        base: float,
        cap: float,
        sleep: Callable[[float], None],
        rng: Callable[[], float],
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.max_attempts, self.base, self.cap = max_attempts, base, cap
        self._sleep, self._rng = sleep, rng

    def delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = self._rng() * min(self.cap, self.base * 2 ** (attempt - 1))
        return max(backoff, retry_after or 0.0)

    def wait(self, attempt: int, retry_after: float | None) -> None:
        self._sleep(self.delay(attempt, retry_after))


@dataclasses.dataclass
class CallStats:
    """Counters, read by the push report (requests, retries, throttled, failed)."""

    requests: int = 0
    retries: int = 0
    throttled: int = 0
    failures: int = 0
    token_fetches: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    def bump(self, name: str) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)


class ServerGone(AdminApiError):
    """Several requests in a row got no answer at all; every further call fails at once with this."""


class NoAnswerStop:
    """Stops a run whose server went away, instead of timing out once per remaining request.

    Counts the requests in a row that ended without any answer (every attempt timed out, was
    refused or dropped); any answer, even an error, resets the count. From ``limit`` on, every
    further request fails at once with ``ServerGone``. One per client, shared by its threads, so
    the bulk import and per-user calls alike stop after ``limit`` dead requests.
    """

    def __init__(self, limit: int = 3) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._row = 0
        self._last = ""
        self._lock = threading.Lock()

    @property
    def tripped(self) -> bool:
        with self._lock:
            return self._row >= self.limit

    def check(self) -> None:
        """Raise ServerGone if ``limit`` requests in a row got no answer."""
        with self._lock:
            if self._row >= self.limit:
                raise ServerGone(f"{self._row} requests in a row got no answer (last: {self._last})")

    def record(self, answered: bool, message: str = "") -> None:
        with self._lock:
            if answered:
                self._row = 0
            else:
                self._row += 1
                self._last = message


def _send_with_retries(
    transport: _Transport,
    retrier: _Retrier,
    stats: CallStats,
    path: str,
    body: bytes | None,
    headers: Callable[[], dict[str, str]],
    timeout: float,
    secrets: Callable[[], tuple[str, ...]],
    on_auth_failure: Callable[[], bool] | None = None,
    on_attempt: Callable[[], None] | None = None,
    method: str = "POST",
    stop: NoAnswerStop | None = None,
) -> bytes:
    """Send until success, a non-retryable failure, or ``max_attempts``; returns the 2xx body.

    ``timeout`` bounds each attempt from connect to the last byte, so a request takes at most
    about ``max_attempts`` x ``timeout`` plus the backoff. ``stop`` counts requests that got no
    answer at all and fails this one at once (``ServerGone``) once too many did.
    """
    attempt = 0
    refreshed = False
    while True:
        attempt += 1
        if stop is not None:
            stop.check()
        stats.bump("requests")
        if on_attempt is not None:
            on_attempt()
        try:
            answer = transport.request(method, path, body, headers(), timeout)
        except _BadHeader as err:
            stats.bump("failures")
            raise AuthError(f"{method} {path}: {err}") from None
        except _BadPath as err:
            stats.bump("failures")
            raise InvalidRequest(str(err)) from None
        except _CONNECTION_ERRORS as err:
            failure = _Failure("retry", 0, None, scrub(f"{type(err).__name__}: {err}", secrets()))
        else:
            if 200 <= answer.status < 300:
                if stop is not None:
                    stop.record(True)
                return answer.body
            failure = classify(answer.status, answer.body, answer.retry_after)
            failure = dataclasses.replace(failure, message=scrub(failure.message, secrets()))
        if failure.kind == "auth" and on_auth_failure and not refreshed and on_auth_failure():
            # A token that expired early (clock skew, revocation race): one fresh token, one retry.
            refreshed = True
            attempt -= 1
            continue
        if failure.kind != "retry" or attempt >= retrier.max_attempts:
            stats.bump("failures")
            if stop is not None:
                stop.record(failure.status != 0, failure.message)
            raise _error_for(failure, path, attempt, method)
        if failure.status == 429:
            stats.bump("throttled")
        stats.bump("retries")
        _LOGGER.info(
            "%s %s: %s (HTTP %s); retry %d of %d",
            method,
            path,
            failure.message,
            failure.status,
            attempt,
            retrier.max_attempts - 1,
        )
        retrier.wait(attempt, failure.retry_after)


def _error_for(failure: _Failure, path: str, attempts: int, method: str = "POST") -> AdminApiError:
    status = f"HTTP {failure.status}" if failure.status else "no answer"
    text = f"{method} {path}: {failure.message} ({status}"
    text += f", code {failure.code})" if failure.code is not None else ")"
    cls = {
        "auth": AuthError,
        "invalid": InvalidRequest,
        "deadline": DeadlineExceeded,
        "fatal": AdminApiError,
    }.get(failure.kind)
    if cls is None:
        return RetriesExhausted(f"{text} after {attempts} attempts", failure.status, failure.code)
    return cls(text, failure.status, failure.code)


class TokenSource:
    """Bearer tokens for the credentials: a static token as is; OAuth tokens fetched from
    ``/oauth/v2/token`` and refreshed before they expire (thread-safe)."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        transport: _Transport,
        retrier: _Retrier,
        stats: CallStats,
        timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
        stop: NoAnswerStop | None = None,
    ) -> None:
        self._base_url = base_url
        self._stop = stop
        self._creds = credentials
        self._transport = transport
        self._retrier = retrier
        self._stats = stats
        self._timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._token = credentials.token if credentials.kind == "token" else ""
        self._refresh_at = float("inf") if credentials.kind == "token" else 0.0
        self._issued: list[str] = []

    @property
    def refreshable(self) -> bool:
        return self._creds.kind != "token"

    def secrets(self) -> tuple[str, ...]:
        """The credential's secrets and every token fetched so far (for scrubbing)."""
        return self._creds.secrets() + tuple(self._issued)

    def get(self) -> str:
        with self._lock:
            if self._clock() >= self._refresh_at:
                self._fetch()
            return self._token

    def invalidate(self) -> bool:
        """Forget the current token; True if a new one can be fetched."""
        if not self.refreshable:
            return False
        with self._lock:
            self._refresh_at = 0.0
        return True

    def _fetch(self) -> None:
        form: dict[str, str] = {"scope": ZITADEL_SCOPE}
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if self._creds.kind == "client":
            form["grant_type"] = "client_credentials"
            pair = (
                f"{urllib.parse.quote(self._creds.client_id)}:{urllib.parse.quote(self._creds.client_secret)}"
            )
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form["grant_type"] = JWT_BEARER
            form["assertion"] = self._assertion()
        body = urllib.parse.urlencode(form).encode()
        try:
            raw = _send_with_retries(
                self._transport,
                self._retrier,
                self._stats,
                "/oauth/v2/token",
                body,
                lambda: headers,
                self._timeout,
                self.secrets,
                stop=self._stop,
            )
        except (RetriesExhausted, ServerGone):
            raise
        except AdminApiError as err:
            raise AuthError(f"token request rejected: {err.message}", err.status, err.code) from None
        self._stats.bump("token_fetches")
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise AuthError("the token endpoint's answer is not a JSON object")
        token, lifetime = answer.get("access_token"), answer.get("expires_in") or 3600
        if not isinstance(token, str) or not token:
            raise AuthError("token endpoint answered without an access_token")
        if not _TOKEN_CHARS.fullmatch(token):
            raise AuthError("the token endpoint's access_token is not one run of visible characters")
        try:
            lifetime = float(lifetime)
        except (TypeError, ValueError):
            raise AuthError("the token endpoint's expires_in is not a number") from None
        self._token = token
        self._issued.append(token)
        # Refresh early: a fifth of the lifetime, at most a minute, so no request carries a token
        # that expires while it waits in a queue.
        self._refresh_at = self._clock() + lifetime - min(60.0, lifetime * 0.2)
        _LOGGER.info("fetched an access token valid for %.0f s", lifetime)

    def _assertion(self) -> str:
        import jwt  # pyjwt[crypto]; imported here so token/PAT users need no cryptography

        now = int(self._clock())
        key = self._creds.key
        claims = {
            "iss": key["userId"],
            "sub": key["userId"],
            "aud": self._base_url,
            "iat": now,
            "exp": now + 3600,
        }
        try:
            return jwt.encode(claims, key["key"], algorithm="RS256", headers={"kid": key["keyId"]})
        except (ValueError, TypeError, jwt.PyJWTError) as err:
            raise AuthError(f"cannot sign with the key file's key: {type(err).__name__}") from None


class AdminClient:
    """The admin API calls the tool needs. Thread-safe: share one client between push threads.

    ``timeout`` is the client-side timeout for calls other than import (import takes its own).
    """

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        timeout: float = 30.0,
        max_attempts: int = 6,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        no_answer_limit: int = 3,
    ) -> None:
        self.base_url = normalise_base_url(base_url)
        self.timeout = timeout
        self.stats = CallStats()
        self.stop = NoAnswerStop(no_answer_limit)
        self._transport = _Transport(self.base_url)
        self._retrier = _Retrier(max_attempts, backoff_base, backoff_cap, sleep, rng)
        self.tokens = TokenSource(
            self.base_url, credentials, self._transport, self._retrier, self.stats, timeout, stop=self.stop
        )

    def _headers(self) -> dict[str, str]:
        token = self.tokens.get()
        if not _TOKEN_CHARS.fullmatch(token):  # checked when loaded too; never handed to http.client
            raise AuthError("the bearer token holds a character a header cannot carry (not shown)")
        return {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }

    def request(
        self,
        method: str,
        path: str,
        body: bytes | Mapping[str, Any] | None = None,
        timeout: float | None = None,
        on_attempt: Callable[[], None] | None = None,
        retrier: _Retrier | None = None,
        org_id: str | None = None,
    ) -> dict:
        """Any authenticated JSON call (``PUT /v2/users/human/{id}``, ``POST /admin/v1/import``):
        retries, token refresh, the whole-request ``timeout`` (default the client's), the
        no-answer stop; returns the answer's JSON object (``{}`` for an empty answer).
        ``org_id`` sends the management API's ``x-zitadel-orgid`` (the org the call acts in).

        >>> client.request("POST", "/v2/users/123/deactivate", {})  # doctest: +SKIP
        """
        data = body if isinstance(body, bytes | None) else json.dumps(dict(body)).encode()
        headers = self._headers if not org_id else (lambda: {**self._headers(), "x-zitadel-orgid": org_id})
        raw = _send_with_retries(
            self._transport,
            retrier or self._retrier,
            self.stats,
            path,
            data,
            headers,
            self.timeout if timeout is None else timeout,
            self.tokens.secrets,
            self.tokens.invalidate,
            on_attempt,
            method=method,
            stop=self.stop,
        )
        try:
            answer = json.loads(raw or b"{}")
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            # A proxy or a wrong base URL answering 200 with a page: not the admin API.
            raise AdminApiError(
                f"{method} {path}: the answer is not a JSON object "
                f"({scrub(raw[:80].decode('utf-8', 'replace'), self.tokens.secrets())!r})",
                200,
            )
        return answer

    def _post_json(
        self,
        path: str,
        body: bytes,
        timeout: float,
        on_attempt: Callable[[], None] | None = None,
        retrier: _Retrier | None = None,
    ) -> Any:
        return self.request("POST", path, body, timeout, on_attempt, retrier)

    def import_data(
        self, body_bytes: bytes, timeout: float, on_attempt: Callable[[], None] | None = None
    ) -> dict:
        """POST /admin/v1/import with a complete ImportDataRequest body; returns the response.

        Raises DeadlineExceeded when the server's own ``timeout`` elapsed (split the body),
        InvalidRequest for a rejected request, AuthError, or RetriesExhausted. ``on_attempt`` is
        called before every HTTP attempt (the caller's per-body request count).
        """
        answer = self._post_json("/admin/v1/import", body_bytes, timeout, on_attempt)
        problem = _import_answer_problem(answer)
        if problem:
            raise AdminApiError(f"POST /admin/v1/import: not an import answer ({problem})", 200)
        return answer

    def search_events(
        self,
        event_types: list[str] | None = None,
        resource_owner: str = "",
        sequence: int = 0,
        limit: int = 1000,
        asc: bool = True,
        aggregate_types: list[str] | None = None,
        aggregate_id: str = "",
    ) -> list[dict]:
        """POST /admin/v1/events/_search; one page of events."""
        request: dict[str, Any] = {"asc": asc, "limit": limit}
        if event_types:
            request["eventTypes"] = event_types
        if resource_owner:
            request["resourceOwner"] = resource_owner
        if sequence:
            request["sequence"] = str(sequence)
        if aggregate_types:
            request["aggregateTypes"] = aggregate_types
        if aggregate_id:
            request["aggregateId"] = aggregate_id
        answer = self._post_json("/admin/v1/events/_search", json.dumps(request).encode(), self.timeout)
        problem = _events_answer_problem(answer)
        if problem:
            raise AdminApiError(f"POST /admin/v1/events/_search: not an events answer ({problem})", 200)
        return list(answer.get("events") or [])

    def iter_events(
        self, event_types: list[str], resource_owner: str = "", page_size: int = 1000
    ) -> Iterator[dict]:
        """All matching events, oldest first, paged by sequence (each event once)."""
        sequence, seen = 0, set()
        while True:
            page = self.search_events(event_types, resource_owner, sequence, page_size, asc=True)
            fresh = 0
            for event in page:
                ident = (
                    (event.get("aggregate") or {}).get("id"),
                    event.get("sequence"),
                    (event.get("type") or {}).get("type"),
                )
                if ident in seen:
                    continue
                seen.add(ident)
                fresh += 1
                yield event
            last = max((int(e.get("sequence") or 0) for e in page), default=0)
            # Stop at a short page, or when paging stops advancing (a server whose sequences are
            # per aggregate would otherwise loop forever).
            if len(page) < page_size or fresh == 0 or last <= sequence:
                if page and last <= sequence:
                    _LOGGER.warning("events search: sequence paging did not advance; stopped")
                return
            sequence = last

    def export(
        self,
        org_ids: list[str] | None = None,
        with_passwords: bool = False,
        timeout: str = "10m0s",
        client_timeout: float | None = None,
    ) -> dict:
        """POST /admin/v1/export with responseOutput; returns ``{"orgs": [...]}``."""
        request: dict[str, Any] = {"responseOutput": True, "timeout": timeout}
        if org_ids:
            request["orgIds"] = org_ids
        if with_passwords:
            request["withPasswords"] = True
        return self._post_json(
            "/admin/v1/export", json.dumps(request).encode(), client_timeout or self.timeout
        )

    def export_document(self, request: Mapping[str, Any], client_timeout: float | None = None) -> bytes:
        """POST /admin/v1/export with a full ExportDataRequest; returns the answer's bytes unparsed.

        With ``responseOutput`` the answer is the export document itself (possibly GB): it is not
        parsed here, so the caller can write it as it came and stream it later. With ``gcsOutput``
        the server writes the document to the bucket and the answer carries nothing more.
        """
        return _send_with_retries(
            self._transport,
            self._retrier,
            self.stats,
            "/admin/v1/export",
            json.dumps(dict(request)).encode(),
            self._headers,
            client_timeout or self.timeout,
            self.tokens.secrets,
            self.tokens.invalidate,
            stop=self.stop,
        )

    def probe(self, timeout: float = 10.0) -> None:
        """One cheap authenticated call (events search, limit 1) so a bad URL or token fails now."""
        quick = _Retrier(2, 0.2, 1.0, time.sleep, random.random)
        answer = self._post_json(
            "/admin/v1/events/_search",
            b'{"limit":1,"asc":false}',
            min(timeout, self.timeout),
            retrier=quick,
        )
        if "events" not in answer and answer:
            raise AdminApiError("POST /admin/v1/events/_search: the answer has no 'events'", 200)
        problem = _events_answer_problem(answer)
        if problem:
            raise AdminApiError(f"POST /admin/v1/events/_search: not an events answer ({problem})", 200)


def _list_of_objects(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return f"{name} is a {type(value).__name__}, not a list"
    bad = next((i for i, item in enumerate(value) if not isinstance(item, dict)), None)
    return None if bad is None else f"{name}[{bad}] is a {type(value[bad]).__name__}, not an object"


def _import_answer_problem(answer: dict) -> str | None:
    """What makes a 200 answer not an ImportDataResponse (``{errors: [...], success: {orgs}}``).

    >>> _import_answer_problem({"errors": {"id": "1"}})
    'errors is a dict, not a list'
    """
    problem = _list_of_objects(answer.get("errors"), "errors")
    if problem:
        return problem
    success = answer.get("success")
    if success is None:
        return None
    if not isinstance(success, dict):
        return f"success is a {type(success).__name__}, not an object"
    problem = _list_of_objects(success.get("orgs"), "success.orgs")
    if problem:
        return problem
    for i, org in enumerate(success.get("orgs") or []):
        ids = org.get("humanUserIds")
        if ids is not None and (not isinstance(ids, list) or not all(isinstance(u, str) for u in ids)):
            return f"success.orgs[{i}].humanUserIds is not a list of ids"
    return None


def _events_answer_problem(answer: dict) -> str | None:
    """What makes a 200 answer not a ListEventsResponse (``{events: [{aggregate, sequence, ...}]}``)."""
    events = answer.get("events")
    problem = _list_of_objects(events, "events")
    if problem:
        return problem
    for i, event in enumerate(events or []):
        for field in ("aggregate", "type"):
            if event.get(field) is not None and not isinstance(event[field], dict):
                return f"events[{i}].{field} is a {type(event[field]).__name__}, not an object"
        try:
            int(event.get("sequence") or 0)
        except (TypeError, ValueError):
            return f"events[{i}].sequence is not a number"
    return None


def connect(
    url: str, credentials: Credentials, max_attempts: int = 6, timeout: float = 30.0, **client_options: Any
) -> AdminClient:
    """An AdminClient that has passed the probe call; ConfigError with one line otherwise.

    >>> client = connect("https://x.zitadel.cloud", credentials)  # doctest: +SKIP
    """
    try:
        client = AdminClient(url, credentials, max_attempts=max_attempts, timeout=timeout, **client_options)
    except ValueError as err:
        raise ConfigError(f"--url: {err}") from None
    try:
        client.probe()
    except AuthError as err:
        raise ConfigError(f"{client.base_url}: authentication failed: {err.message}") from None
    except (RetriesExhausted, ServerGone) as err:
        raise ConfigError(f"{client.base_url}: not reachable: {err.message}") from None
    except AdminApiError as err:
        raise ConfigError(
            f"{client.base_url}: does not answer like a ZITADEL admin API: {err.message}"
        ) from None
    return client
