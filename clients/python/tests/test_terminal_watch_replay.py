"""``spades watch`` and ``spades replay`` on a pseudo-terminal, read as a person sees them."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Harness, run
from pty_screen import Terminal

import spades_client as sc
from spades_client import pb

CARD = re.compile(r"(?<![\w])(10|[2-9JQKA])[♠♥♦♣]")
STEP = re.compile(r"Replay of game\.json: step (\d+) of (\d+)")
RULES = pb.Ruleset(target_score=100)  # a match of a few hands


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for t in opened:
        t.close()


def _op(harness: Harness) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {harness.operator_token}"),)


def bots_match(harness: Harness, seed: int) -> tuple[str, str]:
    """A match of four bots, played out at once: its id and its record."""

    async def go() -> tuple[str, str]:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as c:
            created = await c.create_match(ruleset=RULES, seats=sc.bots(4), seed=seed)
            match_id = created.match.match_id
            for _ in range(100):  # bounded: the bots finish within a second or two
                if (await c.get_match(match_id)).phase == pb.PHASE_MATCH_OVER:
                    break
                await asyncio.sleep(0.1)
            exported: pb.ExportMatchResponse = await c.call(
                c.stub.ExportMatch, pb.ExportMatchRequest(match_id=match_id), metadata=_op(harness)
            )
            assert exported.match.phase == pb.PHASE_MATCH_OVER
            return match_id, exported.record_json

    return run(go())


# -- watch -------------------------------------------------------------------------------


def test_watch_a_whole_match_without_a_hidden_card(
    harness: Harness, terminals: list[Terminal]
) -> None:
    match_id, _ = bots_match(harness, seed=31)
    t = Terminal(["watch", match_id, "--address", harness.address, "--pace-ms", "0"])
    terminals.append(t)
    assert t.wait_for_exit(60) == 0
    text = t.transcript()
    assert f"Watching match {match_id}: public events only, nobody's cards." in text
    assert "Bidding closed: contracts N/S " in text
    assert re.search(r"Match over after \d+ hands?: (N/S|E/W) win", " ".join(text.split()))
    hands = len(re.findall(r"Hand \d+ result", text))
    assert hands >= 1
    # Every card on the screen is one played to a trick: in a play line, the
    # table's trick column, a trick's summary. No hand is ever listed.
    assert "hand:" not in text and "cards:" not in text
    plays = len(re.findall(r"^(?:North|East|South|West) (?:leads|plays) ", text, re.M))
    assert plays == 52 * hands
    for line in text.splitlines():
        if CARD.search(line):
            assert re.search(
                r"(leads|plays) |wins trick|^Last trick|^\s*(North|East|South|West)\s", line
            ), line


def test_watch_a_live_match_waiting_for_its_player(
    harness: Harness, terminals: list[Terminal]
) -> None:
    """The spectator sees the bids, whose turn it is, and no card at all (none is played)."""

    async def create() -> str:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as c:
            seats = [sc.human("Ada"), *sc.bots(3)]
            created = await c.create_match(ruleset=RULES, seats=seats, seed=8)
            return created.match.match_id

    match_id = run(create())
    t = Terminal(
        [
            "watch",
            match_id,
            "--address",
            harness.address,
            "--operator-token",  # optional: the players' names
            harness.operator_token,
            "--pace-ms",
            "0",
        ]
    )
    terminals.append(t)
    t.wait_for("Hand 1")
    t.wait_for(re.compile(r"Bot \d bids \d+\."))
    text = t.transcript()
    assert "Ada bids" not in text  # the match waits for her: nobody plays her seat
    assert "Bidding closed" not in text
    assert not CARD.search(text), text  # no card is played, none is shown
    t.type_line("q")
    assert t.wait_for_exit() == 0
    assert "Stopped watching." in t.transcript()


def test_watch_an_unknown_match_says_so(harness: Harness, terminals: list[Terminal]) -> None:
    t = Terminal(["watch", "no-such-match", "--address", harness.address])
    terminals.append(t)
    assert t.wait_for_exit() == 1
    assert "[MATCH_NOT_FOUND]" in t.transcript()


# -- replay ------------------------------------------------------------------------------


def test_replay_steps_forward_and_back(
    harness: Harness, tmp_path: Path, terminals: list[Terminal]
) -> None:
    _, record = bots_match(harness, seed=32)
    path = tmp_path / "game.json"
    path.write_text(record, encoding="utf-8")
    t = Terminal(["replay", str(path)])
    terminals.append(t)

    screen = t.wait_for("q: quit >")
    m = STEP.search(screen)
    assert m is not None and m.group(1) == "0", screen
    last = int(m.group(2))
    assert "The deal." in screen
    for seat in ("North", "East", "South", "West"):  # every hand, 13 cards each
        line = next(x for x in screen.splitlines() if x.startswith(f"{seat}'s hand:"))
        assert len(CARD.findall(line)) == 13, line

    def step(keys: str) -> str:
        before = t.raw
        t.type_line(keys)
        t.wait_for(lambda _: t.raw != before and t.raw.endswith(b"> "))
        return t.wait_for("q: quit >")

    screen = step("")  # Enter: the first bid
    assert "step 1 of" in screen
    assert re.search(r"Action 1: (North|East|South|West): bid \d+", screen), screen
    assert re.search(r"(North|East|South|West) bids (\d+|nil)\.", screen)
    for _ in range(4):
        screen = step("")
    assert "step 5 of" in screen  # the first card of the hand
    assert re.search(r"(North|East|South|West) leads ", screen), screen
    played = re.search(r"Action 5: \w+: play (\S+)", screen)
    assert played is not None
    screen = step("b")
    assert "step 4 of" in screen and "Bidding closed" in screen
    screen = step("b")
    assert "step 3 of" in screen
    screen = step(str(last))
    assert f"step {last} of {last}" in screen
    assert "Match over after" in " ".join(screen.split())
    screen = step("")
    assert "That was the last action of the record" in screen
    screen = step("xyz")
    assert "'xyz': type Enter, b, a step number or q." in screen
    t.type_line("q")
    assert t.wait_for_exit() == 0


def test_replay_without_the_engine_says_how_to_get_it(tmp_path: Path) -> None:
    """A Python where spades_engine cannot be imported: a polite message, exit 2."""
    fake = tmp_path / "hide" / "spades_engine"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    record = tmp_path / "game.json"
    record.write_text("{}", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "spades_client.terminal", "replay", str(record)],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(tmp_path / "hide"), COLUMNS="200"),
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "recomputes the positions with the rules engine (spades_engine)" in out
    assert "make install" in out
    assert not done.stderr


def test_replay_of_a_broken_record_says_what_is_wrong(tmp_path: Path) -> None:
    record = tmp_path / "game.json"
    record.write_text('{"format": "spades-record", "version": 9}', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "spades_client.terminal", "replay", str(record)],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, COLUMNS="200"),
        check=False,
    )
    assert done.returncode == 2
    assert "unsupported record version 9" in done.stdout
