"""A distributed run: Beam's portable runner, its job service and an external SDK worker pool.

The launcher (this process, through ``pipeline.cli.main``) submits each job to Beam's job service;
the job's DoFns run in SDK worker processes that the external worker pool starts, which share no
memory with the launcher: whatever crosses over is pickled, sent over gRPC or stored on gs://.
That is how Dataflow's runner v2 and Flink or Spark job servers run the pipeline
(docs/distributed-runs.md). Every path of those runs (inputs, outputs, dead letters,
temp_location, state) is on the gs:// emulator, and every file written must be byte for byte what
the in-process FnApiRunner writes for the same input (on local disk), with only the run's duration
(``seconds``), the state's commit time and the run's own folder (local or gs://) masked.

The worker pool reaches the emulator through a recording proxy and the launcher directly, so the
test sees that the bodies' bytes were uploaded by the worker processes.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from portable_fixtures import PortableServices, RecordingProxy
from repo_files import DATA_DIR, ROOT
from zitadel_fixtures import PAT
from zitadel_server import ZitadelServer

from pipeline.cli import main

AUTH0 = ROOT / "examples" / "auth0"
BUCKET_NAME = "zb-portable"  # no soft delete: the emulator keeps (and re-writes) what is deleted
GS = f"gs://{BUCKET_NAME}"
TIMINGS = re.compile(rb'"seconds": [0-9.]+')
COMMITTED = re.compile(rb'"committed_at": "[^"]*"')


@pytest.fixture(scope="module")
def bucket(_gcs_server):
    """A bucket of the session's emulator, with this process pointing at it for the module."""
    server, host, creds = _gcs_server
    from google.cloud import storage

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STORAGE_EMULATOR_HOST", host)
        patch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(creds))
        patch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
        patch.setenv("NO_GCE_CHECK", "true")
        server.wipe(keep_buckets=True)  # what earlier modules deleted is still held (soft delete)
        client = storage.Client(project="test-project")
        created = client.bucket(BUCKET_NAME)
        created.soft_delete_policy.retention_duration_seconds = 0
        try:
            yield client.create_bucket(created)
        finally:
            server.wipe(keep_buckets=True)


@pytest.fixture(scope="module")
def proxy(_gcs_server, bucket):
    """The workers' way to the emulator: it keeps what they sent."""
    host = urlsplit(_gcs_server[1])
    with RecordingProxy((str(host.hostname), int(host.port or 80))) as recording:
        yield recording


@pytest.fixture(scope="module")
def services(proxy, tmp_path_factory):
    env = {**os.environ, "STORAGE_EMULATOR_HOST": proxy.url}
    with PortableServices(tmp_path_factory.mktemp("portable"), env) as running:
        yield running


@pytest.fixture(scope="module")
def token_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("token") / "token"
    path.write_text(PAT)
    return path


def _upload(bucket, prefix: str, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        bucket.blob(f"{prefix}/{name}").upload_from_string(data)


def _objects(bucket, prefix: str) -> dict[str, bytes]:
    """Every object under ``prefix/``, by its name below it; masked."""
    found = {}
    for blob in bucket.list_blobs(prefix=prefix + "/"):
        found[blob.name[len(prefix) + 1 :]] = _masked(blob.download_as_bytes())
    return found


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by its path below it (push's own results left out); masked."""
    return {
        path.relative_to(folder).as_posix(): _masked(path.read_bytes())
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".results" not in path.parent.name
    }


def _masked(data: bytes) -> bytes:
    """The run's duration and the state's commit time masked."""
    return COMMITTED.sub(b'"committed_at": "..."', TIMINGS.sub(b'"seconds": 0', data))


class Runs:
    """One command run twice: in-process on local files, and on the portable runner on gs://."""

    def __init__(self, bucket, services, proxy, tmp: Path, name: str, token_file: Path):
        self.bucket, self.services, self.proxy = bucket, services, proxy
        self.local, self.remote = tmp / name, f"{GS}/{name}"
        self.name, self.token_file = name, token_file
        self.uploaded = b""  # what the workers sent to Cloud Storage in the last remote run

    def inputs(self, files: dict[str, bytes]) -> None:
        (self.local / "in").mkdir(parents=True, exist_ok=True)
        for file_name, data in files.items():
            (self.local / "in" / file_name).write_bytes(data)
        _upload(self.bucket, f"{self.name}/in", files)

    def run(self, *args: str, push: tuple[str, str] | None = None) -> tuple[int, int]:
        """``args`` with ``{in}``, ``{out}`` and ``{state}`` filled in, local then remote; exit codes."""
        codes = []
        for index, (base, flags) in enumerate(
            (
                (str(self.local), []),
                (self.remote, [*self.services.flags(), f"--temp_location={self.remote}/tmp"]),
            )
        ):
            filled = [a.format(**{k: f"{base}/{k}" for k in ("in", "out", "state", "night2")}) for a in args]
            if push:
                filled += [f"--push-url={push[index]}", f"--token-file={self.token_file}"]
            self.proxy.clear()
            codes.append(main([*filled, *flags]))
        self.uploaded = self.proxy.sent()
        return codes[0], codes[1]

    def local_files(self, folder: str) -> dict[str, bytes]:
        """What the in-process run wrote in ``folder``, its own paths written as ``<run>``."""
        base = str(self.local).encode()
        return {k: v.replace(base, b"<run>") for k, v in _files(self.local / folder).items()}

    def remote_files(self, folder: str) -> dict[str, bytes]:
        """What the portable run wrote in ``folder``, its own paths written as ``<run>``."""
        base = self.remote.encode()
        return {
            k: v.replace(base, b"<run>") for k, v in _objects(self.bucket, f"{self.name}/{folder}").items()
        }

    def assert_written_by_the_workers(self, folder: str = "out") -> None:
        """Every body and change file: its bytes went up through the workers' proxy. (The dead
        letters' shards did too; the launcher merges them into one file.)"""
        files = self.remote_files(folder)
        written = sorted(name for name, data in files.items() if data in self.uploaded)
        pattern = r"importBody(-\d{5}-of-\d{5}|\.changes-\d{5}-of-\d{5})?\.n?d?json"
        expected = sorted(name for name in files if re.fullmatch(pattern, name))
        assert expected and expected == written


def _sample() -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in AUTH0.glob("*.json")}


def _second_night(users: bytes) -> bytes:
    """The sample a day later: john renamed, jane blocked, minimal gone."""
    lines = []
    for line in users.decode().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            lines.append(line)
            continue
        if record.get("email") == "john@example.com":
            record["family_name"] = "Doe-Moved"
        elif record.get("email") == "jane@example.com":
            record["blocked"] = True
        elif record.get("email") == "minimal@example.com":
            continue
        lines.append(json.dumps(record))
    return ("\n".join(lines) + "\n").encode()


AUTH0_NIGHT = [
    "migrate",
    "auth0",
    "--org=123",
    "--users={in}/users.json",
    "--passwords={in}/passwords.json",
    "--mfa={in}/mfa.json",
    "--output={out}/importBody.json",
    "--state={state}",
    "--batch-size=7",
    "--metadata",
    "--on-removed=deactivate",
    "--max-removals=3",
    "--max-blocks=3",
]


def test_auth0_nights_on_the_portable_runner_match_in_process(
    bucket, services, proxy, token_file, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # push keeps a gs:// manifest's results in the working folder
    runs = Runs(bucket, services, proxy, tmp_path, "auth0", token_file)
    runs.inputs(_sample())
    # Night 1: the state is empty, so every user is new: the bodies a run without --state
    # writes; the push creates the users and commits the state (on gs:// for the remote run).
    with ZitadelServer(tokens={PAT}) as local_server, ZitadelServer(tokens={PAT}) as remote_server:
        assert runs.run(*AUTH0_NIGHT, push=(local_server.url, remote_server.url)) == (0, 0)
        bodies = runs.local_files("out")
        assert [n for n in bodies if n.startswith("importBody-")] == [
            f"importBody-0000{i}-of-00004.json" for i in range(1, 5)
        ]
        assert runs.remote_files("out") == bodies
        assert runs.remote_files("state") == runs.local_files("state")
        assert remote_server.state.users == local_server.state.users
        runs.assert_written_by_the_workers()
        # Night 2: john renamed, jane blocked, minimal gone: change records, no new body.
        users = _second_night(_sample()["users.json"])
        runs.inputs({"users.json": users})
        assert runs.run(*AUTH0_NIGHT[:6], "--output={night2}/importBody.json", *AUTH0_NIGHT[7:]) == (0, 0)
        night2 = runs.local_files("night2")
        assert any(".changes" in name for name in night2), sorted(night2)
        assert runs.remote_files("night2") == night2
        runs.assert_written_by_the_workers("night2")  # the change files too
    # Each job's worker was a process of its own, started by the pool (worker_pool_main.py).
    assert services.log("worker-pool").count("Starting worker with command") >= 2


def test_keycloak_on_the_portable_runner_matches_in_process(bucket, services, proxy, token_file, tmp_path):
    runs = Runs(bucket, services, proxy, tmp_path, "keycloak", token_file)
    # A Keycloak 26 realm: argon2id users (a target with argon2 enabled), service accounts
    runs.inputs(
        {"realm.json": (DATA_DIR / "realworld/keycloak/lakekeeper-iceberg-realm-argon2.json").read_bytes()}
    )
    codes = runs.run(
        "migrate",
        "keycloak",
        "--org=123",
        "--realm={in}/realm.json",
        "--output={out}/importBody.json",
        f"--zitadel-config={DATA_DIR / 'zitadel-config/verifiers-enabled.yaml'}",
    )
    assert codes == (0, 0)
    written = runs.local_files("out")
    assert "importBody.json" in written and "importBody.dead-letter.ndjson" in written, sorted(written)
    assert runs.remote_files("out") == written
    runs.assert_written_by_the_workers()


@pytest.mark.parametrize(
    "flag,path",
    [
        ("--users", "users.json"),
        ("--output", "out/importBody.json"),
        ("--dead-letter", "dead.ndjson"),
        ("--state", "state"),
    ],
)
def test_portable_runner_refuses_a_local_path_up_front(tmp_path, monkeypatch, capsys, flag, path):
    """Its workers cannot reach this machine's disk: one line, exit 2, before any job is sent."""
    monkeypatch.chdir(tmp_path)
    paths = {"--users": f"{GS}/in/users.json", "--output": f"{GS}/out/importBody.json", flag: path}
    args = ["migrate", "auth0", "--org=123", "--passwords=none", *(f"{k}={v}" for k, v in paths.items())]
    portable = [
        "--runner=PortableRunner",
        "--job_endpoint=localhost:9",  # nothing listens: a job sent there would fail differently
        "--environment_type=EXTERNAL",
        "--environment_config=localhost:9",
        f"--temp_location={GS}/tmp",
    ]
    assert main([*args, *portable]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"zitadel-beam: error: {flag} {path!r} is not on Cloud Storage: PortableRunner workers cannot "
        "reach this machine's files; use a gs:// path (docs/runners.md)"
    )
    assert not list(tmp_path.iterdir())
