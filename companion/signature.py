"""The signature ZITADEL puts on every call to a target, checked before anything else is read.

ZITADEL signs a target's JSON payload in the header ``ZITADEL-Signature`` (pkg/actions/signing.go
in zitadel/zitadel; docs/companion.md#signature): ``t=<unix seconds>,v1=<hex>`` where the hex is
HMAC-SHA256 with the target's signing key over ``<t>.<raw body>``. During a key rotation a header
carries one ``v1=`` per key. ZITADEL's own check refuses a timestamp older than five minutes; the
companion does the same, refuses one more than a minute in the future, and remembers every
signature it accepted until it is stale, so that the same call sent twice is refused
(a replay inside the window).

Example::

    check = SignatureCheck(b"key")
    check.verify(body, request.headers.get("zitadel-signature"))  # raises BadSignature
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Callable

__all__ = ["BadSignature", "SignatureCheck", "sign"]

HEADER = "ZITADEL-Signature"
TOLERANCE_SECONDS = 300.0  # pkg/actions DefaultTolerance
FUTURE_SECONDS = 60.0
_MAX_HEADER = 1024


class BadSignature(Exception):
    """Why a call was refused; the text names no key, signature or body."""


def sign(body: bytes, key: bytes, at: int) -> str:
    """The header value ZITADEL sends for ``body`` at unix time ``at`` (tests, tools)."""
    mac = hmac.new(key, str(at).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={mac}"


def _parse(header: str) -> tuple[int, list[bytes]]:
    if len(header) > _MAX_HEADER:
        raise BadSignature("signature header too long")
    stamp: int | None = None
    signatures: list[bytes] = []
    for pair in header.split(","):
        parts = pair.strip().split("=")
        if len(parts) != 2:
            raise BadSignature("signature header malformed")
        name, value = parts
        if name == "t":
            if not value.isdigit() or len(value) > 12:
                raise BadSignature("signature header malformed")
            stamp = int(value)
        elif name == "v1":
            try:
                signatures.append(bytes.fromhex(value))
            except ValueError:
                continue  # as ZITADEL's own parser: an unreadable v1 is skipped
    if stamp is None or not signatures:
        raise BadSignature("signature header malformed")
    return stamp, signatures


class SignatureCheck:
    """Verifies ``ZITADEL-Signature`` against one or more keys (a rotation), with a replay cache."""

    def __init__(
        self,
        *keys: bytes,
        tolerance: float = TOLERANCE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not keys or not all(keys):
            raise ValueError("a signing key is needed")
        self._keys = keys
        self._tolerance = tolerance
        self._clock = clock
        self._seen: dict[bytes, float] = {}
        self._lock = threading.Lock()

    def verify(self, body: bytes, header: str | None) -> None:
        """Return when ``header`` signs ``body`` now and was not seen before; else BadSignature."""
        if not header:
            raise BadSignature("unsigned call")
        stamp, signatures = _parse(header)
        now = self._clock()
        if now - stamp > self._tolerance:
            raise BadSignature("stale call (signature timestamp outside the window)")
        if stamp - now > FUTURE_SECONDS:
            raise BadSignature("call from the future (signature timestamp ahead of this clock)")
        message = str(stamp).encode() + b"." + body
        expected = [hmac.new(key, message, hashlib.sha256).digest() for key in self._keys]
        match = None
        for given in signatures:
            for want in expected:
                if hmac.compare_digest(given, want):
                    match = want
        if match is None:
            raise BadSignature("signature does not match")
        with self._lock:
            for seen, at in list(self._seen.items()):
                if now - at > self._tolerance + FUTURE_SECONDS:
                    del self._seen[seen]
            if match in self._seen:
                raise BadSignature("replayed call (this signature was accepted before)")
            self._seen[match] = float(stamp)
