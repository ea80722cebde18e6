"""``spades me`` and ``spades top`` as a person uses them: the real command on
a pseudo-terminal (pty_screen.py), and through a pipe, against serve.py with
``--rating-min-games 1`` after the four players' rated match (rated.py):
the profile's ratings and record, a leaderboard page and its next and
previous pages (``n``, ``p``), the page around oneself, and what each says
when there is nothing to show."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator

import pytest
from harness import Harness, run
from pty_screen import SPADES, Terminal
from rated import RatedMatch, unique

import spades_client as sc

WAIT_S = 20.0
PAGE_PROMPT = "q quit >"


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for t in opened:
        t.close()


def spades(terminals: list[Terminal], args: list[str], credential: str) -> Terminal:
    t = Terminal(args, env={"SPADES_CREDENTIAL": credential})
    terminals.append(t)
    return t


def flat(t: Terminal) -> str:
    return " ".join(t.transcript().split())


def piped(args: list[str], credential: str) -> tuple[int, str]:
    """``spades ARGS`` with no terminal: its exit status and what it printed."""
    env = dict(os.environ, SPADES_CREDENTIAL=credential, COLUMNS="120")
    done = subprocess.run(
        [SPADES, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    return done.returncode, done.stdout


def ranks_of(rated_harness: Harness, match: RatedMatch) -> dict[str, int]:
    async def go() -> dict[str, int]:
        credential = match.player(0).credential
        async with sc.connect(rated_harness.address, credential=credential) as client:
            return {
                p.player_id: (await client.profile(p.player_id)).ratings[0].rank
                for p in match.players
            }

    return run(go())


def test_spades_me_shows_ratings_and_record(
    rated_harness: Harness, rated_match: RatedMatch, terminals: list[Terminal]
) -> None:
    ann = rated_match.player(0)
    rank = ranks_of(rated_harness, rated_match)[ann.player_id]
    won = ann.player_id in rated_match.winners
    t = spades(terminals, ["me", "--address", rated_harness.address], ann.credential)
    assert t.wait_for_exit() == 0
    text = t.transcript()
    assert f"Ann (player id {ann.player_id}, you) · last played " in text
    wl = "1/0" if won else "0/1"
    row = rf"^classic\s+#{rank}\s+-?\d+\.\d\d\s+\d+\.\d\d\s+\d+\.\d\d\s+1\s+{wl}$"
    assert re.search(row, text, re.M), text
    assert re.search(r"^\s*With humans\s+With bots$", text, re.M), text
    assert re.search(rf"^Matches \(won\)\s+1 \({int(won)}\)\s+0 \(0\)$", text, re.M), text
    assert re.search(r"^Contracts made\s+\d/1 \(\d+%\)\s+-$", text, re.M), text
    assert re.search(r"^Mean bid\s+3\.00\s+-$", text, re.M), text
    assert re.search(r"^Bags per hand\s+\d+\.\d\d \(\d+ in all\)\s+-$", text, re.M), text
    assert re.search(r"^Nils made/bid\s+0/0\s+-$", text, re.M), text
    assert re.search(r"^Blind nils made/bid\s+0/0\s+-$", text, re.M), text
    assert re.search(r"^Sets\s+[01]\s+-$", text, re.M), text
    # Another player's, by id: the same profile, not marked as yours.
    ben = rated_match.player(1)
    other = spades(
        terminals,
        ["me", "--player", ben.player_id, "--address", rated_harness.address],
        ann.credential,
    )
    assert other.wait_for_exit() == 0
    assert f"Ben (player id {ben.player_id}) · last played" in other.transcript()


def test_spades_me_before_any_match_says_so(
    rated_harness: Harness, terminals: list[Terminal]
) -> None:
    credential = rated_harness.credential(unique("newcomer"), "Newcomer")
    t = spades(terminals, ["me", "--address", rated_harness.address], credential)
    assert t.wait_for_exit() == 1
    text = flat(t)
    assert "You have not finished a match yet: a profile starts with the first one." in text
    assert "Play one with spades quickplay or spades lobby." in text
    nobody = unique("nobody")
    t = spades(
        terminals, ["me", "--player", nobody, "--address", rated_harness.address], credential
    )
    assert t.wait_for_exit() == 1
    assert f"{nobody} has not finished a match yet" in flat(t)
    missing = spades(terminals, ["me", "--address", rated_harness.address], "")
    assert missing.wait_for_exit() == 2
    assert "needs your player credential" in flat(missing)


def test_spades_top_pages_forward_and_back(
    rated_harness: Harness, rated_match: RatedMatch, terminals: list[Terminal]
) -> None:
    ann = rated_match.player(0)
    rank = ranks_of(rated_harness, rated_match)[ann.player_id]
    t = spades(
        terminals,
        ["top", "--page-size", "2", "--address", rated_harness.address],
        ann.credential,
    )
    t.wait_for(PAGE_PROMPT, WAIT_S)
    head = re.search(
        r"Leaderboard · classic · 1-2 of (\d+) players \(1 rated game or more", flat(t)
    )
    assert head is not None, t.transcript()
    total = int(head.group(1))
    assert total >= 4
    assert re.search(r"^\s*Rank\s+Player\s+Rating\s+μ\s+σ\s+Games\s+W/L$", t.screen(), re.M)
    assert re.search(r"^\s+1\s+\S+", t.screen(), re.M) and re.search(r"^\s+2\s+", t.screen(), re.M)
    assert "n next page, q quit >" in t.screen()
    if rank <= 2:
        assert re.search(rf"^\s+{rank}\s+Ann \(you\)\s", t.screen(), re.M), t.screen()
    t.type_line("n")
    t.wait_for(f"3-4 of {total} players", WAIT_S)
    t.wait_for(lambda _: flat(t).count(PAGE_PROMPT) >= 2, WAIT_S)
    assert re.search(r"^\s+3\s+\S+", t.screen(), re.M) and re.search(r"^\s+4\s+", t.screen(), re.M)
    last = t.transcript().rsplit("Leaderboard", 1)[1]
    assert "p previous page, q quit >" in last
    assert ("n next page, p previous page" in last) == (total > 4)
    t.type_line("sideways")
    t.wait_for("n, p or q.", WAIT_S)
    t.type_line("p")
    t.wait_for(lambda _: flat(t).count(f"1-2 of {total} players") >= 2, WAIT_S)
    t.wait_for(lambda _: flat(t).count(PAGE_PROMPT) >= 4, WAIT_S)
    t.type_line("p")
    t.wait_for("Nothing that way.", WAIT_S)
    t.type_line("q")
    assert t.wait_for_exit() == 0


def test_spades_top_around_me(
    rated_harness: Harness, rated_match: RatedMatch, terminals: list[Terminal]
) -> None:
    ranks = ranks_of(rated_harness, rated_match)
    dan = rated_match.player(3)
    rank = ranks[dan.player_id]
    t = spades(
        terminals,
        ["top", "--around", "me", "--page-size", "2", "--address", rated_harness.address],
        dan.credential,
    )
    t.wait_for(PAGE_PROMPT, WAIT_S)
    first = rank - (rank - 1) % 2
    assert f"Leaderboard · classic · {first}-" in flat(t)
    assert re.search(rf"^\s+{rank}\s+Dan \(you\)\s+-?\d+\.\d\d\s", t.screen(), re.M), t.screen()
    t.type_line("q")
    assert t.wait_for_exit() == 0


def test_spades_top_through_a_pipe_prints_the_next_pages_command(
    rated_harness: Harness, rated_match: RatedMatch
) -> None:
    cat = rated_match.player(2)
    address = rated_harness.address
    status, out = piped(["top", "--page-size", "2", "--address", address], cat.credential)
    assert status == 0 and "· 1-2 of " in out, out
    command = re.search(rf"Next page: spades top --page-size 2 --address {address} (.+)$", out)
    assert command is not None, out
    assert "Previous page" not in out
    status, second = piped(
        ["top", "--page-size", "2", "--address", address, *command.group(1).split()],
        cat.credential,
    )
    assert status == 0 and "· 3-4 of " in second, second
    assert "Previous page: spades top --page-size 2" in second


def test_spades_top_says_what_is_not_there(
    rated_harness: Harness, rated_match: RatedMatch, terminals: list[Terminal]
) -> None:
    credential = rated_match.player(1).credential
    address = rated_harness.address
    t = spades(terminals, ["top", "--pool", "nosuchpool", "--address", address], credential)
    assert t.wait_for_exit() == 1
    assert "No rating pool 'nosuchpool': pools are " in flat(t)
    nobody = unique("nobody")
    t = spades(terminals, ["top", "--around", nobody, "--address", address], credential)
    assert t.wait_for_exit() == 1
    text = flat(t)
    assert f"{nobody} is not on the classic leaderboard yet" in text
    assert "(it lists players with 1 rated game or more)" in text
    t = spades(
        terminals, ["top", "--pool", "polish", "--around", "me", "--address", address], credential
    )
    assert t.wait_for_exit() == 1
    assert "You are not on the polish leaderboard yet" in flat(t)
    t = spades(terminals, ["top", "--pool", "polish", "--address", address], credential)
    assert t.wait_for_exit() == 0
    assert "Leaderboard · polish · 0 players" in flat(t)
    assert "Nobody is on the polish leaderboard yet." in flat(t)
    t = spades(terminals, ["top", "--page-token", "bogus", "--address", address], credential)
    assert t.wait_for_exit() == 1
    assert "[BAD_PAGE_TOKEN]" in flat(t)
