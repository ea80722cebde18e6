"""Auction trump for the bots: naming the trump suit, and playing a hand whose
trump is not spades.

Every level's play (and Expert's search: determinization, rollout policy and
the simulation kernel) is written with spades as trump.  The rules of a hand
treat the four suits alike except for the trump suit (auction trump is refused
with the jokers, and the first lead is decided before trump matters), so a
hand whose trump is suit ``t`` is the same game as the hand with suits ``t``
and spades swapped in every card.  :func:`trump_aware` gives a bot that view,
swapped, and swaps its card back: each level then plays the named suit as it
plays spades.  Bidding comes before the naming and stays spade-based.

Naming (Easy, Normal, Hard): the suit the seat holds most of; on a tie the
strongest of them (the higher sum of ranks), then the higher suit.  Expert
values each suit by rollouts (``expert._choose_trump``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from ..actions import Action, NameTrump, PassCards, Play, play
from ..cards import SPADES, SUIT_MASKS, Card
from ..view import SeatView, TrickView


def swap_card(c: int, trump: int) -> int:
    """The card with suits ``trump`` and spades exchanged."""
    s = c >> 4
    if s == trump:
        return c + 16 * (SPADES - trump)
    if s == SPADES:
        return c - 16 * (SPADES - trump)
    return c


def swap_mask(m: int, trump: int) -> int:
    """A mask of cards with suits ``trump`` and spades exchanged."""
    shift = 16 * (SPADES - trump)
    t, sp = m & SUIT_MASKS[trump], m & SUIT_MASKS[SPADES]
    return m & ~(SUIT_MASKS[trump] | SUIT_MASKS[SPADES]) | t << shift | sp >> shift


def _swap_action(a: Action, trump: int) -> Action:
    if isinstance(a, Play):
        return play(swap_card(a.card, trump))
    if isinstance(a, PassCards):
        return PassCards(tuple(Card(swap_card(c, trump)) for c in a.cards))
    return a


def as_spades(view: SeatView) -> SeatView:
    """``view`` with its trump suit and spades swapped in every card: a view of
    the same position in a hand whose trump is spades."""
    t = view.trump
    if t == SPADES:
        return view

    def cards(cs: tuple[int, ...]) -> tuple[Any, ...]:
        return tuple(swap_card(c, t) for c in cs)

    led = view.led_suit
    return dataclasses.replace(
        view,
        hand=None if view.hand is None else tuple(sorted(cards(view.hand))),
        trick=cards(view.trick),
        led_suit=SPADES if led == t else t if led == SPADES else led,
        tricks=tuple(TrickView(x.leader, cards(x.cards), x.winner) for x in view.tricks),
        passed=cards(view.passed),
        received=cards(view.received),
        legal_actions=tuple(_swap_action(a, t) for a in view.legal_actions),
        trump=SPADES,
    )


def simple_trump(view: SeatView) -> Action:
    """The suit the seat holds most of, ties to the strongest (sum of ranks),
    then to the higher suit; the legal naming of it."""
    held = view.hand or ()

    def key(s: int) -> tuple[int, int, int]:
        mine = [c & 15 for c in held if c >> 4 == s]
        return len(mine), sum(mine), s

    return naming(view, max(range(4), key=key))


def naming(view: SeatView, suit: int) -> Action:
    """The legal ``NameTrump(suit)``, else the first legal action."""
    for a in view.legal_actions:
        if isinstance(a, NameTrump) and a.suit == suit:
            return a
    return view.legal_actions[0]


def names_trump(view: SeatView) -> bool:
    return bool(view.legal_actions) and isinstance(view.legal_actions[0], NameTrump)


def _key(a: Action) -> Any:
    return frozenset(a.cards) if isinstance(a, PassCards) else a


F = TypeVar("F", bound=Callable[..., Action])


def keep_hints(wrapper: Callable[..., Action], bot: Callable[..., Action]) -> None:
    """Give ``wrapper`` (made with ``functools.wraps(bot)``) a bot's annotations
    when ``bot`` has none to copy: compiled by mypyc, a function keeps no
    ``__annotations__``, and ``typing.get_type_hints`` of a level would fail.
    Every level has the signature of the ``Bot`` protocol."""
    if not hasattr(bot, "__annotations__"):
        wrapper.__annotations__ = dict(_BOT_HINTS)


_BOT_HINTS = {"view": SeatView, "seed": int, "budget_ms": int, "return": Action}


def trump_aware(bot: F) -> F:
    """``bot`` playing a hand whose trump is not spades on the swapped view
    (:func:`as_spades`), its action swapped back to one of the view's legal ones."""

    @wraps(bot)
    def wrapped(view: SeatView, *args: Any, **kwargs: Any) -> Action:
        t = view.trump
        if t == SPADES or names_trump(view):
            return bot(view, *args, **kwargs)
        want = _key(_swap_action(bot(as_spades(view), *args, **kwargs), t))
        return next((a for a in view.legal_actions if _key(a) == want), view.legal_actions[0])

    keep_hints(wrapped, bot)
    return cast(F, wrapped)
