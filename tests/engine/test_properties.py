"""RULES.md §4 as properties of random matches: random seeds x presets, random
legal actions, a few hands per example.

A small referee follows each match from its events alone and recomputes what
the rules say independently of the engine (scores from bids and tricks, who
may see which card); the engine's own scoring code is never called here.
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spades_engine import (
    BLIND_NIL,
    DRAW_DISCARD,
    DRAW_KEEP,
    EXCHANGE,
    LOOK,
    NO_EXCHANGE,
    Action,
    Bid,
    Draw,
    IllegalAction,
    Match,
    NameTrump,
    PassCards,
    Play,
    Ruleset,
    event_to_dict,
    preset,
)
from spades_engine.cards import card_name, parse_card
from spades_engine.events import Event
from spades_engine.view import SeatView


def _two_players(**options: Any) -> Ruleset:
    return preset("german", players=2, **options)


CONFIGS: dict[str, Ruleset] = {
    "classic": preset("classic"),
    "polish": preset("polish"),  # the optional exchange
    "polish_deficit_0": preset("polish", blind_nil_deficit=0),
    "polish_compulsory": preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False),
    "german": preset("german"),
    "german_3": preset("german", players=3),
    "german_5": preset("german", players=5),
    "bulgarian": preset("bulgarian"),
    # only trumping breaks spades (as in polish), with the jokers, which are spades
    "german_trumping": preset("german", spades_broken="trumping"),
    # a short game so that match ends come up often
    "short_five_bags": preset("classic", target_score=120, mercy_score=-60, bag_rule="5_for_50"),
    # seed 003's trick-count table, short enough to end within a few hands
    "bulgarian_tricks": preset("bulgarian", scoring="tricks", target_score=30),
    # suicide (seed 001, RULES.md §3.1): one partner of each side nil, the other 4+
    "classic_suicide": preset("classic", suicide=True),
    # ... with blind nil at any score, so a blind nil is often the side's nil
    "polish_suicide": preset("polish", blind_nil_deficit=0, suicide=True),
    # seed 003's auction trump: the highest bidder names the hand's trump suit
    "auction": preset("classic", auction_trump=True),
    # ... then the optional exchange, with spades broken by trumping only
    "auction_polish": preset("polish", blind_nil_deficit=0, auction_trump=True),
    # seed 001's deuces high (RULES.md §3.1): 2D > 2S > ace of spades, 2D a spade
    "deuces": preset("classic", jokers=True, deuces_high=True),
    # ... with spades broken by trumping only, and the optional exchange
    "deuces_polish": preset("polish", blind_nil_deficit=0, jokers=True, deuces_high=True),
    # two players (RULES.md 3.1): the draw from the stock, then cutthroat
    "german_2": _two_players(),
    "two_classic": _two_players(nil_allowed=True, set_penalty="ten_per_bid", target_score=150),
}
MAX_HANDS = 3
SETTINGS = settings(
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
seeds = st.integers(min_value=0, max_value=2**63 - 1)
randoms = st.randoms(use_true_random=False)

# -- the rules, written out again from RULES.md ---------------------------------------


def expected_deck(rules: Ruleset) -> set[str]:
    deck = {r + s for s in "CDHS" for r in "23456789TJQKA"}
    if rules.jokers:
        deck |= {"LJ", "BJ"}
        if rules.players == 4:  # deuces high keeps the 2 of diamonds, a spade
            deck -= {"2C", "2H"} if rules.deuces_high else {"2C", "2D"}
        elif rules.players == 2:
            deck -= {"2C", "2D"}
        if rules.players == 5:
            deck -= {"2C", "2D", "2H", "2S"}
    return deck


def side_of(rules: Ruleset, seat: int) -> int:
    return seat % 2 if rules.partnerships else seat


def team_of(rules: Ruleset, seat: int | None) -> int | None:
    return None if seat is None or not rules.partnerships else seat % 2


def eligible_for_blind_nil(rules: Ruleset, seat: int, scores: list[int]) -> bool:
    if not rules.blind_nil:
        return False
    me = side_of(rules, seat)
    best_other = max(s for side, s in enumerate(scores) if side != me)
    return rules.blind_nil_deficit == 0 or best_other - scores[me] >= rules.blind_nil_deficit


def score_hand_again(
    rules: Ruleset,
    bids: list[int],
    blind: list[bool],
    tricks: list[int],
    scores: list[int],
    bags: list[int],
) -> tuple[list[int], list[int]]:
    """New (scores, bags) by side, from RULES.md §1 and §3."""
    all_tricks = len(expected_deck(rules)) // rules.players
    if rules.players == 2:  # half the stock is discarded
        all_tricks //= 2
    sides = 2 if rules.partnerships else rules.players
    limit, penalty = {"10_for_100": (10, 100), "5_for_50": (5, 50), "off": (None, 0)}[
        str(rules.bag_rule)
    ]
    new_scores, new_bags = list(scores), list(bags)
    for side in range(sides):
        seats = [s for s in range(rules.players) if side_of(rules, s) == side]
        contract = sum(bids[s] for s in seats)
        taken = sum(tricks[s] for s in seats)
        tricks_table = str(rules.scoring) == "tricks"
        if tricks_table:  # RULES.md §3.1: made +c, set c - t bags
            points = contract if taken >= contract else 0
            overtricks = max(0, contract - taken)
        elif taken >= contract:
            points, overtricks = 10 * contract + (taken - contract), taken - contract
        else:
            points = -10 * contract if str(rules.set_penalty) == "ten_per_bid" else 0
            overtricks = 0
        if rules.thirteen_bid and taken < all_tricks:
            # a player's own bid of every trick, failed: that many bags
            overtricks += all_tricks * [bids[s] for s in seats].count(all_tricks)
        for s in seats:
            if bids[s] == 0:
                worth = 200 if blind[s] else 100
                points += worth if tricks[s] == 0 else -worth
        if rules.thirteen_bid and contract == all_tricks and taken == all_tricks:
            points *= 2
        if tricks_table:
            for _ in range(overtricks):  # one bag at a time, priced by the new total
                new_bags[side] += 1
                points -= 1 if new_bags[side] <= 10 else 10
        elif limit is not None:
            new_bags[side] += overtricks
            while new_bags[side] >= limit:
                new_bags[side] -= limit
                points -= penalty
        new_scores[side] += points
    return new_scores, new_bags


def expected_winner(rules: Ruleset, scores: list[int]) -> int | None:
    top = max(scores)
    over = top >= rules.target_score or (
        rules.mercy_score is not None and min(scores) <= rules.mercy_score
    )
    if over and scores.count(top) == 1:
        return scores.index(top)
    return None


def named_cards(event: Event) -> set[str]:
    out: set[str] = set()
    for name in ("card", "kept", "discarded"):
        if hasattr(event, name):
            out.add(card_name(getattr(event, name)))
    out |= {card_name(c) for c in getattr(event, "cards", ())}
    return out


def view_cards(v: SeatView) -> set[str]:
    cs = list(v.hand or ()) + list(v.trick) + list(v.passed) + list(v.received)
    cs += list(v.discards) + ([] if v.stock_top is None else [v.stock_top])
    for t in v.tricks:
        cs += t.cards
    for a in v.legal_actions:
        if isinstance(a, Play):
            cs.append(a.card)
        elif isinstance(a, PassCards):
            cs += a.cards
    return {card_name(c) for c in cs}


# -- the referee ------------------------------------------------------------------------

RANKS = "23456789TJQKA"


def suit(name: str, deuces: bool = False) -> str:
    """The suit a card plays as (with deuces high, the 2 of diamonds: spades)."""
    return "S" if name in ("LJ", "BJ") or (deuces and name == "2D") else name[1]


def strength(name: str, led: str, trump: str = "S", deuces: bool = False) -> tuple[int, float]:
    """Trump (spades, the jokers on top: Big > Little > ace; or the suit named
    under auction trump) beats the led suit, which beats the rest.  With
    deuces high: Big > Little > 2D > 2S > ace of spades."""
    if name in ("LJ", "BJ"):
        return 2, 13 if name == "LJ" else 14
    if deuces and name in ("2D", "2S"):
        return 2, 12.75 if name == "2D" else 12.5
    rank = RANKS.index(name[0])
    return (2 if name[1] == trump else 1 if name[1] == led else 0), rank


def trump_namer(bids: list[int | None], dealer: int, n: int) -> int:
    """RULES.md 3.1: the highest bidder, the earliest in bidding order on a tie
    (so the first bidder when every bid is nil)."""
    order = [(dealer + 1 + i) % n for i in range(n)]
    best = max(b or 0 for b in bids)
    return next(s for s in order if (bids[s] or 0) == best)


@dataclass
class Referee:
    """Follows a match through its events alone and checks them against RULES.md."""

    m: Match
    rules: Ruleset
    check_scores: bool = False  # each hand's scores, each deal's face-down seats, the winner
    check_leaks: bool = False  # every event and view, for every seat and a spectator
    scores: list[int] = field(default_factory=list)
    bags: list[int] = field(default_factory=list)
    dealer: int = -1
    dealt: list[set[str]] = field(default_factory=list)
    holding: list[set[str]] = field(default_factory=list)
    sees: list[bool] = field(default_factory=list)
    received: list[set[str]] = field(default_factory=list)
    passers: set[int] = field(default_factory=set)  # seats that have chosen cards to pass
    decisions: dict[int, bool] = field(default_factory=dict)  # the optional exchange's
    played: list[str] = field(default_factory=list)
    trick: list[tuple[int, str]] = field(default_factory=list)
    broken: bool = False  # trump broken this hand, by the ruleset's spades_broken
    trump: str = "S"  # the hand's trump suit
    namer: int | None = None  # auction trump: the seat still to name trump
    leader: int | None = None  # of the trick in progress; None before the first lead
    bids: list[int | None] = field(default_factory=list)
    blind: list[bool] = field(default_factory=list)
    tricks: list[int] = field(default_factory=list)
    hands_scored: int = 0
    # two players' draw: the stock (top first), cards drawn from it, discards seen
    stock: list[str] = field(default_factory=list)
    drawn: int = 0
    discards: list[set[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        sides = 2 if self.rules.partnerships else self.rules.players
        self.scores, self.bags = [0] * sides, [0] * sides
        self.follow(self.m.opening_events)

    def viewers(self) -> list[int | None]:
        return [*range(self.rules.players), None]

    def allowed(self, viewer: int | None) -> set[str]:
        known = set(self.played)
        if viewer is not None and self.sees[viewer]:
            known |= self.dealt[viewer] | self.received[viewer]
        if viewer is not None and self.discards:
            known |= self.discards[viewer]
            if viewer == self.drawer():
                known.add(self.stock[self.drawn])  # the top card it looks at
        return known

    def drawer(self) -> int | None:
        """Two players: the seat to draw, the non-dealer first; None once drawn."""
        if self.rules.players != 2 or self.drawn >= len(self.stock):
            return None
        return (self.dealer + 1 + self.drawn // 2) % 2

    def follow(self, events: list[Event], action: tuple[int, Action] | None = None) -> None:
        r, n = self.rules, self.rules.players
        for e in events:
            kind = type(e).__name__
            if kind == "HandStarted":
                assert self.dealer < 0 or e.dealer == (self.dealer + 1) % n  # clockwise
                self.dealer = e.dealer
                self.dealt = [
                    {card_name(c) for c in _cards(mask)} for mask in self.m.state.hand.dealt
                ]
                self.holding = [set(d) for d in self.dealt]
                self.sees = [not eligible_for_blind_nil(r, s, self.scores) for s in range(n)]
                if self.check_scores:
                    assert e.face_down == tuple(s for s in range(n) if not self.sees[s])
                self.received, self.passers = [set() for _ in range(n)], set()
                self.decisions = {}
                self.played, self.trick, self.leader = [], [], None
                self.broken = False
                self.trump, self.namer = "S", None
                self.bids, self.blind, self.tricks = [None] * n, [False] * n, [0] * n
                if n == 2:  # no deal: the stock is drawn
                    assert self.dealt == [set(), set()]
                    self.stock = [card_name(c) for c in self.m.state.hand.stock]
                    assert sorted(self.stock) == sorted(expected_deck(r))
                    self.drawn, self.discards = 0, [set(), set()]
            elif kind == "CardsDrawn":
                assert e.seat == self.drawer() and str(e.audience) == f"seat:{e.seat}"
                top, following = self.stock[self.drawn], self.stock[self.drawn + 1]
                keep = card_name(e.kept) == top
                assert action == (e.seat, Draw(keep))
                assert (card_name(e.kept), card_name(e.discarded)) == (
                    (top, following) if keep else (following, top)
                )
                self.dealt[e.seat].add(card_name(e.kept))
                self.holding[e.seat].add(card_name(e.kept))
                self.discards[e.seat].add(card_name(e.discarded))
                self.drawn += 2
            elif kind == "DrawTaken":
                assert str(e.audience) == "everyone" and action is not None
                assert e.seat == action[0]
            elif kind == "LookedAtCards":
                assert not self.sees[e.seat]
                self.sees[e.seat] = True
            elif kind == "BidMade":
                self.bids[e.seat], self.blind[e.seat] = e.tricks, e.blind
            elif kind == "BiddingClosed":
                self.sees = [True] * n
                if r.auction_trump:
                    self.namer = trump_namer(self.bids, self.dealer, n)
            elif kind == "TrumpNamed":
                assert r.auction_trump and e.seat == self.namer
                assert str(e.audience) == "everyone"
                assert action == (e.seat, NameTrump(e.suit))
                self.trump, self.namer = "CDHS"[e.suit], None
            elif kind == "ExchangeDecided":
                assert r.blind_nil_exchange_optional and self.blind[e.seat]
                assert e.seat not in self.decisions and str(e.audience) == "everyone"
                assert action == (e.seat, EXCHANGE if e.exchange else NO_EXCHANGE)
                self.decisions[e.seat] = e.exchange
            elif kind == "CardsChosen":
                assert e.seat in self.exchangers()
                self.passers.add(e.seat)
            elif kind == "CardsPassed":
                assert r.partnerships and e.to_seat == (e.from_seat + 2) % 4
                given = {card_name(c) for c in e.cards}
                assert given <= self.holding[e.from_seat]
                assert len(given) == r.blind_nil_exchange
                self.holding[e.from_seat] -= given
                self.holding[e.to_seat] |= given
                self.received[e.to_seat] |= given
            elif kind == "CardPlayed":
                assert action is not None and action == (e.seat, Play(e.card))
                name = card_name(e.card)
                self.holding[e.seat].remove(name)
                if self.leader is None:
                    self.leader = e.seat
                if suit(name, self.rules.deuces_high) == self.trump and (
                    str(r.spades_broken) == "any_spade"
                    or (self.trick and suit(self.trick[0][1], self.rules.deuces_high) != self.trump)
                ):  # any trump; with "trumping" only one played to another suit led
                    self.broken = True
                self.trick.append((e.seat, name))
                self.played.append(name)
            elif kind == "TrickWon":
                led = suit(self.trick[0][1], self.rules.deuces_high)
                winner = max(
                    self.trick,
                    key=lambda sc: strength(sc[1], led, self.trump, self.rules.deuces_high),
                )[0]
                assert e.winner == winner
                assert [card_name(c) for c in e.cards] == [c for _, c in self.trick]
                self.tricks[winner] += 1
                self.trick, self.leader = [], winner
            elif kind == "HandScored":
                self.check_score(e)
            elif kind == "MatchEnded" and self.check_scores:
                assert e.winner == expected_winner(r, self.scores)
            if not self.check_leaks:
                continue
            for viewer in self.viewers():
                if e.audience.visible_to(viewer, team_of(r, viewer)):
                    leaked = named_cards(e) - self.allowed(viewer)
                    assert not leaked, f"{kind} shows seat {viewer} {leaked}"

    def check_score(self, e: Any) -> None:
        bids = [b if b is not None else -1 for b in self.bids]
        in_play = len(expected_deck(self.rules)) // (2 if self.rules.players == 2 else 1)
        assert min(bids) >= 0 and len(self.played) == in_play
        assert list(e.bids) == bids and list(e.blind) == self.blind
        assert list(e.tricks) == self.tricks
        self.scores, self.bags = score_hand_again(
            self.rules, bids, self.blind, self.tricks, self.scores, self.bags
        )
        if self.check_scores:
            assert [s.score for s in e.sides] == self.scores
            assert [s.bags for s in e.sides] == self.bags
            assert tuple(self.scores) == self.m.scores
        self.hands_scored += 1

    def check_views(self) -> None:
        if not self.check_leaks:
            return
        for viewer in self.viewers():
            v = self.m.view(viewer)
            leaked = view_cards(v) - self.allowed(viewer)
            assert not leaked, f"the view of seat {viewer} shows {leaked}"
            if viewer is not None:
                assert (v.hand is not None) == self.sees[viewer]

    def deciders(self) -> set[int]:
        """The blind nil bidders who decide whether to exchange (optional form)."""
        r = self.rules
        if not (r.blind_nil_exchange and r.partnerships and r.blind_nil_exchange_optional):
            return set()
        return {b for b in range(r.players) if self.blind[b]}

    def exchangers(self) -> set[int]:
        """The seats that pass: both partners of each blind nil side, but for a
        side where a blind nil bidder declined the optional exchange."""
        r = self.rules
        if not (r.blind_nil_exchange and r.partnerships):
            return set()
        declined = {b % 2 for b, yes in self.decisions.items() if not yes}
        return {
            s
            for b in range(r.players)
            if self.blind[b] and b % 2 not in declined
            for s in (b, (b + 2) % 4)
        }

    def expected_legal(self, seat: int) -> set[Any]:
        """The legal actions of a seat now, by RULES.md, as ``key`` values."""
        r, n = self.rules, self.rules.players
        if self.m.is_over:
            return set()
        if self.drawer() is not None:  # two players' draw
            return {DRAW_KEEP, DRAW_DISCARD} if seat == self.drawer() else set()
        if any(b is None for b in self.bids):  # bidding
            to_act = (self.dealer + 1 + sum(b is not None for b in self.bids)) % n
            numbers = set(range(0 if r.nil_allowed else 1, len(self.dealt[0]) + 1))
            if r.suicide:  # §3.1: one partner nil, the other 4+; the second takes the other
                partner_bid = self.bids[(seat + 2) % 4]
                if partner_bid is None:
                    numbers -= {1, 2, 3}
                elif partner_bid == 0:
                    numbers -= {0, 1, 2, 3}
                else:
                    numbers = {0}
            if not self.sees[seat] and self.bids[seat] is None:
                if seat != to_act:
                    return {LOOK}
                return {LOOK, BLIND_NIL} if 0 in numbers else {LOOK}
            if seat != to_act:
                return set()
            return {Bid(b) for b in numbers}
        if self.namer is not None:  # auction trump: the naming comes next
            return {NameTrump(s) for s in range(4)} if seat == self.namer else set()
        undecided = self.deciders() - set(self.decisions)
        if undecided:  # the optional exchange's decisions come first
            return {EXCHANGE, NO_EXCHANGE} if seat in undecided else set()
        exchange = self.exchangers()
        if exchange - self.passers:  # the exchange
            if seat not in exchange - self.passers:
                return set()
            combos = combinations(sorted(self.holding[seat]), r.blind_nil_exchange)
            return {frozenset(parse_card(c) for c in combo) for combo in combos}
        leader = self.leader
        if leader is None:
            first = str(r.first_lead)
            if first == "dealer":
                leader = self.dealer
            elif first == "two_of_clubs":
                leader = next(s for s in range(n) if "2C" in self.holding[s])
            else:
                leader = (self.dealer + 1) % n
        assert self.m.view(None).spades_broken == self.broken
        if seat != (leader + len(self.trick)) % n:
            return set()
        hand = self.holding[seat]
        if self.trick:
            led = suit(self.trick[0][1], self.rules.deuces_high)
            options = {c for c in hand if suit(c, self.rules.deuces_high) == led} or hand
        else:
            options = (
                hand
                if self.broken
                else {c for c in hand if suit(c, self.rules.deuces_high) != self.trump} or hand
            )
        return {Play(parse_card(c)) for c in options}


def _cards(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def choose(rules: Ruleset, legal: list[Action], rnd: random.Random) -> Action:
    """A random legal action; bids lean towards a fair share of the tricks so
    that matches last a few hands instead of collapsing to the mercy score."""
    if BLIND_NIL in legal:
        return BLIND_NIL if rnd.random() < 0.3 else LOOK
    bids = [a for a in legal if isinstance(a, Bid)]
    if bids and rnd.random() < 0.9:
        fair = rules.tricks_per_hand // rules.players + 1
        return rnd.choice([b for b in bids if b.tricks <= fair])
    return rnd.choice(legal)


def play_randomly(
    rules: Ruleset, seed: int, rnd: random.Random, on_step: Any = None, **checks: bool
) -> tuple[Match, list[Event]]:
    """Play up to MAX_HANDS hands of random legal actions, followed by a
    Referee with the given checks; ``on_step(m, ref)`` runs before every
    action.  Returns the match and every event."""
    m = Match(rules, seed=seed)
    ref = Referee(m, rules, **checks)
    events = list(m.opening_events)
    ref.check_views()
    while not m.is_over and m.hand_number < MAX_HANDS:
        if on_step is not None:
            on_step(m, ref)
        seats = m.seats_to_act()
        seat = m.to_act if m.to_act in seats and rnd.random() < 0.7 else rnd.choice(seats)
        action = choose(rules, m.legal_actions(seat), rnd)
        new = m.apply(seat, action)
        ref.follow(new, (seat, action))
        ref.check_views()
        events += new
    assert ref.hands_scored == m.hand_number + (1 if m.is_over else 0)
    return m, events


# -- the properties -------------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS)
@SETTINGS
@given(seed=seeds, rnd=randoms)
def test_scores_after_every_hand_equal_a_fresh_computation(
    config: str, seed: int, rnd: random.Random
) -> None:
    rules = CONFIGS[config]
    m, _ = play_randomly(rules, seed, rnd, check_scores=True)
    assert m.winner == expected_winner(rules, list(m.scores))
    assert m.is_over == (m.winner is not None)


@pytest.mark.parametrize("config", CONFIGS)
@SETTINGS
@given(seed=seeds, rnd=randoms)
def test_no_seat_or_spectator_sees_a_card_it_may_not_see(
    config: str, seed: int, rnd: random.Random
) -> None:
    play_randomly(CONFIGS[config], seed, rnd, check_leaks=True)


def check_conservation(m: Match, ref: Referee) -> None:
    rules, h = m.rules, m.state.hand
    deck = expected_deck(rules)
    if rules.players == 2:
        check_two_player_conservation(m, ref, deck)
        return
    size = len(deck) // rules.players
    dealt = [{card_name(c) for c in _cards(mask)} for mask in h.dealt]
    assert [len(d) for d in dealt] == [size] * rules.players
    assert set().union(*dealt) == deck  # every card dealt exactly once
    held = [{card_name(c) for c in _cards(mask)} for mask in h.hands]
    played = [card_name(c) for _, cards, _ in h.completed for c in cards]
    played += [card_name(c) for c in h.trick]
    everything = [c for hand in held for c in hand] + played
    assert len(everything) == len(set(everything))  # held once, played at most once
    assert set(everything) == deck  # hands + played = deck
    # the cards each seat holds are those dealt, passed and played, event by event
    assert held == ref.holding
    assert played == ref.played


def check_two_player_conservation(m: Match, ref: Referee, deck: set[str]) -> None:
    """Kept + discarded + the stock left = the stock = the deck, each card once."""
    h = m.state.hand
    names = [card_name(c) for c in h.stock]
    assert len(names) == 52 and set(names) == deck
    held = [{card_name(c) for c in _cards(mask)} for mask in h.hands]
    gone = [{card_name(c) for c in _cards(mask)} for mask in h.discarded]
    played = [card_name(c) for _, cards, _ in h.completed for c in cards]
    played += [card_name(c) for c in h.trick]
    everything = [c for x in (*held, *gone) for c in x] + played + names[h.drawn :]
    assert len(everything) == len(set(everything)) == 52 and set(everything) == deck
    assert gone == ref.discards and held == ref.holding and played == ref.played
    dealt = [{card_name(c) for c in _cards(mask)} for mask in h.dealt]
    if m.phase.value == "draw":
        assert dealt == [set(), set()]
    else:
        assert [len(d) for d in dealt] == [13, 13] and dealt == ref.dealt


@pytest.mark.parametrize("config", CONFIGS)
@SETTINGS
@given(seed=seeds, rnd=randoms)
def test_card_conservation(config: str, seed: int, rnd: random.Random) -> None:
    play_randomly(CONFIGS[config], seed, rnd, on_step=check_conservation)


@functools.cache
def deck_cards(rules: Ruleset) -> list[int]:
    return [parse_card(c) for c in sorted(expected_deck(rules))]


def universe(m: Match, seat: int, rnd: random.Random) -> list[Any]:
    """Candidate actions for a seat: every card, bids around the range, the
    blind nil choices, and a few passes, legal or not."""
    rules = m.rules
    deck = deck_cards(rules)
    out: list[Any] = [Play(c) for c in deck]
    out += [Bid(n) for n in range(-1, rules.tricks_per_hand + 2)]
    out += [BLIND_NIL, LOOK, EXCHANGE, NO_EXCHANGE]
    out += [NameTrump(s) for s in range(-1, 5)]
    out += [DRAW_KEEP, DRAW_DISCARD]
    k = rules.blind_nil_exchange or 2
    mine = list(_cards(m.state.hand.hands[seat]))
    for pool in (mine, deck):
        for size in (k - 1, k, k + 1):
            if 0 <= size <= len(pool):
                out.append(PassCards(tuple(rnd.sample(pool, size))))
    return out


def key(action: Any) -> Any:
    return frozenset(action.cards) if isinstance(action, PassCards) else action


def frozen(m: Match) -> tuple[Any, ...]:
    """The whole state as text (every field of every dataclass in it), every
    view, and the length of the record: what a rejection must not change."""
    views = (*tuple(m.view(s) for s in range(m.rules.players)), m.view(None))
    return repr(m.state), views, len(m.actions)


def check_legality(m: Match, ref: Referee, rnd: random.Random) -> None:
    before = frozen(m)
    for seat in range(m.rules.players):
        legal = {key(a) for a in m.legal_actions(seat)}
        assert legal == ref.expected_legal(seat), f"seat {seat}"
        others = [a for a in universe(m, seat, rnd) if key(a) not in legal]
        for action in rnd.sample(others, min(10, len(others))):
            try:
                m.apply(seat, action)
            except IllegalAction:
                continue
            pytest.fail(f"seat {seat} was allowed {action}, not among its legal actions")
    with pytest.raises(IllegalAction):  # no such seat
        m.apply(m.rules.players, m.legal_actions(m.seats_to_act()[0])[0])
    assert frozen(m) == before
    if rnd.random() < 0.1:  # now and then: every legal action of a seat is accepted
        seat = rnd.choice(m.seats_to_act())
        for action in m.legal_actions(seat)[:15]:
            copy.deepcopy(m).apply(seat, action)


@pytest.mark.parametrize("config", CONFIGS)
@SETTINGS
@given(seed=seeds, rnd=randoms)
def test_legal_actions_are_accepted_and_others_refused_without_change(
    config: str, seed: int, rnd: random.Random
) -> None:
    checker = random.Random(rnd.random())
    m, _ = play_randomly(
        CONFIGS[config], seed, rnd, on_step=lambda m, ref: check_legality(m, ref, checker)
    )
    if m.is_over:
        for seat in range(m.rules.players):
            assert m.legal_actions(seat) == []
            with pytest.raises(IllegalAction):
                m.apply(seat, Bid(1))


@pytest.mark.parametrize("config", CONFIGS)
@SETTINGS
@given(seed=seeds, rnd=randoms)
def test_same_seed_and_actions_give_the_same_events(
    config: str, seed: int, rnd: random.Random
) -> None:
    rules = CONFIGS[config]
    m, events = play_randomly(rules, seed, rnd)
    again = Match(rules, seed=seed)
    replayed = list(again.opening_events)
    for seat, action in m.actions:
        replayed += again.apply(seat, action)
    assert [event_to_dict(e) for e in replayed] == [event_to_dict(e) for e in events]
    assert again.scores == m.scores and again.view(None) == m.view(None)


def test_the_random_matches_reach_both_exchange_decisions() -> None:
    """The polish configurations above do exercise the optional exchange: over a
    few seeds, blind nil bidders both take it and decline it."""
    seen: set[bool] = set()
    for seed in range(6):
        _, events = play_randomly(CONFIGS["polish_deficit_0"], seed, random.Random(seed))
        seen |= {e.exchange for e in events if type(e).__name__ == "ExchangeDecided"}
    assert seen == {True, False}


def test_the_random_matches_name_every_suit_as_trump() -> None:
    """The auction configurations above do play hands whose trump is not spades."""
    seen: set[int] = set()
    for seed in range(6):
        _, events = play_randomly(CONFIGS["auction"], seed, random.Random(seed))
        seen |= {e.suit for e in events if type(e).__name__ == "TrumpNamed"}
    assert seen == {0, 1, 2, 3}
