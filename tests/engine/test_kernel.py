"""The simulation kernel against the public engine.

The kernel picks "the k-th lowest legal card", k one choice per card: from a
``Draws`` (``draws.below(count)``, the fast loops) or from a ``rnd`` callable
(``int(rnd() * count)``, card by card).  ``Match.legal_actions`` lists cards
lowest first, so a ``Match`` driven with ``acts[k]`` from the same source must
replay a kernel playout card for card.  Every test below compares the two.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spades_engine import LOOK, Bid, Match, NameTrump, Phase, Ruleset, SpadesBroken, preset
from spades_engine.actions import PLAYS
from spades_engine.bots.rollout import Table
from spades_engine.bots.rollout import playout as rollout_playout
from spades_engine.cards import SPADE_MASK, cards_of, mask_of, parse_hand
from spades_engine.events import CardPlayed, HandScored, TrickWon
from spades_engine.kernel import (
    NON_SPADES,
    Draws,
    SimState,
    _fast_playout,
    _Hand,
    _kth_card,
    _pack,
    _unpack,
    deal_random,
    first_leader,
    legal_mask,
    play,
    playout_random,
    random_bids,
    random_hand,
    trick_winner,
)
from spades_engine.scoring import score_hand

Rnd = Callable[[], float]

RULESETS: dict[str, Ruleset] = {
    "classic": preset("classic"),
    "polish": preset("polish"),  # dealer leads; blind nil with an exchange; trumping breaks
    "german": preset("german"),  # jokers, 4 players without the 2C and 2D
    "bulgarian": preset("bulgarian"),  # the 2 of clubs leads
    "german3": preset("german", players=3),  # 54 cards, 18 tricks
    "german5": preset("german", players=5),  # 50 cards, 10 tricks
    "classic_jokers": preset("classic", jokers=True),  # jokers with partnerships
    # seed 003's trick-count table, in partnerships and in cutthroat
    "bulgarian_tricks": preset("bulgarian", scoring="tricks"),
    "german_tricks": preset("german", scoring="tricks", set_penalty="ten_per_bid"),
    # only trumping breaks spades, with jokers (they are spades) and with 3 seats
    "german_trumping": preset("german", spades_broken="trumping"),
    "german3_trumping": preset("german", players=3, spades_broken="trumping"),
    # suicide: random_bids gives each side one nil and one bid of 4 or more
    "classic_suicide": preset("classic", suicide=True),
    # seed 003's auction trump: the named suit (random here) is trump; with the
    # polish table's dealer lead, exchange and trumping, and the 2 of clubs lead
    "auction": preset("classic", auction_trump=True),
    "auction_polish": preset("polish", blind_nil_deficit=0, auction_trump=True),
    "auction_bulgarian": preset("bulgarian", auction_trump=True),
}
NAMES = sorted(RULESETS)


def _long_match(rules: Ruleset, seed: int) -> Match:
    """A match that keeps dealing, so a test can play several hands."""
    return Match(rules.replace(target_score=10**9, mercy_score=None), seed=seed)


def _finish_bidding(m: Match, rnd: Rnd) -> None:
    """Random legal actions (blind nil, look, bids, passes) until play starts."""
    while m.phase in (Phase.BIDDING, Phase.EXCHANGE):
        seat = m.to_act if m.to_act >= 0 else m.seats_to_act()[0]
        acts = m.legal_actions(seat)
        m.apply(seat, acts[int(rnd() * len(acts))])
    assert m.phase is Phase.PLAYING


def _sim_of(m: Match) -> SimState:
    h = m.state.hand
    trumping = m.rules.spades_broken is SpadesBroken.TRUMPING
    return SimState(
        h.hands, h.leader, h.tricks_won, h.trick, h.spades_broken, trumping=trumping, trump=h.trump
    )


def _same_position(sim: SimState, m: Match) -> None:
    h = m.state.hand
    assert sim.hands == h.hands
    assert sim.to_act == h.to_act
    assert sim.leader == h.leader
    assert sim.trick == h.trick
    assert sim.led_suit == h.led_suit
    assert sim.spades_broken == h.spades_broken
    assert sim.trumping == (m.rules.spades_broken is SpadesBroken.TRUMPING)
    assert sim.tricks_won == h.tricks_won
    assert sim.trump == h.trump


def _lockstep_hand(m: Match, rnd: Rnd) -> None:
    """Play the rest of the current hand on the match and on a kernel copy of
    it, the same cards on both, comparing them after every card."""
    sim = _sim_of(m)
    while True:
        seat = m.to_act
        assert sim.to_act == seat
        acts = m.legal_actions(seat)
        assert legal_mask(sim) == mask_of(a.card for a in acts)  # type: ignore[union-attr]
        card = acts[int(rnd() * len(acts))].card  # type: ignore[union-attr]
        events = m.apply(seat, PLAYS[card])
        won = [e.winner for e in events if isinstance(e, TrickWon)]
        assert play(sim, card) == (won[0] if won else -1)
        scored = [e for e in events if isinstance(e, HandScored)]
        if scored:
            assert tuple(sim.tricks_won) == scored[0].tricks
            assert sim.is_over
            assert not any(sim.hands)
            return
        _same_position(sim, m)
        assert not sim.is_over


def _engine_playout(
    m: Match, choose: Callable[[int], int]
) -> tuple[list[tuple[int, int]], tuple[int, ...]]:
    """Finish the current hand of ``m`` with random plays, ``acts[choose(len(acts))]``:
    the (seat, card) plays in order and the tricks by seat."""
    plays: list[tuple[int, int]] = []
    while True:
        seat = m.to_act
        acts = m.legal_actions(seat)
        for e in m.apply(seat, acts[choose(len(acts))]):
            if isinstance(e, CardPlayed):
                plays.append((e.seat, e.card))
            elif isinstance(e, HandScored):
                return plays, e.tricks


def _scaled(rnd: Rnd) -> Callable[[int], int]:
    """The card-by-card rule for a ``rnd`` callable: ``int(rnd() * n)``."""
    return lambda n: int(rnd() * n)


def _finish_trick(sim: SimState, d: Draws) -> list[tuple[int, int]]:
    """Play card by card (``draws.below``) what the fast loop does not: the
    trick in progress, or the whole hand when a suit other than spades is trump."""
    plays: list[tuple[int, int]] = []
    while sim.trick or (sim.trump != 3 and not sim.is_over):
        mask = legal_mask(sim)
        card = _kth_card(mask, d.below(mask.bit_count()))
        plays.append((sim.to_act, card))
        play(sim, card)
    return plays


def _kernel_playout(sim: SimState, seed: int) -> tuple[list[tuple[int, int]], tuple[int, ...]]:
    """``playout_random(sim, Draws(seed))`` step by step: the fast loop run one
    trick at a time, each seat's card read off the hand it leaves.  Checks
    that one run of the whole hand takes the same tricks and as many choices."""
    origin = sim
    sim = sim.copy()
    start = sim.hands[:]
    d = Draws(seed)
    plays = _finish_trick(sim, d)
    n = len(sim.hands)
    hands = [_Hand(_pack(h)) for h in sim.hands]
    won = sim.tricks_won[:]
    leader, broken = sim.leader, sim.spades_broken
    tricks = 0 if sim.is_over else sim.hands[0].bit_count()
    for t in range(tricks):
        before = [_unpack(h.cards) for h in hands]
        was = won[:]
        _fast_playout(hands, leader, broken, won, d, tricks - t, sim.trumping, tricks=1)
        trick: list[tuple[int, int]] = []
        for i in range(n):
            seat = (leader + i) % n
            gone = before[seat] ^ _unpack(hands[seat].cards)
            assert gone.bit_count() == 1, "one card a seat a trick"
            trick.append((seat, gone.bit_length() - 1))
        plays += trick
        led = trick[0][1] >> 4
        broken = broken or any(
            c >> 4 == 3 and (not sim.trumping or (i > 0 and led != 3))
            for i, (_, c) in enumerate(trick)
        )
        [leader] = [s for s in range(n) if won[s] != was[s]]
    assert not any(h.cards for h in hands)
    # Every card held is played once, by its holder.
    assert sorted(plays) == sorted((seat, c) for seat, h in enumerate(start) for c in cards_of(h))
    # The whole hand in one call, from the same position and seed.
    whole = Draws(seed)
    rest = origin.copy()
    _finish_trick(rest, whole)
    all_won = rest.tricks_won[:]
    packed = [_Hand(_pack(h)) for h in rest.hands]
    _fast_playout(packed, rest.leader, rest.spades_broken, all_won, whole, tricks, rest.trumping)
    assert all_won == won
    assert [whole.below(64) for _ in range(8)] == [d.below(64) for _ in range(8)]
    return plays, tuple(won)


def _check_playout(m: Match, seed: int) -> None:
    """From the position of ``m``: the kernel plays the engine's cards, and
    ``playout_random`` returns the engine's tricks without changing its state,
    from a ``Draws`` (the fast loop) and from a ``rnd`` callable (card by card)."""
    sim = _sim_of(m)
    before = repr(sim)
    tricks = playout_random(sim, Draws(seed))
    by_card = playout_random(sim, random.Random(seed).random)
    assert repr(sim) == before, "playout_random must not change its state"
    kernel = _kernel_playout(sim, seed)
    engine_by_card = _engine_playout(copy.deepcopy(m), _scaled(random.Random(seed).random))
    engine = _engine_playout(m, Draws(seed).below)
    assert kernel == engine
    assert tuple(tricks) == engine[1]
    assert tuple(by_card) == engine_by_card[1]
    assert sum(tricks) == m.rules.tricks_per_hand


@pytest.mark.parametrize("name", NAMES)
def test_every_step_matches_the_engine(name: str) -> None:
    """Legal cards, trick winners and tricks won agree over several hands of
    many matches (dealers rotate, blind nils and exchanges happen)."""
    for seed in range(25):
        m = _long_match(RULESETS[name], seed)
        rnd = random.Random(seed).random
        for _ in range(3):
            _finish_bidding(m, rnd)
            _lockstep_hand(m, rnd)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(NAMES),
    order=st.randoms(use_true_random=False),
    dealer=st.integers(0, 4),
    seed=st.integers(0, 2**32),
)
def test_every_step_matches_the_engine_on_any_deal(
    name: str, order: random.Random, dealer: int, seed: int
) -> None:
    """Explicit deals, lopsided ones included (a seat with only spades, long
    voids), so rare cases such as leading spades before they are broken occur."""
    rules = RULESETS[name]
    m = Match(rules, seed=seed, deals=[_lopsided_deal(rules, order)], dealer=dealer % rules.players)
    rnd = random.Random(seed).random
    _finish_bidding(m, rnd)
    if order.random() < 0.5:
        _lockstep_hand(m, rnd)
    else:
        _check_playout(m, seed)


def _lopsided_deal(rules: Ruleset, order: random.Random) -> list[list[int]]:
    """A shuffled deal, or (mostly) cards dealt by suit with a few swaps."""
    cards: list[int] = list(cards_of(rules.deck_mask))
    if order.random() < 0.3:
        order.shuffle(cards)
    else:
        for _ in range(order.randrange(5)):
            i, j = order.randrange(len(cards)), order.randrange(len(cards))
            cards[i], cards[j] = cards[j], cards[i]
    size = rules.hand_size
    hands = [cards[i : i + size] for i in range(0, len(cards), size)]
    order.shuffle(hands)
    return hands


@pytest.mark.parametrize("name", ["german", "german_trumping"])
def test_spades_led_from_an_all_spade_hand_break_spades(name: str) -> None:
    """Seat 1 holds 13 of the 15 spades and must lead one; seat 2 wins it
    with the Big Joker and may then lead its ace of spades (unless only
    trumping breaks spades: then that lead broke nothing)."""
    rules = RULESETS[name]
    spades: list[int] = list(cards_of(rules.deck_mask & SPADE_MASK))
    others: list[int] = list(cards_of(rules.deck_mask & NON_SPADES))
    high = [_c("AS"), _c("BJ")]
    long_hand = [c for c in spades if c not in high]
    deal = [others[:13], long_hand, high + others[13:24], others[24:]]
    for seed in range(40):
        m = Match(rules, seed=seed, deals=[deal], dealer=0)
        rnd = random.Random(seed).random
        _finish_bidding(m, rnd)
        assert m.to_act == 1 and not m.state.hand.spades_broken
        _check_playout(m, seed)


@settings(max_examples=80, deadline=None)
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 2**32), cut=st.floats(0, 1))
def test_playout_replays_the_engine_from_mid_hand(name: str, seed: int, cut: float) -> None:
    """From any position (a trick in progress, spades broken or not), the fast
    playout gives exactly the tricks the engine gives for the same choices."""
    rules = RULESETS[name]
    m = Match(rules, seed=seed)
    rnd = random.Random(seed).random
    _finish_bidding(m, rnd)
    for _ in range(int(cut * (rules.hand_size * rules.players - 1))):
        acts = m.legal_actions(m.to_act)
        m.apply(m.to_act, acts[int(rnd() * len(acts))])
    _check_playout(m, seed + 1)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 2**32), dealer=st.integers(0, 4))
def test_random_hand_is_an_engine_hand(name: str, seed: int, dealer: int) -> None:
    """random_hand's deal is a partition of the deck, and its bids, plays and
    score are those of the engine playing that deal with the same choices."""
    rules = RULESETS[name]
    dealer %= rules.players
    d = Draws(seed)  # what random_hand draws from random.Random(seed)
    hands = deal_random(rules, d)
    assert len(hands) == rules.players
    assert all(h.bit_count() == rules.hand_size for h in hands)
    assert sum(hands) == rules.deck_mask  # disjoint, since the counts add up
    bids = random_bids(rules, d)
    assert all(rules.min_bid <= b <= rules.hand_size for b in bids)

    m = Match(rules, seed=seed, deals=[[cards_of(h) for h in hands]], dealer=dealer)
    while m.phase is Phase.BIDDING:
        seat = m.to_act
        if m.state.hand.trump_namer >= 0:  # auction trump: the suit random_hand draws
            m.apply(seat, NameTrump(d.below(4)))
            continue
        if LOOK in m.legal_actions(seat):  # bulgarian: cards start face down
            m.apply(seat, LOOK)
        m.apply(seat, Bid(bids[seat]))
    assert m.state.hand.leader == first_leader(rules, hands, dealer)
    _, tricks = _engine_playout(m, d.below)

    result = random_hand(rules, random.Random(seed), dealer)
    assert result == m.state.results[0]
    assert sum(s.tricks for s in result) == rules.tricks_per_hand
    assert result == score_hand(
        rules, bids, [False] * rules.players, tricks, [0] * rules.sides, [0] * rules.sides
    )


def test_random_hand_uses_scores_and_bags_before() -> None:
    rules = RULESETS["classic"]
    plain = random_hand(rules, random.Random(3))
    later = random_hand(rules, random.Random(3), scores=(120, -40), bags=(9, 0))
    for a, b, before in zip(plain, later, (120, -40), strict=True):
        assert a.contract == b.contract and a.tricks == b.tricks
        assert b.score - b.hand_points == before


def test_random_hand_scores_trick_count_bags_from_the_bags_before() -> None:
    rules = RULESETS["bulgarian_tricks"]
    for seed in range(20):
        plain = random_hand(rules, random.Random(seed))
        later = random_hand(rules, random.Random(seed), scores=(5, -3), bags=(9, 11))
        for a, b, before in zip(plain, later, (9, 11), strict=True):
            assert (a.contract, a.tricks, a.bags_taken) == (b.contract, b.tricks, b.bags_taken)
            assert b.bags == before + b.bags_taken  # trick-count bags never reset
            cheap = max(0, min(b.bags, 10) - before)
            assert b.bag_penalty == -(cheap + 10 * (b.bags_taken - cheap))


def test_random_hands_look_random() -> None:
    """Cheap sanity checks on the distribution: every seat gets every card
    sometimes, and every seat wins tricks."""
    rules = RULESETS["classic"]
    rng = random.Random(11)
    held = [0] * 4
    for _ in range(200):
        for seat, h in enumerate(deal_random(rules, rng)):
            held[seat] |= h
    assert held == [rules.deck_mask] * 4
    won = [0] * 4
    for _ in range(100):
        for seat, t in enumerate(playout_random(SimState(deal_random(rules, rng), 0), rng.random)):
            won[seat] += t
    assert sum(won) == 1300 and min(won) > 200


def test_a_random_two_player_deal_is_what_a_draw_leaves() -> None:
    rules = preset("german", players=2)
    rng = random.Random(4)
    for _ in range(20):
        hands = deal_random(rules, rng)
        assert len(hands) == 2 and [h.bit_count() for h in hands] == [13, 13]
        assert hands[0] & hands[1] == 0 and (hands[0] | hands[1]) & ~rules.deck_mask == 0
        won = playout_random(SimState(hands, 0), rng.random)
        assert sum(won) == 13


def test_leading_spades_and_jokers() -> None:
    only_spades = parse_hand("2S 9S")
    mixed = parse_hand("3C 4S")
    state = SimState([only_spades, mixed, parse_hand("5C 6D"), parse_hand("7H 8H")], 0)
    assert legal_mask(state) == only_spades  # only spades held: spades may be led
    state.to_act = 1
    assert legal_mask(state) == parse_hand("3C")  # not broken: no spade lead
    state.spades_broken = True
    assert legal_mask(state) == mixed
    assert NON_SPADES & SPADE_MASK == 0
    # The Big Joker beats the Little Joker beats the ace of spades; a spade
    # beats the led suit; an off-suit card never wins.
    assert trick_winner(1, [_c(c) for c in ("2H", "AS", "LJ", "BJ")], 4) == 0
    assert trick_winner(2, [_c(c) for c in ("2H", "AC", "3H")], 3) == 1
    assert trick_winner(2, [_c(c) for c in ("2H", "AC", "2S")], 3) == 1


def test_a_trick_in_progress_breaks_spades_and_sets_the_turn() -> None:
    hands = [parse_hand("2C"), parse_hand("3C"), 0, parse_hand("5C")]
    state = SimState(hands, 2, trick=[_c("4S")])
    assert state.spades_broken and state.to_act == 3 and state.led_suit == 3
    assert legal_mask(state) == parse_hand("5C")
    assert play(state, _c("5C")) == -1
    assert state.to_act == 0


@pytest.mark.parametrize(
    ("hands", "leader", "trick"),
    [
        (["2C", "2C", "4C", "5C"], 0, []),  # a card held twice
        (["", "2C", "4C", "5C"], 0, ["2C"]),  # a card played and still held
        (["2C", "3C 6C", "4C", "5C"], 0, []),  # one hand too long
        (["", "3C", "4C", "5C"], 1, ["2C"]),  # the leader has not played yet
        (["2C", "3C", "4C"], 3, []),  # no such leader
    ],
)
def test_impossible_positions_are_refused(hands: list[str], leader: int, trick: list[str]) -> None:
    with pytest.raises(ValueError):
        SimState([parse_hand(h) for h in hands], leader, trick=[_c(t) for t in trick])


def test_bits_that_are_not_cards_are_refused() -> None:
    with pytest.raises(ValueError):
        SimState([1 << 15, 1, 2, 4], 0)  # rank 15 does not exist
    with pytest.raises(ValueError):
        SimState([1, 2, 4, 0], 3, trick=[64])


def _c(name: str) -> int:
    return parse_hand(name).bit_length() - 1


def test_with_trumping_only_a_spade_played_to_a_side_suit_breaks_spades() -> None:
    """SimState(trumping=True): a spade lead and the spades following it break
    nothing; a spade (a joker too) played by a seat void in the suit led does."""
    mixed = [parse_hand("2S 3C"), parse_hand("4S 5C"), parse_hand("6S 7C"), parse_hand("8S 9C")]
    assert legal_mask(SimState(mixed, 0, trumping=True)) == parse_hand("3C")
    state = SimState(
        [parse_hand(h) for h in ("2S 3S", "4S 5C", "6S 7C", "8S 9C")], 0, trumping=True
    )
    assert legal_mask(state) == parse_hand("2S 3S")  # only spades held: a spade may be led
    for c in ("2S", "4S", "6S"):
        assert play(state, _c(c)) == -1
        assert not state.spades_broken  # the lead, and spades following it
    assert play(state, _c("8S")) == 3 and not state.spades_broken
    assert legal_mask(state) == parse_hand("9C")  # seat 3 may still not lead its spade...
    assert play(state, _c("9C")) == -1
    play(state, _c("3S"))  # ...but seat 0, void in clubs, trumps: that breaks spades
    assert state.spades_broken
    # a trick in progress: a spade lead breaks nothing, a trump does
    rest = [parse_hand("2C"), parse_hand("3C"), 0, parse_hand("5C")]
    assert not SimState(rest, 2, trick=[_c("4S")], trumping=True).spades_broken
    assert SimState(rest, 2, trick=[_c("4S")]).spades_broken
    rest = [parse_hand("2C"), 0, 0, parse_hand("5C")]
    assert SimState(rest, 1, trick=[_c("3H"), _c("BJ")], trumping=True).spades_broken
    # play(): the Big Joker on a heart lead, by a seat void in hearts, breaks
    joker = SimState([parse_hand("3H"), parse_hand("BJ"), parse_hand("4C")], 0, trumping=True)
    play(joker, _c("3H"))
    assert not joker.spades_broken
    play(joker, _c("BJ"))
    assert joker.spades_broken
    assert joker.copy().trumping


@settings(max_examples=40, deadline=None)
@given(
    # the rollout policy is written for spades: the bots play another trump on
    # a view with that suit and spades swapped (bots/trump.py), not through it
    name=st.sampled_from([n for n in NAMES if not RULESETS[n].auction_trump]),
    order=st.randoms(use_true_random=False),
    seed=st.integers(0, 2**32),
)
def test_the_expert_rollout_plays_the_engines_rules(
    name: str, order: random.Random, seed: int
) -> None:
    """The Expert bot's rollout (``bots.rollout.playout``), with noise 1, plays a
    uniformly random legal card each time (two ``rnd()`` calls a card): the
    engine fed the same choices gives the same tricks, spades breaking by the
    ruleset's rule (lopsided deals bring leads from hands of only spades)."""
    rules = RULESETS[name]
    m = Match(rules, seed=seed, deals=[_lopsided_deal(rules, order)], dealer=0)
    rnd = random.Random(seed).random
    _finish_bidding(m, rnd)
    table = Table(m.rules, m.state.hand.bids)
    won = rollout_playout(_sim_of(m), table, random.Random(seed).random, noise=1.0)
    pick = random.Random(seed).random
    _, tricks = _engine_playout(m, _scaled(lambda: (pick(), pick())[1]))
    assert tuple(won) == tricks


def test_a_named_trump_wins_tricks_and_waits_to_be_broken() -> None:
    """Auction trump in the kernel: hearts as trump beat the ace of spades,
    cannot be led unbroken unless only hearts are held, and break by the rule."""
    assert trick_winner(0, [_c("KC"), _c("AS"), _c("2H"), _c("AC")], 4, 2) == 2
    assert trick_winner(0, [_c("KC"), _c("AS"), _c("2H"), _c("AC")], 4) == 1
    assert trick_winner(1, [_c("3S"), _c("AS"), _c("KH"), _c("2D")], 4, 2) == 3
    hands = [parse_hand(h) for h in ("2H AS", "3H KS", "4H QS", "5H JS")]
    sim = SimState(hands, 0, trump=2)
    assert legal_mask(sim) == 1 << _c("AS")
    play(sim, _c("AS"))  # a spade is a plain suit: it breaks nothing
    assert not sim.spades_broken
    sim = SimState([parse_hand(h) for h in ("2H", "KS", "QS", "JS")], 0, trump=2)
    assert legal_mask(sim) == 1 << _c("2H")  # only trump held
    after = [parse_hand(h) for h in ("2H", "KD", "4H QS", "5H JS")]
    trumping = SimState(after, 0, [0] * 4, [_c("3S"), _c("3H")], trumping=True, trump=2)
    assert trumping.spades_broken  # a heart played to a spade lead: trumping
    assert sum(playout_random(SimState(hands, 0, trump=2), random.Random(1).random)) == 2
