"""Deuces high for the bots: the same game on cards renumbered so that spades
are again one suit in rank order.

Every level's play (and Expert's search: determinization, rollout policy and
the simulation kernel) reads a card's suit as ``card >> 4`` and its rank
order as the card index.  Under deuces high that is wrong twice: the 2 of
diamonds is a spade, and the 2 of spades ranks above the ace.  The bots
therefore play such a table on a *virtual* deck where it is right again:

* clubs, diamonds and hearts keep their indices (their 2s are out, or the
  2 of diamonds has moved, so rank 0 of each is empty);
* spades 3..A take spade ranks 0..11, the 2 of spades 12, the 2 of diamonds
  13, the Little Joker 14 and the Big Joker 15.

That is the deuces-high trump order, Big Joker > Little Joker > 2D > 2S >
A..3, as plain integers, and it is the engine's jokers table with one spade
more on top (index 63, rank 15: every mask the bots use is 16 bits a suit).
:func:`deuces_aware` gives a bot the view renumbered (:func:`as_virtual`),
with a ruleset that says which cards the virtual deck holds, and renumbers
its action back.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from ..actions import Action, PassCards, Play, play
from ..cards import SPADES, Card
from ..ruleset import Ruleset
from ..view import SeatView, TrickView
from .trump import keep_hints

_TWO_D, _TWO_S, _ACE_S = 16, 48, 60
_LJ, _BJ = 61, 62


def _virtual(c: int) -> int:
    if c == _TWO_D:
        return 61
    if c < _TWO_S:
        return c
    if c == _TWO_S:
        return 60
    return c - 1 if c <= _ACE_S else c + 1  # 3S..AS one rank down; jokers one up


TO_VIRTUAL: tuple[int, ...] = tuple(_virtual(c) for c in range(64))
"""``TO_VIRTUAL[card]``: the card's index in the virtual deck."""

TO_REAL: tuple[int, ...] = tuple(TO_VIRTUAL.index(v) if v in TO_VIRTUAL else -1 for v in range(64))
"""``TO_REAL[virtual]``: the real card (-1 for an index no real card maps to)."""


def virtual_mask(m: int) -> int:
    """A real mask of cards renumbered into the virtual deck."""
    out = 0
    while m:
        low = m & -m
        out |= 1 << TO_VIRTUAL[low.bit_length() - 1]
        m ^= low
    return out


_RULES: dict[int, Ruleset] = {}


def virtual_rules(rules: Ruleset) -> Ruleset:
    """``rules`` with ``deck_mask`` the virtual deck; every option unchanged.

    The copy compares equal to ``rules`` (``deck_mask`` is not compared), so
    nothing may key a cache of cards on a ruleset alone; the bots key theirs
    on the deck mask or on plain counts."""
    key = id(rules)
    r = _RULES.get(key)
    if r is None or r != rules:
        r = copy.copy(rules)
        object.__setattr__(r, "deck_mask", virtual_mask(rules.deck_mask))
        if len(_RULES) > 64:  # rulesets are few; keep the memo from growing without end
            _RULES.clear()
        _RULES[key] = r
    return r


def _cards(cs: tuple[int, ...]) -> tuple[Any, ...]:
    return tuple(TO_VIRTUAL[c] for c in cs)


def _action_to(a: Action, table: tuple[int, ...]) -> Action:
    if isinstance(a, Play):
        return play(table[a.card])
    if isinstance(a, PassCards):
        return PassCards(tuple(Card(table[c]) for c in a.cards))
    return a


def as_virtual(view: SeatView) -> SeatView:
    """``view`` renumbered into the virtual deck (see the module notes)."""
    trick = _cards(view.trick)
    return dataclasses.replace(
        view,
        rules=virtual_rules(view.rules),
        hand=None if view.hand is None else tuple(sorted(_cards(view.hand))),
        trick=trick,
        led_suit=trick[0] >> 4 if trick else -1,
        tricks=tuple(TrickView(t.leader, _cards(t.cards), t.winner) for t in view.tricks),
        passed=_cards(view.passed),
        received=_cards(view.received),
        legal_actions=tuple(_action_to(a, TO_VIRTUAL) for a in view.legal_actions),
        trump=SPADES,
    )


def _key(a: Action) -> Any:
    return frozenset(a.cards) if isinstance(a, PassCards) else a


F = TypeVar("F", bound=Callable[..., Action])


def deuces_aware(bot: F) -> F:
    """``bot`` playing a deuces-high table on the virtual view
    (:func:`as_virtual`), its action renumbered back to one of the view's."""

    @wraps(bot)
    def wrapped(view: SeatView, *args: Any, **kwargs: Any) -> Action:
        if not view.rules.deuces_high or view.rules.deck_mask >> 63:
            return bot(view, *args, **kwargs)  # another table, or a view already virtual
        want = _key(_action_to(bot(as_virtual(view), *args, **kwargs), TO_REAL))
        return next((a for a in view.legal_actions if _key(a) == want), view.legal_actions[0])

    keep_hints(wrapped, bot)
    return cast(F, wrapped)
