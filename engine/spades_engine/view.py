"""Per-seat views: the state as one viewer may know it.

A view is built field by field from what is public plus the viewer's own
cards; nothing is copied wholesale from the state, so a new state field
cannot leak by accident.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, SupportsIndex

from .actions import Action
from .cards import SPADES, Card, cards_of
from .draw import stock_top
from .events import SideScore, native_reduce
from .ruleset import Ruleset
from .state import MatchState, Phase


@dataclass(frozen=True, slots=True, init=False)
class TrickView:
    leader: int
    cards: tuple[Card, ...]  # play order, starting with the lead
    winner: int

    # Written out rather than made by @dataclass, so that compiled by mypyc it
    # is native: object.__setattr__(self, <name>, v) in a native class's method
    # is a plain store there, and uncompiled what @dataclass's __init__ does.
    def __init__(
        self,
        leader: int,
        cards: tuple[Card, ...],
        winner: int,
    ) -> None:
        object.__setattr__(self, "leader", leader)
        object.__setattr__(self, "cards", cards)
        object.__setattr__(self, "winner", winner)

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)

    # Copies and pickles set the fields back with object.__setattr__, as
    # @dataclass's own methods for a frozen class do (see Ruleset.__getstate__).
    def __getstate__(self) -> list[object]:
        return [getattr(self, f.name) for f in dataclasses.fields(self)]

    def __setstate__(self, state: list[object]) -> None:
        for f, value in zip(dataclasses.fields(self), state, strict=True):
            object.__setattr__(self, f.name, value)


@dataclass(frozen=True, slots=True, init=False)
class SeatView:
    seat: int | None  # None: a spectator
    rules: Ruleset
    phase: Phase
    hand_number: int
    dealer: int
    to_act: int
    scores: tuple[int, ...]  # by side
    bags: tuple[int, ...]  # by side
    bids: tuple[int | None, ...]  # by seat, None until the seat has bid
    blind: tuple[bool, ...]
    tricks_won: tuple[int, ...]
    hand_sizes: tuple[int, ...]
    face_down: tuple[bool, ...]  # seats that have not yet seen their cards
    hand: tuple[Card, ...] | None  # the viewer's cards; None if unseen or a spectator
    trick: tuple[Card, ...]  # the trick in progress, in play order
    leader: int
    led_suit: int  # -1 when no card of the trick has been played
    spades_broken: bool
    tricks: tuple[TrickView, ...]  # the finished tricks of this hand
    exchange_deciders: tuple[int, ...]  # optional exchange: the blind nil bidders who decide
    exchange_decisions: tuple[tuple[int, bool], ...]  # (seat, exchange?) in the order made
    exchange_seats: tuple[int, ...]
    exchange_chosen: tuple[int, ...]  # seats that have chosen their cards to pass
    passed: tuple[Card, ...]  # cards the viewer chose to pass
    received: tuple[Card, ...]  # cards the viewer received in the exchange
    legal_actions: tuple[Action, ...]
    results: tuple[tuple[SideScore, ...], ...]  # every finished hand, by side
    winner: int | None
    # auction trump (public): the hand's trump suit, the seat that names it (-1:
    # none) and whether it has; spades_broken above then means "trump broken"
    trump: int = SPADES
    trump_namer: int = -1
    trump_named: bool = False
    # two players' draw: the stock's top card, for the seat to draw only (None
    # for everyone else and outside the draw), the viewer's own discards, and
    # the cards left in the stock (public)
    stock_top: Card | None = None
    discards: tuple[Card, ...] = ()
    stock_size: int = 0

    def played_cards(self) -> int:
        """Mask of every card played this hand, the trick in progress included."""
        m = 0
        for t in self.tricks:
            for c in t.cards:
                m |= 1 << c
        for c in self.trick:
            m |= 1 << c
        return m

    # Written out rather than made by @dataclass, so that compiled by mypyc it
    # is native: object.__setattr__(self, <name>, v) in a native class's method
    # is a plain store there, and uncompiled what @dataclass's __init__ does.
    def __init__(
        self,
        seat: int | None,
        rules: Ruleset,
        phase: Phase,
        hand_number: int,
        dealer: int,
        to_act: int,
        scores: tuple[int, ...],
        bags: tuple[int, ...],
        bids: tuple[int | None, ...],
        blind: tuple[bool, ...],
        tricks_won: tuple[int, ...],
        hand_sizes: tuple[int, ...],
        face_down: tuple[bool, ...],
        hand: tuple[Card, ...] | None,
        trick: tuple[Card, ...],
        leader: int,
        led_suit: int,
        spades_broken: bool,
        tricks: tuple[TrickView, ...],
        exchange_deciders: tuple[int, ...],
        exchange_decisions: tuple[tuple[int, bool], ...],
        exchange_seats: tuple[int, ...],
        exchange_chosen: tuple[int, ...],
        passed: tuple[Card, ...],
        received: tuple[Card, ...],
        legal_actions: tuple[Action, ...],
        results: tuple[tuple[SideScore, ...], ...],
        winner: int | None,
        trump: int = SPADES,
        trump_namer: int = -1,
        trump_named: bool = False,
        stock_top: Card | None = None,
        discards: tuple[Card, ...] = (),
        stock_size: int = 0,
    ) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "hand_number", hand_number)
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "to_act", to_act)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "bags", bags)
        object.__setattr__(self, "bids", bids)
        object.__setattr__(self, "blind", blind)
        object.__setattr__(self, "tricks_won", tricks_won)
        object.__setattr__(self, "hand_sizes", hand_sizes)
        object.__setattr__(self, "face_down", face_down)
        object.__setattr__(self, "hand", hand)
        object.__setattr__(self, "trick", trick)
        object.__setattr__(self, "leader", leader)
        object.__setattr__(self, "led_suit", led_suit)
        object.__setattr__(self, "spades_broken", spades_broken)
        object.__setattr__(self, "tricks", tricks)
        object.__setattr__(self, "exchange_deciders", exchange_deciders)
        object.__setattr__(self, "exchange_decisions", exchange_decisions)
        object.__setattr__(self, "exchange_seats", exchange_seats)
        object.__setattr__(self, "exchange_chosen", exchange_chosen)
        object.__setattr__(self, "passed", passed)
        object.__setattr__(self, "received", received)
        object.__setattr__(self, "legal_actions", legal_actions)
        object.__setattr__(self, "results", results)
        object.__setattr__(self, "winner", winner)
        object.__setattr__(self, "trump", trump)
        object.__setattr__(self, "trump_namer", trump_namer)
        object.__setattr__(self, "trump_named", trump_named)
        object.__setattr__(self, "stock_top", stock_top)
        object.__setattr__(self, "discards", discards)
        object.__setattr__(self, "stock_size", stock_size)

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)

    # Copies and pickles set the fields back with object.__setattr__, as
    # @dataclass's own methods for a frozen class do (see Ruleset.__getstate__).
    def __getstate__(self) -> list[object]:
        return [getattr(self, f.name) for f in dataclasses.fields(self)]

    def __setstate__(self, state: list[object]) -> None:
        for f, value in zip(dataclasses.fields(self), state, strict=True):
            object.__setattr__(self, f.name, value)


def make_view(st: MatchState, seat: int | None, legal: list[Action]) -> SeatView:
    h = st.hand
    mine = seat is not None and not h.face_down[seat]
    hand = tuple(cards_of(h.hands[seat])) if mine and seat is not None else None
    passed: tuple[Card, ...] = ()
    received: tuple[Card, ...] = ()
    discards: tuple[Card, ...] = ()
    top = None
    if seat is not None and h.discarded:
        discards = tuple(cards_of(h.discarded[seat]))
        if seat == h.to_act:
            top = stock_top(st)
    if seat is not None:
        passed = tuple(cards_of(h.exchange_chosen.get(seat, 0)))
        received = h.received.get(seat, ())
    return SeatView(
        seat=seat,
        rules=st.rules,
        phase=st.phase,
        hand_number=h.number,
        dealer=h.dealer,
        to_act=h.to_act,
        scores=tuple(st.scores),
        bags=tuple(st.bags),
        bids=tuple(h.bids),
        blind=tuple(h.blind),
        tricks_won=tuple(h.tricks_won),
        hand_sizes=tuple(m.bit_count() for m in h.hands),
        face_down=tuple(h.face_down),
        hand=hand,
        trick=tuple(h.trick),
        leader=h.leader,
        led_suit=h.led_suit,
        spades_broken=h.spades_broken,
        tricks=tuple(TrickView(lead, cards, win) for lead, cards, win in h.completed),
        exchange_deciders=h.exchange_deciders,
        exchange_decisions=tuple(h.exchange_decisions.items()),
        exchange_seats=h.exchange_seats,
        exchange_chosen=tuple(sorted(h.exchange_chosen)),
        passed=passed,
        received=received,
        legal_actions=tuple(legal),
        results=tuple(st.results),
        winner=st.winner,
        trump=h.trump,
        trump_namer=h.trump_namer,
        trump_named=h.trump_named,
        stock_top=top,
        discards=discards,
        stock_size=len(h.stock) - h.drawn,
    )
