"""What a seat can do.  Instances are immutable and the common ones are shared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, TypeVar

from .cards import SUIT_LETTERS, Card, CardError, card_name, parse_card
from .errors import ActionParseError, show

_C = TypeVar("_C")


def _python_class(cls: type[_C]) -> type[_C]:
    """A class decorator that changes nothing, so that compiled by mypyc the
    class stays an ordinary Python class (mypyc makes a native class, whose
    fields hold only values of their declared types, of a class with no other
    decorator than ``@dataclass``).

    An action holds whatever its caller built it with, compiled or not:
    ``Play(None)``, ``Bid("3")`` or ``PassCards([...])`` are made, and
    ``Match.apply`` refuses or takes them by the rules.  So the engine reads an
    action's fields through ``Any`` (``given: Any = action``): compiled, a read
    through the declared type would check the value first, and make ``True``
    the int ``1``.
    """
    return cls


@_python_class
@dataclass(frozen=True, slots=True)
class Bid:
    """Bid a number of tricks; 0 is Nil."""

    tricks: int

    def __str__(self) -> str:
        given: Any = self  # its field as built (see _python_class)
        return f"bid {given.tricks}"


@_python_class
@dataclass(frozen=True, slots=True)
class BlindNil:
    """Bid Nil without having seen one's cards."""

    def __str__(self) -> str:
        return "blind_nil"


@_python_class
@dataclass(frozen=True, slots=True)
class Look:
    """Look at one's cards, giving up the chance of a blind nil this hand."""

    def __str__(self) -> str:
        return "look"


@_python_class
@dataclass(frozen=True, slots=True)
class PassCards:
    """Pass cards face down to the partner in a blind nil exchange."""

    cards: tuple[Card, ...]

    def __str__(self) -> str:
        given: Any = self  # its field as built (see _python_class)
        return "pass " + " ".join(card_name(c) for c in given.cards)


@_python_class
@dataclass(frozen=True, slots=True)
class ExchangeDecision:
    """With the optional blind nil exchange: the blind nil bidder takes it or not."""

    exchange: bool

    def __str__(self) -> str:
        given: Any = self  # its field as built (see _python_class)
        return "exchange" if given.exchange else "no_exchange"


@_python_class
@dataclass(frozen=True, slots=True)
class NameTrump:
    """With auction trump: the highest bidder names the hand's trump suit (0..3,
    clubs, diamonds, hearts, spades)."""

    suit: int

    def __str__(self) -> str:
        given: Any = self  # its field as built (see _python_class)
        s: object = given.suit
        return "trump " + (SUIT_LETTERS[s] if type(s) is int and 0 <= s < 4 else show(s))


@_python_class
@dataclass(frozen=True, slots=True)
class Draw:
    """Two players' draw: keep the stock's top card and discard the next
    (``keep``), or discard the top card and keep the next."""

    keep: bool

    def __str__(self) -> str:
        given: Any = self  # its field as built (see _python_class)
        return "draw keep" if given.keep else "draw discard"


@_python_class
@dataclass(frozen=True, slots=True)
class Play:
    card: Card

    def __str__(self) -> str:
        given: Any = self  # its field as built (see _python_class)
        return f"play {card_name(given.card)}"


Action = Bid | BlindNil | Look | PassCards | ExchangeDecision | NameTrump | Draw | Play

# Shared instances keep legal-move generation free of allocation.
PLAYS: Final[tuple[Play, ...]] = tuple(Play(Card(i)) for i in range(64))
BIDS: Final[tuple[Bid, ...]] = tuple(Bid(i) for i in range(19))
BLIND_NIL: Final = BlindNil()
LOOK: Final = Look()
EXCHANGE: Final = ExchangeDecision(True)
NO_EXCHANGE: Final = ExchangeDecision(False)
DRAW_KEEP: Final = Draw(True)
DRAW_DISCARD: Final = Draw(False)
NAME_TRUMPS: Final[tuple[NameTrump, ...]] = tuple(NameTrump(s) for s in range(4))


def play(c: int) -> Play:
    return PLAYS[c]


def bid(n: int) -> Bid:
    return BIDS[n] if 0 <= n < len(BIDS) else Bid(n)


def parse_action(text: object) -> Action:
    """Parse the text form used in game records: ``bid 3``, ``blind_nil``, ``look``,
    ``exchange``, ``no_exchange``, ``trump H``, ``draw keep``, ``draw discard``,
    ``pass AS KH``, ``play QS``.  Raises
    ``ActionParseError`` (a ``ValueError``) for anything else."""
    if type(text) is not str:
        raise ActionParseError(f"an action is a str such as 'bid 3', not {type(text).__name__}")
    words = text.split()
    if not words:
        raise ActionParseError("empty action")
    verb, args = words[0].lower(), words[1:]
    if verb == "bid" and len(args) == 1:
        try:
            return bid(int(args[0]))
        except ValueError:  # not a number, or more digits than int() converts
            raise ActionParseError(
                f"bad action {show(text)}: {show(args[0])} is not a whole number"
            ) from None
    try:
        if verb == "blind_nil" and not args:
            return BLIND_NIL
        if verb == "look" and not args:
            return LOOK
        if verb == "exchange" and not args:
            return EXCHANGE
        if verb == "no_exchange" and not args:
            return NO_EXCHANGE
        if verb == "draw" and len(args) == 1 and args[0].lower() in ("keep", "discard"):
            return DRAW_KEEP if args[0].lower() == "keep" else DRAW_DISCARD
        if verb == "trump" and len(args) == 1 and len(args[0]) == 1:
            letter = args[0].upper()
            if letter in SUIT_LETTERS:
                return NAME_TRUMPS[SUIT_LETTERS.index(letter)]
        if verb == "pass" and args:
            return PassCards(tuple(parse_card(a) for a in args))
        if verb == "play" and len(args) == 1:
            return PLAYS[parse_card(args[0])]
    except CardError as e:
        raise ActionParseError(f"bad action {show(text)}: {e}") from None
    raise ActionParseError(
        f"bad action {show(text)}: expected 'bid N', 'blind_nil', 'look', "
        "'exchange', 'no_exchange', 'trump S', 'draw keep', 'draw discard', "
        "'pass C C' or 'play C'"
    )
