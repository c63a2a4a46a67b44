"""SIGINT and SIGTERM stop every command within 5 s (on a busy machine, within the time the
command took to start, measured in the same test), cleanly (pipeline/signals.py).

Real processes, real signals: each command runs as ``python -m pipeline`` in a session of its
own (``start_new_session``), and the signal goes to its pid or to its whole process group
(``os.killpg``, what a terminal's Ctrl-C does). Each case checks the exit status (130 / 143),
the time to stop, one line on stderr with no traceback, and a checksum of every file in and
around the output folder: the inputs unchanged, no temporary file, work folder, lock or
manifest of an unfinished run left. Push is re-run after the signal and resumes to the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_files import ROOT
from zitadel_fixtures import PAT, write_manifest
from zitadel_server import ZitadelServer

from pipeline.signals import DEADLINE

REPO = ROOT
STOP_WITHIN = 5.0
_STARTED: dict[int, float] = {}  # pid -> when the test started it


def tree(folder: Path) -> dict[str, str]:
    """Relative path → sha256 (or 'link -> target' / 'dir') of everything under ``folder``."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            found[rel] = "link -> " + os.readlink(path)
        elif path.is_dir():
            found[rel] = "dir"
        else:
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def start(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.Popen:
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    _STARTED[proc.pid] = started
    return proc


def wait_for(condition, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the command ended (rc {proc.returncode}) before the signal: {err.decode()[-800:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the command never reached the point to interrupt")
        time.sleep(0.05)


def interrupt(proc: subprocess.Popen, signum: int, to_group: bool) -> tuple[int, float, str]:
    """Send ``signum``; returns (exit status, seconds to exit, stderr). Also notes how long the
    command took from its start to this point (:func:`allowed_seconds`)."""
    sent = time.monotonic()
    _STARTED[proc.pid] = sent - _STARTED.get(proc.pid, sent)
    if to_group:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("still running 30 s after the signal")
    return proc.returncode, time.monotonic() - sent, err.decode()


def own_lines(stderr: str) -> list[str]:
    """stderr without the worker start-up warnings Beam relays in multi-processing mode (they
    come before the signal; checked to be only those)."""
    return [
        line
        for line in stderr.splitlines()
        if not line.startswith("WARNING apache_beam.runners.portability.local_job_service: Worker:")
    ]


def left_in_session(pid: int) -> list[str]:
    """Live processes of the command's session (zombies already dead are not counted)."""
    listing = subprocess.run(["ps", "-o", "stat=,pid=,args=", "-s", str(pid)], capture_output=True, text=True)
    return [line for line in listing.stdout.splitlines() if line.strip() and not line.strip().startswith("Z")]


def allowed_seconds(proc: subprocess.Popen, intrinsic: float = 0.0) -> float:
    """``STOP_WITHIN``; on a busy machine, as long as the command took to get from its start to
    the signal (plus a wait the stop itself must make), the same machine's pace measured in the
    same test: a loaded machine slows the stop as it slowed the start."""
    return max(STOP_WITHIN, intrinsic + _STARTED[proc.pid])


def assert_stopped(
    rc: int, seconds: float, stderr: str, signum: int, resume_words: str, allowed: float
) -> None:
    assert rc == 128 + signum, stderr[-2000:]
    assert seconds < allowed, f"took {seconds:.1f} s (allowed {allowed:.1f} s)"
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = own_lines(stderr)
    name = signal.Signals(signum).name
    assert len(lines) == 1 and lines[0].startswith(f"zitadel-beam: interrupted ({name}): "), stderr[-2000:]
    assert resume_words in lines[0]


# --- migrate -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big_export(tmp_path_factory) -> Path:
    """200,000 synthetic Auth0 users (benchmarks/gen_auth0.py): a run of several seconds."""
    folder = tmp_path_factory.mktemp("signals-input")
    subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "gen_auth0.py"),
            "--users",
            "200000",
            "--out",
            str(folder),
        ],
        check=True,
        capture_output=True,
    )
    return folder


@pytest.mark.parametrize(
    "mode, signum, to_group",
    [
        ("in-process", signal.SIGINT, False),
        ("in-process", signal.SIGINT, True),
        ("in-process", signal.SIGTERM, False),
        ("multi_processing", signal.SIGINT, True),
        ("multi_processing", signal.SIGTERM, False),
    ],
)
def test_migrate_stops_cleanly(big_export, tmp_path, mode, signum, to_group):
    out = tmp_path / "out"
    out.mkdir()
    inputs_before = tree(big_export)
    beam = (
        ["--direct_running_mode=multi_processing", "--direct_num_workers=2"] if mode != "in-process" else []
    )
    proc = start(
        [
            "migrate",
            "auth0",
            "--org=123",
            f"--users={big_export}/users.json",
            f"--passwords={big_export}/passwords.json",
            f"--output={out}/importBody.json",
            *beam,
        ],
        tmp_path,
    )

    def spilling() -> bool:  # the run is under way: its work folder holds spill files
        return any(p.is_dir() and any(p.iterdir()) for p in out.glob(".importBody.json.zitadel-beam-work-*"))

    wait_for(spilling, proc)
    rc, seconds, err = interrupt(proc, signum, to_group)
    assert_stopped(rc, seconds, err, signum, "no manifest was written", allowed_seconds(proc))
    assert tree(out) == {}, "left behind: work folder, lock, temporary files or a manifest"
    assert tree(big_export) == inputs_before
    deadline = time.monotonic() + 30  # the pool's workers end after their parent: wait for them
    while left_in_session(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left_in_session(proc.pid) == []


# --- push, verify, export, copy -------------------------------------------------------------------
@pytest.fixture
def server():
    server = ZitadelServer(tokens={PAT}).start()
    try:
        yield server
    finally:
        server.stop()


def _token(tmp_path: Path) -> Path:
    path = tmp_path / "pat.txt"
    path.write_text(PAT)
    return path


@pytest.mark.parametrize("signum, to_group", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_push_stops_and_resumes(server, tmp_path, signum, to_group):
    manifest, ids = write_manifest(tmp_path / "bodies", users=3000, bodies=6, metadata=False)
    server.faults.per_user_delay = 0.002  # 1 s per body of 500 users
    results = tmp_path / "bodies" / "importBody.results"
    args = [
        "push",
        f"--url={server.url}",
        f"--manifest={manifest}",
        f"--token-file={_token(tmp_path)}",
        "--quiet",
    ]
    bodies_before = {
        k: v for k, v in tree(tmp_path / "bodies").items() if not k.startswith("importBody.results")
    }
    proc = start(args, tmp_path)
    wait_for(lambda: len(list(results.glob("body-*.json"))) >= 2, proc)
    rc, seconds, err = interrupt(proc, signum, to_group)
    assert_stopped(rc, seconds, err, signum, "run the same command again to resume", allowed_seconds(proc))
    # The ledger is consistent: whole JSON files only, nothing half-written or temporary.
    names = sorted(p.name for p in results.iterdir())
    assert names and all(n.startswith("body-") and n.endswith(".json") for n in names), names
    done = [json.loads((results / n).read_text()) for n in names]
    assert 2 <= len(done) < 6
    assert {k: v for k, v in tree(tmp_path / "bodies").items() if not k.startswith("importBody.results")} == (
        bodies_before
    )
    assert not (tmp_path / "bodies" / "importBody.results.lock").exists()
    server.faults.per_user_delay = 0.0
    again = subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert set(ids) <= {uid for uid in server.state.users}
    assert len(list(results.glob("body-*.json"))) == 6


@pytest.mark.parametrize(
    "command, path, signum",
    [
        ("verify", "/admin/v1/events/_search", signal.SIGINT),
        ("export", "/admin/v1/export", signal.SIGTERM),
        ("copy", "/admin/v1/export", signal.SIGINT),
    ],
)
def test_server_commands_stop_cleanly(server, tmp_path, command, path, signum):
    """A command waiting on a slow answer stops at once; what it would have written is not there."""
    server.faults.slow_seconds = 20.0
    server.faults.inject("slow", 1, path=path)
    token = _token(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    if command == "verify":
        manifest, _ = write_manifest(work, users=10, bodies=1)
        args = ["verify", f"--url={server.url}", f"--manifest={manifest}", f"--token-file={token}"]
        resume = "nothing was written"
    elif command == "export":
        args = ["export", f"--url={server.url}", f"--token-file={token}", f"--output={work}/export.json"]
        resume = "no export was written"
    else:
        args = ["copy", f"--source-url={server.url}", f"--target-url={server.url}", f"--work-dir={work}/move"]
        resume = "run the same command again to resume"
    before = tree(work)
    env = {"ZITADEL_SOURCE_TOKEN": PAT, "ZITADEL_TARGET_TOKEN": PAT} if command == "copy" else None
    proc = start(args, tmp_path, env)
    wait_for(lambda: "slow" in server.faults.fired, proc)
    rc, seconds, err = interrupt(proc, signum, to_group=False)
    assert_stopped(rc, seconds, err, signum, resume, allowed_seconds(proc))
    after = tree(work)
    if command == "copy":
        assert after == {**before, "move": "dir"}  # the (empty) work folder; no lock, no export
    else:
        assert after == before


def test_a_main_thread_that_does_not_return_is_ended_at_the_deadline(tmp_path):
    """The watcher's fallback: the main thread stays inside a block that defers the interruption
    (pipeline/signals.py finishing()) for longer than the deadline; the registered clean-up still
    runs, the line is printed and the process ends, before 5 s."""
    script = tmp_path / "stuck.py"
    script.write_text(
        "import os, sys, time\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from pipeline import signals\n"
        "from transforms.files.storage import private_workdir, register_cleanup, remove_workdir\n"
        "signals.install()\n"
        "signals.set_resume_hint('nothing kept; run it again')\n"
        f"work = private_workdir({str(tmp_path / 'out' / 'importBody.json')!r})\n"
        "open(os.path.join(work, 'spill.pkl'), 'wb').write(b'hash')\n"
        "register_cleanup(lambda: remove_workdir(work))\n"
        "print('ready', flush=True)\n"
        "with signals.finishing():\n"
        "    time.sleep(60)\n"
    )
    (tmp_path / "out").mkdir()
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    _STARTED[proc.pid] = started
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    rc, seconds, err = interrupt(proc, signal.SIGINT, to_group=True)
    assert_stopped(rc, seconds, err, signal.SIGINT, "nothing kept", allowed_seconds(proc, DEADLINE))
    assert seconds > 3.0  # it did wait for the block, up to the deadline
    assert tree(tmp_path / "out") == {}
