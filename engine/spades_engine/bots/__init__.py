"""Bots: functions of a seat's view, a seed and a time budget — nothing else.

Taking the ``SeatView`` type (what a remote client of the seat receives) makes
it structural that a bot cannot see another hand.
"""

from __future__ import annotations

import random
from typing import Protocol

from ..actions import Action
from ..view import SeatView


class Bot(Protocol):
    def __call__(self, view: SeatView, seed: int, budget_ms: int) -> Action: ...


def random_legal(view: SeatView, seed: int, budget_ms: int = 0) -> Action:
    """A uniformly random legal action (the baseline every level must beat)."""
    if not view.legal_actions:
        raise ValueError(f"seat {view.seat} has no legal action now")
    return random.Random(seed).choice(view.legal_actions)


BOTS: dict[str, Bot] = {"random": random_legal}
