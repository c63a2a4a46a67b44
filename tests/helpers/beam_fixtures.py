"""Helpers for tests that run a Beam pipeline in-process: the launcher's runner and bcrypt strings."""

from __future__ import annotations

from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline

TestPipeline.__test__ = False  # not a test class, whatever its name says

B64 = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def h(n: int, cost: int = 10) -> str:
    """A distinct, pattern-valid bcrypt string."""
    return f"$2b${cost:02d}$" + (B64[n % 64] + B64[(n // 64) % 64]) + B64[:51]


def pipeline() -> TestPipeline:
    # The launcher's runner (the default DirectRunner would try to download Prism first).
    return TestPipeline(runner=FnApiRunner())
