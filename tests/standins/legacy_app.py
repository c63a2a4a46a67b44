"""An application serving the companion's documented password-check contract
(docs/companion.md#any-application; companion/old_system/application.py).

It checks the ``ZITADEL-Signature`` as the contract says (HMAC-SHA256 with the shared key over
``<t>.<body>``, at most 300 s old) and answers 204 for a right password, 401 for a wrong one,
403 for a bad signature, 423 for a locked user, 429 in ``rate-limit`` mode. Config: ``key``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from legacy_server import LegacyServer, Response


def _signed(key: bytes, header: str, body: bytes) -> bool:
    parts = dict(pair.split("=", 1) for pair in header.split(",") if "=" in pair)
    stamp = parts.get("t", "")
    if not stamp.isdigit() or abs(time.time() - int(stamp)) > 300:
        return False
    want = hmac.new(key, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, parts.get("v1", ""))


def answer(server: LegacyServer, path: str, headers: dict[str, str], body: bytes) -> Response:
    if path != "/check-password":
        return 404, {}, b""
    if not _signed(server.config["key"].encode(), headers.get("zitadel-signature", ""), body):
        return 403, {}, b""
    if server.mode == "rate-limit":
        return 429, {"Retry-After": "1"}, b""
    request = json.loads(body)
    user = server.user(request.get("loginName", ""))
    if user is not None and user.state == "disabled":
        return 423, {}, b""
    verdict = server.password_check(request.get("loginName", ""), request.get("password", ""))
    if verdict == "locked":
        return 423, {}, b""
    return (204, {}, b"") if verdict == "right" else (401, {}, b"")
