"""``companion setup``: the target and the two executions, through the Actions v2 API; idempotent.

- The target (a ``restWebhook``, JSON payload signed with ``ZITADEL-Signature``) is found by name;
  it is created when missing, else brought to the given endpoint, timeout and
  ``interruptOnError`` (and made a new signing key with ``rotate_key``).
- The signing key ZITADEL answers with (at creation or rotation; also the listed target's key
  when the file is missing) is written to one file of mode 0600, never printed.
- The request executions of ``SessionService/CreateSession`` and ``SetSession`` get the target
  added to the targets they already call (kept, in order); an execution that has it is left alone.

Example::

    for line in set_up(calls, name="zitadel-beam-companion", endpoint="https://c.example.com/",
                       timeout="10s", interrupt_on_error=False, rotate_key=False,
                       key_path="companion-signing-key"):
        print(line)
"""

from __future__ import annotations

import os
import tempfile

from companion.zitadel import SESSION_METHODS, ZitadelCalls
from transforms.zitadel_api.api_errors import AdminApiError

__all__ = ["SetupError", "set_up", "write_private"]


class SetupError(Exception):
    """One line: which call failed and how (no key)."""


def write_private(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600 from the first byte on (atomic replace)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".companion-key-")  # mkstemp creates 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _method(execution: dict[str, object]) -> str | None:
    """The method of an execution's request condition (None for other conditions)."""
    condition = execution.get("condition")
    request = condition.get("request") if isinstance(condition, dict) else None
    method = request.get("method") if isinstance(request, dict) else None
    return method if isinstance(method, str) else None


def set_up(
    calls: ZitadelCalls,
    *,
    name: str,
    endpoint: str,
    timeout: str,
    interrupt_on_error: bool,
    rotate_key: bool,
    key_path: str,
) -> list[str]:
    lines: list[str] = []
    try:
        target = calls.find_target(name)
        if target is None:
            created = calls.create_target(name, endpoint, timeout, interrupt_on_error)
            target_id, key = str(created.get("id") or ""), created.get("signingKey")
            lines.append(f"target {name} created (id {target_id})")
        else:
            target_id = str(target.get("id") or "")
            updated = calls.update_target(target_id, endpoint, timeout, interrupt_on_error, rotate_key)
            key = updated.get("signingKey") if rotate_key else None
            if key is None and not os.path.exists(key_path):
                key = target.get("signingKey")  # Target carries it for action.target.read
            lines.append(f"target {name} exists (id {target_id}); endpoint, timeout and interruptOnError set")
        if not target_id:
            raise SetupError("the Actions v2 API answered without a target id")
        if key:
            write_private(key_path, str(key).encode())
            lines.append(f"signing key written to {key_path} (mode 0600); serve reads it from there")
        elif target is not None:
            lines.append(
                "signing key unchanged (written when the target was created; --rotate-key makes a new one)"
            )
        else:
            raise SetupError("the Actions v2 API answered without a signing key")
        existing = {_method(e): e.get("targets") for e in calls.executions()}
        for method in SESSION_METHODS:
            held = existing.get(method)
            targets = [t for t in held if isinstance(t, str)] if isinstance(held, list) else []
            if target_id in targets:
                lines.append(f"execution request {method}: already calls the target")
                continue
            calls.set_execution(method, targets + [target_id])
            lines.append(f"execution request {method}: calls the target (after {len(targets)} other targets)")
    except AdminApiError as err:
        raise SetupError(f"Actions v2 API: {err.message}") from None
    return lines
