"""What every suite shares: a place for the figures a test measures on the way.

A test that reports a figure (a fuzz tally, bot think times, a duplicate
tournament's margin) writes it with the ``figures`` fixture to
build/test-figures.txt instead of the terminal, so `make test` prints each
suite's closing line and nothing between pytest's dots. Each run starts the
file afresh; workers of pytest-xdist append to the same file line by line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

FIGURES = Path(__file__).resolve().parent.parent / "build" / "test-figures.txt"


def pytest_sessionstart(session: pytest.Session) -> None:
    # Only the controller (not an xdist worker) starts the file afresh.
    if not hasattr(session.config, "workerinput"):
        FIGURES.parent.mkdir(parents=True, exist_ok=True)
        FIGURES.write_text(f"# figures of the run at {time.strftime('%Y-%m-%d %H:%M:%S')}\n")


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Writes lines of figures for this test to build/test-figures.txt."""

    def write(text: str) -> None:
        FIGURES.parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(
            f"{request.node.nodeid}: {line}\n" for line in text.strip("\n").splitlines()
        )
        fd = os.open(FIGURES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode())
        finally:
            os.close(fd)

    return write
