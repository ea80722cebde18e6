"""Cards and suits as a person reads and types them: ``Q♠`` on screen, ``QS`` or ``10h`` typed."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final, TypeAlias

from .._gen.spades.v1 import spades_pb2 as pb

__all__ = [
    "SUIT_LETTERS",
    "CardKey",
    "card_key",
    "card_text",
    "parse_card",
    "parse_suit",
    "sort_hand",
    "suit_text",
]

Suit: TypeAlias = pb.Suit.ValueType
Rank: TypeAlias = pb.Rank.ValueType
CardKey: TypeAlias = tuple[int, int]  # (suit, rank) as the wire numbers them: hashable, comparable

SUIT_LETTERS: Final[dict[int, str]] = {
    pb.SUIT_CLUBS: "C",
    pb.SUIT_DIAMONDS: "D",
    pb.SUIT_HEARTS: "H",
    pb.SUIT_SPADES: "S",
}
SUIT_SYMBOLS: Final[dict[int, str]] = {
    pb.SUIT_CLUBS: "♣",
    pb.SUIT_DIAMONDS: "♦",
    pb.SUIT_HEARTS: "♥",
    pb.SUIT_SPADES: "♠",
}
SUIT_NAMES: Final[dict[int, str]] = {
    pb.SUIT_CLUBS: "clubs",
    pb.SUIT_DIAMONDS: "diamonds",
    pb.SUIT_HEARTS: "hearts",
    pb.SUIT_SPADES: "spades",
}
RED_SUITS: Final = frozenset({pb.SUIT_DIAMONDS, pb.SUIT_HEARTS})
_RANK_TEXT: Final[dict[int, str]] = {
    **{r: str(r) for r in range(2, 11)},
    pb.RANK_JACK: "J",
    pb.RANK_QUEEN: "Q",
    pb.RANK_KING: "K",
    pb.RANK_ACE: "A",
}
_RANK_INPUT: Final[dict[str, Rank]] = {
    **{str(r): pb.Rank.ValueType(r) for r in range(2, 11)},
    "T": pb.RANK_TEN,
    "J": pb.RANK_JACK,
    "Q": pb.RANK_QUEEN,
    "K": pb.RANK_KING,
    "A": pb.RANK_ACE,
}
_SUIT_INPUT: Final[dict[str, Suit]] = {
    **{letter: pb.Suit.ValueType(s) for s, letter in SUIT_LETTERS.items()},
    **{sym: pb.Suit.ValueType(s) for s, sym in SUIT_SYMBOLS.items()},
    **{name: pb.Suit.ValueType(s) for s, name in SUIT_NAMES.items()},
    **{name[:-1]: pb.Suit.ValueType(s) for s, name in SUIT_NAMES.items()},  # "heart"
}
_CARD = re.compile(r"^(10|[2-9TJQKA])\s*(?:OF\s+)?([CDHS♣♦♥♠]|CLUBS?|DIAMONDS?|HEARTS?|SPADES?)$")
_JOKERS: Final[dict[str, Rank]] = {
    "BJ": pb.RANK_BIG_JOKER,
    "BIG JOKER": pb.RANK_BIG_JOKER,
    "LJ": pb.RANK_LITTLE_JOKER,
    "LITTLE JOKER": pb.RANK_LITTLE_JOKER,
}


def card_key(card: pb.Card) -> CardKey:
    return (int(card.suit), int(card.rank))


def parse_suit(text: str) -> Suit | None:
    """``H``, ``hearts``, ``♥`` (any case) as a suit; None if it is none."""
    t = text.strip()
    return _SUIT_INPUT.get(t.upper() if len(t) == 1 else t.lower())


def parse_card(text: str) -> pb.Card | None:
    """A typed card: rank then suit, ``QS``, ``10h``, ``th``, ``q♠``, ``ace of spades``,
    ``BJ``/``LJ`` for the jokers; None if the text is no card."""
    t = " ".join(text.strip().upper().split())
    t = t.replace("ACE", "A").replace("KING", "K").replace("QUEEN", "Q").replace("JACK", "J")
    if t in _JOKERS:
        return pb.Card(suit=pb.SUIT_SPADES, rank=_JOKERS[t])
    m = _CARD.match(t)
    if m is None:
        return None
    rank, suit = m.groups()
    key = suit if len(suit) == 1 else suit.lower()
    return pb.Card(suit=_SUIT_INPUT[key], rank=_RANK_INPUT[rank])


def card_text(card: pb.Card, *, ascii_only: bool = False) -> str:
    """``Q♠`` (``QS`` with ``ascii_only``); the jokers are ``BJ`` and ``LJ``."""
    if card.rank == pb.RANK_BIG_JOKER:
        return "BJ"
    if card.rank == pb.RANK_LITTLE_JOKER:
        return "LJ"
    rank = _RANK_TEXT.get(card.rank, "?")
    table = SUIT_LETTERS if ascii_only else SUIT_SYMBOLS
    return rank + table.get(card.suit, "?")


def typed_card(card: pb.Card) -> str:
    """What to type for a card: ``QS``, ``10H``, ``BJ``."""
    return card_text(card, ascii_only=True)


def suit_text(suit: int, *, ascii_only: bool = False) -> str:
    return (SUIT_LETTERS if ascii_only else SUIT_SYMBOLS).get(suit, "?")


def group_suit(card: pb.Card, *, deuces_high: bool = False) -> int:
    """The suit a card belongs to in play: the 2 of diamonds is a spade with deuces high."""
    if deuces_high and card.suit == pb.SUIT_DIAMONDS and card.rank == pb.RANK_TWO:
        return pb.SUIT_SPADES
    return int(card.suit)


_ORDERS: Final[dict[int, tuple[int, ...]]] = {
    pb.SUIT_SPADES: (pb.SUIT_SPADES, pb.SUIT_HEARTS, pb.SUIT_CLUBS, pb.SUIT_DIAMONDS),
    pb.SUIT_HEARTS: (pb.SUIT_HEARTS, pb.SUIT_SPADES, pb.SUIT_DIAMONDS, pb.SUIT_CLUBS),
    pb.SUIT_CLUBS: (pb.SUIT_CLUBS, pb.SUIT_HEARTS, pb.SUIT_SPADES, pb.SUIT_DIAMONDS),
    pb.SUIT_DIAMONDS: (pb.SUIT_DIAMONDS, pb.SUIT_SPADES, pb.SUIT_HEARTS, pb.SUIT_CLUBS),
}


def suit_order(trump: int) -> tuple[int, ...]:
    """Suits as a hand shows them: trump first, then alternating colours."""
    return _ORDERS.get(trump, _ORDERS[pb.SUIT_SPADES])


def sort_hand(
    cards: Iterable[pb.Card], *, trump: int = pb.SUIT_SPADES, deuces_high: bool = False
) -> list[list[pb.Card]]:
    """The cards grouped by suit (trump first), each group high to low; empty
    groups are left out."""
    order = suit_order(trump)
    groups: dict[int, list[pb.Card]] = {s: [] for s in order}
    for c in cards:
        groups.setdefault(group_suit(c, deuces_high=deuces_high), []).append(c)
    out: list[list[pb.Card]] = []
    for s in order:
        g = sorted(groups[s], key=lambda c: _rank_value(c, deuces_high), reverse=True)
        if g:
            out.append(g)
    return out


def _rank_value(card: pb.Card, deuces_high: bool) -> float:
    """Order within a suit group: the jokers on top, then (deuces high) 2♦ and 2♠."""
    if card.rank == pb.RANK_BIG_JOKER:
        return 100
    if card.rank == pb.RANK_LITTLE_JOKER:
        return 99
    if deuces_high and card.rank == pb.RANK_TWO:
        return 98 if card.suit == pb.SUIT_DIAMONDS else 97
    return int(card.rank)


def cards_text(cards: Sequence[pb.Card], *, ascii_only: bool = False) -> str:
    return " ".join(card_text(c, ascii_only=ascii_only) for c in cards)
