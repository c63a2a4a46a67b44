"""Per-run tallies of imported password hashes (Beam metrics) and the passwordless listing.

A DoFn keeps one :class:`HashTally`, ``add``s each hash it writes (or, for a value rewritten by
transforms/hashing/hash_forms.py, passes its ``rewritten`` outcome), each hash the target's
configuration ``refused`` and each user it imports without password, and ``publish``es once per
bundle: counters ``password_hashes.<verifier>``, ``refused_hashes.<verifier>`` and
``without_password.<reason>``, ``hash_forms.<form>`` and ``refused_hash_forms.<form>``, and distributions ``hash_param.<verifier>.<param>`` (and
``refused_hash_param.``...) whose min and max are what the target's limits must cover
(pipeline/report.py reads them back; the manifest and the summary's config snippet come from
them, docs/password-hashes.md).

Users imported without password (``--on-unsupported-hash=import-without-password``) are also
listed as ``{"id", "email", "reason"}`` lines in ``<tmp_dir>/passwordless-<n>.ndjson`` files,
which the launcher joins into ``<stem>.passwordless.ndjson`` (mode 0600) for reset mails.
"""

from __future__ import annotations

import collections
import uuid
from typing import TYPE_CHECKING

from transforms.common import counters
from transforms.common.records import NAMESPACE
from transforms.hashing.convert import ConvertedHash

if TYPE_CHECKING:
    from transforms.hashing.hash_forms import Rewritten

__all__ = [
    "HashTally",
    "PASSWORDLESS_PREFIX",
]

PASSWORDLESS_PREFIX = "passwordless-"


class HashTally:
    """Counts and parameter ranges of one bundle; cheap per user (no metric calls until publish)."""

    def __init__(self, tmp_dir: str | None = None) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.ranges: dict[str, tuple[int, int]] = {}  # "<verifier>.<param>" → (min, max) written
        self.refused_ranges: dict[str, tuple[int, int]] = {}  # the same, of hashes refused
        self.tmp_dir = tmp_dir
        self.passwordless: list[bytes] = []

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

    def rewritten(self, outcome: Rewritten) -> None:
        """A value of a source form (hash_forms.to_passwap): its form counted, and when written its
        verifier's parameters spread as :meth:`add` does; a refusal is counted by form only (the
        caller dead-letters the user or imports it without password, and counts that as usual)."""
        if outcome.converted is not None:
            self.counts[counters.HASH_FORMS + str(outcome.form)] += 1
            self.add(outcome.converted)
        else:
            self.counts[
                counters.REFUSED_HASH_FORMS + (str(outcome.form) if outcome.form else "unrecognised")
            ] += 1

    def refused(self, converted: ConvertedHash | None) -> None:
        """A user dead-lettered or imported without password because the target's configuration
        does not admit ``converted`` (HashFailure.refused; None: nothing to count)."""
        if converted is None:
            return
        self.counts[counters.REFUSED_HASHES + converted.verifier] += 1
        _spread(self.refused_ranges, converted)

    def without_password(self, reason: str, user_id: object = None, email: object = None) -> None:
        self.counts[counters.WITHOUT_PASSWORD + reason] += 1
        if self.tmp_dir is not None:
            import orjson

            self.passwordless.append(orjson.dumps({"id": user_id, "email": email, "reason": reason}) + b"\n")

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
        if self.passwordless and self.tmp_dir is not None:
            from apache_beam.io.filesystems import FileSystems

            from transforms.files.storage import open_private

            # One file per bundle (unique name); the launcher joins them and drops repeats that
            # a retried bundle may have written.
            path = FileSystems.join(self.tmp_dir, f"{PASSWORDLESS_PREFIX}{uuid.uuid4().hex}.ndjson")
            with open_private(path) as handle:
                handle.write(b"".join(self.passwordless))
            self.passwordless.clear()


def _spread(ranges: dict[str, tuple[int, int]], converted: ConvertedHash) -> None:
    """Widen ``ranges`` ("<verifier>.<param>" → (min, max)) to ``converted``'s parameters."""
    for name, value in converted.params:
        key = f"{converted.verifier}.{name}"
        low_high = ranges.get(key)
        if low_high is None:
            ranges[key] = (value, value)
        elif value < low_high[0] or value > low_high[1]:
            ranges[key] = (min(low_high[0], value), max(low_high[1], value))
