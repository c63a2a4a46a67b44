"""transforms/sources/declaration.py: what a source declares, read without argparse or Beam."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from transforms.sources.declaration import (
    DocumentRun,
    FlagGroup,
    declared_flags,
    file_flag,
    missing_parts,
    reads_of,
    source_name,
)
from transforms.sources.registry import descriptions, get


def _flags(parser) -> None:
    file_flag(parser, "--users", reads="toy-users", required=True, help="the export")
    file_flag(parser, "--mapping", workers=False, help="read by the launcher only")
    group = parser.add_argument_group("extra")
    group.add_argument("--include-locked", action="store_true", help="import locked users")


def test_declared_flags_are_read_without_a_parser():
    flags = declared_flags(_flags)
    assert [(f.flag, f.dest, f.reads) for f in flags] == [
        ("--users", "users", (True, "toy-users")),
        ("--mapping", "mapping", (False, None)),
        ("--include-locked", "include_locked", None),
    ]
    assert flags[2].options == {"action": "store_true", "help": "import locked users"}


def test_file_flags_are_marked_on_argparse_too():
    parser = argparse.ArgumentParser()
    _flags(parser)
    marks = {a.dest: reads_of(a) for a in parser._actions}
    assert marks["users"] == (True, "toy-users") and marks["mapping"] == (False, None)
    assert marks["include_locked"] is None
    assert parser.parse_args(["--users=u.ndjson"]).users == "u.ndjson"


def test_a_sources_name_is_its_packages():
    assert source_name("transforms.sources.keycloak.source") == "keycloak"
    with pytest.raises(ValueError, match="not in a source's package"):
        source_name("pipeline.cli")


@pytest.mark.parametrize("description", descriptions(), ids=lambda d: d.name)
def test_every_registered_description_is_whole(description):
    assert missing_parts(description) == []
    assert all(isinstance(group, FlagGroup) for group in description.groups)


def test_a_document_source_cannot_also_sync():
    document = next(d for d in descriptions() if d.document is not None)
    syncing = next(d for d in descriptions() if d.kind.syncs)
    mixed = dataclasses.replace(document, kind=syncing.kind)
    assert "document (a DocumentRun, of a source that cannot sync)" in missing_parts(mixed)
    assert isinstance(get(document.name).document, DocumentRun)
