"""RULES.md §1 Scoring (and the bag-rule and set-penalty variants of §3).

Whole hands are played from controlled deals (seat s takes exactly the
tricks asked for); ``score_hand`` is also checked directly."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from rules_helpers import controlled_match, of_type, play_hand

from spades_engine import Match, Ruleset, preset
from spades_engine.scoring import score_hand


def play(
    rules: Ruleset, hands: Sequence[tuple[Sequence[int], Sequence[int]]]
) -> tuple[Match, list[object]]:
    """Play hands given as (bids by seat, tricks by seat); returns the match and
    the HandScored events."""
    m, scripts = controlled_match(rules, [t for _, t in hands])
    scored = []
    for (bids, _), script in zip(hands, scripts, strict=True):
        scored += of_type(play_hand(m, bids, script), "HandScored")
    return m, scored


def test_a_made_contract_scores_ten_per_bid_plus_one_per_overtrick_as_bags() -> None:
    m, [hs] = play(preset("classic"), [([3, 2, 3, 2], [4, 3, 3, 3])])
    a, b = hs.sides
    assert (a.contract, a.tricks, a.contract_points, a.bags_taken) == (6, 7, 61, 1)
    assert (b.contract, b.tricks, b.contract_points, b.bags_taken) == (4, 6, 42, 2)
    assert m.scores == (61, 42)
    assert m.bags == (1, 2)


def test_a_set_contract_loses_ten_per_bid_and_takes_no_bags() -> None:
    m, [hs] = play(preset("classic"), [([5, 3, 4, 3], [4, 3, 3, 3])])
    assert m.scores == (-90, 60)
    assert m.bags == (0, 0)
    assert hs.sides[0].hand_points == -90


def test_a_set_penalty_of_zero_scores_a_broken_contract_as_nothing() -> None:
    m, _ = play(preset("classic", set_penalty="zero"), [([5, 3, 4, 3], [4, 3, 3, 3])])
    assert m.scores == (0, 60)


def test_a_made_nil_scores_100_on_top_of_the_partners_contract() -> None:
    m, [hs] = play(preset("classic"), [([0, 4, 4, 4], [0, 4, 5, 4])])
    assert hs.sides[0].nil_points == 100
    assert m.scores == (100 + 40 + 1, 80)
    assert m.bags == (1, 0)


def test_a_nil_bidders_tricks_count_toward_the_team_and_as_bags() -> None:
    # seat 0 bids nil and takes 2; seat 2 bids 4 and takes 3: the team's 5
    # tricks make the 4 with one bag, and the nil fails.
    m, [hs] = play(preset("classic"), [([0, 4, 4, 3], [2, 4, 3, 4])])
    a = hs.sides[0]
    assert (a.contract, a.tricks, a.bags_taken) == (4, 5, 1)
    assert (a.contract_points, a.nil_points) == (41, -100)
    assert m.scores == (-59, 71)
    assert m.bags == (1, 1)


def test_a_failed_nils_tricks_can_make_the_partners_contract() -> None:
    # seat 2 bids 5 but takes 3: the nil bidder's 2 tricks make the contract
    m, _ = play(preset("classic"), [([0, 3, 5, 3], [2, 4, 3, 4])])
    assert m.scores == (50 - 100, 30 + 30 + 2)
    assert m.bags == (0, 2)


def test_a_failed_nil_while_the_partner_makes_the_contract_alone() -> None:
    m, [hs] = play(preset("classic"), [([0, 3, 6, 3], [1, 3, 7, 2])])
    a = hs.sides[0]
    assert (a.tricks, a.contract_points, a.nil_points, a.hand_points) == (8, 62, -100, -38)
    assert m.scores == (-38, -60)


def test_both_partners_nil_made_and_one_failed() -> None:
    m, [hs] = play(preset("classic"), [([0, 7, 0, 6], [0, 7, 0, 6])])
    assert hs.sides[0].nil_points == 200
    assert m.scores == (200, 130)
    # one of the two takes a trick: that trick is a bag on a contract of 0
    m, [hs] = play(preset("classic"), [([0, 6, 0, 6], [1, 6, 0, 6])])
    a = hs.sides[0]
    assert (a.contract, a.tricks, a.contract_points, a.nil_points) == (0, 1, 1, 0)
    assert m.scores == (1, 120)
    assert m.bags == (1, 0)


def test_bags_reaching_10_cost_100_and_the_remainder_carries() -> None:
    rules = preset("classic")
    m, scored = play(
        rules,
        [
            ([1, 1, 1, 1], [5, 2, 5, 1]),  # A: 10 tricks on 2 -> 8 bags
            ([1, 1, 1, 1], [3, 4, 2, 4]),  # A: 5 tricks on 2 -> 3 more: 11
        ],
    )
    first, second = scored
    assert (first.sides[0].score, first.sides[0].bags) == (28, 8)
    a = second.sides[0]
    assert (a.bags_taken, a.bag_penalty, a.hand_points, a.bags) == (3, -100, -77, 1)
    assert m.scores == (28 - 77, 21 + 26)
    assert m.bags == (1, 7)


def test_five_bag_rule_costs_50_and_can_strike_twice_in_one_hand() -> None:
    rules = preset("classic", bag_rule="5_for_50")
    m, scored = play(
        rules,
        [
            ([1, 1, 1, 1], [3, 4, 3, 3]),  # A 6 on 2: 4 bags; B 7 on 2: 5 bags -> -50
            ([1, 1, 1, 1], [5, 2, 4, 2]),  # A 9 on 2: 4 + 7 = 11 bags -> -100, 1 left
        ],
    )
    first, second = scored
    assert (first.sides[1].bag_penalty, first.sides[1].bags, first.sides[1].score) == (-50, 0, -25)
    a = second.sides[0]
    assert (a.bags_taken, a.bag_penalty, a.bags) == (7, -100, 1)
    assert m.scores == (24 + 27 - 100, -25 + 22)
    assert m.bags == (1, 2)


def test_with_bags_off_overtricks_score_but_never_cost() -> None:
    m, [hs] = play(preset("classic", bag_rule="off"), [([1, 1, 1, 1], [6, 0, 6, 1])])
    assert m.scores == (30, -20)
    assert m.bags == (0, 0)
    assert hs.sides[0].bag_penalty == 0


def test_scores_accumulate_across_hands() -> None:
    m, scored = play(
        preset("classic"),
        [([3, 2, 3, 2], [4, 3, 3, 3]), ([0, 4, 4, 3], [2, 4, 3, 4])],
    )
    assert [tuple(s.score for s in hs.sides) for hs in scored] == [(61, 42), (2, 113)]
    assert m.scores == (2, 113)
    assert m.view(None).results == tuple(hs.sides for hs in scored)


# -- score_hand directly -----------------------------------------------------


def side_totals(rules: Ruleset, bids, tricks, scores=(0, 0), bags=(0, 0), blind=None):  # type: ignore[no-untyped-def]
    blind = blind or [False] * len(bids)
    return [(s.score, s.bags) for s in score_hand(rules, bids, blind, tricks, scores, bags)]


@pytest.mark.parametrize(
    ("bids", "tricks", "scores", "bags", "expected"),
    [
        ((3, 2, 3, 2), (4, 3, 3, 3), (0, 0), (0, 0), [(61, 1), (42, 2)]),
        ((5, 3, 4, 3), (4, 3, 3, 3), (100, 100), (0, 0), [(10, 0), (160, 0)]),
        # exactly 10 bags: -100 and none left
        ((2, 2, 2, 2), (3, 2, 3, 5), (0, 0), (8, 0), [(42 - 100, 0), (43, 3)]),
        # 9 bags stay 9
        ((2, 2, 2, 2), (3, 2, 2, 6), (0, 0), (8, 0), [(41, 9), (44, 4)]),
        # nil made and failed on the same table
        ((0, 0, 6, 6), (0, 1, 6, 6), (0, 0), (0, 0), [(160, 0), (-100 + 61, 1)]),
        # a team taking 0 tricks on a contract of 0 (both nil) scores just the nils
        ((0, 6, 0, 6), (0, 7, 0, 6), (0, 0), (0, 0), [(200, 0), (121, 1)]),
    ],
)
def test_score_hand_classic(bids, tricks, scores, bags, expected) -> None:  # type: ignore[no-untyped-def]
    assert side_totals(preset("classic"), bids, tricks, scores, bags) == expected


def test_score_hand_blind_nil_is_worth_200() -> None:
    rules = preset("polish")
    blind = [False, True, False, False]
    made = side_totals(rules, (4, 0, 4, 4), (4, 0, 5, 4), blind=blind)
    failed = side_totals(rules, (4, 0, 4, 4), (4, 1, 5, 3), blind=blind)
    assert made[1] == (240, 0)
    assert failed[1] == (-200 + 40, 0)


def test_score_hand_five_bag_rule_crossing_twice() -> None:
    rules = preset("classic", bag_rule="5_for_50")
    assert side_totals(rules, (1, 1, 1, 1), (5, 2, 4, 2), bags=(4, 0)) == [
        (27 - 100, 1),
        (22, 2),
    ]


def test_score_hand_thirteen_bid_doubles_and_its_failure_takes_13_bags() -> None:
    on = preset("classic", thirteen_bid=True)
    off = preset("classic")
    assert side_totals(on, (7, 1, 6, 1), (7, 0, 6, 0))[0] == (260, 0)
    assert side_totals(off, (7, 1, 6, 1), (7, 0, 6, 0))[0] == (130, 0)
    assert side_totals(on, (13, 1, 0, 1), (13, 0, 0, 0))[0] == (2 * (130 + 100), 0)
    # a 13 made of 7 + 6 that fails is just set: no extra bags
    assert side_totals(on, (7, 1, 6, 1), (7, 1, 5, 0))[0] == (-130, 0)
    assert side_totals(off, (7, 1, 6, 1), (7, 1, 5, 0))[0] == (-130, 0)
    # a player's own 13 that fails takes 13 bags, whatever the side's contract
    assert side_totals(on, (13, 1, 1, 1), (12, 0, 0, 1))[0] == (-140 - 100, 3)
    assert side_totals(on, (13, 1, 0, 1), (12, 0, 0, 1))[0] == (-130 + 100 - 100, 3)
    assert side_totals(off, (13, 1, 1, 1), (12, 0, 0, 1))[0] == (-140, 0)
    # both partners bidding 13, the side taking fewer than 13: 13 bags each;
    # the side taking all 13 is set on its 26 but takes no bags
    assert side_totals(on, (13, 0, 13, 0), (6, 1, 6, 0))[0] == (-260 - 200, 6)
    assert side_totals(on, (13, 0, 13, 0), (6, 0, 7, 0))[0] == (-260, 0)


def test_score_hand_cutthroat_scores_every_player_alone() -> None:
    rules = preset("classic", partnerships=False)
    got = side_totals(rules, (4, 3, 2, 4), (4, 3, 3, 3), (0, 0, 0, 0), (0, 0, 0, 0))
    assert got == [(40, 0), (30, 0), (21, 1), (-40, 0)]


# -- the thirteen bid (RULES.md §3), whole hands -----------------------------


def test_a_players_13_failing_inside_a_side_contract_of_14_takes_13_bags() -> None:
    m, [hs] = play(preset("bulgarian"), [([13, 1, 1, 1], [11, 0, 1, 1])])
    a = hs.sides[0]
    assert (a.contract, a.tricks, a.contract_points, a.bags_taken) == (14, 12, -140, 13)
    assert (a.bag_penalty, a.hand_points, a.bags) == (-100, -240, 3)
    assert m.scores == (-240, -20)
    assert m.bags == (3, 0)


def test_a_13_of_seven_and_six_failing_takes_no_extra_bags() -> None:
    m, [hs] = play(preset("bulgarian"), [([7, 1, 6, 1], [7, 1, 5, 0])])
    assert (hs.sides[0].bags_taken, hs.sides[0].bag_penalty) == (0, 0)
    assert m.scores == (-130, -20)
    assert m.bags == (0, 0)


def test_a_13_made_by_one_player_scores_double() -> None:
    m, [hs] = play(preset("bulgarian"), [([13, 1, 0, 1], [13, 0, 0, 0])])
    a = hs.sides[0]
    assert (a.contract_points, a.nil_points, a.hand_points) == (130, 100, 460)
    assert m.scores == (460, -20)
    m, _ = play(preset("bulgarian", thirteen_bid=False), [([13, 1, 0, 1], [13, 0, 0, 0])])
    assert m.scores == (230, -20)


def test_a_cutthroat_13_failing_takes_13_bags_for_the_player_alone() -> None:
    rules = preset("bulgarian", partnerships=False)
    m, [hs] = play(rules, [([13, 1, 1, 1], [10, 1, 1, 1])])
    p0 = hs.sides[0]
    assert (p0.contract, p0.tricks, p0.bags_taken, p0.bag_penalty) == (13, 10, 13, -100)
    assert m.scores == (-230, 10, 10, 10)
    assert m.bags == (3, 0, 0, 0)
    # the same player taking all 13 scores double
    m, _ = play(rules, [([13, 1, 1, 1], [13, 0, 0, 0])])
    assert m.scores == (260, -10, -10, -10)


# -- trick-count scoring (RULES.md §3.1, seed 003's own table) ----------------

TRICKS = preset("classic", scoring="tricks")


def test_trick_count_made_scores_the_contract_and_overtricks_are_free() -> None:
    m, [hs] = play(TRICKS, [([3, 2, 3, 2], [4, 3, 3, 3])])
    a, b = hs.sides
    assert (a.contract, a.tricks, a.contract_points, a.bags_taken, a.hand_points) == (6, 7, 6, 0, 6)
    assert (b.contract, b.tricks, b.contract_points, b.bags_taken, b.hand_points) == (4, 6, 4, 0, 4)
    assert m.scores == (6, 4)
    assert m.bags == (0, 0)


def test_trick_count_set_scores_nothing_and_takes_the_shortfall_as_bags() -> None:
    m, [hs] = play(TRICKS, [([5, 3, 4, 3], [4, 3, 3, 3])])
    a = hs.sides[0]
    assert (a.contract, a.tricks, a.contract_points, a.bags_taken, a.bag_penalty) == (
        9,
        7,
        0,
        2,
        -2,
    )
    assert m.scores == (-2, 6)
    assert m.bags == (2, 0)


def test_trick_count_nil_and_blind_nil_score_as_classic() -> None:
    m, [hs] = play(TRICKS, [([0, 4, 4, 4], [0, 4, 5, 4])])
    assert (hs.sides[0].nil_points, hs.sides[0].contract_points) == (100, 4)
    assert m.scores == (104, 8)
    # a failed nil's tricks count for the side, and the contract of 0 of two nils is made
    assert side_totals(TRICKS, (0, 6, 0, 6), (1, 6, 0, 6)) == [(0, 0), (12, 0)]
    blind = [False, True, False, False]
    rules = preset("classic", scoring="tricks", blind_nil=True)
    assert side_totals(rules, (4, 0, 4, 4), (4, 0, 5, 4), blind=blind)[1] == (204, 0)
    assert side_totals(rules, (4, 0, 4, 4), (4, 1, 5, 3), blind=blind)[1] == (-200 + 4, 0)


def test_trick_count_bags_crossing_10() -> None:
    # bags never reset; a bag costs 1 while the running total (with it) is at
    # most 10, and 10 once the total is above 10
    m, scored = play(
        TRICKS,
        [
            ([6, 1, 6, 1], [5, 1, 3, 4]),  # A: 8 on 12 -> 4 bags, -4
            ([6, 1, 6, 1], [4, 1, 4, 4]),  # A: 8 on 12 -> 4 more: 8 bags, -4
            ([6, 1, 6, 1], [4, 1, 3, 5]),  # A: 7 on 12 -> 5 more: bags 9, 10 at 1, 11-13 at 10
        ],
    )
    assert [(hs.sides[0].bag_penalty, hs.sides[0].bags) for hs in scored] == [
        (-4, 4),
        (-4, 8),
        (-(1 + 1 + 10 + 10 + 10), 13),
    ]
    assert m.scores[0] == -4 - 4 - 32
    # above 10 the next bag costs 10 at once (beside a made nil: +100)
    assert side_totals(TRICKS, (3, 1, 0, 1), (2, 1, 0, 10), bags=(13, 0)) == [
        (100 - 10, 14),
        (2, 0),
    ]
    # exactly reaching 10 costs 1 a bag; the 10th is the last cheap one
    assert side_totals(TRICKS, (3, 1, 3, 1), (2, 1, 1, 9), bags=(7, 0)) == [(-3, 10), (2, 0)]
    assert side_totals(TRICKS, (3, 1, 3, 1), (2, 1, 1, 9), bags=(8, 0)) == [(-12, 11), (2, 0)]


def test_trick_count_with_the_thirteen_bid() -> None:
    rules = preset("bulgarian", scoring="tricks")
    # a made 13 scores double: 26, and a nil beside it is doubled too
    m, [hs] = play(rules, [([7, 1, 6, 1], [7, 0, 6, 0])])
    assert (hs.sides[0].contract_points, hs.sides[0].hand_points) == (13, 26)
    assert m.scores == (26, -2)
    assert side_totals(rules, (13, 1, 0, 1), (13, 0, 0, 0))[0] == (2 * (13 + 100), 0)
    # a player's failed 13 adds 13 bags to the shortfall: 14 - 12 = 2, + 13 = 15
    m, [hs] = play(rules, [([13, 1, 1, 1], [11, 0, 1, 1])])
    a = hs.sides[0]
    assert (a.contract_points, a.bags_taken, a.bag_penalty, a.bags) == (0, 15, -(10 + 50), 15)
    # 7 + 6 failing: only the shortfall
    assert side_totals(rules, (7, 1, 6, 1), (7, 1, 5, 0))[0] == (-1, 1)
    # cutthroat: the player alone
    alone = preset("bulgarian", scoring="tricks", partnerships=False)
    assert side_totals(alone, (13, 1, 1, 1), (10, 1, 1, 1), (0,) * 4, (0,) * 4) == [
        (-(10 + 60), 16),
        (1, 0),
        (1, 0),
        (1, 0),
    ]


def test_the_bulgarian_preset_keeps_classic_scoring() -> None:
    m, _ = play(preset("bulgarian"), [([3, 2, 3, 2], [4, 3, 3, 3])])
    assert m.scores == (61, 42)
