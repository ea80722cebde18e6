"""Scoring a hand and deciding whether the match is over.

Pure functions of bids, tricks and the running totals, so the score after any
hand can be recomputed from the record alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .events import SideScore
from .ruleset import BagRule, Ruleset, Scoring, SetPenalty

NIL_POINTS: Final = 100
BLIND_NIL_POINTS: Final = 200
_BAG_LIMITS: Final = {BagRule.TEN_FOR_100: (10, 100), BagRule.FIVE_FOR_50: (5, 50)}
TRICK_BAGS_CHEAP: Final = 10
"""Trick-count scoring: a bag that brings the side's running total to at most
this costs 1 point; a bag that brings it above costs 10."""
# The enum members compared in the hot path, as Final names: compiled, a
# static load and a pointer comparison instead of two attribute look-ups.
_TRICKS: Final = Scoring.TRICKS
_TEN_PER_BID: Final = SetPenalty.TEN_PER_BID
_BAGS_OFF: Final = BagRule.OFF
_TEN_FOR_100: Final = BagRule.TEN_FOR_100


def score_hand(
    rules: Ruleset,
    bids: Sequence[int],
    blind: Sequence[bool],
    tricks: Sequence[int],
    scores: Sequence[int],
    bags: Sequence[int],
) -> tuple[SideScore, ...]:
    """Each side's result for one hand, given totals before it."""
    # Plain loops, no generators: this runs once per hand of every Monte-Carlo
    # playout (kernel.random_hand) as well as in the public API.
    if rules.partnerships:
        return (
            _score_side(rules, 0, 2, bids, blind, tricks, scores[0], bags[0]),
            _score_side(rules, 1, 3, bids, blind, tricks, scores[1], bags[1]),
        )
    out: list[SideScore] = []
    for side in range(rules.players):
        out.append(_score_side(rules, side, -1, bids, blind, tricks, scores[side], bags[side]))
    return tuple(out)


def _score_side(  # noqa: PLR0915 - one straight-line function, on purpose
    rules: Ruleset,
    seat: int,
    partner: int,
    bids: Sequence[int],
    blind: Sequence[bool],
    tricks: Sequence[int],
    score_before: int,
    bags_before: int,
) -> SideScore:
    """The result of the side of ``seat`` (and ``partner``, -1 for none); the
    side's number is ``seat``'s, as ``rules.seats_of`` lists it first."""
    bid = bids[seat]
    contract = bid
    taken = tricks[seat]
    bid_all = 0  # the side's seats whose own bid is every trick
    all_tricks = rules.hand_size  # rules.tricks_per_hand
    if bid == all_tricks:
        bid_all = 1
    nil_points = 0
    if bid == 0:
        value = BLIND_NIL_POINTS if blind[seat] else NIL_POINTS
        nil_points = value if taken == 0 else -value
    if partner >= 0:
        pbid = bids[partner]
        ptaken = tricks[partner]
        contract += pbid
        taken += ptaken
        if pbid == all_tricks:
            bid_all += 1
        if pbid == 0:
            value = BLIND_NIL_POINTS if blind[partner] else NIL_POINTS
            nil_points += value if ptaken == 0 else -value
    bags_taken = 0
    tricks_scoring = rules.scoring is _TRICKS
    if tricks_scoring:
        # seed 003: made scores the contract, overtricks nothing; each trick
        # short of a set contract is a bag.
        contract_points = contract if taken >= contract else 0
        bags_taken = max(0, contract - taken)
    elif taken >= contract:
        contract_points = 10 * contract + (taken - contract)
        bags_taken = taken - contract
    else:
        contract_points = -10 * contract if rules.set_penalty is _TEN_PER_BID else 0
    thirteen = rules.thirteen_bid
    if thirteen and taken < all_tricks:
        # seed 003: a player whose own bid is every trick, and whose side takes
        # fewer, brings the side that many bags (a 13 made of 7 + 6 does not).
        bags_taken += all_tricks * bid_all
    hand_points = contract_points + nil_points
    if thirteen and contract == all_tricks and taken == all_tricks:
        hand_points *= 2
    bag_penalty = 0
    bags = bags_before
    if tricks_scoring:
        bags += bags_taken
        cheap = max(0, min(bags, TRICK_BAGS_CHEAP) - bags_before)
        bag_penalty = -(cheap + 10 * (bags_taken - cheap))
    else:
        bag_rule = rules.bag_rule
        if bag_rule is not _BAGS_OFF:
            limit, penalty = (10, 100) if bag_rule is _TEN_FOR_100 else _BAG_LIMITS[bag_rule]
            bags += bags_taken
            bag_penalty = -penalty * (bags // limit)
            bags %= limit
        else:
            bags_taken = 0
    hand_points += bag_penalty
    # Positional: SideScore's constructor is the dataclass's, Python code even
    # in the compiled build, and keywords cost a dict on top.
    return SideScore(
        seat,  # side
        contract,
        taken,  # tricks
        contract_points,
        nil_points,
        bags_taken,
        bag_penalty,
        hand_points,
        score_before + hand_points,  # score
        bags,
    )


def match_winner(rules: Ruleset, scores: Sequence[int]) -> int | None:
    """The winning side once the match is over, else None.

    Over when a side reaches the target or falls to the mercy score; the
    highest score wins, and a tie for the highest plays another hand.
    """
    # One loop rather than max, min, count and index: compiled, each of those
    # is a look-up in builtins and a generic call, and this runs once a hand.
    top = low = scores[0]
    winner = 0
    tied = False
    for side, score in enumerate(scores):
        if score > top:
            top, winner, tied = score, side, False
        elif score == top and side:
            tied = True
        low = min(low, score)
    mercy = rules.mercy_score
    reached = top >= rules.target_score or (mercy is not None and low <= mercy)
    if not reached or tied:
        return None
    return winner


def blind_nil_eligible(rules: Ruleset, side: int, scores: Sequence[int]) -> bool:
    """Blind nil is open to a side trailing the best other side by the deficit."""
    if not rules.blind_nil:
        return False
    if rules.blind_nil_deficit == 0:
        return True
    best_other = max(s for i, s in enumerate(scores) if i != side)
    return best_other - scores[side] >= rules.blind_nil_deficit
