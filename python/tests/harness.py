"""The test harness: a real ``membank serve`` on a loopback port, started from this
checkout's binary and stopped by its PID. (Not ``conftest.py``: the integrations' tests
below have their own conftest, and these helpers are imported by name.)"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]


def membank_bin() -> Path:
    """The ``membank`` binary the tests run: ``MEMBANK_BIN``, else this checkout's debug build."""
    path = Path(os.environ.get("MEMBANK_BIN") or REPO / "target" / "debug" / "membank")
    if not path.is_file():
        pytest.fail(f"no membank binary at {path}: run `cargo build -p membank-cli` or set MEMBANK_BIN", pytrace=False)
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    """A running ``membank serve``."""

    process: "subprocess.Popen[bytes]"
    url: str
    log: Path

    def stop(self) -> None:
        """Stops it by its PID: SIGTERM (a graceful shutdown), SIGKILL if it lingers."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def start_server(directory: Path) -> Server:
    """Starts ``membank serve`` on a free loopback port and waits until it is ready."""
    port = free_port()
    log = directory / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMBANK_") or k in ("MEMBANK_MODEL_DIR",)}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                str(membank_bin()),
                "--db",
                str(directory / "server.db"),
                "serve",
                "--addr",
                f"127.0.0.1:{port}",
                "--no-maintenance",
                "--rate-limit",
                "0",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    server = Server(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"membank serve exited with {process.returncode}:\n{log.read_text()}", pytrace=False)
        try:
            if httpx.get(f"{server.url}/readyz", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    server.stop()
    pytest.fail(f"membank serve was not ready within 120 s:\n{log.read_text()}", pytrace=False)


def pg_url() -> Optional[str]:
    """A throw-away PostgreSQL for the tests (``MEMBANK_TEST_PG_URL``), if one is given."""
    return os.environ.get("MEMBANK_TEST_PG_URL") or None
