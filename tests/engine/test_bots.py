"""The Easy, Normal and Hard bots (RULES.md §2).

Structure: a bot takes a ``SeatView`` and nothing else.  Behaviour: hand-built
positions (bids, nil, partner's winners, covering a nil, bags and sets).
Robustness: every level plays only legal actions across thousands of random
positions of every preset, with think-time figures printed.
"""

from __future__ import annotations

import random
import time
import typing
from collections.abc import Callable, Sequence

import pytest
from rules_helpers import CONFIGS, cards

from spades_engine import (
    Bid,
    Match,
    PassCards,
    Phase,
    Play,
    Ruleset,
    SeatView,
    card_name,
    parse_action,
    parse_card,
    preset,
)
from spades_engine.actions import Action, Draw
from spades_engine.bots import BOTS, Bot
from spades_engine.bots.hand_eval import TABLE_SCALE, table_scale
from spades_engine.cards import SPADES, Card, cards_of, parse_hand

LEVELS = ("easy", "normal", "hard")
SMART = ("normal", "hard")


# -- helpers -------------------------------------------------------------------------------


def fill_deal(rules: Ruleset, fixed: dict[int, str]) -> list[list[Card]]:
    """A deal in which each seat of ``fixed`` holds at least the cards named; the
    rest of the deck is dealt round robin to the seats that still need cards."""
    hands = {s: parse_hand(t) for s, t in fixed.items()}
    used = 0
    for m in hands.values():
        assert not used & m
        used |= m
    rest = cards_of(rules.deck_mask & ~used)
    out = [cards_of(hands.get(s, 0)) for s in range(rules.players)]
    seat = 0
    for c in rest:
        while len(out[seat]) >= rules.hand_size:
            seat = (seat + 1) % rules.players
        out[seat].append(c)
        seat = (seat + 1) % rules.players
    assert all(len(h) == rules.hand_size for h in out)
    return out


def position(
    rules: Ruleset,
    deal: Sequence[Sequence[Card]],
    dealer: int,
    bids: Sequence[int] = (),
    plays: str = "",
) -> Match:
    """A match after the given bids (in bidding order) and plays (card names in
    play order; whoever is to act holds the card)."""
    m = Match(rules, deals=[deal], dealer=dealer)
    for b in bids:
        m.apply(m.to_act, Bid(b))
    for name in plays.split():
        m.apply(m.to_act, Play(parse_card(name)))
    return m


def decide(level: str, m: Match, seat: int | None = None) -> Action:
    seat = m.to_act if seat is None else seat
    view = m.view(seat)
    action = BOTS[level](view, 1, 50)
    assert action in view.legal_actions
    return action


def played(level: str, m: Match) -> str:
    action = decide(level, m)
    assert isinstance(action, Play), action
    return str(action).removeprefix("play ")


CLASSIC = preset("classic")


# -- structure ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BOTS))
def test_a_bot_takes_the_seat_view_and_nothing_else(name: str) -> None:
    bot = BOTS[name]
    hints = typing.get_type_hints(bot)
    params = [p for p in hints if p != "return"]
    assert params == ["view", "seed", "budget_ms"], hints
    assert hints["view"] is SeatView
    assert hints["seed"] is int
    assert hints["budget_ms"] is int


@pytest.mark.parametrize("level", LEVELS)
def test_levels_are_registered_and_act_from_a_match_view(level: str) -> None:
    bot: Bot = BOTS[level]
    m = Match(CLASSIC, seed=11)
    for _ in range(60):  # a full bidding round and a few tricks
        seat = m.to_act
        view = m.view(seat)
        action = bot(view, 3, 10)
        assert action in view.legal_actions
        m.apply(seat, action)


# -- bidding -----------------------------------------------------------------------------------


@pytest.mark.parametrize("level", SMART)
def test_thirteen_spades_bid_thirteen(level: str) -> None:
    deal = fill_deal(CLASSIC, {1: "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S"})
    m = position(CLASSIC, deal, dealer=0)  # seat 1 bids first
    assert decide(level, m) == Bid(13)


def test_easy_bids_its_aces_and_kings() -> None:
    deal = fill_deal(CLASSIC, {1: "AS KH AD 2C 3C 4C 5C 6C 7C 8C 9C 2D 3D"})
    m = position(CLASSIC, deal, dealer=0)
    assert decide("easy", m) == Bid(3)
    # with no ace or king it still bids one: Easy never bids nil
    deal = fill_deal(CLASSIC, {1: "2S 3S 2H 3H 4H 5H 2D 3D 4D 5D 2C 3C 4C"})
    assert decide("easy", position(CLASSIC, deal, dealer=0)) == Bid(1)


LOW_HAND = "2S 3S 2H 3H 4H 5H 2D 3D 4D 5D 2C 3C 4C"


@pytest.mark.parametrize("level", SMART)
def test_a_hand_with_no_high_cards_and_short_spades_bids_nil(level: str) -> None:
    deal = fill_deal(CLASSIC, {1: LOW_HAND})
    assert decide(level, position(CLASSIC, deal, dealer=0)) == Bid(0)
    # beside a partner who bid 4 (seat 3 is seat 1's partner; dealer 2: 3 bids first)
    m = position(CLASSIC, deal, dealer=2, bids=[4, 3])
    assert m.to_act == 1
    assert decide(level, m) == Bid(0)


@pytest.mark.parametrize("level", SMART)
def test_no_nil_beside_a_partner_nil_nor_where_nil_is_not_allowed(level: str) -> None:
    deal = fill_deal(CLASSIC, {1: LOW_HAND})
    m = position(CLASSIC, deal, dealer=2, bids=[0, 3])  # the partner (3) bid nil
    assert decide(level, m) != Bid(0)
    german = preset("german")
    deal = fill_deal(german, {1: "3S 4S 3H 4H 5H 6H 3D 4D 5D 6D 3C 4C 5C"})
    action = decide(level, position(german, deal, dealer=0))
    assert isinstance(action, Bid)
    assert action.tricks >= 1


@pytest.mark.parametrize("level", LEVELS)
def test_the_ace_and_king_of_spades_never_bid_nil(level: str) -> None:
    deal = fill_deal(CLASSIC, {1: "AS KS 2H 3H 4H 5H 2D 3D 4D 5D 2C 3C 4C"})
    for dealer, bids in ((0, []), (2, [4, 3]), (2, [6, 5])):
        action = decide(level, position(CLASSIC, deal, dealer=dealer, bids=bids))
        assert isinstance(action, Bid)
        assert action.tricks >= 2


@pytest.mark.parametrize("level", LEVELS)
def test_bots_look_rather_than_bid_blind_nil_at_an_even_score(level: str) -> None:
    rules = preset("bulgarian")  # blind nil at any score: every seat starts face down
    m = Match(rules, seed=5)
    view = m.view(m.to_act)
    assert view.hand is None
    assert str(BOTS[level](view, 0, 10)) == "look"


@pytest.mark.parametrize("level", LEVELS)
def test_blind_nil_exchange_passes_high_from_the_nil_and_low_to_it(level: str) -> None:
    rules = preset("bulgarian", blind_nil_exchange=2)  # face down at any score
    deal = fill_deal(
        rules,
        {
            1: "AS KS AH 9H 8H 7H 6H 5D 4D 3D 7C 6C 5C",
            3: "2C 3C 2D 9D TD JD 2H 3H 4H TS JS QS 2S",
        },
    )
    m = Match(rules, deals=[deal], dealer=0)
    m.apply(1, parse_action("blind_nil"))
    for seat, tricks in ((2, 3), (3, 4), (0, 3)):
        m.apply(seat, parse_action("look"))
        m.apply(seat, Bid(tricks))
    assert m.state.hand.exchange_seats == (1, 3)
    nil_pass = decide(level, m, seat=1)
    partner_pass = decide(level, m, seat=3)
    assert isinstance(nil_pass, PassCards) and isinstance(partner_pass, PassCards)
    assert {card_name(c) for c in nil_pass.cards} == {"AS", "AH"}
    # the lowest cards, spades spared, the shorter suit first: 2C (of 2), 2H (of 3)
    assert {card_name(c) for c in partner_pass.cards} == {"2C", "2H"}


def _optional_exchange(nil_hand: str) -> Match:
    """Polish (the optional exchange), seat 1 holding ``nil_hand`` and bidding
    blind nil; bidding has just closed."""
    rules = preset("polish", blind_nil_deficit=0)
    m = Match(rules, deals=[fill_deal(rules, {1: nil_hand})], dealer=0)
    m.apply(1, parse_action("blind_nil"))
    for seat, tricks in ((2, 3), (3, 4), (0, 3)):
        m.apply(seat, parse_action("look"))
        m.apply(seat, Bid(tricks))
    assert m.seats_to_act() == [1]
    return m


@pytest.mark.parametrize("level", [*LEVELS, "expert"])
def test_a_blind_nil_takes_the_optional_exchange_to_shed_its_winners(level: str) -> None:
    m = _optional_exchange("AS KS AH 9H 8H 7H 6H 5D 4D 3D 7C 6C 5C")
    assert str(decide(level, m, seat=1)) == "exchange"


@pytest.mark.parametrize("level", [*SMART, "expert"])
def test_an_already_safe_blind_nil_declines_the_optional_exchange(level: str) -> None:
    m = _optional_exchange("2C 3C 4C 2D 3D 4D 2H 3H 4H 5H 2S 3S 5C")
    assert str(decide(level, m, seat=1)) == "no_exchange"


def test_easy_always_takes_the_optional_exchange() -> None:
    m = _optional_exchange("2C 3C 4C 2D 3D 4D 2H 3H 4H 5H 2S 3S 5C")
    assert str(decide("easy", m, seat=1)) == "exchange"


def test_the_table_scales_of_the_trick_estimate_are_current() -> None:
    for (players, jokers), scale in TABLE_SCALE.items():
        assert table_scale(players, jokers) == pytest.approx(scale, abs=0.005)


# -- play --------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", SMART)
def test_never_overtakes_the_partners_sure_winner(level: str) -> None:
    # seat 0 leads the ace of hearts; seat 2, its partner, holds the king and queen
    deal = fill_deal(CLASSIC, {0: "AH", 1: "2H", 2: "KH QH 3H"})
    m = position(CLASSIC, deal, dealer=3, bids=[3, 3, 3, 3], plays="AH 2H")
    assert played(level, m) == "3H"
    # last to play, the partner's queen is winning: keep the king
    deal = fill_deal(CLASSIC, {0: "KH 2H", 1: "3H", 2: "QH", 3: "4H"})
    m = position(CLASSIC, deal, dealer=0, bids=[3, 3, 3, 3], plays="3H QH 4H")
    assert m.to_act == 0
    assert played(level, m) == "2H"
    # void in hearts: discard, do not trump the partner's winner
    deal = fill_deal(
        CLASSIC, {0: "KC 2C 3C 4C 5C 6C 2D 3D 4D 5D 2S 3S 4S", 1: "3H", 2: "QH", 3: "4H"}
    )
    m = position(CLASSIC, deal, dealer=0, bids=[3, 3, 3, 3], plays="3H QH 4H")
    card = parse_card(played(level, m))
    assert card >> 4 != SPADES


@pytest.mark.parametrize("level", SMART)
def test_covers_the_partners_nil(level: str) -> None:
    # the nil (seat 0) leads the nine of hearts and is winning: its partner takes over
    deal = fill_deal(CLASSIC, {0: "9H", 1: "2H", 2: "AH TH 3H"})
    m = position(CLASSIC, deal, dealer=3, bids=[0, 3, 4, 3], plays="9H 2H")
    assert played(level, m) == "TH"
    # the nil plays last: its partner, second, plays its highest heart
    deal = fill_deal(CLASSIC, {1: "5H", 2: "KH 7H 3H", 3: "AH"})
    m = position(CLASSIC, deal, dealer=0, bids=[3, 4, 3, 0], plays="5H")
    assert m.to_act == 2
    assert played(level, m) == "KH"
    # void in the suit of the nil's winning card: trump it
    deal = fill_deal(CLASSIC, {0: "9H", 1: "2H", 2: "2C 3C 4C 5C 6C 7C 2D 3D 4D 5D 6D 7S 8S"})
    m = position(CLASSIC, deal, dealer=3, bids=[0, 3, 4, 3], plays="9H 2H")
    assert played(level, m) == "7S"


@pytest.mark.parametrize("level", SMART)
def test_a_nil_plays_its_highest_losing_card(level: str) -> None:
    deal = fill_deal(CLASSIC, {1: "QH", 2: "KH JH 9H 2H"})
    m = position(CLASSIC, deal, dealer=0, bids=[4, 0, 4, 3], plays="QH")
    assert played(level, m) == "JH"


# Seat 0 cashes two aces for its side's contract of 2; then seat 1 leads a low
# heart.  Seat 2 holds K 8 2 of hearts behind seat 1's nine.
BAGS_DEAL = [
    cards("AC KC AD KD 5H 6H 7H 3S 4S 5S 6S 7S 8S"),
    cards("2C QC JC 2D QD JD 9H TH JH QH 9S TS 2S"),
    cards("3C TC 9C 3D TD 9D KH 8H 2H 3H 4H JS QS"),
    cards("4C 5C 6C 7C 8C 4D 5D 6D 7D 8D AH KS AS"),
]
BAGS_PLAYS = "AC 2C 3C 4C AD 2D 3D 4D 5H 9H"


@pytest.mark.parametrize("level", SMART)
def test_ducks_bags_when_a_set_is_out_of_reach(level: str) -> None:
    # contract 1 + 1 made; the opponents need 2 of the last 11 tricks: no set
    m = position(CLASSIC, BAGS_DEAL, dealer=3, bids=[1, 1, 1, 1], plays=BAGS_PLAYS)
    assert m.to_act == 2
    assert played(level, m) == "8H"


def test_hard_plays_for_the_set_in_reach_and_normal_ducks() -> None:
    # the opponents bid 6 + 5 and need all 11 remaining tricks: one trick sets them
    m = position(CLASSIC, BAGS_DEAL, dealer=3, bids=[1, 6, 1, 5], plays=BAGS_PLAYS)
    assert played("hard", m) == "KH"
    assert played("normal", m) == "8H"


@pytest.mark.parametrize("level", SMART)
def test_wins_the_tricks_its_side_needs_cheaply(level: str) -> None:
    # last to play, the opponents winning with the nine: the ten, not the king
    deal = fill_deal(CLASSIC, {0: "KH TH 2H", 1: "5H", 2: "3H", 3: "9H"})
    m = position(CLASSIC, deal, dealer=0, bids=[4, 3, 4, 3], plays="5H 3H 9H")
    assert played(level, m) == "TH"
    # void and last: trump with the lowest spade that wins
    deal = fill_deal(
        CLASSIC, {0: "2C 3C 4C 5C 6C 7C 2D 3D 4D 5D 9S 6S 3S", 1: "5H", 2: "3H", 3: "9H"}
    )
    m = position(CLASSIC, deal, dealer=0, bids=[4, 3, 4, 3], plays="5H 3H 9H")
    assert played(level, m) == "3S"


def test_hard_does_not_beat_an_opponents_nil_winning_card() -> None:
    # seat 1 bid nil and its jack of hearts is winning; seat 2 has its contract
    # to play for but lets the nil take the trick
    deal = fill_deal(CLASSIC, {0: "5H", 1: "JH", 2: "AH KH 2H"})
    m = position(CLASSIC, deal, dealer=3, bids=[4, 0, 3, 4], plays="5H JH")
    card = parse_card(played("hard", m))
    assert card >> 4 == 2 and card < parse_card("JH")


# -- auction trump -----------------------------------------------------------------------------

AUCTION = preset("classic", auction_trump=True)


def _naming(hand: str, bids: Sequence[int] = (1, 1, 1, 5)) -> Match:
    """Seat 0 (the dealer, bidding last and highest) is to name trump holding ``hand``."""
    return position(AUCTION, fill_deal(AUCTION, {0: hand}), 0, bids)


@pytest.mark.parametrize("level", LEVELS)
def test_names_the_longest_suit_as_trump(level: str) -> None:
    m = _naming("AD KD QD 9D 5D 3D AS KS 2C 3C 4C 2H 3H")
    assert m.to_act == 0
    assert str(decide(level, m)) == "trump D"


@pytest.mark.parametrize("level", LEVELS)
def test_a_tie_in_length_names_the_stronger_suit(level: str) -> None:
    m = _naming("AH KH QH JH 2C 3C 4C 5C 2S 3S 2D 3D 4D")
    assert str(decide(level, m)) == "trump H"


def test_expert_names_a_long_strong_suit_by_its_search() -> None:
    # a contract of 10 that only eight top hearts as trump can make
    m = _naming("AH KH QH JH TH 9H 8H 7H", (1, 1, 1, 9))
    view = m.view(0)
    action = BOTS["expert"](view, 1, 100)
    assert str(action) == "trump H"


def test_as_spades_swaps_the_trump_suit_with_spades_in_every_card() -> None:
    from spades_engine.bots.trump import as_spades, swap_card, swap_mask

    m = _naming("AH KH QH JH TH 9H 8H 7H")
    m.apply(0, parse_action("trump H"))
    view = m.view(m.to_act)
    swapped = as_spades(view)
    assert swapped.trump == SPADES
    assert view.hand is not None and swapped.hand is not None
    assert {swap_card(c, 2) for c in view.hand} == set(swapped.hand)
    assert len(swapped.legal_actions) == len(view.legal_actions)
    assert swap_mask(swap_mask(0x1234_5678_9ABC_0DEF, 1), 1) == 0x1234_5678_9ABC_0DEF


@pytest.mark.parametrize("level", [*LEVELS, "expert"])
def test_every_level_plays_whole_legal_matches_with_auction_trump(level: str) -> None:
    rules = AUCTION.replace(target_score=150, mercy_score=-100)
    named: set[str] = set()
    for seed in range(2 if level == "expert" else 4):
        m = Match(rules, seed=seed)
        rng = random.Random(seed)
        while not m.is_over:
            seat = m.to_act if m.to_act >= 0 else m.seats_to_act()[0]
            view = m.view(seat)
            action = BOTS[level](view, rng.getrandbits(32), 2)
            assert action in view.legal_actions, (level, view, action)
            if str(action).startswith("trump"):
                named.add(str(action))
            m.apply(seat, action)
    assert named


# -- deuces high -------------------------------------------------------------------------------

DEUCES = preset("classic", jokers=True, deuces_high=True)


@pytest.mark.parametrize("level", [*LEVELS, "expert"])
def test_every_level_plays_whole_legal_matches_with_deuces_high(level: str) -> None:
    rules = DEUCES.replace(target_score=150, mercy_score=-100)
    for seed in range(2 if level == "expert" else 4):
        m = Match(rules, seed=seed)
        rng = random.Random(seed)
        while not m.is_over:
            seat = m.to_act
            view = m.view(seat)
            action = BOTS[level](view, rng.getrandbits(32), 2)
            assert action in view.legal_actions, (level, view, action)
            m.apply(seat, action)


# -- every position of every preset ---------------------------------------------------------------

POSITIONS_PER_CONFIG = 2500


def _drive(
    rules: Ruleset, rng: random.Random, visit: Callable[[Match, int], None], positions: int
) -> None:
    """Walk random matches, calling ``visit`` at every seat with a legal action,
    and move on with a random level's choice (or a random one) for a seat."""
    drivers = [*LEVELS, "random"]
    m = Match(rules, seed=rng.getrandbits(32))
    seen = 0
    while seen < positions:
        if m.is_over:
            m = Match(rules, seed=rng.getrandbits(32))
        seats = m.seats_to_act()
        for seat in seats:
            visit(m, seat)
            seen += 1
        seat = rng.choice(seats)
        m.apply(seat, BOTS[rng.choice(drivers)](m.view(seat), rng.getrandbits(32), 0))


def test_every_level_plays_only_legal_actions_in_every_preset(
    figures: Callable[[str], None],
) -> None:
    times: dict[str, list[int]] = {level: [] for level in LEVELS}
    kinds: dict[str, int] = {}

    def visit(m: Match, seat: int) -> None:
        view = m.view(seat)
        for level in LEVELS:
            t0 = time.perf_counter_ns()
            action = BOTS[level](view, 7, 0)
            times[level].append(time.perf_counter_ns() - t0)
            assert action in view.legal_actions, (m.rules, level, seat, action, view)
        for kind in {type(a).__name__ for a in view.legal_actions}:
            kinds[kind] = kinds.get(kind, 0) + 1

    for name, rules in CONFIGS.items():
        _drive(rules, random.Random(name), visit, POSITIONS_PER_CONFIG)

    # every kind of decision was met: bids, looks, blind nils, exchange decisions,
    # passes and plays
    assert {"Bid", "Look", "BlindNil", "ExchangeDecision", "PassCards", "NameTrump", "Play"} <= set(
        kinds
    ), kinds
    lines: list[str] = []
    lines.append(f"bot think time over {len(times['easy'])} positions of {len(CONFIGS)} rulesets:")
    for level, xs in times.items():
        xs.sort()
        p50, p99 = xs[len(xs) // 2] / 1e3, xs[len(xs) * 99 // 100] / 1e3
        lines.append(
            f"  {level:7s} p50 {p50:6.1f} us   p99 {p99:6.1f} us   max {xs[-1] / 1e3:7.1f} us"
        )
    figures("\n".join(lines))


def _duplicate(a: str, b: str, rules: Ruleset, hands: int, seed: int) -> float:
    """A's hand points minus B's, per hand, over the same deals played twice with
    the teams swapped."""
    total = 0
    for seating in ((a, b, a, b), (b, a, b, a)):
        m = Match(rules, seed=seed)
        done = 0
        pts = [0, 0]
        rng = random.Random(seed)
        while done < hands:
            if m.is_over:
                m = Match(rules, seed=rng.getrandbits(32))
            seat = m.to_act
            number = m.hand_number
            m.apply(seat, BOTS[seating[seat]](m.view(seat), rng.getrandbits(32), 0))
            if m.is_over or m.hand_number != number:
                for side in m.state.results[-1]:
                    pts[side.side] += side.hand_points
                done += 1
        a_side = 0 if seating[0] == a else 1
        total += pts[a_side] - pts[1 - a_side]
    return total / (2 * hands)


def test_levels_are_ordered_in_strength(figures: Callable[[str], None]) -> None:
    hands = 300
    normal_easy = _duplicate("normal", "easy", CLASSIC, hands, seed=2024)
    hard_easy = _duplicate("hard", "easy", CLASSIC, hands, seed=2024)
    hard_normal = _duplicate("hard", "normal", CLASSIC, hands, seed=2024)
    lines: list[str] = []
    lines.append(
        f"\nduplicate, {hands} classic hands each way, points per hand: "
        f"normal-easy {normal_easy:+.1f}, hard-easy {hard_easy:+.1f}, "
        f"hard-normal {hard_normal:+.1f}"
    )
    figures("\n".join(lines))
    assert normal_easy > 0
    assert hard_easy > 0


# -- trick-count scoring ----------------------------------------------------------------------

TRICK_COUNT = preset("bulgarian", scoring="tricks", target_score=100)


def test_every_level_plays_only_legal_actions_under_trick_count_scoring() -> None:
    def visit(m: Match, seat: int) -> None:
        view = m.view(seat)
        for level in LEVELS:
            assert BOTS[level](view, 7, 0) in view.legal_actions

    _drive(TRICK_COUNT, random.Random("tricks"), visit, POSITIONS_PER_CONFIG)


@pytest.mark.parametrize("level", SMART)
def test_trick_count_scoring_bids_no_more_than_classic(level: str) -> None:
    # a set costs the whole contract and bags, an overtrick nothing: bid short
    rng = random.Random(5)
    lower = 0
    for _ in range(40):
        seed = rng.getrandbits(32)
        bids = []
        for rules in (CLASSIC, preset("classic", scoring="tricks")):
            m = Match(rules, seed=seed)
            action = decide(level, m)
            assert isinstance(action, Bid)
            bids.append(action.tricks)
        classic, tricks = bids
        assert tricks <= classic or classic == 0
        lower += tricks < classic
    assert lower > 0


def test_smart_levels_beat_easy_under_trick_count_scoring(
    figures: Callable[[str], None],
) -> None:
    rules = preset("classic", scoring="tricks")
    normal_easy = _duplicate("normal", "easy", rules, 100, seed=7)
    hard_easy = _duplicate("hard", "easy", rules, 100, seed=7)
    lines: list[str] = []
    lines.append(
        f"\nduplicate, 100 trick-count hands each way, points per hand: "
        f"normal-easy {normal_easy:+.1f}, hard-easy {hard_easy:+.1f}"
    )
    figures("\n".join(lines))
    assert normal_easy > 0
    assert hard_easy > 0


@pytest.mark.parametrize("level", SMART)
def test_trick_count_scoring_keeps_winning_once_the_contract_is_made(level: str) -> None:
    # the position where classic scoring ducks the bag: overtricks are free here
    rules = preset("classic", scoring="tricks")
    m = position(rules, BAGS_DEAL, dealer=3, bids=[1, 1, 1, 1], plays=BAGS_PLAYS)
    assert m.to_act == 2
    assert played(level, m) == "KH"


# -- suicide -----------------------------------------------------------------------------------

SUICIDE = preset("classic", suicide=True)
ALL_LEVELS = (*LEVELS, "expert")
STRONG_HAND = "AS KS QS JS AH KH QH AD KD QD AC KC QC"


@pytest.mark.parametrize("level", ALL_LEVELS)
def test_under_suicide_a_good_nil_opens_nil_and_its_partner_takes_four_or_more(
    level: str,
) -> None:
    deal = fill_deal(SUICIDE, {1: "2S 3H 4H 5H 6H 2D 3D 4D 5D 2C 3C 4C 5C", 3: STRONG_HAND})
    m = position(SUICIDE, deal, dealer=0)  # seat 1 opens its side
    assert decide(level, m) == Bid(0)  # no ace or king, one low spade
    m.apply(1, Bid(0))
    m.apply(2, Bid(4))
    action = decide(level, m)  # seat 3, partner of the nil
    assert isinstance(action, Bid) and action.tricks >= 4


@pytest.mark.parametrize("level", ALL_LEVELS)
def test_under_suicide_a_weak_hand_that_is_no_nil_still_bids_four(level: str) -> None:
    # an ace and a king in spades: never a nil, yet worth fewer than 4 tricks
    deal = fill_deal(SUICIDE, {1: "AS KS 2H 3H 4H 5H 2D 3D 4D 5D 2C 3C 4C"})
    m = position(SUICIDE, deal, dealer=0)
    action = decide(level, m)
    assert isinstance(action, Bid) and action.tricks >= 4
    m.apply(1, action)
    m.apply(2, Bid(0))
    assert decide(level, m) == Bid(0)  # seat 3 must take the nil, whatever it holds


@pytest.mark.parametrize("level", ALL_LEVELS)
def test_under_suicide_every_level_plays_whole_legal_matches(level: str) -> None:
    budget = 2 if level == "expert" else 0
    for rules, seed in (
        (preset("classic", suicide=True, target_score=200), 5),
        (preset("polish", suicide=True, blind_nil_deficit=0, target_score=200), 6),
    ):
        m = Match(rules, seed=seed)
        rng = random.Random(seed)
        while not m.is_over:
            seats = m.seats_to_act()
            seat = rng.choice(seats)
            view = m.view(seat)
            action = BOTS[level](view, rng.getrandbits(32), budget)
            assert action in view.legal_actions, (level, seat, action, view)
            m.apply(seat, action)
        for hand in m.state.hand_bids:
            for side in (0, 1):
                assert sorted(hand[s] for s in (side, side + 2))[0] == 0
                assert sorted(hand[s] for s in (side, side + 2))[1] >= 4


# -- two players (the draw) -------------------------------


@pytest.mark.parametrize("level", ALL_LEVELS)
def test_every_level_plays_whole_legal_matches_with_two_players(level: str) -> None:
    rules = preset("german", players=2, target_score=200)
    budget = 2 if level == "expert" else 0
    for seed in range(2):
        m = Match(rules, seed=seed)
        rng = random.Random(seed)
        while not m.is_over:
            seat = m.to_act
            view = m.view(seat)
            action = BOTS[level](view, rng.getrandbits(32), budget)
            assert action in view.legal_actions, (level, seat, action, view)
            if m.phase is Phase.DRAW:
                top = view.stock_top
                assert top is not None and isinstance(action, Draw)
                if level != "expert":  # Expert draws by search
                    assert action.keep == (top >> 4 == 3 or top & 15 >= 9), (top, action)
            m.apply(seat, action)
        assert m.state.hand_tricks and all(sum(t) == 13 for t in m.state.hand_tricks)
