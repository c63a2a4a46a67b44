"""Applying a sync's change files (transforms/sync/apply.py) with several users at once.

The scenario runs the real CLI against the loopback server (tests/standins/zitadel_server.py):
day 1 imports, day 2 writes change files, then ``push --concurrency=4`` applies them while the
first change call is held back, so the other workers send theirs in the meantime.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline.cli import main

ORG = "123456789"


def _export(folder: Path, family: str, users: int, hashed: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    profiles = [
        {
            "user_id": f"auth0|{n:024d}",
            "email": f"user{n}@example.com",
            "email_verified": True,
            "given_name": f"Given{n}",
            "family_name": f"{family}{n}",
            "name": f"Given{n} {family}{n}",
        }
        for n in range(1, users + 1)
    ]
    passwords = [
        {"_id": {"$oid": f"{n:024d}"}, "email": f"user{n}@example.com", "passwordHash": hashed}
        for n in range(1, users + 1)
    ]
    (folder / "users.json").write_text("".join(json.dumps(p) + "\n" for p in profiles))
    (folder / "passwords.json").write_text("".join(json.dumps(p) + "\n" for p in passwords))
    return folder / "users.json", folder / "passwords.json"


def test_with_concurrency_the_live_line_counts_each_call_once(tmp_path, capsys):
    users = 24
    hashed = hash_pool(1)[0]
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    output = tmp_path / "out" / "importBody.json"
    with ZitadelServer(tokens={PAT}) as server:
        for night, family in enumerate(("Family", "Renamed")):
            users_path, passwords_path = _export(tmp_path / f"export-{night}", family, users, hashed)
            args = [
                "migrate",
                "auth0",
                f"--org={ORG}",
                f"--users={users_path}",
                f"--passwords={passwords_path}",
                f"--output={output}",
                f"--state={tmp_path / 'state'}",
            ]
            if night == 0:
                args += [f"--push-url={server.url}", f"--token-file={token_file}"]
            assert main(args) == 0
        sent_before = len(server.v2_requests)
        # The first change call is answered late: the other workers go on meanwhile.
        server.faults.slow_seconds = 0.5
        server.faults.inject("slow", count=1, path="/v2/users/*")
        capsys.readouterr()
        rc = main(
            [
                "push",
                f"--url={server.url}",
                f"--manifest={tmp_path / 'out' / 'importBody.manifest.json'}",
                f"--token-file={token_file}",
                "--concurrency=4",
            ]
        )
        captured = capsys.readouterr()
        sent = len(server.v2_requests) - sent_before
    assert rc == 0
    assert sent == users, captured  # one UpdateHumanUser per renamed user
    live = [line for line in captured.err.splitlines() if line.startswith("changes: users")]
    assert live, captured.err
    final = re.search(r"changes: users (\d+)/(\d+)  requests (\d+)  failed (\d+)", live[-1])
    assert final is not None, live[-1]
    assert final.groups() == (str(users), str(users), str(users), "0")
    assert f"requests {users}," in captured.out
