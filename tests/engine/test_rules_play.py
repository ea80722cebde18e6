"""RULES.md §1 Play: follow suit, spades break, trick winners, 13 tricks."""

from __future__ import annotations

import itertools

import pytest
from rules_helpers import (
    SPADE_LEAD_CLUBS,
    SPADE_LEAD_DEAL,
    act,
    bid_all,
    cards,
    controlled_deal,
    deal,
    names,
    of_type,
    play_tricks,
    reject,
)

from spades_engine import Match, Phase, Play, Reason, SpadesBroken, parse_card, preset

# Seat 0 holds only clubs; seat 1 hearts and spades; seat 2 hearts and
# diamonds; seat 3 diamonds and spades (the ace, then the low ones).
DEAL = deal(
    "AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C",
    "AH KH QH JH TH 9H 8H KS QS JS TS 9S 2S",
    "7H 6H 5H 4H 3H 2H AD KD QD JD TD 9D 8D",
    "7D 6D 5D 4D 3D 2D AS 8S 7S 6S 5S 4S 3S",
)


def started(dealer: int, hands: list[list[int]] = DEAL) -> Match:
    m = Match(preset("classic"), deals=[hands], dealer=dealer)
    bid_all(m, [1, 1, 1, 1])
    assert m.phase is Phase.PLAYING
    return m


def legal_names(m: Match, seat: int) -> set[str]:
    return names(a.card for a in m.legal_actions(seat))  # type: ignore[union-attr]


def test_the_player_left_of_the_dealer_leads_the_first_trick() -> None:
    for dealer in range(4):
        assert started(dealer).to_act == (dealer + 1) % 4


def test_spades_cannot_be_led_before_they_are_broken() -> None:
    m = started(dealer=0)  # seat 1 leads, holding hearts and spades
    assert legal_names(m, 1) == {"AH", "KH", "QH", "JH", "TH", "9H", "8H"}
    reject(m, 1, Play(parse_card("KS")), Reason.SPADES_NOT_BROKEN)
    act(m, "play 8H", "play 2H", "play 7D", "play AC")  # no spade played: still unbroken
    assert m.to_act == 1
    assert not m.view(None).spades_broken
    reject(m, 1, Play(parse_card("2S")), Reason.SPADES_NOT_BROKEN)


def test_a_spade_played_to_a_trick_breaks_spades_for_later_leads() -> None:
    m = started(dealer=0)
    act(m, "play 9H", "play 3H")
    act(m, "play 3S")  # seat 3 is void in hearts and trumps
    act(m, "play KC")
    assert m.to_act == 3
    assert m.view(2).spades_broken
    assert {"AS", "4S", "7D"} <= legal_names(m, 3)  # seat 3 may now lead a spade
    act(m, "play 4S")
    assert m.view(None).led_suit == 3


def test_a_leader_holding_only_spades_may_lead_one_before_spades_are_broken() -> None:
    hands = deal(
        "AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C",
        "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
        "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2H",
        "AD KD QD JD TD 9D 8D 7D 6D 5D 4D 3D 2D",
    )
    m = started(dealer=0, hands=hands)
    assert len(m.legal_actions(1)) == 13
    events = act(m, "play 2S", "play 2H", "play 2D", "play AC")
    (won,) = of_type(events, "TrickWon")
    assert won.winner == 1


def test_players_must_follow_the_led_suit_when_able() -> None:
    m = started(dealer=0)
    act(m, "play 8H")
    assert legal_names(m, 2) == {"7H", "6H", "5H", "4H", "3H", "2H"}
    reject(m, 2, Play(parse_card("AD")), Reason.MUST_FOLLOW_SUIT)
    act(m, "play 2H")
    act(m, "play 7D")  # seat 3 is void: need not trump
    act(m, "play AC")  # seat 0 is void
    # a spade lead must be followed too, even by a seat holding higher hearts
    m2 = started(dealer=0)
    act(m2, "play 9H", "play 3H", "play 3S", "play KC", "play 4S", "play QC")
    reject(m2, 1, Play(parse_card("AH")), Reason.MUST_FOLLOW_SUIT)
    assert legal_names(m2, 1) == {"KS", "QS", "JS", "TS", "9S", "2S"}


def test_a_void_player_may_play_any_card_a_spade_included() -> None:
    m = started(dealer=0)
    act(m, "play 8H", "play 2H")
    assert len(m.legal_actions(3)) == 13  # void in hearts: every card, spades too


def test_the_highest_card_of_the_led_suit_wins_when_no_spade_is_played() -> None:
    m = started(dealer=0)
    events = act(m, "play 8H", "play 7H", "play 7D", "play AC")
    (won,) = of_type(events, "TrickWon")
    assert (won.winner, won.leader) == (1, 1)  # the 8 of hearts beats higher off-suit cards
    assert names(won.cards) == {"8H", "7H", "7D", "AC"}


def test_the_lowest_spade_beats_the_led_suit() -> None:
    m = started(dealer=0)
    events = act(m, "play AH", "play 7H", "play 3S", "play AC")
    assert of_type(events, "TrickWon")[0].winner == 3


def test_the_highest_spade_wins_when_several_are_played() -> None:
    m = started(dealer=3)  # seat 0 leads a club: seats 1 and 3 both trump
    events = act(m, "play 2C", "play 2S", "play 2H", "play 3S")
    assert of_type(events, "TrickWon")[0].winner == 3  # the later, higher trump
    m = started(dealer=3)
    events = act(m, "play 2C", "play 9S", "play 2H", "play 8S")
    assert of_type(events, "TrickWon")[0].winner == 1  # a later, lower trump loses


def test_the_winner_leads_the_next_trick_and_a_hand_is_13_tricks() -> None:
    d, script = controlled_deal([2, 5, 3, 3])
    m = Match(preset("classic"), deals=[d], dealer=0)
    bid_all(m, [2, 5, 3, 3])
    events = []
    for k, trick in enumerate(script):
        events += play_tricks(m, [trick])
        if k < 12:
            last = of_type(events, "TrickWon")[-1]
            assert m.to_act == last.winner
            assert m.view(None).tricks_won == tuple(
                sum(1 for t in of_type(events, "TrickWon") if t.winner == s) for s in range(4)
            )
    won = of_type(events, "TrickWon")
    assert len(won) == 13
    assert [t.trick_number for t in won] == list(range(1, 14))
    for before, after in itertools.pairwise(won):
        assert after.leader == before.winner
    assert [sum(t.winner == s for t in won) for s in range(4)] == [2, 5, 3, 3]
    assert len(of_type(events, "HandScored")) == 1
    assert m.hand_number == 1  # the next hand is dealt


def test_tricks_and_bids_are_public_during_the_hand() -> None:
    m = started(dealer=0)
    act(m, "play 8H", "play 7H", "play 7D", "play AC")
    for viewer in (None, 0, 1, 2, 3):
        v = m.view(viewer)
        assert v.tricks_won == (0, 1, 0, 0)
        assert v.bids == (1, 1, 1, 1)
        assert [names(t.cards) for t in v.tricks] == [{"8H", "7H", "7D", "AC"}]


def test_a_card_not_held_or_out_of_turn_is_refused() -> None:
    m = started(dealer=0)
    reject(m, 1, Play(parse_card("AC")), Reason.CARD_NOT_IN_HAND)  # seat 0 holds it
    reject(m, 1, Play(99), Reason.CARD_NOT_IN_HAND)  # type: ignore[arg-type]
    reject(m, 2, Play(parse_card("7H")), Reason.NOT_YOUR_TURN)
    act(m, "play AH")
    reject(m, 1, Play(parse_card("KH")), Reason.NOT_YOUR_TURN)
    reject(m, 2, Play(parse_card("AH")), Reason.CARD_NOT_IN_HAND)  # already played


def test_cards_leave_the_hand_once_played() -> None:
    m = started(dealer=0)
    act(m, "play AH")
    assert "AH" not in names(m.view(1).hand or ())
    assert names(m.view(1).hand or ()) == names(cards("KH QH JH TH 9H 8H KS QS JS TS 9S 2S"))
    assert m.view(None).hand_sizes == (13, 12, 13, 13)


# RULES.md §3 "spades broken by": trumping only (seed 000), on SPADE_LEAD_DEAL.


def _spade_lead_from_only_spades(rules_name: str, dealer: int, **options: str) -> Match:
    """Seat 1 leads the 4 of spades from a hand of spades only; seat 2 follows
    with the ace and wins, seat 3 follows with the 3, seat 0 discards a club."""
    m = Match(preset(rules_name, **options), deals=[SPADE_LEAD_DEAL], dealer=dealer)
    bid_all(m, [1, 1, 1, 1])
    assert m.to_act == 1
    play_tricks(m, SPADE_LEAD_CLUBS)
    assert not m.view(None).spades_broken
    assert len(m.legal_actions(1)) == 10  # only spades held: a spade may be led
    play_tricks(m, ["4S AS 3S 5C"])
    assert m.to_act == 2
    return m


@pytest.mark.parametrize(
    ("rules_name", "dealer", "options"),
    [("classic", 0, {"spades_broken": "trumping"}), ("polish", 1, {})],
)
def test_with_trumping_only_a_spade_lead_and_spades_following_it_break_nothing(
    rules_name: str, dealer: int, options: dict[str, str]
) -> None:
    m = _spade_lead_from_only_spades(rules_name, dealer, **options)
    assert not m.view(None).spades_broken and not m.view(2).spades_broken
    # seat 2 won the spade trick and holds the 2 of spades and hearts: it may
    # not lead the spade, that lead having broken nothing
    assert legal_names(m, 2) == {"AH", "KH", "QH", "JH", "TH", "9H", "8H", "7H"}
    reject(m, 2, Play(parse_card("2S")), Reason.SPADES_NOT_BROKEN)
    act(m, "play 7H", "play 6D", "play 2H")  # seat 3 discards: nothing broken yet
    assert not m.view(1).spades_broken
    events = act(m, "play 5S")  # seat 1, void in hearts, trumps: that breaks spades
    assert m.view(None).spades_broken and m.view(3).spades_broken
    assert of_type(events, "TrickWon")[0].winner == 1


def test_with_any_spade_the_same_spade_lead_breaks_spades() -> None:
    """The default rule (seed 001) is unchanged: the lead from only spades
    breaks spades, so the winner of that trick may lead its 2 of spades."""
    m = _spade_lead_from_only_spades("classic", 0)
    assert m.rules.spades_broken is SpadesBroken.ANY_SPADE
    assert m.view(None).spades_broken
    assert "2S" in legal_names(m, 2)
    act(m, "play 2S")
    assert m.view(None).led_suit == 3


def test_with_trumping_only_a_spade_played_when_void_breaks_spades() -> None:
    m = Match(preset("polish"), deals=[DEAL], dealer=1)  # seat 1 (the dealer) leads
    bid_all(m, [1, 1, 1, 1])
    act(m, "play 9H", "play 3H")
    assert not m.view(None).spades_broken
    act(m, "play 3S")  # seat 3, void in hearts, trumps
    assert m.view(None).spades_broken
    act(m, "play KC")
    assert {"AS", "4S", "7D"} <= legal_names(m, 3)  # the trick's winner may lead a spade


# The same deal with both jokers (the 2 of clubs and 2 of diamonds out): seat 1
# holds them with eight spades after its clubs; seat 0 holds the 5 and 4 of spades.
JOKER_DEAL = deal(
    "JC TC 9C 8C 7C 6C 5C 4C 3C 3H 2H 5S 4S",
    "AC KC QC BJ LJ KS QS JS TS 9S 8S 7S 6S",
    "AS 2S AH KH QH JH TH 9H 8H 7H 6H 5H 4H",
    "3S AD KD QD JD TD 9D 8D 7D 6D 5D 4D 3D",
)


def test_with_trumping_only_a_joker_led_from_only_spades_breaks_nothing_a_joker_trump_does() -> (
    None
):
    rules = preset("classic", jokers=True, spades_broken="trumping")
    m = Match(rules, deals=[JOKER_DEAL], dealer=0)
    bid_all(m, [1, 1, 1, 1])
    play_tricks(m, ["AC 4H 3D 3C", "KC 5H 4D 4C", "QC 6H 5D 5C"])
    play_tricks(m, ["LJ 2S 3S 4S"])  # the Little Joker led from only spades, followed
    assert m.to_act == 1 and not m.view(None).spades_broken
    play_tricks(m, ["6S AS 6D 5S"])  # seat 3 discards; seat 2 wins with the ace
    assert m.to_act == 2 and not m.view(None).spades_broken
    act(m, "play 7H", "play 7D", "play 2H")
    assert not m.view(None).spades_broken
    events = act(m, "play BJ")  # seat 1, void in hearts, trumps with the Big Joker
    assert m.view(None).spades_broken
    assert of_type(events, "TrickWon")[0].winner == 1


@pytest.mark.parametrize("spades_broken", ["any_spade", "trumping"])
def test_controlled_deals_play_out_under_either_spades_broken_rule(spades_broken: str) -> None:
    """The rule tests' helper: its scripts are legal whatever breaks spades."""
    rules = preset("classic", spades_broken=spades_broken)
    for tricks in ([4, 3, 3, 3], [13, 0, 0, 0], [0, 1, 10, 2], [6, 1, 6, 0], [0, 0, 0, 13]):
        for dealer in range(4):
            d, script = controlled_deal(tricks)
            m = Match(rules, deals=[d], dealer=dealer)
            bid_all(m, [1, 1, 1, 1])
            events = play_tricks(m, script)
            (scored,) = of_type(events, "HandScored")
            assert list(scored.tricks) == tricks
