"""The match state as plain data.

Phase handlers (bidding, exchange, play) change it in place, and only after
every check has passed, so a rejected action leaves it untouched.  Keeping it
plain data makes snapshots a straight field-by-field copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, SupportsIndex

from .cards import SPADES, Card
from .events import SideScore, native_reduce
from .ruleset import Ruleset


class Phase(StrEnum):
    DRAW = "draw"  # two players: the stock is drawn before bidding (RULES.md 3.1)
    BIDDING = "bidding"
    EXCHANGE = "exchange"
    PLAYING = "playing"
    MATCH_OVER = "match_over"


@dataclass(slots=True, init=False)
class HandState:
    number: int  # 0-based hand index within the match
    dealer: int
    dealt: tuple[int, ...]  # the hands as dealt (masks), for records and checks
    hands: list[int]  # cards still held (masks)
    face_down: list[bool]  # True while the owner has not seen its cards
    bids: list[int | None]
    blind: list[bool]
    tricks_won: list[int]
    to_act: int
    # auction trump: the seat that names trump once bidding closes (-1: none,
    # or the option is off), whether it has, and the hand's trump suit
    trump_namer: int = -1
    trump_named: bool = False
    trump: int = SPADES
    # optional blind nil exchange: the blind nil bidders who decide, and their
    # decisions (True: exchange) in the order made
    exchange_deciders: tuple[int, ...] = ()
    exchange_decisions: dict[int, bool] = field(default_factory=dict)
    # blind nil exchange: seats that must pass, and what each has chosen (mask)
    exchange_seats: tuple[int, ...] = ()
    exchange_chosen: dict[int, int] = field(default_factory=dict)
    received: dict[int, tuple[Card, ...]] = field(default_factory=dict)
    # two players' draw: the stock's order (every card of the deck), how many
    # of its cards the turns so far took, and each seat's discards (masks)
    stock: tuple[Card, ...] = ()
    drawn: int = 0
    discarded: list[int] = field(default_factory=list)
    # play
    leader: int = -1
    trick: list[Card] = field(default_factory=list)  # cards of the trick in progress
    led_suit: int = -1
    spades_broken: bool = False  # the hand's trump is broken (spades unless auction trump)
    completed: list[tuple[int, tuple[Card, ...], int]] = field(default_factory=list)
    # (leader, cards in play order, winner) of each finished trick

    # Written out rather than made by @dataclass, so that compiled by mypyc it
    # is native (see events), not interpreted (once a hand).  The fields that
    # @dataclass made by a factory take None for a new empty one.
    def __init__(
        self,
        number: int,
        dealer: int,
        dealt: tuple[int, ...],
        hands: list[int],
        face_down: list[bool],
        bids: list[int | None],
        blind: list[bool],
        tricks_won: list[int],
        to_act: int,
        trump_namer: int = -1,
        trump_named: bool = False,
        trump: int = SPADES,
        exchange_deciders: tuple[int, ...] = (),
        exchange_decisions: dict[int, bool] | None = None,
        exchange_seats: tuple[int, ...] = (),
        exchange_chosen: dict[int, int] | None = None,
        received: dict[int, tuple[Card, ...]] | None = None,
        stock: tuple[Card, ...] = (),
        drawn: int = 0,
        discarded: list[int] | None = None,
        leader: int = -1,
        trick: list[Card] | None = None,
        led_suit: int = -1,
        spades_broken: bool = False,
        completed: list[tuple[int, tuple[Card, ...], int]] | None = None,
    ) -> None:
        self.number = number
        self.dealer = dealer
        self.dealt = dealt
        self.hands = hands
        self.face_down = face_down
        self.bids = bids
        self.blind = blind
        self.tricks_won = tricks_won
        self.to_act = to_act
        self.trump_namer = trump_namer
        self.trump_named = trump_named
        self.trump = trump
        self.exchange_deciders = exchange_deciders
        self.exchange_decisions = {} if exchange_decisions is None else exchange_decisions
        self.exchange_seats = exchange_seats
        self.exchange_chosen = {} if exchange_chosen is None else exchange_chosen
        self.received = {} if received is None else received
        self.stock = stock
        self.drawn = drawn
        self.discarded = [] if discarded is None else discarded
        self.leader = leader
        self.trick = [] if trick is None else trick
        self.led_suit = led_suit
        self.spades_broken = spades_broken
        self.completed = [] if completed is None else completed

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True)
class MatchState:
    rules: Ruleset
    seed: int
    deals: tuple[tuple[int, ...], ...]  # explicit deals (masks), used before the seed
    first_dealer: int
    phase: Phase
    hand: HandState
    scores: list[int]
    bags: list[int]
    results: list[tuple[SideScore, ...]] = field(default_factory=list)
    hand_bids: list[tuple[int, ...]] = field(default_factory=list)
    hand_tricks: list[tuple[int, ...]] = field(default_factory=list)
    winner: int | None = None
    action_count: int = 0

    def side_of(self, seat: int) -> int:
        return self.rules.side_of(seat)

    def team_of(self, seat: int) -> int | None:
        """The audience team of a seat (None in cutthroat, where no team exists)."""
        return seat & 1 if self.rules.partnerships else None
