"""The README's examples run as they are, against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from harness import Harness

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLE_TIMEOUT_S = 60


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def run_example(code: str, harness: Harness, **extra: str) -> str:
    env = dict(
        os.environ,
        **extra,
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


def lobby_example(n: int, harness: Harness, name: str) -> list[str]:
    """Example ``n`` with a credential of a new player from serve.py."""
    player_id = f"py-readme-{uuid.uuid4().hex[:8]}"
    credential = harness.credential(player_id, name)
    return run_example(python_blocks()[n], harness, SPADES_CREDENTIAL=credential).splitlines()


def shown_after(code: str) -> list[str]:
    """The output the README shows after an example."""
    text = README.read_text(encoding="utf-8")
    after = text[text.index(code) + len(code) + len("```") :]  # past its closing fence
    shown = re.search(r"```\n(.*?)```", after, re.S)
    assert shown is not None
    return [line for line in shown.group(1).splitlines() if line != "..."]


def test_the_quick_play_example_plays_three_tricks_of_its_match(harness: Harness) -> None:
    out = lobby_example(3, harness, "Tess")
    assert out[:2] == shown_after(python_blocks()[3])[:2]
    assert [line.split(" to ")[0] for line in out[2:]] == ["trick 1", "trick 2", "trick 3"]


def test_the_invite_only_table_example_runs(harness: Harness) -> None:
    assert lobby_example(4, harness, "Host") == shown_after(python_blocks()[4])
