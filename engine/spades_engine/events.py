"""Events: what an action caused, each with the audience allowed to see it.

Hidden information is filtered here, where events are made: an event that
names a card a viewer may not see is addressed to a narrower audience, never
to everyone.  ``visible_to`` is the only test later layers need.

Event classes are plain slotted dataclasses rather than frozen ones: a frozen
dataclass costs three times as much to build, and apply() builds one per card
played.  Treat events as read-only values.

Their constructors are written out (``init=False``) rather than made by
@dataclass, with the same signature: compiled by mypyc, a written-out
``__init__`` is native (CardPlayed(...) from compiled code 161 -> 77 ns), while
the dataclass's is interpreted Python setting each field through a
descriptor.  A native ``__init__`` makes the compiled class's ``__new__`` run
it, so ``cls.__new__(cls)``, which copy and pickle call, would fail there: see
``native_reduce``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final, SupportsIndex

from .cards import Card, card_name
from .errors import SpadesError


@dataclass(frozen=True, slots=True)
class Audience:
    """Everyone, one seat, or one team (a side in partnerships)."""

    kind: str  # "everyone" | "seat" | "team"
    index: int = -1

    def visible_to(self, seat: int | None, team_of_seat: int | None) -> bool:
        """Whether a viewer may see it; ``seat`` None is a spectator."""
        if self.kind == "everyone":
            return True
        if seat is None:
            return False
        if self.kind == "seat":
            return self.index == seat
        return self.index == team_of_seat

    def __str__(self) -> str:
        return self.kind if self.kind == "everyone" else f"{self.kind}:{self.index}"

    # Copies and pickles set the fields back with object.__setattr__, as
    # @dataclass's own methods for a frozen class do (see Ruleset.__getstate__).
    def __getstate__(self) -> list[object]:
        return [getattr(self, f.name) for f in dataclasses.fields(self)]

    def __setstate__(self, state: list[object]) -> None:
        for f, value in zip(dataclasses.fields(self), state, strict=True):
            object.__setattr__(self, f.name, value)


def native_reduce(event: Any, protocol: SupportsIndex) -> str | tuple[Any, ...]:
    """The ``__reduce_ex__`` of an event (or other dataclass with a written-out
    constructor taking its fields in order): uncompiled, object's own (the copies and
    pickles of a dataclass, byte for byte); compiled, where ``__new__`` runs
    ``__init__``, the constructor called with the fields' values (protocols 0
    and 1 refuse a slotted class either way)."""
    if _NEW_RUNS_INIT and int(protocol) >= 2:
        return type(event), tuple(getattr(event, f.name) for f in dataclasses.fields(event))
    return object.__reduce_ex__(event, protocol)


EVERYONE: Final = Audience("everyone")
_SEATS: Final = tuple(Audience("seat", i) for i in range(5))
_TEAMS: Final = tuple(Audience("team", i) for i in range(2))


def to_seat(seat: int) -> Audience:
    return _SEATS[seat]


def to_team(team: int) -> Audience:
    return _TEAMS[team]


@dataclass(slots=True, init=False)
class HandStarted:
    audience: Audience
    hand_number: int
    dealer: int
    hand_size: int
    face_down: tuple[int, ...]  # seats dealt face down: they may still bid blind nil

    def __init__(
        self,
        audience: Audience,
        hand_number: int,
        dealer: int,
        hand_size: int,
        face_down: tuple[int, ...],
    ) -> None:
        self.audience = audience
        self.hand_number = hand_number
        self.dealer = dealer
        self.hand_size = hand_size
        self.face_down = face_down

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class HandShown:
    """A seat sees its own cards: at the deal, after looking, or after a blind nil."""

    audience: Audience
    seat: int
    cards: tuple[Card, ...]

    def __init__(self, audience: Audience, seat: int, cards: tuple[Card, ...]) -> None:
        self.audience = audience
        self.seat = seat
        self.cards = cards

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class LookedAtCards:
    audience: Audience
    seat: int

    def __init__(self, audience: Audience, seat: int) -> None:
        self.audience = audience
        self.seat = seat

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class BidMade:
    audience: Audience
    seat: int
    tricks: int
    blind: bool

    def __init__(self, audience: Audience, seat: int, tricks: int, blind: bool) -> None:
        self.audience = audience
        self.seat = seat
        self.tricks = tricks
        self.blind = blind

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class BiddingClosed:
    audience: Audience
    bids: tuple[int, ...]
    contracts: tuple[int, ...]  # by side

    def __init__(
        self,
        audience: Audience,
        bids: tuple[int, ...],
        contracts: tuple[int, ...],
    ) -> None:
        self.audience = audience
        self.bids = bids
        self.contracts = contracts

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class TrumpNamed:
    """With auction trump, the highest bidder named the hand's trump suit (public)."""

    audience: Audience
    seat: int
    suit: int

    def __init__(self, audience: Audience, seat: int, suit: int) -> None:
        self.audience = audience
        self.seat = seat
        self.suit = suit

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class ExchangeDecided:
    """With the optional exchange, a blind nil bidder took it or declined (public)."""

    audience: Audience
    seat: int
    exchange: bool

    def __init__(self, audience: Audience, seat: int, exchange: bool) -> None:
        self.audience = audience
        self.seat = seat
        self.exchange = exchange

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class ExchangeStarted:
    audience: Audience
    seats: tuple[int, ...]  # who must pass
    cards_each: int

    def __init__(self, audience: Audience, seats: tuple[int, ...], cards_each: int) -> None:
        self.audience = audience
        self.seats = seats
        self.cards_each = cards_each

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class CardsChosen:
    """A seat has chosen the cards it passes (which cards stays hidden)."""

    audience: Audience
    seat: int

    def __init__(self, audience: Audience, seat: int) -> None:
        self.audience = audience
        self.seat = seat

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class CardsPassed:
    """Cards moved between partners: seen by that team only."""

    audience: Audience
    from_seat: int
    to_seat: int
    cards: tuple[Card, ...]

    def __init__(
        self,
        audience: Audience,
        from_seat: int,
        to_seat: int,
        cards: tuple[Card, ...],
    ) -> None:
        self.audience = audience
        self.from_seat = from_seat
        self.to_seat = to_seat
        self.cards = cards

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class CardsDrawn:
    """Two players' draw, to the drawing seat only: the card it kept and the one
    it saw and discarded."""

    audience: Audience
    seat: int
    kept: Card
    discarded: Card

    def __init__(self, audience: Audience, seat: int, kept: Card, discarded: Card) -> None:
        self.audience = audience
        self.seat = seat
        self.kept = kept
        self.discarded = discarded

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class DrawTaken:
    """Two players' draw, public: a seat took its turn (no card is named)."""

    audience: Audience
    seat: int

    def __init__(self, audience: Audience, seat: int) -> None:
        self.audience = audience
        self.seat = seat

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class CardPlayed:
    audience: Audience
    seat: int
    card: Card

    def __init__(self, audience: Audience, seat: int, card: Card) -> None:
        self.audience = audience
        self.seat = seat
        self.card = card

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class TrickWon:
    audience: Audience
    trick_number: int
    winner: int
    cards: tuple[Card, ...]  # in play order, starting with the lead
    leader: int

    def __init__(
        self,
        audience: Audience,
        trick_number: int,
        winner: int,
        cards: tuple[Card, ...],
        leader: int,
    ) -> None:
        self.audience = audience
        self.trick_number = trick_number
        self.winner = winner
        self.cards = cards
        self.leader = leader

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class SideScore:
    side: int
    contract: int
    tricks: int
    contract_points: int
    nil_points: int
    bags_taken: int
    bag_penalty: int
    hand_points: int
    score: int
    bags: int

    def __init__(
        self,
        side: int,
        contract: int,
        tricks: int,
        contract_points: int,
        nil_points: int,
        bags_taken: int,
        bag_penalty: int,
        hand_points: int,
        score: int,
        bags: int,
    ) -> None:
        self.side = side
        self.contract = contract
        self.tricks = tricks
        self.contract_points = contract_points
        self.nil_points = nil_points
        self.bags_taken = bags_taken
        self.bag_penalty = bag_penalty
        self.hand_points = hand_points
        self.score = score
        self.bags = bags

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class HandScored:
    audience: Audience
    hand_number: int
    bids: tuple[int, ...]
    blind: tuple[bool, ...]
    tricks: tuple[int, ...]
    sides: tuple[SideScore, ...]

    def __init__(
        self,
        audience: Audience,
        hand_number: int,
        bids: tuple[int, ...],
        blind: tuple[bool, ...],
        tricks: tuple[int, ...],
        sides: tuple[SideScore, ...],
    ) -> None:
        self.audience = audience
        self.hand_number = hand_number
        self.bids = bids
        self.blind = blind
        self.tricks = tricks
        self.sides = sides

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


@dataclass(slots=True, init=False)
class MatchEnded:
    audience: Audience
    winner: int  # the winning side
    scores: tuple[int, ...]
    hands_played: int

    def __init__(
        self,
        audience: Audience,
        winner: int,
        scores: tuple[int, ...],
        hands_played: int,
    ) -> None:
        self.audience = audience
        self.winner = winner
        self.scores = scores
        self.hands_played = hands_played

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        return native_reduce(self, protocol)


def _new_runs_init() -> bool:
    try:
        LookedAtCards.__new__(LookedAtCards)
    except TypeError:  # compiled by mypyc: __new__ ran __init__ without its arguments
        return True
    return False


_NEW_RUNS_INIT: Final = _new_runs_init()
"""Whether ``__new__`` of an event class runs its ``__init__`` (compiled by mypyc)."""


Event = (
    HandStarted
    | HandShown
    | LookedAtCards
    | BidMade
    | BiddingClosed
    | TrumpNamed
    | ExchangeDecided
    | ExchangeStarted
    | CardsChosen
    | CardsPassed
    | CardsDrawn
    | DrawTaken
    | CardPlayed
    | TrickWon
    | HandScored
    | MatchEnded
)
_EVENT_TYPES = Event.__args__


def event_to_dict(event: object) -> dict[str, Any]:
    """A JSON-ready form: ``type`` plus the fields, cards by name."""
    if not isinstance(event, _EVENT_TYPES):
        raise SpadesError(f"{type(event).__name__} is not an engine event")
    out: dict[str, Any] = {"type": type(event).__name__, "audience": str(event.audience)}
    for f in dataclasses.fields(event):
        if f.name == "audience":
            continue
        out[f.name] = _plain(f.name, getattr(event, f.name))
    return out


def _plain(name: str, value: Any) -> Any:
    if name in ("card", "kept", "discarded"):
        return card_name(value)
    if name == "cards":
        return [card_name(c) for c in value]
    if isinstance(value, tuple):
        return [_plain("", v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value
