"""Scoring a hand and deciding whether the match is over.

Pure functions of bids, tricks and the running totals, so the score after any
hand can be recomputed from the record alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from .events import SideScore
from .ruleset import BagRule, Ruleset, Scoring, SetPenalty

NIL_POINTS = 100
BLIND_NIL_POINTS = 200
_BAG_LIMITS = {BagRule.TEN_FOR_100: (10, 100), BagRule.FIVE_FOR_50: (5, 50)}
TRICK_BAGS_CHEAP = 10
"""Trick-count scoring: a bag that brings the side's running total to at most
this costs 1 point; a bag that brings it above costs 10."""


def score_hand(
    rules: Ruleset,
    bids: Sequence[int],
    blind: Sequence[bool],
    tricks: Sequence[int],
    scores: Sequence[int],
    bags: Sequence[int],
) -> tuple[SideScore, ...]:
    """Each side's result for one hand, given totals before it."""
    return tuple(
        _score_side(rules, side, bids, blind, tricks, scores[side], bags[side])
        for side in range(rules.sides)
    )


def _score_side(
    rules: Ruleset,
    side: int,
    bids: Sequence[int],
    blind: Sequence[bool],
    tricks: Sequence[int],
    score_before: int,
    bags_before: int,
) -> SideScore:
    seats = rules.seats_of(side)
    contract = sum(bids[s] for s in seats)
    taken = sum(tricks[s] for s in seats)
    all_tricks = rules.tricks_per_hand
    bags_taken = 0
    tricks_scoring = rules.scoring is Scoring.TRICKS
    if tricks_scoring:
        # seed 003: made scores the contract, overtricks nothing; each trick
        # short of a set contract is a bag.
        contract_points = contract if taken >= contract else 0
        bags_taken = max(0, contract - taken)
    elif taken >= contract:
        contract_points = 10 * contract + (taken - contract)
        bags_taken = taken - contract
    else:
        contract_points = -10 * contract if rules.set_penalty is SetPenalty.TEN_PER_BID else 0
    if rules.thirteen_bid and taken < all_tricks:
        # seed 003: a player whose own bid is every trick, and whose side takes
        # fewer, brings the side that many bags (a 13 made of 7 + 6 does not).
        bags_taken += all_tricks * sum(1 for s in seats if bids[s] == all_tricks)
    nil_points = 0
    for s in seats:
        if bids[s] == 0:
            value = BLIND_NIL_POINTS if blind[s] else NIL_POINTS
            nil_points += value if tricks[s] == 0 else -value
    hand_points = contract_points + nil_points
    if rules.thirteen_bid and contract == all_tricks and taken == all_tricks:
        hand_points *= 2
    bag_penalty = 0
    bags = bags_before
    if tricks_scoring:
        bags += bags_taken
        cheap = max(0, min(bags, TRICK_BAGS_CHEAP) - bags_before)
        bag_penalty = -(cheap + 10 * (bags_taken - cheap))
    elif rules.bag_rule is not BagRule.OFF:
        limit, penalty = _BAG_LIMITS[rules.bag_rule]
        bags += bags_taken
        bag_penalty = -penalty * (bags // limit)
        bags %= limit
    else:
        bags_taken = 0
    hand_points += bag_penalty
    return SideScore(
        side=side,
        contract=contract,
        tricks=taken,
        contract_points=contract_points,
        nil_points=nil_points,
        bags_taken=bags_taken,
        bag_penalty=bag_penalty,
        hand_points=hand_points,
        score=score_before + hand_points,
        bags=bags,
    )


def match_winner(rules: Ruleset, scores: Sequence[int]) -> int | None:
    """The winning side once the match is over, else None.

    Over when a side reaches the target or falls to the mercy score; the
    highest score wins, and a tie for the highest plays another hand.
    """
    top = max(scores)
    reached = top >= rules.target_score or (
        rules.mercy_score is not None and min(scores) <= rules.mercy_score
    )
    if not reached or list(scores).count(top) > 1:
        return None
    return list(scores).index(top)


def blind_nil_eligible(rules: Ruleset, side: int, scores: Sequence[int]) -> bool:
    """Blind nil is open to a side trailing the best other side by the deficit."""
    if not rules.blind_nil:
        return False
    if rules.blind_nil_deficit == 0:
        return True
    best_other = max(s for i, s in enumerate(scores) if i != side)
    return best_other - scores[side] >= rules.blind_nil_deficit
