"""RULES.md §3: every combination of options is playable or refused with an
error naming the conflicting options; presets match the seeds."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from rules_helpers import autoplay_hand, bid_all, cards, controlled_deal, of_type, play_tricks

from spades_engine import (
    PRESETS,
    BagRule,
    DealError,
    FirstLead,
    Match,
    Ruleset,
    RulesetError,
    Scoring,
    SetPenalty,
    SpadesBroken,
    preset,
)
from spades_engine.ruleset import OPTION_NAMES


def test_classic_is_the_default_table() -> None:
    r = preset("classic")
    assert r == Ruleset()
    assert (r.players, r.partnerships, r.jokers, r.hand_size) == (4, True, False, 13)
    assert (r.target_score, r.mercy_score) == (500, -200)
    assert r.bag_rule is BagRule.TEN_FOR_100
    assert r.first_lead is FirstLead.LEFT_OF_DEALER
    assert r.set_penalty is SetPenalty.TEN_PER_BID
    assert (r.blind_nil, r.thirteen_bid, r.nil_allowed) == (False, False, True)
    assert r.spades_broken is SpadesBroken.ANY_SPADE


def test_the_presets_follow_their_seeds() -> None:
    polish, german, bulgarian = preset("polish"), preset("german"), preset("bulgarian")
    assert polish.first_lead is FirstLead.DEALER
    assert polish.spades_broken is SpadesBroken.TRUMPING  # "przebije kartą atutową"
    assert german.spades_broken is bulgarian.spades_broken is SpadesBroken.ANY_SPADE
    assert (polish.blind_nil, polish.blind_nil_deficit, polish.blind_nil_exchange) == (
        True,
        100,
        2,
    )
    assert polish.blind_nil_exchange_optional  # seed 000: "może wymienić"
    assert not preset("classic").blind_nil_exchange_optional
    assert (german.partnerships, german.jokers, german.nil_allowed) == (False, True, False)
    assert german.set_penalty is SetPenalty.ZERO
    assert bulgarian.first_lead is FirstLead.TWO_OF_CLUBS
    assert (bulgarian.blind_nil, bulgarian.blind_nil_deficit, bulgarian.thirteen_bid) == (
        True,
        0,
        True,
    )
    assert bulgarian.blind_nil_exchange == 0


def test_overrides_and_dict_round_trip() -> None:
    r = preset("german", players=3, target_score=300)
    assert (r.players, r.target_score, r.hand_size) == (3, 300, 18)
    for rules in [*PRESETS.values(), r]:
        assert Ruleset.from_dict(rules.to_dict()) == rules
    assert preset("classic", bag_rule="5_for_50").bag_rule is BagRule.FIVE_FOR_50


@pytest.mark.parametrize(
    ("overrides", "options"),
    [
        ({"players": 3}, {"players", "partnerships", "jokers"}),  # both conflicts at once
        ({"players": 5, "jokers": True}, {"players", "partnerships"}),
        ({"players": 3, "partnerships": False}, {"players", "jokers"}),
        ({"players": 5, "partnerships": False}, {"players", "jokers"}),
        ({"players": 6, "partnerships": False, "jokers": True}, {"players"}),
        ({"players": 2}, {"players", "partnerships", "jokers"}),
        ({"players": 1, "partnerships": False, "jokers": True}, {"players"}),
        ({"jokers": True, "first_lead": "two_of_clubs"}, {"first_lead", "jokers", "players"}),
        ({"blind_nil": True, "nil_allowed": False}, {"blind_nil", "nil_allowed"}),
        ({"blind_nil": True, "partnerships": False}, {"blind_nil_exchange", "partnerships"}),
        (
            {"blind_nil_exchange_optional": True, "blind_nil_exchange": 0},
            {"blind_nil_exchange_optional", "blind_nil_exchange"},
        ),
        (
            {"blind_nil_exchange_optional": True, "partnerships": False},
            {"blind_nil_exchange_optional", "partnerships"},
        ),
        ({"blind_nil_exchange_optional": "yes"}, {"blind_nil_exchange_optional"}),
        ({"target_score": 0}, {"target_score"}),
        ({"target_score": -500}, {"target_score"}),
        ({"mercy_score": 0}, {"mercy_score"}),
        ({"mercy_score": 100}, {"mercy_score"}),
        ({"blind_nil_deficit": -1}, {"blind_nil_deficit"}),
        ({"blind_nil_exchange": 4}, {"blind_nil_exchange"}),
        ({"blind_nil_exchange": -1}, {"blind_nil_exchange"}),
        ({"bag_rule": "7_for_70"}, {"bag_rule"}),
        ({"first_lead": "north"}, {"first_lead"}),
        ({"set_penalty": "half"}, {"set_penalty"}),
        ({"spades_broken": "leading"}, {"spades_broken"}),
        ({"spades_broken": True}, {"spades_broken"}),
        ({"target_score": "500"}, {"target_score"}),
        ({"jokers": "yes"}, {"jokers"}),
        ({"players": 4.0}, {"players"}),
        ({"thirteen_bid": 1}, {"thirteen_bid"}),
        ({"trump": "hearts"}, {"trump"}),
        ({"scoring": "points"}, {"scoring"}),
        ({"scoring": "tricks", "bag_rule": "off"}, {"scoring", "bag_rule"}),
        ({"scoring": "tricks", "bag_rule": "5_for_50"}, {"scoring", "bag_rule"}),
        ({"scoring": "tricks", "set_penalty": "zero"}, {"scoring", "set_penalty"}),
    ],
)
def test_an_invalid_option_or_combination_names_the_options(
    overrides: dict[str, Any], options: set[str]
) -> None:
    with pytest.raises(RulesetError) as info:
        preset("classic", **overrides)
    assert set(info.value.options) == options
    for name in options:
        assert name in str(info.value)


def test_the_constructor_validates_too() -> None:
    with pytest.raises(RulesetError) as info:
        Ruleset(players=3)
    assert set(info.value.options) == {"players", "partnerships", "jokers"}
    with pytest.raises(RulesetError) as info:
        Ruleset(first_lead="two_of_clubs", jokers=True)  # type: ignore[arg-type]
    assert set(info.value.options) == {"first_lead", "jokers", "players"}


def test_option_values_given_as_strings_act_like_the_enums() -> None:
    r = Ruleset(first_lead="dealer", bag_rule="off", set_penalty="zero")  # type: ignore[arg-type]
    assert r == preset("classic", first_lead="dealer", bag_rule="off", set_penalty="zero")
    assert r.first_lead is FirstLead.DEALER
    t = Ruleset(spades_broken="trumping")  # type: ignore[arg-type]
    assert t.spades_broken is SpadesBroken.TRUMPING
    assert t == preset("classic", spades_broken=SpadesBroken.TRUMPING)
    assert t.to_dict()["spades_broken"] == "trumping"
    assert preset("polish", spades_broken="any_spade").spades_broken is SpadesBroken.ANY_SPADE
    d, script = controlled_deal([6, 0, 6, 1])
    m = Match(r, deals=[d], dealer=2)
    bid_all(m, [1, 1, 1, 1])
    assert m.to_act == 2  # the dealer leads
    play_tricks(m, script)
    assert (m.scores, m.bags) == ((30, 0), (0, 0))  # bags off, a set scores 0


def test_an_unknown_preset_is_named() -> None:
    with pytest.raises(RulesetError) as info:
        preset("swedish")
    assert info.value.options == ("preset",)
    assert "swedish" in str(info.value)


def test_combinations_the_rules_allow() -> None:
    # three players keep the 2 of clubs, so it can lead
    r = preset("german", players=3, first_lead="two_of_clubs")
    assert r.hand_size == 18
    # blind nil in cutthroat, without an exchange
    assert preset("classic", partnerships=False, blind_nil=True, blind_nil_exchange=0).blind_nil
    assert preset("classic", mercy_score=None).mercy_score is None
    # trick-count scoring with the bulgarian table, or in cutthroat
    assert preset("bulgarian", scoring="tricks").scoring is Scoring.TRICKS
    assert preset("german", scoring="tricks", set_penalty="ten_per_bid").players == 4


def test_scoring_defaults_to_classic_and_the_bulgarian_preset_keeps_it() -> None:
    assert Ruleset().scoring is Scoring.CLASSIC
    assert preset("bulgarian").scoring is Scoring.CLASSIC
    assert Ruleset.from_dict({"scoring": "tricks"}).scoring is Scoring.TRICKS
    assert Ruleset.from_dict({}).to_dict()["scoring"] == "classic"


GRID: dict[str, tuple[Any, ...]] = {
    "players": (3, 4, 5),
    "partnerships": (True, False),
    "jokers": (True, False),
    "first_lead": tuple(FirstLead),
    "blind_nil": (True, False),
    "nil_allowed": (True, False),
    "blind_nil_exchange": (0, 2),
    "blind_nil_exchange_optional": (True, False),
    "thirteen_bid": (True, False),
    "scoring": tuple(Scoring),
    "spades_broken": tuple(SpadesBroken),
    "suicide": (True, False),
}


def test_every_combination_is_playable_or_refused_with_named_options() -> None:
    playable = refused = 0
    for values in itertools.product(*GRID.values()):
        options = dict(zip(GRID, values, strict=True))
        try:
            rules = Ruleset.from_dict({**options, "blind_nil_deficit": 0})
        except RulesetError as e:
            refused += 1
            assert e.options
            assert set(e.options) <= set(OPTION_NAMES)
            assert all(name in str(e) for name in e.options)
            continue
        playable += 1
        m = Match(rules, seed=playable, dealer=0)
        events = autoplay_hand(m)
        (hs,) = of_type(events, "HandScored")
        assert sum(hs.tricks) == rules.hand_size
    assert playable and refused
    assert playable + refused == math.prod(len(values) for values in GRID.values())


def test_an_explicit_deal_must_split_the_deck() -> None:
    d, _ = controlled_deal([4, 3, 3, 3])
    rules = preset("classic")
    with pytest.raises(DealError, match="needs 4 hands"):
        Match(rules, deals=[d[:3]])
    with pytest.raises(DealError, match="already dealt"):
        Match(rules, deals=[[d[0], d[0], d[2], d[3]]])
    with pytest.raises(DealError, match="holds 12 cards"):
        Match(rules, deals=[[d[0][:-1], d[1], d[2], d[3]]])
    with pytest.raises(DealError, match="not in this ruleset's deck"):  # no 2C with jokers
        Match(preset("classic", jokers=True), deals=[d])
    with pytest.raises(DealError, match="not in this ruleset's deck"):
        Match(rules, deals=[[[*d[0][:-1], *cards("BJ")], d[1], d[2], d[3]]])
    with pytest.raises(ValueError, match="dealer"):
        Match(rules, dealer=4)
