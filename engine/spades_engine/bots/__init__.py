"""Bots: functions of a seat's view, a seed and a time budget — nothing else.

Taking the ``SeatView`` type (what a remote client of the seat receives) makes
it structural that a bot cannot see another hand.

Levels (RULES.md §2), each in its own module:

* ``easy`` — bids its aces and kings, plays its lowest legal card;
* ``normal`` — estimates tricks from high cards, suit lengths and spades, bids
  and protects nil, ducks bags once its contract is made;
* ``hard`` — Normal plus card counting (cards still out, shown voids) and a
  plan against both sides' contracts: sets, nil attacks, bag control.

Shared concepts live beside them: ``cardsets`` (bitmask vocabulary),
``hand_eval`` (bidding estimates), ``counting`` (what a seat knows about the
unseen cards), ``tactics`` (card play), ``choices`` (mapping a decision to a
legal action).
"""

from __future__ import annotations

import random
from typing import Protocol

from ..actions import Action
from ..view import SeatView
from .easy import easy_bot
from .expert import expert
from .hard import hard_bot
from .normal import normal_bot


class Bot(Protocol):
    def __call__(self, view: SeatView, seed: int, budget_ms: int) -> Action: ...


def random_legal(view: SeatView, seed: int, budget_ms: int = 0) -> Action:
    """A uniformly random legal action (the baseline every level must beat)."""
    if not view.legal_actions:
        raise ValueError(f"seat {view.seat} has no legal action now")
    return random.Random(seed).choice(view.legal_actions)


BOTS: dict[str, Bot] = {
    "random": random_legal,
    "easy": easy_bot,
    "normal": normal_bot,
    "hard": hard_bot,
    "expert": expert,
}
"""Bots by level name; a new level is one more entry."""
