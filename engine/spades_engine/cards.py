"""Cards as small integers and hands as bitmasks.

A card is ``suit * 16 + rank``.  Suits are numbered so that spades, the trump
suit, is the highest (3).  Ranks 0..12 are 2..A; the two jokers live in the
spade suit above the ace (13 = Little Joker, 14 = Big Joker), because under
RULES.md they follow, trump and break spades exactly as spades do.  With that
layout "is it a spade" and "which card is higher" are plain integer tests, and
a set of cards is one ``int`` whose bits are the cards.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final, NewType, TypeGuard

from .errors import SpadesError, show

Card = NewType("Card", int)
"""A card index: ``suit * 16 + rank``."""

# Final throughout: compiled by mypyc, a Final module constant is a C static
# (or inlined), any other module-level name a dict lookup at each use.
CLUBS: Final = 0
DIAMONDS: Final = 1
HEARTS: Final = 2
SPADES: Final = 3
SUITS: Final = (CLUBS, DIAMONDS, HEARTS, SPADES)
SUIT_LETTERS: Final = "CDHS"
SUIT_NAMES: Final = ("clubs", "diamonds", "hearts", "spades")
RANK_LETTERS: Final = "23456789TJQKA"
TWO: Final = 0
ACE: Final = 12
LITTLE_JOKER_RANK: Final = 13
BIG_JOKER_RANK: Final = 14

LITTLE_JOKER: Final = Card(SPADES * 16 + LITTLE_JOKER_RANK)
BIG_JOKER: Final = Card(SPADES * 16 + BIG_JOKER_RANK)
TWO_OF_CLUBS: Final = Card(CLUBS * 16 + TWO)

SUIT_MASKS: Final = tuple(0xFFFF << (16 * s) for s in SUITS)
SPADE_MASK: Final = SUIT_MASKS[SPADES]


CARD_INDICES: Final = sum(0x1FFF << (16 * s) for s in SUITS) | 1 << LITTLE_JOKER | 1 << BIG_JOKER
"""Mask of every index that denotes a card, in any deck."""


class CardError(SpadesError, ValueError):
    """A card name or index that does not denote a card."""


def is_card(c: object) -> TypeGuard[int]:
    """Whether ``c`` is a card index (an ``int``, not a ``bool``)."""
    return type(c) is int and 0 <= c < 64 and bool(CARD_INDICES >> c & 1)


def card(suit: int, rank: int) -> Card:
    return Card(suit * 16 + rank)


def suit_of(c: int) -> int:
    return c >> 4


def rank_of(c: int) -> int:
    return c & 15


def is_joker(c: int) -> bool:
    return c in (LITTLE_JOKER, BIG_JOKER)


def card_name(c: object) -> str:
    """The short name of a card: ``"QS"``, ``"TH"``, ``"2C"``, ``"LJ"``, ``"BJ"``."""
    if c == LITTLE_JOKER:
        return "LJ"
    if c == BIG_JOKER:
        return "BJ"
    # ``c`` is whatever the caller passed (typed ``object``, so that compiled by
    # mypyc the function gets it as it is): Python's own operators say whether
    # it is a number.
    n: Any = c
    try:
        s, r = n >> 4, n & 15
    except TypeError:  # a float, None...: costs nothing on the way of a real card
        raise CardError(f"{show(c)} is not a card index") from None
    if not (0 <= s <= 3 and 0 <= r <= ACE):
        raise CardError(f"{show(c)} is not a card index")
    return RANK_LETTERS[r] + SUIT_LETTERS[s]


def parse_card(text: object) -> Card:
    """Parse a card name; accepts ``10H`` as well as ``TH`` and any letter case."""
    if type(text) is not str:
        raise CardError(f"a card name is a str, not {type(text).__name__}")
    t = text.strip().upper()
    if t == "LJ":
        return LITTLE_JOKER
    if t == "BJ":
        return BIG_JOKER
    if t.startswith("10"):
        t = "T" + t[2:]
    if len(t) != 2 or t[0] not in RANK_LETTERS or t[1] not in SUIT_LETTERS:
        raise CardError(
            f"{text!r} is not a card: use rank 2-9/T/J/Q/K/A then suit C/D/H/S, or LJ/BJ"
        )
    return Card(SUIT_LETTERS.index(t[1]) * 16 + RANK_LETTERS.index(t[0]))


def cards_of(mask: int) -> list[Card]:
    """The cards of a bitmask, lowest index first."""
    out: list[Card] = []
    while mask:
        low = mask & -mask
        out.append(Card(low.bit_length() - 1))
        mask ^= low
    return out


def iter_cards(mask: int) -> Iterator[Card]:
    while mask:
        low = mask & -mask
        yield Card(low.bit_length() - 1)
        mask ^= low


def mask_of(cards: Iterable[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def hand_str(mask: int) -> str:
    return " ".join(card_name(c) for c in cards_of(mask))


def parse_hand(text: object) -> int:
    """Parse a space- or comma-separated list of card names into a mask."""
    if type(text) is not str:
        raise CardError(f"a hand is a str of card names, not {type(text).__name__}")
    m = 0
    for part in text.replace(",", " ").split():
        c = parse_card(part)
        if m >> c & 1:
            raise CardError(f"card {card_name(c)} appears twice")
        m |= 1 << c
    return m
