"""The ZITADEL calls the companion makes, through the project's API client (retries, token
refresh, secrets scrubbed from errors; transforms/zitadel_api/client.py).

- ``SetPassword`` (user service v2, ``POST /v2/users/{id}/password``): ZITADEL hashes the password
  with its own hasher; needs ``user.write`` on the user's organization. Sent one attempt at a time:
  after an attempt whose outcome is unknown (no answer, 502, 504: api_errors.unknown_outcome) the
  user is read back (``GET /v2/users/{id}``, ``human.passwordChanged``) and a password that landed
  is not set again (each set is a ``password.changed`` event ZITADEL may mail the user about).
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

import time
import urllib.parse

from transforms.sync.read_back import CLOCK_SLACK, parse_time
from transforms.zitadel_api import api_errors
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
        """Set the password; returns once ZITADEL confirmed it or a read back shows it landed.
        Raises the client's last error otherwise (the user stays in the store)."""
        path = f"/v2/users/{_quote(user_id)}/password"
        body = {"newPassword": {"password": password, "changeRequired": False}}
        first_sent: float | None = None  # when the first attempt of unknown outcome was sent
        attempt = 0
        while True:
            attempt += 1
            sent_at = time.time()
            try:
                self.client.request("POST", path, body, retrier=self.client.single_attempt())
                return
            except api_errors.AdminApiError as err:
                if api_errors.unknown_outcome(err):
                    first_sent = sent_at if first_sent is None else first_sent
                last_try = not api_errors.send_again(err) or attempt >= self.client.max_attempts
                if last_try and first_sent is None:
                    raise
                if not last_try:
                    self.client.backoff(attempt, err.retry_after)
                if first_sent is not None and self._password_since(user_id, first_sent):
                    return
                if last_try:
                    raise

    def _password_since(self, user_id: str, since: float) -> bool:
        """The user's password was written at or after ``since`` (less the clocks' slack); False
        when it was not, or the read got no answer either."""
        try:
            answer = self.client.request("GET", f"/v2/users/{_quote(user_id)}")
        except api_errors.AdminApiError:
            return False
        human = (answer.get("user") or {}).get("human") or {}
        changed = parse_time(str(human.get("passwordChanged") or ""))
        return changed is not None and changed >= since - CLOCK_SLACK

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
