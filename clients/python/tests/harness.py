"""A real server for the client's tests: clients/conformance/serve.py (the fixture ``harness``).

The server runs with ``$SPADES_PYTHON`` (the project's .venv python, which
has the server installed; the Makefile sets it) behind serve.py's proxy, whose
``POST /cut`` drops every connection; ``POST /credential`` signs a player
credential, ``POST /friend`` drives a second player (the lobby's tests). Every
wait here is bounded.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[3]
SERVE = ROOT / "clients" / "conformance" / "serve.py"
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
TEST_TIMEOUT_S = 120.0  # any one test's coroutine

T = TypeVar("T")


def spades_python() -> str:
    configured = os.environ.get("SPADES_PYTHON")
    if configured:
        return configured
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


@dataclass(frozen=True)
class Harness:
    """What serve.py prints: where to connect, and how to cut."""

    address: str
    server: str
    control: str
    operator_token: str
    # With serve.py --tls: the operator port (mutual TLS), and the PEM files
    # of the CA (it signs the server's and the client's certificates) and of
    # the operator's client certificate.
    operator_address: str = ""
    ca: str = ""
    client_cert: str = ""
    client_key: str = ""

    def cut(self) -> int:
        """Drop every proxied connection; returns how many were open."""
        req = urllib.request.Request(f"{self.control}/cut", data=b"", method="POST")
        with urllib.request.urlopen(req, timeout=5) as resp:
            return int(resp.read().decode().split()[1])

    async def cut_async(self) -> int:
        return await asyncio.to_thread(self.cut)

    def _post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(
            f"{self.control}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=15) as resp:
                answer: dict[str, Any] = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise AssertionError(f"POST {path} {body}: {e.code} {e.read().decode()}") from None
        return answer

    def credential(self, player_id: str, name: str = "") -> str:
        """A player credential serve.py signs for the run (10 minutes)."""
        return str(
            self._post_json("/credential", {"playerId": player_id, "name": name})["credential"]
        )

    async def credential_async(self, player_id: str, name: str = "") -> str:
        return await asyncio.to_thread(self.credential, player_id, name)

    def friend(self, request: dict[str, Any]) -> dict[str, Any]:
        """serve.py's second player: ``{"do": "quickplay", ...}`` or ``{"do": "join", ...}``."""
        return self._post_json("/friend", request)

    async def friend_async(self, request: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.friend, request)


def _first_line(proc: subprocess.Popen[str]) -> str:
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        lines.put(proc.stdout.readline())

    threading.Thread(target=read, daemon=True).start()
    try:
        return lines.get(timeout=READY_TIMEOUT_S)
    except queue.Empty:
        proc.kill()
        raise AssertionError(f"serve.py printed nothing in {READY_TIMEOUT_S:g} s") from None


@contextlib.contextmanager
def serve(log_dir: Path, *args: str) -> Iterator[Harness]:
    """serve.py with ``args`` (``--replicas 3``: three servers on one Redis)."""
    log_path = log_dir / "serve.log"
    python = spades_python()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [python, str(SERVE), "--python", python, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=ROOT,
        )
    try:
        line = _first_line(proc)
        if not line:
            raise AssertionError(f"serve.py exited: {log_path.read_text()[-2000:]}")
        ready = json.loads(line)
        tls = ready.get("tls", {})
        yield Harness(
            ready["address"],
            ready["server"],
            ready["control"],
            ready["operatorToken"],
            operator_address=ready.get("operator", ""),
            ca=tls.get("ca", ""),
            client_cert=tls.get("clientCert", ""),
            client_key=tls.get("clientKey", ""),
        )
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # serve.py stops the server and exits
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
            raise AssertionError("serve.py did not stop") from None


@pytest.fixture(scope="session")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with serve(tmp_path_factory.mktemp("serve")) as h:
        yield h


@pytest.fixture(scope="session")
def replicated_harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """Three replicas on one Redis; each new connection goes to the next one."""
    with serve(tmp_path_factory.mktemp("serve-replicas"), "--replicas", "3") as h:
        yield h


@pytest.fixture(scope="session")
def rated_harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """Rated play: a player is on a leaderboard after one rated game."""
    with serve(tmp_path_factory.mktemp("serve-rated"), "--", "--rating-min-games", "1") as h:
        yield h


@pytest.fixture(scope="session")
def tls_harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """TLS only, operator calls over mutual TLS on the operator port."""
    with serve(tmp_path_factory.mktemp("serve-tls"), "--tls") as h:
        yield h


_RUNNER = asyncio.Runner()  # one event loop for every test, as an application has
atexit.register(_RUNNER.close)


def run(coro: Coroutine[Any, Any, T], timeout: float = TEST_TIMEOUT_S) -> T:
    """Run a test's coroutine on the tests' event loop, bounded in time."""

    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            return await coro

    return _RUNNER.run(bounded())
