"""Push, credentials and HTTP hardening, over real sockets to tests/standins/zitadel_server.py.

One table per concern: secrets (a marker token and a marker key through every command that
authenticates; token files that are not a token), the manifest's counts (push refuses before
sending anything), users of another org, deadlines (a dripping server, a server gone mid-run) and
answers of the wrong shape. Every case ends in one line on stderr, the right exit code, no
traceback, and no secret in any output: stdout, stderr, the log, and every file the run wrote.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path

import orjson
import pytest
from repo_files import ROOT
from zitadel_fixtures import (  # noqa: F401 - zitadel_fixture is the `zitadel` fixture
    PAT,
    fast_client,
    hash_pool,
    make_export,
    make_user,
    rsa_key_pair,
    write_manifest,
    zitadel_fixture,
)
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.output.manifest import load_manifest
from transforms.push import engine as push_engine
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient
from transforms.zitadel_api.credentials import Credentials

REPO = ROOT
MARK = "MARKER7f3c"
MARK_TOKEN = f"tok-{MARK}-9a8b7c6d5e4f"
TOKEN = Credentials("token", token=PAT)


_KEYS: list[tuple[str, bytes]] = []


def _key_pair() -> tuple[str, bytes]:
    if not _KEYS:
        _KEYS.append(rsa_key_pair())
    return _KEYS[0]


def _key_json() -> str:
    private, _ = _key_pair()
    return json.dumps({"type": "serviceaccount", "keyId": "k1", "key": private, "userId": "sa-1"})


def _secrets(extra: tuple[str, ...] = ()) -> list[str]:
    """Credentials that must never be printed or written: the marker, the private key's lines, the
    PAT, issued tokens (``extra``)."""
    private, _ = _key_pair()
    lines = [line for line in private.splitlines() if "-----" not in line]
    return [MARK, PAT, lines[0], lines[len(lines) // 2], lines[-1], *extra]


def _files_text(folder: Path) -> str:
    """Every file under ``folder`` (bodies, manifests, ledger, dead letters, results, exports)."""
    texts = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


def _leaks(printed: str, written: str = "", extra: tuple[str, ...] = ()) -> list[str]:
    """Secrets in what was printed (credentials and password hashes) or written (credentials:
    bodies and exports hold hashes by design, mode 0600)."""
    found = [s for s in [*_secrets(extra), *hash_pool()] if s in printed]
    return found + [s for s in _secrets(extra) if s in written]


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{err}"
    assert "Traceback" not in err
    return lines[0]


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


# --- secrets ----------------------------------------------------------------------------------
@pytest.fixture(name="secret_dir")
def secret_dir_fixture(tmp_path_factory) -> Path:
    """Credential files live here, outside the work folder whose files are searched for leaks."""
    return tmp_path_factory.mktemp("secrets")


@pytest.fixture(name="marked_servers")
def marked_servers_fixture():
    """Source and target accepting the marker token and the marker key (JWT profile)."""
    _, public = _key_pair()
    servers = [ZitadelServer(tokens={MARK_TOKEN}, keys={"k1": ("sa-1", public)}).start() for _ in range(2)]
    servers[0].import_data({"dataOrgsv1": make_export((2, 3), ghost_grants=0), "timeout": "5m0s"})
    try:
        yield servers
    finally:
        for server in servers:
            server.wait_detached()
            server.stop()


def _credential_args(kind: str, secret_dir: Path, monkeypatch, side: str = "") -> list[str]:
    """Flags (or env variables) for one credential kind; ``side`` is "" or "source"/"target"."""
    token_file, key_file = secret_dir / "token.txt", secret_dir / "sa.json"
    token_file.write_text(MARK_TOKEN + "  \n\n")  # trailing whitespace is stripped
    key_file.write_text(_key_json())
    flag = f"--{side}-" if side else "--"
    env = f"ZITADEL_{side.upper()}_" if side else "ZITADEL_"
    if kind == "token-file":
        return [f"{flag}token-file={token_file}"]
    if kind == "key-file":
        return [f"{flag}key-file={key_file}"]
    if kind == "env-token":
        monkeypatch.setenv(f"{env}TOKEN", MARK_TOKEN + "\n")
        return []
    monkeypatch.setenv(f"{env}KEY_FILE", str(key_file))
    return []


def _command(
    name: str, source: ZitadelServer, target: ZitadelServer, work: Path, secret_dir: Path, creds
) -> list[str]:
    if name == "push":
        manifest, _ = write_manifest(work, users=6, bodies=2)
        return ["-v", "push", f"--url={target.url}", f"--manifest={manifest}", "--quiet", *creds("")]
    if name == "verify":
        manifest, _ = write_manifest(work, users=6, bodies=2)
        for body in sorted(work.glob("importBody-*.json")):
            target.import_data(json.loads(body.read_text()))
        return ["-v", "verify", f"--url={target.url}", f"--manifest={manifest}", *creds("")]
    if name == "export":
        return [
            "-v",
            "export",
            f"--url={source.url}",
            "--with-passwords",
            f"--output={work}/e.json",
            *creds(""),
        ]
    if name == "copy":
        return [
            "-v",
            "copy",
            f"--source-url={source.url}",
            f"--target-url={target.url}",
            "--with-passwords",
            f"--work-dir={work}/copy",
            "--quiet",
            *creds("source"),
            *creds("target"),
        ]
    if name == "migrate-push-url":
        sample = REPO / "examples" / "auth0"
        return [
            "migrate",
            "auth0",
            "--org=123456789",
            f"--users={sample / 'users.json'}",
            f"--passwords={sample / 'passwords.json'}",
            f"--output={work}/out/importBody.json",
            f"--push-url={target.url}",
            *creds(""),
        ]
    assert name == "push-gcs-document"
    account = secret_dir / "reader.json"
    # The server's own reader key: sent base64-encoded in the request, never printed.
    account.write_text(
        json.dumps(
            {
                "type": "service_account",
                "client_email": "reader@test.iam",
                "private_key": f"-----BEGIN PRIVATE KEY-----\n{MARK}\n-----END PRIVATE KEY-----\n",
            }
        )
    )
    return [
        "-v",
        "push",
        f"--url={target.url}",
        "--gcs-document=gs://b/export.json",
        f"--service-account={account}",
        *creds(""),
    ]


COMMANDS = ["push", "verify", "export", "copy", "migrate-push-url", "push-gcs-document"]
KINDS = ["token-file", "env-token", "key-file", "env-key-file"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", COMMANDS)
def test_no_secret_reaches_any_output(
    command, kind, marked_servers, secret_dir, tmp_path, monkeypatch, capsys, caplog
):
    for name in ("ZITADEL_TOKEN", "ZITADEL_KEY_FILE", "ZITADEL_SOURCE_TOKEN", "ZITADEL_TARGET_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.DEBUG)
    source, target = marked_servers
    target.gcs_fetch = lambda bucket, path, account: orjson.dumps(make_export((1, 2), ghost_grants=0))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    argv = _command(
        command,
        source,
        target,
        work,
        secret_dir,
        lambda side: _credential_args(kind, secret_dir, monkeypatch, side),
    )
    rc, out, err = _run(argv, capsys)
    assert rc == 0, out + err
    issued = tuple(source.issued_tokens + target.issued_tokens)
    assert "token" in kind or issued  # the key was used: tokens were fetched with it
    assert _leaks(out + err + caplog.text, _files_text(tmp_path), issued) == []


def _sa_key_text() -> str:
    return _key_json()


BAD_CREDENTIALS = [
    # (what, file content or env value, how it is given, expected words)
    ("key as token file", _sa_key_text, "--token-file", "is a service-account key: give it as --key-file"),
    (
        "two-line token file",
        lambda: f"{MARK}\n{MARK}x\n",
        "--token-file",
        "holds 2 lines: a token is one line",
    ),
    ("JSON array token file", lambda: f'["{MARK}"]', "--token-file", "holds a JSON array, not a token"),
    ("quoted token file", lambda: f'"{MARK}"', "--token-file", "holds a quoted JSON string"),
    ("token with a space", lambda: f"Bearer {MARK}", "--token-file", "holds a space or a character"),
    (
        "key as ZITADEL_TOKEN",
        _sa_key_text,
        "ZITADEL_TOKEN",
        "is a service-account key: give it as ZITADEL_KEY_FILE",
    ),
    ("two-line ZITADEL_TOKEN", lambda: f"{MARK}\r\n{MARK}x", "ZITADEL_TOKEN", "ZITADEL_TOKEN holds 2 lines"),
    (
        "token as key file",
        lambda: MARK_TOKEN,
        "--key-file",
        "is not JSON (one line: a token? give it as --token-file)",
    ),
    ("token as ZITADEL_KEY_FILE", lambda: MARK_TOKEN, "ZITADEL_KEY_FILE", "ZITADEL_KEY_FILE"),
    ("key as client secret", _sa_key_text, "--client-secret-file", "is a service-account key"),
    ("both variables", lambda: MARK_TOKEN, "both", "both ZITADEL_TOKEN and ZITADEL_KEY_FILE are set"),
]


@pytest.mark.parametrize(
    "what, content, given, expected", BAD_CREDENTIALS, ids=[c[0] for c in BAD_CREDENTIALS]
)
def test_a_credential_that_is_not_one_is_refused_in_one_line_without_its_content(
    what, content, given, expected, zitadel, secret_dir, tmp_path, monkeypatch, capsys
):
    monkeypatch.delenv("ZITADEL_TOKEN", raising=False)
    monkeypatch.delenv("ZITADEL_KEY_FILE", raising=False)
    manifest, _ = write_manifest(tmp_path, users=4, bodies=1)
    secret = secret_dir / "credential"
    secret.write_text(content())
    argv = ["push", f"--url={zitadel.url}", f"--manifest={manifest}", "--quiet"]
    if given.startswith("--client"):
        argv += ["--client-id=importer", f"{given}={secret}"]
    elif given.startswith("--"):
        argv.append(f"{given}={secret}")
    elif given == "ZITADEL_KEY_FILE":
        monkeypatch.setenv(given, str(secret))
    elif given == "both":
        monkeypatch.setenv("ZITADEL_TOKEN", MARK_TOKEN)
        monkeypatch.setenv("ZITADEL_KEY_FILE", str(secret))
    else:
        monkeypatch.setenv(given, content())
    rc, out, err = _run(argv, capsys)
    line = _one_line(err)
    assert rc == 2 and expected in line, line
    assert _leaks(out + err, _files_text(tmp_path)) == []
    assert zitadel.requests == []  # refused before the first request


@pytest.mark.parametrize(
    "side, variable, value, expected",
    [
        ("source", "ZITADEL_SOURCE_TOKEN", f"{MARK}\n{MARK}", "source: ZITADEL_SOURCE_TOKEN holds 2 lines"),
        (
            "target",
            "ZITADEL_TARGET_KEY_FILE",
            "/nonexistent/sa.json",
            "target: cannot read the ZITADEL_TARGET_KEY_FILE file",
        ),
    ],
)
def test_copy_checks_each_side_the_same_way(side, variable, value, expected, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZITADEL_SOURCE_TOKEN", PAT)
    monkeypatch.setenv("ZITADEL_TARGET_TOKEN", PAT)
    monkeypatch.delenv("ZITADEL_SOURCE_KEY_FILE", raising=False)
    monkeypatch.delenv("ZITADEL_TARGET_KEY_FILE", raising=False)
    if variable.endswith("KEY_FILE"):
        monkeypatch.delenv(variable.replace("KEY_FILE", "TOKEN"))
    monkeypatch.setenv(variable, value)
    rc, out, err = _run(
        [
            "copy",
            "--source-url=http://127.0.0.1:9",
            "--target-url=http://127.0.0.1:9",
            f"--work-dir={tmp_path}/w",
        ],
        capsys,
    )
    line = _one_line(err)
    assert rc == 2 and expected in line, line
    assert MARK not in out + err


def test_a_header_value_is_checked_before_http_client_sees_it(zitadel):
    # Credentials built by hand (load_credentials refuses these): the client still never hands
    # http.client a header it would quote in its "Invalid header value" error.
    client = AdminClient(zitadel.url, Credentials("token", token=f"{MARK}\nX-Injected: 1"), max_attempts=1)
    with pytest.raises(api_errors.AuthError) as caught:
        client.probe()
    assert MARK not in str(caught.value) and zitadel.requests == []


def test_an_access_token_that_cannot_be_a_header_is_refused(secret_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ZITADEL_TOKEN", raising=False)
    (secret_dir / "secret").write_text("s3cret")
    manifest, _ = write_manifest(tmp_path, users=2, bodies=1)
    with ZitadelServer(clients={"importer": "s3cret"}) as server:
        server.faults.wrong_answer(
            json.dumps({"access_token": f"{MARK}\nX: y", "expires_in": 3600}).encode(), path="/oauth/v2/token"
        )
        argv = ["push", f"--url={server.url}", f"--manifest={manifest}", "--client-id=importer"]
        rc, out, err = _run([*argv, f"--client-secret-file={secret_dir / 'secret'}"], capsys)
    line = _one_line(err)
    assert rc == 2 and "access_token is not one run of visible characters" in line
    assert MARK not in out + err


# --- the manifest's counts --------------------------------------------------------------------
def _rewrite(path: Path, body: dict) -> str:
    data = json.dumps(body).encode()
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def _drop_last_entry(folder: Path, manifest: dict) -> None:
    manifest["bodies"].pop()


def _halve_last_body(folder: Path, manifest: dict, fix_entry: bool = False) -> None:
    entry = manifest["bodies"][-1]
    body = json.loads((folder / entry["path"]).read_text())
    org = body["dataOrgs"]["orgs"][0]
    org["humanUsers"] = org["humanUsers"][:5]
    org["userMetadata"] = org["userMetadata"][:5]
    entry["sha256"] = _rewrite(folder / entry["path"], body)
    if fix_entry:
        entry["users"] = 5


def _delete_body(folder: Path, manifest: dict) -> None:
    (folder / manifest["bodies"][1]["path"]).unlink()


def _stray_body(folder: Path, manifest: dict) -> None:
    (folder / "importBody-00004-of-00004.json").write_bytes(
        (folder / manifest["bodies"][0]["path"]).read_bytes()
    )


def _changed_body(folder: Path, manifest: dict) -> None:
    path = folder / manifest["bodies"][2]["path"]
    path.write_bytes(path.read_bytes().replace(b"First", b"Fiona"))


def _array_body(folder: Path, manifest: dict) -> None:
    entry = manifest["bodies"][2]
    entry["sha256"] = hashlib.sha256(b"[]").hexdigest()
    (folder / entry["path"]).write_bytes(b"[]")
    entry["users"] = 0
    manifest["counts"]["users_written"] = 20


def _bodies_written(folder: Path, manifest: dict) -> None:
    manifest["counts"]["bodies_written"] = 4


MANIFEST_CASES = [
    (
        "2 of 3 bodies listed",
        _drop_last_entry,
        "lists 2 of the 3 bodies its names count (-of-00003): importBody-00003-of-00003.json",
    ),
    (
        "last body rewritten with 5 of its 10 users",
        _halve_last_body,
        "importBody-00003-of-00003.json holds 5 users, its manifest entry says 10",
    ),
    (
        "... and its entry too",
        lambda f, m: _halve_last_body(f, m, True),
        "its bodies hold 25 users, its counts say 30 (users_written)",
    ),
    ("a listed body is missing", _delete_body, "importBody-00002-of-00003.json: listed in"),
    (
        "an unlisted numbered body beside",
        _stray_body,
        "importBody-00004-of-00004.json lies beside the bodies but the manifest does not list it",
    ),
    ("a body changed after its sha256", _changed_body, "importBody-00003-of-00003.json: sha256 of"),
    (
        "a body that is a JSON array",
        _array_body,
        "importBody-00003-of-00003.json: an array in JSON, not an import request",
    ),
    ("bodies_written disagrees", _bodies_written, "it lists 3 bodies, its counts say 4 (bodies_written)"),
]


@pytest.mark.parametrize("what, change, expected", MANIFEST_CASES, ids=[c[0] for c in MANIFEST_CASES])
def test_push_refuses_a_manifest_its_bodies_do_not_match_before_sending_anything(
    what, change, expected, zitadel, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    manifest_path, _ = write_manifest(tmp_path, users=30, bodies=3)
    manifest = json.loads(manifest_path.read_text())
    change(tmp_path, manifest)
    manifest_path.write_text(json.dumps(manifest))
    rc, out, err = _run(["push", f"--url={zitadel.url}", f"--manifest={manifest_path}", "--quiet"], capsys)
    line = _one_line(err)
    assert rc == 2 and expected in line and "nothing was sent" in line, line
    assert zitadel.requests == [] and zitadel.user_ids() == set()
    assert not (tmp_path / "importBody.results").exists()  # no ledger for a refused manifest


@pytest.mark.parametrize(
    "content, expected",
    [
        (b'[{"dataOrgs": {"orgs": []}}]', "an array in JSON, not an import request"),
        (b"{not json", "not JSON"),
    ],
)
def test_push_body_that_is_not_an_import_request_is_refused(
    content, expected, zitadel, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "body.json").write_bytes(content)
    rc, out, err = _run(["push", f"--url={zitadel.url}", "--body=body.json", "--quiet"], capsys)
    line = _one_line(err)
    assert rc == 2 and expected in line, line
    assert zitadel.requests == [] and not (tmp_path / "body.push.manifest.json").exists()


# --- users of another org ---------------------------------------------------------------------
def test_a_user_that_exists_in_another_org_is_not_present(zitadel, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    manifest, ids = write_manifest(tmp_path, users=10, bodies=2, org_id="123")
    other = make_user(ids[3], hash_pool()[0])
    zitadel.import_data({"dataOrgs": {"orgs": [{"orgId": "999", "humanUsers": [other]}]}, "timeout": "1m"})
    rc, out, err = _run(["push", f"--url={zitadel.url}", f"--manifest={manifest}", "--quiet"], capsys)
    line = _one_line(err)
    assert rc == 1 and "in-another-org 1" in line, line
    dead = [
        json.loads(x)
        for x in (tmp_path / "importBody.results/push-dead-letter.ndjson").read_text().splitlines()
    ]
    assert [(d["userId"], d["reason"]) for d in dead] == [(ids[3], "in-another-org")]
    assert "exists in org 999, not in org 123" in dead[0]["message"]
    ledgers = [json.loads(p.read_text()) for p in (tmp_path / "importBody.results").glob("body-*.json")]
    assert sum(len(x["created"]) for x in ledgers) == 9 and sum(len(x["present"]) for x in ledgers) == 0
    rc, out, err = _run(["verify", f"--url={zitadel.url}", f"--manifest={manifest}"], capsys)
    assert rc == 1 and ids[3] in out  # verify says the same: missing from org 123


def test_users_the_answer_lists_under_another_org_are_failed(zitadel, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=3, bodies=1, org_id="123", metadata=False)
    answer = {
        "success": {
            "orgs": [{"orgId": "123", "humanUserIds": ids[:1]}, {"orgId": "999", "humanUserIds": ids[1:]}]
        }
    }
    zitadel.faults.wrong_answer(json.dumps(answer).encode())
    report = push_engine.push_manifest(load_manifest(str(manifest)), zitadel.url, TOKEN, progress=False)
    assert not report.ok and report.bodies[0].created == ids[:1]
    failed = report.bodies[0].failed
    assert [(f["userId"], f["reason"]) for f in failed] == [(u, "in-another-org") for u in ids[1:]]
    assert "the answer lists it as created in org 999, not in org 123" in failed[0]["message"]


def test_present_users_of_the_right_org_stay_present_at_one_lookup_each(zitadel, tmp_path):
    manifest, ids = write_manifest(tmp_path, users=12, bodies=2)
    assert push_engine.push_manifest(load_manifest(str(manifest)), zitadel.url, TOKEN, progress=False).ok
    searches = sum(1 for path, _ in zitadel.requests if path == "/admin/v1/events/_search")
    again = push_engine.push_manifest(
        load_manifest(str(manifest)), zitadel.url, TOKEN, results_dir=str(tmp_path / "r2"), progress=False
    )
    assert again.ok and again.present == 12 and again.created == 0
    after = sum(1 for path, _ in zitadel.requests if path == "/admin/v1/events/_search")
    assert after - searches == 1 + 12  # the probe, then one lookup per present user


# --- deadlines --------------------------------------------------------------------------------
def test_a_dripping_server_fails_the_push_in_attempts_times_timeout(zitadel, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    manifest, _ = write_manifest(tmp_path, users=10, bodies=1)
    zitadel.faults.drip_bytes_per_second = 1.0
    argv = [
        "push",
        f"--url={zitadel.url}",
        f"--manifest={manifest}",
        "--request-timeout=2",
        "--max-attempts=2",
        "--quiet",
    ]
    started = time.monotonic()
    rc, out, err = _run(argv, capsys)
    elapsed = time.monotonic() - started
    line = _one_line(err)
    assert rc == 1 and "no complete answer within 2 s" in line and "after 2 attempts" in line, line
    assert 3.9 <= elapsed, elapsed  # 2 attempts x 2 s, plus backoff
    # Not one read's timeout each: a byte a second keeps every read alive, so without the
    # whole-request deadline each attempt would read the answer to its end, and its status line
    # and first header alone take this long (a bound of the scenario, not of the machine's speed).
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    assert elapsed < 2 * len(head) / zitadel.faults.drip_bytes_per_second, elapsed


def test_request_timeout_bounds_the_probe_too(zitadel, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    manifest, _ = write_manifest(tmp_path, users=2, bodies=1)
    zitadel.faults.drip_bytes_per_second = 1.0
    zitadel.faults.drip_paths = ("/admin/v1/events/_search",)
    # 3 s: a busy machine delayed the dripped answer's first byte past 1 s ("no answer").
    argv = ["push", f"--url={zitadel.url}", f"--manifest={manifest}", "--request-timeout=3", "--quiet"]
    started = time.monotonic()
    rc, out, err = _run(argv, capsys)
    elapsed = time.monotonic() - started
    line = _one_line(err)
    assert rc == 2 and "not reachable" in line and "no complete answer within 3 s" in line, line
    # The probe's 2 attempts x 3 s, not its default 10 s each (nor the dripped answer's ~100 s):
    # a bound of the scenario's timeouts, not of the machine's speed.
    assert elapsed < 2 * 10.0, elapsed


@pytest.mark.parametrize("kind", ["hang", "drop"])
def test_a_server_gone_mid_run_stops_the_push_after_three_silent_requests_and_a_rerun_resumes(
    kind, zitadel, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    manifest, ids = write_manifest(tmp_path, users=60, bodies=6)
    zitadel.faults.silent_after(2, kind)
    argv = [
        "push",
        f"--url={zitadel.url}",
        f"--manifest={manifest}",
        "--request-timeout=1",
        "--max-attempts=2",
        "--concurrency=1",  # the stop's count is of requests in a row: one body at a time
        "--quiet",
    ]
    started = time.monotonic()
    rc, out, err = _run(argv, capsys)
    elapsed = time.monotonic() - started
    line = _one_line(err)
    assert rc == 1, out + err
    assert "the server stopped answering: 3 requests in a row got no answer" in line, line
    assert "2 of 6 bodies done (20 users created, 0 present): re-run the same command to resume" in line
    imports = [p for p, _ in zitadel.requests if p == "/admin/v1/import"]
    assert len(imports) == 2 + 3 * 2  # nothing sent after the stop
    zitadel.faults.clear()
    started = time.monotonic()
    rc, out, err = _run([*argv[:-1]], capsys)  # the same command, progress on: it resumes
    rerun = time.monotonic() - started  # this machine's pace for a push of 4 bodies, just now
    assert rc == 0, out + err
    # 3 x 2 attempts x 1 s + backoff (at most 0.5 s a retry), plus the push's own work as the
    # re-run just measured it; one timeout per body would take ~15 s.
    assert elapsed < 3 * 2 * 1.0 + 3 * 0.5 + 2 * rerun, (elapsed, rerun)
    assert zitadel.user_ids("123") == set(ids) and set(zitadel.state.created_count.values()) == {1}


def test_refused_connections_stop_a_client_after_three_requests_for_any_call(zitadel, tmp_path):
    manifest, _ = write_manifest(tmp_path, users=50, bodies=5)
    client = fast_client(zitadel.url, TOKEN, max_attempts=2)
    client.probe()
    # Any method, path and JSON body goes through the same client (the per-user v2 calls too).
    with pytest.raises(api_errors.InvalidRequest):
        client.request("POST", "/v2/users/u1/deactivate", {})  # answered (404): not "no answer"
    with pytest.raises(api_errors.InvalidRequest, match="quote ids"):  # not sent, not retried
        client.request("POST", "/v2/users/a b\r\n/deactivate", {})
    assert client.stop.tripped is False
    zitadel.stop()
    report = push_engine.push_manifest(
        load_manifest(str(manifest)), zitadel.url, TOKEN, client=client, progress=False
    )
    assert [b.status for b in report.bodies] == ["failed"] * 3 + ["not-sent"] * 2
    assert report.fatal and "3 requests in a row got no answer" in report.fatal
    requests_before = client.stats.requests
    with pytest.raises(api_errors.ServerGone):
        client.request("PUT", "/v2/users/human/u1", {"profile": {"givenName": "A"}})
    assert client.stats.requests == requests_before  # fails at once: nothing sent, no timeout waited


# --- answers of the wrong shape -----------------------------------------------------------------
WRONG_ANSWERS = [
    # (command, path, answer, calls answered normally first, exit code, expected words)
    ("push", "/admin/v1/import", b"[]", 0, 1, "the answer is not a JSON object"),
    ("push", "/admin/v1/import", b'{"errors": {"id": "1"}}', 0, 1, "errors is a dict, not a list"),
    ("push", "/admin/v1/import", b'{"errors": ["oops"]}', 0, 1, "errors[0] is a str, not an object"),
    (
        "push",
        "/admin/v1/import",
        b'{"success": {"orgs": [{"humanUserIds": "u1"}]}}',
        0,
        1,
        "humanUserIds is not a list",
    ),
    ("push", "/admin/v1/import", b'{"success": []}', 0, 1, "success is a list, not an object"),
    (
        "push",
        "/admin/v1/events/_search",
        b'{"events": "none"}',
        0,
        2,
        "does not answer like a ZITADEL admin API",
    ),
    ("push", "/oauth/v2/token", b"[]", 0, 2, "the token endpoint's answer is not a JSON object"),
    ("verify", "/admin/v1/events/_search", b'{"events": {"a": 1}}', 1, 2, "events is a dict, not a list"),
    (
        "verify",
        "/admin/v1/events/_search",
        b'{"events": [{"aggregate": "u1", "sequence": "1"}]}',
        1,
        2,
        "aggregate is a str",
    ),
    (
        "verify",
        "/admin/v1/events/_search",
        b'{"events": [{"sequence": "x"}]}',
        1,
        2,
        "sequence is not a number",
    ),
    ("export", "/admin/v1/export", b"[]", 0, 2, "the answer is not a complete export document"),
    ("copy", "/admin/v1/export", b'{"orgs": 5}', 0, 2, "not a complete export document"),
]


@pytest.mark.parametrize(
    "command, path, answer, skip, code, expected",
    WRONG_ANSWERS,
    ids=[f"{c[0]} {c[2][:30]!r}" for c in WRONG_ANSWERS],
)
def test_a_200_answer_of_the_wrong_shape_is_one_line(
    command, path, answer, skip, code, expected, secret_dir, tmp_path, monkeypatch, capsys
):
    for name in ("ZITADEL_TOKEN", "ZITADEL_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ZITADEL_SOURCE_TOKEN", PAT)
    monkeypatch.setenv("ZITADEL_TARGET_TOKEN", PAT)
    (secret_dir / "secret").write_text("s3cret")
    manifest, _ = write_manifest(tmp_path, users=4, bodies=1)
    with ZitadelServer(tokens={PAT}, clients={"importer": "s3cret"}) as server:
        server.import_data({"dataOrgsv1": make_export((1, 2), ghost_grants=0), "timeout": "1m"})
        server.faults.wrong_answer(answer, path=path, skip=skip)
        creds = (
            ["--client-id=importer", f"--client-secret-file={secret_dir / 'secret'}"]
            if path == "/oauth/v2/token"
            else []
        )
        if command != "copy" and not creds:
            monkeypatch.setenv("ZITADEL_TOKEN", PAT)
        argv = {
            "push": ["push", f"--url={server.url}", f"--manifest={manifest}", "--quiet", *creds],
            "verify": ["verify", f"--url={server.url}", f"--manifest={manifest}"],
            "export": ["export", f"--url={server.url}", f"--output={tmp_path}/e.json"],
            "copy": [
                "copy",
                f"--source-url={server.url}",
                f"--target-url={server.url}",
                f"--work-dir={tmp_path}/w",
            ],
        }[command]
        rc, out, err = _run(argv, capsys)
    line = _one_line(err)
    assert rc == code and expected in line, line
    assert _leaks(out + err, _files_text(tmp_path)) == []
    assert not os.path.exists(tmp_path / "e.json")


# --- a credential given through a mistyped flag ----------------------------------------------
def _spellings(flag: str) -> list[list[str]]:
    """Ways a credential flag is given: exact (``=`` or a separate word), a prefix of it (argparse
    used to take ``--token=X`` for ``--token-file``), and misspelt (underscores, a letter dropped)."""
    prefix = flag[: flag.rindex("-")] if flag.count("-") > 2 else flag[:-3]
    misspelt = [flag.replace("-", "_").replace("__", "--", 1), flag[:-2] + flag[-1]]
    forms = [flag, prefix, *misspelt]
    return [[f"{form}={MARK}"] for form in forms] + [[form, MARK] for form in forms]


_CREDENTIAL_FLAGS = ["--token-file", "--client-id", "--client-secret-file", "--key-file"]
_SIDE_FLAGS = [f"--{side}-{name[2:]}" for side in ("source", "target") for name in _CREDENTIAL_FLAGS]


def _mistyped_cases() -> list[tuple[str, list[str]]]:
    cases = []
    for command in ("push", "verify", "export", "migrate", "push-gcs"):
        flags = _CREDENTIAL_FLAGS + (["--service-account"] if command == "push-gcs" else [])
        cases += [(command, form) for flag in flags for form in _spellings(flag)]
    cases += [("copy", form) for flag in _SIDE_FLAGS for form in _spellings(flag)]
    return cases


@pytest.mark.parametrize(
    ("command", "given"), _mistyped_cases(), ids=lambda v: " ".join(v).replace(MARK, "X")
)
def test_a_secret_given_to_a_credential_flag_is_never_printed(
    command, given, tmp_path, monkeypatch, capsys, caplog
):
    """Every credential flag gets a marker secret, spelt out, abbreviated and misspelt: the command
    refuses with one line (exit 2) and the marker is in no output."""
    for name in ("ZITADEL_TOKEN", "ZITADEL_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.DEBUG)
    monkeypatch.chdir(tmp_path)
    url = "--url=http://127.0.0.1:9"
    manifest, _ = write_manifest(tmp_path, users=2, bodies=1)
    sample = REPO / "examples" / "auth0"
    argv = {
        "push": ["push", url, f"--manifest={manifest}"],
        "verify": ["verify", url, f"--manifest={manifest}"],
        "export": ["export", url, f"--output={tmp_path}/e.json"],
        "push-gcs": ["push", url, "--gcs-document=gs://b/export.json"],
        "copy": [
            "copy",
            "--source-url=http://127.0.0.1:9",
            "--target-url=http://127.0.0.1:9",
            "--work-dir=w",
        ],
        "migrate": [
            "migrate",
            "auth0",
            "--org=123456789",
            f"--users={sample / 'users.json'}",
            f"--passwords={sample / 'passwords.json'}",
            f"--output={tmp_path}/out/importBody.json",
            "--push-url=http://127.0.0.1:9",
        ],
    }[command]
    rc, out, err = _run([*argv, *given], capsys)
    assert rc == 2, out + err
    assert err.startswith("zitadel-beam: error: ") and err.count("\n") == 1, err
    assert MARK not in out + err + caplog.text
    assert MARK not in _files_text(tmp_path)


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        (["--token=s3cr3t"], "unrecognized arguments: --token (values not shown)"),
        (["--token", "s3cr3t"], "unrecognized arguments: --token (and 1 value, not shown)"),
        (["--tokenfile", "a", "b"], "unrecognized arguments: --tokenfile (and 2 values, not shown)"),
    ],
)
def test_unknown_flags_are_named_without_their_values(given, shown, tmp_path, capsys):
    manifest, _ = write_manifest(tmp_path, users=2, bodies=1)
    rc, out, err = _run(["push", "--url=http://127.0.0.1:9", f"--manifest={manifest}", *given], capsys)
    assert rc == 2 and shown in err and "s3cr3t" not in out + err and "a b" not in err
