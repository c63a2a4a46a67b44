"""Shared fixtures: the vendored test data and an in-process GCS emulator.

The emulator is started once per session (Beam caches the credentials it finds per process, and
each test gets a wiped storage with the bucket kept). Credentials: an authorized-user file whose
token never expires, plus GOOGLE_CLOUD_PROJECT and NO_GCE_CHECK=true, so google-auth neither
retries the credential look-up (~20 s) nor probes the GCE metadata address (docs/gcs.md).
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

DATA_DIR = Path(__file__).resolve().parent / "data"
REALWORLD = DATA_DIR / "realworld"
ZITADEL_TOOLS = DATA_DIR / "zitadel-tools"
GCS_BUCKET = "zb-test"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``tests/data``: every input the suite reads, with its origin in ``tests/data/README.md``."""
    return DATA_DIR


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def _gcs_server(tmp_path_factory):
    from gcp_storage_emulator import server as server_module
    port = _free_port()
    server = server_module.create_server("127.0.0.1", port, in_memory=True, default_bucket=GCS_BUCKET)
    server.start()
    creds = tmp_path_factory.mktemp("gcs") / "authorized_user.json"
    creds.write_text(json.dumps({
        "type": "authorized_user",
        "client_id": "test.apps.googleusercontent.com",
        "client_secret": "test",
        "refresh_token": "test",
        "token": "test-token",
        "expiry": "2999-01-01T00:00:00Z",
    }))
    try:
        yield server, f"http://127.0.0.1:{port}", creds
    finally:
        server.stop()


@pytest.fixture
def gcs_emulator(_gcs_server, monkeypatch):
    """An empty bucket ``GCS_BUCKET`` on 127.0.0.1; yields a ``google.cloud.storage`` Bucket."""
    server, host, creds = _gcs_server
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", host)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(creds))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    from google.cloud import storage

    client = storage.Client(project="test-project")
    try:
        yield client.bucket(GCS_BUCKET)
    finally:
        server.wipe(keep_buckets=True)
