"""The push ledger: one record per body, kept only for the same sha256; the dead-letter file."""

from __future__ import annotations

import json

import pytest

from transforms.common.errors import ConfigError
from transforms.output.manifest import BodyRef
from transforms.push.ledger import (
    DEAD_LETTER_NAME,
    LEDGER_VERSION,
    BodyResult,
    Ledger,
    write_dead_letter,
)


def _ref(sha256: str = "abc") -> BodyRef:
    return BodyRef(index=3, name="importBody-00004-of-00004.json", path="x", users=2, sha256=sha256, after=())


def test_a_saved_record_is_read_back_only_for_the_same_sha256(tmp_path):
    ledger = Ledger(str(tmp_path / "results"))
    result = BodyResult(3, "importBody-00004-of-00004.json", "abc", 2, status="done", created=["u1", "u2"])
    ledger.save(result)
    record = json.loads((tmp_path / "results" / "body-00003.json").read_text())
    assert record["version"] == LEDGER_VERSION and record["created"] == ["u1", "u2"]
    assert ledger.load(_ref()) == result
    assert ledger.load(_ref("changed")) is None


def test_the_ledger_must_be_a_local_folder():
    with pytest.raises(ConfigError, match="local folder"):
        Ledger("gs://bucket/results")


def test_the_dead_letter_file_holds_this_runs_failures_and_goes_when_there_are_none(tmp_path):
    failed = BodyResult(0, "b1", "s", 1, failed=[{"userId": "u1", "reason": "rejected"}])
    path = write_dead_letter(str(tmp_path), [failed, BodyResult(1, "b2", "s", 1)])
    assert path == str(tmp_path / DEAD_LETTER_NAME)
    lines = (tmp_path / DEAD_LETTER_NAME).read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"body": "b1", "reason": "rejected", "userId": "u1"}]
    assert write_dead_letter(str(tmp_path), [BodyResult(1, "b2", "s", 1)]) is None
    assert not (tmp_path / DEAD_LETTER_NAME).exists()
