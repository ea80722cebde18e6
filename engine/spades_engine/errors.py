"""Typed rejections.  ``reason`` values are stable: clients and the gRPC layer
switch on them, so a value, once released, never changes meaning."""

from __future__ import annotations

from enum import StrEnum


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


class IllegalAction(Exception):
    """An action the rules do not allow now.  The match is left exactly as it was."""

    def __init__(self, reason: Reason, message: str, seat: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.seat = seat

    def __repr__(self) -> str:
        return f"IllegalAction({self.reason.value}, {self.message!r})"


class SnapshotError(ValueError):
    """A snapshot or game record that cannot be loaded."""
