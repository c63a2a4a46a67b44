"""transforms/hashing/tally.py: per-bundle hash counts and parameter ranges as Beam metrics, and the
counter name and list line of a user written without password."""

from __future__ import annotations

import apache_beam as beam
import orjson
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from transforms.common.records import NAMESPACE
from transforms.hashing.convert import ConvertedHash
from transforms.hashing.tally import HashTally, passwordless

BCRYPT_10 = ConvertedHash("bcrypt", "$2b$10$x", "bcrypt", (("cost", 10),))
BCRYPT_12 = ConvertedHash("bcrypt", "$2b$12$x", "bcrypt", (("cost", 12),))
PBKDF2 = ConvertedHash("pbkdf2-sha256", "$pbkdf2-sha256$...", "pbkdf2", (("rounds", 27500),))


def test_add_keeps_the_lowest_and_highest_of_each_parameter():
    tally = HashTally()
    for converted in (BCRYPT_12, BCRYPT_10, PBKDF2, BCRYPT_12, ConvertedHash("md5", "x")):
        tally.add(converted)
    assert tally.ranges == {"bcrypt.cost": (10, 12), "pbkdf2.rounds": (27500, 27500)}
    assert not tally.counts  # users are counted where bodies are written, not here


def test_passwordless_gives_the_counter_name_and_the_list_line():
    name, line = passwordless("unsupported-hash-md4", "u1", "a@example.com")
    assert name == "without_password.unsupported-hash-md4"
    assert orjson.loads(line) == {"id": "u1", "email": "a@example.com", "reason": "unsupported-hash-md4"}
    assert orjson.loads(passwordless("unsupported-hash-md4", "u2", None)[1])["email"] is None


class _TallyFn(beam.DoFn):
    """Adds what the element names to a HashTally and publishes it, as a reader DoFn does."""

    def process(self, element):
        tally = HashTally()
        for converted in element["hashes"]:
            tally.add(converted)
        for converted in element["refused"]:
            tally.refused(converted)
        tally.publish()
        assert not tally.counts and not tally.ranges  # ready for the next bundle
        yield element


def test_publish_writes_counters_and_distributions(tmp_path):
    bundles = [
        {"hashes": [BCRYPT_10, BCRYPT_12], "refused": [PBKDF2]},
        {"hashes": [PBKDF2], "refused": []},
    ]
    pipeline = beam.Pipeline(runner=FnApiRunner())
    _ = pipeline | beam.Create(bundles) | beam.ParDo(_TallyFn())
    result = pipeline.run()
    result.wait_until_finish()
    query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    counters = {c.key.metric.name: c.committed for c in query["counters"]}
    assert counters == {"refused_hashes.pbkdf2": 1}
    dists = {d.key.metric.name: (d.committed.min, d.committed.max) for d in query["distributions"]}
    assert dists == {
        "hash_param.bcrypt.cost": (10, 12),
        "hash_param.pbkdf2.rounds": (27500, 27500),
        "refused_hash_param.pbkdf2.rounds": (27500, 27500),
    }


def test_refused_name_spreads_the_ranges_and_leaves_the_count_to_the_written_user():
    tally = HashTally()
    assert tally.refused_name(PBKDF2) == "refused_hashes.pbkdf2"
    assert tally.refused_name(None) is None
    assert not tally.counts
    assert tally.refused_ranges == {"pbkdf2.rounds": (27500, 27500)}


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
