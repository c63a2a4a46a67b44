"""Checks import bodies against ZITADEL's published API schema: an oracle independent of the tool.

The schema is the protobuf descriptor set vendored in ``tests/data/zitadel-admin-v1.binpb``
(``zitadel.admin.v1.ImportDataRequest`` and every file it reaches, with the protoc-gen-validate
field rules; origin in ``tests/data/README.md``). A body passes when

1. it decodes strictly as ``ImportDataRequest`` with protobuf's own JSON parser (unknown keys,
   wrong types and bad enum names fail), and
2. every field meets its ``validate.rules`` (lengths in runes and bytes, prefixes, e-mail form,
   required messages and oneofs, defined enums, duration ranges, constant bools, rules per
   repeated item),
   read from the descriptors, not written out per field here, and
3. no string holds NUL (ZITADEL's event store cannot keep one).

Example::

    >>> SchemaChecker().check({"dataOrgs": {"orgs": []}, "timeout": "5m0s"})
    []

The same rules check the user service v2 requests a scheduled sync sends (tests/standins/schema_check_v2.py).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    empty_pb2,
    json_format,
    message_factory,
    unknown_fields,
)
from google.protobuf.descriptor import FieldDescriptor

DESCRIPTOR_SET = Path(__file__).resolve().parents[1] / "data" / "zitadel-admin-v1.binpb"
REQUEST = "zitadel.admin.v1.ImportDataRequest"
_VALIDATE_RULES = 1071  # the field number of the validate.rules extension of FieldOptions
# protoc-gen-validate's email rule: an addr-spec (no display name), local part at most 64 bytes,
# a host name of labels of at most 63 characters.
_LOCAL = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")
_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


def _valid_email(value: str) -> bool:
    local, at, host = value.rpartition("@")
    if not at or not local or len(local.encode()) > 64 or not _LOCAL.match(local):
        return False
    host = host[:-1] if host.endswith(".") else host
    return 0 < len(host) <= 253 and all(_LABEL.match(label) for label in host.split("."))


def option_extension(options: Any, number: int, message_class: Any) -> Any:
    """Extension ``number`` of descriptor ``options`` parsed as ``message_class``, or None.

    The options are read back as an empty message, so every field is unknown bytes whatever
    extensions the process registered (a library that imports googleapis' ``annotations_pb2``
    makes ``google.api.http`` a known extension of ``MethodOptions``).
    """
    parsed = empty_pb2.Empty.FromString(options.SerializeToString())
    for unknown in unknown_fields.UnknownFieldSet(parsed):
        if unknown.field_number == number:
            return message_class.FromString(unknown.data)
    return None


class SchemaChecker:
    """Loads a descriptor set once; :meth:`check` returns readable problems (empty: valid).

    ``request`` names the message :meth:`check` decodes a body as; tests/standins/schema_check_v2.py
    reuses the rules on the user service v2 requests of another descriptor set.
    """

    def __init__(self, path: Path = DESCRIPTOR_SET, request: str = REQUEST):
        files = descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes())
        self._pool = descriptor_pool.DescriptorPool()
        for file in files.file:
            self._pool.Add(file)
        self.request = request
        self._classes: dict[str, Any] = {}
        self._rules_class = self.message_class("validate.FieldRules")
        self._rules_of: dict[str, Any] = {}

    def message_class(self, name: str) -> Any:
        """The generated class of the message ``name`` (full name) of this descriptor set."""
        if name not in self._classes:
            self._classes[name] = message_factory.GetMessageClass(self._pool.FindMessageTypeByName(name))
        return self._classes[name]

    def check(self, body: Any) -> list[str]:
        try:
            message = json_format.ParseDict(
                body, self.message_class(self.request)(), descriptor_pool=self._pool
            )
        except json_format.ParseError as err:
            return [f"does not decode as {self.request}: {err}"]
        return self.problems(message)

    def problems(self, message) -> list[str]:
        """What breaks the ``validate.rules`` (or holds NUL) in a decoded ``message``."""
        problems: list[str] = []
        self._walk(message, "", problems)
        return problems

    @property
    def pool(self) -> descriptor_pool.DescriptorPool:
        return self._pool

    def _rules(self, field: FieldDescriptor):
        """The field's ``validate.rules``."""
        if field.full_name not in self._rules_of:
            self._rules_of[field.full_name] = option_extension(
                field.GetOptions(), _VALIDATE_RULES, self._rules_class
            )
        return self._rules_of[field.full_name]

    def _oneof_required(self, oneof) -> bool:
        """The oneof's ``validate.required`` (a bool option: one member must be set)."""
        if oneof.full_name not in self._rules_of:
            options = empty_pb2.Empty.FromString(oneof.GetOptions().SerializeToString())
            self._rules_of[oneof.full_name] = any(
                u.field_number == _VALIDATE_RULES and u.data for u in unknown_fields.UnknownFieldSet(options)
            )
        return self._rules_of[oneof.full_name]

    def _walk(self, message, path: str, problems: list[str]) -> None:
        for oneof in message.DESCRIPTOR.oneofs:
            if message.WhichOneof(oneof.name) is None and self._oneof_required(oneof):
                names = " | ".join(f.json_name for f in oneof.fields)
                problems.append(f"{path + '.' if path else ''}{oneof.name}: one of {names} required")
        for field in message.DESCRIPTOR.fields:
            oneof = field.containing_oneof
            if oneof is not None and message.WhichOneof(oneof.name) != field.name:
                continue  # rules of an unset oneof member do not apply
            where = f"{path}.{field.json_name}" if path else field.json_name
            value = getattr(message, field.name)
            rules = self._rules(field)
            if field.is_repeated:
                if rules is not None and rules.WhichOneof("type") == "repeated":
                    self._repeated(rules.repeated, field, value, where, problems)
                if field.message_type is not None and field.message_type.GetOptions().map_entry:
                    continue  # map fields: none is in the import's schema with rules
                for index, item in enumerate(value):
                    self._one(field, item, f"{where}[{index}]", problems)
                continue
            present = message.HasField(field.name) if field.has_presence else True
            if rules is not None:
                self._apply(rules, field, value, present, where, problems)
            if present:
                self._one(field, value, where, problems)

    def _one(self, field: FieldDescriptor, value, where: str, problems: list[str]) -> None:
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            self._walk(value, where, problems)
        elif field.type == FieldDescriptor.TYPE_STRING and "\x00" in value:
            problems.append(f"{where}: holds NUL")

    def _repeated(self, rules, field: FieldDescriptor, values, where: str, problems: list[str]) -> None:
        for name, _ in rules.ListFields():
            if name.name == "min_items" and len(values) < rules.min_items:
                problems.append(f"{where}: at least {rules.min_items} items")
            elif name.name == "max_items" and len(values) > rules.max_items:
                problems.append(f"{where}: at most {rules.max_items} items")
            elif name.name == "items":  # each item meets the item rules (scalars: e.g. keys[])
                for index, item in enumerate(values):
                    self._apply(rules.items, field, item, True, f"{where}[{index}]", problems)
            elif name.name not in ("min_items", "max_items"):
                raise NotImplementedError(f"repeated rule {name.name} ({where})")

    def _apply(
        self, rules, field: FieldDescriptor, value, present: bool, where: str, problems: list[str]
    ) -> None:
        # ``message`` sits beside the ``type`` oneof in validate.FieldRules.
        if rules.HasField("message") and rules.message.required and not present:
            problems.append(f"{where}: required")
        kind = rules.WhichOneof("type")
        if kind == "string":
            self._string(rules.string, value, where, problems)
        elif kind == "bytes":
            self._bytes(rules.bytes, value, where, problems)
        elif kind == "enum":
            self._enum(rules.enum, field, value, where, problems)
        elif kind == "duration":
            self._duration(rules.duration, value, present, where, problems)
        elif kind == "bool":
            if rules.bool.HasField("const") and value != rules.bool.const:
                problems.append(f"{where}: must be {str(rules.bool.const).lower()}")
        elif kind is not None:
            raise NotImplementedError(f"{kind} rules ({where})")

    @staticmethod
    def _string(rules, value: str, where: str, problems: list[str]) -> None:
        if rules.ignore_empty and value == "":
            return
        runes, size = len(value), len(value.encode("utf-8"))
        for field, limit in rules.ListFields():
            name = field.name
            if name == "min_len" and runes < limit:
                problems.append(f"{where}: at least {limit} characters")
            elif name == "max_len" and runes > limit:
                problems.append(f"{where}: at most {limit} characters")
            elif name == "min_bytes" and size < limit:
                problems.append(f"{where}: at least {limit} bytes")
            elif name == "max_bytes" and size > limit:
                problems.append(f"{where}: at most {limit} bytes")
            elif name == "prefix" and not value.startswith(limit):
                problems.append(f"{where}: must start with {limit!r}")
            elif name == "email" and limit and not _valid_email(value):
                problems.append(f"{where}: not an e-mail address")
            elif name not in (
                "min_len",
                "max_len",
                "min_bytes",
                "max_bytes",
                "prefix",
                "email",
                "ignore_empty",
            ):
                raise NotImplementedError(f"string rule {name} ({where})")

    @staticmethod
    def _bytes(rules, value: bytes, where: str, problems: list[str]) -> None:
        for field, limit in rules.ListFields():
            if field.name == "min_len" and len(value) < limit:
                problems.append(f"{where}: at least {limit} bytes")
            elif field.name == "max_len" and len(value) > limit:
                problems.append(f"{where}: at most {limit} bytes")
            elif field.name not in ("min_len", "max_len"):
                raise NotImplementedError(f"bytes rule {field.name} ({where})")

    @staticmethod
    def _enum(rules, field: FieldDescriptor, value: int, where: str, problems: list[str]) -> None:
        # json_format refuses enum names that do not exist; a number can still be undefined.
        if rules.defined_only and value not in field.enum_type.values_by_number:
            problems.append(f"{where}: {value} is not a defined {field.enum_type.name}")
        if value in rules.not_in:
            problems.append(f"{where}: {field.enum_type.values_by_number.get(value, value)} not allowed")

    @staticmethod
    def _duration(rules, value, present: bool, where: str, problems: list[str]) -> None:
        if not present:
            if rules.required:
                problems.append(f"{where}: required")
            return
        nanos = value.seconds * 10**9 + value.nanos
        if rules.HasField("gte") and nanos < rules.gte.seconds * 10**9 + rules.gte.nanos:
            problems.append(f"{where}: at least {rules.gte.seconds} s")
        if rules.HasField("lte") and nanos > rules.lte.seconds * 10**9 + rules.lte.nanos:
            problems.append(f"{where}: at most {rules.lte.seconds} s")


@functools.lru_cache(maxsize=1)
def checker() -> SchemaChecker:
    """The session's checker (building the descriptor pool takes ~0.1 s)."""
    return SchemaChecker()
