"""transforms/hashing/summary.py: password hashes in the manifest and summary, and push's check."""

from __future__ import annotations

import logging

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from transforms.common.records import NAMESPACE
from transforms.hashing.policy import HashPolicy
from transforms.hashing.summary import (
    hash_manifest,
    hash_ranges_from_result,
    hash_summary,
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
