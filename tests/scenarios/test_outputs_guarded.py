"""Outputs never harm inputs or anyone else's files (transforms/files/guards.py, transforms/files/storage.py).

One table: each case lays out inputs, an output folder and "someone else's" files (the targets
of planted links), runs a command, and compares a checksum of every file in and around the
output folder (content, mode, link target) before and after. A refused case must leave all of
it exactly as it was, exit 2 with one line naming what it refused; an accepted case must leave
everything but the run's own outputs as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from repo_files import ROOT
from zitadel_fixtures import PAT
from zitadel_server import ZitadelServer

from pipeline.cli import main

REPO = ROOT
B64 = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _hash(i: int) -> str:
    return "$2b$10$" + B64[i % 64] + B64[(i // 64) % 64] + B64[:51]


def tree(folder: Path) -> dict[str, tuple]:
    """Relative path → (kind, sha256 or link target, mode) of everything under ``folder``."""
    found: dict[str, tuple] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            found[rel] = ("link", os.readlink(path), None)
        elif stat.S_ISDIR(info.st_mode):
            found[rel] = ("dir", None, stat.S_IMODE(info.st_mode))
        else:
            found[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), stat.S_IMODE(info.st_mode))
    return found


def lay_out(root: Path, users: int = 6) -> None:
    """in/users.json, in/passwords.json, out/, elsewhere/{secret.txt, dir/keep.txt} (mode 0644)."""
    (root / "in").mkdir()
    (root / "out").mkdir()
    (root / "elsewhere" / "dir").mkdir(parents=True)
    profiles = [
        {"user_id": f"auth0|{i}", "email": f"user{i}@example.com", "name": f"User {i}"} for i in range(users)
    ]
    passwords = [
        {"_id": {"$oid": str(i)}, "email": f"user{i}@example.com", "passwordHash": _hash(i)}
        for i in range(users)
    ]
    (root / "in" / "users.json").write_text("".join(json.dumps(p) + "\n" for p in profiles))
    (root / "in" / "passwords.json").write_text(json.dumps(passwords))
    (root / "elsewhere" / "secret.txt").write_text("someone else's file\n")
    (root / "elsewhere" / "dir" / "keep.txt").write_text("keep me\n")
    for path in (root / "elsewhere").rglob("*.txt"):
        os.chmod(path, 0o644)


def auth0(
    root: Path, *extra: str, users: str = "in/users.json", output: str = "out/importBody.json"
) -> list[str]:
    return [
        "migrate",
        "auth0",
        "--org=123",
        f"--users={root / users}" if "://" not in users else f"--users={users}",
        f"--passwords={root / 'in/passwords.json'}",
        f"--output={root / output}",
        *extra,
    ]


def link(root: Path, name: str, target: str = "elsewhere/secret.txt") -> None:
    (root / name).symlink_to(root / target)


def earlier_run(root: Path, *extra: str) -> None:
    assert main(auth0(root, *extra)) == 0


# Each case: (id, prepare(root), argv(root), words the one line must hold)
Case = tuple[str, Callable[[Path], None], Callable[[Path], list[str]], list[str]]

REFUSED: list[Case] = [
    ("output-is-users", lambda r: None, lambda r: auth0(r, output="in/users.json"), ["--output", "--users"]),
    (
        "output-is-table-input",
        lambda r: None,
        lambda r: [
            "migrate",
            "table",
            "--org=123",
            f"--input={r / 'in/users.json'}",
            "--map=id=user_id",
            "--map=email=email",
            f"--output={r / 'in/users.json'}",
        ],
        ["--output", "--input"],
    ),
    (
        "output-is-table-mapping",
        lambda r: (r / "in/mapping.json").write_text('{"id": "user_id", "email": "email"}'),
        lambda r: [
            "migrate",
            "table",
            "--org=123",
            f"--input={r / 'in/users.json'}",
            f"--mapping={r / 'in/mapping.json'}",
            f"--output={r / 'in/mapping.json'}",
        ],
        ["--output", "--mapping"],
    ),
    (
        "output-is-passwords",
        lambda r: None,
        lambda r: auth0(r, output="in/passwords.json"),
        ["--output", "--passwords"],
    ),
    (
        "dead-letter-is-an-input",
        lambda r: None,
        lambda r: auth0(r, f"--dead-letter={r / 'in/passwords.json'}"),
        ["--dead-letter", "--passwords"],
    ),
    (
        "output-matched-by-an-input-glob",
        lambda r: None,
        lambda r: auth0(r, users="in/*.json", output="in/importBody.json"),
        ["--output", "would be read as --users"],
    ),
    (
        "numbered-bodies-matched-by-an-input-glob",
        lambda r: None,
        lambda r: auth0(r, users="in/*-of-*.json", output="in/importBody.json"),
        ["numbered bodies", "--users"],
    ),
    (
        "output-is-a-hard-link-to-an-input",
        lambda r: os.link(r / "in/users.json", r / "out/importBody.json"),
        lambda r: auth0(r),
        ["--output", "--users"],
    ),
    (
        "output-through-a-folder-link-is-an-input",
        lambda r: (r / "alias").symlink_to(r / "in"),
        lambda r: auth0(r, output="alias/passwords.json"),
        ["--output", "--passwords"],
    ),
    (
        "manifest-is-an-input",
        lambda r: shutil.copy(r / "in/passwords.json", r / "out/importBody.manifest.json"),
        lambda r: [*auth0(r)[:-2], f"--passwords={r / 'out/importBody.manifest.json'}", auth0(r)[-1]],
        ["its manifest", "--passwords"],
    ),
    (
        "passwordless-list-is-an-input",
        lambda r: (r / "out/importBody.passwordless.ndjson").write_text(""),
        lambda r: auth0(r, f"--mfa={r / 'out/importBody.passwordless.ndjson'}"),
        ["its passwordless list", "--mfa"],
    ),
    (
        "output-inside-the-realm-folder",
        lambda r: (r / "in/acme-realm.json").write_text('{"realm": "acme", "users": []}'),
        lambda r: [
            "migrate",
            "keycloak",
            "--org=1",
            f"--realm={r / 'in'}",
            f"--output={r / 'in/sub/importBody.json'}",
        ],
        ["inside the folder --realm"],
    ),
    (
        "zitadel-output-is-the-export",
        lambda r: (r / "in/export.json").write_text('{"orgs": []}'),
        lambda r: [
            "migrate",
            "zitadel",
            f"--export={r / 'in/export.json'}",
            f"--output={r / 'in/export.json'}",
        ],
        ["--output", "--export"],
    ),
    (
        "push-results-hold-a-body",
        lambda r: (r / "in/body-00000.json").write_text("{}"),
        lambda r: [
            "push",
            "--url=http://127.0.0.1:9",
            f"--body={r / 'in/body-00000.json'}",
            f"--results={r / 'in'}",
        ],
        ["--results", "--body"],
    ),
    (
        "export-output-is-the-token-file",
        lambda r: (r / "in/pat.txt").write_text(PAT),
        lambda r: [
            "export",
            "--url=http://127.0.0.1:9",
            f"--token-file={r / 'in/pat.txt'}",
            f"--output={r / 'in/pat.txt'}",
        ],
        ["--output", "--token-file"],
    ),
    (
        "copy-work-dir-holds-the-key-file",
        lambda r: (r / "in/export.json").write_text("{}"),
        lambda r: [
            "copy",
            "--source-url=http://127.0.0.1:9",
            "--target-url=http://127.0.0.1:9",
            f"--source-key-file={r / 'in/export.json'}",
            f"--work-dir={r / 'in'}",
        ],
        ["--work-dir", "--source-key-file"],
    ),
    # Links at output names: refused by name, never written through, the target never chmod'ed.
    (
        "migrate-zitadel-link-at-manifest",
        lambda r: (
            (r / "in/export.json").write_text('{"orgs": []}'),
            link(r, "out/importBody.manifest.json"),
        ),
        lambda r: [
            "migrate",
            "zitadel",
            f"--export={r / 'in/export.json'}",
            f"--output={r / 'out/importBody.json'}",
        ],
        ["symbolic link", "manifest"],
    ),
    (
        "link-at-manifest",
        lambda r: link(r, "out/importBody.manifest.json"),
        auth0,
        ["symbolic link", "manifest"],
    ),
    (
        "link-at-dead-letter",
        lambda r: link(r, "out/importBody.dead-letter.ndjson"),
        auth0,
        ["symbolic link", "dead-letter.ndjson"],
    ),
    (
        "link-at-passwordless-list",
        lambda r: link(r, "out/importBody.passwordless.ndjson"),
        auth0,
        ["symbolic link", "passwordless.ndjson"],
    ),
    (
        "link-at-single-body",
        lambda r: link(r, "out/importBody.json"),
        auth0,
        ["symbolic link", "importBody.json"],
    ),
    (
        "link-at-numbered-body",
        lambda r: link(r, "out/importBody-00001-of-00003.json"),
        lambda r: auth0(r, "--batch-size=2"),
        ["symbolic link", "importBody-00001-of-00003.json"],
    ),
    ("link-at-lock", lambda r: link(r, "out/importBody.lock"), auth0, ["symbolic link", "importBody.lock"]),
    (
        "dangling-link-at-manifest",
        lambda r: (r / "out/importBody.manifest.json").symlink_to(r / "elsewhere/not-yet.json"),
        auth0,
        ["symbolic link"],
    ),
    # Files at output names that no earlier run wrote: refused, never removed.
    (
        "foreign-file-at-body-name",
        lambda r: (r / "out/importBody.json").write_text("the customer's notes"),
        auth0,
        ["no earlier manifest of this output names it"],
    ),
    (
        "foreign-file-at-a-stale-numbered-name",
        lambda r: (r / "out/importBody-00007-of-00009.json").write_text("{}"),
        auth0,
        ["importBody-00007-of-00009.json", "never replaced or deleted"],
    ),
    (
        "foreign-file-at-manifest-name",
        lambda r: (r / "out/importBody.manifest.json").write_text('{"notes": true}'),
        auth0,
        ["is not a manifest this tool wrote"],
    ),
    (
        "foreign-file-at-dead-letter-name",
        lambda r: (r / "out/importBody.dead-letter.ndjson").write_text("mine\n"),
        auth0,
        ["--dead-letter", "no earlier manifest"],
    ),
    (
        "earlier-body-changed-since",
        lambda r: (
            earlier_run(r, "--batch-size=2"),
            (r / "out/importBody-00002-of-00003.json").write_text("{}"),
        ),
        auth0,
        ["importBody-00002-of-00003.json", "changed since"],
    ),
    (
        "batch-size-too-large",
        lambda r: None,
        lambda r: auth0(r, "--batch-size=1000000000000000000000"),
        ["--batch-size", "1...5000"],
    ),
    ("batch-size-zero", lambda r: None, lambda r: auth0(r, "--batch-size=0"), ["--batch-size", "1...5000"]),
    ("batch-size-not-a-number", lambda r: None, lambda r: auth0(r, "--batch-size=10**21"), ["--batch-size"]),
]


@pytest.mark.parametrize("name, prepare, argv, words", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_and_nothing_touched(tmp_path, capsys, name, prepare, argv, words):
    lay_out(tmp_path)
    prepare(tmp_path)
    before = tree(tmp_path)
    rc = main(argv(tmp_path))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("zitadel-beam: error: ") and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    assert tree(tmp_path) == before


def test_link_at_the_old_work_folder_name_is_left_alone(tmp_path, capsys):
    """The work folder is a fresh mkdtemp name: a link at the old fixed name is never entered."""
    lay_out(tmp_path)
    (tmp_path / "out/.importBody.zitadel-beam-tmp").symlink_to(tmp_path / "elsewhere/dir")
    before = tree(tmp_path)
    assert main(auth0(tmp_path)) == 0, capsys.readouterr().err
    after = tree(tmp_path)
    new = {k for k in after if k not in before}
    assert new == {
        "out/importBody.json",
        "out/importBody.manifest.json",
        "out/importBody.dead-letter.ndjson",
    }
    assert {k: v for k, v in after.items() if k in before} == before
    assert all(after[k][2] == 0o600 for k in new)


def test_a_rerun_replaces_only_its_own_earlier_outputs(tmp_path, capsys):
    """The earlier run's bodies (named in its manifest, sha256 unchanged) are replaced or deleted;
    everything else in and around the folder stays as it was."""
    lay_out(tmp_path)
    (tmp_path / "out/notes.txt").write_text("the operator's notes")
    earlier_run(tmp_path, "--batch-size=2")
    first = tree(tmp_path)
    assert {k for k in first if k.startswith("out/importBody-")} == {
        f"out/importBody-0000{i}-of-00003.json" for i in (1, 2, 3)
    }
    assert main(auth0(tmp_path)) == 0, capsys.readouterr().err
    second = tree(tmp_path)
    ours = {"out/importBody.json", "out/importBody.manifest.json", "out/importBody.dead-letter.ndjson"}
    assert {k for k in second if k.startswith("out/importBody")} == ours
    unchanged = {k: v for k, v in first.items() if not k.startswith("out/importBody")}
    assert {k: v for k, v in second.items() if k not in ours} == unchanged


def test_export_with_passwords_to_a_link_is_refused(tmp_path, capsys):
    lay_out(tmp_path)
    link(tmp_path, "out/export.json")
    token = tmp_path / "pat.txt"
    token.write_text(PAT)
    before = tree(tmp_path)
    server = ZitadelServer(tokens={PAT}).start()
    try:
        rc = main(
            [
                "export",
                f"--url={server.url}",
                f"--token-file={token}",
                "--with-passwords",
                f"--output={tmp_path / 'out/export.json'}",
            ]
        )
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "symbolic link" in err and "export.json" in err, err
    assert tree(tmp_path) == before


# --- a full disk: one line, exit 2, no manifest, nothing else touched ----------------------------
def _run_limited(root: Path, limit: int, *extra: str) -> subprocess.CompletedProcess:
    def limit_file_size() -> None:  # the kernel refuses writes past it (EFBIG), as a full disk would
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "pipeline", *auth0(root, *extra)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit_file_size,
    )


@pytest.mark.parametrize("beam", [[], ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]])
def test_file_size_limit_while_writing_is_one_line(tmp_path, beam):
    lay_out(tmp_path, users=3000)
    before = tree(tmp_path)
    result = _run_limited(tmp_path, 64 * 1024, *beam)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr[-3000:]
    assert "writing failed" in result.stderr and "File too large" in result.stderr
    assert tree(tmp_path) == before  # no manifest, no body, no work folder, no lock


def _can_mount_tmpfs() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d"],
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="no user namespace to mount a small tmpfs in")
def test_disk_full_while_writing_is_one_line(tmp_path):
    """A real ENOSPC: the output folder is a 256 KiB tmpfs in a private mount namespace."""
    lay_out(tmp_path, users=3000)
    shutil.rmtree(tmp_path / "out")
    (tmp_path / "out").mkdir()
    script = (
        f"mount -t tmpfs -o size=256k tmpfs {tmp_path / 'out'} && "
        f"{sys.executable} -m pipeline {' '.join(auth0(tmp_path))}; rc=$?; "
        f"ls -A {tmp_path / 'out'} > {tmp_path / 'left.txt'}; exit $rc"
    )
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr[-3000:]
    assert "No space left on device" in result.stderr
    assert (tmp_path / "left.txt").read_text() == ""  # inside the full folder: nothing left


def test_a_link_in_the_push_ledger_is_replaced_never_written_through(tmp_path, capsys):
    """The ledger is rewritten as push goes: a link at a ledger name becomes the ledger file; the
    link's target is neither written nor chmod'ed."""
    from zitadel_fixtures import write_manifest

    lay_out(tmp_path)
    manifest, ids = write_manifest(tmp_path / "out", users=4, bodies=2, metadata=False)
    results = tmp_path / "out" / "importBody.results"
    results.mkdir()
    link(tmp_path, "out/importBody.results/body-00000.json")
    token = tmp_path / "pat.txt"
    token.write_text(PAT)
    elsewhere = tree(tmp_path / "elsewhere")
    server = ZitadelServer(tokens={PAT}).start()
    try:
        rc = main(
            ["push", f"--url={server.url}", f"--manifest={manifest}", f"--token-file={token}", "--quiet"]
        )
        pushed = set(server.state.users)
    finally:
        server.stop()
    assert rc == 0, capsys.readouterr().err
    assert set(ids) <= pushed
    ledger = results / "body-00000.json"
    assert not ledger.is_symlink() and json.loads(ledger.read_text())["sha256"]
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o600
    assert tree(tmp_path / "elsewhere") == elsewhere
