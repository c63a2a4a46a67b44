"""The admin API v1 calls the tool makes: import, events search, export, and the probe.

``AdminV1Calls`` is mixed into ``AdminClient`` (``client.py``), which supplies ``request`` (an
authenticated JSON call with retries) and ``send_raw`` (the same, answer unparsed). Each call
checks that a 200 answer has the shape its endpoint promises, so a proxy's page or a wrong base
URL is an error, not an empty result::

    answer = client.import_data(body_bytes, timeout=330.0)
    for event in client.iter_events(["user.human.added"], resource_owner="123"):
        ...
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from transforms.zitadel_api.api_errors import AdminApiError
from transforms.zitadel_api.transport import Retrier

__all__ = ["AdminV1Calls"]

_LOGGER = logging.getLogger(__name__)


class AdminV1Calls:
    """POST /admin/v1/import, /admin/v1/events/_search and /admin/v1/export.

    The class it is mixed into supplies ``timeout``, ``request`` and ``send_raw``.
    """

    timeout: float

    def request(
        self,
        method: str,
        path: str,
        body: bytes | Mapping[str, object] | None = None,
        timeout: float | None = None,
        on_attempt: Callable[[], None] | None = None,
        retrier: Retrier | None = None,
        org_id: str | None = None,
        on_answer: Callable[[int, float | None], None] | None = None,
        deadline_final: bool = False,
    ) -> dict[str, Any]:
        raise NotImplementedError  # AdminClient.request

    def send_raw(self, path: str, body: bytes, timeout: float) -> bytes:
        raise NotImplementedError  # AdminClient.send_raw

    def _post_json(
        self,
        path: str,
        body: bytes,
        timeout: float,
        on_attempt: Callable[[], None] | None = None,
        retrier: Retrier | None = None,
        on_answer: Callable[[int, float | None], None] | None = None,
    ) -> dict[str, Any]:
        return self.request("POST", path, body, timeout, on_attempt, retrier, on_answer=on_answer)

    def import_data(
        self,
        body_bytes: bytes,
        timeout: float,
        on_attempt: Callable[[], None] | None = None,
        on_answer: Callable[[int, float | None], None] | None = None,
    ) -> dict:
        """POST /admin/v1/import with a complete ImportDataRequest body; returns the response.

        Raises DeadlineExceeded when the server's own ``timeout`` elapsed (split the body),
        InvalidRequest for a rejected request, AuthError, or RetriesExhausted. ``on_attempt`` is
        called before every HTTP attempt (the caller's per-body request count), ``on_answer``
        after it with its status and ``Retry-After`` (the push's limiter).
        """
        answer = self.request(
            "POST",
            "/admin/v1/import",
            body_bytes,
            timeout,
            on_attempt,
            on_answer=on_answer,
            deadline_final=True,
        )
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
        request: dict[str, object] = {"asc": asc, "limit": limit}
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
        request: dict[str, object] = {"responseOutput": True, "timeout": timeout}
        if org_ids:
            request["orgIds"] = org_ids
        if with_passwords:
            request["withPasswords"] = True
        return self._post_json(
            "/admin/v1/export", json.dumps(request).encode(), client_timeout or self.timeout
        )

    def export_document(self, request: Mapping[str, object], client_timeout: float | None = None) -> bytes:
        """POST /admin/v1/export with a full ExportDataRequest; returns the answer's bytes unparsed.

        With ``responseOutput`` the answer is the export document itself (possibly GB): it is not
        parsed here, so the caller can write it as it came and stream it later. With ``gcsOutput``
        the server writes the document to the bucket and the answer carries nothing more.
        """
        return self.send_raw(
            "/admin/v1/export", json.dumps(dict(request)).encode(), client_timeout or self.timeout
        )

    def probe(self, timeout: float = 10.0) -> None:
        """One cheap authenticated call (events search, limit 1) so a bad URL or token fails now."""
        quick = Retrier(2, 0.2, 1.0, time.sleep, random.random)
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


def _list_of_objects(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return f"{name} is a {type(value).__name__}, not a list"
    bad = next((i for i, item in enumerate(value) if not isinstance(item, dict)), None)
    return None if bad is None else f"{name}[{bad}] is a {type(value[bad]).__name__}, not an object"


def _import_answer_problem(answer: Mapping[str, Any]) -> str | None:
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


def _events_answer_problem(answer: Mapping[str, Any]) -> str | None:
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
