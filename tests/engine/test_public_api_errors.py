"""The public functions answer wrong types and out-of-range values with the
engine's own exceptions (all ``SpadesError``), never an exception from inside:
one case per input that leaked one before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rules_helpers import cards_of, controlled_deal, reject

from spades_engine import (
    BLIND_NIL,
    ActionParseError,
    Bid,
    CardError,
    DealError,
    IllegalAction,
    Match,
    PassCards,
    Phase,
    Play,
    Reason,
    Ruleset,
    RulesetError,
    SnapshotError,
    SpadesError,
    card_name,
    event_to_dict,
    parse_action,
    parse_card,
    parse_hand,
    preset,
)
from spades_engine.record import RecordActionError, RecordError, record_of, replay
from spades_engine.ruleset import parse_option

HUGE = pytest.param(10**5000, id="10**5000")  # past the digits str() converts

# -- one base class -------------------------------------------------------------------------


def test_every_engine_exception_is_a_spades_error_and_keeps_its_bases() -> None:
    for cls in (SnapshotError, RulesetError, DealError, CardError, ActionParseError, RecordError):
        assert issubclass(cls, SpadesError) and issubclass(cls, ValueError), cls
    assert issubclass(IllegalAction, SpadesError) and not issubclass(IllegalAction, ValueError)
    assert issubclass(RecordActionError, RecordError) and issubclass(RecordError, SnapshotError)


# -- Match(...) -------------------------------------------------------------------------------

DEAL, _ = controlled_deal([4, 3, 3, 3])


def _deal_with(seat: int, index: int, card: Any) -> list[list[Any]]:
    d: list[list[Any]] = [list(h) for h in DEAL]
    d[seat][index] = card
    return d


@pytest.mark.parametrize(
    "deals",
    [
        [_deal_with(0, 0, -1)],  # was ValueError: negative shift count
        [_deal_with(0, 0, 1000)],  # was CardError
        [_deal_with(0, 0, 2**40)],  # was 1 << 2**40: memory exhausted
        [_deal_with(1, 3, 13)],  # an index between the aces and the next suit: CardError
        [_deal_with(2, 0, 1.5)],  # TypeError
        [_deal_with(2, 0, "AS")],  # TypeError
        [_deal_with(3, 0, None)],  # TypeError
        [_deal_with(3, 0, True)],
        [_deal_with(0, 1, DEAL[0][0])],  # a card twice in one seat's list, 12 distinct cards
        [[*DEAL[:3], [*DEAL[3], DEAL[3][0]]]],  # 14 entries, 13 distinct cards: silently taken
        "abc",
        None,
        5,
        [None],
        [[None] * 4],
        [[*DEAL[:3], "AS KS"]],
    ],
)
def test_a_bad_explicit_deal_raises_deal_error(deals: Any) -> None:
    with pytest.raises(DealError):
        Match(preset("classic"), deals=deals, dealer=0)


@pytest.mark.parametrize("dealer", ["1", 1.0, True, -1, 4, 10**30, [0]])
def test_a_bad_dealer_raises_deal_error(dealer: Any) -> None:
    with pytest.raises(DealError, match="dealer"):
        Match(preset("classic"), dealer=dealer)


@pytest.mark.parametrize("seed", [None, 1.5, "1", True, b"1", 2**256, -(2**256), HUGE])
def test_a_bad_seed_raises_deal_error(seed: Any) -> None:
    with pytest.raises(DealError, match="seed"):
        Match(preset("classic"), seed=seed)


@pytest.mark.parametrize("seed", [0, -1, 2**64 + 5, -(2**70), 2**256 - 1, 1 - 2**256])
def test_every_seed_below_2_to_the_256_plays_and_snapshots(seed: int) -> None:
    m = Match(preset("classic"), seed=seed)
    assert Match.from_snapshot(m.to_snapshot()).seed == seed
    assert replay(json.loads(json.dumps(_record(m)))).to_snapshot() == m.to_snapshot()


def _record(m: Match) -> dict[str, Any]:
    from spades_engine.record import record_of

    return record_of(m)


@pytest.mark.parametrize("rules", ["classic", {"players": 4}, 1, preset])
def test_rules_of_the_wrong_type_raise_ruleset_error(rules: Any) -> None:
    with pytest.raises(RulesetError, match="Ruleset"):
        Match(rules)


# -- legal_actions, view, apply -----------------------------------------------------------------


@pytest.mark.parametrize("seat", ["1", None, 1.5, True, [0]])
def test_legal_actions_of_a_seat_that_is_not_an_int_raises_invalid_seat(seat: Any) -> None:
    m = Match(preset("classic"), seed=1)
    with pytest.raises(IllegalAction) as info:
        m.legal_actions(seat)
    assert info.value.reason is Reason.INVALID_SEAT


@pytest.mark.parametrize("seat", [-1, 4, 10**30])
def test_legal_actions_of_a_seat_not_at_the_table_is_empty(seat: int) -> None:
    assert Match(preset("classic"), seed=1).legal_actions(seat) == []


@pytest.mark.parametrize("seat", [1.5, "1", True, [0], 4, -1])
def test_view_of_anything_but_a_seat_or_none_raises_invalid_seat(seat: Any) -> None:
    m = Match(preset("classic"), seed=1)
    with pytest.raises(IllegalAction) as info:
        m.view(seat)
    assert info.value.reason is Reason.INVALID_SEAT


def _at_exchange() -> Match:
    m = Match(preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False), seed=21)
    while m.phase is Phase.BIDDING:
        seat = m.to_act
        legal = m.legal_actions(seat)
        m.apply(seat, BLIND_NIL if BLIND_NIL in legal else legal[-1])
    assert m.phase is Phase.EXCHANGE
    return m


@pytest.mark.parametrize(
    ("cards", "reason"),
    [
        (None, Reason.WRONG_PASS_COUNT),  # was TypeError: not iterable
        (5, Reason.WRONG_PASS_COUNT),
        ({1, 2}, Reason.WRONG_PASS_COUNT),
        ("AS", Reason.WRONG_PASS_COUNT),
        ((True, False), Reason.CARD_NOT_IN_HAND),
        ((1.0, 2.0), Reason.CARD_NOT_IN_HAND),
        ((-1, 3), Reason.CARD_NOT_IN_HAND),
        pytest.param((10**5000, 3), Reason.CARD_NOT_IN_HAND, id="huge"),  # repr raises
    ],
)
def test_malformed_pass_cards_are_refused_and_change_nothing(cards: Any, reason: Reason) -> None:
    m = _at_exchange()
    reject(m, m.seats_to_act()[0], PassCards(cards), reason)


def test_a_list_of_cards_is_still_passed() -> None:
    m = _at_exchange()
    seat = m.seats_to_act()[0]
    m.apply(seat, PassCards(list(cards_of(m.state.hand.hands[seat])[:2])))  # type: ignore[arg-type]


def _playing() -> Match:
    m = Match(preset("classic"), seed=3)
    while m.phase is Phase.BIDDING:
        m.apply(m.to_act, Bid(3))
    return m


@pytest.mark.parametrize("card", [None, 1.5, "QS", HUGE, -1, 64, 13])
def test_a_play_of_a_junk_card_is_refused_and_changes_nothing(card: Any) -> None:
    m = _playing()
    reject(m, m.to_act, Play(card), Reason.CARD_NOT_IN_HAND)


class _NoRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@pytest.mark.parametrize("action", [None, HUGE, _NoRepr(), "bid 3", ("bid", 3)])
def test_junk_actions_are_unknown_actions(action: Any) -> None:
    m = Match(preset("classic"), seed=1)
    reject(m, m.to_act, action, Reason.UNKNOWN_ACTION)


@pytest.mark.parametrize("seat", [HUGE, "0", None])
def test_a_junk_seat_is_an_invalid_seat(seat: Any) -> None:
    reject(Match(preset("classic"), seed=1), seat, Bid(3), Reason.INVALID_SEAT)


# -- rulesets -----------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [None, [1], "players", 4, [("players", 4)]])
def test_from_dict_of_anything_but_a_dict_raises_ruleset_error(data: Any) -> None:
    with pytest.raises(RulesetError, match="dict"):
        Ruleset.from_dict(data)


def test_from_dict_with_keys_that_are_not_strings_names_them() -> None:
    with pytest.raises(RulesetError) as info:
        Ruleset.from_dict({1: 2, None: 3, "players": 4})  # type: ignore[dict-item]
    assert set(info.value.options) == {"1", "None"}


@pytest.mark.parametrize("name", [None, [], {}, 1])
def test_preset_of_a_junk_name_raises_ruleset_error(name: Any) -> None:
    with pytest.raises(RulesetError) as info:
        preset(name)
    assert info.value.options == ("preset",)


@pytest.mark.parametrize(
    ("overrides", "option"),
    [
        pytest.param({"target_score": 10**5000}, "target_score", id="huge"),  # to_snapshot leaked
        ({"target_score": 2**31}, "target_score"),
        ({"mercy_score": -(2**31)}, "mercy_score"),
        ({"blind_nil_deficit": 2**40}, "blind_nil_deficit"),
        ({"bag_rule": []}, "bag_rule"),
    ],
)
def test_points_options_fit_the_api(overrides: dict[str, Any], option: str) -> None:
    with pytest.raises(RulesetError) as info:
        preset("classic", **overrides)
    assert info.value.options == (option,)
    assert str(info.value).startswith(option)


def test_the_largest_points_options_still_play() -> None:
    r = preset(
        "classic", target_score=2**31 - 1, mercy_score=1 - 2**31, blind_nil_deficit=2**31 - 1
    )
    Match.from_snapshot(Match(r, seed=1).to_snapshot())


def test_a_ruleset_error_names_every_problem_at_once() -> None:
    with pytest.raises(RulesetError) as info:
        preset(
            "classic",
            players="4",
            jokers="yes",
            target_score=0,
            blind_nil=True,
            nil_allowed=False,
            trump="hearts",
        )
    e = info.value
    assert set(e.options) == {
        "players",
        "jokers",
        "target_score",
        "blind_nil",
        "nil_allowed",
        "trump",
    }
    assert len(e.problems) == 5
    for message, options in e.problems:
        assert message in str(e)
        assert all(o in message for o in options)


def test_every_conflict_of_a_table_is_named_at_once() -> None:
    with pytest.raises(RulesetError) as info:
        Ruleset(players=5, first_lead="two_of_clubs", jokers=True)  # type: ignore[arg-type]
    assert len(info.value.problems) == 2
    assert set(info.value.options) == {"players", "partnerships", "first_lead", "jokers"}


def test_a_conflict_with_a_bad_value_is_not_reported_twice() -> None:
    with pytest.raises(RulesetError) as info:
        Ruleset(players=6)
    assert info.value.options == ("players",)  # not also partnerships and jokers
    with pytest.raises(RulesetError) as info:
        Ruleset(players="3")  # type: ignore[arg-type]
    assert info.value.options == ("players",)


def test_parse_option_refuses_with_ruleset_error() -> None:
    with pytest.raises(RulesetError):
        parse_option("nonsense")
    assert parse_option("players=" + "[" * 100_000)[0] == "players"  # was RecursionError


# -- texts and cards ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", [None, 1, b"bid 3", ["bid", "3"], "bid x", "bid " + "9" * 5000, "play ZZ", "jump"]
)
def test_parse_action_raises_action_parse_error(text: Any) -> None:
    with pytest.raises(ActionParseError):
        parse_action(text)
    with pytest.raises(ValueError):  # what callers caught before
        parse_action(text)


@pytest.mark.parametrize("fn", [parse_card, parse_hand, card_name])
@pytest.mark.parametrize("value", [None, 1.5, [], b"AS"])
def test_card_functions_raise_card_error(fn: Any, value: Any) -> None:
    with pytest.raises(CardError):
        fn(value)


# -- records and snapshots -------------------------------------------------------------------------


def test_a_record_with_a_seed_past_the_range_is_a_record_error() -> None:
    rec = {"format": "spades-record", "version": 1, "ruleset": {}, "seed": 2**300, "actions": []}
    with pytest.raises(RecordError, match="seed"):
        replay(rec)


def test_a_snapshot_with_a_seed_past_the_range_is_a_snapshot_error() -> None:
    import zlib

    from spades_engine.snapshot import MAGIC, VERSION, snapshot_document

    m = Match(preset("classic"), seed=1)
    doc = {**snapshot_document(m.state, m.actions), "seed": 2**300}
    data = MAGIC + bytes((VERSION,)) + zlib.compress(json.dumps(doc).encode())
    with pytest.raises(SnapshotError, match="seed"):
        Match.from_snapshot(data)


@pytest.mark.parametrize("value", [None, 1, "HandStarted", Match(preset("classic"), seed=1)])
def test_event_to_dict_and_record_of_refuse_what_they_were_not_given(value: Any) -> None:
    with pytest.raises(SpadesError, match="is not an engine event"):
        event_to_dict(value)
    if not isinstance(value, Match):
        with pytest.raises(RecordError, match="record_of takes a Match"):
            record_of(value)


def test_a_wrong_option_type_says_what_it_should_be() -> None:
    with pytest.raises(RulesetError, match=r"target_score='x' must be an integer"):
        Ruleset(target_score="x")  # type: ignore[arg-type]
    with pytest.raises(RulesetError, match=r"jokers=1 must be true or false"):
        Ruleset(jokers=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("option", ["bag_rule", "first_lead", "set_penalty", "spades_broken"])
def test_a_deeply_nested_enum_value_is_a_ruleset_error(option: str) -> None:
    nested: Any = []
    for _ in range(3000):  # deeper than repr() can go
        nested = [nested]
    with pytest.raises(RulesetError, match=f"{option}=.* is not one of"):
        Ruleset.from_dict({option: nested})
