"""Per-run tallies of imported password hashes (Beam metrics) and the passwordless listing.

A DoFn keeps one :class:`HashTally`, ``add``s each hash it writes (or, for a value rewritten by
transforms/hashing/forms.py, passes its outcome to ``form_name``), each hash the target's
configuration refused (``refused``, or ``refused_name`` for a user still written), and
``publish``es once per bundle: counters ``refused_hashes.<verifier>`` and
``refused_hash_forms.<form>`` of users dead-lettered, and distributions
``hash_param.<verifier>.<param>`` (and ``refused_hash_param.``...) whose min and max are what the
target's limits must cover (pipeline/report.py reads them back; the manifest and the summary's
config snippet come from them, docs/password-hashes.md).

What is counted about a user that is written (``hash_forms.<form>``, ``without_password.<reason>``,
its refused hash) is not counted here: ``form_name``, ``refused_name`` and :func:`passwordless`
give the counter names (and the passwordless list's line, ``{"id", "email", "reason"}``) that
travel in its row and are counted once it is written (transforms/output/written.py), so a user
dropped later as a duplicate is neither counted nor listed for reset mails.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

import orjson

from transforms.common import counters
from transforms.common.records import NAMESPACE
from transforms.hashing.convert import ConvertedHash

if TYPE_CHECKING:
    from transforms.hashing.forms import Rewritten

__all__ = [
    "HashTally",
    "PASSWORDLESS_PREFIX",
    "passwordless",
]

PASSWORDLESS_PREFIX = "passwordless-"


class HashTally:
    """Counts and parameter ranges of one bundle; cheap per user (no metric calls until publish)."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.ranges: dict[str, tuple[int, int]] = {}  # "<verifier>.<param>" → (min, max) written
        self.refused_ranges: dict[str, tuple[int, int]] = {}  # the same, of hashes refused

    def add(self, converted: ConvertedHash) -> None:
        # Users are counted by verifier where bodies are written (transforms/output/bodies.py), so that
        # a user dropped later (a duplicate) is not; the ranges here may include such users.
        # Inline, not _spread: this runs once per written user (the extra call measured ~0.7 µs).
        for name, value in converted.params:
            key = f"{converted.verifier}.{name}"
            low_high = self.ranges.get(key)
            if low_high is None:
                self.ranges[key] = (value, value)
            elif value < low_high[0] or value > low_high[1]:
                self.ranges[key] = (min(low_high[0], value), max(low_high[1], value))

    def form_name(self, outcome: Rewritten) -> str:
        """A value of a source form (forms.to_passwap) of a user written: the counter name of
        its form (``hash_forms.<form>``, or ``refused_hash_forms.<form>`` when the user comes
        without it), and when written its verifier's parameters spread as :meth:`add` does."""
        if outcome.converted is not None:
            self.add(outcome.converted)
            return counters.HASH_FORMS + str(outcome.form)
        return counters.REFUSED_HASH_FORMS + (str(outcome.form) if outcome.form else "unrecognised")

    def rewritten(self, outcome: Rewritten) -> None:
        """The source form of the hash of a user dead-lettered, counted (see :meth:`form_name`)."""
        self.counts[self.form_name(outcome)] += 1

    def refused_name(self, converted: ConvertedHash | None) -> str | None:
        """A user imported without password because the target's configuration does not admit
        ``converted`` (HashFailure.refused): its parameters spread, the counter name returned
        (None: nothing to count)."""
        if converted is None:
            return None
        _spread(self.refused_ranges, converted)
        return counters.REFUSED_HASHES + converted.verifier

    def refused(self, converted: ConvertedHash | None) -> None:
        """A user dead-lettered because the target's configuration does not admit ``converted``
        (HashFailure.refused; None: nothing to count)."""
        name = self.refused_name(converted)
        if name is not None:
            self.counts[name] += 1

    def publish(self) -> None:
        from apache_beam.metrics import Metrics  # here: push imports this module without Beam

        for name, value in self.counts.items():
            Metrics.counter(NAMESPACE, name).inc(value)
        for prefix, ranges in (
            (counters.HASH_PARAM, self.ranges),
            (counters.REFUSED_HASH_PARAM, self.refused_ranges),
        ):
            for key, (low, high) in ranges.items():
                distribution = Metrics.distribution(NAMESPACE, prefix + key)
                distribution.update(low)
                distribution.update(high)
            ranges.clear()
        self.counts.clear()


def passwordless(reason: str, user_id: object, email: object) -> tuple[str, bytes]:
    """A user written without its password: the counter name (``without_password.<reason>``) and
    its line of the passwordless list, both for its row (transforms/common/records.py)."""
    line = orjson.dumps({"id": user_id, "email": email, "reason": reason})
    return counters.WITHOUT_PASSWORD + reason, line


def _spread(ranges: dict[str, tuple[int, int]], converted: ConvertedHash) -> None:
    """Widen ``ranges`` ("<verifier>.<param>" → (min, max)) to ``converted``'s parameters."""
    for name, value in converted.params:
        key = f"{converted.verifier}.{name}"
        low_high = ranges.get(key)
        if low_high is None:
            ranges[key] = (value, value)
        elif value < low_high[0] or value > low_high[1]:
            ranges[key] = (min(low_high[0], value), max(low_high[1], value))
