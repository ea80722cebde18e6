"""The README's examples run as they are, against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from harness import Harness
from rated import RatedMatch

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


def test_the_rated_play_example_shows_the_profile_and_the_leaderboard(
    rated_harness: Harness, rated_match: RatedMatch
) -> None:
    ann = rated_match.player(0)
    won = ann.player_id in rated_match.winners
    code = python_blocks()[5]
    out = run_example(code, rated_harness, SPADES_CREDENTIAL=ann.credential).splitlines()
    shown = shown_after(code)
    assert re.fullmatch(
        r"classic: rank \d+, rating -?\d+\.\d\d, " + ("1-0" if won else "0-1"), out[0]
    )
    assert re.fullmatch(r"with humans: 1 match\(es\), \d+% of contracts made", out[1])
    assert re.fullmatch(r"my page: ranks \d+-\d+ of \d+", out[2])
    entries = [line.split() for line in out[3:]]
    assert [int(e[0]) for e in entries] == list(range(1, len(entries) + 1))
    assert "Ann" in [e[1] for e in entries]
    # The README shows a run like this one.
    assert re.fullmatch(r"classic: rank \d+, rating -?\d+\.\d\d, \d-\d", shown[0])
    assert shown[1].startswith("with humans: ") and shown[2].startswith("my page: ")
