"""Sending one body against the loopback test server: halves on server timeouts, the ledger."""

from __future__ import annotations

import io

import pytest
from zitadel_fixtures import PAT, fast_client, write_manifest, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from transforms.output.manifest import load_manifest
from transforms.push.ledger import Ledger
from transforms.push.progress import PushProgress
from transforms.push.send_body import Abort, send_body
from transforms.zitadel_api.credentials import Credentials

TOKEN = Credentials("token", token=PAT)


def test_a_server_timeout_sends_the_users_again_in_halves(zitadel, tmp_path):
    zitadel.faults.per_user_delay = 0.01
    manifest_path, ids = write_manifest(tmp_path, users=8, bodies=1, timeout="30ms")
    manifest = load_manifest(str(manifest_path))
    ledger = Ledger(str(tmp_path / "results"))
    with PushProgress(manifest, io.StringIO(), enabled=False) as live:
        result = send_body(
            fast_client(zitadel.url, TOKEN), manifest.bodies[0], None, "5m", None, live, ledger, 6
        )
    assert result.status == "done" and zitadel.user_ids() == set(ids)
    assert result.parts[0]["outcome"] == "deadline-exceeded" and result.parts[0]["users"] == 8
    assert result.parts[1]["users"] == 4  # the first half
    assert sorted(result.created + result.present) == sorted(ids)
    assert ledger.load(manifest.bodies[0]) == result


def test_an_unreadable_body_fails_without_a_request(zitadel, tmp_path):
    manifest_path, _ = write_manifest(tmp_path, users=2, bodies=1)
    manifest = load_manifest(str(manifest_path))
    (tmp_path / manifest.bodies[0].name).unlink()
    ledger = Ledger(str(tmp_path / "results"))
    with PushProgress(manifest, io.StringIO(), enabled=False) as live:
        result = send_body(
            fast_client(zitadel.url, TOKEN), manifest.bodies[0], None, "5m", None, live, ledger, 6
        )
    assert result.status == "failed" and result.failed[0]["reason"] == "unreadable-body"
    assert result.requests == 0 and "/admin/v1/import" not in [path for path, _ in zitadel.requests]


def test_a_revoked_credential_aborts_and_leaves_the_body_not_sent(zitadel, tmp_path):
    manifest_path, _ = write_manifest(tmp_path, users=2, bodies=1)
    manifest = load_manifest(str(manifest_path))
    ledger = Ledger(str(tmp_path / "results"))
    client = fast_client(zitadel.url, Credentials("token", token="revoked-" + PAT))
    with (
        PushProgress(manifest, io.StringIO(), enabled=False) as live,
        pytest.raises(Abort, match="authentication"),
    ):
        send_body(client, manifest.bodies[0], None, "5m", None, live, ledger, 6)
    saved = ledger.load(manifest.bodies[0])
    assert saved is not None and saved.status == "not-sent"


def test_an_exhausted_quota_stops_with_its_reason_instead_of_retrying(zitadel, tmp_path):
    """ZITADEL's quota answer (429, gRPC 8, ``QUOTA-vjAy8``) clears when the quota's period ends."""
    manifest_path, _ = write_manifest(tmp_path, users=2, bodies=1)
    manifest = load_manifest(str(manifest_path))
    ledger = Ledger(str(tmp_path / "results"))
    zitadel.quota_exhausted = True
    with PushProgress(manifest, io.StringIO(), enabled=False) as live, pytest.raises(Abort) as stopped:
        send_body(fast_client(zitadel.url, TOKEN), manifest.bodies[0], None, "5m", None, live, ledger, 6)
    assert "quota is used up until its period ends" in str(stopped.value) and "QUOTA-vjAy8" in str(
        stopped.value
    )
    assert [path for path, _ in zitadel.refusals] == ["/admin/v1/import"]  # one answer, not retried
    assert ledger.load(manifest.bodies[0]).status == "not-sent"
