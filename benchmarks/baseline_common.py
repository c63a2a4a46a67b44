"""What both plain baselines share: cut the bodies and write them like the pipeline names them."""

from __future__ import annotations

import hashlib
import os

from transforms.output.batching import BodySpec, Fragment, plan_bodies, render_fragments


def render_all(partitions: dict[int, list[Fragment]], org: str, timeout: str, batch_size: int) -> list[bytes]:
    spec = BodySpec(org, timeout, batch_size)
    return [render_fragments(spec, chunk) for chunk in plan_bodies(partitions, batch_size)]


def write_bodies(output: str, bodies: list[bytes]) -> list[str]:
    """Write ``bodies`` as migrate does (one body: exactly ``output``); return their sha256."""
    stem, ext = os.path.splitext(output)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    digests = []
    for i, data in enumerate(bodies):
        path = output if len(bodies) == 1 else f"{stem}-{i + 1:05d}-of-{len(bodies):05d}{ext}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # bodies hold hashes
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        digests.append(hashlib.sha256(data).hexdigest())
    return digests
