"""RULES.md §3 variants: jokers, 3 and 5 players, first lead, nil not allowed,
cutthroat, thirteen bid, target score."""

from __future__ import annotations

import pytest
from rules_helpers import (
    FULL_DECK,
    act,
    autoplay_hand,
    bid_all,
    controlled_deal,
    controlled_match,
    deal,
    names,
    of_type,
    play_hand,
    reject,
)

from spades_engine import Bid, Match, PassCards, Phase, Play, Reason, parse_card, preset
from spades_engine.cards import cards_of

# -- jokers ------------------------------------------------------------------

JOKERS = preset("classic", jokers=True)
# seat 0: Big Joker + hearts; seat 1: Little Joker + clubs; seat 2: 2H +
# diamonds; seat 3: every spade.  (No 2C or 2D with jokers at four.)
JOKER_DEAL = deal(
    "BJ AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H",
    "LJ AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C",
    "2H AD KD QD JD TD 9D 8D 7D 6D 5D 4D 3D",
    "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
)


def joker_match(dealer: int) -> Match:
    m = Match(JOKERS, deals=[JOKER_DEAL], dealer=dealer)
    bid_all(m, [3, 3, 3, 3])
    return m


def test_four_player_jokers_deck_drops_the_2_of_clubs_and_2_of_diamonds() -> None:
    m = Match(JOKERS, seed=5)
    dealt = m.state.hand.dealt
    deck = set().union(*(names(cards_of(h)) for h in dealt))
    assert deck == set(FULL_DECK) - {"2C", "2D"} | {"LJ", "BJ"}
    assert [h.bit_count() for h in dealt] == [13] * 4


def test_big_joker_beats_little_joker_beats_the_ace_and_jokers_follow_a_spade_lead() -> None:
    m = joker_match(dealer=2)  # seat 3 leads, holding only spades
    act(m, "play AS")
    assert m.legal_actions(0) == [Play(parse_card("BJ"))]  # the joker is seat 0's only spade
    reject(m, 0, Play(parse_card("AH")), Reason.MUST_FOLLOW_SUIT)
    act(m, "play BJ")
    reject(m, 1, Play(parse_card("AC")), Reason.MUST_FOLLOW_SUIT)
    events = act(m, "play LJ", "play 2H")
    assert of_type(events, "TrickWon")[0].winner == 0


def test_little_joker_trumps_and_beats_the_ace_of_spades() -> None:
    m = joker_match(dealer=3)  # seat 0 leads
    reject(m, 0, Play(parse_card("BJ")), Reason.SPADES_NOT_BROKEN)  # a joker is a spade
    events = act(m, "play AH", "play LJ", "play 2H", "play AS")
    assert of_type(events, "TrickWon")[0].winner == 1
    assert m.view(None).spades_broken


def test_a_joker_discarded_on_a_club_lead_wins_as_trump() -> None:
    m = joker_match(dealer=0)  # seat 1 leads
    events = act(m, "play AC", "play AD", "play 2S", "play BJ")
    assert of_type(events, "TrickWon")[0].winner == 0


# -- three and five players --------------------------------------------------


@pytest.mark.parametrize(
    ("players", "deck", "size", "missing"),
    [(3, 54, 18, set()), (5, 50, 10, {"2C", "2D", "2H", "2S"})],
)
def test_three_and_five_player_decks(players: int, deck: int, size: int, missing: set[str]) -> None:
    rules = preset("german", players=players)
    assert rules.tricks_per_hand == size
    m = Match(rules, seed=9, dealer=0)
    dealt = m.state.hand.dealt
    assert [h.bit_count() for h in dealt] == [size] * players
    union = set().union(*(names(cards_of(h)) for h in dealt))
    assert len(union) == deck
    assert union == set(FULL_DECK) - missing | {"LJ", "BJ"}
    (started,) = of_type(m.opening_events, "HandStarted")
    assert started.hand_size == size
    assert m.legal_actions(1) == [Bid(n) for n in range(1, size + 1)]  # german: minimum 1
    reject(m, 1, Bid(size + 1), Reason.BID_OUT_OF_RANGE)
    # bidding goes round every seat, then the hand is `size` tricks of `players` cards
    order = []
    for _ in range(players):
        order.append(m.to_act)
        m.apply(m.to_act, Bid(1))
    assert order == [*range(1, players), 0]
    assert m.phase is Phase.PLAYING
    events = autoplay_hand(m)
    won = of_type(events, "TrickWon")
    assert len(won) == size
    assert all(len(t.cards) == players for t in won)
    (hs,) = of_type(events, "HandScored")
    assert len(hs.sides) == players
    assert sum(hs.tricks) == size
    assert len(m.scores) == players


# -- first lead ----------------------------------------------------------------


@pytest.mark.parametrize("dealer", range(4))
def test_first_lead_variants(dealer: int) -> None:
    d, _ = controlled_deal([4, 3, 3, 3])
    holder = next(s for s in range(4) if "2C" in names(d[s]))
    expected = {"left_of_dealer": (dealer + 1) % 4, "dealer": dealer, "two_of_clubs": holder}
    for rule, leader in expected.items():
        m = Match(preset("classic", first_lead=rule), deals=[d], dealer=dealer)
        assert m.to_act == (dealer + 1) % 4  # bidding always starts left of the dealer
        bid_all(m, [3, 3, 3, 3])
        assert m.to_act == leader, rule
        assert m.view(None).leader == leader


def test_two_of_clubs_first_lead_follows_the_card_through_a_blind_nil_exchange() -> None:
    rules = preset(
        "polish", first_lead="two_of_clubs", blind_nil_deficit=0, blind_nil_exchange_optional=False
    )
    m = Match(rules, seed=4, dealer=0)
    holder = next(s for s in range(4) if m.state.hand.dealt[s] >> parse_card("2C") & 1)
    partner = (holder + 2) % 4
    bids: list[int | str] = [3, 3, 3, 3]
    bids[holder] = "blind_nil"
    bid_all(m, bids)
    m.apply(holder, PassCards((parse_card("2C"), *cards_of(m.state.hand.hands[holder])[-1:])))
    m.apply(partner, PassCards(tuple(cards_of(m.state.hand.hands[partner])[-2:])))
    assert m.to_act == partner  # the 2 of clubs now sits with the partner


# -- nil not allowed, cutthroat, thirteen bid, target -----------------------------


def test_nil_not_allowed_makes_the_minimum_bid_one() -> None:
    m = Match(preset("classic", nil_allowed=False), seed=2, dealer=3)
    assert m.legal_actions(0)[0] == Bid(1)
    reject(m, 0, Bid(0), Reason.NIL_NOT_ALLOWED)


def test_cutthroat_scores_every_player_alone() -> None:
    m, [script] = controlled_match(preset("classic", partnerships=False), [[4, 3, 3, 3]])
    events = play_hand(m, [4, 0, 2, 4], script)
    (closed,) = of_type(events, "BiddingClosed")
    assert closed.contracts == (4, 0, 2, 4)
    # seat 1's failed nil costs only seat 1; seat 2's overtrick is its own bag
    assert m.scores == (40, -100 + 3, 21, -40)
    assert m.bags == (0, 3, 1, 0)


def test_cutthroat_nil_made() -> None:
    m, [script] = controlled_match(preset("classic", partnerships=False), [[5, 0, 4, 4]])
    play_hand(m, [5, 0, 4, 4], script)
    assert m.scores == (50, 100, 40, 40)


@pytest.mark.parametrize(
    ("thirteen", "bids", "tricks", "score_a", "bags_a"),
    [
        (True, [7, 1, 6, 1], [7, 0, 6, 0], 260, 0),  # 13 of 13: double
        (False, [7, 1, 6, 1], [7, 0, 6, 0], 130, 0),
        (True, [13, 1, 0, 1], [13, 0, 0, 0], 460, 0),  # contract and nil both doubled
        (True, [7, 1, 6, 1], [7, 1, 5, 0], -130, 0),  # 7 + 6 failed: set, no extra bags
        (True, [13, 1, 1, 1], [11, 0, 1, 1], -240, 3),  # own 13 failed: -140, 13 bags (-100)
        (False, [7, 1, 6, 1], [7, 1, 5, 0], -130, 0),
    ],
)
def test_thirteen_bid(
    thirteen: bool, bids: list[int], tricks: list[int], score_a: int, bags_a: int
) -> None:
    m, [script] = controlled_match(preset("classic", thirteen_bid=thirteen), [tricks])
    events = play_hand(m, bids, script)
    assert (m.scores[0], m.bags[0]) == (score_a, bags_a)
    assert m.scores[1] == -20  # team B bid 1 + 1 and took at most 1
    assert len(of_type(events, "HandScored")) == 1


def test_a_lower_target_ends_the_game_sooner() -> None:
    hands = [([0, 1, 10, 2], [0, 2, 10, 1])]  # A: nil + 10 = 200; B 3 of 3 = 30
    for target, over in ((200, True), (201, False)):
        m, [script] = controlled_match(
            preset("classic", target_score=target), [t for _, t in hands]
        )
        play_hand(m, hands[0][0], script)
        assert m.scores == (200, 30)
        assert m.is_over is over
