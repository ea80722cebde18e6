"""Every variant's actions typed at ``spades play``: a whole hand of each, on
the embedded server, answering each prompt the way its screen says."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from pty_screen import Terminal, last_line_with
from test_terminal_play import hand_cards, typed, wait_prompt


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for t in opened:
        t.close()


def answer(screen: str, turn: int, *, high_bid: bool) -> str:
    """What a person would type at this prompt, read off the screen."""
    prompt = screen.rstrip().splitlines()[-1]
    if prompt.startswith("Your bid"):
        accepted = last_line_with(screen, "Accepted now:")
        if "blind nil" in accepted:
            return "blind nil"
        m = re.search(r"a bid (\d+)-(\d+)|a bid of (\d+)|`bid (\d+)`", accepted)
        if m is None:
            return "nil"
        return f"bid {m.group(2) if high_bid and m.group(2) else next(g for g in m.groups() if g)}"
    if prompt.startswith("Exchange?"):
        return "exchange"
    if prompt.startswith("Cards to pass"):
        m = re.search(r"Choose (\d+) card", screen)
        assert m is not None, screen
        cards, _ = hand_cards(last_line_with(screen, "Your hand:"))
        return "pass " + " ".join(typed(c) for c in cards[: int(m.group(1))])
    if prompt.startswith("Trump suit"):
        return "trump H"
    if prompt.startswith("Keep or discard"):
        return "keep" if turn % 2 else "discard"
    if prompt.startswith("Your card"):
        return last_line_with(screen, "You may play (in [ ] above):").split(":", 1)[1].split()[0]
    raise AssertionError(f"an unknown prompt: {prompt!r}\n{screen}")


def play_a_hand(args: list[str], opened: list[Terminal], *, high_bid: bool = False) -> str:
    t = Terminal(["play", "--pace-ms", "0", "--seed", "5", *args])
    opened.append(t)
    for answered in range(200):  # bounded: at most 13 draws, a bid, 18 cards and a few more
        screen = wait_prompt(t, answered + 1, also="Hand 1 result")
        if "Hand 1 result" in screen:
            break
        t.type_line(answer(screen, answered, high_bid=high_bid))
    t.wait_for("Press Enter for hand 2")
    text = t.transcript()
    t.type_line("q")
    assert t.wait_for_exit() == 0
    assert "Refused" not in text  # every answer read off the screen was legal
    return text


def plays(text: str) -> int:
    return len(re.findall(r"^You (?:play|lead) ", text, re.M))


def test_blind_nil_with_the_optional_exchange(terminal: list[Terminal]) -> None:
    text = play_a_hand(["--preset", "polish", "--set", "blind_nil_deficit=0"], terminal)
    assert "Your hand: face down (you have not looked at your cards)" in text
    assert "Accepted now: `blind nil`" not in text  # backticks are styling, not text
    assert "Accepted now: blind nil; look (see your cards)." in text
    assert "You bid blind nil." in text
    assert "You take the exchange." in text
    assert re.search(r"^You passed \S+ \S+ to Bot 2\.$", text, re.M)
    assert re.search(r"^Bot 2 passed \S+ \S+ to you\.$", text, re.M)
    assert plays(text) == 13
    assert re.search(r"You blind nil \(\d+\)", text)  # in the hand's result


def test_auction_trump(terminal: list[Terminal]) -> None:
    text = play_a_hand(["--set", "auction_trump=true"], terminal, high_bid=True)
    assert "You bid 13." in text
    assert "You are the highest bidder: name the trump suit, trump H." in text
    assert "You name hearts ♥ trump for this hand." in text
    assert "trump hearts ♥ (" in text  # the table's header from then on
    assert plays(text) == 13


def test_two_players_draw_their_hands(terminal: list[Terminal]) -> None:
    text = play_a_hand(
        ["--set", "players=2", "--set", "partnerships=false", "--set", "jokers=true"], terminal
    )
    assert len(re.findall(r"^You keep \S+ and discard \S+\.$", text, re.M)) == 13
    assert len(re.findall(r"^Bot 1 draws \(cards unseen\)\.$", text, re.M)) == 13
    assert "The top card of the stock is " in text
    assert not re.search(r"^Bot 1 keeps", text, re.M)  # the other player's cards stay hidden
    assert plays(text) == 13


@pytest.mark.parametrize(("players", "cards"), [(3, 18), (5, 10)])
def test_cutthroat_tables_of_three_and_five(
    players: int, cards: int, terminal: list[Terminal]
) -> None:
    args = ["--set", f"players={players}", "--set", "partnerships=false", "--set", "jokers=true"]
    text = play_a_hand(args, terminal)
    assert plays(text) == cards
    score = last_line_with(text, "Score:")
    assert score.count("bag") == players  # a score per player


def test_suicide(terminal: list[Terminal]) -> None:
    text = play_a_hand(["--set", "suicide=true"], terminal)
    bid = re.search(r"^You bid (nil|\d+)\.$", text, re.M)
    assert bid is not None
    assert bid.group(1) == "nil" or int(bid.group(1)) >= 4
    assert plays(text) == 13


def test_deuces_high_with_jokers(terminal: list[Terminal]) -> None:
    text = play_a_hand(["--set", "jokers=true", "--set", "deuces_high=true"], terminal)
    assert plays(text) == 13
    assert "2♣" not in text and "2♥" not in text  # out of the deck
