"""The README's examples run as they are, against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from harness import Harness

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLE_TIMEOUT_S = 60


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def run_example(code: str, harness: Harness) -> str:
    env = dict(
        os.environ,
        SPADES_ADDRESS=harness.address,
        SPADES_OPERATOR_TOKEN=harness.operator_token,
        SPADES_OPERATOR_ADDRESS=harness.operator_address,
        SPADES_CA=harness.ca,
        SPADES_CLIENT_CERT=harness.client_cert,
        SPADES_CLIENT_KEY=harness.client_key,
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=EXAMPLE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not done.stderr, done.stderr  # no warnings, no stray task errors
    return done.stdout


def test_the_asyncio_example_plays_a_hand(harness: Harness) -> None:
    out = run_example(python_blocks()[0], harness).splitlines()
    assert sum(line.startswith("  trick ") for line in out) == 13
    assert sum(" plays " in line for line in out) == 52
    assert out[-1].startswith("hand over: ")
    # The output the README shows is this run's (the match is seeded).
    shown = re.search(r"It prints.*?```\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert shown is not None
    for line in shown.group(1).splitlines():
        if line != "...":
            assert line in out


def test_the_synchronous_example_runs(harness: Harness) -> None:
    code = python_blocks()[1]
    code = code.replace('"localhost:50051"', repr(harness.address))
    code = code.replace('"demo-operator-token"', repr(harness.operator_token))
    run_example(code, harness)


def test_the_tls_example_runs(tls_harness: Harness) -> None:
    out = run_example(python_blocks()[2], tls_harness).splitlines()
    assert out == ["claimed seat 0", "a spectator sees hand_started", "seat token replaced"]
