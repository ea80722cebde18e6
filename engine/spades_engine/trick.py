"""Trick rules on bitmasks: which cards may be played, and who wins a trick."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .cards import SPADE_MASK, SPADES, SUIT_MASKS

_HAND_BITS: Final = 64  # every card index is below 64, so a hand is below 2**64


def _machine_word(mask: int) -> int:
    """``mask`` as a mask of a hand's 64 bits, written below 2**62 in absolute
    value: compiled by mypyc such an int is a machine word, and ``hand & mask``
    a native ``and``, where a larger one (the spade mask, the complement of
    one) is a heap object and each ``&`` a generic call.  The bits it keeps
    of a hand are the same (a negative mask is its 64 bits, sign extended)."""
    low = mask & ((1 << _HAND_BITS) - 1)
    return low if low < 1 << 62 else low - (1 << _HAND_BITS)


_NON_SPADES: Final = _machine_word(~SPADE_MASK)
_NON_TRUMP: Final = tuple(_machine_word(~m) for m in SUIT_MASKS)
_FOLLOW: Final = tuple(_machine_word(m) for m in SUIT_MASKS)


def _build_suit_ranks() -> tuple[tuple[int, ...], ...]:
    table: list[tuple[int, ...]] = [()]
    for rank in range(15):  # doubling: table[i | 1 << rank] = table[i] + (rank,)
        table += [(*t, rank) for t in table]
    return tuple(table)


SUIT_RANKS: Final[tuple[tuple[int, ...], ...]] = _build_suit_ranks()
"""``SUIT_RANKS[chunk]``: the ranks whose bits are set in a 15-bit suit chunk
(``hand >> 16 * suit & 0x7FFF``), lowest first.

Listing a hand suit by suit through this table is about twice as fast as
peeling bits off the 64-bit mask, which costs a big-int allocation per step.
"""


def legal_play_mask(hand: int, led_suit: int, spades_broken: bool, trump: int = SPADES) -> int:
    """Cards of ``hand`` that may be played; ``led_suit`` is -1 when leading.

    Follow suit if able, otherwise anything.  A lead may be a trump (a spade,
    or with auction trump the named suit) only once trump is broken or when
    the hand holds nothing else.
    """
    if led_suit < 0:
        if spades_broken:
            return hand
        return hand & _NON_TRUMP[trump] or hand
    return hand & _FOLLOW[led_suit] or hand


def trick_winner_index(cards: Sequence[int], trump: int = SPADES) -> int:
    """Index in play order of the winning card: the highest trump (spades, the
    jokers the top ones; or with auction trump the named suit), else the
    highest card of the suit led."""
    # A tuple's tuple() is itself; compiled by mypyc, indexing a tuple is native
    # where a Sequence's is a generic call (the engine passes its tuples).
    t = tuple(cards)
    best = t[0]
    best_i = 0
    for i in range(1, len(t)):
        c = t[i]
        if (c >> 4 == best >> 4 and c > best) or (c >> 4 == trump and best >> 4 != trump):
            best, best_i = c, i
    return best_i


# -- deuces high (RULES.md 3.1) -----------------------------------------------
# The 2 of diamonds is a spade for every purpose and, with the 2 of spades,
# ranks above the ace of spades and below the jokers.  Cards keep their
# indices (2D stays 16); these rules see them through a table, so the default
# ones above stay plain integer tests.

TWO_OF_DIAMONDS: Final = 16
TWO_OF_SPADES: Final = 48
DEUCES_SPADES: Final = SPADE_MASK | 1 << TWO_OF_DIAMONDS
"""Under deuces high, the cards that are spades: the suit, the jokers and 2D."""
_DEUCES_SUITS: Final = tuple(
    _machine_word(DEUCES_SPADES if s == SPADES else m & ~(1 << TWO_OF_DIAMONDS))
    for s, m in enumerate(SUIT_MASKS)
)
_DEUCES_NON_SPADES: Final = _machine_word(~DEUCES_SPADES)


def _deuces_keys() -> tuple[int, ...]:
    keys = [4 * c for c in range(64)]  # key >> 6 is the suit, key order the rank order
    ace = 4 * (SPADES * 16 + 12)
    keys[TWO_OF_SPADES] = ace + 1
    keys[TWO_OF_DIAMONDS] = ace + 2
    return tuple(keys)


DEUCES_KEYS: Final = _deuces_keys()
"""``DEUCES_KEYS[c]``: under deuces high, ``key >> 6`` is the suit card ``c``
plays as, and keys of one suit compare as their cards rank."""


def deuces_suit(c: int) -> int:
    """The suit a card plays as under deuces high (the 2 of diamonds: spades)."""
    return SPADES if c == TWO_OF_DIAMONDS else c >> 4


def deuces_legal_play_mask(hand: int, led_suit: int, spades_broken: bool) -> int:
    """:func:`legal_play_mask` under deuces high (spades are trump)."""
    if led_suit < 0:
        if spades_broken:
            return hand
        return hand & _DEUCES_NON_SPADES or hand
    return hand & _DEUCES_SUITS[led_suit] or hand


def deuces_trick_winner_index(cards: Sequence[int]) -> int:
    """:func:`trick_winner_index` under deuces high."""
    keys = DEUCES_KEYS
    t = tuple(cards)  # see trick_winner_index
    best = keys[t[0]]
    best_i = 0
    for i in range(1, len(t)):
        k = keys[t[i]]
        if (k >> 6 == best >> 6 and k > best) or (k >> 6 == SPADES and best >> 6 != SPADES):
            best, best_i = k, i
    return best_i
