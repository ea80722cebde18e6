"""``spades play`` as a person uses it: the real command on a pseudo-terminal,
a whole hand against bots, what the screen shows read through a terminal
emulator (pty_screen.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Harness, run
from pty_screen import Terminal, last_line_with

import spades_client as sc
from spades_client import pb

PROMPT = "(? for help) >"
CARD = re.compile(r"(10|[2-9JQKA])([♠♥♦♣])|BJ|LJ")
LETTER = {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}
HAND_S = 60.0


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """Every Terminal a test opens is closed after it, whatever happened."""
    opened: list[Terminal] = []
    yield opened
    for t in opened:
        t.close()


def typed(card: str) -> str:
    """``Q♠`` as typed: ``QS``."""
    return card if card in ("BJ", "LJ") else card[:-1] + LETTER[card[-1]]


def hand_cards(line: str) -> tuple[list[str], list[str]]:
    """The cards of a ``Your hand:`` line, and those marked playable ``[..]``."""
    body = line.split(":", 1)[1]
    cards = [m.group(0) for m in CARD.finditer(body)]
    marked = [m.group(1) for m in re.finditer(r"\[([^\]]+)\]", body)]
    return cards, marked


def prompts(t: Terminal) -> int:
    return t.transcript().count(PROMPT)


def wait_prompt(t: Terminal, n: int, also: str = "", timeout: float = HAND_S) -> str:
    """Wait for the n-th prompt of the session (or for ``also`` on the screen)."""
    t.wait_for(
        lambda _: prompts(t) >= n or bool(also and also in t.screen()),
        timeout,
    )
    return t.screen()


def children_of(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def play_out_the_hand(t: Terminal, answered: int) -> tuple[int, list[str]]:
    """Answer every card prompt with the first playable card until the hand's
    result shows; at the first prompt where a card in hand may not be played,
    type that card first. Returns the prompts answered and the refusals seen."""
    refusals: list[str] = []
    tried_illegal = False
    while True:
        screen = wait_prompt(t, answered + 1, also="Hand 1 result")
        if "Hand 1 result" in screen:
            return answered, refusals
        hand_line = last_line_with(screen, "Your hand:")
        cards, playable = hand_cards(hand_line)
        assert playable, hand_line
        assert set(playable) <= set(cards)
        may_play = last_line_with(screen, "You may play (in [ ] above):")
        assert may_play.split(":", 1)[1].split() == [typed(c) for c in playable]
        illegal = [c for c in cards if c not in playable]
        if illegal and not tried_illegal:
            tried_illegal = True
            t.type_line(typed(illegal[0]))
            answered += 1
            screen = wait_prompt(t, answered + 1)
            flat = " ".join(t.transcript().split())  # the line may wrap
            refusals.append(re.findall(r"Refused: [^\[]*\[[A-Z_]+\]", flat)[-1])
        t.type_line(typed(playable[0]).lower())  # lower case is fine too
        answered += 1


def test_a_whole_hand_against_bots_on_the_embedded_server(terminals: list[Terminal]) -> None:
    t = Terminal(["play", "--pace-ms", "0", "--seed", "11", "--name", "Tess"])
    terminals.append(t)
    screen = wait_prompt(t, 1)
    assert "Match " in t.transcript() and " created." in t.transcript()
    assert "You are Tess (North, you)" in t.transcript()
    # The table: every seat, its bid so far, and whose turn it is.
    assert re.search(r"▶\s+Tess \(North, you\)", screen), screen
    for bot in ("Bot 1 (East) [bot]", "Bot 2 (South) [bot]", "Bot 3 (West) [bot]"):
        assert bot in screen
    assert "Score: N/S (you) 0 (0 bags)   E/W 0 (0 bags)" in screen
    cards, playable = hand_cards(last_line_with(screen, "Your hand:"))
    assert len(cards) == 13 and not playable  # bidding: nothing to play yet
    assert "Accepted now: a bid 1-13 (bid 4 or 4) or nil." in screen
    # Children of the command: the embedded server, stopped at the end.
    assert t.child.pid is not None
    servers = children_of(t.child.pid)
    assert servers

    # Bad input is refused politely, and the prompt comes back.
    t.type_line("AS")
    screen = wait_prompt(t, 2)
    assert "Now is not the time for playing a card. Accepted now: a bid 1-13" in screen
    t.type_line("bid 14")
    screen = wait_prompt(t, 3)
    assert "Refused: " in screen and "[BID_OUT_OF_RANGE]" in screen
    t.type_line("gibberish")
    screen = wait_prompt(t, 4)
    assert "'gibberish' is not something I understand." in screen
    t.type_line("?")
    screen = wait_prompt(t, 5)
    assert "QS / play QS     play the queen of spades" in screen
    t.type_line("bid 3")
    screen = wait_prompt(t, 6, also="Hand 1 result")
    assert "You bid 3." in t.transcript()
    assert "Bidding closed: contracts N/S (you) " in t.transcript()

    _, refusals = play_out_the_hand(t, 5)
    assert refusals, "no card in hand was ever illegal to play"
    assert "[MUST_FOLLOW_SUIT]" in refusals[0] or "[SPADES_NOT_BROKEN]" in refusals[0]
    assert "Rule: " in refusals[0]

    screen = t.wait_for("Press Enter for hand 2")
    transcript = t.transcript()
    assert len(re.findall(r"^You (?:play|lead) ", transcript, re.MULTILINE)) == 13
    assert len(re.findall(r"wins? trick \d+ with", transcript)) == 13
    result = screen[screen.index("Hand 1 result") :]
    # Each side: its seats' bids (tricks won), its tricks against its contract.
    ns = re.search(
        r"^N/S \(you\)\s+You 3 \((\d+)\)\s+(\d+)/(\d+)\s.*\n\s+Bot 2 (\d+|nil) \((\d+)\)$",
        result,
        re.M,
    )
    assert ns is not None, result
    mine, won, contract, partner_bid, partner_won = ns.groups()
    assert int(won) == int(mine) + int(partner_won)
    assert int(contract) == 3 + (0 if partner_bid == "nil" else int(partner_bid))
    assert re.search(r"^E/W\s+Bot 1 (\d+|nil) \(\d+\).*\n\s+Bot 3 (\d+|nil) \(\d+\)$", result, re.M)
    for column in ("Tricks", "Contract", "Bags", "Score", "Bags total"):
        assert column in result

    t.type_line("q")
    assert t.wait_for_exit() == 0
    assert "You left the game." in t.transcript()
    for pid in servers:  # the embedded server is gone
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_create_on_a_server_leave_and_rejoin(harness: Harness, terminals: list[Terminal]) -> None:
    base = ["play", "--address", harness.address, "--pace-ms", "0"]
    t = Terminal(
        [*base, "--operator-token", harness.operator_token, "--seed", "4", "--bots", "easy"]
    )
    terminals.append(t)
    screen = wait_prompt(t, 1)
    created = re.search(
        r"^Match (\S+) created; your seat token is:\n(\S+)$", t.transcript(), re.MULTILINE
    )
    assert created is not None, t.transcript()
    match_id, token = created.groups()
    assert token.startswith(match_id + ".")
    assert "Your bid" in screen
    t.type_line("q")
    assert t.wait_for_exit() == 0
    text = t.transcript()
    assert "You left the table: a bot plays your seat until you come back." in text
    back = text.split("To come back:\n", 1)[1].splitlines()[0]
    assert back == f"spades play --address {harness.address} --match {match_id} --token {token}"

    # The command it printed comes back to the seat. Bots do not wait here
    # (serve.py runs them without a delay): the one that took the seat has
    # played the match out, so coming back shows how it ended.
    run(until_over(harness, match_id))
    t2 = Terminal(back.split()[1:])
    terminals.append(t2)
    assert t2.wait_for_exit() == 0
    assert re.search(
        r"The match is over: .* Final score: N/S \(you\) -?\d+, E/W -?\d+\.",
        " ".join(t2.transcript().split()),
    )


async def until_over(harness: Harness, match_id: str, timeout: float = HAND_S) -> None:
    async with sc.connect(harness.address, operator_token=harness.operator_token) as c:
        async with asyncio.timeout(timeout):
            while (await c.get_match(match_id)).phase != pb.PHASE_MATCH_OVER:
                await asyncio.sleep(0.1)


def test_join_a_match_with_its_seat_token(harness: Harness, terminals: list[Terminal]) -> None:
    """A match created elsewhere (here by the client API) waits for its human seat."""

    async def create() -> tuple[str, str]:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as c:
            created = await c.create_match(
                ruleset=pb.Ruleset(preset="german"),  # four players, each alone; jokers
                seats=[*sc.bots(2, pb.BOT_LEVEL_EASY), sc.human("Juno"), sc.bot("Rex")],
                seed=21,
            )
            return created.match.match_id, sc.seat_token(created, 2)

    match_id, token = run(create())
    t = Terminal(
        [
            "play",
            "--address",
            harness.address,
            "--match",
            match_id,
            "--token",
            token,
            "--pace-ms",
            "0",
        ]
    )
    terminals.append(t)
    screen = wait_prompt(t, 1)
    assert "You are Juno (South, you)" in t.transcript()
    assert "Juno (South, you)" in screen and "Rex (West) [bot]" in screen
    # Cutthroat: a score per player, and no nil (the german preset's minimum bid is 1).
    assert re.search(r"Score: Bot 1 0 \(0 bags\)   Bot 2 0 \(0 bags\)   You 0", screen), screen
    assert "or nil" not in last_line_with(screen, "Accepted now:")
    t.type_line("nil")
    screen = wait_prompt(t, 2)
    assert "[BID_OUT_OF_RANGE]" in screen or "[NIL_NOT_ALLOWED]" in screen
    t.type_line("2")
    screen = wait_prompt(t, 3, also="Hand 1 result")
    assert "You bid 2." in t.transcript()
    t.type_line("q")
    assert t.wait_for_exit() == 0
    assert "To come back:" in t.transcript()


def test_usage_errors_say_what_to_do(terminals: list[Terminal]) -> None:
    t = Terminal(["play", "--address", "127.0.0.1:1", "--match", "abc"])
    terminals.append(t)
    assert t.wait_for_exit() == 2
    assert "--match and --token go together" in t.transcript()
    t = Terminal(["play", "--set", "jokers=maybe"])
    terminals.append(t)
    assert t.wait_for_exit() == 2
    assert "--set jokers: true or false, not 'maybe'" in t.transcript()
    t = Terminal(["play", "--bots", "easy,hard"])
    terminals.append(t)
    assert t.wait_for_exit() == 2
    assert "--bots: this table has 3 bot seats, --bots gives 2" in t.transcript()


def test_without_the_server_package_it_says_how_to_install_it(tmp_path: Path) -> None:
    """A Python where spades_server cannot be found: play explains, and exits 2."""
    import subprocess
    import sys

    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'spades_server' else real(n, *a)\n"
        "from spades_client.terminal.cli import main\n"
        "sys.exit(main(['play']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, COLUMNS="200"),
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "needs the spades_server package" in out
    assert "make install" in out and "--address HOST:PORT" in out


def test_ctrl_c_stops_the_game_and_its_server(terminals: list[Terminal]) -> None:
    t = Terminal(["play", "--pace-ms", "0", "--seed", "5"])
    terminals.append(t)
    wait_prompt(t, 1)
    assert t.child.pid is not None
    servers = children_of(t.child.pid)
    assert servers
    t.child.sendintr()
    assert t.wait_for_exit() == 130
    assert t.screen().rstrip().endswith("Interrupted.")
    for pid in servers:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def gone(pid: int, timeout: float = 15.0) -> bool:
    """Whether process ``pid`` has ended (or is a zombie) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ") Z " in Path(f"/proc/{pid}/stat").read_text():
                return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGKILL])
def test_no_server_outlives_the_game(signum: int, terminals: list[Terminal]) -> None:
    """The terminal closed (SIGHUP), SIGTERM, even SIGKILL: the embedded server stops."""
    t = Terminal(["play", "--pace-ms", "0", "--seed", "5"])
    terminals.append(t)
    wait_prompt(t, 1)
    assert t.child.pid is not None
    servers = children_of(t.child.pid)
    assert servers
    try:
        t.child.kill(signum)
        status = t.wait_for_exit()
        if signum != signal.SIGKILL:
            assert status == 128 + signum
        for pid in servers:
            assert gone(pid), f"server {pid} still running after spades got {signum!r}"
    finally:
        for pid in servers:  # whatever happened, none is left behind
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_the_bots_play_at_the_pace_asked_for(terminals: list[Terminal]) -> None:
    """Each action of another seat stays on the screen at least --pace-ms before the next."""
    pace_s = 0.25
    t = Terminal(["play", "--pace-ms", str(int(pace_s * 1000)), "--seed", "11"])
    terminals.append(t)
    wait_prompt(t, 1)
    t.type_line("bid 3")
    started = time.monotonic()
    screen = wait_prompt(t, 2)
    elapsed = time.monotonic() - started
    after = screen[screen.rindex("You bid 3.") :]
    others = len(re.findall(r"^Bot \d (?:bids|plays|leads) ", after, re.M))
    assert others >= 3  # seed 11: North bids first, the three bots after
    assert elapsed >= others * pace_s * 0.9, (elapsed, others)
    t.type_line("q")
    assert t.wait_for_exit() == 0


def test_a_hand_goes_on_across_dropped_connections(
    harness: Harness, terminals: list[Terminal]
) -> None:
    """serve.py's proxy cuts every connection twice mid-hand; the seat's session
    resumes by itself: no event is shown twice or missed, the hand ends."""
    t = Terminal(
        ["play", "--address", harness.address, "--operator-token", harness.operator_token,
         "--pace-ms", "0", "--seed", "12", "--no-pause"]
    )  # fmt: skip
    terminals.append(t)
    wait_prompt(t, 1)
    t.type_line("bid 2")
    answered, cuts = 1, 0
    while True:
        screen = wait_prompt(t, answered + 1, also="Hand 1 result")
        if "Hand 1 result" in screen:
            break
        if answered in (3, 7):
            assert harness.cut() >= 1
            cuts += 1
        card = last_line_with(screen, "You may play (in [ ] above):").split(":", 1)[1].split()[0]
        t.type_line(card)
        answered += 1
    assert cuts == 2
    text = t.transcript()
    assert len(re.findall(r"^You (?:play|lead) ", text, re.M)) == 13
    for n in range(1, 14):
        assert len(re.findall(rf"wins? trick {n} with", text)) == 1, n
    t.type_line("q")
    assert t.wait_for_exit() == 0


def test_a_turn_timer_bot_standing_in_is_shown_at_once(
    harness: Harness, terminals: list[Terminal]
) -> None:
    """The prompt waits; the match's turn timer hands the seat to a bot: the
    screen says so without waiting for a key, and follows the bot's play."""

    async def create() -> tuple[str, str]:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as c:
            created = await c.create_match(
                ruleset=pb.Ruleset(target_score=50),
                seats=[sc.human("Sam"), *sc.bots(3)],
                seed=13,
                turn_timer_ms=1000,
            )
            return created.match.match_id, sc.seat_token(created, 0)

    match_id, token = run(create())
    t = Terminal(["play", "--address", harness.address, "--match", match_id, "--token", token,
                  "--pace-ms", "0", "--no-pause"])  # fmt: skip
    terminals.append(t)
    wait_prompt(t, 1)
    t.wait_for("A bot plays for you (out of time): act at your turn to take the seat back.", 20)
    # The bot stands in for the rest of the match (it has no delay here).
    assert t.wait_for_exit(HAND_S) == 0
    assert re.search(r"Match over after \d+ hands?", " ".join(t.transcript().split()))
