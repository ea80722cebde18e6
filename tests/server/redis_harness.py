"""Real redis-server processes on loopback for the Redis store's tests.

Each ``RedisServer`` is Debian's ``redis-server`` (installed by ``.ci/run`` and
``make test``) on a free loopback port with its files in a temporary folder:
no configuration file, no persistence unless asked (``aof=True``: AOF with
``appendfsync always``). Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    def __init__(self, workdir: Path, aof: bool = False, extra: tuple[str, ...] = ()) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise AssertionError("redis-server is not installed: apt-get install redis-server")
        self.binary = binary
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.aof = aof
        self.extra = extra
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def argv(self) -> list[str]:
        argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--dir", str(self.workdir), "--save", "", "--daemonize", "no"]
        if self.aof:
            argv += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            argv += ["--appendonly", "no"]
        return argv + list(self.extra)

    def start(self) -> None:
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            self.argv(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while not self.ping():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"redis-server did not start:\n{self.log_tail()}")
            time.sleep(0.01)

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.workdir / "redis.log").read_text().splitlines()[-lines:])
        return ""


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the session; tests keep apart by key prefix."""
    srv = RedisServer(tmp_path_factory.mktemp("redis"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def redis_prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_redis(tmp_path: Path) -> Iterator[type[RedisServer]]:
    """A factory for redis-servers of one test's own (stopped when it ends)."""
    made: list[RedisServer] = []

    class Own(RedisServer):
        def __init__(self, aof: bool = False, extra: tuple[str, ...] = ()) -> None:
            super().__init__(tmp_path / f"redis{len(made)}", aof, extra)
            made.append(self)
            self.start()

    yield Own
    for srv in made:
        srv.stop()
