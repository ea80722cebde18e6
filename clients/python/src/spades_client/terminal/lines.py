"""Lines typed at the terminal, read without blocking the event loop.

The session's task must go on receiving events while the prompt waits, so the
standard input is watched by the loop (``add_reader``) where it can be, and
read by a daemon thread otherwise (a regular file). The terminal stays in its
usual line mode: the person edits a line and presses Enter.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading

__all__ = ["LineReader"]


class LineReader:
    """Complete lines from a file descriptor (default: standard input)."""

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._buffer = b""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watching = False
        self._eof = False

    def start(self) -> LineReader:
        self._loop = asyncio.get_running_loop()
        try:
            self._loop.add_reader(self.fd, self._readable)
            self._watching = True
        except (OSError, ValueError, NotImplementedError):  # e.g. a regular file
            threading.Thread(target=self._thread, name="spades-stdin", daemon=True).start()
        return self

    def close(self) -> None:
        if self._watching and self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.fd)
            self._watching = False

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self._feed(data)

    def _thread(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            assert self._loop is not None
            try:
                self._loop.call_soon_threadsafe(self._feed, data)
            except RuntimeError:  # the loop is closed
                return
            if not data:
                return

    def _feed(self, data: bytes) -> None:
        if not data:
            if self._buffer:
                self._lines.put_nowait(self._buffer.decode("utf-8", "replace"))
                self._buffer = b""
            self._eof = True
            self._lines.put_nowait(None)
            self.close()
            return
        self._buffer += data
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            self._lines.put_nowait(line.rstrip(b"\r").decode("utf-8", "replace"))

    async def readline(self, timeout: float | None = None) -> str | None:
        """The next line (without its newline); None at the end of the input.
        ``TimeoutError`` after ``timeout`` seconds without a line."""
        if self._eof and self._lines.empty():
            return None
        line = await asyncio.wait_for(self._lines.get(), timeout)
        if line is None:
            self._lines.put_nowait(None)  # stays at the end
        return line

    def unread(self, line: str | None) -> None:
        """Put a line back, to be the next one read."""
        rest: list[str | None] = []
        while not self._lines.empty():
            rest.append(self._lines.get_nowait())
        for item in (line, *rest):
            self._lines.put_nowait(item)

    def drain(self) -> None:
        """Forget lines typed ahead (before a prompt that they were not meant for)."""
        while not self._lines.empty():
            item = self._lines.get_nowait()
            if item is None:
                self._lines.put_nowait(None)
                return
