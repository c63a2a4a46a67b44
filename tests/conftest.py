"""Shared fixtures: the vendored test data, an in-process GCS emulator, and the schema check.

Every import body a migrate run of the suite writes is checked against ZITADEL's published API
schema (tests/standins/schema_check.py): after each test for the bodies under its ``tmp_path``, and once
at the end of the session for the rest of the session's temporary folder (module fixtures). A
body that fails fails the test (or the session), naming the body and the rule. Likewise every
user service v2 request a test server receives (tests/standins/schema_check_v2.py): a test in which a
server recorded a problem fails.

The emulator is started once per session (Beam caches the credentials it finds per process, and
each test gets a wiped storage with the bucket kept). Credentials: an authorized-user file whose
token never expires, plus GOOGLE_CLOUD_PROJECT and NO_GCE_CHECK=true, so google-auth neither
retries the credential look-up (~20 s) nor probes the GCE metadata address (docs/gcs.md).
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

# The stand-in servers and schema oracles (tests/standins/) import each other by plain name, as
# they do when a stand-in is run as a script; the tests import them, and the shared helpers
# (tests/helpers/), the same way.
_TESTS = Path(__file__).resolve().parent
sys.path[:0] = [str(_TESTS / "standins"), str(_TESTS / "helpers")]

from repo_files import DATA_DIR, GCS_BUCKET  # noqa: E402 - importable once tests/helpers is on the path

_SCHEMA_CHECKED: set[Path] = set()


def written_bodies(folder: Path) -> list[Path]:
    """The bodies listed by the manifests the tool's migrate commands wrote under ``folder``
    (``"tool": "zitadel-beam"``; ``push --body`` manifests and the fixtures' list bodies written
    by hand, often invalid on purpose: not checked)."""
    bodies = []
    for manifest in folder.rglob("*.manifest.json"):
        try:
            raw = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(raw, dict) or raw.get("tool") != "zitadel-beam":
            continue
        entries = raw.get("bodies") or []
        for entry in entries:
            path = entry.get("path") if isinstance(entry, dict) else None
            if isinstance(path, str) and "://" not in path and (manifest.parent / path).is_file():
                bodies.append((manifest.parent / path).resolve())
    return bodies


def schema_problems(folder: Path) -> list[str]:
    """Schema problems of the bodies under ``folder`` not checked yet (each body is read once)."""
    from schema_check import checker

    problems = []
    for body in written_bodies(folder):
        if body in _SCHEMA_CHECKED or body.stat().st_size > 50 * 2**20:
            continue
        _SCHEMA_CHECKED.add(body)
        problems += [f"{body}: {p}" for p in checker().check(json.loads(body.read_bytes()))[:5]]
    return problems


@pytest.fixture(autouse=True)
def _bodies_meet_zitadel_schema(request):
    folder = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if folder is not None:
        problems = schema_problems(folder)
        if problems:
            pytest.fail("bodies refused by ZITADEL's schema:\n" + "\n".join(problems[:10]), pytrace=False)


@pytest.fixture(autouse=True)
def _v2_requests_meet_zitadel_schema():
    """Every user service v2 request a test server received met ZITADEL's published schema
    (tests/standins/schema_check_v2.py; the server answered the others 400). A test that sends a wrong
    request on purpose clears its server's ``v2_schema_problems`` once it has looked at them."""
    yield
    server_module = sys.modules.get("zitadel_server")  # no test server in this test's process yet
    problems = server_module.take_v2_schema_problems() if server_module is not None else []
    if problems:
        pytest.fail(
            "user service v2 requests refused by ZITADEL's schema:\n" + "\n".join(problems[:10]),
            pytrace=False,
        )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups into node ids
def pytest_collection_modifyitems(config, items):
    """Under ``-n`` workers with ``--dist loadgroup`` (``run_local.sh``), the tests of a module
    that share a module-scoped fixture stay in one worker, which builds it once (a 200,000-user
    export, a portable job service); every other test goes to whichever worker is free."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        scopes = {
            definition.scope
            for name in getattr(item, "fixturenames", ())
            for definition in (info.name2fixturedefs.get(name, ()) if info else ())
        }
        if scopes & {"module", "class", "package"}:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def pytest_runtest_setup(item):
    """Under ``--dist loadgroup`` a grouped test whose group was lost (pytest-xdist writes it into
    the node id; a pytest that builds node ids another way drops it) fails: the groups would be
    spread over the workers, each building the module fixtures again."""
    config = item.config
    if _xdist_worker(config) and config.getvalue("loadgroup"):
        if item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
            pytest.fail("--dist loadgroup lost this test's group: see setup.py on pytest's version", False)


def _xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _xdist_controller(config) -> bool:
    """The process that hands tests to ``-n`` workers (pytest-xdist) and runs none itself."""
    return not _xdist_worker(config) and getattr(config.option, "dist", "no") != "no"


_FROM_WORKERS: dict[str, list] = {"problems": [], "bodies": [], "v2_requests": []}


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if _xdist_controller(config):  # each worker checked its own temporary folder (below)
        if _FROM_WORKERS["problems"]:
            session.exitstatus = 1
            print("\nbodies refused by ZITADEL's schema:\n" + "\n".join(_FROM_WORKERS["problems"][:20]))
        return
    base = config._tmp_path_factory.getbasetemp() if hasattr(config, "_tmp_path_factory") else None
    problems = schema_problems(Path(base)) if base is not None and Path(base).is_dir() else []
    if _xdist_worker(config):  # the worker's exit status is not the run's: tell the controller
        v2 = sys.modules.get("schema_check_v2")
        config.workeroutput["schema"] = {
            "problems": problems,
            "bodies": len(_SCHEMA_CHECKED),
            "v2_requests": v2.checker().checked if v2 is not None and v2.checker.cache_info().currsize else 0,
        }
    elif problems:
        session.exitstatus = 1
        print("\nbodies refused by ZITADEL's schema:\n" + "\n".join(problems[:20]))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A ``-n`` worker's session-end schema check and counts, kept for the summary (xdist hook)."""
    found = getattr(node, "workeroutput", {}).get("schema")
    if found:
        _FROM_WORKERS["problems"] += found["problems"]
        _FROM_WORKERS["bodies"].append(found["bodies"])
        _FROM_WORKERS["v2_requests"].append(found["v2_requests"])


def pytest_terminal_summary(terminalreporter):
    if _xdist_controller(terminalreporter.config):
        bodies, v2_requests = sum(_FROM_WORKERS["bodies"]), sum(_FROM_WORKERS["v2_requests"])
    else:
        v2 = sys.modules.get("schema_check_v2")
        bodies = len(_SCHEMA_CHECKED)
        v2_requests = v2.checker().checked if v2 is not None and v2.checker.cache_info().currsize else 0
    terminalreporter.write_line(f"schema: {bodies} import bodies checked against ZITADEL's published schema")
    if v2_requests:
        terminalreporter.write_line(f"schema: {v2_requests} user service v2 requests checked")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``tests/data``: every input the suite reads, with its origin in ``tests/data/README.md``."""
    return DATA_DIR


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def _gcs_server(tmp_path_factory):
    from gcp_storage_emulator import server as server_module

    port = _free_port()
    server = server_module.create_server("127.0.0.1", port, in_memory=True, default_bucket=GCS_BUCKET)
    server.start()
    creds = tmp_path_factory.mktemp("gcs") / "authorized_user.json"
    creds.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "test.apps.googleusercontent.com",
                "client_secret": "test",
                "refresh_token": "test",
                "token": "test-token",
                "expiry": "2999-01-01T00:00:00Z",
            }
        )
    )
    try:
        yield server, f"http://127.0.0.1:{port}", creds
    finally:
        server.stop()


@pytest.fixture
def gcs_emulator(_gcs_server, monkeypatch):
    """An empty bucket ``GCS_BUCKET`` on 127.0.0.1; yields a ``google.cloud.storage`` Bucket."""
    server, host, creds = _gcs_server
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", host)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(creds))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    from google.cloud import storage

    client = storage.Client(project="test-project")
    try:
        yield client.bucket(GCS_BUCKET)
    finally:
        server.wipe(keep_buckets=True)
