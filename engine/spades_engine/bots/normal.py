"""Normal: a sound club player without a memory for cards.

* Look at the cards (never a blind nil).
* Bid the hand's expected tricks (``hand_eval.estimate_tricks``: honours
  discounted by the higher cards out and their guards, side winners by the
  chance of being trumped, long spades, ruffs of short suits with spare spades).
  Bid nil with a hand that suits it (``hand_eval.nil_risk``: no spade king or
  better, few spades, no sure winner, guarded honours) when the partner's bid
  allows it — not yet bid, or 3 or more; only a very safe nil beside a bid of 1
  or 2, never beside a nil — and never where nil is not allowed.  Under
  suicide (one partner of each side nil, the other 4 or more) the same
  judgement decides the first of the side to bid: nil if the hand suits it,
  else its estimate raised to 4 (``Decision.bid`` never moves a wish to take
  tricks down to nil); the second takes the role left to it.  Under
  trick-count scoring (``scoring="tricks"``) a set costs the whole contract
  and bags while an overtrick costs nothing, so the estimate is truncated
  without rounding up (:func:`bid_rounding`), and play keeps winning tricks
  once the contract is made (``tactics``).
* Play (``tactics.Tactics`` with ``plan=False``, judging cards by its hand and
  the trick on the table): as a nil, never win a trick it can lose; cover a
  partner's nil; win the tricks its side still needs — cheaply, second hand low,
  third hand high, trumping when void, never overtaking a partner's sure
  winner; duck once the side's contract is made (classic scoring).
* With auction trump: name the longest suit, ties to the strongest
  (``trump.simple_trump``); play a named suit as spades (``trump.trump_aware``).
* After a blind nil with the optional exchange: take it unless the hand is
  already a safe nil (``choices.wants_exchange``); pass like every level.
"""

from __future__ import annotations

from ..actions import Action
from ..ruleset import Ruleset, Scoring
from ..view import SeatView
from .choices import Decision, decide_exchange, draws, exchange_pass, simple_draw, wants_exchange
from .counting import CardCount
from .deuces import deuces_aware
from .hand_eval import expected_tricks, nil_risk
from .tactics import Tactics
from .trump import names_trump, simple_trump, trump_aware

NIL_MAX_ESTIMATE = 2.0
"""A hand expected to take this many tricks or more is not a nil."""
BID_ROUNDING = 0.3
"""Added to the estimate before truncating it to a bid."""
TRICKS_BID_ROUNDING = 0.0
"""The same under trick-count scoring, where bidding short is the cheap error
(plain truncation: in duplicate self-play without nils, +0.9 points a hand for
Normal and +0.6 for Hard against the classic 0.3)."""


def bid_rounding(rules: Ruleset) -> float:
    """What to add to a trick estimate before truncating it to a bid."""
    return TRICKS_BID_ROUNDING if rules.scoring is Scoring.TRICKS else BID_ROUNDING


def nil_risk_limit(view: SeatView) -> float:
    """The highest ``nil_risk`` the partner's bid allows (0 when it allows none)."""
    seat = view.seat
    if seat is None:
        return 0.0
    partner = view.rules.partner_of(seat)
    if partner is None:
        return 1.2  # nobody covers a nil in cutthroat
    partner_bid = view.bids[partner]
    if partner_bid is None or partner_bid >= 3:
        return 2.0
    if partner_bid == 0:
        return 0.0
    return 1.0


def wants_nil(view: SeatView, d: Decision, hand: int, estimate: float) -> bool:
    if 0 not in d.bids or estimate >= NIL_MAX_ESTIMATE:
        return False
    limit = nil_risk_limit(view)
    return limit > 0 and nil_risk(hand, view.rules) <= limit


def normal_bid(view: SeatView, d: Decision, hand: int) -> int:
    estimate = expected_tricks(hand, view.rules)
    if wants_nil(view, d, hand, estimate):
        return 0
    return max(1, int(estimate + bid_rounding(view.rules)))


@deuces_aware
@trump_aware
def normal_bot(view: SeatView, seed: int, budget_ms: int = 0) -> Action:
    if draws(view):  # two players
        return simple_draw(view)
    if names_trump(view):  # auction trump
        return simple_trump(view)
    d = Decision(view)
    if d.plays:
        hand = d.hand
        cc = CardCount(view, hand, memory=False)
        return d.play(Tactics(view, hand, d.play_mask(), cc, plan=False).choose())
    if d.decisions:
        return decide_exchange(d, wants_exchange(view, d.hand))
    if d.passes:
        return d.pass_cards(exchange_pass(view, d.hand, len(d.passes[0].cards)))
    if d.look is not None:
        return d.look
    if d.bids:
        return d.bid(normal_bid(view, d, d.hand))
    return view.legal_actions[0]
