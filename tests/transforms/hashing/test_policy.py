"""transforms/hashing/policy.py: the target's verifiers and limits, from defaults, YAML and env."""

from __future__ import annotations

import pytest
from repo_files import DATA_DIR

from pipeline.cli import main
from transforms.hashing.convert import ConvertedHash, parse_hash
from transforms.hashing.policy import (
    DEFAULT_LIMITS,
    ConfigError,
    HashPolicy,
    config_snippet,
    load_policy,
    needed_ranges,
)
from transforms.mapping.validate import Reason

ENABLED = DATA_DIR / "zitadel-config" / "verifiers-enabled.yaml"
ALL = HashPolicy(
    frozenset(
        {"bcrypt", "argon2", "pbkdf2", "scrypt", "sha2", "phpass", "drupal7", "md5", "md5plain", "md5salted"}
    )
)


def _hash(verifier: str, **params: int) -> ConvertedHash:
    return ConvertedHash(verifier, "(not shown)", verifier, tuple(params.items()))


def test_defaults_are_bcrypt_only():
    policy = load_policy(None, {})
    assert policy.verifiers == {"bcrypt"}
    assert dict(policy.limits) == DEFAULT_LIMITS
    failure = policy.check(_hash("pbkdf2", rounds=27500))
    assert failure.reason == Reason.HASH_VERIFIER_DISABLED
    assert "SystemDefaults.PasswordHasher.Verifiers" in failure.detail


# Each limit just inside and just outside its default range.
EDGES = [
    ("bcrypt", "cost", "Bcrypt", 10, 16),
    ("argon2", "time", "Argon2", 1, 10),
    ("argon2", "memory", "Argon2", 8192, 524288),
    ("argon2", "threads", "Argon2", 1, 16),
    ("scrypt", "ln", "Scrypt", 14, 20),
    ("scrypt", "r", "Scrypt", 8, 32),
    ("scrypt", "p", "Scrypt", 1, 16),
    ("pbkdf2", "rounds", "PBKDF2", 1000, 10_000_000),
    ("sha2", "sha256rounds", "Sha2", 1000, 999_999_999),
    ("sha2", "sha512rounds", "Sha2", 1000, 999_999_999),
    ("phpass", "rounds", "PHPass", 7, 31),
    ("drupal7", "iterations", "Drupal7", 1000, 500_000),
]


@pytest.mark.parametrize("verifier, param, group, low, high", EDGES)
def test_limit_edges(verifier, param, group, low, high):
    assert ALL.check(_hash(verifier, **{param: low})) is None
    assert ALL.check(_hash(verifier, **{param: high})) is None
    for value, key in ((low - 1, "Min"), (high + 1, "Max")):
        failure = ALL.check(_hash(verifier, **{param: value}))
        assert failure.reason == (Reason.BCRYPT_COST if verifier == "bcrypt" else Reason.HASH_OUT_OF_LIMITS)
        assert f"{param} {value} outside {low}..{high}" in failure.detail
        assert f"SystemDefaults.PasswordHasher.Limits.{group}.{key}" in failure.detail


def test_yaml_enables_verifiers_and_lowers_limits():
    policy = load_policy(str(ENABLED), {})
    assert {"argon2", "pbkdf2", "md5plain", "drupal7"} <= policy.verifiers
    assert policy.limit("Argon2.MinMemory") == 7168 and policy.limit("Argon2.MaxMemory") == 524288
    keycloak_argon2 = parse_hash(
        "$argon2id$v=19$m=7168,t=5,p=1$cmFuZG9tc2FsdGlzaGFyZA$DYojYpnUWSMmTtrkVXyaNWVGxLmGe1n8VJBPDdFkbjU"
    )
    assert load_policy(None, {}).check(keycloak_argon2).reason == Reason.HASH_VERIFIER_DISABLED
    assert policy.check(keycloak_argon2) is None


def test_env_form_applies_on_top_of_the_file():
    env = {
        "ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_VERIFIERS": "pbkdf2,scrypt",
        "ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_LIMITS_PBKDF2_MINROUNDS": "500",
        "ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_LIMITS_ARGON2_MINMEMORY": "4096",
    }
    policy = load_policy(str(ENABLED), env)
    assert policy.limit("PBKDF2.MinRounds") == 500 and policy.limit("Argon2.MinMemory") == 4096
    assert {"pbkdf2", "scrypt", "argon2"} <= policy.verifiers


def test_zero_keeps_the_default():
    """In ZITADEL a 0 limit means passwap's default: it cannot switch a limit off."""
    policy = load_policy(None, {"ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_LIMITS_BCRYPT_MINCOST": "0"})
    assert policy.limit("Bcrypt.MinCost") == 10


@pytest.mark.parametrize(
    "text, message",
    [
        ("SystemDefaults:\n  PasswordHasher:\n    Verifiers: [rot13]\n", "unknown verifier 'rot13'"),
        (
            "SystemDefaults:\n  PasswordHasher:\n    Limits:\n      Argon2:\n        MinMemroy: 1\n",
            "Limits.Argon2.MinMemroy is not a limit",
        ),
        (
            "SystemDefaults:\n  PasswordHasher:\n    Limits:\n      PBKDF2:\n        MinRounds: lots\n",
            "non-negative integer",
        ),
        (
            "SystemDefaults:\n  PasswordHasher:\n    Limits:\n      PBKDF2:\n        MinRounds: 20000000\n",
            "MinRounds is above",
        ),
        ("SystemDefaults: [\n", "not YAML"),
    ],
)
def test_config_errors_are_one_line(tmp_path, text, message):
    path = tmp_path / "zitadel.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_policy(str(path), {})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_cli_config_error_exits_2(tmp_path, capsys):
    path = tmp_path / "zitadel.yaml"
    path.write_text("SystemDefaults:\n  PasswordHasher:\n    Verifiers: [rot13]\n")
    code = main(
        [
            "migrate",
            "keycloak",
            "--org=1",
            f"--realm={tmp_path / 'realm.json'}",
            f"--zitadel-config={path}",
            f"--output={tmp_path / 'b.json'}",
        ]
    )
    assert code == 2
    assert "rot13" in capsys.readouterr().err


def test_bcrypt_flags_override_the_config():
    import argparse

    from pipeline.migrate_options import hash_policy_from_args

    args = argparse.Namespace(zitadel_config=str(ENABLED), bcrypt_min_cost=12, bcrypt_max_cost=None)
    policy = hash_policy_from_args(args, {})
    assert (policy.limit("Bcrypt.MinCost"), policy.limit("Bcrypt.MaxCost")) == (12, 16)


def test_snippet_names_what_the_run_needs():
    needed = needed_ranges(
        [
            _hash("argon2", time=5, memory=7168, threads=1),
            _hash("bcrypt", cost=10),
            _hash("pbkdf2", rounds=27500),
            _hash("pbkdf2", rounds=500),
        ]
    )
    snippet = config_snippet(needed)
    assert snippet == (
        "SystemDefaults:\n  PasswordHasher:\n    Verifiers:\n      - argon2\n      - bcrypt\n      - pbkdf2\n"
        "    Limits:\n      Argon2:\n        MinMemory: 7168\n      PBKDF2:\n        MinRounds: 500\n"
    )
    import yaml

    path_policy = load_policy(None, {})
    assert path_policy.covers(needed)  # the defaults do not
    doc = yaml.safe_load(snippet)
    assert doc["SystemDefaults"]["PasswordHasher"]["Limits"]["Argon2"]["MinMemory"] == 7168
