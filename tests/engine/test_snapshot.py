"""Snapshots: full state round trips, identical behaviour after loading, and
every malformed input refused with SnapshotError."""

from __future__ import annotations

import dataclasses
import json
import random
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from rules_helpers import CONFIGS, SPADE_LEAD_CLUBS, SPADE_LEAD_DEAL

from spades_engine import (
    BLIND_NIL,
    EXCHANGE,
    LOOK,
    NO_EXCHANGE,
    Action,
    Bid,
    BlindNil,
    Look,
    Match,
    Phase,
    Play,
    Reason,
    Scoring,
    SnapshotError,
    SpadesBroken,
    event_to_dict,
    parse_card,
    preset,
    replay_snapshot,
)
from spades_engine.deck import deal, hand_seed
from spades_engine.errors import IllegalAction
from spades_engine.ruleset import OPTION_NAMES
from spades_engine.snapshot import (
    LATER_OPTIONS,
    MAGIC,
    MAX_PAYLOAD,
    VERSION,
    dump_snapshot,
    load_snapshot,
    snapshot_document,
)
from spades_engine.state import HandState, MatchState


def random_step(m: Match, rng: random.Random) -> tuple[int, Action]:
    seat = rng.choice(m.seats_to_act())
    return seat, rng.choice(m.legal_actions(seat))


def play(
    m: Match,
    rng: random.Random,
    max_hands: int,
    each: Callable[[Match], None] | None = None,
) -> None:
    while not m.is_over and len(m.state.results) < max_hands:
        if each is not None:
            each(m)
        seat, action = random_step(m, rng)
        m.apply(seat, action)
    if each is not None:
        each(m)


def assert_same(a: Match, b: Match) -> None:
    """Two matches that any caller would find indistinguishable."""
    assert dump_snapshot(a) == dump_snapshot(b)
    assert a.phase is b.phase and a.to_act == b.to_act and a.winner == b.winner
    assert a.scores == b.scores and a.bags == b.bags and a.hand_number == b.hand_number
    assert a.actions == b.actions
    assert a.seats_to_act() == b.seats_to_act()
    for seat in range(a.rules.players):
        assert a.legal_actions(seat) == b.legal_actions(seat)
        assert a.view(seat) == b.view(seat)
    assert a.view(None) == b.view(None)


def encode(doc: Any, version: int = VERSION) -> bytes:
    text = json.dumps(doc, separators=(",", ":"))
    return MAGIC + bytes((version,)) + zlib.compress(text.encode())


# -- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_round_trip_at_every_step(name: str) -> None:
    m = Match(CONFIGS[name], seed=11)
    sizes: list[int] = []

    def check(m: Match) -> None:
        data = m.to_snapshot()
        sizes.append(len(data))
        loaded = Match.from_snapshot(data)
        assert loaded.to_snapshot() == data
        assert_same(m, loaded)

    play(m, random.Random(5), max_hands=3, each=check)
    assert len(sizes) > CONFIGS[name].hand_size * CONFIGS[name].players
    assert max(sizes) < 4096  # compact: a few hands fit in a few kilobytes


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("seed", [1, 2])
def test_loaded_match_has_the_same_future(name: str, seed: int) -> None:
    """From several points of a match, a loaded copy yields the same legal
    actions and the same events for the same actions, to the end."""
    rng = random.Random(seed)
    m = Match(CONFIGS[name], seed=seed)
    for _ in range(4):
        for _ in range(rng.randrange(5, 60)):
            if m.is_over:
                break
            m.apply(*random_step(m, rng))
        copy = Match.from_snapshot(m.to_snapshot())
        assert_same(m, copy)
        probe = random.Random(rng.random())
        original = Match.from_snapshot(m.to_snapshot())
        while not original.is_over and len(original.state.results) < 6:
            seat, action = random_step(original, probe)
            assert copy.legal_actions(seat) == original.legal_actions(seat)
            got = [event_to_dict(e) for e in copy.apply(seat, action)]
            assert got == [event_to_dict(e) for e in original.apply(seat, action)]
        assert_same(original, copy)


def test_a_snapshot_written_before_the_scoring_option_loads_as_classic() -> None:
    m = Match(preset("bulgarian"), seed=11)
    play(m, random.Random(11), max_hands=2)
    doc = snapshot_document(m.state, m.actions)
    del doc["rules"]["scoring"]  # what a snapshot from before the option holds
    loaded = load_snapshot(encode(doc))
    assert loaded.rules.scoring is Scoring.CLASSIC
    assert loaded.rules == m.rules
    assert_same(loaded, m)


def test_trick_count_scoring_round_trips() -> None:
    m = Match(preset("bulgarian", scoring="tricks", target_score=40), seed=5)
    play(m, random.Random(5), max_hands=3)
    assert m.state.results
    loaded = load_snapshot(dump_snapshot(m))
    assert loaded.rules.scoring is Scoring.TRICKS
    assert_same(loaded, m)


def test_snapshot_document_holds_every_state_field() -> None:
    m = Match(preset("classic"), seed=3)
    doc = snapshot_document(m.state, m.actions)
    assert set(doc) == {f.name for f in dataclasses.fields(MatchState)} | {"actions"}
    assert set(doc["hand"]) == {f.name for f in dataclasses.fields(HandState)}
    assert doc["rules"] == m.rules.to_dict()


def test_actions_survive_in_text_form() -> None:
    m = Match(preset("classic"), seed=4)
    rng = random.Random(4)
    for _ in range(30):
        m.apply(*random_step(m, rng))
    loaded = Match.from_snapshot(m.to_snapshot())
    assert loaded.actions == m.actions
    assert [str(a) for _, a in loaded.actions] == [str(a) for _, a in m.actions]
    raw = json.loads(zlib.decompress(m.to_snapshot()[len(MAGIC) + 1 :]))
    assert raw["actions"][0] == [m.actions[0][0], str(m.actions[0][1])]


def drive_to_exchange(m: Match) -> None:
    """Bidding where the first face-down bidder of each team bids blind nil."""
    blind_teams: set[int] = set()
    while m.phase is Phase.BIDDING:
        seat = m.to_act
        legal = m.legal_actions(seat)
        if BLIND_NIL in legal and seat & 1 not in blind_teams:
            blind_teams.add(seat & 1)
            m.apply(seat, BLIND_NIL)
        elif LOOK in legal:
            m.apply(seat, LOOK)
        else:
            m.apply(seat, Bid(3))


def test_mid_exchange_snapshot() -> None:
    m = Match(preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False), seed=21)
    drive_to_exchange(m)
    assert m.phase is Phase.EXCHANGE and m.to_act == -1
    seats = m.state.hand.exchange_seats
    assert seats == (0, 1, 2, 3)
    first = seats[2]
    m.apply(first, m.legal_actions(first)[5])
    data = m.to_snapshot()
    loaded = Match.from_snapshot(data)
    assert_same(m, loaded)
    assert loaded.view(first).passed == m.view(first).passed != ()
    assert loaded.view(first).received == ()
    assert loaded.legal_actions(first) == []
    # finishing the exchange on both gives the same cards passed and the same play
    for seat in seats:
        if seat != first:
            action = m.legal_actions(seat)[-1]
            assert [event_to_dict(e) for e in loaded.apply(seat, action)] == [
                event_to_dict(e) for e in m.apply(seat, action)
            ]
    assert m.state.phase is Phase.PLAYING
    assert_same(m, loaded)
    assert loaded.view(seats[0]).received == m.view(seats[0]).received != ()


def test_mid_exchange_snapshot_keeps_the_choice_order() -> None:
    m = Match(preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False), seed=22)
    drive_to_exchange(m)
    seats = m.state.hand.exchange_seats
    for seat in (seats[-1], seats[0]):  # not in seat order
        m.apply(seat, m.legal_actions(seat)[0])
    loaded = Match.from_snapshot(m.to_snapshot())
    assert list(loaded.state.hand.exchange_chosen) == list(m.state.hand.exchange_chosen)
    assert loaded.to_snapshot() == m.to_snapshot()


def test_mid_decision_snapshot_of_the_optional_exchange() -> None:
    m = Match(preset("polish", blind_nil_deficit=0), seed=22)
    drive_to_exchange(m)
    deciders = m.state.hand.exchange_deciders
    assert deciders == (0, 1) and m.state.hand.exchange_seats == ()
    m.apply(1, NO_EXCHANGE)  # side 1 declines
    data = m.to_snapshot()
    doc = snapshot_document(m.state, m.actions)
    assert doc["hand"]["exchange_deciders"] == [0, 1]
    assert doc["hand"]["exchange_decisions"] == [[1, False]]
    loaded = Match.from_snapshot(data)
    assert_same(m, loaded)
    assert loaded.to_snapshot() == data
    assert loaded.view(None).exchange_decisions == ((1, False),)
    assert loaded.seats_to_act() == [0]
    for match in (m, loaded):
        (decided, started) = match.apply(0, EXCHANGE)
        assert (decided.seat, started.seats) == (0, (0, 2))
    assert_same(m, loaded)


def _older(doc: dict[str, Any]) -> dict[str, Any]:
    """A snapshot document as written before the optional exchange existed."""
    old = json.loads(json.dumps(doc))
    del old["rules"]["blind_nil_exchange_optional"]
    del old["hand"]["exchange_deciders"], old["hand"]["exchange_decisions"]
    return old


@pytest.mark.parametrize("config", ["classic", "polish-deficit0"])
def test_an_older_snapshot_without_the_optional_exchange_keys_loads(config: str) -> None:
    rules = CONFIGS[config].replace(blind_nil_exchange_optional=False)
    m = Match(rules, seed=23)
    if config == "classic":
        play(m, random.Random(23), 1)
    else:
        drive_to_exchange(m)
        m.apply(m.seats_to_act()[0], m.legal_actions(m.seats_to_act()[0])[0])
    loaded = Match.from_snapshot(encode(_older(snapshot_document(m.state, m.actions))))
    assert_same(m, loaded)
    assert loaded.to_snapshot() == m.to_snapshot()  # dumped again with the new keys
    assert not loaded.rules.blind_nil_exchange_optional  # what the older engine played


def test_an_older_snapshot_without_the_draw_keys_loads() -> None:
    m = Match(CONFIGS["classic"], seed=31)
    play(m, random.Random(31), 1)
    old = json.loads(json.dumps(snapshot_document(m.state, m.actions)))
    for k in ("stock", "drawn", "discarded"):
        del old["hand"][k]
    loaded = Match.from_snapshot(encode(old))
    assert_same(m, loaded)
    assert loaded.to_snapshot() == m.to_snapshot()


def test_a_two_player_snapshot_mid_draw_round_trips() -> None:
    m = Match(preset("german", players=2), seed=32)
    rng = random.Random(32)
    for _ in range(9):
        m.apply(m.to_act, rng.choice(m.legal_actions(m.to_act)))
    loaded = Match.from_snapshot(m.to_snapshot())
    assert_same(m, loaded)
    doc = snapshot_document(m.state, m.actions)
    doc["hand"]["drawn"] += 2  # a state its actions do not give
    with pytest.raises(SnapshotError):
        Match.from_snapshot(encode(doc))


def test_an_older_snapshot_cannot_hide_a_decision() -> None:
    m = Match(preset("polish", blind_nil_deficit=0), seed=22)
    drive_to_exchange(m)
    m.apply(0, EXCHANGE)
    doc = snapshot_document(m.state, m.actions)
    del doc["hand"]["exchange_decisions"]  # read as no decision: the replay says otherwise
    with pytest.raises(SnapshotError, match=r"hand\.exchange_decisions"):
        Match.from_snapshot(encode(doc))


def test_mid_hand_snapshot_with_a_trick_in_progress() -> None:
    m = Match(preset("classic"), seed=8)
    rng = random.Random(8)
    while len(m.state.hand.completed) < 5 or len(m.state.hand.trick) != 2:
        m.apply(*random_step(m, rng))
    loaded = Match.from_snapshot(m.to_snapshot())
    assert_same(m, loaded)
    assert loaded.view(0).trick == m.view(0).trick and len(loaded.view(0).trick) == 2
    assert loaded.state.hand.led_suit == m.state.hand.led_suit >= 0


def test_face_down_hand_stays_hidden_after_loading() -> None:
    m = Match(preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False), seed=2)
    loaded = Match.from_snapshot(m.to_snapshot())
    assert all(loaded.view(s).hand is None for s in range(4))
    assert loaded.legal_actions(loaded.to_act) == [BlindNil(), Look()]


def test_finished_match_round_trip() -> None:
    m = Match(preset("classic"), seed=9)
    play(m, random.Random(9), max_hands=100)
    assert m.is_over
    loaded = Match.from_snapshot(m.to_snapshot())
    assert_same(m, loaded)
    assert loaded.winner == m.winner is not None
    with pytest.raises(IllegalAction) as e:
        loaded.apply(0, Bid(3))
    assert e.value.reason is Reason.MATCH_OVER


def test_explicit_deals_round_trip() -> None:
    rules = preset("classic")
    deals = [
        [list(_cards(h)) for h in deal(rules, hand_seed(77, i), (2 + i) % 4)] for i in range(2)
    ]
    m = Match(rules, seed=5, deals=deals, dealer=2)
    play(m, random.Random(1), max_hands=1)
    loaded = Match.from_snapshot(m.to_snapshot())
    assert loaded.state.deals == m.state.deals != ()
    assert_same(m, loaded)


def _cards(mask: int) -> list[int]:
    return [c for c in range(64) if mask >> c & 1]


def test_dump_load_dump_is_stable_for_big_seeds() -> None:
    for seed in (0, -1, 2**64 + 5, -(2**70)):
        m = Match(preset("german"), seed=seed)
        data = dump_snapshot(m)
        assert dump_snapshot(load_snapshot(data)) == data


# -- replaying a snapshot's history ------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_replay_gives_the_whole_history_and_the_same_match(name: str) -> None:
    m = Match(CONFIGS[name], seed=23)
    history = [event_to_dict(e) for e in m.opening_events]
    rng = random.Random(name)
    for _ in range(rng.randrange(40, 120)):  # a few hands, usually stopping mid-hand
        if m.is_over:
            break
        history += [event_to_dict(e) for e in m.apply(*random_step(m, rng))]
    copy, events = replay_snapshot(m.to_snapshot())
    assert [event_to_dict(e) for e in events] == history
    assert [e.audience for e in events] == [e.audience for e in _replayed_audiences(m)]
    assert_same(m, copy)


def _replayed_audiences(m: Match) -> list[Any]:
    fresh = Match(m.rules, seed=m.seed)
    out = list(fresh.opening_events)
    for seat, action in m.actions:
        out += fresh.apply(seat, action)
    return out


def test_replay_keeps_explicit_deals_and_dealer() -> None:
    rules = preset("classic")
    deals = [[_cards(h) for h in deal(rules, hand_seed(91, 0), 3)]]
    m = Match(rules, seed=4, deals=deals, dealer=3)
    play(m, random.Random(2), max_hands=1)
    copy, events = replay_snapshot(m.to_snapshot())
    assert_same(m, copy)
    assert len(events) > len(m.actions)


def test_a_state_its_deal_does_not_give_is_refused(sample: bytes) -> None:
    fresh = sample_doc(Match(preset("classic"), seed=8).to_snapshot())
    for doc in (fresh, sample_doc(sample)):
        doc["seed"] += 1  # well formed, but this seed deals other cards than the ones held
        edited = encode(doc)
        for load in (load_snapshot, replay_snapshot):
            with pytest.raises(SnapshotError, match=r"does not (follow|replay)"):
                load(edited)


def test_replay_refuses_an_action_that_does_not_replay(sample: bytes) -> None:
    doc = sample_doc(sample)
    doc["actions"][0][0] = (doc["actions"][0][0] + 1) % 4  # the first bid by the wrong seat
    with pytest.raises(SnapshotError):
        replay_snapshot(encode(doc))


# -- malformed input ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample() -> bytes:
    m = Match(preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False), seed=30)
    drive_to_exchange(m)
    seat = m.state.hand.exchange_seats[0]
    m.apply(seat, m.legal_actions(seat)[0])
    return m.to_snapshot()


def sample_doc(sample: bytes) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(zlib.decompress(sample[len(MAGIC) + 1 :]))
    return doc


def test_sample_document_reencodes_to_a_loadable_snapshot(sample: bytes) -> None:
    assert load_snapshot(encode(sample_doc(sample))).to_snapshot() == sample


def test_every_truncation_is_refused(sample: bytes) -> None:
    for n in range(len(sample)):
        with pytest.raises(SnapshotError):
            load_snapshot(sample[:n])


def test_truncation_messages(sample: bytes) -> None:
    with pytest.raises(SnapshotError, match="truncated"):
        load_snapshot(sample[:3])
    with pytest.raises(SnapshotError, match="truncated"):
        load_snapshot(sample[:-10])


def test_every_flipped_byte_is_refused(sample: bytes) -> None:
    for i in range(len(sample)):
        bad = bytearray(sample)
        bad[i] ^= 0x5A
        try:
            loaded = load_snapshot(bytes(bad))
        except SnapshotError:
            continue
        # only the unused padding bits of the last deflate byte may flip unnoticed:
        # then the content is intact
        assert i >= len(sample) - 8 and loaded.to_snapshot() == sample


def test_header_errors(sample: bytes) -> None:
    with pytest.raises(SnapshotError, match="not a spades snapshot"):
        load_snapshot(b"XXXX" + sample[4:])
    with pytest.raises(SnapshotError, match="unsupported snapshot version 2"):
        load_snapshot(MAGIC + b"\x02" + sample[5:])
    with pytest.raises(SnapshotError, match="unexpected byte"):
        load_snapshot(sample + b"junk")
    with pytest.raises(SnapshotError, match="is bytes, not str"):
        load_snapshot("SPDS")  # type: ignore[arg-type]
    with pytest.raises(SnapshotError, match="not valid JSON"):
        load_snapshot(MAGIC + bytes((VERSION,)) + zlib.compress(b"{not json"))
    with pytest.raises(SnapshotError, match="not valid JSON"):
        load_snapshot(MAGIC + bytes((VERSION,)) + zlib.compress('{"é":1}'.encode()))
    bomb = MAGIC + bytes((VERSION,)) + zlib.compress(b" " * (MAX_PAYLOAD + 1))
    with pytest.raises(SnapshotError, match="inflates to more than"):
        load_snapshot(bomb)


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


BAD_FIELDS: list[tuple[str, tuple[Any, ...], Any, str]] = [
    ("not an object", (), None, "top level"),
    ("bool seed", ("seed",), True, "seed: expected an integer"),
    ("float seed", ("seed",), 1.5, "seed: expected an integer"),
    ("unknown phase", ("phase",), "dozing", "phase"),
    ("bad bid", ("hand", "bids", 0), "x", r"hand\.bids\[0\]"),
    ("bid too high", ("hand", "bids", 0), 14, r"hand\.bids\[0\]: 14 does not follow"),
    ("bad seat", ("hand", "to_act"), 4, "hand.to_act"),
    ("unknown option", ("rules", "trumps"), "hearts", "unknown key"),
    ("bad option", ("rules", "players"), 3, "players=3 is played only without partnerships"),
    ("bad enum", ("rules", "bag_rule"), "sometimes", "bag_rule"),
    ("short scores", ("scores",), [0], r"scores: expected 2 items"),
    ("winner while playing", ("winner",), 1, "winner: 1 does not follow .* give null"),
    ("action count", ("action_count",), 0, "action_count"),
    ("bad action", ("actions", 0, 1), "play ZZ", r"actions\[0\]\[1\]"),
    ("action not text", ("actions", 0, 1), 7, r"actions\[0\]\[1\]"),
    ("action seat", ("actions", 0, 0), -1, r"actions\[0\]\[0\]"),
    ("dealer", ("hand", "dealer"), None, "hand.dealer"),
    ("wrong dealer", ("first_dealer",), None, r"actions\[0\]: .*NOT_YOUR_TURN"),
    ("extra card", ("hand", "hands", 0), None, r"hand\.hands"),
    ("card not in deck", ("hand", "trick"), [14], r"hand\.trick: expected 0 items"),
    ("mask outside deck", ("hand", "hands", 1), 1 << 63, r"hand\.hands\[1\]: .*: holds #63"),
    ("chosen card not held", ("hand", "exchange_chosen"), None, r"exchange_chosen\[0\]\[1\]"),
    ("chosen count", ("hand", "exchange_chosen"), None, r"chosen\[0\]\[1\]: .* lacks \w\w$"),
    ("results without hands", ("results",), [[]], "results"),
    ("scores without results", ("scores",), [10, 0], r"scores\[0\]: 10 does not follow"),
]


@pytest.mark.parametrize(("label", "path", "value", "message"), BAD_FIELDS)
def test_bad_fields_are_named(
    sample: bytes, label: str, path: tuple[Any, ...], value: Any, message: str
) -> None:
    doc: Any = sample_doc(sample)
    if label == "not an object":
        doc = [1, 2]
    elif label == "dealer":
        _set(doc, path, (doc["hand"]["dealer"] + 1) % 4)
    elif label == "wrong dealer":
        _set(doc, path, (doc["first_dealer"] + 1) % 4)
    elif label.startswith("chosen"):
        [[seat, chosen]] = doc["hand"]["exchange_chosen"]
        if label == "chosen card not held":  # two cards of the next seat's hand
            other = doc["hand"]["hands"][(seat + 1) % 4]
            low = other & -other
            chosen = low | (other ^ low) & -(other ^ low)
        else:  # one card instead of two
            chosen &= chosen - 1
        doc["hand"]["exchange_chosen"] = [[seat, chosen]]
    elif label == "extra card":
        hands = doc["hand"]["hands"]
        low = hands[1] & -hands[1]
        hands[0] |= low  # a card held twice
    else:
        _set(doc, path, value)
    with pytest.raises(SnapshotError, match=message):
        load_snapshot(encode(doc))


def test_missing_and_unknown_keys(sample: bytes) -> None:
    doc = sample_doc(sample)
    del doc["hand"]["spades_broken"]
    with pytest.raises(SnapshotError, match=r"hand: missing key.*spades_broken"):
        load_snapshot(encode(doc))
    doc = sample_doc(sample)
    doc["extra"] = 1
    with pytest.raises(SnapshotError, match=r"unknown key.*extra"):
        load_snapshot(encode(doc))
    doc = sample_doc(sample)
    del doc["rules"]["jokers"]
    with pytest.raises(SnapshotError, match=r"rules: missing key.*jokers"):
        load_snapshot(encode(doc))


def test_card_moved_between_hands_is_refused(sample: bytes) -> None:
    doc = sample_doc(sample)
    hands = doc["hand"]["hands"]
    low = hands[1] & -hands[1]
    hands[1] ^= low
    hands[0] |= low
    with pytest.raises(SnapshotError, match=r"hand\.hands\[0\]: .*: holds \w\w and lacks no card"):
        load_snapshot(encode(doc))


def test_lost_card_is_refused(sample: bytes) -> None:
    doc = sample_doc(sample)
    hands = doc["hand"]["hands"]
    hands[2] &= hands[2] - 1
    with pytest.raises(SnapshotError, match=r"hand\.hands\[2\]: .*: holds no card and lacks \w\w$"):
        load_snapshot(encode(doc))


@pytest.fixture(scope="module")
def playing() -> bytes:
    """Classic, third hand, a trick in progress."""
    m = Match(preset("classic", mercy_score=None), seed=40)
    rng = random.Random(40)
    while len(m.state.results) < 2 or len(m.state.hand.completed) < 3 or not m.state.hand.trick:
        m.apply(*random_step(m, rng))
    return m.to_snapshot()


def _flip(doc: dict[str, Any], label: str) -> None:
    h = doc["hand"]
    if label == "turn":
        h["to_act"] = (h["to_act"] + 1) % 4
    elif label == "phase":
        doc["phase"] = "bidding"
    elif label == "over":
        doc["phase"] = "match_over"
    elif label == "broken":
        h["spades_broken"] = not h["spades_broken"]
    elif label == "won":
        h["completed"][0][2] = (h["completed"][0][2] + 1) % 4
    elif label == "tricks":
        h["tricks_won"] = h["tricks_won"][::-1]
    elif label == "face down":
        h["face_down"][0] = True
    elif label == "blind":
        h["blind"][1] = True
    elif label == "result":
        doc["results"][0][0][8] += 1
    elif label == "bids":
        doc["hand_bids"][1][0] += 1


INCONSISTENT = [
    ("turn", r"hand\.to_act: \d does not follow"),
    ("phase", r"phase: \"bidding\" does not follow"),
    ("over", r"phase: \"match_over\" does not follow"),
    ("broken", "hand.spades_broken"),
    ("won", r"hand\.completed\[0\]\[2\]: \d does not follow"),
    ("tricks", "hand.tricks_won"),
    ("face down", r"hand\.face_down\[0\]: true does not follow"),
    ("blind", r"hand\.blind\[1\]: true does not follow"),
    ("result", r"results\[0\]\[0\]\[8\]: -?\d+ does not follow"),
    ("bids", r"hand_bids\[1\]\[0\]: \d+ does not follow"),
]


@pytest.mark.parametrize(("label", "message"), INCONSISTENT)
def test_states_play_cannot_reach_are_refused(playing: bytes, label: str, message: str) -> None:
    doc = sample_doc(playing)
    _flip(doc, label)
    with pytest.raises(SnapshotError, match=message):
        load_snapshot(encode(doc))


def test_exchange_inconsistencies_are_refused(sample: bytes) -> None:
    doc = sample_doc(sample)
    doc["hand"]["received"] = [[0, [1, 2]]]
    with pytest.raises(SnapshotError, match=r"hand\.received: expected 0 items"):
        load_snapshot(encode(doc))
    doc = sample_doc(sample)
    doc["hand"]["exchange_seats"] = [0, 2]
    with pytest.raises(SnapshotError, match="exchange_seats: expected"):
        load_snapshot(encode(doc))
    doc = sample_doc(sample)
    doc["phase"] = "playing"
    with pytest.raises(SnapshotError, match=r"phase: \"playing\" does not follow"):
        load_snapshot(encode(doc))


# -- options added after version 1 ---------------------------------------------------------


def _without(snapshot: bytes, *options: str) -> dict[str, Any]:
    """The document as a snapshot written before ``options`` existed holds it."""
    doc = sample_doc(snapshot)
    for name in options:
        del doc["rules"][name]
    return doc


def test_later_options_are_the_options_added_since_version_1() -> None:
    assert set(LATER_OPTIONS) <= set(OPTION_NAMES)
    assert "spades_broken" in LATER_OPTIONS


def test_a_snapshot_without_spades_broken_loads_with_any_spade() -> None:
    m = Match(preset("classic"), seed=5)
    play(m, random.Random(5), max_hands=1)
    before = m.to_snapshot()
    loaded = load_snapshot(encode(_without(before, "spades_broken")))
    assert loaded.rules.spades_broken is SpadesBroken.ANY_SPADE
    assert loaded.to_snapshot() == before  # dumped again, with the option spelled out


def test_a_snapshot_without_suicide_loads_without_it() -> None:
    m = Match(preset("classic"), seed=6)
    play(m, random.Random(6), max_hands=1)
    before = m.to_snapshot()
    loaded = load_snapshot(encode(_without(before, "suicide")))
    assert not loaded.rules.suicide
    assert loaded.to_snapshot() == before  # dumped again, with the option spelled out


def test_a_suicide_snapshot_round_trips() -> None:
    m = Match(preset("classic", suicide=True), seed=7)
    play(m, random.Random(7), max_hands=1)
    before = m.to_snapshot()
    loaded = load_snapshot(before)
    assert loaded.rules.suicide
    assert loaded.to_snapshot() == before


def test_an_old_polish_snapshot_keeps_the_rule_it_was_played_by() -> None:
    """A polish match saved before the option existed was played with any spade
    breaking spades: it loads with that rule, not the preset's new trumping."""
    old_polish = preset("polish", spades_broken="any_spade")
    m = Match(old_polish, deals=[SPADE_LEAD_DEAL], dealer=1, seed=3)
    for _ in range(4):
        seat = m.to_act
        m.apply(seat, Bid(1))
    for trick in [*SPADE_LEAD_CLUBS, "4S AS 3S 5C"]:
        for _ in range(4):
            seat = m.to_act
            held = [c for c in map(parse_card, trick.split()) if m.state.hand.hands[seat] >> c & 1]
            m.apply(seat, Play(held[0]))
    m.apply(2, Play(parse_card("2S")))  # legal only because the spade lead broke spades
    doc = _without(m.to_snapshot(), "spades_broken")
    loaded = load_snapshot(encode(doc))
    assert loaded.rules == old_polish != preset("polish")
    assert loaded.to_snapshot() == m.to_snapshot()
    doc["rules"]["spades_broken"] = "trumping"  # the preset's value does not replay
    with pytest.raises(SnapshotError, match=r"actions\[\d+\].*SPADES_NOT_BROKEN"):
        load_snapshot(encode(doc))
