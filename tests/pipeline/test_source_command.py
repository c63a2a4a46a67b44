"""pipeline/source_command.py: a source's command built from its description, the shared flags by
the groups it declares, the --state rule and the files its flags name."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from pipeline.source_command import add_source_arguments, blocked_flag, input_flags
from transforms.sources.declaration import FlagGroup, file_flag
from transforms.sources.registry import descriptions

SOURCES = [d for d in descriptions() if d.document is None]


def _flags(description) -> set[str]:
    parser = argparse.ArgumentParser(add_help=False)
    add_source_arguments(parser, description)
    return {flag for flag in parser._option_string_actions if flag.startswith("--")}


GROUP_FLAGS = {
    FlagGroup.HASHES: {"--zitadel-config", "--on-unsupported-hash", "--bcrypt-min-cost", "--bcrypt-max-cost"},
    FlagGroup.LAYOUT: {"--multiline"},
    FlagGroup.ROLES: {"--project-id", "--create-project"},
}


@pytest.mark.parametrize("description", SOURCES, ids=lambda d: d.name)
@pytest.mark.parametrize("group", list(FlagGroup), ids=lambda g: g.value)
def test_a_source_gets_a_groups_flags_only_when_it_declares_the_group(description, group):
    assert (GROUP_FLAGS[group] <= _flags(description)) == (group in description.groups)
    bare = dataclasses.replace(description, groups=description.groups - {group})
    assert not GROUP_FLAGS[group] & _flags(bare)
    shared = {"--org", "--output", "--state", "--push-url", "--allow-partial", "--token-file"}
    assert shared <= _flags(bare)


@pytest.mark.parametrize("description", SOURCES, ids=lambda d: d.name)
def test_idp_map_comes_with_idp_links(description):
    assert ("--idp-map" in _flags(description)) == (description.idp_links is not None)
    assert "--idp-map" not in _flags(dataclasses.replace(description, idp_links=None))


@pytest.mark.parametrize("description", [d for d in SOURCES if d.kind.syncs], ids=lambda d: d.name)
def test_the_blocked_flag_is_the_one_its_user_records_name(description):
    dest = blocked_flag(description)
    flags = {record.flag for record in description.kind.records.values()}
    assert dest is not None and "--" + dest.replace("_", "-") in flags & _flags(description)


def test_the_files_a_command_reads_are_the_flags_marked_as_files():
    def add_arguments(parser):
        file_flag(parser, "--users", help="read by the workers")
        file_flag(parser, "--rules", workers=False, help="read by the launcher")
        parser.add_argument("--name", help="not a file")

    source = dataclasses.replace(SOURCES[0], add_arguments=add_arguments)
    assert input_flags(source) == ({"users": "--users", "rules": "--rules"}, ("users",))
