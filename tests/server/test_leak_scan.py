"""The leak scan: every byte the server sends each seat and each spectator,
across random matches of every preset and of every variant that changes what
is dealt or seen, decoded and checked against the true deal.

Each match has only human seats, driven with random legal actions (blind nil,
the exchange and its optional form, the two players' draw, auction trump, chat
and refused actions included). The bytes come from calls made with no
response deserializer, so what is checked is what came over the wire: every
seat's StreamEvents, GetView, ClaimSeat, SubmitAction and SendChat answers
(refusals' status details too), one seat's Play call, PollEvents with each
seat token and without a credential, and a Spectate stream.

The truth is rebuilt from ExportMatch alone (the game record, replayed by the
engine, must give the exported snapshot's bytes): each hand's deal, the
exchange, the draw's stock order, and when each card became public. A viewer
may be sent a card only if, at that message's sequence number, it holds or held
it this hand with its cards face up, received it in the exchange, drew or
discarded it in the draw, is the drawer looking at it on the stock, or it has
been played; a spectator only played cards. Card names in text are held to
the same rule. Set LEAK_SCAN_SEED to replay a run.
"""

from __future__ import annotations

import json
import os
import queue
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import text_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from server_harness import (
    OP,
    RPC_TIMEOUT,
    STREAM_TIMEOUT,
    Deadline,
    Server,
    kind,
    seat_md,
    seats_to_act,
)
from spades_server import convert
from spades_server.gen.spades.v1 import spades_pb2 as pb

from spades_engine import events as ev
from spades_engine.actions import parse_action
from spades_engine.record import start_match
from spades_engine.snapshot import replay_snapshot

SERVICE = "/spades.v1.SpadesService/"
SCAN_SEED = int(os.environ.get("LEAK_SCAN_SEED", str(time.time_ns() % 1_000_000_007)))
ROUNDS = 2  # matches per variant, each with its own seed
# Hands per match: the second starts from a score (blind nil eligibility, a new
# dealer, a new stock), and more would repeat the same paths at CI's cost.
MAX_HANDS = 2
TARGET = 100  # a low target, so that some matches end (MatchEnded scanned too)
Spectator = None  # the viewer with no seat

# Variants whose differences reach what is dealt or seen: presets, table
# sizes, decks, blind nil with each exchange, the draw, and the bidding rules
# that change which actions (and so which views) occur.
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("classic", {"preset": "classic"}),
    ("polish", {"preset": "polish"}),
    ("polish, blind nil at any score", {"preset": "polish", "blind_nil_deficit": 0}),
    ("german", {"preset": "german"}),
    ("bulgarian", {"preset": "bulgarian"}),
    (
        "cutthroat 4, blind nil",
        {"partnerships": False, "blind_nil": True, "blind_nil_deficit": 0, "blind_nil_exchange": 0},
    ),
    ("cutthroat 3", {"players": 3, "partnerships": False, "jokers": True}),
    (
        "cutthroat 5, blind nil",
        {
            "players": 5,
            "partnerships": False,
            "jokers": True,
            "blind_nil": True,
            "blind_nil_deficit": 0,
            "blind_nil_exchange": 0,
        },
    ),
    ("jokers", {"jokers": True, "first_lead": pb.FIRST_LEAD_DEALER}),
    ("deuces high", {"jokers": True, "deuces_high": True}),
    (
        "exchange of 2",
        {"blind_nil": True, "blind_nil_deficit": 0, "blind_nil_exchange": 2},
    ),
    (
        "optional exchange of 3",
        {
            "blind_nil": True,
            "blind_nil_deficit": 0,
            "blind_nil_exchange": 3,
            "blind_nil_exchange_optional": True,
            "first_lead": pb.FIRST_LEAD_TWO_OF_CLUBS,
        },
    ),
    (
        "optional exchange of 1",
        {
            "blind_nil": True,
            "blind_nil_deficit": 0,
            "blind_nil_exchange": 1,
            "blind_nil_exchange_optional": True,
            "spades_broken": pb.SPADES_BROKEN_TRUMPING,
        },
    ),
    ("two players", {"players": 2, "partnerships": False, "jokers": True}),
    ("two players, german", {"preset": "german", "players": 2}),
    (
        "suicide, exchange of 2",
        {"suicide": True, "blind_nil": True, "blind_nil_deficit": 0, "blind_nil_exchange": 2},
    ),
    ("auction trump", {"auction_trump": True}),
    ("nil off", {"nil_allowed": False}),
    ("thirteen bid, trick count", {"thirteen_bid": True, "scoring": pb.SCORING_TRICKS}),
]

# What each variant's matches must show between them, or the secret its rule
# moves went unscanned (the chooser makes them happen: see MatchRun.choose).
MUST_HAPPEN: dict[str, tuple[str, ...]] = {
    "polish, blind nil at any score": ("blind nil", "ExchangeDecided"),
    "bulgarian": ("blind nil",),
    "cutthroat 4, blind nil": ("blind nil",),
    "cutthroat 5, blind nil": ("blind nil",),
    "exchange of 2": ("blind nil", "CardsPassed", "received shown"),
    "optional exchange of 3": ("ExchangeDecided",),
    "optional exchange of 1": ("ExchangeDecided",),
    "two players": ("CardsDrawn", "stock top shown"),
    "two players, german": ("CardsDrawn", "stock top shown"),
    "suicide, exchange of 2": ("blind nil", "CardsPassed"),
    "auction trump": ("TrumpNamed",),
}

# Events the server adds to the engine's: they take a sequence number but are
# in no game record.
SERVER_KINDS = {"seat_control_changed", "chat_message"}
CARD = pb.Card.DESCRIPTOR
CARD_TOKEN = re.compile(r"\b(?:[2-9TJQKA][CDHS]|LJ|BJ)\b")


# -- cards ----------------------------------------------------------------------------


def card_of(c: pb.Card) -> int:
    """The engine's number for a wire card (suit * 16 + rank from the two)."""
    assert 1 <= c.suit <= 4 and 2 <= c.rank <= 16, f"not a card on the wire: {c}"
    return (c.suit - 1) * 16 + (c.rank - 2)


def mask(cards: Any) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


LITTLE_JOKER, BIG_JOKER = 3 * 16 + 13, 3 * 16 + 14  # spades above the ace, as the engine has them


def card_name(c: int) -> str:
    if c == LITTLE_JOKER:
        return "LJ"
    if c == BIG_JOKER:
        return "BJ"
    return "23456789TJQKA"[c & 15] + "CDHS"[c >> 4]


CARD_NUMBERS = {
    card_name(c): c
    for c in [*(s * 16 + r for s in range(4) for r in range(13)), LITTLE_JOKER, BIG_JOKER]
}


def names(m: int) -> list[str]:
    return [card_name(c) for c in range(64) if m >> c & 1]


def contents(msg: Message) -> tuple[list[int], list[str]]:
    """Every Card (as engine numbers) and every string anywhere inside ``msg``."""
    cards: list[int] = []
    strings: list[str] = []
    _walk(msg, cards, strings)
    return cards, strings


def _walk(msg: Message, cards: list[int], strings: list[str]) -> None:
    for fd, value in msg.ListFields():
        items = value if fd.is_repeated else [value]
        if fd.type == fd.TYPE_STRING:
            strings.extend(items)
        elif fd.message_type is CARD:
            cards.extend(map(card_of, items))
        elif fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            strings += [f"{k} {v}" for k, v in value.items()]
        elif fd.message_type is not None:
            for item in items:
                _walk(item, cards, strings)


def cards_in(msg: Message) -> list[int]:
    return contents(msg)[0]


def status_strings(status: status_pb2.Status) -> list[str]:
    """The text of a refusal: its message and every string of its details."""
    out = [status.message]
    for detail in status.details:
        for detail_type in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest):
            if detail.Is(detail_type.DESCRIPTOR):
                inner = decode(detail_type, detail.value)
                out += contents(inner)[1]
    return out


def one_line(msg: Message) -> str:
    return text_format.MessageToString(msg, as_one_line=True)


def decode(kind: type[Message], raw: bytes) -> Any:
    """Parse wire bytes; every byte must belong to a field ``kind`` knows, at
    any depth: a client library would keep unknown fields unread, and a card
    hidden in one would pass every other check."""
    msg = kind.FromString(raw)
    assert msg.ByteSize() == len(raw), f"{kind.__name__}: bytes outside the message"
    msg.DiscardUnknownFields()  # recursively
    assert msg.ByteSize() == len(raw), f"{kind.__name__}: unknown fields on the wire"
    return msg


# -- capturing what each viewer receives ----------------------------------------------


@dataclass
class Received:
    """One message as it came off the wire for one viewer."""

    viewer: int | None
    rpc: str
    raw: bytes
    named: frozenset[int] = frozenset()  # cards the viewer's own request named
    at_seq: int = 0  # for a refusal (which has no sequence number): when it was made


class Wire:
    """The service's methods with no response deserializer: bytes come back."""

    def __init__(self, channel: grpc.Channel) -> None:
        def unary(name: str, req: type[Message]) -> Any:
            return channel.unary_unary(
                SERVICE + name, request_serializer=req.SerializeToString, response_deserializer=None
            )

        self.get_view = unary("GetView", pb.GetViewRequest)
        self.claim = unary("ClaimSeat", pb.ClaimSeatRequest)
        self.submit = unary("SubmitAction", pb.SubmitActionRequest)
        self.poll = unary("PollEvents", pb.PollEventsRequest)
        self.chat = unary("SendChat", pb.SendChatRequest)
        self.export = unary("ExportMatch", pb.ExportMatchRequest)
        self.stream = channel.unary_stream(
            SERVICE + "StreamEvents",
            request_serializer=pb.StreamEventsRequest.SerializeToString,
            response_deserializer=None,
        )
        self.spectate = channel.unary_stream(
            SERVICE + "Spectate",
            request_serializer=pb.SpectateRequest.SerializeToString,
            response_deserializer=None,
        )
        self.play = channel.stream_stream(
            SERVICE + "Play",
            request_serializer=pb.PlayRequest.SerializeToString,
            response_deserializer=None,
        )


class RawReader:
    """Reads a server stream's raw messages on a thread, keeping each one and
    the events (and Play results) decoded from it."""

    def __init__(
        self, call: Any, kind: type[Message], viewer: int | None, rpc: str, sink: list[Received]
    ) -> None:
        self.call, self.kind, self.viewer, self.rpc, self.sink = call, kind, viewer, rpc, sink
        self.events: list[pb.MatchEvent] = []
        self.results: dict[str, pb.ActionResult] = {}
        self.error: grpc.RpcError | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for raw in self.call:
                self.sink.append(Received(self.viewer, self.rpc, raw))
                msg = self.kind.FromString(raw)
                with self._cond:
                    self.events.extend(msg.events)
                    for r in getattr(msg, "results", ()):
                        self.results[r.action_id] = r
                    self._cond.notify_all()
        except grpc.RpcError as err:
            self.error = err
        finally:
            with self._cond:
                self._cond.notify_all()

    def wait(self, pred: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
        d = Deadline(timeout)
        with self._cond:
            while not pred():
                if not self._thread.is_alive():
                    raise AssertionError(f"{self.rpc} ended ({self.error!r}) before {what}")
                d.check(what)
                self._cond.wait(min(0.05, d.left() + 0.001))

    def wait_seq(self, seq: int) -> None:
        self.wait(lambda: bool(self.events) and self.events[-1].seq >= seq, f"seq {seq}")

    def close(self) -> None:
        self.call.cancel()
        self._thread.join(10)
        assert not self._thread.is_alive(), f"{self.rpc} reader still running"


# -- driving one match --------------------------------------------------------------


@dataclass
class Tally:
    """What the whole scan covered (printed, and some of it asserted)."""

    matches: int = 0
    variants: set[str] = field(default_factory=set)
    messages: int = 0
    bytes: int = 0
    events: int = 0
    views: int = 0
    cards: int = 0
    refusals: int = 0
    chats: int = 0
    decisions: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})
    kinds: dict[str, int] = field(default_factory=dict)  # events received, by kind
    truth: dict[str, int] = field(default_factory=dict)  # what happened, from the records
    by_variant: dict[str, set[str]] = field(default_factory=dict)

    def count(self, variant: str, what: str) -> None:
        self.truth[what] = self.truth.get(what, 0) + 1
        self.by_variant.setdefault(variant, set()).add(what)


class MatchRun:
    """One match with every seat human, played with random legal actions while
    every viewer's calls are captured as bytes."""

    def __init__(
        self,
        srv: Server,
        wire: Wire,
        name: str,
        options: dict[str, Any],
        rng: random.Random,
        tally: Tally,
    ) -> None:
        self.srv, self.wire, self.name, self.rng, self.tally = srv, wire, name, rng, tally
        ruleset = pb.Ruleset(target_score=TARGET, **options)
        players = options.get("players", 4)
        created = srv.stub.CreateMatch(
            pb.CreateMatchRequest(
                ruleset=ruleset,
                seats=[pb.SeatConfig(name=f"p{i}") for i in range(players)],
                seed=rng.getrandbits(63),
                has_seed=True,
            ),
            metadata=OP,
            timeout=RPC_TIMEOUT,
        )
        self.match_id = created.match.match_id
        self.players = created.match.ruleset.players
        self.partnerships = created.match.ruleset.partnerships
        self.tokens = {t.seat: t.token for t in created.seat_tokens}
        assert sorted(self.tokens) == list(range(self.players)), "every seat is human"
        self.received: list[Received] = []
        self.chats: list[tuple[int, int, str]] = []  # (seq, seat, text)
        self.play_refusals: dict[str, tuple[frozenset[int], int]] = {}
        self.polled: dict[int | None, list[pb.MatchEvent]] = {}
        self.poll_after: dict[int | None, int] = {}
        self.resumed: list[tuple[int | None, int, RawReader]] = []  # (viewer, after_seq, stream)
        self.streams = {
            s: RawReader(
                wire.stream(
                    pb.StreamEventsRequest(match_id=self.match_id),
                    metadata=self.md(s),
                    timeout=STREAM_TIMEOUT,
                ),
                pb.StreamEventsResponse,
                s,
                "StreamEvents",
                self.received,
            )
            for s in range(self.players)
        }
        self.spectator = RawReader(
            wire.spectate(pb.SpectateRequest(match_id=self.match_id), timeout=STREAM_TIMEOUT),
            pb.SpectateResponse,
            Spectator,
            "Spectate",
            self.received,
        )
        # One seat acts on a Play call instead of SubmitAction.
        self.play_seat = rng.randrange(self.players)
        self.outgoing: queue.Queue[pb.PlayRequest | None] = queue.Queue()
        self.outgoing.put(pb.PlayRequest(open=pb.PlayOpen(match_id=self.match_id)))
        self.play = RawReader(
            wire.play(
                iter(self.outgoing.get, None),
                metadata=self.md(self.play_seat),
                timeout=STREAM_TIMEOUT,
            ),
            pb.PlayResponse,
            self.play_seat,
            "Play",
            self.received,
        )
        self._ids = iter(range(1, 1 << 30))
        for s in range(self.players):
            raw = wire.claim(
                pb.ClaimSeatRequest(match_id=self.match_id),
                metadata=self.md(s),
                timeout=RPC_TIMEOUT,
            )
            self.received.append(Received(s, "ClaimSeat", raw))

    def md(self, seat: int) -> tuple[tuple[str, str], ...]:
        return seat_md(self.tokens[seat])

    def new_id(self) -> str:
        return f"{self.match_id[:8]}-{next(self._ids)}"

    # calls -----------------------------------------------------------------------
    def view(self, seat: int) -> pb.SeatView:
        # A seat call may leave match_id empty: both forms are scanned.
        match_id = self.match_id if self.rng.random() < 0.5 else ""
        raw = self.wire.get_view(
            pb.GetViewRequest(match_id=match_id), metadata=self.md(seat), timeout=RPC_TIMEOUT
        )
        self.received.append(Received(seat, "GetView", raw))
        view: pb.SeatView = pb.GetViewResponse.FromString(raw).view
        return view

    def act(self, seat: int, action: pb.Action) -> None:
        named = frozenset(cards_in(action))
        if seat == self.play_seat:
            aid = self.new_id()
            self.outgoing.put(pb.PlayRequest(action=pb.PlayAction(action_id=aid, action=action)))
            self.play.wait(lambda: aid in self.play.results, f"the result of {aid}")
            result = self.play.results[aid]
            assert not result.HasField("error"), f"{self.name}: {action} refused: {result}"
            return
        raw = self.wire.submit(
            pb.SubmitActionRequest(match_id=self.match_id, action_id=self.new_id(), action=action),
            metadata=self.md(seat),
            timeout=RPC_TIMEOUT,
        )
        self.received.append(Received(seat, "SubmitAction", raw, named))

    def refuse(self, seat: int) -> None:
        """Send an action the rules refuse, naming cards the seat does not hold:
        the refusal's text must not tell it more than it knew."""
        view = self.view(seat)
        held = {card_of(c) for c in view.hand}
        # Any card, in this deck or not: "you do not hold" must be all it learns.
        deck = [c for c in CARD_NUMBERS.values() if c not in held]
        picked = self.rng.sample(deck, self.rng.randint(1, 3))
        wire_cards = [pb.Card(suit=c // 16 + 1, rank=c % 16 + 2) for c in picked]  # type: ignore[arg-type]
        if len(picked) == 1:
            action = pb.Action(play_card=pb.PlayCardAction(card=wire_cards[0]))
        else:
            action = pb.Action(pass_cards=pb.PassCardsAction(cards=wire_cards))
        named = frozenset(picked)
        self.tally.refusals += 1
        if seat == self.play_seat:
            aid = self.new_id()
            self.play_refusals[aid] = (named, view.as_of_seq)
            self.outgoing.put(pb.PlayRequest(action=pb.PlayAction(action_id=aid, action=action)))
            self.play.wait(lambda: aid in self.play.results, f"the refusal of {aid}")
            assert self.play.results[aid].HasField("error"), "refused"
            return
        try:
            self.wire.submit(
                pb.SubmitActionRequest(
                    match_id=self.match_id, action_id=self.new_id(), action=action
                ),
                metadata=self.md(seat),
                timeout=RPC_TIMEOUT,
            )
        except grpc.RpcError as err:
            assert isinstance(err, grpc.Call)
            trailers = dict(err.trailing_metadata() or ())
            raw = trailers.get("grpc-status-details-bin", b"")
            assert isinstance(raw, bytes) and raw, f"a refusal without details: {err}"
            assert status_pb2.Status.FromString(raw).message == err.details()
            self.received.append(Received(seat, "SubmitAction refused", raw, named, view.as_of_seq))
            return
        raise AssertionError(f"{self.name}: {action} from seat {seat} was accepted")

    def chat(self, seat: int) -> None:
        text = f"seat {seat} says line {len(self.chats) + 1}"
        raw = self.wire.chat(
            pb.SendChatRequest(match_id=self.match_id, text=text),
            metadata=self.md(seat),
            timeout=RPC_TIMEOUT,
        )
        self.received.append(Received(seat, "SendChat", raw))
        self.chats.append((pb.SendChatResponse.FromString(raw).seq, seat, text))
        self.tally.chats += 1

    def poll_all(self) -> None:
        """Every viewer polls up to the log's end: each seat with its token, and a
        spectator with no authorization header at all."""
        for viewer in [*range(self.players), Spectator]:
            events = self.polled.setdefault(viewer, [])
            for _ in range(1000):
                after = self.poll_after.get(viewer, 0)
                if viewer is Spectator:
                    md: tuple[tuple[str, str], ...] = ()
                    match_id = self.match_id
                else:
                    md = self.md(viewer)
                    match_id = self.match_id if self.rng.random() < 0.5 else ""
                raw = self.wire.poll(
                    pb.PollEventsRequest(match_id=match_id, after_seq=after, wait_ms=0),
                    metadata=md,
                    timeout=RPC_TIMEOUT,
                )
                self.received.append(Received(viewer, "PollEvents", raw))
                resp = pb.PollEventsResponse.FromString(raw)
                events.extend(resp.events)
                self.poll_after[viewer] = resp.last_seq
                if not resp.more:
                    break

    # playing ---------------------------------------------------------------------
    def choose(self, view: pb.SeatView) -> pb.Action:
        """A random legal action; blind nil taken whenever the first bidder of a
        hand may, and the optional exchange taken and declined in turn, so that
        every secret-moving rule occurs."""
        by_kind: dict[str, list[pb.Action]] = {}
        for a in view.legal_actions:
            by_kind.setdefault(kind(a), []).append(a)
        assert by_kind, f"seat {view.seat} is to act with no legal action"
        first_bidder = not any(b.has_bid for b in view.bids)
        if "blind_nil" in by_kind and (first_bidder or self.rng.random() < 0.3):
            return by_kind["blind_nil"][0]
        if "look" in by_kind:
            return by_kind["look"][0]
        if "exchange_decision" in by_kind:
            take = self.tally.decisions[True] <= self.tally.decisions[False]
            self.tally.decisions[take] += 1
            return pb.Action(exchange_decision=pb.ExchangeDecisionAction(exchange=take))
        if "bid" in by_kind:
            # Low bids keep the random matches from ending at the mercy score at once.
            low = [a for a in by_kind["bid"] if a.bid.tricks <= 4] or by_kind["bid"]
            return self.rng.choice(low)
        return self.rng.choice(list(view.legal_actions))

    def play_out(self) -> None:
        d = Deadline(60)
        steps = 0
        while True:
            d.check(f"{self.name} to finish its hands")
            any_view = self.view(self.rng.randrange(self.players))
            if any_view.phase == pb.PHASE_MATCH_OVER or any_view.hand_number >= MAX_HANDS:
                break
            pending = seats_to_act(any_view)
            legal = {kind(a) for a in any_view.legal_actions}
            if any_view.seat not in pending and legal == {"look"} and self.rng.random() < 0.3:
                self.act(any_view.seat, any_view.legal_actions[0])  # a look out of turn
                continue
            seat = self.rng.choice(pending)
            view = any_view if any_view.seat == seat else self.view(seat)
            if self.players == 2:
                self.view(1 - seat)  # the draw's secrets: both seats' views every turn
            if self.partnerships and view.phase == pb.PHASE_BIDDING and self.rng.random() < 0.1:
                self.chat(self.rng.randrange(self.players))
            if self.rng.random() < 0.05:
                self.refuse(self.rng.randrange(self.players))
            self.act(seat, self.choose(view))
            steps += 1
            if steps % 16 == 0:
                self.poll_all()

    def finish(self) -> pb.ExportMatchResponse:
        """Poll to the end, wait for every stream to deliver as much, resume a
        seat's stream and a spectator's from a random point, close them all, and
        export the match (the truth the bytes are checked against)."""
        self.poll_all()
        readers = [*self.streams.values(), self.spectator, self.play]
        for reader in readers:
            reader.wait_seq(self.polled[reader.viewer][-1].seq)
            assert reader.error is None, f"{self.name}: {reader.rpc} failed: {reader.error!r}"
        # A resumed stream takes another path through the log (from after_seq).
        seat = self.rng.randrange(self.players)
        for viewer, call, response, rpc in (
            (seat, self.wire.stream, pb.StreamEventsResponse, "StreamEvents resumed"),
            (Spectator, self.wire.spectate, pb.SpectateResponse, "Spectate resumed"),
        ):
            last = self.polled[viewer][-1].seq
            after = self.rng.randrange(last)
            request = (pb.StreamEventsRequest if viewer is not None else pb.SpectateRequest)(
                match_id=self.match_id, after_seq=after
            )
            md = self.md(viewer) if viewer is not None else ()
            reader = RawReader(
                call(request, metadata=md, timeout=STREAM_TIMEOUT),
                response,
                viewer,
                rpc,
                self.received,
            )
            reader.wait_seq(last)
            self.resumed.append((viewer, after, reader))
            readers.append(reader)
        self.outgoing.put(None)
        for reader in readers:
            reader.close()
        raw = self.wire.export(
            pb.ExportMatchRequest(match_id=self.match_id), metadata=OP, timeout=RPC_TIMEOUT
        )
        return pb.ExportMatchResponse.FromString(raw)


# -- the truth, from ExportMatch --------------------------------------------------------


@dataclass(frozen=True)
class Knowing:
    """What each seat may know right after one event of the match (masks)."""

    hand: int  # the hand in progress
    public: int  # cards played this hand
    known: tuple[int, ...]  # by seat: seen this hand (held face up, received, drawn, discarded)
    holding: tuple[int, ...]  # by seat: held now
    face_up: tuple[bool, ...]  # by seat: has seen its cards
    received: tuple[int, ...]  # by seat: cards received in the exchange
    discards: tuple[int, ...]  # by seat: its discards in the draw
    drawer: int = -1  # the seat to draw, during the draw
    top: int = -1  # the stock's top card, which only the drawer sees

    def allowed(self, viewer: int | None, *, view: bool = False) -> int:
        """The cards ``viewer`` may be sent now; a view also shows the drawer the
        card on top of the stock (an event never does)."""
        if viewer is None:
            return self.public
        out = self.public | self.known[viewer]
        if view and viewer == self.drawer:
            out |= 1 << self.top
        return out


class Truth:
    """Every hand's deal, exchange, stock order and play, rebuilt from an
    ExportMatch answer by the engine, and what each seat may know after each event."""

    def __init__(self, export: pb.ExportMatchResponse) -> None:
        record = json.loads(export.record_json)
        match = start_match(record)
        self.rules = match.rules
        self.events: list[Any] = list(match.opening_events)
        h = match.state.hand
        deals = {h.number: (h.dealt, h.stock, h.dealer)}
        for seat, text in record["actions"]:
            self.events += match.apply(seat, parse_action(text))
            h = match.state.hand
            deals.setdefault(h.number, (h.dealt, h.stock, h.dealer))
        # The record and the snapshot are one match: replaying either gives the other.
        assert match.to_snapshot() == export.snapshot, "the record replays to the snapshot"
        _, from_snapshot = replay_snapshot(export.snapshot)
        assert [ev.event_to_dict(e) for e in from_snapshot] == [
            ev.event_to_dict(e) for e in self.events
        ]
        self.deals = deals
        self.knowing = list(self._walk())

    def happened(self, tally: Tally, variant: str) -> None:
        for e in self.events:
            tally.count(variant, type(e).__name__)
            if isinstance(e, ev.BidMade) and e.blind:
                tally.count(variant, "blind nil")
            if isinstance(e, ev.ExchangeDecided):
                tally.count(variant, "exchange taken" if e.exchange else "exchange declined")

    def _walk(self) -> Iterator[Knowing]:
        """What each seat may know after each event, from the true deal and the
        rules (RULES.md), not from the engine's audiences."""
        n, players = 0, self.rules.players
        stock: tuple[int, ...] = ()
        public, turns, dealer = 0, 0, 0
        known, holding, received, discards = ([0] * players for _ in range(4))
        face_up = [True] * players
        blind: set[int] = set()
        for e in self.events:
            if isinstance(e, ev.HandStarted):
                n, dealer = e.hand_number, e.dealer
                dealt, stock, true_dealer = self.deals[n]
                assert dealer == true_dealer
                public, turns, blind = 0, 0, set()
                face_up = [s not in e.face_down for s in range(players)]
                # Every card of the deck dealt once; two players hold nothing
                # until they draw, and the stock is the whole deck.
                deck = self.rules.deck_mask
                if players == 2:
                    assert mask(stock) == deck and len(stock) == deck.bit_count(), "the stock"
                else:
                    assert sum(m.bit_count() for m in dealt) == deck.bit_count(), "dealt once"
                    assert mask(c for m in dealt for c in range(64) if m >> c & 1) == deck
                holding = [0] * players if players == 2 else list(dealt)
                known = [m if up else 0 for m, up in zip(holding, face_up, strict=True)]
                received, discards = [0] * players, [0] * players
            elif isinstance(e, ev.HandShown):
                assert face_up[e.seat] and mask(e.cards) == holding[e.seat], "the true hand"
                assert len(e.cards) == self.rules.hand_size, "a full hand, the draw's too"
            elif isinstance(e, ev.LookedAtCards):
                face_up[e.seat] = True
                known[e.seat] |= holding[e.seat]
            elif isinstance(e, ev.BidMade) and e.blind:
                blind.add(e.seat)
            elif isinstance(e, ev.BiddingClosed):
                # A blind nil bidder's cards stay face down until bids are locked.
                for s in blind:
                    face_up[s] = True
                    known[s] |= holding[s]
            elif isinstance(e, ev.CardsDrawn):
                drawer = (dealer + 1 + turns) % 2  # the non-dealer draws first
                top, nxt = stock[2 * turns], stock[2 * turns + 1]
                assert e.seat == drawer and {e.kept, e.discarded} == {top, nxt}, "the stock"
                holding[e.seat] |= 1 << e.kept
                discards[e.seat] |= 1 << e.discarded
                known[e.seat] |= 1 << e.kept | 1 << e.discarded
            elif isinstance(e, ev.DrawTaken):
                turns += 1
            elif isinstance(e, ev.CardsPassed):
                m = mask(e.cards)
                assert m & ~holding[e.from_seat] == 0 and (e.from_seat + 2) % 4 == e.to_seat
                holding[e.from_seat] &= ~m
                holding[e.to_seat] |= m
                known[e.to_seat] |= m
                received[e.to_seat] |= m
            elif isinstance(e, ev.CardPlayed):
                assert (known[e.seat] & holding[e.seat]) >> e.card & 1, "a card held and seen"
                holding[e.seat] &= ~(1 << e.card)
                public |= 1 << e.card
            drawing = players == 2 and 2 * turns < len(stock)
            yield Knowing(
                n,
                public,
                tuple(known),
                tuple(holding),
                tuple(face_up),
                tuple(received),
                tuple(discards),
                (dealer + 1 + turns) % 2 if drawing else -1,
                stock[2 * turns] if drawing else -1,
            )


# -- checking every message against the truth -------------------------------------------

RESPONSE_KINDS: dict[str, type[Message]] = {
    "StreamEvents": pb.StreamEventsResponse,
    "StreamEvents resumed": pb.StreamEventsResponse,
    "Spectate": pb.SpectateResponse,
    "Spectate resumed": pb.SpectateResponse,
    "Play": pb.PlayResponse,
    "PollEvents": pb.PollEventsResponse,
    "SubmitAction": pb.SubmitActionResponse,
    "GetView": pb.GetViewResponse,
    "ClaimSeat": pb.ClaimSeatResponse,
    "SendChat": pb.SendChatResponse,
    "SubmitAction refused": status_pb2.Status,
}


def sees(viewer: int | None, e: pb.MatchEvent) -> bool:
    """Whether a viewer may be sent an event at all (RULES.md: own cards,
    the exchange within the team, the draw to the drawer, chat to partners)."""
    what = e.WhichOneof("kind")
    if what == "hand_shown":
        return viewer == e.hand_shown.seat
    if what == "cards_drawn":
        return viewer == e.cards_drawn.seat
    if what == "cards_passed":
        return viewer in (e.cards_passed.from_seat, e.cards_passed.to_seat)
    if what == "chat_message":
        return viewer is not None and viewer % 2 == e.chat_message.seat % 2
    return True


class Scan:
    """Checks one match's captured bytes against its truth."""

    def __init__(self, run: MatchRun, export: pb.ExportMatchResponse, tally: Tally) -> None:
        self.run, self.tally = run, tally
        self.truth = Truth(export)
        self.deck = self.truth.rules.deck_mask
        self.last = export.match.last_seq
        self.decoded = [(r, decode(RESPONSE_KINDS[r.rpc], r.raw)) for r in run.received]
        self.log = self._log()
        self.at = self._align()

    def _log(self) -> dict[int, pb.MatchEvent]:
        """The match's events, from what every viewer received: one set of bytes
        for each sequence number, and every number from 1 to the last."""
        raw: dict[int, bytes] = {}
        for _, msg in self.decoded:
            for e in getattr(msg, "events", ()):
                b = e.SerializeToString()
                assert raw.setdefault(e.seq, b) == b, f"seq {e.seq} differs between viewers"
        assert sorted(raw) == list(range(1, self.last + 1)), "every event reached some viewer"
        return {seq: pb.MatchEvent.FromString(b) for seq, b in raw.items()}

    def _align(self) -> list[int]:
        """For each sequence number, the index of the engine event it is (or, for
        a server event, the last engine event before it): the events on the wire
        are the replayed record's, in order and byte for byte."""
        at, j = [-1], -1
        events = self.truth.events
        for seq in range(1, self.last + 1):
            e = self.log[seq]
            if e.WhichOneof("kind") not in SERVER_KINDS:
                j += 1
                assert j < len(events), f"seq {seq}: more events on the wire than in the record"
                want = convert.event_to_pb(events[j], seq, e.time_ms)
                assert e == want, (
                    f"seq {seq}: the wire has {one_line(e)}, the record {one_line(want)}"
                )
            at.append(j)
        assert j + 1 == len(events), "every engine event is on the wire"
        for seq, seat, text in self.run.chats:
            line = self.log[seq].chat_message
            assert (line.seat, line.text) == (seat, text), f"chat line {seq}"
        return at

    def knowing(self, seq: int) -> Knowing:
        j = self.at[seq]
        assert j >= 0, f"seq {seq} comes before the deal"
        return self.truth.knowing[j]

    def check(self) -> None:
        run = self.run
        for r, msg in self.decoded:
            self.tally.messages += 1
            self.tally.bytes += len(r.raw)
            where = (
                f"{run.name}, {'spectator' if r.viewer is None else f'seat {r.viewer}'}, {r.rpc}"
            )
            if isinstance(msg, status_pb2.Status):
                self.text(r.viewer, status_strings(msg), self.knowing(r.at_seq), r.named, where)
            elif isinstance(msg, pb.GetViewResponse | pb.ClaimSeatResponse):
                self.view(r.viewer, msg.view, where)
            else:
                for e in getattr(msg, "events", ()):
                    self.event(r.viewer, e, where)
                for result in getattr(msg, "results", ()):
                    if result.HasField("error"):
                        named, at_seq = run.play_refusals[result.action_id]
                        status = status_pb2.Status.FromString(result.error.SerializeToString())
                        self.text(
                            r.viewer, status_strings(status), self.knowing(at_seq), named, where
                        )
        # Each channel of each viewer delivered exactly the events it may see.
        expected = {
            v: [s for s in range(1, self.last + 1) if sees(v, self.log[s])]
            for v in [*range(run.players), Spectator]
        }
        channels: list[tuple[int | None, str, list[pb.MatchEvent]]] = [
            (s, "StreamEvents", reader.events) for s, reader in run.streams.items()
        ]
        channels += [(Spectator, "Spectate", run.spectator.events)]
        channels += [(run.play_seat, "Play", run.play.events)]
        channels += [(v, "PollEvents", events) for v, events in run.polled.items()]
        for viewer, rpc, events in channels:
            assert [e.seq for e in events] == expected[viewer], f"{run.name}: {viewer} {rpc}"
        for viewer, after, reader in run.resumed:
            want = [s for s in expected[viewer] if s > after]
            assert [e.seq for e in reader.events] == want, f"{run.name}: {reader.rpc}"
        for seq, seat, _ in run.chats:
            got = {v for v, events in expected.items() if seq in events}
            assert got == {s for s in range(run.players) if s % 2 == seat % 2}, "chat: the team"

    def cards(self, cards: list[int], allowed: int, where: str) -> None:
        got = mask(cards)
        assert got & ~self.deck == 0, f"{where}: {names(got & ~self.deck)} are not in the deck"
        leak = got & ~allowed
        assert not leak, f"{where}: sent {names(leak)}, which it may not see"
        self.tally.cards += len(cards)

    def text(
        self, viewer: int | None, texts: list[str], k: Knowing, named: frozenset[int], where: str
    ) -> None:
        """Card names in text follow the cards' rule (the viewer's request may
        name what it likes)."""
        allowed = k.allowed(viewer, view=True) | mask(named)
        for t in texts:
            for token in CARD_TOKEN.findall(t):
                c = CARD_NUMBERS[token]
                assert allowed >> c & 1, f"{where}: {t!r} names {token}, which it may not see"

    def event(self, viewer: int | None, e: pb.MatchEvent, where: str) -> None:
        what = e.WhichOneof("kind")
        where = f"{where}, seq {e.seq} ({what})"
        assert sees(viewer, e), f"{where}: an event for another viewer"
        k = self.knowing(e.seq)
        cards, strings = contents(e)
        self.cards(cards, k.allowed(viewer), where)
        self.text(viewer, strings, k, frozenset(), where)
        self.tally.events += 1
        self.tally.kinds[what or ""] = self.tally.kinds.get(what or "", 0) + 1

    def view(self, viewer: int | None, view: pb.SeatView, where: str) -> None:
        assert viewer is not None and view.seat == viewer, f"{where}: the caller's view"
        where = f"{where}, as of seq {view.as_of_seq}"
        k = self.knowing(view.as_of_seq)
        cards, strings = contents(view)
        self.cards(cards, k.allowed(viewer, view=True), where)
        self.text(viewer, strings, k, frozenset(), where)
        # And the view is the true one: the seat's own cards, exactly.
        assert view.hand_number == k.hand, where
        if k.face_up[viewer]:
            assert view.hand_visible and mask(map(card_of, view.hand)) == k.holding[viewer], where
        else:
            assert not view.hand_visible and not view.hand, f"{where}: a face-down hand shown"
        if k.drawer == viewer:
            assert view.HasField("stock_top") and card_of(view.stock_top) == k.top, where
            self.tally.count(self.run.name, "stock top shown")
        else:
            assert not view.HasField("stock_top"), f"{where}: the stock seen out of turn"
        assert mask(map(card_of, view.discards)) == k.discards[viewer], where
        assert mask(map(card_of, view.received)) == k.received[viewer], where
        if view.received:
            self.tally.count(self.run.name, "received shown")
        self.tally.views += 1


def test_no_viewer_is_sent_a_card_it_may_not_see(
    shared_server: Server, figures: Callable[[str], None]
) -> None:
    rng = random.Random(SCAN_SEED)
    tally = Tally()
    wire = Wire(shared_server.channel)
    started = time.monotonic()
    for name, options in VARIANTS * ROUNDS:
        try:
            run = MatchRun(shared_server, wire, name, options, rng, tally)
            run.play_out()
            export = run.finish()
            scan = Scan(run, export, tally)
            scan.check()
        except AssertionError as failed:
            failed.add_note(f"replay: LEAK_SCAN_SEED={SCAN_SEED} (match {tally.matches + 1})")
            raise
        scan.truth.happened(tally, name)
        tally.matches += 1
        tally.variants.add(name)
    took = time.monotonic() - started
    seen = tally.truth
    # Every rule that moves a secret happened, so its bytes were scanned.
    for what in (
        "blind nil",
        "CardsPassed",
        "exchange taken",
        "exchange declined",
        "CardsDrawn",
        "stock top shown",
        "received shown",
        "TrumpNamed",
        "LookedAtCards",
        "MatchEnded",
    ):
        assert seen.get(what), f"no {what} in the scan (seed {SCAN_SEED})"
    for variant, needed in MUST_HAPPEN.items():
        missing = set(needed) - tally.by_variant[variant]
        assert not missing, f"{variant}: no {', '.join(sorted(missing))} (seed {SCAN_SEED})"
    assert tally.chats and tally.refusals
    lines: list[str] = []
    lines.append(
        f"\nleak scan, seed {SCAN_SEED}: {tally.matches} matches, {len(tally.variants)} "
        f"variants, {tally.messages} messages, {tally.bytes} bytes, {tally.events} events "
        f"and {tally.views} views, {tally.cards} cards checked (blind nils "
        f"{seen['blind nil']}, cards passed {seen['CardsPassed']}, exchanges taken "
        f"{seen['exchange taken']} and declined {seen['exchange declined']}, draws "
        f"{seen['CardsDrawn']}, chats {tally.chats}, refusals {tally.refusals}) in {took:.1f}s"
    )
    figures("\n".join(lines))
