"""Auction trump (RULES.md 3.1, seed 003 "Пика за търг"): once bidding closes,
the highest bidder names the hand's trump suit.

The naming is the last step of the bidding phase: the phase stays ``bidding``
and ``to_act`` is the namer, so whoever waits for ``to_act`` waits for it.
Then the blind nil exchange, if any, and the play follow as usual.  The named
suit takes the role of spades for the hand (it wins tricks, it must be broken
before it is led); ``HandState.trump`` holds it, spades otherwise.
"""

from __future__ import annotations

from typing import Any

from .actions import NAME_TRUMPS, Action, NameTrump
from .cards import SUIT_LETTERS
from .errors import IllegalAction, Reason, show
from .events import EVERYONE, Event, TrumpNamed
from .state import MatchState, Phase


def trump_namer(st: MatchState) -> int:
    """The highest bidder, the earliest in bidding order (from the left of the
    dealer) on a tie; when every bid is nil, that is the first bidder."""
    h, n = st.hand, st.rules.players
    order = [(h.dealer + 1 + i) % n for i in range(n)]
    return max(order, key=lambda s: (h.bids[s] or 0, -order.index(s)))


def naming_trump(st: MatchState) -> bool:
    """Whether the hand waits for its trump to be named."""
    h = st.hand
    return st.phase is Phase.BIDDING and h.trump_namer >= 0 and not h.trump_named


def open_naming(st: MatchState) -> None:
    """Bidding has closed at an auction trump table: the namer is to act."""
    h = st.hand
    h.trump_namer = h.to_act = trump_namer(st)


def legal_trump_actions(st: MatchState, seat: int) -> list[Action]:
    return list(NAME_TRUMPS) if seat == st.hand.trump_namer else []


def apply_name_trump(st: MatchState, seat: int, action: NameTrump) -> list[Event]:
    h = st.hand
    if not st.rules.auction_trump:
        raise IllegalAction(Reason.AUCTION_TRUMP_OFF, "spades are always trump at this table", seat)
    if h.trump_named:
        raise IllegalAction(
            Reason.TRUMP_ALREADY_NAMED,
            f"trump is already named for this hand: {SUIT_LETTERS[h.trump]}",
            seat,
        )
    if not naming_trump(st):
        raise IllegalAction(Reason.WRONG_PHASE, "trump is named once bidding has closed", seat)
    if seat != h.trump_namer:
        raise IllegalAction(
            Reason.NOT_TRUMP_NAMER,
            f"seat {h.trump_namer}, the highest bidder, names trump, not seat {seat}",
            seat,
        )
    given: Any = action  # its field as built (see actions._python_class)
    suit: object = given.suit  # anything: a caller may build NameTrump("H")
    if type(suit) is not int or not 0 <= suit < 4:
        raise IllegalAction(
            Reason.NOT_A_SUIT,
            f"a suit is 0..3 (clubs, diamonds, hearts, spades), not {show(suit)}",
            seat,
        )
    h.trump = suit
    h.trump_named = True
    return [TrumpNamed(EVERYONE, seat, suit)]
