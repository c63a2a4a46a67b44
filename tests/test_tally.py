"""transforms/hashing/tally.py: per-bundle hash counts and parameter ranges as Beam metrics, and the
passwordless listing files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import apache_beam as beam
import orjson
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from transforms.common.records import NAMESPACE
from transforms.hashing.convert import ConvertedHash
from transforms.hashing.tally import PASSWORDLESS_PREFIX, HashTally

BCRYPT_10 = ConvertedHash("bcrypt", "$2b$10$x", "bcrypt", (("cost", 10),))
BCRYPT_12 = ConvertedHash("bcrypt", "$2b$12$x", "bcrypt", (("cost", 12),))
PBKDF2 = ConvertedHash("pbkdf2-sha256", "$pbkdf2-sha256$...", "pbkdf2", (("rounds", 27500),))


def test_add_keeps_the_lowest_and_highest_of_each_parameter():
    tally = HashTally()
    for converted in (BCRYPT_12, BCRYPT_10, PBKDF2, BCRYPT_12, ConvertedHash("md5", "x")):
        tally.add(converted)
    assert tally.ranges == {"bcrypt.cost": (10, 12), "pbkdf2.rounds": (27500, 27500)}
    assert not tally.counts  # users are counted where bodies are written, not here


def test_without_password_counts_and_lists_only_with_a_tmp_dir(tmp_path):
    quiet = HashTally()
    quiet.without_password("unsupported-hash-md4", "u1", "a@example.com")
    assert quiet.counts == {"without_password.unsupported-hash-md4": 1}
    assert quiet.passwordless == []
    listing = HashTally(str(tmp_path))
    listing.without_password("unsupported-hash-md4", "u1", "a@example.com")
    listing.without_password("unsupported-hash-md4", "u2", None)
    assert [orjson.loads(line) for line in listing.passwordless] == [
        {"id": "u1", "email": "a@example.com", "reason": "unsupported-hash-md4"},
        {"id": "u2", "email": None, "reason": "unsupported-hash-md4"},
    ]


class _TallyFn(beam.DoFn):
    """Adds what the element names to a HashTally and publishes it, as a writer DoFn does."""

    def __init__(self, tmp_dir: str):
        self._tmp_dir = tmp_dir

    def process(self, element):
        tally = HashTally(self._tmp_dir)
        for converted in element["hashes"]:
            tally.add(converted)
        for user in element["without"]:
            tally.without_password("unsupported-hash-md4", user, f"{user}@example.com")
        tally.publish()
        assert not tally.counts and not tally.ranges and not tally.passwordless  # ready for the next bundle
        yield element


def test_publish_writes_counters_distributions_and_one_private_file_per_bundle(tmp_path):
    bundles = [
        {"hashes": [BCRYPT_10, BCRYPT_12], "without": ["u1", "u2"]},
        {"hashes": [PBKDF2], "without": []},
    ]
    pipeline = beam.Pipeline(runner=FnApiRunner())
    _ = pipeline | beam.Create(bundles) | beam.ParDo(_TallyFn(str(tmp_path)))
    result = pipeline.run()
    result.wait_until_finish()
    query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    counters = {c.key.metric.name: c.committed for c in query["counters"]}
    assert counters == {"without_password.unsupported-hash-md4": 2}
    dists = {d.key.metric.name: (d.committed.min, d.committed.max) for d in query["distributions"]}
    assert dists == {"hash_param.bcrypt.cost": (10, 12), "hash_param.pbkdf2.rounds": (27500, 27500)}
    (listing,) = [p for p in Path(tmp_path).iterdir() if p.name.startswith(PASSWORDLESS_PREFIX)]
    assert listing.name.endswith(".ndjson")
    assert stat.S_IMODE(os.stat(listing).st_mode) == 0o600
    assert [orjson.loads(line)["id"] for line in listing.read_bytes().splitlines()] == ["u1", "u2"]


def test_refused_hashes_are_counted_by_verifier_with_their_own_ranges():
    tally = HashTally()
    argon2 = ConvertedHash("argon2id", "$argon2id$...", "argon2", (("memory", 7168), ("time", 5)))
    tally.refused(argon2)
    tally.refused(PBKDF2)
    tally.refused(None)  # a hash nothing can verify: not the configuration's refusal
    tally.add(BCRYPT_10)
    assert tally.counts == {"refused_hashes.argon2": 1, "refused_hashes.pbkdf2": 1}
    assert tally.refused_ranges == {
        "argon2.memory": (7168, 7168),
        "argon2.time": (5, 5),
        "pbkdf2.rounds": (27500, 27500),
    }
    assert tally.ranges == {"bcrypt.cost": (10, 10)}
