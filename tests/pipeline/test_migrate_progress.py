"""pipeline/migrate_progress.py: migrate's live line on a real terminal (a pty) for the Auth0,
Firebase and table readers, silent with --quiet, with worker processes and when stderr is not a
terminal; the input totals on gs://."""

from __future__ import annotations

import gzip
import io
import json
import os
import pty
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from repo_files import ROOT

from pipeline.migrate_progress import MigrateProgress, in_process, input_bytes
from transforms.common import live_tally

B64 = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
LINE = re.compile(r"migrate: read ([\d.,]+)/([\d.,]+) (\w+) \((\d+)%\)  users ([\d,]+)  (.*)")


def _export(folder: Path, files: int, per_file: int) -> list[str]:
    """An Auth0 export: ``files`` profile files and one password file; the migrate arguments."""
    folder.mkdir()
    for k in range(files):
        lines = []
        for i in range(k * per_file, (k + 1) * per_file):
            profile = {
                "user_id": f"auth0|{i:08d}",
                "email": f"user{i}@example.com",
                "email_verified": True,
                "given_name": "Given",
                "family_name": f"Family {i}",
                "created_at": "2021-03-04T05:06:07.000Z",
            }
            lines.append(json.dumps(profile))
        (folder / f"users-{k:02d}.json").write_text("\n".join(lines) + "\n")
    passwords = (
        json.dumps(
            {
                "_id": {"$oid": f"{i:024x}"},
                "email": f"user{i}@example.com",
                "passwordHash": "$2b$10$" + B64[i % 64] + B64[(i // 64) % 64] + B64[:51],
            }
        )
        for i in range(0, files * per_file, 2)
    )
    (folder / "passwords.json").write_text("\n".join(passwords) + "\n")
    return [
        "migrate",
        "auth0",
        "--org=123456789",
        f"--users={folder}/users-*.json",
        f"--passwords={folder}/passwords.json",
        f"--output={folder}/out/importBody.json",
    ]


def _firebase_export(folder: Path, users: int) -> list[str]:
    """A Firebase Auth JSON export (``firebase auth:export``) of ``users`` users; the arguments."""
    folder.mkdir()
    records = [
        {
            "localId": f"fb-{i:08d}",
            "email": f"user{i}@example.com",
            "emailVerified": True,
            "displayName": f"U {i}",
        }
        for i in range(users)
    ]
    (folder / "users.json").write_text(json.dumps({"users": records}, indent=1))
    return [
        "migrate",
        "firebase",
        "--org=123456789",
        f"--users={folder}/users.json",
        f"--output={folder}/out/importBody.json",
    ]


def _table_export(folder: Path, users: int) -> list[str]:
    """A CSV table of ``users`` users with bcrypt hashes; the ``migrate table`` arguments."""
    folder.mkdir()
    rows = ["id,email,first_name,password_hash"]
    rows += [
        f"u{i:08d},user{i}@example.com,Given {i},$2b$10$" + B64[i % 64] + B64[(i // 64) % 64] + B64[:51]
        for i in range(users)
    ]
    (folder / "users.csv").write_text("\n".join(rows) + "\n")
    return [
        "migrate",
        "table",
        "--org=123456789",
        f"--input={folder}/users.csv",
        "--map=id=id",
        "--map=email=email",
        "--map=first_name=first_name",
        "--map=password_hash=password_hash",
        f"--output={folder}/out/importBody.json",
    ]


# Each source's input: (folder, size) → the migrate arguments; size is a number of users (Auth0's in
# profile files of 1,000 users, at least two).
SOURCES = {
    "auth0": lambda folder, n: _export(folder, files=max(n // 1000, 2), per_file=n // max(n // 1000, 2)),
    "firebase": _firebase_export,
    "table": _table_export,
}


# The CLI as ``python -m pipeline`` runs it, with the terminal's line rewritten every 0.05 s
# instead of 0.5 s (a run of a tenth of the users spans as many rewrites); main() without arguments
# is the entry point, signals handled as the console script handles them.
FAST_LINE = (
    "import sys; from transforms.common import progress; progress.TTY_INTERVAL = 0.05; "
    "from pipeline.cli import main; sys.exit(main())"
)


def _run_on_terminal(args: list[str], interrupt_on: bytes | None = None) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal: (exit status, what the terminal got, stdout).
    With ``interrupt_on``, Ctrl-C's signal is sent once the terminal has shown that text."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", FAST_LINE, *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal's last open end
            break
        if not data:
            break
        chunks.append(data)
        if interrupt_on is not None and interrupt_on in b"".join(chunks):
            proc.send_signal(signal.SIGINT)
            interrupt_on = None
    os.close(master)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    return proc.wait(), b"".join(chunks).decode(errors="replace"), out


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_terminal_sees_the_line_move_to_100_percent(tmp_path, source):
    # One reader reads Firebase's single file: more users, so that reading spans several polls.
    users = 15_000 if source == "firebase" else 12 * 500
    rc, terminal, out = _run_on_terminal(SOURCES[source](tmp_path / "in", users))
    assert rc == 0, terminal + out
    updates = [LINE.match(part.strip()) for part in re.split(r"[\r\n]", terminal)]
    seen = [m for m in updates if m]
    assert len(seen) >= 4, terminal
    read = [float(m.group(1).replace(",", "")) for m in seen]
    parsed = [int(m.group(5).replace(",", "")) for m in seen]
    assert read == sorted(read) and parsed == sorted(parsed), terminal
    assert len(set(read)) >= 3 and len(set(parsed)) >= 3, terminal  # it moved, more than once
    total = sum(p.stat().st_size for p in (tmp_path / "in").iterdir() if p.is_file())
    last = seen[-1]
    assert last.group(4) == "100" and last.group(1) == last.group(2), terminal
    assert int(last.group(5).replace(",", "")) == users
    assert last.group(6).startswith("written ") and " done in " in last.group(6), terminal
    scale = {"GB": 1e9, "MB": 1e6, "KB": 1e3}[last.group(3)]  # the unit that suits the total
    assert f"{total / scale:,.1f}" == last.group(2) and scale <= total < 1000 * scale
    assert last.group(6).startswith(f"written {users:,}  "), terminal  # every user was written


def test_ctrl_c_ends_the_line_and_the_interruption_gets_a_row_of_its_own(tmp_path):
    rc, terminal, out = _run_on_terminal(
        _export(tmp_path / "in", files=12, per_file=1000), interrupt_on=b"migrate: read"
    )
    assert rc == 130, terminal + out
    rows = [row for row in terminal.split("\r\n") if row.strip()]
    assert rows[-1].startswith("zitadel-beam: interrupted (SIGINT): "), terminal
    assert LINE.match(rows[-2].split("\r")[-1]), terminal  # the line as it was, its row ended
    assert "migrate: read" not in rows[-1]


@pytest.mark.parametrize(
    ("source", "extra"),
    [
        ("auth0", ["--quiet"]),
        ("firebase", ["--quiet"]),
        ("table", ["--quiet"]),
        ("auth0", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]),
    ],
    ids=["quiet", "quiet-firebase", "quiet-table", "worker-processes"],
)
def test_no_line_with_quiet_or_worker_processes(tmp_path, source, extra):
    rc, terminal, out = _run_on_terminal(SOURCES[source](tmp_path / "in", 1000) + extra)
    assert rc == 0, terminal + out
    # A terminal turns each "\n" into "\r\n"; the line would be a "\r" of its own.
    assert "migrate: read" not in terminal and not re.search("\r(?!\n)", terminal), terminal


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_stderr_not_a_terminal_gets_nothing_new(tmp_path, source):
    """The same run with stderr on a pipe and with --quiet prints exactly the same bytes."""
    args = SOURCES[source](tmp_path / "in", 1000)
    runs = []
    for extra in ([], ["--quiet"]):
        proc = subprocess.run(
            [sys.executable, "-m", "pipeline", *args, f"--output={tmp_path}/out{len(runs)}/b.json", *extra],
            cwd=ROOT,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert b"migrate: read" not in proc.stderr and b"\r" not in proc.stderr
        runs.append(proc.stderr.replace(f"out{len(runs)}".encode(), b"OUT"))
    assert runs[0] == runs[1]


def test_the_line_names_the_furthest_stage_and_its_rate():
    live_tally.reset()
    live_tally.reached("a.json", 0, 250_000)
    live_tally.add(live_tally.PARSED, 4096)
    progress = MigrateProgress(1_000_000, io.StringIO(), enabled=False)
    reading = progress.line()
    assert reading.startswith("migrate: read 0.2/1.0 MB (25%)  users 4,096  ") and "users/s  ETA " in reading
    live_tally.reached("a.json", 0, 1_000_000)
    live_tally.add(live_tally.CONVERTED, 2000)
    live_tally.add(live_tally.WRITTEN, 1000)
    later = progress.line()
    assert later.startswith("migrate: read 1.0/1.0 MB (100%)  users 4,096  writing 1,000  ")
    with progress:
        pass
    final = progress.line()
    assert re.fullmatch(
        r"migrate: read 1\.0/1\.0 MB \(100%\)  users 4,096  written 1,000  done in 0:0\d *", final
    )
    assert len(final) >= len(later)  # padded over the longer line before it


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], True),
        (["--runner=FnApiRunner"], True),
        (["--direct_running_mode=multi_threading"], True),
        (["--direct_running_mode=multi_processing"], False),
        (["--runner=DataflowRunner"], False),
        (["--runner=PortableRunner"], False),
    ],
)
def test_only_an_in_process_run_gets_a_line(args, expected):
    assert in_process(args) is expected


def test_input_totals_expand_globs_locally_and_on_gs(tmp_path, gcs_emulator):
    (tmp_path / "a.json").write_bytes(b"x" * 1000)
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(b"{}\n" * 5000))
    local = input_bytes([str(tmp_path / "*.json*"), str(tmp_path / "a.json")])
    assert local == 1000 + (tmp_path / "b.json.gz").stat().st_size  # a file matched twice counts once
    packed = gzip.compress(b'{"user_id":"x"}\n' * 3000)
    gcs_emulator.blob("in/users-1.json.gz").upload_from_string(packed)
    gcs_emulator.blob("in/users-2.json").upload_from_string(b"{}\n" * 700)
    gcs_emulator.blob("other/p.json").upload_from_string(b"[]")
    bucket = f"gs://{gcs_emulator.name}"
    assert input_bytes([f"{bucket}/in/users-*.json*", f"{bucket}/other/p.json"]) == len(packed) + 2100 + 2
    assert input_bytes([f"{bucket}/in/nothing-*.json"]) == 0
