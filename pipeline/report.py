"""Beam metrics → the run summary (a table on stdout and the ``counts`` of the manifest)."""
from __future__ import annotations

from typing import Any, Mapping

from apache_beam.metrics.metric import MetricsFilter

from transforms.records import NAMESPACE

__all__ = ["counters_from_result", "summary_table", "dead_letter_totals"]


def counters_from_result(result) -> dict[str, int]:
    """Every counter of our namespace, summed over steps (committed values where the runner has them)."""
    totals: dict[str, int] = {}
    query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + int(value or 0)
    return dict(sorted(totals.items()))


def dead_letter_totals(counts: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """``{source: {reason: n}}`` from ``dead_letter.<source>.<reason>`` counters."""
    out: dict[str, dict[str, int]] = {}
    for name, value in counts.items():
        if name.startswith("dead_letter."):
            _, source, reason = name.split(".", 2)
            out.setdefault(source, {})[reason] = value
    return out


def summary_table(title: str, lines: list[tuple[str, Any]]) -> str:
    """A two-column table; rows whose label starts with two spaces are indented details."""
    width = max([len(label) for label, _ in lines] + [20])
    out = [title, "-" * (width + 14)]
    for label, value in lines:
        if label == "":
            out.append("")
            continue
        text = f"{value:,}" if isinstance(value, int) else str(value)
        out.append(f"{label:<{width}}  {text:>12}")
    return "\n".join(out)
