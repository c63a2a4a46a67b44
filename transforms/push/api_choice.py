"""Which way users go in: the admin import or the user service v2 (``--api``; docs/user-v2.md).

- ``admin-import``: ``POST /admin/v1/import`` as always (an instance-level IAM_OWNER credential);
  the probe is the admin events search, exactly as before.
- ``user-v2``: one ``AddHumanUser`` per user (``user.write`` on the org: an org's user manager
  suffices); the probe is ``ListUsers`` with limit 1.
- ``auto`` (the default): one probe of the admin API. It answers → ``admin-import``. It answers
  not found / unimplemented (a ZITADEL without the v1 APIs, v5) or permission denied (a credential
  limited to an org) → ``user-v2``, after a probe of the user service, and one line on stderr says
  so and why (the admin import, the path of every earlier release, is said in the log only, so
  its output stays as it was). An unauthenticated answer is a bad credential either way: one ConfigError line.

Example::

    client, api, line = open_client("https://x.zitadel.cloud", credentials, "auto")
    api   # "admin-import" | "user-v2"
"""

from __future__ import annotations

import enum
import logging

from transforms.common.errors import ConfigError
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient, connect
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.user_v2 import LIST_USERS_PATH, list_users_request

__all__ = [
    "PushApi",
    "API_CHOICES",
    "ADMIN_IMPORT",
    "USER_V2",
    "open_client",
    "admin_absent",
    "probe_user_service",
]


class PushApi(enum.StrEnum):
    """How users go in (``--api``): the admin import, the user service v2, or what the probe finds."""

    AUTO = "auto"
    ADMIN_IMPORT = "admin-import"
    USER_V2 = "user-v2"


ADMIN_IMPORT = PushApi.ADMIN_IMPORT
USER_V2 = PushApi.USER_V2
API_CHOICES = tuple(api.value for api in PushApi)

_LOGGER = logging.getLogger(__name__)


def admin_absent(err: api_errors.AdminApiError) -> bool:
    """The admin API is not served: HTTP 404 / 501, gRPC NotFound (5) or Unimplemented (12)."""
    return err.status in (404, 501) or (err.status in (0, 200, 400) and err.code in (5, 12))


def _denied(err: api_errors.AdminApiError) -> bool:
    """Permission denied (HTTP 403, gRPC 7), as opposed to unauthenticated (a bad credential)."""
    return err.status == 403 or err.code == 7 or "permission" in err.message.lower()


def probe_user_service(client: AdminClient) -> None:
    """One cheap user service call (ListUsers, limit 1); ConfigError with one line if refused."""
    try:
        client.request("POST", LIST_USERS_PATH, list_users_request(limit=1), min(10.0, client.timeout))
    except api_errors.AuthError as err:
        raise ConfigError(f"{client.base_url}: authentication failed: {err.message}") from None
    except (api_errors.RetriesExhausted, api_errors.ServerGone) as err:
        raise ConfigError(f"{client.base_url}: not reachable: {err.message}") from None
    except api_errors.AdminApiError as err:
        raise ConfigError(
            f"{client.base_url}: does not answer like ZITADEL's user service v2: {err.message}"
        ) from None


def _client(url: str, credentials: Credentials, max_attempts: int, timeout: float | None) -> AdminClient:
    try:
        if timeout:
            return AdminClient(url, credentials, max_attempts=max_attempts, timeout=timeout)
        return AdminClient(url, credentials, max_attempts=max_attempts)
    except ValueError as err:
        raise ConfigError(f"--url: {err}") from None


def open_client(
    url: str,
    credentials: Credentials,
    api: str = PushApi.AUTO,
    max_attempts: int = 6,
    timeout: float | None = None,
) -> tuple[AdminClient, PushApi, str | None]:
    """``(a client that passed its probe, the path taken, the line saying why)``; the line is None
    unless ``auto`` chose the user service. Raises ConfigError (one line) for a bad URL or credential."""
    if api == ADMIN_IMPORT:
        if timeout:
            return connect(url, credentials, max_attempts=max_attempts, timeout=timeout), ADMIN_IMPORT, None
        return connect(url, credentials, max_attempts=max_attempts), ADMIN_IMPORT, None
    client = _client(url, credentials, max_attempts, timeout)
    if api == USER_V2:
        probe_user_service(client)
        return client, USER_V2, None
    if api != PushApi.AUTO:
        raise ConfigError(f"--api={api!r}: choose one of {', '.join(API_CHOICES)}")
    try:
        client.probe()
    except api_errors.AuthError as err:
        if not _denied(err):
            raise ConfigError(f"{client.base_url}: authentication failed: {err.message}") from None
        probe_user_service(client)
        why = f"this credential may not use the admin API ({err.message})"
        return client, USER_V2, f"push: --api=auto: the user service v2, one call per user: {why}"
    except api_errors.AdminApiError as err:
        if isinstance(err, api_errors.RetriesExhausted | api_errors.ServerGone):
            raise ConfigError(f"{client.base_url}: not reachable: {err.message}") from None
        if not admin_absent(err):
            raise ConfigError(
                f"{client.base_url}: does not answer like a ZITADEL admin API: {err.message}"
            ) from None
        probe_user_service(client)
        why = f"the server has no admin API ({err.message})"
        return client, USER_V2, f"push: --api=auto: the user service v2, one call per user: {why}"
    # The path of every earlier release: said in the log only, so its output stays as it was.
    _LOGGER.info("push: --api=auto: the admin import (POST /admin/v1/import): the admin API answers")
    return client, ADMIN_IMPORT, None
