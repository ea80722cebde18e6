"""Events: what an action caused, each with the audience allowed to see it.

Hidden information is filtered here, where events are made: an event that
names a card a viewer may not see is addressed to a narrower audience, never
to everyone.  ``visible_to`` is the only test later layers need.

Event classes are plain slotted dataclasses rather than frozen ones: a frozen
dataclass costs three times as much to build, and apply() builds one per card
played.  Treat events as read-only values.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

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


EVERYONE = Audience("everyone")
_SEATS = tuple(Audience("seat", i) for i in range(5))
_TEAMS = tuple(Audience("team", i) for i in range(2))


def to_seat(seat: int) -> Audience:
    return _SEATS[seat]


def to_team(team: int) -> Audience:
    return _TEAMS[team]


@dataclass(slots=True)
class HandStarted:
    audience: Audience
    hand_number: int
    dealer: int
    hand_size: int
    face_down: tuple[int, ...]  # seats dealt face down: they may still bid blind nil


@dataclass(slots=True)
class HandShown:
    """A seat sees its own cards: at the deal, after looking, or after a blind nil."""

    audience: Audience
    seat: int
    cards: tuple[Card, ...]


@dataclass(slots=True)
class LookedAtCards:
    audience: Audience
    seat: int


@dataclass(slots=True)
class BidMade:
    audience: Audience
    seat: int
    tricks: int
    blind: bool


@dataclass(slots=True)
class BiddingClosed:
    audience: Audience
    bids: tuple[int, ...]
    contracts: tuple[int, ...]  # by side


@dataclass(slots=True)
class TrumpNamed:
    """With auction trump, the highest bidder named the hand's trump suit (public)."""

    audience: Audience
    seat: int
    suit: int


@dataclass(slots=True)
class ExchangeDecided:
    """With the optional exchange, a blind nil bidder took it or declined (public)."""

    audience: Audience
    seat: int
    exchange: bool


@dataclass(slots=True)
class ExchangeStarted:
    audience: Audience
    seats: tuple[int, ...]  # who must pass
    cards_each: int


@dataclass(slots=True)
class CardsChosen:
    """A seat has chosen the cards it passes (which cards stays hidden)."""

    audience: Audience
    seat: int


@dataclass(slots=True)
class CardsPassed:
    """Cards moved between partners: seen by that team only."""

    audience: Audience
    from_seat: int
    to_seat: int
    cards: tuple[Card, ...]


@dataclass(slots=True)
class CardsDrawn:
    """Two players' draw, to the drawing seat only: the card it kept and the one
    it saw and discarded."""

    audience: Audience
    seat: int
    kept: Card
    discarded: Card


@dataclass(slots=True)
class DrawTaken:
    """Two players' draw, public: a seat took its turn (no card is named)."""

    audience: Audience
    seat: int


@dataclass(slots=True)
class CardPlayed:
    audience: Audience
    seat: int
    card: Card


@dataclass(slots=True)
class TrickWon:
    audience: Audience
    trick_number: int
    winner: int
    cards: tuple[Card, ...]  # in play order, starting with the lead
    leader: int


@dataclass(slots=True)
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


@dataclass(slots=True)
class HandScored:
    audience: Audience
    hand_number: int
    bids: tuple[int, ...]
    blind: tuple[bool, ...]
    tricks: tuple[int, ...]
    sides: tuple[SideScore, ...]


@dataclass(slots=True)
class MatchEnded:
    audience: Audience
    winner: int  # the winning side
    scores: tuple[int, ...]
    hands_played: int


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
