"""Every conversion between ``spades_engine`` values and ``spades.v1`` messages.

Cards: the proto ``Suit`` is the engine suit + 1 and the proto ``Rank`` the
engine rank + 2, so the jokers (engine spade ranks 13 and 14) come out as
``SUIT_SPADES`` with ``RANK_LITTLE_JOKER`` / ``RANK_BIG_JOKER``.

Input from clients (cards, actions) is checked here and refused with
``ConversionError``, which names the offending field by its path in the
request (``action.play_card.card.suit``). A ruleset is built by the engine,
so an unknown preset or an unplayable combination raises the engine's
``RulesetError``, which names the options involved.

Audiences are stored as keys (``"everyone"``, ``"seat:N"``, ``"team:N"``);
``visible`` is the test every event delivery runs, so it is kept cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias, get_args

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from spades_engine import events as ev
from spades_engine.actions import (
    BLIND_NIL,
    DRAW_DISCARD,
    DRAW_KEEP,
    EXCHANGE,
    LOOK,
    NO_EXCHANGE,
    Action,
    Bid,
    BlindNil,
    Draw,
    ExchangeDecision,
    Look,
    NameTrump,
    PassCards,
    Play,
)
from spades_engine.actions import bid as make_bid
from spades_engine.actions import play as make_play
from spades_engine.cards import BIG_JOKER, LITTLE_JOKER, Card
from spades_engine.match import Match
from spades_engine.ruleset import (
    BagRule,
    FirstLead,
    Ruleset,
    RulesetError,
    Scoring,
    SetPenalty,
    SpadesBroken,
    preset,
)
from spades_engine.state import Phase
from spades_engine.view import SeatView
from spades_server.gen.spades.v1 import spades_pb2 as pb

__all__ = [
    "ConversionError",
    "OutOfRange",
    "action_from_pb",
    "action_to_pb",
    "audience_key",
    "audience_mask",
    "card_from_pb",
    "card_to_pb",
    "chat_event",
    "check_match_ranges",
    "event_to_pb",
    "frame_event",
    "phase_to_pb",
    "resolved_ruleset_pb",
    "ruleset_from_pb",
    "ruleset_to_pb",
    "seat_control_event",
    "view_to_pb",
    "viewer_bit",
]


class ConversionError(ValueError):
    """A message that does not denote an engine value; ``field_path`` names the field."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field_path = field_path
        self.message = message


class OutOfRange(ValueError):
    """An engine value the API cannot carry (an int32 field given 2**31);
    ``value_path`` names it inside the engine value (``rules.target_score``)."""

    def __init__(self, value_path: str, value: int, lo: int, hi: int) -> None:
        super().__init__(f"{value_path}={value} is outside the API's range ({lo} to {hi})")
        self.value_path = value_path


INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
UINT64_MAX = (1 << 64) - 1
# The int32 options of a resolved ruleset (mercy_score may be None).
_INT32_RULES = (
    "target_score",
    "mercy_score",
    "blind_nil_deficit",
    "blind_nil_exchange",
    "players",
    "hand_size",
)


def _in_range(path: str, value: int | None, lo: int, hi: int) -> None:
    if value is not None and not lo <= value <= hi:
        raise OutOfRange(path, value, lo, hi)


def check_match_ranges(match: Match) -> None:
    """Raise ``OutOfRange`` for the first value of ``match`` that a message
    of this API cannot hold: the ruleset's int32 options, the seed (uint64, as
    CreateMatch takes it), the hand number, scores and bags. The engine accepts
    any integer; a match holding one would fail every summary and view of it."""
    rules = match.rules
    for name in _INT32_RULES:
        _in_range(f"rules.{name}", getattr(rules, name), INT32_MIN, INT32_MAX)
    _in_range("seed", match.seed, 0, UINT64_MAX)
    st = match.state
    _in_range("hand.number", st.hand.number, INT32_MIN, INT32_MAX)
    for name in ("scores", "bags"):
        for i, v in enumerate(getattr(st, name)):
            _in_range(f"{name}[{i}]", v, INT32_MIN, INT32_MAX)


# -- cards ---------------------------------------------------------------------

_SuitPb: TypeAlias = pb.Suit.ValueType
_RankPb: TypeAlias = pb.Rank.ValueType


def _card_table() -> dict[int, tuple[_SuitPb, _RankPb]]:
    table = {s * 16 + r: (_SuitPb(s + 1), _RankPb(r + 2)) for s in range(4) for r in range(13)}
    table[LITTLE_JOKER] = (pb.SUIT_SPADES, pb.RANK_LITTLE_JOKER)
    table[BIG_JOKER] = (pb.SUIT_SPADES, pb.RANK_BIG_JOKER)
    return table


_CARD_TO_PB = _card_table()
_CARD_FROM_PB = {pair: Card(c) for c, pair in _CARD_TO_PB.items()}


def card_to_pb(card: int) -> pb.Card:
    suit, rank = _card_pair(card)
    return pb.Card(suit=suit, rank=rank)


def card_from_pb(msg: pb.Card, path: str = "card") -> Card:
    """The engine card of ``msg``; ``path`` is its field path, for errors."""
    found = _CARD_FROM_PB.get((msg.suit, msg.rank))
    if found is not None:
        return found
    if msg.suit not in pb.Suit.values() or msg.suit == pb.SUIT_UNSPECIFIED:
        raise ConversionError(f"{path}.suit", f"{msg.suit} is not a suit")
    if msg.rank not in pb.Rank.values() or msg.rank == pb.RANK_UNSPECIFIED:
        raise ConversionError(f"{path}.rank", f"{msg.rank} is not a rank")
    # Every other valid (suit, rank) pair is a card: this is a joker off the spade suit.
    raise ConversionError(f"{path}.suit", "a joker's suit must be SUIT_SPADES")


def suit_to_pb(suit: int) -> _SuitPb:
    """The proto suit of an engine suit (0..3, clubs to spades)."""
    return _SuitPb(suit + 1)


def suit_from_pb(value: int, path: str = "suit") -> int:
    """The engine suit of a proto ``Suit``; ``path`` is its field path, for errors."""
    if value not in pb.Suit.values() or value == pb.SUIT_UNSPECIFIED:
        raise ConversionError(path, f"{value} is not a suit")
    return value - 1


def _card_pair(card: int) -> tuple[_SuitPb, _RankPb]:
    try:
        return _CARD_TO_PB[card]
    except KeyError:
        raise ConversionError("card", f"{card!r} is not an engine card index") from None


def _add_cards(dst: RepeatedCompositeFieldContainer[pb.Card], cards: Iterable[int]) -> None:
    for c in cards:
        suit, rank = _card_pair(c)
        dst.add(suit=suit, rank=rank)


def _set_card(dst: pb.Card, card: int) -> None:
    dst.suit, dst.rank = _card_pair(card)


def _cards_from_pb(src: Sequence[pb.Card], path: str) -> tuple[Card, ...]:
    return tuple(card_from_pb(c, f"{path}[{i}]") for i, c in enumerate(src))


# -- rulesets ------------------------------------------------------------------

_BAG_RULES: dict[BagRule, pb.BagRule.ValueType] = {
    BagRule.TEN_FOR_100: pb.BAG_RULE_TEN_FOR_100,
    BagRule.FIVE_FOR_50: pb.BAG_RULE_FIVE_FOR_50,
    BagRule.OFF: pb.BAG_RULE_OFF,
}
_FIRST_LEADS: dict[FirstLead, pb.FirstLead.ValueType] = {
    FirstLead.LEFT_OF_DEALER: pb.FIRST_LEAD_LEFT_OF_DEALER,
    FirstLead.DEALER: pb.FIRST_LEAD_DEALER,
    FirstLead.TWO_OF_CLUBS: pb.FIRST_LEAD_TWO_OF_CLUBS,
}
_SET_PENALTIES: dict[SetPenalty, pb.SetPenalty.ValueType] = {
    SetPenalty.TEN_PER_BID: pb.SET_PENALTY_TEN_PER_BID,
    SetPenalty.ZERO: pb.SET_PENALTY_ZERO,
}
_SCORINGS: dict[Scoring, pb.Scoring.ValueType] = {
    Scoring.CLASSIC: pb.SCORING_CLASSIC,
    Scoring.TRICKS: pb.SCORING_TRICKS,
}
_SPADES_BROKEN: dict[SpadesBroken, pb.SpadesBroken.ValueType] = {
    SpadesBroken.ANY_SPADE: pb.SPADES_BROKEN_ANY_SPADE,
    SpadesBroken.TRUMPING: pb.SPADES_BROKEN_TRUMPING,
}
# Enum options: proto field (= engine option) name -> (proto value -> engine value).
_ENUM_OPTIONS: dict[str, dict[int, Any]] = {
    "bag_rule": {v: k for k, v in _BAG_RULES.items()},
    "first_lead": {v: k for k, v in _FIRST_LEADS.items()},
    "set_penalty": {v: k for k, v in _SET_PENALTIES.items()},
    "scoring": {v: k for k, v in _SCORINGS.items()},
    "spades_broken": {v: k for k, v in _SPADES_BROKEN.items()},
}
_ScalarOption = Literal[
    "target_score",
    "mercy_score",
    "blind_nil",
    "blind_nil_deficit",
    "blind_nil_exchange",
    "blind_nil_exchange_optional",
    "nil_allowed",
    "partnerships",
    "jokers",
    "players",
    "thirteen_bid",
    "suicide",
    "auction_trump",
    "deuces_high",
]
_SCALAR_OPTIONS: tuple[_ScalarOption, ...] = get_args(_ScalarOption)


def ruleset_from_pb(msg: pb.Ruleset) -> Ruleset:
    """The preset (empty: classic) with every set option applied.

    Raises the engine's ``RulesetError`` for an unknown preset, an unknown enum
    value or a combination of options that cannot be played.
    """
    overrides: dict[str, Any] = {
        name: getattr(msg, name) for name in _SCALAR_OPTIONS if msg.HasField(name)
    }
    if msg.HasField("no_mercy_score") and msg.no_mercy_score:
        overrides["mercy_score"] = None
    for name, table in _ENUM_OPTIONS.items():
        value: int = getattr(msg, name)
        if value == 0:  # *_UNSPECIFIED: keep the preset's
            continue
        if value not in table:
            raise RulesetError(f"{name}={value} is not a known {name} value", (name,))
        overrides[name] = table[value]
    return preset(msg.preset or "classic", **overrides)


def ruleset_to_pb(rules: Ruleset) -> pb.Ruleset:
    """``rules`` as a request would spell them: the classic preset with every
    option set, so that ``ruleset_from_pb`` gives back equal rules (a rematch
    of a match whose request is not at hand)."""
    msg = pb.Ruleset(preset="classic")
    for name in _SCALAR_OPTIONS:
        value = getattr(rules, name)
        if value is None:  # mercy_score: none
            msg.no_mercy_score = True
        else:
            setattr(msg, name, value)
    msg.bag_rule = _BAG_RULES[rules.bag_rule]
    msg.first_lead = _FIRST_LEADS[rules.first_lead]
    msg.set_penalty = _SET_PENALTIES[rules.set_penalty]
    msg.scoring = _SCORINGS[rules.scoring]
    msg.spades_broken = _SPADES_BROKEN[rules.spades_broken]
    return msg


def resolved_ruleset_pb(rules: Ruleset) -> pb.ResolvedRuleset:
    return pb.ResolvedRuleset(
        target_score=rules.target_score,
        has_mercy_score=rules.mercy_score is not None,
        mercy_score=rules.mercy_score or 0,
        bag_rule=_BAG_RULES[rules.bag_rule],
        blind_nil=rules.blind_nil,
        blind_nil_deficit=rules.blind_nil_deficit,
        blind_nil_exchange=rules.blind_nil_exchange,
        first_lead=_FIRST_LEADS[rules.first_lead],
        nil_allowed=rules.nil_allowed,
        set_penalty=_SET_PENALTIES[rules.set_penalty],
        partnerships=rules.partnerships,
        jokers=rules.jokers,
        players=rules.players,
        thirteen_bid=rules.thirteen_bid,
        hand_size=rules.hand_size,
        scoring=_SCORINGS[rules.scoring],
        spades_broken=_SPADES_BROKEN[rules.spades_broken],
        blind_nil_exchange_optional=rules.blind_nil_exchange_optional,
        suicide=rules.suicide,
        auction_trump=rules.auction_trump,
        deuces_high=rules.deuces_high,
    )


# -- actions -------------------------------------------------------------------

_ACTION_KINDS = "bid, blind_nil, look, pass_cards, play_card, exchange_decision, name_trump or draw"


def action_from_pb(msg: pb.Action, path: str = "action") -> Action:
    """The engine action of ``msg``; ``path`` is its field path, for errors."""
    kind = msg.WhichOneof("kind")
    if kind == "bid":
        return make_bid(msg.bid.tricks)
    if kind == "blind_nil":
        return BLIND_NIL
    if kind == "look":
        return LOOK
    if kind == "pass_cards":
        return PassCards(_cards_from_pb(msg.pass_cards.cards, f"{path}.pass_cards.cards"))
    if kind == "play_card":
        return make_play(card_from_pb(msg.play_card.card, f"{path}.play_card.card"))
    if kind == "exchange_decision":
        return EXCHANGE if msg.exchange_decision.exchange else NO_EXCHANGE
    if kind == "name_trump":
        return NameTrump(suit_from_pb(msg.name_trump.suit, f"{path}.name_trump.suit"))
    if kind == "draw":
        return DRAW_KEEP if msg.draw.keep else DRAW_DISCARD
    raise ConversionError(path, f"no action set: set one of {_ACTION_KINDS}")


def action_to_pb(action: Action) -> pb.Action:
    out = pb.Action()
    _fill_action(out, action)
    return out


def _fill_action(out: pb.Action, action: Action) -> None:
    if isinstance(action, Play):
        _set_card(out.play_card.card, action.card)
    elif isinstance(action, Bid):
        out.bid.tricks = action.tricks
        out.bid.SetInParent()
    elif isinstance(action, BlindNil):
        out.blind_nil.SetInParent()
    elif isinstance(action, Look):
        out.look.SetInParent()
    elif isinstance(action, PassCards):
        out.pass_cards.SetInParent()
        _add_cards(out.pass_cards.cards, action.cards)
    elif isinstance(action, ExchangeDecision):
        out.exchange_decision.exchange = action.exchange
        out.exchange_decision.SetInParent()
    elif isinstance(action, NameTrump):
        out.name_trump.SetInParent()
        out.name_trump.suit = suit_to_pb(action.suit)
    elif isinstance(action, Draw):
        out.draw.keep = action.keep
        out.draw.SetInParent()
    else:
        raise TypeError(f"{action!r} is not an engine action")


# -- events --------------------------------------------------------------------


def _hand_started(e: ev.HandStarted, out: pb.MatchEvent) -> None:
    m = out.hand_started
    m.SetInParent()
    m.hand_number, m.dealer, m.hand_size = e.hand_number, e.dealer, e.hand_size
    m.face_down.extend(e.face_down)


def _hand_shown(e: ev.HandShown, out: pb.MatchEvent) -> None:
    out.hand_shown.SetInParent()
    out.hand_shown.seat = e.seat
    _add_cards(out.hand_shown.cards, e.cards)


def _looked_at_cards(e: ev.LookedAtCards, out: pb.MatchEvent) -> None:
    out.looked_at_cards.SetInParent()
    out.looked_at_cards.seat = e.seat


def _bid_made(e: ev.BidMade, out: pb.MatchEvent) -> None:
    m = out.bid_made
    m.SetInParent()
    m.seat, m.tricks, m.blind = e.seat, e.tricks, e.blind


def _bidding_closed(e: ev.BiddingClosed, out: pb.MatchEvent) -> None:
    out.bidding_closed.SetInParent()
    out.bidding_closed.bids.extend(e.bids)
    out.bidding_closed.contracts.extend(e.contracts)


def _exchange_decided(e: ev.ExchangeDecided, out: pb.MatchEvent) -> None:
    out.exchange_decided.SetInParent()
    out.exchange_decided.seat, out.exchange_decided.exchange = e.seat, e.exchange


def _trump_named(e: ev.TrumpNamed, out: pb.MatchEvent) -> None:
    out.trump_named.SetInParent()
    out.trump_named.seat, out.trump_named.suit = e.seat, suit_to_pb(e.suit)


def _cards_drawn(e: ev.CardsDrawn, out: pb.MatchEvent) -> None:
    out.cards_drawn.seat = e.seat
    _set_card(out.cards_drawn.kept, e.kept)
    _set_card(out.cards_drawn.discarded, e.discarded)


def _draw_taken(e: ev.DrawTaken, out: pb.MatchEvent) -> None:
    out.draw_taken.SetInParent()
    out.draw_taken.seat = e.seat


def _exchange_started(e: ev.ExchangeStarted, out: pb.MatchEvent) -> None:
    out.exchange_started.SetInParent()
    out.exchange_started.seats.extend(e.seats)
    out.exchange_started.cards_each = e.cards_each


def _cards_chosen(e: ev.CardsChosen, out: pb.MatchEvent) -> None:
    out.cards_chosen.SetInParent()
    out.cards_chosen.seat = e.seat


def _cards_passed(e: ev.CardsPassed, out: pb.MatchEvent) -> None:
    m = out.cards_passed
    m.SetInParent()
    m.from_seat, m.to_seat = e.from_seat, e.to_seat
    _add_cards(m.cards, e.cards)


def _card_played(e: ev.CardPlayed, out: pb.MatchEvent) -> None:
    out.card_played.SetInParent()
    out.card_played.seat = e.seat
    _set_card(out.card_played.card, e.card)


def _trick_won(e: ev.TrickWon, out: pb.MatchEvent) -> None:
    m = out.trick_won
    m.SetInParent()
    m.trick_number, m.winner, m.leader = e.trick_number, e.winner, e.leader
    _add_cards(m.cards, e.cards)


def _hand_scored(e: ev.HandScored, out: pb.MatchEvent) -> None:
    m = out.hand_scored
    m.SetInParent()
    m.hand_number = e.hand_number
    m.bids.extend(e.bids)
    m.blind.extend(e.blind)
    m.tricks.extend(e.tricks)
    _add_sides(m.sides, e.sides)


def _match_ended(e: ev.MatchEnded, out: pb.MatchEvent) -> None:
    m = out.match_ended
    m.SetInParent()
    m.winner, m.hands_played = e.winner, e.hands_played
    m.scores.extend(e.scores)


def _add_sides(
    dst: RepeatedCompositeFieldContainer[pb.SideScore], sides: Iterable[ev.SideScore]
) -> None:
    for s in sides:
        dst.add(
            side=s.side,
            contract=s.contract,
            tricks=s.tricks,
            contract_points=s.contract_points,
            nil_points=s.nil_points,
            bags_taken=s.bags_taken,
            bag_penalty=s.bag_penalty,
            hand_points=s.hand_points,
            score=s.score,
            bags=s.bags,
        )


# Engine event type -> filler of the matching MatchEvent oneof field.
_EVENT_FILLERS: dict[type[Any], Callable[[Any, pb.MatchEvent], None]] = {
    ev.HandStarted: _hand_started,
    ev.HandShown: _hand_shown,
    ev.LookedAtCards: _looked_at_cards,
    ev.BidMade: _bid_made,
    ev.BiddingClosed: _bidding_closed,
    ev.ExchangeDecided: _exchange_decided,
    ev.TrumpNamed: _trump_named,
    ev.ExchangeStarted: _exchange_started,
    ev.CardsChosen: _cards_chosen,
    ev.CardsPassed: _cards_passed,
    ev.CardsDrawn: _cards_drawn,
    ev.DrawTaken: _draw_taken,
    ev.CardPlayed: _card_played,
    ev.TrickWon: _trick_won,
    ev.HandScored: _hand_scored,
    ev.MatchEnded: _match_ended,
}


def event_to_pb(event: ev.Event, seq: int, time_ms: int) -> pb.MatchEvent:
    fill = _EVENT_FILLERS.get(type(event))
    if fill is None:
        raise TypeError(f"{event!r} is not an engine event")
    out = pb.MatchEvent(seq=seq, time_ms=time_ms)
    fill(event, out)
    return out


def seat_control_event(seat: int, control: int, reason: str) -> pb.SeatControlChanged:
    """The ``seat_control_changed`` payload of a MatchEvent; ``control`` is a SeatControl."""
    if control not in pb.SeatControl.values():
        raise ConversionError("control", f"{control} is not a SeatControl value")
    return pb.SeatControlChanged(
        seat=seat, control=pb.SeatControl.ValueType(control), reason=reason
    )


def chat_event(seat: int, text: str) -> pb.ChatMessage:
    """The ``chat_message`` payload of a MatchEvent."""
    return pb.ChatMessage(seat=seat, text=text)


# -- audiences -----------------------------------------------------------------


def audience_key(audience: ev.Audience) -> str:
    """``"everyone"``, ``"seat:N"`` or ``"team:N"``."""
    if audience.kind == "everyone":
        return "everyone"
    if audience.kind in ("seat", "team"):
        return f"{audience.kind}:{audience.index}"
    raise ValueError(f"unknown audience kind {audience.kind!r}")


SPECTATOR_BIT = 1 << 16  # above any seat bit (at most 5 seats; 16 leaves room)


def viewer_bit(seat: int | None) -> int:
    """The bit of a viewer in an audience mask (``seat`` None: a spectator)."""
    return SPECTATOR_BIT if seat is None else 1 << seat


def audience_mask(audience_key: str, players: int, partnerships: bool) -> int:
    """The viewers of an audience as a bitmask of ``viewer_bit`` values, so that the
    stream fan-out tests visibility with one AND per event and viewer."""
    if audience_key == "everyone":
        return SPECTATOR_BIT | ((1 << players) - 1)
    kind, _, index = audience_key.partition(":")
    n = int(index)
    if kind == "seat":
        return 1 << n
    if kind == "team" and partnerships:
        return sum(1 << s for s in range(players) if s & 1 == n)
    raise ValueError(f"unknown audience {audience_key!r} for {players} players")


def frame_event(payload: bytes) -> bytes:
    """A serialized MatchEvent framed as one element of the ``events`` field (2) of
    StreamEventsResponse and SpectateResponse: a batch of framed events joined is
    a serialized response, built once per event rather than once per stream."""
    n = len(payload)
    head = bytearray(b"\x12")
    while n >= 0x80:
        head.append((n & 0x7F) | 0x80)
        n >>= 7
    head.append(n)
    return bytes(head) + payload


# -- views ---------------------------------------------------------------------

_PHASES: dict[Phase, pb.Phase.ValueType] = {
    Phase.BIDDING: pb.PHASE_BIDDING,
    Phase.EXCHANGE: pb.PHASE_EXCHANGE,
    Phase.PLAYING: pb.PHASE_PLAYING,
    Phase.MATCH_OVER: pb.PHASE_MATCH_OVER,
    Phase.DRAW: pb.PHASE_DRAW,
}


def phase_to_pb(phase: Phase) -> pb.Phase.ValueType:
    return _PHASES[phase]


def view_to_pb(view: SeatView, *, as_of_seq: int, seats: Sequence[pb.SeatInfo]) -> pb.SeatView:
    """The proto form of a seat's view (seat -1 for a spectator)."""
    out = pb.SeatView(
        seat=-1 if view.seat is None else view.seat,
        ruleset=resolved_ruleset_pb(view.rules),
        phase=_PHASES[view.phase],
        hand_number=view.hand_number,
        dealer=view.dealer,
        to_act=view.to_act,
        scores=view.scores,
        bags=view.bags,
        tricks_won=view.tricks_won,
        hand_sizes=view.hand_sizes,
        face_down=view.face_down,
        hand_visible=view.hand is not None,
        leader=view.leader,
        spades_broken=view.spades_broken,
        exchange_seats=view.exchange_seats,
        exchange_chosen=view.exchange_chosen,
        exchange_deciders=view.exchange_deciders,
        trump=suit_to_pb(view.trump),
        trump_namer=view.trump_namer,
        trump_named=view.trump_named,
        stock_size=view.stock_size,
        winner=-1 if view.winner is None else view.winner,
        as_of_seq=as_of_seq,
        seats=seats,
    )
    for b, blind in zip(view.bids, view.blind, strict=True):
        out.bids.add(has_bid=b is not None, tricks=b or 0, blind=blind)
    _add_cards(out.hand, view.hand or ())
    _add_cards(out.trick, view.trick)
    for t in view.tricks:
        done = out.tricks.add(leader=t.leader, winner=t.winner)
        _add_cards(done.cards, t.cards)
    _add_cards(out.passed, view.passed)
    _add_cards(out.received, view.received)
    if view.stock_top is not None:
        _set_card(out.stock_top, view.stock_top)
    _add_cards(out.discards, view.discards)
    for seat, exchange in view.exchange_decisions:
        out.exchange_decisions.add(seat=seat, exchange=exchange)
    for a in view.legal_actions:
        _fill_action(out.legal_actions.add(), a)
    for sides in view.results:
        _add_sides(out.results.add().sides, sides)
    return out
