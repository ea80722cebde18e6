"""Helpers for the rule tests: hand-built deals, scripted bids and tricks, and a
check that a rejected action left the match exactly as it was."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from spades_engine import (
    LOOK,
    Bid,
    IllegalAction,
    Match,
    Play,
    Reason,
    Ruleset,
    parse_action,
    preset,
)
from spades_engine.cards import Card, card_name, cards_of, parse_card, parse_hand
from spades_engine.events import Event

FULL_DECK = [
    r + s for s in "CDHS" for r in ("2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A")
]


def cards(text: str) -> list[Card]:
    """``"AS KS 2C"`` -> the cards, lowest index first."""
    return cards_of(parse_hand(text))


def deal(*texts: str) -> list[list[Card]]:
    """One explicit deal: a string of card names per seat."""
    return [cards(t) for t in texts]


def names(cs: Iterable[int]) -> set[str]:
    return {card_name(c) for c in cs}


def act(m: Match, *steps: str) -> list[Event]:
    """Apply actions written as text (``"bid 3"``, ``"play QS"``, ``"2: look"``).

    Without a ``"N:"`` prefix the action is the seat to act's."""
    events: list[Event] = []
    for step in steps:
        head, sep, rest = step.partition(":")
        if sep:
            seat, action = int(head), parse_action(rest)
        else:
            seat, action = m.to_act, parse_action(step)
        events.extend(m.apply(seat, action))
    return events


def bid_all(m: Match, bids: Sequence[int | str]) -> list[Event]:
    """Every seat bids once, in turn order; ``bids`` is by seat (an int, or an
    action text such as ``"blind_nil"``).  A face-down seat bidding a number
    looks at its cards first."""
    events: list[Event] = []
    for _ in range(m.rules.players):
        seat = m.to_act
        b = bids[seat]
        if isinstance(b, int):
            if m.state.hand.face_down[seat]:
                events.extend(m.apply(seat, LOOK))
            events.extend(m.apply(seat, Bid(b)))
        else:
            events.extend(m.apply(seat, parse_action(b)))
    return events


def play_tricks(m: Match, tricks: Iterable[str]) -> list[Event]:
    """Play tricks written as their cards: whoever is to act plays the card of the
    trick it holds, so the text names the cards, not the order."""
    events: list[Event] = []
    for trick in tricks:
        wanted = [parse_card(x) for x in trick.split()]
        assert len(wanted) == m.rules.players, trick
        for _ in wanted:
            seat = m.to_act
            held = [c for c in wanted if m.state.hand.hands[seat] >> c & 1]
            assert len(held) == 1, f"seat {seat} holds {names(held)} of trick {trick!r}"
            events.extend(m.apply(seat, Play(held[0])))
    return events


_TIERS = (("A", "K", "Q", "J"), ("T", "9", "8", "7"), ("6", "5", "4", "3"))


def controlled_deal(tricks: Sequence[int]) -> tuple[list[list[Card]], list[str]]:
    """A four-seat deal and a play script in which seat ``s`` wins exactly
    ``tricks[s]`` tricks, whoever leads first, whatever breaks spades.

    Tricks 1-9 are club, diamond and heart rounds in which every seat follows
    suit and the holder of the top card wins.  Trick 10 is the four 2s: the
    winner of trick 9 leads the 2 of clubs and the seat with the most tricks,
    void in clubs, trumps it with the 2 of spades, which breaks spades under
    either ``spades_broken`` rule.  Tricks 11-13 are spade rounds, each seat
    following again, led by seats that now hold only spades.  When one seat
    takes all 13 tricks it leads every trick: the spade rounds come first, led
    from a hand of only spades, and the four 2s last, the 2 of spades winning.
    """
    assert len(tricks) == 4 and sum(tricks) == 13, tricks
    strong = max(range(4), key=lambda s: tricks[s])
    rounds = [s for s in range(4) for _ in range(tricks[s] - (1 if s == strong else 0))]
    # the leader of the 2s: another seat that wins a trick, else the strong seat itself
    leader = next((s for s in rounds if s != strong), strong)
    rounds.remove(leader)
    rounds.insert(8, leader)  # it wins trick 9, the last heart round
    held: list[list[str]] = [[] for _ in range(4)]
    script: list[str] = []
    for k in range(12):
        suit = "CDHS"[k // 3]
        order = [rounds[k]] + [s for s in range(4) if s != rounds[k]]
        trick = []
        for seat, rank in zip(order, _TIERS[k % 3], strict=True):
            held[seat].append(rank + suit)
            trick.append(rank + suit)
        script.append(" ".join(trick))
    others = [s for s in range(4) if s not in (leader, strong)]
    twos = [(strong, "2S")]
    if leader != strong:
        twos += [(leader, "2C"), *zip(others, ("2D", "2H"), strict=True)]
    else:
        twos += list(zip(others, ("2C", "2D", "2H"), strict=True))
    for seat, two in twos:
        held[seat].append(two)
    script.insert(9 if leader != strong else 12, "2C 2D 2H 2S")
    return [cards(" ".join(h)) for h in held], script


def play_hand(m: Match, bids: Sequence[int | str], script: Sequence[str]) -> list[Event]:
    """Bid, then play a whole scripted hand."""
    return bid_all(m, bids) + play_tricks(m, script)


def controlled_match(
    rules: Ruleset, per_hand_tricks: Sequence[Sequence[int]], dealer: int = 0
) -> tuple[Match, list[list[str]]]:
    """A match whose first hands are controlled deals; returns it with the scripts."""
    deals, scripts = [], []
    for t in per_hand_tricks:
        d, s = controlled_deal(t)
        deals.append(d)
        scripts.append(s)
    return Match(rules, deals=deals, dealer=dealer, seed=1), scripts


def autoplay_hand(m: Match) -> list[Event]:
    """Finish the current hand with the first legal action of the seat to act
    (face-down seats look first)."""
    number = m.hand_number
    events: list[Event] = []
    while not m.is_over and m.hand_number == number:
        seat = m.to_act if m.to_act >= 0 else m.seats_to_act()[0]
        legal = m.legal_actions(seat)
        action = next((a for a in legal if str(a) == "look"), legal[0])
        events.extend(m.apply(seat, action))
    return events


def frozen(m: Match) -> tuple[Any, ...]:
    """Everything a rejected action must leave alone: the full state, every
    seat's and a spectator's view, and the action record."""
    views = (*tuple(m.view(s) for s in range(m.rules.players)), m.view(None))
    return copy.deepcopy(m.state), views, list(m.actions)


def reject(m: Match, seat: Any, action: Any, reason: Reason) -> IllegalAction:
    """Assert that the action is refused for ``reason`` and changes nothing."""
    before = frozen(m)
    with pytest.raises(IllegalAction) as info:
        m.apply(seat, action)
    assert info.value.reason is reason, info.value
    assert frozen(m) == before
    return info.value


def of_type(events: Iterable[Event], name: str) -> list[Any]:
    return [e for e in events if type(e).__name__ == name]


def visible(events: Iterable[Event], seat: int | None, team: int | None) -> list[Event]:
    return [e for e in events if e.audience.visible_to(seat, team)]


# A deal for RULES.md §3 "spades broken by" (trumping only, seed 000). Seat 1
# leads (the classic table with dealer 0, or the polish one with dealer 1),
# wins three clubs (SPADE_LEAD_CLUBS) and then holds only spades; seat 2
# holds the ace and 2 of spades with hearts, seat 3 the 3 of spades with
# diamonds, seat 0 clubs and two hearts.
SPADE_LEAD_DEAL = deal(
    "JC TC 9C 8C 7C 6C 5C 4C 3C 2C 3H 2H 2D",
    "AC KC QC KS QS JS TS 9S 8S 7S 6S 5S 4S",
    "AS 2S AH KH QH JH TH 9H 8H 7H 6H 5H 4H",
    "3S AD KD QD JD TD 9D 8D 7D 6D 5D 4D 3D",
)
SPADE_LEAD_CLUBS = ["AC 4H 3D 2C", "KC 5H 4D 3C", "QC 6H 5D 4C"]


# Every preset plus the variants that change the shape of a hand: used by the
# round-trip tests (snapshots, records) that must hold for any table.
CONFIGS: dict[str, Ruleset] = {
    "classic": preset("classic"),
    "polish": preset("polish"),
    "polish-deficit0": preset("polish", blind_nil_deficit=0),
    "german": preset("german"),
    "german-3": preset("german", players=3),
    "german-5": preset("german", players=5),
    "bulgarian": preset("bulgarian"),
    "auction": preset("classic", auction_trump=True),
}
