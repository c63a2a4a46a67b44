"""transforms/hashing/summary.py: password hashes in the manifest and summary, and push's check."""

from __future__ import annotations

import logging

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from transforms.common.errors import ConfigError
from transforms.common.records import NAMESPACE
from transforms.hashing.policy import HashPolicy
from transforms.hashing.summary import (
    hash_manifest,
    hash_ranges_from_result,
    hash_summary,
    recorded_policy,
    refused_lead,
    uncovered_hashes,
    warn_uncovered,
)

COUNTS = {
    "password_hashes.bcrypt": 3,
    "password_hashes.pbkdf2": 0,  # nothing written: left out
    "without_password.unsupported-hash-md4": 2,
    "users_written": 5,
}
RANGES = {"bcrypt": {"cost": (10, 12)}, "md5": {"x": (1, 1)}}


def test_hash_manifest():
    fields = hash_manifest(COUNTS, RANGES, None)
    assert fields["password_hashes"] == {"bcrypt": 3}
    assert fields["password_hash_params"] == {"bcrypt": {"cost": [10, 12]}}
    assert fields["users_without_password_by_reason"] == {"unsupported-hash-md4": 2}
    assert fields["zitadel_config"].startswith(
        "SystemDefaults:\n  PasswordHasher:\n    Verifiers:\n      - bcrypt\n"
    )
    assert hash_manifest({}, {}, None) == {
        "password_hashes": {},
        "password_hash_params": {},
        "users_without_password_by_reason": {},
        "zitadel_config": "",
    }


def test_hash_summary_lines():
    text = hash_summary(hash_manifest(COUNTS, RANGES, None))
    lines = text.splitlines()
    assert lines[0] == "password hashes by ZITADEL verifier: bcrypt 3"
    assert lines[1] == "users imported without password: unsupported-hash-md4 2"
    assert lines[2] == "the target ZITADEL needs (runtime config) so that every written hash imports:"
    assert lines[3] == "  SystemDefaults:" and "      - bcrypt" in [line[2:] for line in lines[3:]]
    assert hash_summary(hash_manifest({}, {}, None)) == ""


def test_uncovered_hashes_and_the_warning_before_push(caplog):
    manifest = hash_manifest({"password_hashes.bcrypt": 1, "password_hashes.pbkdf2": 1}, {}, None)
    assert uncovered_hashes(manifest, HashPolicy(verifiers=frozenset({"bcrypt", "pbkdf2"}))) == []
    assert uncovered_hashes({}, HashPolicy()) == []
    with caplog.at_level(logging.WARNING, logger="transforms.hashing.summary"):
        problems = warn_uncovered(manifest, None)  # ZITADEL's defaults: bcrypt only
    assert problems == ["verifier 'pbkdf2' is not enabled (SystemDefaults.PasswordHasher.Verifiers)"]
    assert len(caplog.records) == 1 and problems[0] in caplog.records[0].getMessage()


def test_a_range_beyond_the_limits_is_uncovered():
    manifest = {"password_hashes": {"bcrypt": 2}, "password_hash_params": {"bcrypt": {"cost": [3, 10]}}}
    (problem,) = uncovered_hashes(manifest, HashPolicy())
    assert problem.startswith("bcrypt cost 3 < SystemDefaults.PasswordHasher.Limits.Bcrypt.MinCost = ")


def _record(values):
    for verifier, param, value in values:
        Metrics.distribution(NAMESPACE, f"hash_param.{verifier}.{param}").update(value)
    Metrics.distribution(NAMESPACE, "not_a_hash_param").update(1)
    return values


def test_hash_ranges_from_a_finished_run():
    pipeline = beam.Pipeline(runner=FnApiRunner())
    rows = [
        [("bcrypt", "cost", 12), ("scrypt", "cost", 15)],
        [("bcrypt", "cost", 10), ("bcrypt", "cost", 11)],
    ]
    _ = pipeline | beam.Create(rows) | beam.Map(_record)
    result = pipeline.run()
    result.wait_until_finish()
    assert hash_ranges_from_result(result) == {"bcrypt": {"cost": (10, 12)}, "scrypt": {"cost": (15, 15)}}


ARGON2_7168 = {"argon2": {"memory": (7168, 7168), "time": (5, 5), "threads": (1, 1)}}


def test_refused_hashes_get_one_block_that_admits_them_with_the_written_ones():
    counts = {"password_hashes.bcrypt": 3, "refused_hashes.argon2": 2, "refused_hashes.pbkdf2": 1}
    refused = {**ARGON2_7168, "pbkdf2": {"rounds": (27500, 27500)}}
    fields = hash_manifest(counts, {"bcrypt": {"cost": (10, 17)}}, None, refused)
    assert fields["refused_hashes"] == {"argon2": 2, "pbkdf2": 1}
    assert fields["refused_hash_params"]["argon2"]["memory"] == [7168, 7168]
    block = fields["zitadel_config_admitting_all"]
    assert block == (
        "SystemDefaults:\n  PasswordHasher:\n    Verifiers:\n      - argon2\n      - bcrypt\n      - pbkdf2\n"
        "    Limits:\n      Argon2:\n        MinMemory: 7168\n      Bcrypt:\n        MaxCost: 17\n"
    )
    lead = refused_lead(fields, imported_without_password=False).splitlines()
    assert lead[0].startswith("password hashes refused: 3 user(s) were dead-lettered because")
    assert lead[0].endswith("(argon2 2, pbkdf2 1)")
    assert lead[2:] == ["  " + line for line in block.splitlines()]
    assert "imported without a password" in refused_lead(fields, imported_without_password=True)


def test_the_block_admits_what_it_was_made_for(tmp_path):
    from transforms.hashing.policy import load_policy

    fields = hash_manifest({"refused_hashes.argon2": 2}, {}, None, ARGON2_7168)
    config = tmp_path / "zitadel.yaml"
    config.write_text(fields["zitadel_config_admitting_all"])
    needed = {
        v: {p: tuple(r) for p, r in params.items()} for v, params in fields["refused_hash_params"].items()
    }
    assert HashPolicy().covers(needed) != []
    assert load_policy(str(config), {}).covers(needed) == []


def test_nothing_refused_adds_no_field_and_no_lead():
    fields = hash_manifest(COUNTS, RANGES, HashPolicy(), {})
    assert not {"refused_hashes", "zitadel_config_admitting_all", "target_hash_policy"} & set(fields)
    assert refused_lead(fields, imported_without_password=False) == ""


def test_the_config_migrate_checked_against_is_recorded_and_read_back():
    policy = HashPolicy(verifiers=frozenset({"bcrypt", "pbkdf2"})).with_limits(Argon2_MinMemory=7168)
    manifest = hash_manifest({"password_hashes.pbkdf2": 1}, {"pbkdf2": {"rounds": (27500, 27500)}}, policy)
    assert manifest["target_hash_policy"]["verifiers"] == ["bcrypt", "pbkdf2"]
    assert manifest["target_hash_policy"]["limits"]["Argon2.MinMemory"] == 7168
    assert recorded_policy(manifest) == policy
    assert recorded_policy({}) is None
    assert warn_uncovered(manifest, None) == []  # the recorded config covers pbkdf2: no warning
    # push's own config wins over the recorded one
    assert warn_uncovered(manifest, HashPolicy()) == [
        "verifier 'pbkdf2' is not enabled (SystemDefaults.PasswordHasher.Verifiers)"
    ]


@pytest.mark.parametrize(
    "recorded",
    [
        "argon2",
        {"verifiers": ["rot13"], "limits": {}},
        {"verifiers": ["bcrypt"], "limits": {"Bcrypt.MinCost": "4"}},
        {"verifiers": ["bcrypt"], "limits": {"Nope.Max": 1}},
    ],
)
def test_a_recorded_config_not_as_migrate_writes_it_is_refused(recorded):
    with pytest.raises(ConfigError, match="target_hash_policy"):
        recorded_policy({"target_hash_policy": recorded})


def test_the_block_states_limits_the_given_config_narrows_and_those_it_widens():
    # migrate's config raised Bcrypt.MinCost above the default and lowered Argon2.MinMemory below it
    policy = HashPolicy().with_limits(Bcrypt_MinCost=12, Argon2_MinMemory=7168)
    counts = {"refused_hashes.bcrypt": 1, "refused_hashes.argon2": 1}
    refused = {"bcrypt": {"cost": (10, 10)}, **ARGON2_7168}
    block = hash_manifest(counts, {}, policy, refused)["zitadel_config_admitting_all"]
    assert "        MinCost: 10\n" in block  # beyond the given config
    assert "        MinMemory: 7168\n" in block  # beyond ZITADEL's default, needed when saved on its own
