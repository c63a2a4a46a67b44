"""The ZITADEL calls the companion makes, through the project's API client (retries, token
refresh, secrets scrubbed from errors; transforms/zitadel_api/client.py).

- ``SetPassword`` (user service v2, ``POST /v2/users/{id}/password``): ZITADEL hashes the password
  with its own hasher; needs ``user.write`` on the user's organization.
- ``GetSession`` (session service v2, ``GET /v2/sessions/{id}``): who a ``SetSession`` is for;
  needs ``session.read`` on the user's organization.
- Actions v2 (``/v2/actions/targets``, ``/v2/actions/executions``) for ``companion setup``:
  needs ``action.target.write`` and ``action.execution.write`` (an instance role); the running
  service never needs them.

Example::

    calls = ZitadelCalls(connect_client("https://x.zitadel.cloud", credentials))
    calls.set_password("1234", password)
"""

from __future__ import annotations

import urllib.parse

from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import Credentials

__all__ = ["SESSION_METHODS", "ZitadelCalls", "client_for"]

# The session service's requests that carry a password check (zitadel.session.v2).
SESSION_METHODS = (
    "/zitadel.session.v2.SessionService/CreateSession",
    "/zitadel.session.v2.SessionService/SetSession",
)


def client_for(url: str, credentials: Credentials, timeout: float = 5.0) -> AdminClient:
    """A client for the service's calls: short timeout (ZITADEL waits for the answer within the
    target's own timeout) and two attempts. No probe call: an org-level credential may not reach
    the admin API the probe uses."""
    return AdminClient(url, credentials, timeout=timeout, max_attempts=2, backoff_cap=1.0)


def _quote(value: str) -> str:
    return urllib.parse.quote(value, safe="")


class ZitadelCalls:
    def __init__(self, client: AdminClient) -> None:
        self.client = client

    # --- what the running service calls ---------------------------------------------------------
    def set_password(self, user_id: str, password: str) -> None:
        self.client.request(
            "POST",
            f"/v2/users/{_quote(user_id)}/password",
            {"newPassword": {"password": password, "changeRequired": False}},
        )

    def session_user(self, session_id: str) -> str | None:
        answer = self.client.request("GET", f"/v2/sessions/{_quote(session_id)}")
        user = ((answer.get("session") or {}).get("factors") or {}).get("user") or {}
        user_id = user.get("id")
        return user_id if isinstance(user_id, str) and user_id else None

    # --- what `companion setup` calls -------------------------------------------------------------
    def find_target(self, name: str) -> dict[str, object] | None:
        answer = self.client.request(
            "POST",
            "/v2/actions/targets/search",
            {"filters": [{"targetNameFilter": {"targetName": name, "method": "TEXT_FILTER_METHOD_EQUALS"}}]},
        )
        for target in answer.get("targets") or []:
            if isinstance(target, dict) and target.get("name") == name:
                return target
        return None

    def create_target(
        self, name: str, endpoint: str, timeout: str, interrupt_on_error: bool
    ) -> dict[str, object]:
        return self.client.request(
            "POST",
            "/v2/actions/targets",
            {
                "name": name,
                "restWebhook": {"interruptOnError": interrupt_on_error},
                "timeout": timeout,
                "endpoint": endpoint,
                "payloadType": "PAYLOAD_TYPE_JSON",
            },
        )

    def update_target(
        self, target_id: str, endpoint: str, timeout: str, interrupt_on_error: bool, rotate_key: bool
    ) -> dict[str, object]:
        body: dict[str, object] = {
            "restWebhook": {"interruptOnError": interrupt_on_error},
            "timeout": timeout,
            "endpoint": endpoint,
        }
        if rotate_key:
            body["expirationSigningKey"] = "0s"
        return self.client.request("POST", f"/v2/actions/targets/{_quote(target_id)}", body)

    def executions(self) -> list[dict[str, object]]:
        answer = self.client.request("POST", "/v2/actions/executions/search", {})
        return [e for e in answer.get("executions") or [] if isinstance(e, dict)]

    def set_execution(self, method: str, targets: list[str]) -> None:
        self.client.request(
            "PUT",
            "/v2/actions/executions",
            {"condition": {"request": {"method": method}}, "targets": targets},
        )
