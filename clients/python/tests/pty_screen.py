"""The ``spades`` command under a pseudo-terminal, read as a person sees it.

pexpect spawns the real console script on a pty of a fixed size; everything it
writes goes through pyte, a terminal emulator, so a test reads the screen
(``screen()``: the visible lines, colours and cursor moves applied) and the
whole session (``transcript()``: the lines scrolled off the top, then the
screen). Every wait has a deadline.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pexpect
import pyte

SPADES = str(Path(sys.executable).with_name("spades"))
COLUMNS, LINES = 120, 50
WAIT_S = 30.0


def _interruptible() -> None:
    """In the child: Ctrl-C interrupts, as in a terminal. A suite started in
    the background by a shell without job control (``cmd &`` in a script)
    inherits SIGINT ignored, and Python then never raises KeyboardInterrupt:
    the Ctrl-C tests hung there."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Terminal:
    """One run of ``spades ARGS`` on a COLUMNS x LINES terminal."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        columns: int = COLUMNS,
        lines: int = LINES,
    ) -> None:
        self.screen_ = pyte.HistoryScreen(columns, lines, history=20000, ratio=0.5)
        self.stream = pyte.ByteStream(self.screen_)
        full_env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(columns), LINES=str(lines))
        full_env.pop("NO_COLOR", None)
        full_env.update(env or {})
        self.child = pexpect.spawn(
            SPADES,
            list(args),
            env=full_env,
            dimensions=(lines, columns),
            timeout=WAIT_S,
            preexec_fn=_interruptible,
        )
        self.raw = b""

    # -- reading -------------------------------------------------------------------------
    def _pump(self, timeout: float) -> bool:
        """Feed what the program wrote within ``timeout`` to the emulator; False at its end."""
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        if isinstance(data, bytes):
            self.raw += data
            self.stream.feed(data)
        return True

    def screen(self) -> str:
        """The visible screen, one line per row, trailing blanks cut."""
        return "\n".join(line.rstrip() for line in self.screen_.display).rstrip("\n")

    def transcript(self) -> str:
        """Every line written so far: those scrolled off, then the screen."""
        scrolled = [
            "".join(row[x].data for x in range(self.screen_.columns)).rstrip()
            for row in self.screen_.history.top
        ]
        return "\n".join([*scrolled, self.screen()])

    def wait_for(
        self, what: str | re.Pattern[str] | Callable[[str], bool], timeout: float = WAIT_S
    ) -> str:
        """Read until the screen shows ``what`` (text, a pattern, or a test of the
        screen); returns the screen. AssertionError with the screen past ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if _matches(what, text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout:g} s for {what!r}; the screen:\n{text}")
            if not self._pump(0.1) and not _matches(what, self.screen()):
                raise AssertionError(f"spades ended before {what!r}; the screen:\n{self.screen()}")

    def wait_for_exit(self, timeout: float = WAIT_S) -> int:
        deadline = time.monotonic() + timeout
        while self._pump(0.1):
            if time.monotonic() > deadline:
                raise AssertionError(f"spades still running after {timeout:g} s:\n{self.screen()}")
        # The pty ends before the process does: a Python interpreter still shutting
        # down its gRPC threads on a busy machine takes longer than the tenth of a
        # second pexpect's close() grants before it kills, which reads as no status.
        while self.child.isalive():
            if time.monotonic() > deadline:
                raise AssertionError(f"spades closed its terminal but ran on past {timeout:g} s")
            time.sleep(0.05)
        status = self.child.exitstatus
        self.child.close()
        return -1 if status is None else int(status)

    # -- typing --------------------------------------------------------------------------
    def type_line(self, text: str) -> None:
        self.child.sendline(text)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
        self.child.close(force=True)


def _matches(what: str | re.Pattern[str] | Callable[[str], bool], text: str) -> bool:
    if isinstance(what, str):
        return what in text
    if isinstance(what, re.Pattern):
        return what.search(text) is not None
    return what(text)


def last_line_with(text: str, needle: str) -> str:
    lines = [line for line in text.splitlines() if needle in line]
    assert lines, f"no line with {needle!r} in:\n{text}"
    return lines[-1]
