"""transforms/files/storage.py: local-or-gs:// helpers; private, atomic local writes; the work folder."""

from __future__ import annotations

import os
import socket
import stat
import time
from pathlib import Path

import pytest
from busy_machine import assert_within_pace, timed

from pipeline.cli import main
from transforms.common.errors import ConfigError
from transforms.files.storage import (
    LinkRefused,
    check_gcs_reachable,
    check_local_outputs,
    exists,
    is_gcs,
    is_remote,
    join,
    open_private,
    private_workdir,
    read_bytes,
    refuse_link,
    register_cleanup,
    relative_path,
    remove_workdir,
    resolve,
    run_cleanups,
    size,
    split_gcs_url,
    unregister_cleanup,
    write_atomic,
    write_lines_or_remove,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_is_remote_is_any_scheme_and_is_gcs_only_cloud_storage():
    assert is_remote("gs://bucket/dead.ndjson") and is_remote("s3://b/k")
    assert not is_remote("out/dead.ndjson") and not is_remote("/abs/dead.ndjson")
    assert is_gcs("gs://bucket/x") and not is_gcs("s3://b/k") and not is_gcs("gs:/typo")


def test_open_private_writes_mode_0600_under_a_temporary_name_then_renames(tmp_path):
    target = tmp_path / "out" / "importBody.json"
    with open_private(str(target)) as handle:
        handle.write(b"{}")
        assert not target.exists()  # not there until complete
        (tmp,) = _leftovers(target.parent)
        assert tmp.startswith(".importBody.json.") and _mode(target.parent / tmp) == 0o600
    assert target.read_bytes() == b"{}"
    assert _mode(target) == 0o600
    assert _mode(target.parent) == 0o700  # a folder it creates is private too
    assert _leftovers(target.parent) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "manifest.json"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), open_private(str(target)) as handle:
        handle.write(b"half of the new")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"old"
    assert _leftovers(tmp_path) == []


def test_a_link_at_the_name_is_refused_and_its_target_untouched(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"someone else's")
    link = tmp_path / "importBody.json"
    link.symlink_to(secret)
    with pytest.raises(LinkRefused) as err:
        open_private(str(link))
    assert "is a symbolic link" in str(err.value) and str(link) in str(err.value)
    assert isinstance(err.value, ConfigError)
    assert secret.read_bytes() == b"someone else's" and link.is_symlink()


def test_write_atomic_replaces_a_link_never_writing_through_it(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"someone else's")
    ledger = tmp_path / "ledger.json"
    ledger.symlink_to(secret)
    write_atomic(str(ledger), b"{}")
    assert not ledger.is_symlink() and ledger.read_bytes() == b"{}" and _mode(ledger) == 0o600
    assert secret.read_bytes() == b"someone else's"


def test_refuse_link(tmp_path):
    refuse_link(str(tmp_path / "missing.json"))  # nothing there: fine
    (tmp_path / "plain.json").write_bytes(b"")
    refuse_link(str(tmp_path / "plain.json"))
    refuse_link("gs://bucket/any.json")
    with pytest.raises(LinkRefused, match="--output .* exists and is not a regular file"):
        refuse_link(str(tmp_path), "--output")


def test_private_workdir_and_remove_workdir_never_follow_a_link(tmp_path):
    output = tmp_path / "out" / "importBody.json"
    output.parent.mkdir()
    work = Path(private_workdir(str(output)))
    assert work.parent == output.parent and work.name.startswith(".importBody.json.zitadel-beam-work-")
    assert _mode(work) == 0o700
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keep.txt").write_bytes(b"keep")
    (work / "spill").mkdir()
    (work / "spill" / "part.pkl").write_bytes(b"x")
    (work / "link-to-elsewhere").symlink_to(outside)
    remove_workdir(str(work))
    assert not work.exists()
    assert (outside / "keep.txt").read_bytes() == b"keep"
    remove_workdir(str(work))  # gone already: nothing to do
    # A link put where the work folder was is removed as a link; its target stays.
    work.symlink_to(outside)
    remove_workdir(str(work))
    assert not work.is_symlink() and (outside / "keep.txt").exists()


def test_cleanups_run_newest_first_once_and_remove_pending_temporaries(tmp_path):
    ran: list[str] = []
    register_cleanup(lambda: ran.append("first"))
    token = register_cleanup(lambda: ran.append("dropped"))
    register_cleanup(lambda: 1 / 0)  # a failing clean-up does not stop the others
    register_cleanup(lambda: ran.append("last"))
    unregister_cleanup(token)
    handle = open_private(str(tmp_path / "body.json"))
    handle.write(b"partial")
    (tmp,) = _leftovers(tmp_path)
    run_cleanups()
    assert ran == ["last", "first"]
    assert _leftovers(tmp_path) == [] and not (tmp_path / "body.json").exists()
    run_cleanups()
    assert ran == ["last", "first"]
    handle.abort()


def test_check_local_outputs(tmp_path):
    check_local_outputs({"--output": str(tmp_path / "new" / "importBody.json"), "--other": "gs://b/x.json"})
    assert (tmp_path / "new").is_dir()  # created before the run
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(ConfigError, match="is a directory, not a file"):
        check_local_outputs({"--output": str(tmp_path)})
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        check_local_outputs({"--dead-letter": str(tmp_path / "file" / "dead.ndjson")})


def test_paths():
    assert is_gcs("gs://b/x") and not is_gcs("/tmp/gs://x") and not is_gcs("x.json")
    assert resolve("/out", "a.json") == "/out/a.json"
    assert resolve("/out", "/abs/a.json") == "/abs/a.json"
    assert resolve("gs://b/out", "a.json") == "gs://b/out/a.json"
    assert resolve("/out", "gs://b/a.json") == "gs://b/a.json"
    assert join("gs://b/out", "x") == "gs://b/out/x" and join("out", "x") == os.path.join("out", "x")
    assert relative_path("/out", "/out/dead.ndjson") == "dead.ndjson"
    assert relative_path("/out", "/elsewhere/dead.ndjson") == "/elsewhere/dead.ndjson"
    assert relative_path("gs://b/out", "gs://b/out/dead.ndjson") == "dead.ndjson"
    assert relative_path("gs://b/out", "gs://b/other/dead.ndjson") == "gs://b/other/dead.ndjson"


@pytest.mark.parametrize("url", ["gs://bucket/a/b.json", "gs://b/x"])
def test_split_gcs_url(url):
    bucket, path = split_gcs_url(url, "--gcs-document")
    assert f"gs://{bucket}/{path}" == url


@pytest.mark.parametrize("url", ["gs://bucket", "gs://bucket/", "gs:///x", "/local/x.json", "s3://b/x"])
def test_split_gcs_url_refuses(url):
    with pytest.raises(ConfigError, match="^--gcs-document .* must be gs://BUCKET/PATH$"):
        split_gcs_url(url, "--gcs-document")


def test_local_reads(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(b"12345")
    assert read_bytes(str(path)) == b"12345"
    assert exists(str(path)) and not exists(str(tmp_path / "nope")) and not exists(str(tmp_path))
    assert size(str(path)) == 5


def test_gcs_reads_and_writes(gcs_emulator):
    bucket = gcs_emulator.name
    url = f"gs://{bucket}/dir/body.json"
    assert not exists(url)
    with open_private(url) as handle:
        handle.write(b'{"a": 1}')
    assert exists(url) and size(url) == 8 and read_bytes(url) == b'{"a": 1}'
    assert gcs_emulator.blob("dir/body.json").download_as_bytes() == b'{"a": 1}'
    check_gcs_reachable([url, "/local"])


def test_unreachable_gcs_fails_fast_in_one_line(monkeypatch):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    check_gcs_reachable(["/only/local.json"])  # nothing on gs://: not checked
    with pytest.raises(ConfigError, match=f"^cannot reach Cloud Storage at 127.0.0.1:{port} "):
        check_gcs_reachable(["gs://b/x.json"], timeout=2)


def test_gcs_unreachable_fails_fast(monkeypatch, tmp_path, capsys, _gcs_server):
    # A closed port on loopback stands for "no emulator and no network": an early, clear error.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _, _, creds = _gcs_server
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(creds))
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    started = time.monotonic()
    rc = main(
        [
            "migrate",
            "auth0",
            "--org=1",
            "--users=gs://b/u.json",
            "--passwords=gs://b/p.json",
            f"--output={tmp_path / 'o.json'}",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Cloud Storage" in err, err
    elapsed = time.monotonic() - started

    def same_on_local_files() -> None:  # the baseline: a refusal with no storage to ask
        args = [f"--users={tmp_path}/u.json", f"--passwords={tmp_path}/p.json", f"--output={tmp_path}/o.json"]
        assert main(["migrate", "auth0", "--org=1", *args]) == 2

    assert_within_pace(
        elapsed, 30, lambda: timed(same_on_local_files), "the refusal"
    )  # Beam's retries: ~120 s


def test_write_lines_or_remove_writes_a_failures_file_and_removes_it_when_none_are_left(tmp_path):
    path = str(tmp_path / "dead.ndjson")
    assert write_lines_or_remove(path, ['{"a": 1}', '{"b": 2}']) == path
    assert (tmp_path / "dead.ndjson").read_text() == '{"a": 1}\n{"b": 2}\n'
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert write_lines_or_remove(path, []) is None
    assert not (tmp_path / "dead.ndjson").exists()
    assert write_lines_or_remove(path, []) is None
