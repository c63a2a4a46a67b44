"""pipeline/migrate_options.py: the shared migrate flags, checked into a keyword-only CommonArgs."""

from __future__ import annotations

import argparse
import dataclasses
import os

import pytest

from pipeline.migrate_options import (
    MAX_BATCH_SIZE,
    CommonArgs,
    add_common_arguments,
    add_role_arguments,
    batch_size_type,
    common_args,
    removal_limit,
    role_settings,
)
from transforms.common.errors import ConfigError
from transforms.mapping.roles import RoleSettings
from transforms.sources.registry import get


def _parse(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    add_common_arguments(parser)
    return parser.parse_args(list(flags))


@pytest.fixture(autouse=True)
def _no_hash_environment(monkeypatch):
    for name in list(os.environ):
        if name.startswith("ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER"):
            monkeypatch.delenv(name)


def test_common_args_is_built_by_keyword_only_and_frozen():
    with pytest.raises(TypeError):
        CommonArgs("123", "out.json", "5m0s", False, 5000, None, False, False, 10, 16)  # positional: refused
    common = CommonArgs(
        org_id="123",
        output="out.json",
        timeout="5m0s",
        multiline=False,
        batch_size=5000,
        dead_letter=None,
        strict=False,
        metadata=False,
        bcrypt_min_cost=10,
        bcrypt_max_cost=16,
    )
    assert (common.state, common.on_removed, common.max_removals, common.push_credentials) == (
        None,
        "report",
        "5%",
        None,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        common.strict = True


def test_common_args_reads_every_flag_into_its_field():
    common = common_args(
        _parse(
            "--org= 42 ",
            "--output=out/importBody.json",
            "--timeout=90s",
            "--multiline",
            "--batch-size=7",
            "--dead-letter=out/dl.ndjson",
            "--strict",
            "--metadata",
            "--email-fallback={username}@users.example.com",
            "--state=state",
            "--on-removed=deactivate",
            "--max-removals=3",
            "--break-lock",
            "--allow-partial",
            "--bcrypt-min-cost=8",
        )
    )
    assert common.org_id == "42"
    assert (common.output, common.dead_letter) == ("out/importBody.json", "out/dl.ndjson")
    assert common.timeout == "1m30s"
    assert (common.multiline, common.strict, common.metadata) == (True, True, True)
    assert common.batch_size == 7
    assert (common.bcrypt_min_cost, common.bcrypt_max_cost) == (8, 16)
    assert common.hash_policy is not None and common.hash_policy.limit("Bcrypt.MinCost") == 8
    assert common.email_fallback == "{username}@users.example.com"
    assert (common.state, common.on_removed, common.max_removals) == ("state", "deactivate", "3")
    assert (common.break_lock, common.allow_partial) == (True, True)
    assert (common.push_url, common.push_credentials, common.on_unsupported_hash) == (
        None,
        None,
        "dead-letter",
    )


@pytest.mark.parametrize(
    "flags, message",
    [
        (("--org=12 3",), "--org"),
        (("--org=1", "--timeout=soon"), "--timeout"),
        (("--org=1", "--output=out/"), "must name a file"),
        (("--org=1", "--state=s", "--max-removals=lots"), "--max-removals"),
        (("--org=1", "--bcrypt-min-cost=20", "--bcrypt-max-cost=12"), "--bcrypt-min-cost"),
        (("--org=1", "--email-fallback=nobody"), "--email-fallback"),
    ],
)
def test_common_args_refuses_a_bad_flag_in_one_line(flags, message):
    with pytest.raises(ConfigError) as err:
        common_args(_parse(*flags))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text, users, limit",
    [("0", 100, 0), ("50", 10, 50), ("5%", 4, 1), ("5%", 0, 0), ("10%", 1000, 100), ("100%", 7, 7)],
)
def test_removal_limit_is_a_count_or_a_share_rounded_up(text, users, limit):
    assert removal_limit(text, users) == limit


@pytest.mark.parametrize("text", ["-1", "101%", "-5%", "five", "", "5 %%"])
def test_removal_limit_refuses_what_is_neither(text):
    with pytest.raises(ConfigError, match="--max-removals"):
        removal_limit(text, 10)


def test_batch_size_is_a_whole_number_up_to_the_hosted_limit():
    assert batch_size_type("1") == 1 and batch_size_type(str(MAX_BATCH_SIZE)) == MAX_BATCH_SIZE
    for bad in ("0", str(MAX_BATCH_SIZE + 1), "2.5", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            batch_size_type(bad)


def _roles(source: str, *flags: str) -> argparse.Namespace:
    """The role flags shared (--project-id, --create-project) and the source's own (Keycloak's
    --client-project and --include-builtin-roles)."""
    parser = argparse.ArgumentParser(allow_abbrev=False)
    get(source).add_arguments(parser)
    add_role_arguments(parser)
    return parser.parse_args(list(flags))


def test_role_settings_without_project_id_is_none_and_refuses_its_dependants():
    assert role_settings(_roles("keycloak")) is None
    with pytest.raises(ConfigError, match="--create-project needs --project-id"):
        role_settings(_roles("keycloak", "--create-project=Users"))
    with pytest.raises(ConfigError, match="--client-project needs --project-id"):
        role_settings(_roles("keycloak", "--client-project=app=1"))


def test_role_settings_reads_the_project_and_the_client_projects_sorted():
    settings = role_settings(
        _roles(
            "keycloak",
            "--project-id=99",
            "--create-project= Users ",
            "--client-project=web=2",
            "--client-project=api=3",
            "--include-builtin-roles",
        )
    )
    assert settings == RoleSettings("99", "Users", (("api", "3"), ("web", "2")), True)
    with pytest.raises(ConfigError, match="mapped twice"):
        role_settings(_roles("keycloak", "--project-id=9", "--client-project=a=1", "--client-project=a=2"))
    with pytest.raises(ConfigError, match="--project-id"):
        role_settings(_roles("keycloak", "--project-id=not one"))
