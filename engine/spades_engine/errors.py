"""Typed rejections.  ``reason`` values are stable: clients and the gRPC layer
switch on them, so a value, once released, never changes meaning.

Every refusal the engine makes is a ``SpadesError``: a caller that catches it
catches every exception the engine raises on purpose, and anything else that
escapes a public function is a bug in the engine.
"""

from __future__ import annotations

import reprlib
from enum import StrEnum


class SpadesError(Exception):
    """The base of every exception the engine raises for input it refuses."""


class Reason(StrEnum):
    INVALID_SEAT = "INVALID_SEAT"
    MATCH_OVER = "MATCH_OVER"
    WRONG_PHASE = "WRONG_PHASE"
    NOT_YOUR_TURN = "NOT_YOUR_TURN"
    UNKNOWN_ACTION = "UNKNOWN_ACTION"
    BID_OUT_OF_RANGE = "BID_OUT_OF_RANGE"
    NIL_NOT_ALLOWED = "NIL_NOT_ALLOWED"
    BLIND_NIL_NOT_ALLOWED = "BLIND_NIL_NOT_ALLOWED"
    LOOK_AT_CARDS_FIRST = "LOOK_AT_CARDS_FIRST"
    ALREADY_LOOKED = "ALREADY_LOOKED"
    NOT_IN_EXCHANGE = "NOT_IN_EXCHANGE"
    ALREADY_PASSED = "ALREADY_PASSED"
    WRONG_PASS_COUNT = "WRONG_PASS_COUNT"
    CARD_NOT_IN_HAND = "CARD_NOT_IN_HAND"
    MUST_FOLLOW_SUIT = "MUST_FOLLOW_SUIT"
    SPADES_NOT_BROKEN = "SPADES_NOT_BROKEN"
    EXCHANGE_NOT_OPTIONAL = "EXCHANGE_NOT_OPTIONAL"
    NOT_EXCHANGE_DECIDER = "NOT_EXCHANGE_DECIDER"
    ALREADY_DECIDED = "ALREADY_DECIDED"
    EXCHANGE_NOT_DECIDED = "EXCHANGE_NOT_DECIDED"
    SUICIDE_BID = "SUICIDE_BID"
    AUCTION_TRUMP_OFF = "AUCTION_TRUMP_OFF"
    NOT_TRUMP_NAMER = "NOT_TRUMP_NAMER"
    TRUMP_ALREADY_NAMED = "TRUMP_ALREADY_NAMED"
    NOT_A_SUIT = "NOT_A_SUIT"
    BIDDING_CLOSED = "BIDDING_CLOSED"


RULES: dict[Reason, str] = {
    Reason.INVALID_SEAT: "a seat is a number from 0 to players - 1",
    Reason.MATCH_OVER: "no action is taken once the match is over",
    Reason.WRONG_PHASE: "each action belongs to one phase of the hand",
    Reason.NOT_YOUR_TURN: "players act in turn, clockwise",
    Reason.UNKNOWN_ACTION: "an action is one the rules define, with valid values",
    Reason.BID_OUT_OF_RANGE: "a bid is a number of tricks from the minimum bid to the hand size",
    Reason.NIL_NOT_ALLOWED: "nil may be bid only where the table allows it",
    Reason.BLIND_NIL_NOT_ALLOWED: (
        "blind nil is bid before looking, where allowed, by a side trailing enough"
    ),
    Reason.LOOK_AT_CARDS_FIRST: "a player who may bid blind nil looks at the cards before bidding",
    Reason.ALREADY_LOOKED: "a player looks at the cards once",
    Reason.NOT_IN_EXCHANGE: "only the blind nil bidder and its partner exchange cards",
    Reason.ALREADY_PASSED: "each exchanging player passes once",
    Reason.WRONG_PASS_COUNT: "each exchanging player passes the table's number of its own cards",
    Reason.CARD_NOT_IN_HAND: "a player plays a card from its own hand",
    Reason.MUST_FOLLOW_SUIT: "a player who holds the suit led must follow it",
    Reason.SPADES_NOT_BROKEN: (
        "trump may not be led until broken, unless the hand holds nothing else"
    ),
    Reason.EXCHANGE_NOT_OPTIONAL: "the exchange is decided only where it is optional",
    Reason.NOT_EXCHANGE_DECIDER: "only a blind nil bidder decides an optional exchange",
    Reason.ALREADY_DECIDED: "an optional exchange is decided once",
    Reason.EXCHANGE_NOT_DECIDED: "an optional exchange is decided before cards are passed",
    Reason.SUICIDE_BID: "under suicide one partner of each side bids nil and the other 4 or more",
    Reason.AUCTION_TRUMP_OFF: "trump is named only under auction trump",
    Reason.NOT_TRUMP_NAMER: "the highest bidder names trump",
    Reason.TRUMP_ALREADY_NAMED: "trump is named once a hand",
    Reason.NOT_A_SUIT: "trump is one of the four suits",
    Reason.BIDDING_CLOSED: "each player bids once a hand",
}
"""The rule each reason stands for, in a sentence (stable, like the reasons):
what a client shows beside the reason, and what the gRPC layer sends as the
``rule`` of its ErrorInfo."""


class IllegalAction(SpadesError):
    """An action the rules do not allow now.  The match is left exactly as it was."""

    def __init__(self, reason: Reason, message: str, seat: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.seat = seat

    @property
    def rule(self) -> str:
        """The rule the action breaks (:data:`RULES`)."""
        return RULES[self.reason]

    def __repr__(self) -> str:
        return f"IllegalAction({self.reason.value}, {self.message!r})"


class SnapshotError(SpadesError, ValueError):
    """A snapshot or game record that cannot be loaded."""


class ActionParseError(SpadesError, ValueError):
    """Text that is not an action (``parse_action``)."""


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 40


def show(value: object) -> str:
    """A short repr of a value a caller passed, for error messages.

    Refused input can be anything: a repr may be huge, nest too deep, or fail
    (an int past Python's digit limit), and a message must never raise.
    """
    try:
        return _REPR.repr(value)
    except Exception:
        return f"<{type(value).__name__}>"
