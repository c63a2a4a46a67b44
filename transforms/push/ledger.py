"""The push's ledger: one JSON record per body under the results folder, and the dead-letter file.

A body whose record says done for the same sha256 is skipped by the next run; a killed run
leaves ``in-progress`` and the body is sent again. Every file is rewritten atomically (temporary
file + rename). The push engine (``engine.py``, ``send_body.py``) reads and writes it::

    ledger = Ledger("out/importBody.results")
    previous = ledger.load(ref)          # None: never sent, or the body changed since
    ledger.save(result)
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import time

from transforms.common.errors import ConfigError
from transforms.files.storage import is_gcs, write_atomic, write_lines_or_remove
from transforms.output.manifest import BodyRef

__all__ = [
    "BodyStatus",
    "FINISHED",
    "BodyResult",
    "Ledger",
    "LEDGER_VERSION",
    "DEAD_LETTER_NAME",
    "now",
    "write_dead_letter",
]

DEAD_LETTER_NAME = "push-dead-letter.ndjson"
LEDGER_VERSION = 1


class BodyStatus(enum.StrEnum):
    """What became of a body (its ledger record's ``status``)."""

    PENDING = "pending"
    IN_PROGRESS = "in-progress"  # being sent (a record saved mid-body)
    DONE = "done"  # sent, every user created or present
    FAILED = "failed"  # sent, some users refused: a re-run sends them again
    SKIPPED = "skipped"  # done in an earlier run (the ledger)
    BLOCKED = "blocked"  # not sent: a body it must follow (``after``) did not finish
    NOT_SENT = "not-sent"  # not sent: the push stopped first


FINISHED = (BodyStatus.DONE, BodyStatus.SKIPPED)  # nothing left to send


@dataclasses.dataclass
class BodyResult:
    """What happened to one body; also the ledger record (``to_json``)."""

    index: int
    name: str
    sha256: str
    users: int
    status: BodyStatus = BodyStatus.PENDING
    requests: int = 0
    runs: int = 0
    seconds: float = 0.0
    created: list[str] = dataclasses.field(default_factory=list)
    present: list[str] = dataclasses.field(default_factory=list)
    # Of ``present``: users reported AlreadyExisting by a request that followed a lost answer or a
    # server timeout in the same run, so most likely created by this run.
    present_after_lost_answer: int = 0
    failed: list[dict] = dataclasses.field(default_factory=list)
    # Users whose last write's outcome is unknown when the attempts were spent (as ``failed``'s
    # entries, reason ``outcome-unknown``): not refused; the next push reads them back first.
    unknown: list[dict] = dataclasses.field(default_factory=list)
    orgs_present: list[str] = dataclasses.field(default_factory=list)
    parts: list[dict] = dataclasses.field(default_factory=list)
    started_at: str = ""
    finished_at: str = ""

    def to_json(self) -> dict:
        return {"version": LEDGER_VERSION, **dataclasses.asdict(self)}

    @classmethod
    def from_json(cls, data: dict) -> BodyResult:
        fields = {f.name for f in dataclasses.fields(cls)}
        result = cls(**{k: v for k, v in data.items() if k in fields})
        result.status = BodyStatus(result.status)
        return result


def now() -> str:
    """The current UTC time as the ledger writes it."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Ledger:
    """One JSON file per body under the results folder (``body-00000.json``)."""

    def __init__(self, directory: str) -> None:
        if is_gcs(directory):
            raise ConfigError("--results must be a local folder (the ledger is rewritten atomically)")
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    def path(self, ref: BodyRef) -> str:
        return os.path.join(self.directory, f"body-{ref.index:05d}.json")

    def load(self, ref: BodyRef) -> BodyResult | None:
        try:
            with open(self.path(ref), "rb") as handle:
                data = json.loads(handle.read())
        except (OSError, ValueError):
            return None
        return BodyResult.from_json(data) if data.get("sha256") == ref.sha256 else None

    def save(self, result: BodyResult) -> None:
        ref_path = os.path.join(self.directory, f"body-{result.index:05d}.json")
        write_atomic(ref_path, json.dumps(result.to_json(), indent=1).encode() + b"\n")


def write_dead_letter(results_dir: str, results: list[BodyResult]) -> str | None:
    """Rewrite the dead-letter file from the current ledger: failures of this run only."""
    path = os.path.join(results_dir, DEAD_LETTER_NAME)
    lines = [json.dumps({"body": r.name, **f}, sort_keys=True) for r in results for f in r.failed]
    return write_lines_or_remove(path, lines)
