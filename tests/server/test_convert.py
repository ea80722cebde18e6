"""spades_server.convert: engine values <-> spades.v1 messages.

Real matches of every preset (and german with 3 and 5 players, polish with
blind nil at any score so blind nil and the exchange happen) are played with
random legal actions; every event and every seat's view is converted,
serialized and parsed back, and checked against the engine's own values.
"""

from __future__ import annotations

import dataclasses
import random
import re
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from spades_server.convert import (
    ConversionError,
    action_from_pb,
    action_to_pb,
    audience_key,
    audience_mask,
    card_from_pb,
    card_to_pb,
    chat_event,
    event_to_pb,
    frame_event,
    phase_to_pb,
    resolved_ruleset_pb,
    ruleset_from_pb,
    seat_control_event,
    view_to_pb,
    viewer_bit,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb

from spades_engine import (
    BLIND_NIL,
    EXCHANGE,
    LOOK,
    NO_EXCHANGE,
    PRESETS,
    Action,
    Bid,
    ExchangeDecision,
    Match,
    NameTrump,
    PassCards,
    Phase,
    Play,
    Ruleset,
    RulesetError,
    SeatView,
    preset,
)
from spades_engine.actions import DRAW_DISCARD, DRAW_KEEP, Draw
from spades_engine.cards import BIG_JOKER, LITTLE_JOKER, Card, cards_of, mask_of
from spades_engine.events import (
    EVERYONE,
    BidMade,
    CardsPassed,
    Event,
    ExchangeStarted,
    HandShown,
    HandStarted,
    MatchEnded,
    SideScore,
    to_seat,
    to_team,
)

CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("classic", {}),
    ("polish", {}),
    ("german", {}),
    ("bulgarian", {}),
    ("german", {"players": 3}),
    ("german", {"players": 5}),
    ("polish", {"blind_nil_deficit": 0}),
    ("classic", {"auction_trump": True}),
    ("classic", {"jokers": True, "deuces_high": True}),
]
CONFIG_IDS = [name + "".join(f"-{k}={v}" for k, v in ov.items()) for name, ov in CONFIGS]
SEEDS = (0, 1, 2)
MAX_HANDS = 25
VIEW_EVERY_STEP_HANDS = 3
TIME_BASE = 1_700_000_000_000
ALL_EVENT_TYPES: frozenset[type[Any]] = frozenset(typing.get_args(Event))


def _oneof_name(event: Event) -> str:
    """HandStarted -> hand_started: the MatchEvent oneof field of an engine event."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", type(event).__name__).lower()


def _team(rules: Ruleset, seat: int | None) -> int | None:
    return None if seat is None or not rules.partnerships else seat & 1


# -- playing matches ---------------------------------------------------------------


def _choose(rng: random.Random, m: Match) -> tuple[int, Action]:
    """A random legal action of a random seat that may act; bids are kept near a
    fair share so matches without a mercy score still end."""
    seat = rng.choice(m.seats_to_act())
    share = m.rules.hand_size // m.rules.players + 1
    pool = [a for a in m.legal_actions(seat) if not isinstance(a, Bid) or a.tricks <= share]
    return seat, rng.choice(pool)


def _play(name: str, overrides: dict[str, Any], seed: int) -> Iterator[tuple[Match, list[Event]]]:
    """Yield the match and the events of its opening, then of every action."""
    m = Match(preset(name, **overrides), seed=seed)
    rng = random.Random(seed)
    yield m, list(m.opening_events)
    while not m.is_over and m.hand_number < MAX_HANDS:
        seat, action = _choose(rng, m)
        yield m, m.apply(seat, action)


@dataclass
class GameLog:
    rules: Ruleset
    events: list[tuple[Event, pb.MatchEvent]] = field(default_factory=list)
    legal: set[Action] = field(default_factory=set)
    over: bool = False


@pytest.fixture(scope="module")
def games() -> list[GameLog]:
    logs = []
    return _games(logs, [*CONFIGS, *TWO_PLAYER_CONFIGS])


TWO_PLAYER_CONFIGS: list[tuple[str, dict[str, Any]]] = [("german", {"players": 2})]


def _games(logs: list[GameLog], configs: list[tuple[str, dict[str, Any]]]) -> list[GameLog]:
    for name, overrides in configs:
        for seed in SEEDS:
            log: GameLog | None = None
            seq = 0
            for m, events in _play(name, overrides, seed):
                log = log or GameLog(m.rules)
                for e in events:
                    seq += 1
                    wire = event_to_pb(e, seq, TIME_BASE + seq).SerializeToString()
                    log.events.append((e, pb.MatchEvent.FromString(wire)))
                for s in m.seats_to_act():
                    log.legal.update(m.legal_actions(s))
                log.over = m.is_over
            assert log is not None
            logs.append(log)
    return logs


# -- events --------------------------------------------------------------------------


def _side_dict(s: SideScore | pb.SideScore) -> dict[str, int]:
    return {f.name: getattr(s, f.name) for f in dataclasses.fields(SideScore)}


def _check_payload(event: Event, payload: Any) -> None:
    """Every field of the engine event, under the same name, with the same value."""
    names = {f.name for f in dataclasses.fields(event)} - {"audience"}
    assert {f.name for f in payload.DESCRIPTOR.fields} == names
    for name in names:
        want, got = getattr(event, name), getattr(payload, name)
        if name in ("card", "kept", "discarded"):
            assert card_from_pb(got) == want
        elif name == "cards":
            assert [card_from_pb(c) for c in got] == list(want)
        elif name == "suit":
            assert got == want + 1  # SUIT_CLUBS = 1 ... SUIT_SPADES = 4
        elif name == "sides":
            assert [_side_dict(s) for s in got] == [_side_dict(s) for s in want]
        elif isinstance(want, tuple):
            assert list(got) == list(want), name
        else:
            assert got == want, name


def test_every_event_kind_is_seen_and_converted(games: list[GameLog]) -> None:
    seen: set[type[Any]] = set()
    for log in games:
        for seq, (event, msg) in enumerate(log.events, start=1):
            assert msg.seq == seq
            assert msg.time_ms == TIME_BASE + seq
            assert msg.WhichOneof("kind") == _oneof_name(event)
            _check_payload(event, getattr(msg, _oneof_name(event)))
            seen.add(type(event))
    assert seen == ALL_EVENT_TYPES
    assert any(log.over for log in games)


def test_exchange_and_blind_nil_happen(games: list[GameLog]) -> None:
    kinds = {_oneof_name(e) for log in games if log.rules.blind_nil for e, _ in log.events}
    assert {
        "cards_passed",
        "cards_chosen",
        "exchange_decided",
        "exchange_started",
        "looked_at_cards",
    } <= kinds
    assert any(isinstance(e, BidMade) and e.blind for log in games for e, _ in log.events)


def test_event_of_unknown_type_is_refused() -> None:
    with pytest.raises(TypeError):
        event_to_pb(object(), 1, 0)  # type: ignore[arg-type]


def test_audience_keys_and_masks(games: list[GameLog]) -> None:
    for partnerships in (True, False):
        audiences = [EVERYONE, *(to_seat(i) for i in range(5))]
        audiences += [to_team(i) for i in range(2)] if partnerships else []
        for a in audiences:
            key = audience_key(a)
            assert key == str(a)
            mask = audience_mask(key, 5, partnerships)
            for seat in (0, 1, 2, 3, 4):
                team = seat & 1 if partnerships else None
                assert bool(mask & viewer_bit(seat)) == a.visible_to(seat, team), (key, seat)
            assert bool(mask & viewer_bit(None)) == a.visible_to(None, None)
    for log in games:
        players, partnerships = log.rules.players, log.rules.partnerships
        for event, _ in log.events:
            key = audience_key(event.audience)
            mask = audience_mask(key, players, partnerships)
            for seat in range(players):
                sees = bool(mask & viewer_bit(seat))
                assert sees == event.audience.visible_to(seat, _team(log.rules, seat))
                if isinstance(event, HandShown) and sees:
                    assert event.seat == seat
                if isinstance(event, CardsPassed) and sees:
                    assert seat in (event.from_seat, event.to_seat)
            assert bool(mask & viewer_bit(None)) == (key == "everyone")


def test_team_audience_without_partnerships_is_refused() -> None:
    with pytest.raises(ValueError):
        audience_mask("team:0", 3, False)


@pytest.mark.parametrize("size", [0, 1, 127, 128, 300, 20_000])
def test_framed_events_join_into_a_stream_response(size: int) -> None:
    events = [pb.MatchEvent(seq=i + 1, time_ms=size) for i in range(3)]
    events[1].chat_message.text = "x" * size
    framed = b"".join(frame_event(e.SerializeToString()) for e in events)
    assert list(pb.StreamEventsResponse.FromString(framed).events) == events
    assert list(pb.SpectateResponse.FromString(framed).events) == events


def test_server_events_round_trip() -> None:
    msg = pb.MatchEvent(
        seq=7,
        time_ms=5,
        seat_control_changed=seat_control_event(2, pb.SEAT_CONTROL_BOT_STANDING_IN, "left"),
    )
    back = pb.MatchEvent.FromString(msg.SerializeToString())
    assert back.WhichOneof("kind") == "seat_control_changed"
    assert back.seat_control_changed == pb.SeatControlChanged(
        seat=2, control=pb.SEAT_CONTROL_BOT_STANDING_IN, reason="left"
    )
    msg = pb.MatchEvent(seq=8, chat_message=chat_event(0, "go nil"))
    back = pb.MatchEvent.FromString(msg.SerializeToString())
    assert back.WhichOneof("kind") == "chat_message"
    assert (back.chat_message.seat, back.chat_message.text) == (0, "go nil")
    # Seat 0 and control "human" would be all defaults without the oneof marked set.
    zero = pb.MatchEvent(seat_control_changed=seat_control_event(0, 0, ""))
    assert pb.MatchEvent.FromString(zero.SerializeToString()).WhichOneof("kind") == (
        "seat_control_changed"
    )
    with pytest.raises(ConversionError) as info:
        seat_control_event(0, 99, "left")
    assert info.value.field_path == "control"


# -- cards ---------------------------------------------------------------------------

DECK_RULES = [preset(name, **ov) for name, ov in CONFIGS] + [preset("classic", jokers=True)]


def test_card_round_trip_for_every_card_of_every_deck() -> None:
    for rules in DECK_RULES:
        for c in cards_of(rules.deck_mask):
            msg = card_to_pb(c)
            if c == LITTLE_JOKER:
                assert (msg.suit, msg.rank) == (pb.SUIT_SPADES, pb.RANK_LITTLE_JOKER)
            elif c == BIG_JOKER:
                assert (msg.suit, msg.rank) == (pb.SUIT_SPADES, pb.RANK_BIG_JOKER)
            else:
                assert (msg.suit, msg.rank) == (c // 16 + 1, c % 16 + 2)
            assert card_from_pb(pb.Card.FromString(msg.SerializeToString())) == c
    assert card_to_pb(Card(0)) == pb.Card(suit=pb.SUIT_CLUBS, rank=pb.RANK_TWO)
    assert card_to_pb(Card(3 * 16 + 12)) == pb.Card(suit=pb.SUIT_SPADES, rank=pb.RANK_ACE)
    assert card_to_pb(Card(2 * 16 + 10)) == pb.Card(suit=pb.SUIT_HEARTS, rank=pb.RANK_QUEEN)


def _raw_card(suit: int, rank: int) -> pb.Card:
    """A card as a client could send it, enum values outside the proto's included."""
    return pb.Card.FromString(bytes([0x08, suit, 0x10, rank]))


@pytest.mark.parametrize(
    ("msg", "path", "words"),
    [
        (pb.Card(), "card.suit", "not a suit"),
        (pb.Card(rank=pb.RANK_ACE), "card.suit", "not a suit"),
        (pb.Card(suit=pb.SUIT_HEARTS), "card.rank", "not a rank"),
        (_raw_card(9, 5), "card.suit", "not a suit"),
        (_raw_card(2, 1), "card.rank", "not a rank"),
        (_raw_card(2, 17), "card.rank", "not a rank"),
        (pb.Card(suit=pb.SUIT_HEARTS, rank=pb.RANK_LITTLE_JOKER), "card.suit", "joker"),
        (pb.Card(suit=pb.SUIT_CLUBS, rank=pb.RANK_BIG_JOKER), "card.suit", "joker"),
    ],
)
def test_bad_cards_are_refused(msg: pb.Card, path: str, words: str) -> None:
    with pytest.raises(ConversionError) as info:
        card_from_pb(msg)
    assert isinstance(info.value, ValueError)
    assert info.value.field_path == path
    assert words in info.value.message
    assert str(info.value).startswith(path + ": ")


@pytest.mark.parametrize("index", [-1, 13, 14, 15, 16 + 13, 2 * 16 + 14, 3 * 16 + 15, 64])
def test_card_to_pb_refuses_non_cards(index: int) -> None:
    with pytest.raises(ConversionError):
        card_to_pb(index)


# -- actions -------------------------------------------------------------------------


def _round_trip(action: Action) -> Action:
    wire = action_to_pb(action).SerializeToString()
    return action_from_pb(pb.Action.FromString(wire))


def test_action_round_trip_for_every_legal_action_seen(games: list[GameLog]) -> None:
    legal = set().union(*(log.legal for log in games))
    kinds = {type(a) for a in legal}
    assert kinds == {
        Bid,
        type(BLIND_NIL),
        type(LOOK),
        ExchangeDecision,
        NameTrump,
        PassCards,
        Play,
        Draw,
    }
    assert Bid(0) in legal and DRAW_KEEP in legal and DRAW_DISCARD in legal
    for action in legal:
        assert _round_trip(action) == action


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        (Bid(0), "bid"),
        (Bid(13), "bid"),
        (BLIND_NIL, "blind_nil"),
        (LOOK, "look"),
        (PassCards((Card(0), Card(50), BIG_JOKER)), "pass_cards"),
        (EXCHANGE, "exchange_decision"),
        (NO_EXCHANGE, "exchange_decision"),
        (NameTrump(0), "name_trump"),
        (NameTrump(3), "name_trump"),
        (DRAW_KEEP, "draw"),
        (DRAW_DISCARD, "draw"),
        (Play(Card(0)), "play_card"),
        (Play(LITTLE_JOKER), "play_card"),
    ],
)
def test_action_oneof_survives_the_wire(action: Action, kind: str) -> None:
    msg = pb.Action.FromString(action_to_pb(action).SerializeToString())
    assert msg.WhichOneof("kind") == kind
    assert action_from_pb(msg) == action


@pytest.mark.parametrize(
    ("msg", "path"),
    [
        (pb.Action(), "action"),
        (pb.Action(play_card=pb.PlayCardAction()), "action.play_card.card.suit"),
        (
            pb.Action(
                play_card=pb.PlayCardAction(card=pb.Card(suit=pb.SUIT_DIAMONDS)),
            ),
            "action.play_card.card.rank",
        ),
        (
            pb.Action(
                pass_cards=pb.PassCardsAction(
                    cards=[
                        pb.Card(suit=pb.SUIT_SPADES, rank=pb.RANK_ACE),
                        pb.Card(suit=pb.SUIT_HEARTS, rank=pb.RANK_BIG_JOKER),
                    ]
                )
            ),
            "action.pass_cards.cards[1].suit",
        ),
        (pb.Action(name_trump=pb.NameTrumpAction()), "action.name_trump.suit"),
        (
            pb.Action(name_trump=pb.NameTrumpAction(suit=pb.Suit.ValueType(9))),
            "action.name_trump.suit",
        ),
    ],
)
def test_bad_actions_are_refused(msg: pb.Action, path: str) -> None:
    with pytest.raises(ConversionError) as info:
        action_from_pb(msg)
    assert info.value.field_path == path


def test_action_error_path_can_be_prefixed() -> None:
    with pytest.raises(ConversionError) as info:
        action_from_pb(pb.Action(), "request.action")
    assert info.value.field_path == "request.action"


# -- rulesets ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_ruleset_from_pb_of_each_preset(name: str) -> None:
    assert ruleset_from_pb(pb.Ruleset(preset=name)) == PRESETS[name]


def test_empty_ruleset_is_classic() -> None:
    assert ruleset_from_pb(pb.Ruleset()) == PRESETS["classic"]


@pytest.mark.parametrize(
    ("msg", "expected"),
    [
        (pb.Ruleset(target_score=300), preset("classic", target_score=300)),
        (pb.Ruleset(mercy_score=-500), preset("classic", mercy_score=-500)),
        (pb.Ruleset(no_mercy_score=True), preset("classic", mercy_score=None)),
        (pb.Ruleset(no_mercy_score=True, mercy_score=-300), preset("classic", mercy_score=None)),
        (pb.Ruleset(no_mercy_score=False), preset("classic")),
        (pb.Ruleset(preset="german", no_mercy_score=False), preset("german")),
        (pb.Ruleset(preset="german", mercy_score=-100), preset("german", mercy_score=-100)),
        (
            pb.Ruleset(bag_rule=pb.BAG_RULE_FIVE_FOR_50),
            preset("classic", bag_rule="5_for_50"),
        ),
        (pb.Ruleset(bag_rule=pb.BAG_RULE_OFF), preset("classic", bag_rule="off")),
        (pb.Ruleset(blind_nil=True), preset("classic", blind_nil=True)),
        (pb.Ruleset(preset="polish", blind_nil=False), preset("polish", blind_nil=False)),
        (
            pb.Ruleset(preset="polish", blind_nil_deficit=0),
            preset("polish", blind_nil_deficit=0),
        ),
        (
            pb.Ruleset(preset="polish", blind_nil_exchange=0, blind_nil_exchange_optional=False),
            preset("polish", blind_nil_exchange=0, blind_nil_exchange_optional=False),
        ),
        (
            pb.Ruleset(preset="polish", blind_nil_exchange_optional=False),
            preset("polish", blind_nil_exchange_optional=False),
        ),
        (
            pb.Ruleset(blind_nil=True, blind_nil_exchange_optional=True),
            preset("classic", blind_nil=True, blind_nil_exchange_optional=True),
        ),
        (pb.Ruleset(blind_nil_exchange=3), preset("classic", blind_nil_exchange=3)),
        (
            pb.Ruleset(first_lead=pb.FIRST_LEAD_DEALER),
            preset("classic", first_lead="dealer"),
        ),
        (
            pb.Ruleset(first_lead=pb.FIRST_LEAD_TWO_OF_CLUBS),
            preset("classic", first_lead="two_of_clubs"),
        ),
        (
            pb.Ruleset(preset="polish", first_lead=pb.FIRST_LEAD_UNSPECIFIED),
            preset("polish"),
        ),
        (pb.Ruleset(nil_allowed=False), preset("classic", nil_allowed=False)),
        (
            pb.Ruleset(set_penalty=pb.SET_PENALTY_ZERO),
            preset("classic", set_penalty="zero"),
        ),
        (
            pb.Ruleset(preset="german", set_penalty=pb.SET_PENALTY_TEN_PER_BID),
            preset("german", set_penalty="ten_per_bid"),
        ),
        (pb.Ruleset(partnerships=False), preset("classic", partnerships=False)),
        (pb.Ruleset(jokers=True), preset("classic", jokers=True)),
        (pb.Ruleset(preset="german", players=3), preset("german", players=3)),
        (pb.Ruleset(preset="german", players=5), preset("german", players=5)),
        (pb.Ruleset(preset="german", players=2), preset("german", players=2)),
        (
            pb.Ruleset(preset="bulgarian", thirteen_bid=False),
            preset("bulgarian", thirteen_bid=False),
        ),
        (pb.Ruleset(thirteen_bid=True), preset("classic", thirteen_bid=True)),
        (pb.Ruleset(scoring=pb.SCORING_TRICKS), preset("classic", scoring="tricks")),
        (
            pb.Ruleset(preset="bulgarian", scoring=pb.SCORING_TRICKS),
            preset("bulgarian", scoring="tricks"),
        ),
        (pb.Ruleset(scoring=pb.SCORING_CLASSIC), preset("classic")),
        (pb.Ruleset(scoring=pb.SCORING_UNSPECIFIED), preset("classic")),
        (
            pb.Ruleset(spades_broken=pb.SPADES_BROKEN_TRUMPING),
            preset("classic", spades_broken="trumping"),
        ),
        (
            pb.Ruleset(preset="polish", spades_broken=pb.SPADES_BROKEN_ANY_SPADE),
            preset("polish", spades_broken="any_spade"),
        ),
        (
            pb.Ruleset(preset="polish", spades_broken=pb.SPADES_BROKEN_UNSPECIFIED),
            preset("polish"),  # trumping, the preset's
        ),
        (pb.Ruleset(suicide=True), preset("classic", suicide=True)),
        (pb.Ruleset(preset="polish", suicide=True), preset("polish", suicide=True)),
        (pb.Ruleset(suicide=False), preset("classic")),
        (pb.Ruleset(auction_trump=True), preset("classic", auction_trump=True)),
        (pb.Ruleset(preset="polish", auction_trump=False), preset("polish")),
        (
            pb.Ruleset(preset="german", deuces_high=True),
            preset("german", deuces_high=True),
        ),
        (pb.Ruleset(deuces_high=False), preset("classic")),
    ],
)
def test_ruleset_options_apply(msg: pb.Ruleset, expected: Ruleset) -> None:
    got = ruleset_from_pb(pb.Ruleset.FromString(msg.SerializeToString()))
    assert got == expected
    assert got.to_dict() == expected.to_dict()


def test_unset_options_keep_the_preset() -> None:
    got = ruleset_from_pb(pb.Ruleset(preset="bulgarian", target_score=250))
    assert got == preset("bulgarian", target_score=250)
    assert got.first_lead == PRESETS["bulgarian"].first_lead
    assert got.mercy_score is None


@pytest.mark.parametrize(
    ("msg", "options"),
    [
        (pb.Ruleset(preset="texas"), {"preset"}),
        (pb.Ruleset(players=3), {"players", "partnerships", "jokers"}),
        (pb.Ruleset(partnerships=False, players=5), {"players", "jokers"}),
        (pb.Ruleset(preset="polish", nil_allowed=False), {"blind_nil", "nil_allowed"}),
        (pb.Ruleset(target_score=0), {"target_score"}),
        (pb.Ruleset(mercy_score=0), {"mercy_score"}),
        (pb.Ruleset(blind_nil_exchange=4), {"blind_nil_exchange"}),
        (pb.Ruleset(blind_nil_deficit=-1), {"blind_nil_deficit"}),
        (
            pb.Ruleset(preset="german", first_lead=pb.FIRST_LEAD_TWO_OF_CLUBS),
            {"first_lead", "jokers", "players"},
        ),
        (
            pb.Ruleset(preset="polish", partnerships=False),
            {"blind_nil_exchange", "blind_nil_exchange_optional", "partnerships"},
        ),
        (
            pb.Ruleset(preset="polish", blind_nil_exchange=0),
            {"blind_nil_exchange_optional", "blind_nil_exchange"},
        ),
        (pb.Ruleset(bag_rule=pb.BagRule.ValueType(9)), {"bag_rule"}),
        (pb.Ruleset(first_lead=pb.FirstLead.ValueType(9)), {"first_lead"}),
        (pb.Ruleset(set_penalty=pb.SetPenalty.ValueType(9)), {"set_penalty"}),
        (pb.Ruleset(scoring=pb.Scoring.ValueType(9)), {"scoring"}),
        (
            pb.Ruleset(preset="german", scoring=pb.SCORING_TRICKS),
            {"scoring", "set_penalty"},
        ),
        (
            pb.Ruleset(scoring=pb.SCORING_TRICKS, bag_rule=pb.BAG_RULE_OFF),
            {"scoring", "bag_rule"},
        ),
        (pb.Ruleset(spades_broken=pb.SpadesBroken.ValueType(9)), {"spades_broken"}),
        (pb.Ruleset(suicide=True, partnerships=False), {"suicide", "partnerships"}),
        (pb.Ruleset(suicide=True, nil_allowed=False), {"suicide", "nil_allowed"}),
        (pb.Ruleset(preset="german", auction_trump=True), {"auction_trump", "jokers"}),
        (pb.Ruleset(deuces_high=True), {"deuces_high", "jokers"}),
        (pb.Ruleset(preset="german", players=3, deuces_high=True), {"deuces_high", "players"}),
    ],
)
def test_invalid_rulesets_raise_ruleset_error(msg: pb.Ruleset, options: set[str]) -> None:
    with pytest.raises(RulesetError) as info:
        ruleset_from_pb(msg)
    assert set(info.value.options) == options


@pytest.mark.parametrize(
    "rules",
    [*DECK_RULES, preset("bulgarian", scoring="tricks"), preset("polish", suicide=True)],
    ids=[*CONFIG_IDS, "classic-jokers", "bulgarian-tricks", "polish-suicide"],
)
def test_resolved_ruleset(rules: Ruleset) -> None:
    msg = pb.ResolvedRuleset.FromString(resolved_ruleset_pb(rules).SerializeToString())
    assert msg.hand_size == rules.hand_size
    assert msg.has_mercy_score == (rules.mercy_score is not None)
    assert msg.mercy_score == (rules.mercy_score or 0)
    for name in ("target_score", "blind_nil", "blind_nil_deficit", "blind_nil_exchange"):
        assert getattr(msg, name) == getattr(rules, name)
    for name in (
        "nil_allowed",
        "partnerships",
        "jokers",
        "players",
        "thirteen_bid",
        "blind_nil_exchange_optional",
        "suicide",
        "auction_trump",
        "deuces_high",
    ):
        assert getattr(msg, name) == getattr(rules, name)
    assert pb.BagRule.Name(msg.bag_rule) == "BAG_RULE_" + rules.bag_rule.name
    assert pb.FirstLead.Name(msg.first_lead) == "FIRST_LEAD_" + rules.first_lead.name
    assert pb.SetPenalty.Name(msg.set_penalty) == "SET_PENALTY_" + rules.set_penalty.name
    assert pb.Scoring.Name(msg.scoring) == "SCORING_" + rules.scoring.name
    assert pb.SpadesBroken.Name(msg.spades_broken) == "SPADES_BROKEN_" + rules.spades_broken.name
    # Every option given back as a Ruleset rebuilds the same rules.
    back = pb.Ruleset(
        target_score=msg.target_score,
        no_mercy_score=not msg.has_mercy_score,
        bag_rule=msg.bag_rule,
        blind_nil=msg.blind_nil,
        blind_nil_deficit=msg.blind_nil_deficit,
        blind_nil_exchange=msg.blind_nil_exchange,
        first_lead=msg.first_lead,
        nil_allowed=msg.nil_allowed,
        set_penalty=msg.set_penalty,
        partnerships=msg.partnerships,
        jokers=msg.jokers,
        players=msg.players,
        thirteen_bid=msg.thirteen_bid,
        scoring=msg.scoring,
        spades_broken=msg.spades_broken,
        blind_nil_exchange_optional=msg.blind_nil_exchange_optional,
        suicide=msg.suicide,
        auction_trump=msg.auction_trump,
        deuces_high=msg.deuces_high,
    )
    if msg.has_mercy_score:
        back.mercy_score = msg.mercy_score
    assert ruleset_from_pb(back) == rules


# -- phases and views ----------------------------------------------------------------


def test_phase_to_pb() -> None:
    for phase in Phase:
        assert pb.Phase.Name(phase_to_pb(phase)) == "PHASE_" + phase.name


SEAT_INFOS = [
    pb.SeatInfo(seat=i, name=f"p{i}", control=pb.SEAT_CONTROL_HUMAN, bot_level=pb.BOT_LEVEL_EASY)
    for i in range(5)
]


def _private_cards(msg: Any, top: bool = True) -> list[Card]:
    """Every card anywhere in a view except the public played ones (trick, tricks)."""
    out: list[Card] = []
    for fd, value in msg.ListFields():
        if top and fd.name in ("trick", "tricks"):
            continue
        if fd.message_type is None:
            continue
        items = value if fd.is_repeated else [value]
        for item in items:
            if isinstance(item, pb.Card):
                out.append(card_from_pb(item))
            else:
                out.extend(_private_cards(item, top=False))
    return out


def _check_view(m: Match, view: SeatView, msg: pb.SeatView, as_of_seq: int) -> None:
    rules, h = m.rules, m.state.hand
    seat = view.seat
    assert msg.seat == (-1 if seat is None else seat)
    assert msg.as_of_seq == as_of_seq
    assert list(msg.seats) == SEAT_INFOS[: rules.players]
    assert msg.ruleset == resolved_ruleset_pb(rules)
    assert msg.phase == phase_to_pb(view.phase)
    assert (msg.hand_number, msg.dealer, msg.to_act) == (view.hand_number, view.dealer, view.to_act)
    assert (list(msg.scores), list(msg.bags)) == (list(view.scores), list(view.bags))
    assert [(b.has_bid, b.tricks, b.blind) for b in msg.bids] == [
        (b is not None, b or 0, bl) for b, bl in zip(view.bids, view.blind, strict=True)
    ]
    assert list(msg.tricks_won) == list(view.tricks_won)
    assert list(msg.hand_sizes) == list(view.hand_sizes)
    assert list(msg.face_down) == list(view.face_down)
    assert [card_from_pb(c) for c in msg.trick] == list(view.trick)
    assert msg.leader == view.leader and msg.spades_broken == view.spades_broken
    assert [(t.leader, [card_from_pb(c) for c in t.cards], t.winner) for t in msg.tricks] == [
        (t.leader, list(t.cards), t.winner) for t in view.tricks
    ]
    assert list(msg.exchange_seats) == list(view.exchange_seats)
    assert list(msg.exchange_chosen) == list(view.exchange_chosen)
    assert list(msg.exchange_deciders) == list(view.exchange_deciders)
    assert [(d.seat, d.exchange) for d in msg.exchange_decisions] == list(view.exchange_decisions)
    assert (msg.trump, msg.trump_namer, msg.trump_named) == (
        view.trump + 1,
        view.trump_namer,
        view.trump_named,
    )
    assert [action_from_pb(a) for a in msg.legal_actions] == list(view.legal_actions)
    assert msg.winner == (-1 if view.winner is None else view.winner)
    assert [[_side_dict(s) for s in r.sides] for r in msg.results] == [
        [_side_dict(s) for s in r] for r in view.results
    ]
    assert [card_from_pb(c) for c in msg.discards] == list(view.discards)
    assert msg.stock_size == view.stock_size
    top = card_from_pb(msg.stock_top) if msg.HasField("stock_top") else None
    assert top == view.stock_top
    private = _private_cards(msg)
    if seat is None or h.face_down[seat]:
        # A spectator or a seat that has not looked: no cards but the played ones.
        assert not msg.hand_visible and not msg.hand
        assert private == []
        return
    assert msg.hand_visible
    held = h.hands[seat]
    assert mask_of(card_from_pb(c) for c in msg.hand) == held
    assert [card_from_pb(c) for c in msg.passed] == list(view.passed)
    assert [card_from_pb(c) for c in msg.received] == list(view.received)
    gave = h.exchange_chosen.get(seat, 0)
    own = held | gave | mask_of(h.received.get(seat, ()))
    if h.discarded:  # two players' draw: its discards, and the top card it looks at
        own |= h.discarded[seat] | (0 if top is None else 1 << top)
        assert top is None or seat == m.to_act
    others = 0
    for other in range(rules.players):
        if other != seat:
            others |= h.hands[other] | (h.discarded[other] if h.discarded else 0)
    private_mask = mask_of(private)
    assert private_mask & ~own == 0, "a card the seat never held"
    assert private_mask & others & ~gave == 0, "another seat's card"


@pytest.mark.parametrize(("name", "overrides"), CONFIGS, ids=CONFIG_IDS)
def test_views_of_every_seat(name: str, overrides: dict[str, Any]) -> None:
    _views_of_every_seat(name, overrides)


def test_views_of_every_seat_with_two_players() -> None:
    _views_of_every_seat("german", {"players": 2})


def _views_of_every_seat(name: str, overrides: dict[str, Any]) -> None:
    seq = 0
    face_down_views = exchange_views = 0
    for m, events in _play(name, overrides, seed=1):
        seq += len(events)
        if m.hand_number >= VIEW_EVERY_STEP_HANDS and not any(
            isinstance(e, (HandStarted, ExchangeStarted, MatchEnded)) for e in events
        ):
            continue  # later hands: a view per deal, exchange and the end is enough
        seats = SEAT_INFOS[: m.rules.players]
        for seat in (None, *range(m.rules.players)):
            view = m.view(seat)
            msg = view_to_pb(view, as_of_seq=seq, seats=seats)
            msg = pb.SeatView.FromString(msg.SerializeToString())
            _check_view(m, view, msg, seq)
            face_down_views += seat is not None and view.face_down[seat]
            exchange_views += bool(view.passed or view.received)
    if m.rules.blind_nil:
        assert face_down_views > 0
    if m.rules.blind_nil_exchange and m.rules.blind_nil_deficit == 0:
        assert exchange_views > 0
