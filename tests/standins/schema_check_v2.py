"""Checks user service v2 requests against ZITADEL's published schema (docs/sync.md#schema-check).

The schema is the descriptor set vendored in ``tests/data/zitadel-user-v2.binpb``
(``zitadel/user/v2/user_service.proto`` and every file it reaches, with the ``google.api.http``
method options and the protoc-gen-validate field rules; origin in ``tests/data/README.md``). A
request ``(method, target, body)`` passes when

1. a method of ``zitadel.user.v2.UserService`` has an HTTP rule (read from its
   ``google.api.http`` option, not written out here) whose verb and path template match it; the
   path is percent-decoded as a whole before it is split, as ZITADEL's REST gateway routes;
2. the body decodes strictly as the method's request message with protobuf's own JSON parser
   (unknown keys, wrong types, two members of one oneof fail), then the path parameters are set
   over it and, for a rule without ``body: "*"``, the query parameters (``keys=a&keys=b``);
   a query parameter the rule does not read, or a body a rule without one would not read, is a
   problem: ZITADEL would drop it without a word, so the change would silently not happen;
3. the request message meets its ``validate.rules`` (tests/standins/schema_check.py walks them).

Example::

    >>> UserServiceChecker().check("POST", "/v2/users/auth0%7C1/lock", {})
    []
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import urllib.parse
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from schema_check import SchemaChecker, option_extension

DESCRIPTOR_SET = Path(__file__).resolve().parents[1] / "data" / "zitadel-user-v2.binpb"
SERVICE = "zitadel.user.v2.UserService"
SERVICE_PACKAGE = "zitadel.user.v2."
_HTTP = 72295728  # the field number of the google.api.http extension of MethodOptions
_VERBS = ("get", "put", "post", "delete", "patch")


@dataclasses.dataclass(frozen=True)
class Route:
    """One HTTP rule of a service method: ``segments`` are literals or ``{field.path}``."""

    verb: str
    segments: tuple[str, ...]
    body: str
    rpc: str
    request: str

    def bind(self, parts: list[str]) -> dict[str, str] | None:
        """The path parameters when ``parts`` (decoded path segments) fit the template."""
        if len(parts) != len(self.segments):
            return None
        params: dict[str, str] = {}
        for template, part in zip(self.segments, parts, strict=True):
            if template.startswith("{"):
                if not part:
                    return None
                params[template[1:-1]] = part
            elif template != part:
                return None
        return params

    @property
    def literals(self) -> int:
        return sum(not s.startswith("{") for s in self.segments)


def _template(path: str, where: str) -> tuple[str, ...]:
    segments = []
    for segment in path.lstrip("/").split("/"):
        if segment.startswith("{"):
            name = segment[1:-1].removesuffix("=*")
            if not segment.endswith("}") or "=" in name or ":" in segment:
                raise NotImplementedError(f"path template {path} ({where})")
            segment = "{" + name + "}"
        elif ":" in segment or "*" in segment:
            raise NotImplementedError(f"path template {path} ({where})")
        segments.append(segment)
    return tuple(segments)


class UserServiceChecker:
    """Loads the descriptor set and the service's HTTP rules once; thread-safe."""

    def __init__(self, path: Path = DESCRIPTOR_SET, service: str = SERVICE):
        self.schema = SchemaChecker(path, request="")
        rule_class = self.schema.message_class("google.api.HttpRule")
        self.routes: list[Route] = []
        for method in self.schema.pool.FindServiceByName(service).methods:
            rule = option_extension(method.GetOptions(), _HTTP, rule_class)
            if rule is None:
                continue  # no REST mapping (gRPC and Connect only)
            for binding in (rule, *rule.additional_bindings):
                verb = binding.WhichOneof("pattern")
                if verb not in _VERBS:
                    raise NotImplementedError(f"HTTP rule {verb} ({method.full_name})")
                self.routes.append(
                    Route(
                        verb.upper(),
                        _template(getattr(binding, verb), method.full_name),
                        binding.body,
                        method.name,
                        method.input_type.full_name,
                    )
                )
        if service == SERVICE and not any(r.rpc == "CreateUser" for r in self.routes):
            # CreateUser's REST rule came after @zitadel/proto 1.3.1 (zitadel/zitadel#9680:
            # ``post: "/v2/users/new" body: "*"``); its request message is in the descriptors.
            self.routes.append(
                Route(
                    "POST", ("v2", "users", "new"), "*", "CreateUser", SERVICE_PACKAGE + "CreateUserRequest"
                )
            )
        self._lock = threading.Lock()
        self.checked = 0

    def route(self, method: str, target: str) -> tuple[Route, dict[str, str]] | None:
        """The rule a request goes to (the most literal segments win) and its path parameters."""
        parts = urllib.parse.unquote(urllib.parse.urlsplit(target).path).lstrip("/").split("/")
        best: tuple[Route, dict[str, str]] | None = None
        for route in self.routes:
            params = route.bind(parts) if route.verb == method else None
            if params is not None and (best is None or route.literals > best[0].literals):
                best = route, params
        return best

    def check(self, method: str, target: str, body: Any) -> list[str]:
        """Readable problems of one request (empty: ZITADEL's schema accepts it)."""
        return self.check_request(method, target, body)[1]

    def check_request(self, method: str, target: str, body: Any) -> tuple[Route | None, list[str]]:
        """``(the rule it went to or None, problems)``; each problem names the request message."""
        with self._lock:
            self.checked += 1
        found = self.route(method, target)
        if found is None:
            return None, [f"no {SERVICE} method answers {method} {urllib.parse.urlsplit(target).path}"]
        route, params = found
        name = route.request.rsplit(".", 1)[-1]
        try:
            message, problems = self._decode(route, params, target, body)
            problems = [f"{name}: {p}" for p in problems]
            if message is not None:
                problems += [f"{name}.{p}" for p in self.schema.problems(message)]
        except NotImplementedError as err:
            problems = [f"{name}: the checker cannot judge a rule: {err}"]
        return route, problems

    def _decode(self, route: Route, params: dict[str, str], target: str, body: Any) -> tuple[Any, list[str]]:
        """The request message (None: it does not decode) and the problems met on the way."""
        message = self.schema.message_class(route.request)()
        problems: list[str] = []
        if body is not None and route.body != "*":
            problems.append(f"a body, which {route.rpc} does not read (its rule has none)")
        elif body is not None:
            try:
                json_format.ParseDict(body, message, descriptor_pool=self.schema.pool)
            except json_format.ParseError as err:
                return None, [f"does not decode: {str(err).splitlines()[0]}"]
        fields: dict[str, Any] = {}
        bound = set()
        for name, value in params.items():
            path = _field_path(message.DESCRIPTOR, name)
            if path is None:
                raise NotImplementedError(f"path parameter {name} names no field ({route.rpc})")
            bound.add(path[0].name)
            _put(fields, path, value, "path parameter")
        query = urllib.parse.parse_qsl(urllib.parse.urlsplit(target).query, keep_blank_values=True)
        for key, value in query:
            path = _field_path(message.DESCRIPTOR, key)
            if route.body == "*" or path is None or path[0].name in bound:
                problems.append(f"query parameter {key!r} is not read by {route.rpc}")
            else:
                problems += _put(fields, path, value, "query parameter")
        try:
            json_format.ParseDict(fields, message, descriptor_pool=self.schema.pool)
        except json_format.ParseError as err:
            return None, [*problems, f"parameters do not decode: {str(err).splitlines()[0]}"]
        return message, problems


def _field_path(descriptor, dotted: str) -> list[FieldDescriptor] | None:
    """The fields a dotted parameter name (proto or JSON names) goes through, or None."""
    fields = []
    for name in dotted.split("."):
        if descriptor is None:
            return None
        by_json = {f.json_name: f for f in descriptor.fields}
        field = descriptor.fields_by_name.get(name) or by_json.get(name)
        if field is None:
            return None
        fields.append(field)
        descriptor = field.message_type
    return fields


def _put(fields: dict[str, Any], path: list[FieldDescriptor], value: str, where: str) -> list[str]:
    """Set a parameter into the JSON form of the message (repeated fields collect their values)."""
    node = fields
    for field in path[:-1]:
        node = node.setdefault(field.json_name, {})
    last = path[-1]
    converted: Any = value
    if last.type == FieldDescriptor.TYPE_BOOL:
        converted = {"true": True, "false": False}.get(value, value)
    elif last.type == FieldDescriptor.TYPE_ENUM and value.isdigit():
        converted = int(value)
    if last.is_repeated:
        node.setdefault(last.json_name, []).append(converted)
    elif last.json_name in node:
        return [f"{where} {last.json_name!r} given twice"]
    else:
        node[last.json_name] = converted
    return []


@functools.lru_cache(maxsize=1)
def checker() -> UserServiceChecker:
    """The process's checker, shared by every test server (loading takes ~0.1 s)."""
    return UserServiceChecker()
