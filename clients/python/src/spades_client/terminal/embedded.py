"""A server of one's own for ``spades play`` without ``--address``.

It is ``python -m spades_server.main`` (the project's server, run as a program,
never imported) with an in-memory store on a free loopback port, started as a
child process and stopped when the game ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib.util
import os
import re
import secrets
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = ["EmbeddedServer", "ServerUnavailable", "server_installed"]

READY: Final = re.compile(
    r"spades-server listening on (?P<host>[\w.:\[\]-]+):(?P<port>\d+) \(gRPC\)"
)
START_TIMEOUT_S: Final = 30.0
STOP_TIMEOUT_S: Final = 10.0
_PR_SET_PDEATHSIG: Final = 1  # prctl(2)
HOW_TO_INSTALL: Final = (
    "spades play without --address starts a server of its own, which needs the "
    "spades_server package in this Python ({python}). Install it from the project's "
    "repository (`make install` at its root, or `pip install -e .` there, into this "
    "environment), or connect to a running server with --address HOST:PORT "
    "(and --operator-token to create a match there)."
)


def _die_with_parent() -> Callable[[], None] | None:
    """What the child runs before the server starts: on Linux, ask the kernel to
    send it SIGTERM if ``spades`` dies without stopping it (killed, say), so
    that no server outlives the game. The C library is loaded here, in the
    parent; the child only makes the one call."""
    if sys.platform != "linux":
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))

    return in_child


class ServerUnavailable(RuntimeError):
    """The embedded server could not be started; the message says what to do."""


def server_installed() -> bool:
    try:
        return importlib.util.find_spec("spades_server") is not None
    except (ImportError, ValueError):
        return False


class EmbeddedServer:
    """``async with EmbeddedServer() as srv:`` then connect to ``srv.address``."""

    def __init__(self, *, python: str | None = None, extra_args: tuple[str, ...] = ()) -> None:
        self.python = python or sys.executable
        self.extra_args = extra_args
        self.operator_token = "op-" + secrets.token_urlsafe(18)
        self.address = ""
        self._proc: asyncio.subprocess.Process | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._drain: asyncio.Task[None] | None = None

    @property
    def log_path(self) -> Path | None:
        return Path(self._dir.name) / "server.log" if self._dir is not None else None

    async def __aenter__(self) -> EmbeddedServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self.python == sys.executable and not server_installed():
            raise ServerUnavailable(HOW_TO_INSTALL.format(python=self.python))
        self._dir = tempfile.TemporaryDirectory(prefix="spades-play-")
        argv = [
            self.python, "-m", "spades_server.main",
            "--host", "127.0.0.1", "--port", "0", "--metrics-port", "-1",
            "--store", "memory", "--operator-token", self.operator_token,
            "--grace-seconds", "1",
            *self.extra_args,
        ]  # fmt: skip
        log_path = self.log_path
        assert log_path is not None
        with open(log_path, "wb") as log:
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
                start_new_session=True,  # Ctrl-C at the terminal is ours to handle
                preexec_fn=_die_with_parent(),
            )
        assert self._proc.stdout is not None
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                while line := (await self._proc.stdout.readline()).decode(errors="replace"):
                    m = READY.search(line)
                    if m:
                        self.address = f"{m['host']}:{m['port']}"
                        self._drain = asyncio.get_running_loop().create_task(self._drain_stdout())
                        return
        except TimeoutError:
            pass
        tail = log_path.read_text(errors="replace")[-1500:] if log_path.exists() else ""
        await self.stop()
        raise ServerUnavailable(
            f"the embedded server did not start within {START_TIMEOUT_S:g} s"
            + (f"; its last words:\n{tail}" if tail else "")
        )

    async def _drain_stdout(self) -> None:
        """Keep reading what the server prints, so that it never blocks on a full pipe."""
        proc = self._proc
        if proc is not None and proc.stdout is not None:
            while await proc.stdout.read(4096):
                pass

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
        if self._drain is not None:
            self._drain.cancel()
            await asyncio.gather(self._drain, return_exceptions=True)
            self._drain = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
