"""Trick rules on bitmasks: which cards may be played, and who wins a trick."""

from __future__ import annotations

from collections.abc import Sequence

from .cards import SPADE_MASK, SPADES, SUIT_MASKS

_NON_SPADES = ~SPADE_MASK
_NON_TRUMP = tuple(~m for m in SUIT_MASKS)


def _build_suit_ranks() -> tuple[tuple[int, ...], ...]:
    table: list[tuple[int, ...]] = [()]
    for rank in range(15):  # doubling: table[i | 1 << rank] = table[i] + (rank,)
        table += [(*t, rank) for t in table]
    return tuple(table)


SUIT_RANKS: tuple[tuple[int, ...], ...] = _build_suit_ranks()
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
    return hand & SUIT_MASKS[led_suit] or hand


def trick_winner_index(cards: Sequence[int], trump: int = SPADES) -> int:
    """Index in play order of the winning card: the highest trump (spades, the
    jokers the top ones; or with auction trump the named suit), else the
    highest card of the suit led."""
    best = cards[0]
    best_i = 0
    for i in range(1, len(cards)):
        c = cards[i]
        if (c >> 4 == best >> 4 and c > best) or (c >> 4 == trump and best >> 4 != trump):
            best, best_i = c, i
    return best_i
