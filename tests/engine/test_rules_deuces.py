"""RULES.md §3.1 "Deuces high" (seed 001 lists it as off): Big Joker > Little
Joker > 2 of diamonds > 2 of spades > A of spades; the 2 of diamonds is a spade
for every purpose; 2C and 2H leave the deck."""

from __future__ import annotations

import itertools

import pytest
from rules_helpers import act, autoplay_hand, bid_all, cards, deal, names, of_type, reject

from spades_engine import Match, Play, Reason, Ruleset, RulesetError, preset
from spades_engine.cards import CLUBS, DIAMONDS, SPADES, card_name, hand_str, parse_card, parse_hand
from spades_engine.trick import deuces_legal_play_mask, deuces_trick_winner_index

DEUCES = preset("classic", jokers=True, deuces_high=True)

# seat 0 every diamond (2D too), 1 clubs and BJ, 2 hearts and LJ, 3 every spade
BY_SUIT = deal(
    "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC BJ",
    "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH LJ",
    "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
)


def winner(trick: str) -> int:
    return deuces_trick_winner_index(cards_in_order(trick))


def cards_in_order(text: str) -> list[int]:
    return [parse_card(x) for x in text.split()]


def legal(hand: str, led: int, broken: bool = False) -> str:
    return hand_str(deuces_legal_play_mask(parse_hand(hand), led, broken))


def test_the_deck_is_52_cards_without_2c_and_2h() -> None:
    deck = DEUCES.deck_mask
    assert deck.bit_count() == 52 and DEUCES.hand_size == 13
    assert names(cards(hand_str(deck))) >= {"2D", "2S", "LJ", "BJ"}
    assert not deck & parse_hand("2C 2H")
    assert preset("german", deuces_high=True).deck_mask == deck  # cutthroat, four seats


@pytest.mark.parametrize(
    ("trick", "index"),
    [
        ("AS 2S", 1),
        ("2S 2D", 1),
        ("2D 2S", 0),
        ("2D LJ", 1),
        ("LJ BJ", 1),
        ("AS 2D 2S KS", 1),
        ("3C 2D 4C AC", 1),  # the 2 of diamonds trumps a side suit
        ("3D AD 2D KD", 2),  # ... diamonds too: it is not a diamond
        ("2D AD KD QD", 0),  # a 2D lead is a spade lead: diamonds do not follow it
        ("3D AD 4D 5D", 1),
        ("2S 3S", 0),  # the 2 of spades led
        ("3S 2S AS 4S", 1),
    ],
)
def test_the_order_of_trumps(trick: str, index: int) -> None:
    assert winner(trick) == index


def test_the_2_of_diamonds_follows_spades_and_not_diamonds() -> None:
    assert legal("2D AD 5S", SPADES) == "2D 5S"
    assert legal("2D AD 5S", DIAMONDS) == "AD"
    assert legal("2D 5C", DIAMONDS) == "5C 2D"  # void in diamonds: its 2 is a spade
    assert legal("2D 5C", SPADES) == "2D"
    assert legal("2D 5C", CLUBS) == "5C"
    assert legal("2D 5C", -1) == "5C"  # not led before spades are broken
    assert legal("2D 5S", -1) == "2D 5S"  # unless only spades are held
    assert legal("2D 5C", -1, broken=True) == "5C 2D"


def test_the_2_of_diamonds_must_follow_a_spade_lead_in_a_match() -> None:
    m = Match(DEUCES, deals=[BY_SUIT], dealer=0)
    bid_all(m, [3, 3, 3, 3])
    act(m, "play 3C", "play 3H", "play 2S", "play 3D")  # seat 3 trumps, spades broken
    assert m.to_act == 3
    act(m, "play 3S")
    view = m.view(0)
    assert view.led_suit == SPADES
    assert view.legal_actions == (Play(parse_card("2D")),)  # its only spade
    reject(m, 0, Play(parse_card("AD")), Reason.MUST_FOLLOW_SUIT)
    (won,) = of_type(act(m, "play 2D", "play BJ", "play LJ"), "TrickWon")
    assert won.winner == 1
    assert [card_name(c) for c in won.cards] == ["3S", "2D", "BJ", "LJ"]  # 2D keeps its name


def test_a_trick_led_with_the_2_of_diamonds_is_a_spade_trick() -> None:
    hands = deal(
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AS",
        "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC BJ",
        "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH LJ",
        "AD 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS",
    )
    m = Match(DEUCES, deals=[hands], dealer=0)
    bid_all(m, [3, 3, 3, 3])
    act(m, "play 3C", "play 3H", "play 3S", "play AS")  # spades broken; seat 0 wins
    assert m.to_act == 0
    act(m, "play 2D")
    assert m.view(1).led_suit == SPADES
    assert m.view(1).legal_actions == (Play(parse_card("BJ")),)
    act(m, "play BJ", "play LJ")
    assert names(a.card for a in m.view(3).legal_actions) == names(
        cards("2S 4S 5S 6S 7S 8S 9S TS JS QS KS")
    )  # not the ace of diamonds
    (won,) = of_type(act(m, "play KS"), "TrickWon")
    assert won.winner == 1
    m = Match(DEUCES, deals=[BY_SUIT], dealer=3)  # seat 0 leads: not 2D, spades unbroken
    bid_all(m, [3, 3, 3, 3])
    assert Play(parse_card("2D")) not in m.view(0).legal_actions
    reject(m, 0, Play(parse_card("2D")), Reason.SPADES_NOT_BROKEN)


def test_the_2_of_diamonds_cannot_follow_a_diamond_lead() -> None:
    hands = deal(
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD 3S",
        "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC BJ",
        "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH LJ",
        "AD 2S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    )
    m = Match(DEUCES, deals=[hands], dealer=2)
    bid_all(m, [3, 3, 3, 3])
    assert m.view(3).legal_actions == (Play(parse_card("AD")),)  # every other card a spade
    act(m, "play AD")
    assert names(a.card for a in m.view(0).legal_actions) == {
        "3D",
        "4D",
        "5D",
        "6D",
        "7D",
        "8D",
        "9D",
        "TD",
        "JD",
        "QD",
        "KD",
    }
    reject(m, 0, Play(parse_card("2D")), Reason.MUST_FOLLOW_SUIT)


@pytest.mark.parametrize("broken_by", ["any_spade", "trumping"])
def test_the_2_of_diamonds_trumps_and_breaks_spades(broken_by: str) -> None:
    hands = deal(
        "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC BJ",
        "2D 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
        "3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD LJ",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    )
    m = Match(DEUCES.replace(spades_broken=broken_by), deals=[hands], dealer=3)
    bid_all(m, [3, 3, 3, 3])
    act(m, "play 3C")
    assert not m.state.hand.spades_broken
    act(m, "play 2D")
    assert m.state.hand.spades_broken
    (won,) = of_type(act(m, "play 3D", "play 2S"), "TrickWon")
    assert won.winner == 1


def test_the_option_defaults_off_and_its_refusals() -> None:
    assert preset("classic").deuces_high is False
    assert preset("classic", deuces_high=True, jokers=True).to_dict()["deuces_high"] is True
    for options, named in [
        ({"deuces_high": True}, {"deuces_high", "jokers"}),
        (
            {"deuces_high": True, "jokers": True, "players": 3, "partnerships": False},
            {"deuces_high", "players"},
        ),
        (
            {"deuces_high": True, "jokers": True, "players": 5, "partnerships": False},
            {"deuces_high", "players"},
        ),
        ({"deuces_high": True, "auction_trump": True}, {"deuces_high", "auction_trump", "jokers"}),
    ]:
        with pytest.raises(RulesetError) as info:
            preset("classic", **options)
        assert set(info.value.options) == named
        assert all(name in str(info.value) for name in named)


def test_a_deuces_match_snapshot_round_trips() -> None:
    m = Match(DEUCES, deals=[BY_SUIT], dealer=0)
    bid_all(m, [3, 3, 3, 3])
    act(m, "play 3C", "play 3H")
    again = Match.from_snapshot(m.to_snapshot())
    assert again.rules == DEUCES
    act(again, "play 2S", "play 2D")
    assert again.state.hand.tricks_won[0] == 1


DEUCES_GRID: dict[str, tuple[object, ...]] = {
    "players": (3, 4, 5),
    "partnerships": (True, False),
    "jokers": (True, False),
    "auction_trump": (True, False),
    "spades_broken": ("any_spade", "trumping"),
    "first_lead": ("left_of_dealer", "two_of_clubs"),
}


def test_every_deuces_high_combination_is_playable_or_refused_with_named_options() -> None:
    playable = 0
    for values in itertools.product(*DEUCES_GRID.values()):
        options = dict(zip(DEUCES_GRID, values, strict=True))
        try:
            rules = Ruleset.from_dict({**options, "deuces_high": True})
        except RulesetError as e:
            assert e.options and all(name in str(e) for name in e.options)
            continue
        playable += 1
        assert rules.players == 4 and rules.jokers and not rules.auction_trump
        assert rules.first_lead != "two_of_clubs"
        (hs,) = of_type(autoplay_hand(Match(rules, seed=playable, dealer=0)), "HandScored")
        assert sum(hs.tricks) == 13
    assert playable == 4  # partnerships or not, either spades_broken
