"""The omniscient reference bot: a perfect-information search, a yardstick for
measurements only.

``omniscient(match, seat, seed, budget_ms)`` decides for ``seat`` from the
match itself: every hand, and in the two players' draw the stock's order.  It
is not a level a table can offer, so it is not in ``BOTS`` (a bot there gets a
``SeatView`` and nothing else); the duplicate tournament resolves it by name
(``tournament.MATCH_BOTS``), and measurements put a bot between Hard and it
(docs/bots.md, "Compiled build and the omniscient yardstick").

It is Expert's search (bots/expert.py) on the one true world instead of
sampled ones, with the same rollout policy (:mod:`.rollout`), the same
valuation of a finished hand (``expert._side_value``: ``score_hand`` from the
current scores, bags at their long-run cost, the match bonus) and the same
calibrated work count.

Play.  Each candidate card is played on the true position and the hand
finished by the rollout policy, every candidate once a round, round after
round until the budget is spent, and the best mean value wins.  On one world
the policy is deterministic, so the first round is the policy's own line of
play and every later round plays :data:`NOISE` of the cards at random instead:
the mean judges a card by the lines near the policy's, not by the policy's one
line alone (a card it misplays late in the hand would otherwise decide the
choice, as sampled worlds keep it from doing in Expert).  Cards that no other
seat's card and no card of the trick in progress separate are equivalent and
tried once (:func:`choices`).

Bidding.  Expert's bidding search on the true deal: the hand played out by the
policy once taking tricks and, when nil is worth trying, once as a nil (under
suicide the roles as Expert values them), each bid valued over those outcomes
with Expert's spread of the side's tricks (``expert.TRICK_SPREAD``: the real
play is not the policy's).  The floor of sure trumps is Expert's, the nil
screen ``expert.NIL_SCREEN`` (Expert's own is wider, ``expert.NIL_TRY``, and
Expert adds ``expert.NIL_BONUS`` to a nil, to make up for rollouts that see
the nil's cards: on the true deal there is nothing to make up).  One
playout each: the policy is deterministic, and rounds with :data:`NOISE`
made the bids worse (docs/bots.md).

Auction trump.  Each suit as trump on the true deal, valued by rounds of
rollouts as the cards are; the best is named.

Two players' draw.  Both choices on the true stock: the rest of the draw by
the simple rule (``choices.keeps_top``) for both players, then the tricks by
rounds of rollouts as in the play, each player valued as bidding what it took
(at least 1), as Expert values the draw; a tie keeps the simple rule.

Blind nil or look, the optional exchange and the cards passed: Expert's choice
(Expert decides them by rules, not by search, too).

Variants.  As every bot does, it plays a deuces-high hand on the virtual deck
of :mod:`.deuces` and a hand whose trump is not spades with the trump suit and
spades swapped (:mod:`.trump`), so the kernel and the policy see spades as the
one trump suit in rank order; its card is mapped back to a legal action.

The clock.  Like Expert (whose module notes explain the exception), it reads
``time.perf_counter`` only to stop: the work is counted at Expert's
calibrated costs up to ``expert.WORK_SHARE`` of the budget, and the clock
ends the search at ``expert.TIME_SHARE`` of it on a slow or busy machine.  The
first round always completes.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from ..actions import (
    BLIND_NIL,
    DRAW_DISCARD,
    DRAW_KEEP,
    EXCHANGE,
    LOOK,
    Action,
    Bid,
    NameTrump,
    PassCards,
    Play,
)
from ..cards import SPADES
from ..kernel import SimState, first_leader
from ..kernel import play as kernel_play
from ..match import Match
from ..ruleset import SUICIDE_MIN_BID, Ruleset, SpadesBroken
from ..view import SeatView
from .choices import draws, keeps_top
from .deuces import TO_REAL, TO_VIRTUAL, virtual_mask, virtual_rules
from .expert import (
    CARD_US,
    NIL_SCREEN,
    ROLLOUT_US,
    TIME_SHARE,
    WORK_SHARE,
    Outcomes,
    _outcome_key,
    _partner_bid,
    _side_value,
    _sure_tricks,
    expert,
    pick_bid,
)
from .hand_eval import expected_tricks
from .rollout import Table, playout
from .trump import naming, swap_card, swap_mask

NOISE = 0.5
"""Share of the rollout cards played at random instead of by the policy, in
every round of rollouts but the first.  On one world the policy's playout is
deterministic, so one playout a candidate is all the policy alone can tell;
rollouts perturbed this much, averaged, judge a card by more than the one line
of play the policy would follow (measured: docs/bots.md)."""

NAME = "omniscient"
"""The name the tournament knows it by (never a key of ``BOTS``)."""


def omniscient(match: Match, seat: int, seed: int, budget_ms: int = 200) -> Action:
    """The omniscient bot's action for ``seat`` of ``match``, within ``budget_ms``."""
    start = time.perf_counter()
    legal = match.legal_actions(seat)
    if not legal:
        raise ValueError(f"seat {seat} has no legal action now")
    if len(legal) == 1:
        return legal[0]
    view = match.view(seat)
    first = legal[0]
    if isinstance(first, PassCards) or EXCHANGE in legal or BLIND_NIL in legal or LOOK in legal:
        return expert(view, seed, budget_ms)
    rng = random.Random(seed)
    clock = _Clock(budget_ms, start)
    if draws(view):
        return _choose_draw(match, seat, view, rng, clock)
    if isinstance(first, Play):
        return _choose_card(match, seat, legal, rng, clock)
    if isinstance(first, NameTrump):
        return _choose_trump(match, seat, view, rng, clock)
    if isinstance(first, Bid):
        return _choose_bid(match, seat, view, rng)
    return expert(view, seed, budget_ms)


# -- the budget and the numbering of the cards ------------------------------------


class _Clock:
    """Work left, in calibrated microseconds, with a wall-clock guard."""

    __slots__ = ("deadline", "work_us")

    def __init__(self, budget_ms: int, start: float) -> None:
        budget_ms = max(budget_ms, 0)
        self.work_us = budget_ms * 1000 * WORK_SHARE
        self.deadline = start + budget_ms * TIME_SHARE / 1000

    def spend(self, us: float) -> bool:
        """Count ``us`` of work; True when the budget is used up."""
        self.work_us -= us
        return self.work_us <= 0 or time.perf_counter() >= self.deadline


class _Deck:
    """The bots' numbering of one hand's cards: the real one; the deuces-high
    virtual deck; or, under auction trump, the named suit swapped with spades."""

    __slots__ = ("swap", "virtual")

    def __init__(self, rules: Ruleset, trump: int) -> None:
        self.virtual = rules.deuces_high
        self.swap = -1 if trump == SPADES else trump

    def card(self, c: int) -> int:
        if self.virtual:
            return TO_VIRTUAL[c]
        return c if self.swap < 0 else swap_card(c, self.swap)

    def real(self, c: int) -> int:
        if self.virtual:
            return TO_REAL[c]
        return c if self.swap < 0 else swap_card(c, self.swap)  # the swap undoes itself

    def mask(self, m: int) -> int:
        if self.virtual:
            return virtual_mask(m)
        return m if self.swap < 0 else swap_mask(m, self.swap)


def _trumping(rules: Ruleset) -> bool:
    return rules.spades_broken is SpadesBroken.TRUMPING


# -- play: rollouts from the true position ----------------------------------------------


class _Rollouts:
    """Rollouts from true positions of a hand whose bids are all made."""

    __slots__ = ("bags", "bids", "blind", "cache", "clock", "rnd", "rules", "scores", "table")

    def __init__(self, match: Match, clock: _Clock, rng: random.Random) -> None:
        h = match.state.hand
        rules = match.rules
        self.rules = rules
        self.bids = [b if b is not None else 0 for b in h.bids]
        self.blind = tuple(h.blind)
        self.scores = match.scores
        self.bags = match.bags
        self.table = Table(rules, h.bids)
        self.clock = clock
        self.rnd = rng.random
        self.cache: dict[tuple[tuple[int, ...], int], float] = {}

    def value(self, won: Sequence[int], side: int) -> float:
        """``side``'s value of a finished hand, as Expert values it: its points
        minus the other sides' mean, plus or minus ``MATCH_BONUS`` when the
        hand ends the match (``expert._side_value``)."""
        won = tuple(won)
        v = self.cache.get((won, side))
        if v is None:
            v = self.cache[won, side] = _side_value(
                self.rules, self.bids, self.blind, won, self.scores, self.bags, side
            )
        return v

    def best(self, options: Sequence[SimState], side: int) -> int:
        """The index of the option (a position) with the best mean value for
        ``side`` over rounds of one playout each, the first round by the
        policy, the others with :data:`NOISE`, until the budget is spent."""
        totals = [0.0] * len(options)
        cards = 0
        for h in options[0].hands:
            cards += h.bit_count()
        work = len(options) * (ROLLOUT_US + cards * CARD_US)
        noise = 0.0
        table, rnd = self.table, self.rnd
        while True:
            for i, st in enumerate(options):
                totals[i] += self.value(playout(st.copy(), table, rnd, noise), side)
            if self.clock.spend(work):
                break
            noise = NOISE
        return max(range(len(options)), key=totals.__getitem__)


def choices(st: SimState, legal: int) -> list[int]:
    """One card of each group of equivalent cards of ``legal``: cards of a suit
    that no other seat's card and no card of the trick in progress separate."""
    seat = st.to_act
    others = 0
    for s, h in enumerate(st.hands):
        if s != seat:
            others |= h
    for c in st.trick:
        others |= 1 << c
    out: list[int] = []
    prev = -1
    m = legal
    while m:
        low = m & -m
        m ^= low
        c = low.bit_length() - 1
        if prev < 0 or c >> 4 != prev >> 4 or (low - 1) & ~((2 << prev) - 1) & others:
            out.append(c)
        prev = c
    return out


def _position(match: Match, deck: _Deck) -> SimState:
    h = match.state.hand
    return SimState(
        [deck.mask(x) for x in h.hands],
        h.leader,
        h.tricks_won,
        [deck.card(c) for c in h.trick],
        h.spades_broken,
        trumping=_trumping(match.rules),
    )


def _choose_card(
    match: Match, seat: int, legal: list[Action], rng: random.Random, clock: _Clock
) -> Action:
    deck = _Deck(match.rules, match.state.hand.trump)
    st = _position(match, deck)
    mine = 0
    for a in legal:
        if isinstance(a, Play):
            mine |= 1 << deck.card(a.card)
    cands = choices(st, mine)
    pick = cands[0]
    if len(cands) > 1:
        search = _Rollouts(match, clock, rng)
        options = []
        for c in cands:
            child = st.copy()
            kernel_play(child, c)
            options.append(child)
        pick = cands[search.best(options, match.rules.side_of(seat))]
    card = deck.real(pick)
    return next(a for a in legal if isinstance(a, Play) and a.card == card)


def _choose_trump(
    match: Match, seat: int, view: SeatView, rng: random.Random, clock: _Clock
) -> Action:
    """Each suit as trump on the true deal, valued by rollouts as the cards are."""
    rules = match.rules
    h = match.state.hand
    leader = first_leader(rules, h.hands, h.dealer)
    options = [
        SimState([swap_mask(x, suit) for x in h.hands], leader, trumping=_trumping(rules))
        for suit in range(4)
    ]
    suit = _Rollouts(match, clock, rng).best(options, rules.side_of(seat))
    return naming(view, suit)


# -- bidding: Expert's search on the true deal ----------------------------------------


def _choose_bid(match: Match, seat: int, view: SeatView, rng: random.Random) -> Action:
    rules = match.rules
    h = match.state.hand
    deck = _Deck(rules, SPADES)
    eval_rules = virtual_rules(rules) if rules.deuces_high else rules  # the deck's top spades
    hands = [deck.mask(x) for x in h.hands]
    hand = hands[seat]
    options = [a.tricks for a in view.legal_actions if isinstance(a, Bid)]
    try_nil = 0 in options and (rules.suicide or expected_tricks(hand, eval_rules) <= NIL_SCREEN)
    take, nil = _bid_outcomes(match, seat, view, hands, try_nil, rng)
    floor = _sure_tricks(hand, eval_rules)
    return pick_bid(view, seat, options, take, nil, try_nil, floor)


def _bid_outcomes(
    match: Match,
    seat: int,
    view: SeatView,
    hands: list[int],
    try_nil: bool,
    rng: random.Random,
) -> tuple[Outcomes, Outcomes]:
    """The true deal played out by the policy with the seat bidding to take
    tricks and (``try_nil``) bidding nil: ``expert._bid_outcomes`` on one
    world, so one playout each (the policy is deterministic)."""
    rules = match.rules
    partner = rules.partner_of(seat)
    mates = rules.seats_of(rules.side_of(seat))
    sets_role = rules.suicide and partner is not None and view.bids[partner] is None
    take_bids = list(view.bids)
    if sets_role and partner is not None:
        take_bids[partner] = 0
    nil_bids = list(view.bids)
    nil_bids[seat] = 0
    h = match.state.hand
    st = SimState(hands, first_leader(rules, h.hands, h.dealer), trumping=_trumping(rules))
    rnd = rng.random
    won = playout(st.copy(), Table(rules, take_bids), rnd)
    pbid = 0 if sets_role else _partner_bid(view, partner, won)
    take: Outcomes = {_outcome_key(pbid, won, mates): 1.0}
    nil: Outcomes = {}
    if try_nil:
        won = playout(st, Table(rules, nil_bids), rnd)
        pbid = _partner_bid(view, partner, won)
        nil[_outcome_key(max(pbid, SUICIDE_MIN_BID) if sets_role else pbid, won, mates)] = 1.0
    return take, nil


# -- the draw (two players): both choices on the true stock -----------------------------


def _choose_draw(
    match: Match, seat: int, view: SeatView, rng: random.Random, clock: _Clock
) -> Action:
    """Both choices on the true stock, in paired rounds of rollouts as the
    play's; the simple rule on a tie."""
    rules = match.rules
    h = match.state.hand
    stock = h.stock
    top = stock[h.drawn]
    table = Table(rules, [None] * rules.players)  # no bids yet: both play to take tricks
    side = rules.side_of(seat)
    starts: list[SimState] = []
    for kept in (top, stock[h.drawn + 1]):  # keep, then discard
        hands = list(h.hands)
        hands[seat] |= 1 << kept
        drawer = 1 - seat
        for i in range(h.drawn + 2, len(stock), 2):
            c = stock[i]
            hands[drawer] |= 1 << (c if keeps_top(c) else stock[i + 1])
            drawer = 1 - drawer
        starts.append(
            SimState(hands, first_leader(rules, hands, h.dealer), trumping=_trumping(rules))
        )
    work = 2 * (ROLLOUT_US + 2 * rules.hand_size * CARD_US)
    rnd = rng.random
    values: dict[tuple[int, ...], float] = {}
    diff = 0.0  # keep's value minus discard's, summed over the rounds
    noise = 0.0
    while True:
        for sign, st in ((1.0, starts[0]), (-1.0, starts[1])):
            won = tuple(playout(st.copy(), table, rnd, noise))
            v = values.get(won)
            if v is None:
                bids = [max(1, w) for w in won]
                v = values[won] = _side_value(
                    rules, bids, view.blind, won, view.scores, view.bags, side
                )
            diff += sign * v
        if clock.spend(work):
            break
        noise = NOISE
    keep = keeps_top(top) if diff == 0 else diff > 0
    return DRAW_KEEP if keep else DRAW_DISCARD
