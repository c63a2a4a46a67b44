"""Beam metrics → the run summary (a table on stdout and the ``counts`` of the manifest)."""
from __future__ import annotations

from typing import Any, Mapping

from apache_beam.metrics.metric import MetricsFilter

from transforms.records import NAMESPACE

__all__ = ["counters_from_result", "summary_table", "dead_letter_totals", "count_prefix", "shared_summary_lines"]


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


def count_prefix(counts: Mapping[str, int], prefix: str) -> int:
    """The sum of every counter whose name starts with ``prefix``."""
    return sum(value for name, value in counts.items() if name.startswith(prefix))


def shared_summary_lines(counts: Mapping[str, int], source: str) -> list[tuple[str, Any]]:
    """The rows every migrate summary ends with: dropped fields, metadata, dead letters by reason.

    ``source`` is the counter prefix of the source's own metadata counters (``auth0``, ``keycloak``).
    """
    lines: list[tuple[str, Any]] = [
        ("phones dropped (not +..., or > 50 chars)", counts.get("notes.phone-dropped", 0)),
        ("languages dropped (no valid base language)", counts.get("notes.language-dropped", 0)),
        ("names with control characters removed", counts.get("notes.control-chars-removed", 0)),
        ("e-mail from --email-fallback (unverified)", counts.get("notes.email-fallback", 0)),
        ("ids derived (source had none)", counts.get("notes.derived-id", 0)),
    ]
    if counts.get("metadata_written") or counts.get(f"{source}.metadata_dropped"):
        lines.append(("metadata entries written", counts.get("metadata_written", 0)))
        lines.append(("metadata entries dropped (limits)", counts.get(f"{source}.metadata_dropped", 0)))
    lines.append(("dead-lettered", count_prefix(counts, "dead_letter.")))
    for name, value in counts.items():
        if name.startswith("dead_letter."):
            _, letter_source, reason = name.split(".", 2)
            lines.append((f"  {reason} ({letter_source})", value))
    return lines
