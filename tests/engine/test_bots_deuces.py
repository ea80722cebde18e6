"""The bots under deuces high (RULES.md 3.1): they play the table on a virtual
deck where the 2 of diamonds and the 2 of spades are the top spades below the
jokers (bots/deuces.py).  Checked here: the renumbering is the trump order,
the kernel plays the virtual deck exactly as the engine plays the real one,
and each level bids and plays the deuces as the top spades they are."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from rules_helpers import deal

from spades_engine import Bid, Match, Play, Ruleset, parse_card, preset
from spades_engine.actions import Action
from spades_engine.bots import BOTS
from spades_engine.bots.determinize import knowledge_from_view, sample_deal
from spades_engine.bots.deuces import TO_REAL, TO_VIRTUAL, as_virtual, virtual_mask
from spades_engine.bots.hand_eval import expected_tricks
from spades_engine.cards import SPADE_MASK, SUIT_MASKS, mask_of, parse_hand
from spades_engine.events import TrickWon
from spades_engine.kernel import SimState, legal_mask, playout_random, trick_winner
from spades_engine.ruleset import SpadesBroken
from spades_engine.view import SeatView

DEUCES = preset("classic", jokers=True, deuces_high=True)
LEVELS = ("easy", "normal", "hard", "expert")
SMART = ("normal", "hard", "expert")

TRUMP_ORDER = "3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS 2S 2D LJ BJ"
"""RULES.md 3.1, lowest first."""


def test_the_virtual_deck_numbers_the_spades_in_the_deuces_trump_order() -> None:
    spades = [TO_VIRTUAL[parse_card(name)] for name in TRUMP_ORDER.split()]
    assert spades == list(range(48, 64))  # one suit, rank order = index order
    deck = DEUCES.deck_mask
    for c in range(64):
        if deck >> c & 1:
            assert TO_REAL[TO_VIRTUAL[c]] == c
            if c >> 4 != 3 and c != parse_card("2D"):
                assert TO_VIRTUAL[c] == c  # side suits keep their cards
    virtual = virtual_mask(deck)
    assert virtual.bit_count() == 52 and (virtual & SPADE_MASK).bit_count() == 16
    assert all((virtual & SUIT_MASKS[s]).bit_count() == 12 for s in range(3))


def test_a_virtual_view_keeps_the_position_and_renumbers_every_card() -> None:
    m = Match(DEUCES, seed=4)
    for _ in range(4):
        m.apply(m.to_act, Bid(3))
    for _ in range(6):
        m.apply(m.to_act, m.legal_actions(m.to_act)[0])
    view = m.view(m.to_act)
    v = as_virtual(view)
    assert v.hand is not None and view.hand is not None
    assert sorted(TO_REAL[c] for c in v.hand) == sorted(view.hand)
    assert [TO_REAL[c] for c in v.trick] == list(view.trick)
    assert {TO_REAL[a.card] for a in v.legal_actions if isinstance(a, Play)} == {
        a.card for a in view.legal_actions if isinstance(a, Play)
    }
    assert v.rules.deck_mask == virtual_mask(DEUCES.deck_mask)
    assert v.rules == DEUCES and v.scores == view.scores and v.bids == view.bids


def _virtual_state(view: SeatView, m: Match) -> SimState:
    hands = [virtual_mask(h) for h in m.state.hand.hands]
    v = as_virtual(view)
    return SimState(
        hands,
        v.leader,
        v.tricks_won,
        v.trick,
        v.spades_broken,
        trumping=v.rules.spades_broken is SpadesBroken.TRUMPING,
    )


@pytest.mark.parametrize("broken_by", ["any_spade", "trumping"])
def test_the_kernel_plays_the_virtual_deck_as_the_engine_plays_deuces_high(
    broken_by: str,
) -> None:
    """Random legal play of whole hands: at every card the kernel's legal cards on
    the renumbered position are the engine's, renumbered, and every trick goes
    to the seat the engine gives it to."""
    rules = DEUCES.replace(spades_broken=broken_by)
    rng = random.Random(broken_by)
    tricks = 0
    for _ in range(40):
        m = Match(rules, seed=rng.getrandbits(32))
        for _ in range(4):
            m.apply(m.to_act, Bid(3))
        while m.phase.name == "PLAYING":
            seat = m.to_act
            legal = [a.card for a in m.legal_actions(seat) if isinstance(a, Play)]
            st = _virtual_state(m.view(seat), m)
            assert legal_mask(st) == virtual_mask(mask_of(legal))
            c = rng.choice(legal)
            trick = [*st.trick, TO_VIRTUAL[c]]
            for e in m.apply(seat, Play(c)):
                if isinstance(e, TrickWon):
                    assert trick_winner(st.leader, trick, 4) == e.winner
                    tricks += 1
    assert tricks == 40 * 13


def test_random_playouts_reach_the_top_spade() -> None:
    """The kernel's card-by-card playout handles spade rank 15 (the Big Joker
    of the virtual deck): the hand ends with every trick counted."""
    rng = random.Random(3)
    for _ in range(200):
        m = Match(DEUCES, seed=rng.getrandbits(32))
        hands = [virtual_mask(h) for h in m.state.hand.hands]
        won = playout_random(SimState(hands, 1), rng.random)
        assert sum(won) == 13
        holder = next(s for s, h in enumerate(hands) if h >> 63 & 1)
        assert won[holder] >= 1  # the Big Joker takes the trick it is played to


def test_sampled_deals_of_the_virtual_deck_deal_every_unseen_card() -> None:
    m = Match(DEUCES, seed=9)
    for _ in range(4):
        m.apply(m.to_act, Bid(3))
    for _ in range(9):
        m.apply(m.to_act, m.legal_actions(m.to_act)[-1])
    v = as_virtual(m.view(m.to_act))
    k = knowledge_from_view(v)
    rng = random.Random(1)
    for _ in range(100):
        hands = sample_deal(k, rng)
        assert sum(hands) == k.unseen | k.hand  # every unseen card, the top spade too
        assert [h.bit_count() for h in hands] == list(v.hand_sizes)


# -- bidding and play --------------------------------------------------------------------

# Seat 0 leads hearts; seat 1 (void in hearts) holds the 2 of diamonds and
# clubs; seat 2 the spades 3..A and the ace of diamonds, no heart; seat 3 the
# last hearts and diamonds.
VOID_DEAL = deal(
    "5H 7H 8H 9H TH JH QH KH AH BJ LJ 2S 3D",
    "2D 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS AD",
    "3H 4H 6H 4D 5D 6D 7D 8D 9D TD JD QD KD",
)


def _decide(level: str, m: Match) -> Action:
    view = m.view(m.to_act)
    action = BOTS[level](view, 1, 60)
    assert action in view.legal_actions
    return action


def _played(level: str, m: Match) -> str:
    action = _decide(level, m)
    assert isinstance(action, Play), action
    return str(action).removeprefix("play ")


def _after(bids: list[int], plays: str) -> Match:
    m = Match(DEUCES, deals=[VOID_DEAL], dealer=3)
    for b in bids:
        m.apply(m.to_act, Bid(b))
    for name in plays.split():
        m.apply(m.to_act, Play(parse_card(name)))
    return m


@pytest.mark.parametrize("level", ["normal", "hard"])
def test_trumps_a_heart_lead_with_the_two_of_diamonds(level: str) -> None:
    # 5H led; seat 1, void in hearts and short of its contract, holds the 2D and
    # clubs.  The 2D wins this trick for sure (seat 2's spades are below it, seat
    # 3 must follow hearts), while later seat 0's jokers could draw it.
    m = _after([4, 4, 3, 2], "5H")
    assert m.to_act == 1
    assert _played(level, m) == "2D"


@pytest.mark.parametrize("level", LEVELS)
def test_a_nil_never_trumps_with_the_two_of_diamonds(level: str) -> None:
    m = _after([4, 0, 3, 2], "5H")
    assert m.to_act == 1
    assert _played(level, m) != "2D"  # any club loses; the 2D is a spade and wins


TOP_SPADES = "BJ LJ 2D 2S 3C 4C 5C 6C 3D 4D 5D 3H 4H"


@pytest.mark.parametrize("level", LEVELS)
def test_the_deuces_and_the_jokers_are_bid_as_four_sure_tricks(level: str) -> None:
    rest = parse_hand(TOP_SPADES)
    others = [c for c in range(64) if DEUCES.deck_mask >> c & 1 and not rest >> c & 1]
    hands = [parse_hand(TOP_SPADES), *(mask_of(others[i::3]) for i in range(3))]
    m = Match(DEUCES, deals=[[sorted(_cards(h)) for h in hands]], dealer=3)
    action = _decide(level, m)
    assert isinstance(action, Bid) and action.tricks >= 4, action


def _cards(mask: int) -> list[int]:
    return [c for c in range(64) if mask >> c & 1]


def test_the_trick_estimate_sees_the_deuces_as_top_spades() -> None:
    hand = parse_hand(TOP_SPADES)
    seen = as_virtual(Match(DEUCES, deals=[_deal_with(hand)], dealer=3).view(0))
    assert seen.hand is not None
    aware = expected_tricks(mask_of(seen.hand), seen.rules)
    unaware = expected_tricks(hand, DEUCES)
    assert aware >= 3.8 > unaware + 1, (aware, unaware)


def _deal_with(hand: int) -> list[list[int]]:
    others = [c for c in range(64) if DEUCES.deck_mask >> c & 1 and not hand >> c & 1]
    return [_cards(hand), *(others[i::3] for i in range(3))]


# -- measured: the renumbering is worth points --------------------------------------------


def _duplicate(
    a: Callable[..., Action], b: Callable[..., Action], rules: Ruleset, hands: int
) -> float:
    """A's hand points minus B's per hand, the same deals played with the sides swapped."""
    total = 0
    for a_side in (0, 1):
        deals = random.Random(11)
        pts = [0, 0]
        for _ in range(hands):
            m = Match(rules, seed=deals.getrandbits(32))
            while not m.state.results:
                seat = m.to_act
                bot = a if rules.side_of(seat) == a_side else b
                m.apply(seat, bot(m.view(seat), len(m.actions), 0))
            for side in m.state.results[0]:
                pts[side.side] += side.hand_points
        total += pts[a_side] - pts[1 - a_side]
    return total / (2 * hands)


def test_hard_on_the_virtual_deck_beats_hard_reading_the_real_cards(
    figures: Callable[[str], None],
) -> None:
    aware = BOTS["hard"]
    unaware = aware.__wrapped__  # type: ignore[attr-defined]  # functools.wraps keeps it
    gain = _duplicate(aware, unaware, DEUCES, 150)
    lines: list[str] = []
    lines.append(f"deuces high, 150 hands each way: aware Hard - unaware Hard {gain:+.1f} per hand")
    figures("\n".join(lines))
    assert gain > 0
