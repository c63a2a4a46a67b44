"""One run per output (transforms/files/locks.py): local lock files, gs:// lock objects, the CLI.

Holders are real: this test process, a finished process (stale), a migrate run in another
process. Every CLI case checks a checksum of every file in and around the output folder.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from busy_machine import assert_within_pace, timed
from repo_files import ROOT

from pipeline.cli import main
from tests.scenarios.test_outputs_guarded import auth0, lay_out, tree
from transforms.common.errors import ConfigError
from transforms.files.locks import LockHeld, acquire_lock, lock_path_for

REPO = ROOT


def gone_pid() -> int:
    """The pid of a process that has ended (reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_lock_path_is_beside_the_output():
    assert lock_path_for("out/importBody.json") == "out/importBody.lock"
    assert lock_path_for("gs://b/x/importBody.json") == "gs://b/x/importBody.lock"
    assert lock_path_for("importBody") == "importBody.lock"


def test_second_acquire_is_refused_naming_the_holder(tmp_path):
    path = str(tmp_path / "o.lock")
    with acquire_lock(path, what="migrate auth0 --output=o.json") as lock:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        held = json.loads(Path(path).read_text())
        assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
        with pytest.raises(LockHeld) as err:
            acquire_lock(path, what="another run")
        text = str(err.value)
        assert "\n" not in text and f"pid {os.getpid()}" in text and socket.gethostname() in text
        assert "s old" in text and "--break-lock" in text and "migrate auth0" in text
        lock.release()
        lock.release()  # idempotent
        assert not os.path.exists(path)
    with acquire_lock(path, what="again"):  # free again
        pass
    assert not os.path.exists(path)


def test_stale_lock_of_a_gone_process_is_taken_over(tmp_path):
    path = tmp_path / "o.lock"
    path.write_text(
        json.dumps({"pid": gone_pid(), "host": socket.gethostname(), "started": time.time() - 60})
    )
    with acquire_lock(str(path), what="new run") as lock:
        assert json.loads(path.read_text())["token"] == lock.record["token"]
    assert not path.exists()


@pytest.mark.parametrize(
    "holder",
    [
        {"pid": 1, "host": "another-host.example", "started": 0},  # a process gone or not: unknowable
        {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()},  # alive here
    ],
    ids=["other-host", "live-process"],
)
def test_a_live_or_unknowable_holder_needs_break_lock(tmp_path, holder):
    path = tmp_path / "o.lock"
    path.write_text(json.dumps(holder))
    with pytest.raises(LockHeld, match="--break-lock"):
        acquire_lock(str(path), what="x")
    assert json.loads(path.read_text()) == holder
    with acquire_lock(str(path), what="x", break_lock=True) as lock:
        assert json.loads(path.read_text())["token"] == lock.record["token"]
    assert not path.exists()


def test_release_leaves_a_lock_that_is_no_longer_ours(tmp_path):
    path = str(tmp_path / "o.lock")
    first = acquire_lock(path, what="first")
    second = acquire_lock(path, what="second", break_lock=True)  # broke the first one's lock
    first.release()
    assert json.loads(Path(path).read_text())["token"] == second.record["token"]
    second.release()
    assert not os.path.exists(path)


def test_a_link_or_garbage_at_the_lock_name(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (tmp_path / "l.lock").symlink_to(victim)
    with pytest.raises(ConfigError, match="symbolic link"):
        acquire_lock(str(tmp_path / "l.lock"), what="x")
    assert victim.read_text() == "keep" and (tmp_path / "l.lock").is_symlink()
    (tmp_path / "g.lock").write_text("not json")
    with pytest.raises(LockHeld, match="not a lock this tool wrote"):
        acquire_lock(str(tmp_path / "g.lock"), what="x")


def test_gcs_lock_object(gcs_emulator):
    path = f"gs://{gcs_emulator.name}/out/importBody.lock"
    lock = acquire_lock(path, what="migrate on gs://")
    blob = gcs_emulator.blob("out/importBody.lock")
    assert json.loads(blob.download_as_bytes())["token"] == lock.record["token"]
    with pytest.raises(LockHeld) as err:
        acquire_lock(path, what="second")
    assert f"pid {os.getpid()}" in str(err.value) and "--break-lock" in str(err.value)
    lock.release()
    assert not blob.exists()
    # A stale one (this host, the process gone) is taken over; another host's needs --break-lock.
    blob.upload_from_string(json.dumps({"pid": gone_pid(), "host": socket.gethostname(), "started": 1}))
    with acquire_lock(path, what="third") as third:
        assert json.loads(blob.download_as_bytes())["token"] == third.record["token"]
    assert not blob.exists()
    blob.upload_from_string(json.dumps({"pid": 7, "host": "elsewhere.example", "started": 1}))
    with pytest.raises(LockHeld):
        acquire_lock(path, what="fourth")
    with acquire_lock(path, what="fourth", break_lock=True):
        pass
    assert not blob.exists()


# --- the CLI ----------------------------------------------------------------------------------------
def test_migrate_refuses_a_held_output_and_touches_nothing(tmp_path, capsys):
    lay_out(tmp_path)
    with acquire_lock(str(tmp_path / "out/importBody.lock"), what="migrate auth0 --output=elsewhere"):
        before = tree(tmp_path)
        rc = main(auth0(tmp_path))
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1, err
        assert f"pid {os.getpid()}" in err and "--break-lock" in err
        assert tree(tmp_path) == before
    assert main(auth0(tmp_path)) == 0  # released: the next run goes


def test_migrate_takes_over_a_stale_lock_and_break_lock_breaks_a_live_one(tmp_path, capsys):
    lay_out(tmp_path)
    lock = tmp_path / "out/importBody.lock"
    lock.write_text(json.dumps({"pid": gone_pid(), "host": socket.gethostname(), "started": time.time()}))
    assert main(auth0(tmp_path)) == 0, capsys.readouterr().err
    assert not lock.exists()
    lock.write_text(json.dumps({"pid": 4242, "host": "batch-vm-2", "started": time.time() - 7200}))
    before = tree(tmp_path)
    assert main(auth0(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "pid 4242 on batch-vm-2, 2 h old" in err and "--break-lock" in err
    assert tree(tmp_path) == before
    assert main(auth0(tmp_path, "--break-lock")) == 0
    assert not lock.exists()


def test_a_second_push_on_one_ledger_is_refused(tmp_path, capsys):
    from zitadel_fixtures import PAT, write_manifest

    manifest, _ = write_manifest(tmp_path / "out", users=4, bodies=2)
    token = tmp_path / "pat.txt"
    token.write_text(PAT)
    before = tree(tmp_path)
    with acquire_lock(
        str(tmp_path / "out/importBody.results.lock"), what="push --results=out/importBody.results"
    ):
        rc = main(["push", "--url=http://127.0.0.1:9", f"--manifest={manifest}", f"--token-file={token}"])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and f"pid {os.getpid()}" in err and "--break-lock" in err, err
        assert {k: v for k, v in tree(tmp_path).items() if k != "out/importBody.results.lock"} == before


def test_two_concurrent_runs_on_one_output(tmp_path):
    """A second run while the first is converting is refused at once; the first ends intact."""
    inputs = tmp_path / "in"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "gen_auth0.py"),
            "--users",
            "30000",  # converting takes several times the second run's start-up and refusal
            "--out",
            str(inputs),
        ],
        check=True,
        capture_output=True,
    )
    out = tmp_path / "out"
    argv = [
        "migrate",
        "auth0",
        "--org=123",
        f"--users={inputs}/users.json",
        f"--passwords={inputs}/passwords.json",
        f"--output={out}/importBody.json",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    first = subprocess.Popen(
        [sys.executable, "-m", "pipeline", *argv],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not list(out.glob(".importBody.json.zitadel-beam-work-*")):
        assert first.poll() is None and time.monotonic() < deadline, "the first run never started"
        time.sleep(0.05)
    started = time.monotonic()
    second = subprocess.run(
        [sys.executable, "-m", "pipeline", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - started
    assert first.poll() is None, "the first run ended before the second was refused: the premise failed"
    assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
    assert f"pid {first.pid}" in second.stderr and "--break-lock" in second.stderr

    def refused_for_a_missing_input() -> None:  # the baseline: the CLI's start-up and a refusal
        missing = [a if not a.startswith("--users=") else f"--users={tmp_path}/none.json" for a in argv]
        done = subprocess.run(
            [sys.executable, "-m", "pipeline", *missing], cwd=tmp_path, env=env, capture_output=True
        )
        assert done.returncode == 2, done.stderr

    assert_within_pace(elapsed, 10, lambda: timed(refused_for_a_missing_input), "the refusal")  # at once
    out_text, err_text = first.communicate(timeout=300)
    assert first.returncode == 0, err_text.decode()[-2000:]
    assert b"[ok]" in out_text
    left = sorted(p.name for p in out.iterdir())
    assert "importBody.lock" not in left and not any(".zitadel-beam-work-" in n for n in left)
    assert "importBody.manifest.json" in left
