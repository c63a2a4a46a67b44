"""Password hashes in the run's manifest and summary, and push's check of the target's config.

migrate writes ``password_hashes`` (verifier → users), ``password_hash_params`` (verifier →
parameter → [min, max]), ``users_without_password_by_reason`` and ``zitadel_config`` (the
``SystemDefaults.PasswordHasher`` YAML under which every written hash imports). push reads them
back and warns before sending when the target's expected config does not cover them
(docs/password-hashes.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from transforms.common.counters import HASH_PARAM, PASSWORD_HASHES, WITHOUT_PASSWORD
from transforms.common.records import NAMESPACE
from transforms.hashing.policy import HashPolicy, config_snippet

__all__ = ["hash_ranges_from_result", "hash_manifest", "hash_summary", "uncovered_hashes", "warn_uncovered"]

_LOGGER = logging.getLogger(__name__)


def hash_ranges_from_result(result: Any) -> dict[str, dict[str, tuple[int, int]]]:
    """verifier → param → (min, max) from the ``hash_param.*`` distributions of a finished run."""
    from apache_beam.metrics.metric import MetricsFilter

    ranges: dict[str, dict[str, tuple[int, int]]] = {}
    query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    for dist in query["distributions"]:
        name = dist.key.metric.name
        if not name.startswith(HASH_PARAM):
            continue
        data = dist.committed if dist.committed is not None else dist.attempted
        if data is None or not data.count:
            continue
        verifier, param = name[len(HASH_PARAM) :].split(".", 1)
        low, high = ranges.get(verifier, {}).get(param, (data.min, data.max))
        ranges.setdefault(verifier, {})[param] = (min(low, data.min), max(high, data.max))
    return ranges


def hash_manifest(
    counts: Mapping[str, int], ranges: Mapping[str, Mapping[str, tuple[int, int]]], policy: HashPolicy | None
) -> dict[str, Any]:
    """The manifest's hash fields."""
    hashes = {
        name[len(PASSWORD_HASHES) :]: n
        for name, n in counts.items()
        if name.startswith(PASSWORD_HASHES) and n
    }
    without = {
        name[len(WITHOUT_PASSWORD) :]: n
        for name, n in counts.items()
        if name.startswith(WITHOUT_PASSWORD) and n
    }
    needed = {verifier: dict(ranges.get(verifier, {})) for verifier in hashes}
    return {
        "password_hashes": dict(sorted(hashes.items())),
        "password_hash_params": {
            v: {p: list(r) for p, r in sorted(params.items())} for v, params in sorted(needed.items())
        },
        "users_without_password_by_reason": dict(sorted(without.items())),
        # Against ZITADEL's defaults, so the snippet stands on its own (not relative to --zitadel-config).
        "zitadel_config": config_snippet(needed) if hashes else "",
    }


def hash_summary(fields: Mapping[str, Any]) -> str:
    """The lines the summary prints after its table."""
    if not fields.get("password_hashes"):
        return ""
    counts = ", ".join(f"{v} {n}" for v, n in fields["password_hashes"].items())
    lines = [f"password hashes by ZITADEL verifier: {counts}"]
    if fields.get("users_without_password_by_reason"):
        dropped = ", ".join(f"{r} {n}" for r, n in fields["users_without_password_by_reason"].items())
        lines.append(f"users imported without password: {dropped}")
    lines.append("the target ZITADEL needs (runtime config) so that every written hash imports:")
    lines += ["  " + line for line in fields["zitadel_config"].splitlines()]
    return "\n".join(lines)


def uncovered_hashes(manifest: Mapping[str, Any], policy: HashPolicy) -> list[str]:
    """What of a manifest's hashes ``policy`` would refuse, one line each (empty: all covered)."""
    params = manifest.get("password_hash_params") or {}
    needed = {
        verifier: {p: tuple(r) for p, r in (params.get(verifier) or {}).items()}
        for verifier in (manifest.get("password_hashes") or {})
    }
    return policy.covers(needed)


def warn_uncovered(manifest: Mapping[str, Any], policy: HashPolicy | None) -> list[str]:
    """Log a warning per uncovered need before push sends (the server would refuse those users)."""
    problems = uncovered_hashes(manifest, policy or HashPolicy())
    for line in problems:
        _LOGGER.warning(
            "the target's password hasher config does not cover this run: %s "
            "(those users would fail with Errors.Hash.NotSupported / Errors.User.Password.Invalid; "
            "see the manifest's zitadel_config)",
            line,
        )
    return problems
