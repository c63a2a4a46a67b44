"""Beam's portable runner in processes of its own, for tests/deployment/test_portable_runner.py.

``PortableServices`` starts the two services a portable run needs, each a separate Python
process: Beam's job service (``local_job_service_main``: it receives the job and runs it with
the FnApiRunner as the job's runner) and an external SDK worker pool (``worker_pool_main``: for
each worker the job asks for, it starts a ``python`` SDK harness process of its own, which is
where the DoFns run). The worker pool reaches the gs:// emulator through ``RecordingProxy``, a
plain TCP forwarder that keeps what the workers sent, so a test can show that the bytes of the
outputs were uploaded by the worker processes, not by the launcher.

Example::

    with RecordingProxy(("127.0.0.1", emulator_port)) as proxy:
        with PortableServices(tmp, {**env, "STORAGE_EMULATOR_HOST": proxy.url}) as services:
            main([... , *services.flags()])
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = ["PortableServices", "RecordingProxy", "free_port"]

_START_SECONDS = 60.0  # importing apache_beam on a busy 2-core machine can take 10 s and more


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RecordingProxy:
    """Forwards 127.0.0.1:<port> to ``target`` and keeps every byte the clients sent."""

    def __init__(self, target: tuple[str, int]):
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._connections: list[list[bytes]] = []
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> RecordingProxy:
        threading.Thread(target=self._accept, name="recording-proxy", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._closed = True
        self._listener.close()

    def sent(self) -> bytes:
        """Everything the clients sent since the last ``clear()``, connection after connection."""
        with self._lock:
            return b"".join(b"".join(record) for record in self._connections)

    def clear(self) -> None:
        with self._lock:
            for record in self._connections:  # a connection kept open records on
                record.clear()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target)
            except OSError:  # the emulator is gone: the client sees a closed connection
                client.close()
                continue
            record: list[bytes] = []
            with self._lock:
                self._connections.append(record)
            threading.Thread(target=self._pump, args=(client, upstream, record), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, None), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, record: list[bytes] | None) -> None:
        try:
            while chunk := source.recv(65536):
                if record is not None:
                    with self._lock:
                        record.append(chunk)
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class PortableServices:
    """A job service and an external worker pool, each in its own process, for one test module."""

    def __init__(self, tmp: Path, env: dict[str, str]):
        self._tmp = tmp
        # The pool starts each SDK worker as plain ``python`` (worker_pool_main.py): this
        # interpreter's folder comes first so that the workers import the installed project.
        path = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        self._env = {**env, "PATH": path, "PYTHONUNBUFFERED": "1"}
        self._processes: list[subprocess.Popen] = []
        self.job_port = 0
        self.pool_port = free_port()

    def flags(self) -> list[str]:
        """The Beam flags of a run on these services (docs/distributed-runs.md)."""
        return [
            "--runner=PortableRunner",
            f"--job_endpoint=localhost:{self.job_port}",
            "--environment_type=EXTERNAL",
            f"--environment_config=localhost:{self.pool_port}",
        ]

    def __enter__(self) -> PortableServices:
        port_file = self._tmp / "job-service.port"
        try:
            self._start(
                "job-service",
                "apache_beam.runners.portability.local_job_service_main",
                "--port=0",
                f"--port_file={port_file}",
            )
            self._start(
                "worker-pool",
                "apache_beam.runners.worker.worker_pool_main",
                f"--service_port={self.pool_port}",
            )
            self.job_port = int(self._wait_for(lambda: port_file.exists() and port_file.read_text()))
            self._wait_for(lambda: _listening(self.pool_port))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for process in self._processes:
            if process.poll() is None:
                process.terminate()
        for process in self._processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def log(self, name: str) -> str:
        """What a service printed so far (``job-service`` or ``worker-pool``)."""
        return (self._tmp / f"{name}.log").read_text(errors="replace")

    def _start(self, name: str, module: str, *args: str) -> None:
        with open(self._tmp / f"{name}.log", "wb") as log:
            self._processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", module, *args],
                    cwd=self._tmp,
                    env=self._env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )

    def _wait_for(self, ready):
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline:
            for process in self._processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a portable service exited: {process.args}")
            value = ready()
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError("the portable services did not start")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
