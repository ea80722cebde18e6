"""A match's seats: who sits in each and who plays it.

A seat is a human's (it has a token hash) or a bot's. A human seat is open
until claimed; when its human leaves or the turn timer runs out, a bot stands
in until the human claims it back or acts. Kept in the match's stored
metadata, field by field (``Session.meta``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .gen.spades.v1 import spades_pb2 as pb

CONTROL_OPEN = pb.SEAT_CONTROL_OPEN
CONTROL_HUMAN = pb.SEAT_CONTROL_HUMAN
CONTROL_BOT = pb.SEAT_CONTROL_BOT
CONTROL_STAND_IN = pb.SEAT_CONTROL_BOT_STANDING_IN
HUMAN_CONTROLS = (CONTROL_OPEN, CONTROL_HUMAN)  # the match waits for a person


@dataclass(slots=True)
class Seat:
    name: str
    bot_level: int  # a BotLevel; 0 for a human seat
    token_hash: str  # "" for a bot seat
    control: int  # a SeatControl

    @property
    def is_bot_seat(self) -> bool:
        return not self.token_hash
