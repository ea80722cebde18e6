"""Shuffling and dealing from an explicit seed.

The deal for a seed is part of the record format: it must stay the same across
Python versions and be reproducible from other languages.  Seeds are derived
with SplitMix64 (written out here), the shuffle uses Mersenne Twister.
"""

from __future__ import annotations

from _random import Random
from collections.abc import Sequence
from typing import Final

from .cards import Card, card_name, cards_of, is_card
from .errors import SpadesError, show
from .ruleset import Ruleset

_MASK64: Final = (1 << 64) - 1
SEED_BITS: Final = 256
"""A seed is an ``int`` with ``abs(seed) < 2**SEED_BITS``.  Only its low 64 bits
decide the deals, but records and snapshots keep it as given, so any 64-bit
value (signed or not) or a 256-bit digest works; the bound keeps a record's
JSON small and within what every JSON reader takes."""


class DealError(SpadesError, ValueError):
    """An explicit deal that is not a partition of the ruleset's deck, or a first
    dealer or seed that cannot start a match."""


class SplitMix64:
    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK64

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A uniform integer in [0, n), by rejection so no value is favoured."""
        limit = _MASK64 - (_MASK64 % n)
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n


def hand_seed(match_seed: int, hand_number: int) -> int:
    """Each hand's shuffle has its own stream, so hands can be dealt independently."""
    return SplitMix64(match_seed ^ (hand_number * 0xD1B54A32D192ED03)).next_u64()


def first_dealer(match_seed: int, players: int) -> int:
    return SplitMix64(match_seed ^ 0xA0761D6478BD642F).below(players)


def shuffled(cards: Sequence[Card], seed: int) -> list[Card]:
    """Fisher-Yates driven by Mersenne Twister ``random()``, whose sequence for an
    integer seed Python guarantees across versions (and which other languages
    reproduce with init_by_array); the C implementation keeps dealing cheap.

    ``_random.Random``, the C base of ``random.Random``: for an int seed the
    same sequence (``random.Random.seed`` hands an int to it unchanged), without
    the Python-level ``__init__`` and ``seed`` of the subclass (0.6 us a deal)."""
    out = list(cards)
    rnd = Random(seed).random
    for i in range(len(out) - 1, 0, -1):
        j = int(rnd() * (i + 1))
        out[i], out[j] = out[j], out[i]
    return out


_DECK_CARDS: Final[dict[int, tuple[Card, ...]]] = {}


def deck_cards(deck_mask: int) -> tuple[Card, ...]:
    """``cards_of(deck_mask)`` as a tuple, kept: a deck mask is one of a few (the
    rulesets' decks), and each deal lists its deck."""
    cards = _DECK_CARDS.get(deck_mask)
    if cards is None:
        cards = _DECK_CARDS[deck_mask] = tuple(cards_of(deck_mask))
    return cards


def deal(ruleset: Ruleset, seed: int, dealer: int) -> tuple[int, ...]:
    """Deal one card at a time clockwise from the dealer's left; returns hand masks by seat."""
    n = ruleset.players
    order = shuffled(deck_cards(ruleset.deck_mask), seed)
    hands = [0] * n
    first = dealer + 1
    for i in range(n):  # seat dealer + 1 + i gets cards i, i + n, i + 2n, ... of the order
        m = 0
        for c in order[i::n]:
            m |= 1 << c
        hands[(first + i) % n] = m
    return tuple(hands)


def check_deal(ruleset: Ruleset, hands: Sequence[int]) -> None:
    """Refuse a deal that is not every card of the deck split evenly between the seats."""
    if len(hands) != ruleset.players:
        raise DealError(f"a deal needs {ruleset.players} hands, got {len(hands)}")
    seen = 0
    for seat, h in enumerate(hands):
        if h & seen:
            dup = ", ".join(card_name(c) for c in cards_of(h & seen))
            raise DealError(f"seat {seat} is dealt card(s) already dealt to another seat: {dup}")
        if h & ~ruleset.deck_mask:
            extra = ", ".join(card_name(c) for c in cards_of(h & ~ruleset.deck_mask))
            raise DealError(f"seat {seat} holds card(s) not in this ruleset's deck: {extra}")
        if h.bit_count() != ruleset.hand_size:
            raise DealError(
                f"seat {seat} holds {h.bit_count()} cards; each seat is dealt {ruleset.hand_size}"
            )
        seen |= h


def check_seed(seed: object) -> int:
    if type(seed) is not int:
        raise DealError(f"the seed must be an int, not {type(seed).__name__}")
    if seed.bit_length() > SEED_BITS:
        raise DealError(f"the seed must be below 2**{SEED_BITS} in absolute value")
    return seed


def check_dealer(ruleset: Ruleset, dealer: object) -> int:
    if type(dealer) is not int or not 0 <= dealer < ruleset.players:
        raise DealError(
            f"dealer must be a seat from 0 to {ruleset.players - 1}, not {show(dealer)}"
        )
    return dealer


def deal_masks(ruleset: Ruleset, deals: object) -> tuple[tuple[int, ...], ...]:
    """Explicit deals given as card indices by seat, checked, as hand masks."""
    out: list[tuple[int, ...]] = []
    if ruleset.players == 2 and _items(deals, "deals", "a list of deals"):
        raise DealError(
            "players=2 has no deal (each hand is drawn from the seed's stock): "
            "explicit deals are refused"
        )
    for i, d in enumerate(_items(deals, "deals", "a list of deals")):
        masks: list[int] = []
        for seat, cards in enumerate(_items(d, f"deals[{i}]", "a list of hands, one per seat")):
            path = f"deals[{i}][{seat}]"
            m = 0
            for c in _items(cards, path, "a list of card indices"):
                if not is_card(c):
                    raise DealError(f"{path}: {show(c)} is not a card index")
                if m >> c & 1:
                    raise DealError(f"{path}: seat {seat} is dealt {card_name(c)} twice")
                m |= 1 << c
            masks.append(m)
        try:
            check_deal(ruleset, masks)
        except DealError as e:
            raise DealError(f"deals[{i}]: {e}") from None
        out.append(tuple(masks))
    return tuple(out)


def _items(value: object, path: str, what: str) -> Sequence[object]:
    # A str is a Sequence too, of one-letter strs: never a list of cards.
    if not isinstance(value, Sequence) or isinstance(value, str | bytes | bytearray):
        raise DealError(f"{path} must be {what}, not {type(value).__name__}")
    return value
