"""The admin API's failures: the error classes, how an answer is classified, and scrubbing.

Failures are classified by the HTTP status *and* the gRPC ``code``/``message`` of the body
(docs/zitadel-import-api.md#error-bodies: ZITADEL Cloud once answered a missing token with HTTP 500 and code 2
"Unauthenticated"): auth failures and invalid requests are never retried; 429, 502, 503, 504
(other than the server's own ``context deadline exceeded``) are worth another attempt. No token,
secret or password hash ever reaches a log line or an exception message: ``scrub`` removes them.

What a failure *is* is read from the gRPC code and the ``zitadel.v1.ErrorDetail`` id of the body
(``detail_id``), never from its text: ZITADEL's REST gateway writes ``"<text> (<id>)"`` where the
text is the key translated into the instance's language
(internal/api/grpc/gerrors/zitadel_errors.go ``ZITADELToGRPCError``), e.g.
``{"code":9,"message":"... (COMMAND-7yiox1isql)","details":[{"@type":
"type.googleapis.com/zitadel.v1.ErrorDetail","id":"COMMAND-7yiox1isql","message":"..."}]}``.
The text is kept for the operator. A Connect answer (the v2 services without a REST mapping,
e.g. the authorization service) names its code in words (``"already_exists"``) and carries the
detail as ``{"type": "zitadel.v1.ErrorDetail", "value": <base64 protobuf>}``: read the same way. A quota answer (``QUOTA-vjAy8`` ``Errors.Quota.Access.Exhausted``,
``LIMITS-molsj`` ``Errors.Limits.Instance.Blocked``: HTTP 429, gRPC 8) does not clear until the
quota's period ends: it is not retried (``QuotaExhausted``).

What an answer says about the *work* is one rule for every write (``unknown_outcome``;
docs/zitadel-admin-api.md#unknown-outcomes): a 2xx, a refusal of the request (4xx, an auth or quota
answer) and 429 are definitive (done, or not done); no answer, 502, 504 (with or without ZITADEL's
``{"code": 4, "message": "context deadline exceeded"}``: grpc-gateway maps DeadlineExceeded to 504,
and the command may have committed before the deadline hit) and a 503 whose body does not say it was
refused before the work are *unknown*: the caller reads back before it sends the write again.
Used by the transport (``transport.py``) and by every caller that catches a failed call::

    try:
        client.import_data(body, timeout=330.0)
    except DeadlineExceeded:
        ...  # split the body and send the halves
"""

from __future__ import annotations

import base64
import dataclasses
import email.utils
import json
import re
import time

__all__ = [
    "AdminApiError",
    "AuthError",
    "InvalidRequest",
    "DeadlineExceeded",
    "RetriesExhausted",
    "ServerGone",
    "QuotaExhausted",
    "QUOTA_IDS",
    "route_absent",
    "Failure",
    "classify",
    "error_for",
    "classify_error",
    "scrub",
    "unknown_outcome",
    "send_again",
]

_MAX_ERROR_TEXT = 300
_ERROR_DETAIL = "zitadel.v1.ErrorDetail"
# The detail ids of an exhausted quota or a blocked instance (internal/api/grpc/server/middleware/
# limits_interceptor.go ``LimitsInterceptor``): ResourceExhausted until the period ends.
QUOTA_IDS = ("QUOTA-vjAy8", "LIMITS-molsj")
_RETRYABLE_STATUS = {429, 502, 503, 504}
# Statuses after which the request may have done its work: no answer (0), a gateway that lost the
# answer, a deadline that hit whenever it did. 503 is one unless its body says otherwise.
_UNKNOWN_STATUS = (0, 502, 503, 504)
# A 503 answered before the request reached a server that works: Envoy's (and so Google's load
# balancers') text for no backend to send it to, or ZITADEL's own gRPC Unavailable/ResourceExhausted.
_REFUSED_BEFORE_WORK = ("no healthy upstream",)
_REFUSED_CODES = (8, 14)

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


class AdminApiError(Exception):
    """A failed call. ``status`` (0 for no answer), gRPC ``code``, a scrubbed ``message`` (for the
    operator) and ``detail_id``, the ``zitadel.v1.ErrorDetail`` id ('' when the body had none)."""

    retry_after: float | None = None  # the answer's Retry-After in seconds (RetriesExhausted sets it)

    def __init__(
        self,
        message: str,
        status: int = 0,
        code: int | None = None,
        detail_id: str = "",
        unknown: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.detail_id = detail_id
        # Whether the request may have done its work (``unknown_outcome``); by default from the status.
        self.unknown = status in _UNKNOWN_STATUS if unknown is None else unknown


class AuthError(AdminApiError):
    """Unauthenticated or permission denied: a bad or expired credential. Never retried."""


class InvalidRequest(AdminApiError):
    """The server rejected the request (gRPC InvalidArgument and other 4xx). Never retried."""


class DeadlineExceeded(AdminApiError):
    """The server's own import ``timeout`` elapsed; work done so far is kept (split and retry)."""


class RetriesExhausted(AdminApiError):
    """A retryable failure persisted through ``max_attempts`` attempts; ``retry_after``: the
    last answer's ``Retry-After`` in seconds (None: none), for a caller that retries itself."""


class ServerGone(AdminApiError):
    """Several requests in a row got no answer at all; every further call fails at once with this."""


class QuotaExhausted(AdminApiError):
    """The instance's quota is used up or the instance is blocked (``QUOTA_IDS``): not retried,
    since it does not clear until the quota's period ends."""


def route_absent(err: AdminApiError) -> bool:
    """The server does not serve the call's route (an older server, a service left out), as opposed
    to refusing the request: gRPC Unimplemented, or HTTP 404/405/501 without a ZITADEL error detail
    (ZITADEL's own NotFound answers carry one)."""
    return err.code == 12 or (err.status in (404, 405, 501) and not err.detail_id)


def unknown_outcome(err: AdminApiError) -> bool:
    """True when ``err`` leaves open whether the request did its work: read back before sending
    it again. The one rule of every write (docs/zitadel-admin-api.md#unknown-outcomes).

    >>> unknown_outcome(classify_error(504, b'{"code": 4, "message": "context deadline exceeded"}'))
    True
    >>> unknown_outcome(classify_error(503, b"no healthy upstream"))  # never reached ZITADEL
    False
    >>> unknown_outcome(ServerGone("3 requests in a row got no answer"))  # never sent
    False
    """
    if isinstance(err, ServerGone | AuthError | InvalidRequest | QuotaExhausted):
        return False
    return err.unknown


def send_again(err: AdminApiError) -> bool:
    """True when a write that failed with ``err`` is worth another attempt of the caller's own
    loop: a retryable answer (429, a 503 before the work) or an unknown outcome (read back first)."""
    return isinstance(err, RetriesExhausted) or unknown_outcome(err)


@dataclasses.dataclass(frozen=True)
class Failure:
    kind: str  # "auth" | "invalid" | "deadline" | "retry" | "quota" | "fatal"
    status: int
    code: int | None
    message: str
    retry_after: float | None = None
    detail_id: str = ""
    unknown: bool = False  # the request may have done its work (``unknown_outcome``)


# Connect's error codes in words (connectrpc.com protocol, "Error Codes") → the gRPC numbers.
_CONNECT_CODES = {
    "canceled": 1, "unknown": 2, "invalid_argument": 3, "deadline_exceeded": 4, "not_found": 5,
    "already_exists": 6, "permission_denied": 7, "resource_exhausted": 8, "failed_precondition": 9,
    "aborted": 10, "out_of_range": 11, "unimplemented": 12, "internal": 13, "unavailable": 14,
    "data_loss": 15, "unauthenticated": 16,
}  # fmt: skip


def _proto_string(data: bytes, field: int) -> str:
    """The first string of ``field`` in a protobuf message's bytes ('' when absent or malformed)."""
    at = 0
    try:
        while at < len(data):
            key, at = _varint(data, at)
            number, wire = key >> 3, key & 7
            if wire == 2:
                size, at = _varint(data, at)
                if number == field:
                    return data[at : at + size].decode("utf-8", "replace")
                at += size
            elif wire == 0:
                _, at = _varint(data, at)
            else:
                return ""
    except IndexError:
        return ""
    return ""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _detail_id(parsed: dict) -> str:
    """The id of the first ``zitadel.v1.ErrorDetail`` of an answer's ``details``, or '': the
    gateway's ``{"@type", "id"}``, or Connect's ``{"type", "value"}`` (the message's field 1)."""
    for detail in parsed.get("details") or []:
        if not isinstance(detail, dict):
            continue
        if str(detail.get("@type", "")).endswith(_ERROR_DETAIL):
            return str(detail.get("id") or "")
        if str(detail.get("type", "")).endswith(_ERROR_DETAIL):
            raw = str(detail.get("value") or "")
            try:
                return _proto_string(base64.b64decode(raw + "=" * (-len(raw) % 4)), 1)
            except ValueError:
                return ""
    return ""


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def classify(status: int, body: bytes, retry_after: str | None = None) -> Failure:
    """Classify a non-2xx answer by its status and its gRPC-gateway body.

    >>> classify(500, b'{"code":2,"message":"rpc error: code = Unauthenticated desc = auth header missing ()"}').kind
    'auth'
    >>> classify(503, b"<html>upstream</html>").kind
    'retry'
    """
    code: int | None = None
    message = ""
    detail = ""
    try:
        parsed = json.loads(body or b"{}")
        if isinstance(parsed, dict):
            code = parsed.get("code") if isinstance(parsed.get("code"), int) else None
            code = _CONNECT_CODES.get(str(parsed.get("code"))) if code is None else code
            message = str(
                parsed.get("message") or parsed.get("error_description") or parsed.get("error") or ""
            )
            detail = _detail_id(parsed)
    except ValueError:
        message = body[:200].decode("utf-8", "replace")
    message = scrub(message) or f"HTTP {status}"
    lowered = message.lower()
    refused_first = code in _REFUSED_CODES or any(text in lowered for text in _REFUSED_BEFORE_WORK)
    unknown = status in _UNKNOWN_STATUS and not (status == 503 and refused_first)
    auth_words = ("unauthenticated", "permissiondenied", "permission denied", "auth header missing")
    if status in (401, 403) or code in (7, 16) or any(w in lowered for w in auth_words):
        return Failure("auth", status, code, message, detail_id=detail)
    if code == 4 and "deadline exceeded" in lowered:
        return Failure("deadline", status, code, message, detail_id=detail, unknown=True)
    if detail in QUOTA_IDS:
        return Failure("quota", status, code, message, detail_id=detail)
    if status in _RETRYABLE_STATUS or code in (8, 14):
        return Failure("retry", status, code, message, _parse_retry_after(retry_after), detail, unknown)
    if 400 <= status < 500 or code in (3, 5, 9):
        return Failure("invalid", status, code, message, detail_id=detail)
    return Failure("fatal", status, code, message, detail_id=detail, unknown=unknown)


def error_for(failure: Failure, path: str, attempts: int, method: str = "POST") -> AdminApiError:
    status = f"HTTP {failure.status}" if failure.status else "no answer"
    text = f"{method} {path}: {failure.message} ({status}"
    text += f", code {failure.code})" if failure.code is not None else ")"
    cls = {
        "auth": AuthError,
        "invalid": InvalidRequest,
        "deadline": DeadlineExceeded,
        "quota": QuotaExhausted,
        "fatal": AdminApiError,
    }.get(failure.kind)
    if cls is None:
        exhausted = RetriesExhausted(
            f"{text} after {attempts} attempts",
            failure.status,
            failure.code,
            failure.detail_id,
            failure.unknown,
        )
        exhausted.retry_after = failure.retry_after
        return exhausted
    return cls(text, failure.status, failure.code, failure.detail_id, failure.unknown)


def classify_error(status: int, body: bytes, path: str = "/", method: str = "POST") -> AdminApiError:
    """The error a client raises for one non-2xx answer of one attempt (``classify``, then
    ``error_for``): what ``unknown_outcome`` reads."""
    return error_for(classify(status, body), path, 1, method)
