"""The push's live line: bodies done, users created, rate and ETA."""

from __future__ import annotations

import io

from zitadel_fixtures import write_manifest

from transforms.output.manifest import load_manifest
from transforms.push.progress import PushProgress


def test_progress_line_shows_rate_and_eta(tmp_path):
    manifest, _ = write_manifest(tmp_path, users=20, bodies=2)
    stream = io.StringIO()
    with PushProgress(load_manifest(str(manifest)), stream, enabled=True, interval=60) as live:
        live.users_processed(10, 0, 0)
        line = live.line()
    assert "bodies 0/2" in line and "created 10" in line and "users/s" in line and "ETA 0:0" in line
