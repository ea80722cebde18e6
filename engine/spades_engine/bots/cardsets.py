"""Sets of cards as bitmasks: the small vocabulary every bot level speaks.

A set of cards is an ``int`` whose bits are cards (``suit * 16 + rank``, see
:mod:`spades_engine.cards`).  Every question a heuristic bot asks about cards —
"which of these beat the card winning the trick", "my lowest card", "how many
higher cards are still out" — is a few mask operations here, so a decision
costs microseconds.
"""

from __future__ import annotations

from typing import Final

from ..cards import SPADE_MASK, SPADES, SUIT_MASKS

NON_SPADE_MASK: Final = (1 << 48) - 1
"""Every club, diamond and heart."""

# The imported constants as Final names of this module: compiled by mypyc, a
# static value instead of a look-up in the module's dict at every use.
_SUIT_MASKS: Final = SUIT_MASKS
_SPADE_MASK: Final = SPADE_MASK
_SPADES: Final = SPADES


def low(mask: int) -> int:
    """The lowest card index of a non-empty set (within one suit: its lowest card)."""
    return (mask & -mask).bit_length() - 1


def high(mask: int) -> int:
    """The highest card index of a non-empty set (within one suit: its highest card)."""
    return mask.bit_length() - 1


def above(c: int) -> int:
    """Every card of ``c``'s suit ranked above ``c``."""
    return _SUIT_MASKS[c >> 4] & ~((2 << c) - 1)


def below(c: int) -> int:
    """Every card of ``c``'s suit ranked below ``c``."""
    return _SUIT_MASKS[c >> 4] & ((1 << c) - 1)


def beaters(mask: int, winning: int) -> int:
    """The cards of ``mask`` that would take over a trick now won by ``winning``:
    a higher card of its suit, or any spade when ``winning`` is not a spade."""
    if winning >> 4 == _SPADES:
        return mask & above(winning)
    return mask & (above(winning) | _SPADE_MASK)


def count(mask: int) -> int:
    return mask.bit_count()


def lowest_by_rank(mask: int) -> int:
    """The card of lowest rank in a non-empty set; ties go to non-spades, then to
    the lowest suit."""
    best, best_key = -1, (99, True, 9)
    for s in range(4):
        chunk = mask & _SUIT_MASKS[s]
        if chunk:
            c = low(chunk)
            key = (c & 15, s == _SPADES, s)
            if key < best_key:
                best, best_key = c, key
    return best


def highest_by_rank(mask: int) -> int:
    """The card of highest rank in a non-empty set; ties go to non-spades, then to
    the highest suit (a spade is only chosen when strictly higher)."""
    best, best_key = -1, (-1, False, -1)
    for s in range(4):
        chunk = mask & _SUIT_MASKS[s]
        if chunk:
            c = high(chunk)
            key = (c & 15, s != _SPADES, s)
            if key > best_key:
                best, best_key = c, key
    return best
