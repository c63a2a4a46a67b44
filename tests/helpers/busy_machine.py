"""Duration bounds that hold on a busy machine (CI shares its machine with other work).

A test that bounds how long something takes states the figure of a quiet machine; when that
figure is missed, the same test measures a baseline (the same kind of work that has no reason to
wait: the same command failing at once for another reason, the same run without the fault) and
the duration must stay within a few times that, measured now, under the same load. A wait the
bound exists to catch (retries, a lock, a credential look-up) is far longer than either.

Example::

    assert_within_pace(elapsed, 15.0, lambda: timed(run_same_without_the_fault), "the round trip")
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["timed", "assert_within_pace"]

FACTOR = 3.0


def timed(work: Callable[[], object]) -> float:
    """Seconds ``work()`` took."""
    started = time.monotonic()
    work()
    return time.monotonic() - started


def assert_within_pace(
    seconds: float, quiet: float, baseline: Callable[[], float], what: str, factor: float = FACTOR
) -> None:
    """``seconds`` is within ``quiet`` or, failing that, within ``factor`` times ``baseline()``."""
    if seconds < quiet:
        return
    reference = baseline()
    assert seconds < factor * reference, (
        f"{what} took {seconds:.1f} s: over the quiet machine's {quiet:.0f} s and over {factor:.0f}x "
        f"the baseline measured now ({reference:.1f} s)"
    )
