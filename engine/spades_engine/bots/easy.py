"""Easy: bids its aces and kings, plays its lowest legal card.

* Look at the cards (never a blind nil).
* Bid one trick per ace and per king (jokers count as aces), at least one:
  Easy never bids nil — but under suicide, where one partner of each side
  bids nil, it bids nil as the first of its side with no ace or king (else at
  least 4), and takes whichever role its partner left it as the second.
* Play the lowest legal card by rank; among equal ranks a club before a
  diamond before a heart, and a spade last.
* In a blind nil exchange, pass like every level (see ``choices.exchange_pass``).
* With auction trump: name the longest suit, ties to the strongest
  (``trump.simple_trump``); play a named suit as spades (``trump.trump_aware``).
* Take an optional exchange always (Easy never bids blind nil, so this is for
  a seat that was given a blind nil bid some other way).
"""

from __future__ import annotations

from ..actions import Action
from ..view import SeatView
from .cardsets import lowest_by_rank
from .choices import Decision, decide_exchange, draws, exchange_pass, simple_draw
from .deuces import deuces_aware
from .hand_eval import count_aces_kings
from .trump import names_trump, simple_trump, trump_aware


@deuces_aware
@trump_aware
def easy_bot(view: SeatView, seed: int, budget_ms: int = 0) -> Action:
    if draws(view):  # two players
        return simple_draw(view)
    if names_trump(view):  # auction trump
        return simple_trump(view)
    d = Decision(view)
    if d.plays:
        return d.play(lowest_by_rank(d.play_mask()))
    if d.decisions:
        return decide_exchange(d, True)
    if d.passes:
        return d.pass_cards(exchange_pass(view, d.hand, len(d.passes[0].cards)))
    if d.look is not None:
        return d.look
    if d.bids:
        high = count_aces_kings(d.hand)
        if view.rules.suicide and high == 0 and 0 in d.bids:
            return d.bids[0]
        return d.bid(max(1, high))
    return view.legal_actions[0]
