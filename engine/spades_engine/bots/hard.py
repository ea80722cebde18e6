"""Hard: Normal's judgement plus card counting and a plan for both sides.

* Blind nil only in desperation: its side trails the leader by 200 or more and
  the leader is within 150 of the target, the partner has not bid nil and has
  not bid below 3.  Otherwise look.
* Bid like Normal, one notch fuller when the side's bags are near the penalty
  (classic scoring only: trick-count bags come from sets, not overtricks) or
  the partner bid nil (covering takes tricks).  Under suicide, as Normal: the
  first of the side bids nil when the hand suits it, else at least 4; the
  second takes the role left to it.
* Play with ``CardCount(memory=True)`` — every card played this hand, the voids
  players have shown, the cards passed to the partner — and ``plan=True``:
  beside Normal's tactics it attacks an opponent's live nil (leads low in suits
  the nil still holds, never beats its winning card, keeps the card to beat low
  before it), keeps taking tricks to set the other side while a set is in reach
  and the bags are affordable (always, under trick-count scoring), ducks once
  it is out of reach (classic scoring), and when its own side is set anyway
  plays only to hurt the other side.
* With auction trump: name the longest suit, ties to the strongest
  (``trump.simple_trump``); play a named suit as spades (``trump.trump_aware``).
* Take an optional exchange after its blind nil as Normal does
  (``choices.wants_exchange``).
"""

from __future__ import annotations

from ..actions import Action
from ..ruleset import BagRule, Scoring
from ..view import SeatView
from .choices import Decision, decide_exchange, draws, exchange_pass, simple_draw, wants_exchange
from .counting import CardCount
from .deuces import deuces_aware
from .hand_eval import expected_tricks
from .normal import bid_rounding, wants_nil
from .tactics import Tactics
from .trump import names_trump, simple_trump, trump_aware

_BAG_LIMIT = {BagRule.TEN_FOR_100: 10, BagRule.FIVE_FOR_50: 5}


def wants_blind_nil(view: SeatView) -> bool:
    seat = view.seat
    if seat is None:
        return False
    r = view.rules
    side = r.side_of(seat)
    best_other = max(s for i, s in enumerate(view.scores) if i != side)
    if best_other - view.scores[side] < 200 or best_other < r.target_score - 150:
        return False
    partner = r.partner_of(seat)
    if partner is not None:
        partner_bid = view.bids[partner]
        if partner_bid is not None and partner_bid < 3:
            return False
    return True


def hard_bid(view: SeatView, d: Decision, hand: int) -> int:
    r = view.rules
    assert view.seat is not None
    estimate = expected_tricks(hand, r)
    if wants_nil(view, d, hand, estimate):
        return 0
    # classic bags come from overtricks: near the limit, bid fuller (under
    # trick-count scoring bags come from sets, so never)
    limit = _BAG_LIMIT.get(r.bag_rule) if r.scoring is Scoring.CLASSIC else None
    if limit is not None and view.bags[r.side_of(view.seat)] >= limit - 3:
        estimate += 0.25
    partner = r.partner_of(view.seat)
    if partner is not None and view.bids[partner] == 0:
        estimate += 0.3
    return max(1, int(estimate + bid_rounding(r)))


@deuces_aware
@trump_aware
def hard_bot(view: SeatView, seed: int, budget_ms: int = 0) -> Action:
    if draws(view):  # two players
        return simple_draw(view)
    if names_trump(view):  # auction trump
        return simple_trump(view)
    d = Decision(view)
    if d.plays:
        hand = d.hand
        cc = CardCount(view, hand, memory=True)
        return d.play(Tactics(view, hand, d.play_mask(), cc, plan=True).choose())
    if d.decisions:
        return decide_exchange(d, wants_exchange(view, d.hand))
    if d.passes:
        return d.pass_cards(exchange_pass(view, d.hand, len(d.passes[0].cards)))
    if d.blind_nil is not None and wants_blind_nil(view):
        return d.blind_nil
    if d.look is not None:
        return d.look
    if d.bids:
        return d.bid(hard_bid(view, d, d.hand))
    return view.legal_actions[0]
