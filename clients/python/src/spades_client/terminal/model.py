"""The table as the terminal shows it, built from a ``SeatView`` or from events.

``spades play`` rebuilds it from the seat's view whenever it is the seat's
turn (the view is the server's word: hand, legal actions, bids, scores);
``spades watch`` and ``spades replay`` have only events and keep it up to date
with :meth:`Table.apply`, one event at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, TypeVar

from .._gen.spades.v1 import spades_pb2 as pb
from .cards import card_key

__all__ = ["EVERYONE", "SPECTATOR", "LastTrick", "Table", "seat_position"]

T = TypeVar("T")

SPECTATOR: Final = -1
EVERYONE: Final = -2  # a replay: every seat's cards are known

_POSITIONS: Final[dict[int, tuple[str, ...]]] = {
    4: ("North", "East", "South", "West"),
}
PHASES: Final[dict[int, str]] = {
    pb.PHASE_DRAW: "draw",
    pb.PHASE_BIDDING: "bidding",
    pb.PHASE_EXCHANGE: "exchange",
    pb.PHASE_PLAYING: "playing",
    pb.PHASE_MATCH_OVER: "over",
}
_HAND_SIZE_PLAYERS: Final = {18: 3, 10: 5}


def seat_position(seat: int, players: int) -> str:
    """``North``..``West`` at a table of four (seats 0..3 clockwise), else ``Seat N``."""
    names = _POSITIONS.get(players)
    if names is not None and 0 <= seat < len(names):
        return names[seat]
    return f"Seat {seat}"


@dataclass
class LastTrick:
    number: int
    leader: int
    winner: int
    plays: list[tuple[int, pb.Card]]


@dataclass
class Table:
    """What the terminal knows of a match. Seats are the server's numbers."""

    players: int = 4
    partnerships: bool = True
    hand_size: int = 13
    viewer: int = SPECTATOR  # a seat, SPECTATOR, or EVERYONE (replay)
    names: list[str] = field(default_factory=list)
    controls: list[int] = field(default_factory=list)
    phase: str = "bidding"
    hand_number: int = 0
    dealer: int = -1
    to_act: int = -1
    bids: list[int | None] = field(default_factory=list)
    blind: list[bool] = field(default_factory=list)
    tricks_won: list[int] = field(default_factory=list)
    face_down: list[bool] = field(default_factory=list)
    hands: dict[int, list[pb.Card]] = field(default_factory=dict)  # the cards it may know
    hand_sizes: list[int] = field(default_factory=list)
    trick: list[tuple[int, pb.Card]] = field(default_factory=list)  # (seat, card), play order
    leader: int = -1
    tricks_done: int = 0
    last_trick: LastTrick | None = None
    scores: list[int] = field(default_factory=list)
    bags: list[int] = field(default_factory=list)
    trump: int = pb.SUIT_SPADES
    trump_named: bool = False
    spades_broken: bool = False
    deuces_high: bool = False
    jokers: bool = False
    target_score: int = 0
    stock_top: pb.Card | None = None
    stock_size: int = 0
    exchange_cards: int = 0
    exchange_seats: list[int] = field(default_factory=list)
    legal: list[pb.Action] = field(default_factory=list)
    results: list[pb.HandScored] = field(default_factory=list)
    winner: int = -1
    ruleset: pb.ResolvedRuleset | None = None
    bid_order_known: bool = False

    def __post_init__(self) -> None:
        self.resize(self.players)

    # -- shape -------------------------------------------------------------------------
    def resize(self, players: int) -> None:
        """Make every per-seat list ``players`` long (keeping what is known)."""
        self.players = players
        _fit(self.names, players, "")
        for i in range(players):
            self.names[i] = self.names[i] or seat_position(i, players)
        _fit(self.controls, players, pb.SEAT_CONTROL_UNSPECIFIED)
        _fit(self.bids, players, None)
        _fit(self.blind, players, False)
        _fit(self.tricks_won, players, 0)
        _fit(self.face_down, players, False)
        _fit(self.hand_sizes, players, self.hand_size)
        _fit(self.scores, self.sides, 0)
        _fit(self.bags, self.sides, 0)

    @property
    def sides(self) -> int:
        return 2 if self.partnerships else self.players

    def side_of(self, seat: int) -> int:
        return seat % 2 if self.partnerships else seat

    def side_seats(self, side: int) -> list[int]:
        return [s for s in range(self.players) if self.side_of(s) == side]

    def position(self, seat: int) -> str:
        return seat_position(seat, self.players)

    def is_bot(self, seat: int) -> bool:
        if not 0 <= seat < len(self.controls):
            return False
        return self.controls[seat] in (pb.SEAT_CONTROL_BOT, pb.SEAT_CONTROL_BOT_STANDING_IN)

    def known_hand(self, seat: int) -> list[pb.Card] | None:
        return self.hands.get(seat)

    # -- from the server's view --------------------------------------------------------
    @classmethod
    def from_view(cls, view: pb.SeatView) -> Table:
        rules = view.ruleset
        players = rules.players or len(view.seats) or 4
        t = cls(
            players=players,
            partnerships=rules.partnerships,
            hand_size=rules.hand_size or 13,
            viewer=view.seat,
        )
        t.ruleset = rules
        t.deuces_high = rules.deuces_high
        t.jokers = rules.jokers
        t.target_score = rules.target_score
        t.exchange_cards = rules.blind_nil_exchange
        for info in view.seats:
            if 0 <= info.seat < players:
                t.names[info.seat] = info.name or t.position(info.seat)
                t.controls[info.seat] = info.control
        t.phase = PHASES.get(view.phase, "bidding")
        t.hand_number = view.hand_number
        t.dealer = view.dealer
        t.to_act = view.to_act
        for i, b in enumerate(view.bids[:players]):
            t.bids[i] = b.tricks if b.has_bid else None
            t.blind[i] = b.blind
        t.tricks_won[: len(view.tricks_won)] = list(view.tricks_won)[:players]
        t.hand_sizes[: len(view.hand_sizes)] = list(view.hand_sizes)[:players]
        t.face_down[: len(view.face_down)] = list(view.face_down)[:players]
        if view.seat >= 0 and view.hand_visible:
            t.hands[view.seat] = list(view.hand)
        t.leader = view.leader
        t.trick = [((view.leader + i) % players, c) for i, c in enumerate(view.trick)]
        t.tricks_done = len(view.tricks)
        if view.tricks:
            last = view.tricks[-1]
            plays = [((last.leader + i) % players, c) for i, c in enumerate(last.cards)]
            t.last_trick = LastTrick(len(view.tricks), last.leader, last.winner, plays)
        t.scores = list(view.scores) or t.scores
        t.bags = list(view.bags) or t.bags
        t.trump = view.trump or pb.SUIT_SPADES
        t.trump_named = view.trump_named
        t.spades_broken = view.spades_broken
        t.stock_top = view.stock_top if view.HasField("stock_top") and view.stock_top.suit else None
        t.stock_size = view.stock_size
        t.exchange_seats = list(view.exchange_seats)
        t.legal = list(view.legal_actions)
        t.winner = view.winner
        return t

    # -- from events -------------------------------------------------------------------
    def apply(self, event: pb.MatchEvent) -> None:
        """Bring the table up to date with one event."""
        kind = event.WhichOneof("kind")
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(getattr(event, kind or ""))
        self.legal = []  # only a view says what the viewer may do

    def _grow(self, seat: int) -> None:
        if seat >= self.players:
            self.resize(seat + 1)

    def _on_hand_started(self, e: pb.HandStarted) -> None:
        if not self.bid_order_known and e.hand_size in _HAND_SIZE_PLAYERS:
            self.resize(_HAND_SIZE_PLAYERS[e.hand_size])
        self.hand_size = e.hand_size or self.hand_size
        self.hand_number = e.hand_number
        self.dealer = e.dealer
        self._grow(e.dealer)
        self.phase = "draw" if self.players == 2 else "bidding"
        self.to_act = (e.dealer + 1) % self.players  # the first to bid (or draw)
        self.bids = [None] * self.players
        self.blind = [False] * self.players
        self.tricks_won = [0] * self.players
        self.face_down = [s in e.face_down for s in range(self.players)]
        self.hand_sizes = [0 if self.phase == "draw" else self.hand_size] * self.players
        self.hands = {}
        self.trick = []
        self.leader = -1
        self.tricks_done = 0
        self.last_trick = None
        self.trump = pb.SUIT_SPADES
        self.trump_named = False
        self.spades_broken = False
        self.stock_top = None
        self.stock_size = 52 if self.players == 2 else 0
        self.exchange_seats = []

    def _on_hand_shown(self, e: pb.HandShown) -> None:
        self._grow(e.seat)
        self.hands[e.seat] = list(e.cards)
        self.hand_sizes[e.seat] = len(e.cards)
        self.face_down[e.seat] = False
        if self.phase == "draw":
            self.phase = "bidding"

    def _on_looked_at_cards(self, e: pb.LookedAtCards) -> None:
        self._grow(e.seat)
        self.face_down[e.seat] = False

    def _on_bid_made(self, e: pb.BidMade) -> None:
        self._grow(e.seat)
        if self.phase == "draw":
            self.phase = "bidding"
        self.bids[e.seat] = e.tricks
        self.blind[e.seat] = e.blind
        self.to_act = (e.seat + 1) % self.players

    def _on_bidding_closed(self, e: pb.BiddingClosed) -> None:
        players = len(e.bids)
        if players:
            self.partnerships = len(e.contracts) != players and len(e.contracts) == 2
            self.bid_order_known = True
            self.resize(players)  # the sides may have changed too
            for seat, b in enumerate(e.bids):
                self.bids[seat] = b
        self.phase = "playing"
        self.to_act = -1  # the first lead depends on the rules: known at the first card

    def _on_exchange_started(self, e: pb.ExchangeStarted) -> None:
        self.phase = "exchange"
        self.to_act = -1
        self.exchange_seats = list(e.seats)
        self.exchange_cards = e.cards_each

    def _on_cards_passed(self, e: pb.CardsPassed) -> None:
        gone = {card_key(c) for c in e.cards}
        if e.from_seat in self.hands:
            self.hands[e.from_seat] = [
                c for c in self.hands[e.from_seat] if card_key(c) not in gone
            ]
        if e.to_seat in self.hands:
            self.hands[e.to_seat] = [*self.hands[e.to_seat], *e.cards]

    def _on_trump_named(self, e: pb.TrumpNamed) -> None:
        self.trump = e.suit
        self.trump_named = True

    def _on_cards_drawn(self, e: pb.CardsDrawn) -> None:
        self._grow(e.seat)
        self.hands.setdefault(e.seat, []).append(e.kept)

    def _on_draw_taken(self, e: pb.DrawTaken) -> None:
        self._grow(e.seat)
        self.stock_size = max(0, self.stock_size - 2)
        self.hand_sizes[e.seat] += 1
        self.to_act = (e.seat + 1) % self.players

    def _on_card_played(self, e: pb.CardPlayed) -> None:
        self._grow(e.seat)
        self.phase = "playing"
        if not self.trick:
            self.leader = e.seat
        self.trick.append((e.seat, e.card))
        if self.is_trump(e.card):
            self.spades_broken = True
        held = self.hands.get(e.seat)
        if held is not None:
            self.hands[e.seat] = [c for c in held if card_key(c) != card_key(e.card)]
        self.hand_sizes[e.seat] = max(0, self.hand_sizes[e.seat] - 1)
        self.to_act = (e.seat + 1) % self.players if len(self.trick) < self.players else -1

    def _on_trick_won(self, e: pb.TrickWon) -> None:
        self._grow(e.winner)
        self.tricks_won[e.winner] += 1
        plays = [((e.leader + i) % self.players, c) for i, c in enumerate(e.cards)]
        self.last_trick = LastTrick(e.trick_number, e.leader, e.winner, plays)
        self.tricks_done = e.trick_number
        self.trick = []
        self.leader = e.winner
        self.to_act = e.winner if self.tricks_done < self.hand_size else -1

    def _on_hand_scored(self, e: pb.HandScored) -> None:
        self.to_act = -1
        self.results.append(e)
        for s in e.sides:
            if 0 <= s.side < len(self.scores):
                self.scores[s.side] = s.score
                self.bags[s.side] = s.bags

    def _on_match_ended(self, e: pb.MatchEnded) -> None:
        self.winner = e.winner
        self.phase = "over"
        self.to_act = -1
        if e.scores:
            self.scores = list(e.scores)

    def _on_seat_control_changed(self, e: pb.SeatControlChanged) -> None:
        self._grow(e.seat)
        self.controls[e.seat] = e.control

    # -- rules the display needs -------------------------------------------------------
    def is_trump(self, card: pb.Card) -> bool:
        if self.deuces_high and card.suit == pb.SUIT_DIAMONDS and card.rank == pb.RANK_TWO:
            return True
        return int(card.suit) == self.trump

    def playable_cards(self) -> list[pb.Card]:
        """The cards the legal actions let the viewer play now."""
        return [a.play_card.card for a in self.legal if a.WhichOneof("kind") == "play_card"]

    def legal_kinds(self) -> list[str]:
        kinds: list[str] = []
        for a in self.legal:
            k = a.WhichOneof("kind") or ""
            if k not in kinds:
                kinds.append(k)
        return kinds

    def bid_range(self) -> tuple[int, int] | None:
        values = sorted(a.bid.tricks for a in self.legal if a.WhichOneof("kind") == "bid")
        return (values[0], values[-1]) if values else None


def _fit(values: list[T], n: int, fill: T) -> None:
    del values[n:]
    values.extend([fill] * (n - len(values)))
