"""The omniscient reference bot (bots/omniscient.py): a yardstick the tournament
resolves by name, never a level offered to a table's seats.

Legal actions in every preset and variant, that it is not in ``BOTS``, and that
it beats Hard clearly in a short duplicate run.
"""

from __future__ import annotations

import random

import pytest
from rules_helpers import CONFIGS

from spades_engine import BLIND_NIL, Match, Ruleset, preset
from spades_engine.bots import BOTS
from spades_engine.bots.omniscient import NAME, choices, omniscient
from spades_engine.kernel import SimState
from spades_engine.tournament import MATCH_BOTS, Config, bot_names, check_config, run

BUDGET_MS = 2
TABLES: dict[str, Ruleset] = {
    **CONFIGS,
    "two_players": preset("classic", players=2, partnerships=False, jokers=True),
    "german-2": preset("german", players=2),
    "suicide": preset("classic", suicide=True),
    "deuces_high": preset("classic", deuces_high=True, jokers=True),
    "tricks": preset("polish", scoring="tricks"),
    "blind_nil_exchange": preset("classic", blind_nil=True, blind_nil_deficit=0),
    "thirteen_trumping": preset("classic", thirteen_bid=True, spades_broken="trumping"),
}


def test_omniscient_is_not_a_level_a_table_can_offer() -> None:
    assert NAME == "omniscient"
    assert NAME not in BOTS
    assert all(bot is not omniscient for bot in BOTS.values())
    # the tournament knows it, as a bot that gets the match
    assert NAME in MATCH_BOTS and NAME in bot_names()
    check_config(Config(preset("classic"), (NAME,), ("hard",)))


@pytest.mark.parametrize("name", sorted(TABLES))
def test_omniscient_plays_only_legal_actions(name: str) -> None:
    """Omniscient and random-legal share the seats for three hands: the
    omniscient seats are half the table and not one side, and the random seats
    bid blind nil whenever they may, so the omniscient seats pass cards in the
    exchange as a blind nil bidder's partner."""
    rules = TABLES[name]
    m = Match(rules.replace(target_score=10**9, mercy_score=None), seed=len(name))
    omni = {0, 1} if rules.players >= 4 else {0}
    rng = random.Random(5)
    kinds: set[str] = set()
    while m.hand_number < 3 and not m.is_over:
        seats = m.seats_to_act()
        seat = m.to_act if m.to_act in seats else rng.choice(seats)
        legal = m.legal_actions(seat)
        if seat in omni:
            action = omniscient(m, seat, rng.getrandbits(32), BUDGET_MS)
            assert action in legal, (action, legal)
            kinds.add(type(action).__name__)
        else:
            action = BLIND_NIL if BLIND_NIL in legal else rng.choice(legal)
        m.apply(seat, action)
    assert {"Bid", "Play"} <= kinds
    if rules.players == 2:
        assert "Draw" in kinds
    if name == "blind_nil_exchange":
        assert "PassCards" in kinds
    print(f"{name}: {sorted(kinds)}")


def test_omniscient_names_trump_under_auction_trump() -> None:
    rules = preset("classic", auction_trump=True, target_score=10**9, mercy_score=None)
    named = 0
    for seed in range(6):
        m = Match(rules, seed=seed)
        while m.phase.value == "bidding":
            seat = m.to_act
            action = omniscient(m, seat, seed, BUDGET_MS)
            assert action in m.legal_actions(seat)
            named += type(action).__name__ == "NameTrump"
            m.apply(seat, action)
    assert named == 6


def test_equivalent_cards_are_tried_once() -> None:
    # Seat 0 holds 2C 3C 5C AC, seat 1 the 4C, seat 3 the KC: 2C and 3C are
    # one choice, 5C and AC two.  Once the KC is gone, 5C and AC are one too.
    hands = [_mask(0, 1, 3, 12), _mask(2, 16, 17, 18), _mask(19, 20, 21, 22), _mask(11, 32, 33, 34)]
    assert choices(SimState(hands, 0), hands[0]) == [0, 3, 12]
    hands[3] = _mask(32, 33, 34, 35)
    assert choices(SimState(hands, 0), hands[0]) == [0, 3]
    # a card of the trick in progress separates too: seat 3 led the 7C
    st = SimState([*hands[:3], _mask(32, 33, 34)], 3, trick=[5])
    assert choices(st, hands[0]) == [0, 3, 12]


def _mask(*cards: int) -> int:
    return sum(1 << c for c in cards)


def test_omniscient_beats_hard_in_a_short_duplicate_run() -> None:
    cfg = Config(preset("classic"), (NAME,), ("hard",), count=30, seed=1, budget_ms=5)
    results = run(cfg, jobs=1)
    mean = sum(r.diff for r in results) / len(results)
    print(f"\nomniscient - hard, 30 deals at 5 ms: {mean:+.2f} points per hand")
    assert mean > 0
