"""The Expert bot: determinized Monte-Carlo search over the simulation kernel.

``expert(view, seed, budget_ms)`` decides from the seat's view alone.

Play.  Deal the unseen cards at random to the other seats, consistent with all
that is public (:mod:`.determinize`: hand sizes, cards played, voids shown, the
cards the viewer passed in an exchange) and weight each deal by how well the
other seats' hands fit their bids.  On each deal, play every candidate card and
finish the hand with the heuristic policy of :mod:`.rollout`; score the result
with ``scoring.score_hand`` from the current scores and bags (so bags, nils,
sets, blind nil, the thirteen bid, cutthroat and trick-count scoring all
count; each classic bag is charged its long-run cost, a trick-count bag what it
costs when taken) as the viewer's side's points minus the other sides' (their
mean in cutthroat), plus a bonus or penalty when the hand ends the match.
Every candidate is played on the same deals, and the card with the best
weighted mean wins.  Cards that are
equivalent (touching in the viewer's hand once played cards are set aside) are
tried once.

Bidding.  On sampled deals (weighted by the bids already made) play the whole
hand out twice with the same policy: once with the viewer trying to take
tricks, once as a nil bidder (when nil is allowed and the hand is weak enough
to try).  Each bid is valued by the viewer's side's points over those deals,
with the partner's bid when made, else the tricks the partner took in the
rollout (a partner bids what it takes); the best expected bid is chosen, a
nil counting :data:`NIL_BONUS` more than its rollouts say (in them every seat
sees the sampled deal, so the opponents attack the nil knowing its cards) and
tried on hands of at most :data:`NIL_TRY` expected tricks.  Under suicide
(one partner of each side nil, the other 4 or more) the same search values
the roles: the second of a side to bid searches the role left
to it, and the first plays its take-tricks rollouts beside a nil partner and
its nil rollouts beside a partner bidding what it takes, at least 4 (nil is
always tried there, as one of the two must bid it, and has no bonus).
Blind nil is bid from the scores alone (a side trailing far enough that +/-200
is worth the gamble); the exchange passes the highest cards as the blind nil
bidder and the lowest as the partner.  An optional exchange is taken by
Normal's rule (``choices.wants_exchange``), not by search: valuing it would
mean sampling the partner's unseen hand, guessing which two cards it passes
and playing the whole hand out both ways, for a choice the rule gets right
nearly always (giving away the two most dangerous cards is what makes a blind
nil).

Auction trump.  The named suit is chosen by search: on sampled deals the hand
is played out once per suit as trump and the best weighted mean wins.  A hand
whose trump is not spades is played on the view with that suit and spades
swapped (:mod:`.trump`), so determinization, rollout policy and kernel all
treat the named suit as trump.  Bidding stays spade-based.

Two players (the draw of RULES.md 3.1).  Bidding and play are the searches
above; the determinization sets the viewer's own discards aside and deals the
opponent its hand from the other unseen cards, the rest (its discards) going
out of play.  Each turn of the draw is searched too.  A sample shuffles the
unseen cards (neither kept, discarded, nor the top card) into the rest of the
stock, the opponent's kept cards and its discards; on it the seat keeps the
top card, or discards it and keeps the next, the rest of the draw goes by the
simple rule (``choices.keeps_top``) for both players, and the 13 tricks by the
rollout policy, both players taking all they can.  Each player is valued as
bidding what it took (at least 1), as the bidding search values a partner
still to bid: Expert bids by search once its hand is known, so a card is worth
the tricks it takes.  Under a fixed bid rule (Hard's estimate, rounded) a card
would be scored instead mostly by whether it moves that bid across the tricks
the hand takes, not by the tricks it adds.  Both choices are played on
the same samples, and the simple rule stands unless the mean difference
clears :data:`DRAW_Z` standard errors: most turns are close calls, which the
noise of a few dozen samples would otherwise decide (measured against Expert
drawing by the simple rule: docs/bots.md, "Two players").

The clock.  ``engine/`` reads no clock; a bot's time budget needs one, so the
bots package reads ``time.perf_counter`` — in this module only, and only to
stop: that is the one exception.  The work itself is counted, not timed: deals
sampled and cards simulated, at calibrated costs (:data:`COSTS`, the pure or
the compiled build's), up to :data:`WORK_SHARE` of ``budget_ms``, so on an unloaded
machine a decision is a function of the view and the seed.  The clock is a
guard that ends the search at :data:`TIME_SHARE` of the budget when the machine
is slower or busy.  At least one deal is always simulated.
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
    NO_EXCHANGE,
    Action,
    Bid,
    PassCards,
    Play,
    play,
)
from ..cards import SPADE_MASK, SPADES, cards_of
from ..events import SideScore
from ..kernel import SimState, first_leader
from ..kernel import play as kernel_play
from ..ruleset import SUICIDE_MIN_BID, BagRule, Ruleset, Scoring, SpadesBroken
from ..scoring import match_winner, score_hand
from ..view import SeatView
from .choices import draws, keeps_top, wants_exchange
from .determinize import Knowledge, bid_weight, knowledge_from_view, sample_deal
from .deuces import deuces_aware
from .hand_eval import expected_tricks
from .rollout import Table, playout
from .trump import names_trump, naming, swap_mask, trump_aware

PURE_COSTS = (4.0, 100.0, 3.0, 0.5)
"""Calibration of the pure-Python build: microseconds to simulate one card
with the rollout policy, to sample, weight and set up one deal, to start one
rollout and score its result, and to simulate one turn of the two players'
draw by the simple rule.

The first three are fitted (least squares, then rounded up) to the elapsed
time of whole decisions on the reference machine, a 2-core VM with Python
3.11, where they came out at about 3.2-5, 70-110 and 0-3 microseconds; the
draw's came out at about 0.2, rounded up."""

COMPILED_SPEEDUP = 0.29
"""The compiled build does the same work in this share of the pure build's
time (``bench/expert_calibrate.py`` measures it), so its costs are the pure
ones times this: the same budget buys it more work."""

COMPILED_COSTS = tuple(c * COMPILED_SPEEDUP for c in PURE_COSTS)


def _compiled() -> bool:
    """Whether this module runs compiled by mypyc (then it is no ``.py`` file)."""
    return not __file__.endswith(".py")


COSTS = COMPILED_COSTS if _compiled() else PURE_COSTS
"""The costs this build counts its work in (card, sample, rollout, draw)."""
CARD_US, SAMPLE_US, ROLLOUT_US, DRAW_US = COSTS

DRAW_Z = 1.0
"""Two players' draw: how many standard errors the search's difference between
keeping and discarding the top card must clear to overrule the simple rule
(``bench/expert_draw.py --draw-z`` measures other values)."""

WORK_SHARE = 0.7
"""The share of the budget that the calibrated work count fills."""

TIME_SHARE = 0.85
"""The share of the budget after which the clock guard stops the search."""

MATCH_BONUS = 300.0
"""Value, in points, of winning the match with this hand (losing: minus it)."""

BAG_COST = 10.0
"""Long-run cost of one bag: 100 per 10 bags, or 50 per 5."""

NIL_SCREEN = 2.5
"""The omniscient bot tries nil in bidding only when the hand's trick count
is at most this."""

NIL_TRY = 3.0
"""Expert tries nil in bidding only when the hand's trick count is at most
this: wider than :data:`NIL_SCREEN`, as Expert values a nil with
:data:`NIL_BONUS` (measured: docs/bots.md)."""

TRICK_SPREAD = ((-2, 0.05), (-1, 0.2), (0, 0.5), (1, 0.2), (2, 0.05))
"""In bidding, each rollout's trick count for the side stands for this spread
of counts (shift, probability): the real play of the hand is less predictable
than rollouts in which every seat sees the sampled deal."""

NIL_BONUS = 30.0
"""Points added to a nil's expected value in Expert's bidding (not in the
omniscient bot's, which bids on the true deal; nor under suicide, where one
of each side must bid nil anyway).  Expert's nil rollouts
underrate a nil: every seat there sees the sampled deal, so the opponents
attack the nil knowing its cards, which they do not at the table.  Measured
against Hard (``bench/expert_ab.py --set expert.NIL_BONUS=...``, docs/bots.md):
omniscient bidding with Expert's play bids a third more nils than Expert and
makes most of them."""

NOISE = 0.0
"""Share of rollout cards played at random instead of by the policy."""


@deuces_aware
@trump_aware
def expert(view: SeatView, seed: int, budget_ms: int = 200) -> Action:
    """The Expert's action for ``view``; ``budget_ms`` bounds the thinking time."""
    start = time.perf_counter()
    legal = view.legal_actions
    if not legal:
        raise ValueError(f"seat {view.seat} has no legal action now")
    if len(legal) == 1:
        return legal[0]
    rng = random.Random(seed)
    budget = _Budget(budget_ms, start)
    if draws(view):
        return _choose_draw(view, rng, budget)
    first = legal[0]
    if isinstance(first, Play):
        return _choose_card(view, rng, budget)
    if isinstance(first, PassCards):
        return _choose_pass(view)
    if names_trump(view):
        return _choose_trump(view, rng, budget)
    if EXCHANGE in legal:
        return _choose_exchange(view)
    if BLIND_NIL in legal or LOOK in legal:
        return _blind_or_look(view)
    return _choose_bid(view, rng, budget)


class _Budget:
    """Work left, in calibrated microseconds, with a wall-clock guard."""

    __slots__ = ("card_us", "deadline", "rollout_us", "sample_us", "work_us")

    def __init__(self, budget_ms: int, start: float) -> None:
        budget_ms = max(budget_ms, 0)
        self.work_us = budget_ms * 1000 * WORK_SHARE
        self.deadline = start + budget_ms * TIME_SHARE / 1000
        self.card_us, self.sample_us, self.rollout_us, _ = COSTS  # read now: benches set COSTS

    def spend(self, rollouts: int, cards: int, extra_us: float = 0.0) -> bool:
        """Count the work of one sampled deal, played out ``rollouts`` times for
        ``cards`` simulated cards in all, plus ``extra_us`` of other work; True
        when the budget is used up."""
        self.work_us -= (
            self.sample_us + rollouts * self.rollout_us + cards * self.card_us + extra_us
        )
        return self.work_us <= 0 or time.perf_counter() >= self.deadline


# -- play ---------------------------------------------------------------------


class _Outcome:
    """The value of a finished hand for the viewer, by tricks won (cached)."""

    __slots__ = ("bags", "bids", "blind", "cache", "rules", "scores", "side")

    def __init__(self, view: SeatView, bids: list[int], seat: int) -> None:
        self.rules = view.rules
        self.bids = bids
        self.blind = view.blind
        self.scores = view.scores
        self.bags = view.bags
        self.side = view.rules.side_of(seat)
        self.cache: dict[tuple[int, ...], float] = {}

    def value(self, won: list[int]) -> float:
        key = tuple(won)
        v = self.cache.get(key)
        if v is None:
            v = self.cache[key] = _side_value(
                self.rules, self.bids, self.blind, key, self.scores, self.bags, self.side
            )
        return v


def _side_value(
    rules: Ruleset,
    bids: list[int],
    blind: tuple[bool, ...],
    won: tuple[int, ...],
    scores: tuple[int, ...],
    bags: tuple[int, ...],
    side: int,
) -> float:
    """The viewer's side's hand points minus the other sides' (their mean), plus
    :data:`MATCH_BONUS` if the hand wins the match for the side, minus it if
    another side wins."""
    result = score_hand(rules, bids, blind, won, scores, bags)
    others = [_points(rules, r) for r in result if r.side != side]
    v = _points(rules, result[side]) - sum(others) / len(others)
    winner = match_winner(rules, [r.score for r in result])
    if winner is not None:
        v += MATCH_BONUS if winner == side else -MATCH_BONUS
    return v


def _points(rules: Ruleset, r: SideScore) -> float:
    """A side's hand points with bags valued at their long-run cost: every bag
    taken costs its share of the penalty (10 points under both bag rules) now,
    instead of the whole penalty on the hand that reaches the limit.  Under
    trick-count scoring every bag is paid when taken, so the points stand."""
    if rules.bag_rule is BagRule.OFF or rules.scoring is Scoring.TRICKS:
        return r.hand_points
    return r.hand_points - r.bag_penalty - BAG_COST * r.bags_taken


def _candidates(view: SeatView, cards: Sequence[int], hand: int) -> list[int]:
    """One card of each group of equivalent legal cards: cards of a suit with
    nothing between them but the viewer's cards and cards of finished tricks
    (a card in the trick in progress does separate two of mine)."""
    gone = ~view.rules.deck_mask
    for d in view.discards:  # two players' draw: out of play, so they separate nothing
        gone |= 1 << d
    for t in view.tricks:
        for played in t.cards:
            gone |= 1 << played
    out: list[int] = []
    prev = -1
    for c in sorted(cards):
        between = ((1 << c) - 1) & ~((2 << prev) - 1) if prev >= 0 else 0
        if prev >= 0 and c >> 4 == prev >> 4 and not between & ~(hand | gone):
            prev = c
            continue
        out.append(c)
        prev = c
    return out


def _choose_card(view: SeatView, rng: random.Random, budget: _Budget) -> Action:
    seat = view.seat
    assert seat is not None
    k = knowledge_from_view(view)
    cards = [a.card for a in view.legal_actions if isinstance(a, Play)]
    cands = _candidates(view, cards, k.hand)
    if len(cands) == 1:
        return play(cands[0])
    bids = [b if b is not None else 0 for b in view.bids]
    table = Table(view.rules, view.bids)
    outcome = _Outcome(view, bids, seat)
    totals = [0.0] * len(cands)
    rollouts = len(cands)
    work = sum(view.hand_sizes) * rollouts
    rnd = rng.random
    while True:
        hands = sample_deal(k, rng)
        w = max(bid_weight(k, hands, view), 1e-9)
        base = SimState(
            hands,
            view.leader,
            view.tricks_won,
            view.trick,
            view.spades_broken,
            trumping=view.rules.spades_broken is SpadesBroken.TRUMPING,
        )
        for i, c in enumerate(cands):
            st = base.copy()
            kernel_play(st, c)
            totals[i] += w * outcome.value(playout(st, table, rnd, NOISE))
        if budget.spend(rollouts, work):
            break
    best = max(range(len(cands)), key=totals.__getitem__)
    return play(cands[best])


def _choose_trump(view: SeatView, rng: random.Random, budget: _Budget) -> Action:
    """Auction trump: on sampled deals (weighted by the bids), play the hand out
    once per suit as trump (the deal with that suit and spades swapped, see
    :mod:`.trump`) and name the suit with the best weighted mean value."""
    seat = view.seat
    assert seat is not None
    rules = view.rules
    k = knowledge_from_view(view)
    bids = [b if b is not None else 0 for b in view.bids]
    table = Table(rules, view.bids)
    outcome = _Outcome(view, bids, seat)
    trumping = rules.spades_broken is SpadesBroken.TRUMPING
    totals = [0.0] * 4
    work = sum(view.hand_sizes) * 4
    rnd = rng.random
    while True:
        hands = sample_deal(k, rng)
        w = max(bid_weight(k, hands, view), 1e-9)
        leader = first_leader(rules, hands, view.dealer)
        for suit in range(4):
            st = SimState([swap_mask(h, suit) for h in hands], leader, trumping=trumping)
            totals[suit] += w * outcome.value(playout(st, table, rnd, NOISE))
        if budget.spend(4, work):
            break
    return naming(view, max(range(4), key=lambda s: (totals[s], s)))


# -- the draw (two players) ---------------------------------------------------


def _choose_draw(view: SeatView, rng: random.Random, budget: _Budget) -> Action:
    """Two players' draw: keep the top card or take the next, by search.

    Each sample completes what the seat cannot see: the unseen cards (neither
    kept, discarded nor the top card) shuffled into the rest of the stock, the
    opponent's kept cards and its discards.  Both choices are played on the
    same sample: the rest of the draw by the simple rule for both players, then
    the 13 tricks by the rollout policy, each player taking what it can and
    valued as bidding what it took (see the module notes for why not a bid
    rule).  The simple rule stands unless the paired difference of the two
    choices is more than :data:`DRAW_Z` standard errors from zero."""
    seat = view.seat
    top = view.stock_top
    assert seat is not None and top is not None and view.hand is not None
    rules = view.rules
    opp = 1 - seat
    mine = 0
    for c in view.hand:
        mine |= 1 << c
    gone = mine | 1 << top
    for c in view.discards:
        gone |= 1 << c
    unseen = cards_of(rules.deck_mask & ~gone)
    below = view.stock_size - 1  # the stock under the top card, in order
    held = view.hand_sizes[opp]
    side = rules.side_of(seat)
    trumping = rules.spades_broken is SpadesBroken.TRUMPING
    table = Table(rules, [None] * rules.players)  # no bids yet: both play to take tricks
    values: dict[tuple[int, ...], float] = {}
    work = 2 * rules.tricks_per_hand * rules.players
    extra = below // 2 * COSTS[3]
    rnd = rng.random
    n = 0
    total = total_sq = 0.0  # of keep's value minus discard's, per sample
    while True:
        rng.shuffle(unseen)
        hands = [0, 0]
        hands[opp] = sum(1 << c for c in unseen[below : below + held])
        # The later turns see the same cards whatever this one keeps, and the
        # simple rule looks at nothing else: one finish serves both choices.
        hands[seat] = mine
        _finish_draw(hands, unseen, below, opp)
        rest = hands[seat]
        diff = 0.0
        for kept in (unseen[0], top):  # diff ends as keep's value minus discard's
            hands[seat] = rest | 1 << kept
            st = SimState(hands, first_leader(rules, hands, view.dealer), trumping=trumping)
            won = tuple(playout(st, table, rnd, NOISE))
            v = values.get(won)
            if v is None:
                bids = [max(1, w) for w in won]
                v = values[won] = _side_value(
                    rules, bids, view.blind, won, view.scores, view.bags, side
                )
            diff = v - diff
        n += 1
        total += diff
        total_sq += diff * diff
        if budget.spend(2, work, extra):
            break
    keep = keeps_top(top)
    mean = total / n
    if n > 1 and mean * mean > DRAW_Z * DRAW_Z * max(total_sq - n * mean * mean, 0.0) / (n - 1) / n:
        keep = mean > 0
    return DRAW_KEEP if keep else DRAW_DISCARD


def _finish_draw(hands: list[int], stock: Sequence[int], end: int, drawer: int) -> None:
    """The draw's turns on ``stock[1:end]`` (two cards a turn, ``drawer`` first,
    then in turn), each by the simple rule, the kept cards added to ``hands``."""
    for i in range(1, end, 2):
        c = stock[i]
        hands[drawer] |= 1 << (c if keeps_top(c) else stock[i + 1])
        drawer = 1 - drawer


# -- bidding ------------------------------------------------------------------


def _choose_bid(view: SeatView, rng: random.Random, budget: _Budget) -> Action:
    seat = view.seat
    assert seat is not None
    rules = view.rules
    options = [a.tricks for a in view.legal_actions if isinstance(a, Bid)]
    k = knowledge_from_view(view)
    try_nil = 0 in options and (rules.suicide or expected_tricks(k.hand, rules) <= NIL_TRY)
    take, nil = _bid_outcomes(view, k, try_nil, rng, budget)
    floor = _sure_tricks(k.hand, rules)  # rollouts are noisy; certain tricks are not
    bonus = 0.0 if rules.suicide else NIL_BONUS
    return pick_bid(view, seat, options, take, nil, try_nil, floor, bonus)


def pick_bid(
    view: SeatView,
    seat: int,
    options: list[int],
    take: Outcomes,
    nil: Outcomes,
    try_nil: bool,
    floor: int,
    nil_bonus: float = 0.0,
) -> Action:
    """The bid of best expected points given the outcomes of the take-tricks and
    nil rollouts, at least ``floor`` (the sure tricks) unless nil; a nil's
    expected points count ``nil_bonus`` more."""
    # A bid further than the spread from every count seen (the side's tricks
    # less the partner's bid) cannot be best.
    fits = [key[1] - key[0] for key in take]
    reach = max(shift for shift, _ in TRICK_SPREAD)
    bids = [b for b in options if b > 0 and min(fits) - reach <= b <= max(fits) + reach]
    if not bids:
        bids = [min((b for b in options if b > 0), default=0)]
    if try_nil and not floor:
        bids.append(0)
    memo: dict[tuple[object, ...], float] = {}
    best_bid, best_value = bids[0], float("-inf")
    for b in bids:
        v = _expected_points(view, seat, b, nil if b == 0 else take, memo)
        if b == 0:
            v += nil_bonus
        if v > best_value:
            best_bid, best_value = b, v
    if best_bid == 0:
        return _bid_action(view, 0)
    at_least = max(best_bid, floor)
    return _bid_action(view, min((b for b in options if b >= at_least), default=max(options)))


Outcomes = dict[tuple[int, ...], float]
"""Weight of each outcome of a hand, keyed by :func:`_outcome_key`."""


def _bid_outcomes(
    view: SeatView, k: Knowledge, try_nil: bool, rng: random.Random, budget: _Budget
) -> tuple[Outcomes, Outcomes]:
    """Sampled outcomes of the hand with the viewer bidding to take tricks, and
    (when ``try_nil``) bidding nil, each played out by the rollout policy."""
    seat = k.seat
    rules = view.rules
    partner = rules.partner_of(seat)
    mates = rules.seats_of(rules.side_of(seat))
    # Under suicide the first of a side to bid gives its partner the other role:
    # bidding to take tricks makes the partner a nil, bidding nil makes it bid 4+.
    sets_role = rules.suicide and partner is not None and view.bids[partner] is None
    take_bids = list(view.bids)
    if sets_role and partner is not None:
        take_bids[partner] = 0
    take_table = Table(rules, take_bids)
    nil_bids = list(view.bids)
    nil_bids[seat] = 0
    nil_table = Table(rules, nil_bids)
    rollouts = 2 if try_nil else 1
    work = sum(view.hand_sizes) * rollouts
    rnd = rng.random
    take: Outcomes = {}
    nil: Outcomes = {}
    while True:
        hands = sample_deal(k, rng)
        w = max(bid_weight(k, hands, view), 1e-9)
        st = SimState(
            hands,
            first_leader(rules, hands, view.dealer),
            trumping=rules.spades_broken is SpadesBroken.TRUMPING,
        )
        won = playout(st.copy(), take_table, rnd, NOISE)
        pbid = 0 if sets_role else _partner_bid(view, partner, won)
        key = _outcome_key(pbid, won, mates)
        take[key] = take.get(key, 0.0) + w
        if try_nil:
            won = playout(st, nil_table, rnd, NOISE)
            pbid = _partner_bid(view, partner, won)
            key = _outcome_key(max(pbid, SUICIDE_MIN_BID) if sets_role else pbid, won, mates)
            nil[key] = nil.get(key, 0.0) + w
        if budget.spend(rollouts, work):
            return take, nil


def _sure_tricks(hand: int, rules: Ruleset) -> int:
    """Trumps held in an unbroken run down from the deck's highest spade: each
    is certain to take a trick, so the bid never goes below their count."""
    n = 0
    spades = rules.deck_mask & SPADE_MASK
    while spades:
        top = 1 << (spades.bit_length() - 1)
        if not hand & top:
            break
        n += 1
        spades ^= top
    return n


def _outcome_key(pbid: int, won: list[int], mates: tuple[int, ...]) -> tuple[int, ...]:
    """What of a hand's outcome the side's score depends on: the partner's bid,
    the side's tricks, and which of its seats took none (a nil made or not)."""
    return (pbid, sum(won[s] for s in mates), *(won[s] == 0 for s in mates))


def _expected_points(
    view: SeatView,
    seat: int,
    bid: int,
    outcomes: dict[tuple[int, ...], float],
    memo: dict[tuple[object, ...], float],
) -> float:
    """The viewer's side's mean hand points for ``bid`` over weighted outcomes
    (keys of :func:`_outcome_key`), the side's tricks spread by :data:`TRICK_SPREAD`.

    ``memo`` keeps side points by what they depend on (the contract, the side's
    tricks, and each seat's nil and whether it took a trick), across bids."""
    rules = view.rules
    side = rules.side_of(seat)
    mates = rules.seats_of(side)
    partner = rules.partner_of(seat)
    bids = [0] * rules.players
    bids[seat] = bid
    total = weight = 0.0
    for (pbid, taken, *none), w in outcomes.items():
        if partner is not None:
            bids[partner] = pbid
        takers = [s for s, z in zip(mates, none, strict=True) if not z]
        if not takers:  # every seat of the side took nothing: that is exact
            spread: tuple[tuple[int, float], ...] = ((0, 1.0),)
        else:
            spread = TRICK_SPREAD
        for shift, p in spread:
            t = min(max(taken + shift, len(takers)), rules.tricks_per_hand)
            # Any split of the side's tricks with the same seats at zero scores the same.
            won = [0] * rules.players
            for s in takers:
                won[s] = 1
            if takers:
                won[takers[0]] += t - len(takers)
            key = (sum(bids[s] for s in mates), t, *((bids[s] == 0, won[s] == 0) for s in mates))
            points = memo.get(key)
            if points is None:
                result = score_hand(rules, bids, view.blind, won, view.scores, view.bags)
                points = memo[key] = _points(rules, result[side])
            total += w * p * points
        weight += w
    return total / weight


def _bid_action(view: SeatView, n: int) -> Action:
    for a in view.legal_actions:
        if isinstance(a, Bid) and a.tricks == n:
            return a
    raise AssertionError(n)


def _partner_bid(view: SeatView, partner: int | None, won: list[int]) -> int:
    """The partner's bid: as made, or when still to come, the tricks it took in
    the rollout (at least 1: a partner that takes nothing is not a nil bidder)."""
    if partner is None:
        return 0
    known = view.bids[partner]
    return known if known is not None else max(1, won[partner])


def _blind_or_look(view: SeatView) -> Action:
    """Blind nil when the side trails far enough that +/-200 is worth it."""
    seat = view.seat
    if BLIND_NIL not in view.legal_actions or seat is None:
        return LOOK
    rules = view.rules
    partner = rules.partner_of(seat)
    if partner is not None and view.bids[partner] == 0:
        return LOOK  # two nils on one side are too much
    side = rules.side_of(seat)
    mine = view.scores[side]
    best_other = max(s for i, s in enumerate(view.scores) if i != side)
    deficit = best_other - mine
    exchange = rules.partnerships and rules.blind_nil_exchange > 0
    need = 200 if exchange else 300
    near_end = best_other >= rules.target_score - 120
    if deficit >= need or (near_end and deficit >= 100):
        return BLIND_NIL
    return LOOK


def _choose_exchange(view: SeatView) -> Action:
    """Take an optional exchange unless the hand is already a safe nil."""
    hand = 0
    for c in view.hand or ():
        hand |= 1 << c
    return EXCHANGE if wants_exchange(view, hand) else NO_EXCHANGE


def _choose_pass(view: SeatView) -> Action:
    """As the blind nil bidder pass the highest cards (spades first); as its
    partner, the lowest side-suit cards."""
    seat = view.seat
    assert seat is not None and view.hand is not None
    n = view.rules.blind_nil_exchange

    def danger(c: int) -> int:
        return (c & 15) + (16 if c >> 4 == SPADES else 0)

    ranked = sorted(view.hand, key=danger, reverse=view.blind[seat])
    chosen = set(ranked[:n])
    for a in view.legal_actions:
        if isinstance(a, PassCards) and set(a.cards) == chosen:
            return a
    return view.legal_actions[0]
