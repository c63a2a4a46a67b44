"""One push entry (pipeline/push_entry.py): ``push``, ``migrate --push-url`` and ``copy`` share
its flags and defaults, its lock on the results, its single probe and its report.

Real CLI and real sockets against the test server; ``migrate`` runs as a subprocess where a second
process must meet its lock.
"""

from __future__ import annotations

import argparse

import pytest
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline import copy_instance
from pipeline import push as push_command
from pipeline.cli import main
from pipeline.migrate_options import add_common_arguments, common_args
from pipeline.push_entry import PushSettings, push_settings
from tests.pipeline.test_signals import interrupt, start, wait_for
from tests.scenarios.test_sync_nights import _password, _profile, _write_export

PROBE = "/admin/v1/events/_search"


def _parsed(add, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add(parser)
    return parser.parse_args(argv)


def test_push_migrate_and_copy_parse_the_same_pace_flags_to_the_same_defaults(tmp_path):
    token = tmp_path / "t"
    token.write_text(PAT)
    pushed = push_settings(_parsed(push_command.add_arguments, ["--url=http://x", "--manifest=m.json"]))
    migrated = common_args(
        _parsed(
            add_common_arguments,
            ["--org=1", "--output=o.json", "--push-url=http://x", f"--token-file={token}"],
        )
    ).push
    copied = push_settings(
        _parsed(copy_instance.add_arguments, ["--source-url=http://a", "--target-url=http://b"])
    )
    assert pushed == PushSettings()  # adaptive pace, 32 at most, 6 attempts, no rate cap
    assert migrated is not None
    assert (migrated.concurrency, migrated.max_concurrency, migrated.max_attempts, migrated.max_rate) == (
        None,
        32,
        6,
        None,
    )
    assert (copied.concurrency, copied.max_concurrency, copied.max_attempts) == (None, 32, 6)
    fixed = _parsed(
        add_common_arguments,
        ["--org=1", "--output=o", "--push-url=http://x", f"--token-file={token}", "--push-concurrency=4"],
    )
    settings = common_args(fixed).push
    assert settings is not None and settings.concurrency == 4


def test_flags_are_parsed_without_calling_the_server_and_migrate_probes_once(tmp_path, capsys):
    token = tmp_path / "token"
    token.write_text(PAT)
    hashes = hash_pool(2)
    users, passwords = _write_export(tmp_path / "export", [_profile(1), _profile(2)], [
        _password(1, hashes[0]), _password(2, hashes[1])
    ])  # fmt: skip
    with ZitadelServer(tokens={PAT}) as server:
        args = [
            "--org=123",
            f"--output={tmp_path / 'o.json'}",
            f"--push-url={server.url}",
            f"--token-file={token}",
        ]
        common_args(_parsed(add_common_arguments, args))
        assert server.requests == []  # parsing flags calls nothing
        rc = main(
            ["migrate", "auth0", "--org=123", f"--users={users}", f"--passwords={passwords}"]
            + [f"--output={tmp_path / 'out' / 'importBody.json'}", f"--push-url={server.url}"]
            + [f"--token-file={token}", "--quiet"]
        )
        assert rc == 0, capsys.readouterr()
        probes = [path for path, _ in server.requests if path == PROBE]
        assert len(probes) == 1, server.requests  # one probe for the whole run, push included
        assert "concurrency" in capsys.readouterr().out  # push's own table


@pytest.mark.parametrize("first", ["push", "migrate"])
def test_a_second_push_of_a_manifest_being_pushed_is_refused_at_once_naming_the_running_one(
    tmp_path, first, capsys
):
    token = tmp_path / "token"
    token.write_text(PAT)
    hashes = hash_pool(2)
    users, passwords = _write_export(tmp_path / "export", [_profile(n) for n in range(1, 5)], [
        _password(n, hashes[n % 2]) for n in range(1, 5)
    ])  # fmt: skip
    out = tmp_path / "out"
    manifest = out / "importBody.manifest.json"
    migrate = ["migrate", "auth0", "--org=123", f"--users={users}", f"--passwords={passwords}"]
    migrate += [f"--output={out / 'importBody.json'}", "--quiet"]
    with ZitadelServer(tokens={PAT}) as server:
        server.faults.hang_seconds = 60.0
        push = ["push", f"--url={server.url}", f"--manifest={manifest}", f"--token-file={token}", "--quiet"]
        if first == "push":
            assert main(migrate) == 0
            proc = start(push, tmp_path)
        else:
            proc = start([*migrate, f"--push-url={server.url}", f"--token-file={token}"], tmp_path)
        server.faults.inject("hang", count=1, path="/admin/v1/import")
        wait_for(lambda: "hang" in server.faults.fired, proc)  # the first push is sending
        capsys.readouterr()
        assert main(push) == 2
        err = capsys.readouterr().err.strip()
        running = "push of" if first == "push" else "migrate --push-url of"
        assert f"is held by another run ({running} {manifest}" in err, err
        assert len(err.splitlines()) == 1
        imports = [path for path, _ in server.requests if path == "/admin/v1/import"]
        assert imports == []  # the hung call has no answer yet; the second push sent nothing
        rc, _, stopped = interrupt(proc, 2, to_group=True)
        assert rc == 130, stopped[-2000:]
        server.faults.clear()
        if first == "migrate":
            assert main(migrate) == 0  # stopped after its bodies were written: migrate again
        capsys.readouterr()
        assert main(push) == 0  # the first run is gone: its lock, if left, is taken over
