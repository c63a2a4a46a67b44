"""Every pipeline runs in separate worker processes, and the package installs cleanly.

``--direct_running_mode=multi_processing --direct_num_workers=2`` runs each bundle in a fresh
SDK worker process: nothing may rely on globals of the launching session, every DoFn must pickle,
and no file handle or client may be created at construction time. The bodies must be
byte-identical to an in-process run of the same input.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

from repo_files import ROOT, source_copy

MULTI = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]


def _run(
    args: list[str], cwd: Path, python: str = sys.executable, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python, "-m", "pipeline", *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


def _bodies(manifest: Path) -> list[str]:
    data = json.loads(manifest.read_text())
    return [body["sha256"] for body in data["bodies"]]


def _auth0_args(out: Path) -> list[str]:
    return [
        "migrate",
        "auth0",
        "--org=123",
        f"--users={ROOT}/examples/auth0/users.json",
        f"--passwords={ROOT}/examples/auth0/passwords.json",
        f"--output={out}/importBody.json",
        "--batch-size=7",
        "--metadata",
    ]


def test_auth0_multi_processing_matches_in_process(tmp_path):
    single = _run(_auth0_args(tmp_path / "single"), ROOT)
    multi = _run(_auth0_args(tmp_path / "multi") + MULTI, ROOT)
    assert single.returncode == 0, single.stderr
    assert multi.returncode == 0, multi.stderr
    assert len(_bodies(tmp_path / "single/importBody.manifest.json")) == 4
    assert _bodies(tmp_path / "multi/importBody.manifest.json") == _bodies(
        tmp_path / "single/importBody.manifest.json"
    )
    single_counts = json.loads((tmp_path / "single/importBody.manifest.json").read_text())["counts"]
    multi_counts = json.loads((tmp_path / "multi/importBody.manifest.json").read_text())["counts"]
    assert multi_counts == single_counts  # metrics come back from the worker processes too


def test_keycloak_multi_processing_matches_in_process(tmp_path, data_dir):
    realm = data_dir / "realworld/keycloak/lakekeeper-iceberg-realm-argon2.json"
    # argon2id m=7168: a target with argon2 enabled and Argon2.MinMemory lowered.
    args = [
        "migrate",
        "keycloak",
        "--org=123",
        f"--realm={realm}",
        f"--zitadel-config={data_dir / 'zitadel-config/verifiers-enabled.yaml'}",
    ]
    single = _run(args + [f"--output={tmp_path}/single/importBody.json"], ROOT)
    multi = _run(args + [f"--output={tmp_path}/multi/importBody.json"] + MULTI, ROOT)
    assert single.returncode == 0, single.stderr
    assert multi.returncode == 0, multi.stderr
    assert _bodies(tmp_path / "single/importBody.manifest.json")
    assert _bodies(tmp_path / "multi/importBody.manifest.json") == _bodies(
        tmp_path / "single/importBody.manifest.json"
    )


def test_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    """Build a wheel from a copy of the sources (what ``--setup_file`` ships), install it (and nothing of the checkout) into a
    new virtual environment, and run ``zitadel-beam migrate auth0`` from there.

    The dependencies are not downloaded again: the new environment sees this environment's
    site-packages through a ``.pth`` line (which does not execute the editable install's own
    ``.pth`` hook), so only the wheel can provide ``pipeline`` and ``transforms``.
    """
    source = source_copy(tmp_path / "source")
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("zitadel_beam-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "_deps.pth").write_text("\n".join(deps) + "\n")
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    where = subprocess.run(
        [str(python), "-c", "import pipeline, transforms.sources.auth0.read; print(pipeline.__file__)"],
        cwd=run_dir,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(env_dir)), where
    out = tmp_path / "out"
    result = subprocess.run(
        [str(env_dir / "bin" / "zitadel-beam"), *_auth0_args(out)],
        cwd=run_dir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    manifest = json.loads((out / "importBody.manifest.json").read_text())
    assert manifest["counts"]["users_written"] == 28
    assert manifest["invariant"]["holds"] is True
