"""pipeline/gcs_env.py: emulator runs get throw-away credentials instead of the ~20 s credential wait."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from repo_files import ROOT

from pipeline.gcs_env import prepare_emulator_credentials


def test_nothing_to_do_without_an_emulator_or_with_credentials():
    assert prepare_emulator_credentials({}) is None
    assert prepare_emulator_credentials({"STORAGE_EMULATOR_HOST": ""}) is None
    configured = {
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9023",
        "GOOGLE_APPLICATION_CREDENTIALS": "/k.json",
    }
    assert prepare_emulator_credentials(configured) is None
    assert configured == {
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9023",
        "GOOGLE_APPLICATION_CREDENTIALS": "/k.json",
    }


def test_an_emulator_run_gets_a_dummy_authorized_user_and_restore_undoes_it():
    environ = {"STORAGE_EMULATOR_HOST": "http://127.0.0.1:9023", "GOOGLE_CLOUD_PROJECT": "mine"}
    prepared = prepare_emulator_credentials(environ)
    assert prepared is not None
    path = Path(environ["GOOGLE_APPLICATION_CREDENTIALS"])
    assert str(path) == prepared.path
    try:
        info = json.loads(path.read_text())
        assert info["type"] == "authorized_user" and info["expiry"].startswith("2999")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # mkstemp: only this user reads it
        assert environ["NO_GCE_CHECK"] == "true"
        assert environ["GOOGLE_CLOUD_PROJECT"] == "mine"  # what was set stays as it was
    finally:
        prepared.restore()
    assert environ == {"STORAGE_EMULATOR_HOST": "http://127.0.0.1:9023", "GOOGLE_CLOUD_PROJECT": "mine"}
    assert not path.exists()
    prepared.restore()  # twice is harmless


def test_emulator_run_without_credentials_has_no_credential_wait(gcs_emulator, tmp_path):
    """A user's emulator run (only STORAGE_EMULATOR_HOST set, no credentials at all) must not
    sit through google-auth's ~20 s of retries: the CLI supplies throw-away credentials."""
    root = ROOT
    for name in ("users.json", "passwords.json"):
        gcs_emulator.blob(f"in/{name}").upload_from_filename(str(root / "examples" / "auth0" / name))
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "NO_GCE_CHECK")
    }
    bucket = gcs_emulator.name

    def run(environ: dict, out: str) -> tuple[float, subprocess.CompletedProcess]:
        started = time.monotonic()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline",
                "migrate",
                "auth0",
                "--org=123",
                f"--users=gs://{bucket}/in/users.json",
                f"--passwords=gs://{bucket}/in/passwords.json",
                f"--output=gs://{bucket}/{out}/importBody.json",
            ],
            cwd=root,
            env=environ,
            capture_output=True,
            text=True,
            timeout=180,
        )
        return time.monotonic() - started, result

    # The same run with the fixture's credentials is the yardstick: on a busy machine both are
    # slow alike, while google-auth's retries add ~20 s to the run without credentials only.
    with_credentials, reference = run(dict(os.environ), "ref")
    assert reference.returncode == 0, reference.stderr[-2000:]
    elapsed, result = run(env, "out")
    assert result.returncode == 0, result.stderr[-2000:]
    assert elapsed - with_credentials < 10, (
        f"took {elapsed:.1f} s against {with_credentials:.1f} s with credentials: the credential look-up was retried"
    )
    assert gcs_emulator.blob("out/importBody.manifest.json").exists()
    assert "GOOGLE_APPLICATION_CREDENTIALS" not in env  # the test really ran without credentials
