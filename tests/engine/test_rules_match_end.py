"""RULES.md §1 End of the game: checked at the end of a hand; 500 or more, or
-200 or less; the higher score wins; a tie plays another hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from rules_helpers import controlled_match, of_type, play_hand, reject

from spades_engine import Bid, Match, Phase, Reason, Ruleset, preset
from spades_engine.events import Event
from spades_engine.scoring import match_winner

Hand = tuple[Sequence[int], Sequence[int]]  # (bids by seat, tricks by seat)


def play(rules: Ruleset, hands: Sequence[Hand]) -> tuple[Match, list[Event]]:
    m, scripts = controlled_match(rules, [t for _, t in hands])
    events: list[Event] = []
    for (bids, _), script in zip(hands, scripts, strict=True):
        assert not m.is_over
        events += play_hand(m, bids, script)
    return m, events


# seat 0 nil, seat 2 bids and takes 13; team B bids 1 + 1 and takes nothing
BIG: Hand = ([0, 1, 13, 1], [0, 0, 13, 0])  # A +230, B -20
TO_500: Hand = ([2, 5, 2, 4], [2, 5, 2, 4])  # A +40, B +90


def test_the_game_ends_when_a_team_reaches_exactly_500() -> None:
    m, events = play(preset("classic"), [BIG, BIG, TO_500])
    assert m.scores == (500, 50)
    assert m.is_over
    assert m.phase is Phase.MATCH_OVER
    assert m.winner == 0
    (ended,) = of_type(events, "MatchEnded")
    assert (ended.winner, ended.scores, ended.hands_played) == (0, (500, 50), 3)
    assert str(ended.audience) == "everyone"
    assert all(m.legal_actions(s) == [] for s in range(4))
    assert m.to_act == -1


def test_one_point_short_of_the_target_the_game_goes_on() -> None:
    m, events = play(preset("classic", target_score=501), [BIG, BIG, TO_500])
    assert m.scores == (500, 50)
    assert not m.is_over
    assert of_type(events, "MatchEnded") == []
    assert m.phase is Phase.BIDDING
    assert m.hand_number == 3


def test_the_game_is_not_over_in_the_middle_of_a_hand() -> None:
    m, scripts = controlled_match(preset("classic"), [BIG[1], BIG[1], TO_500[1]])
    play_hand(m, BIG[0], scripts[0])
    play_hand(m, BIG[0], scripts[1])
    play_hand(m, TO_500[0], scripts[2][:12])  # 460 + the 40 about to be made
    assert not m.is_over
    assert m.scores == (460, -40)


SET_10: Hand = ([5, 5, 5, 5], [5, 1, 5, 2])  # A +100, B -100


def test_the_game_ends_when_a_team_falls_to_exactly_minus_200() -> None:
    m, events = play(preset("classic"), [SET_10, SET_10])
    assert m.scores == (200, -200)
    assert m.is_over
    assert m.winner == 0
    (ended,) = of_type(events, "MatchEnded")
    assert ended.hands_played == 2


@pytest.mark.parametrize("mercy", [-201, None])
def test_without_reaching_the_mercy_score_the_game_goes_on(mercy: int | None) -> None:
    m, _ = play(preset("classic", mercy_score=mercy), [SET_10, SET_10])
    assert m.scores == (200, -200)
    assert not m.is_over
    assert m.hand_number == 2


# A: nil + 7 of 7 (+170); B: nil + 6 of 6 (+160), and the mirror image
NILS_A: Hand = ([0, 0, 7, 6], [0, 0, 7, 6])
NILS_B: Hand = ([0, 0, 6, 7], [0, 0, 6, 7])
# A bids and takes 7 (+70), B 6 (+60), and the mirror image
PLAIN_A: Hand = ([4, 3, 3, 3], [4, 3, 3, 3])
PLAIN_B: Hand = ([3, 4, 3, 3], [3, 4, 3, 3])


@pytest.mark.parametrize(
    ("hands", "winner", "final"),
    [
        ([NILS_A, NILS_A, PLAIN_A, NILS_A], 0, (580, 540)),
        ([NILS_B, NILS_B, PLAIN_B, NILS_B], 1, (540, 580)),
    ],
)
def test_both_teams_over_500_in_one_hand_the_higher_wins(
    hands: list[Hand], winner: int, final: tuple[int, int]
) -> None:
    m, scripts = controlled_match(preset("classic"), [t for _, t in hands])
    for (bids, _), script in zip(hands[:3], scripts, strict=False):
        play_hand(m, bids, script)
    assert max(m.scores) < 500
    assert not m.is_over
    events = play_hand(m, hands[3][0], scripts[3])
    assert m.scores == final
    assert min(m.scores) >= 500
    assert m.winner == winner
    assert of_type(events, "MatchEnded")[0].winner == winner


def test_a_tie_at_or_over_500_plays_another_hand() -> None:
    hands: list[Hand] = [
        NILS_A,  # 170 - 160
        NILS_B,  # 330 - 330 (a tie under 500: play on anyway)
        ([0, 0, 6, 6], [0, 0, 7, 6]),  # 491 - 490
        ([3, 3, 3, 3], [3, 4, 3, 3]),  # 551 - 551
        PLAIN_A,  # 621 - 611
    ]
    m, scripts = controlled_match(preset("classic"), [t for _, t in hands])
    for (bids, _), script in zip(hands[:3], scripts, strict=False):
        play_hand(m, bids, script)
    assert m.scores == (491, 490)
    events = play_hand(m, hands[3][0], scripts[3])
    assert m.scores == (551, 551)
    assert not m.is_over
    assert of_type(events, "MatchEnded") == []
    (started,) = of_type(events, "HandStarted")
    assert started.hand_number == 4
    assert m.phase is Phase.BIDDING
    assert m.legal_actions(m.to_act)[0] == Bid(0)
    events = play_hand(m, hands[4][0], scripts[4])
    assert m.scores == (621, 611)
    assert m.winner == 0
    assert of_type(events, "MatchEnded")[0].hands_played == 5


def test_a_finished_match_refuses_every_action() -> None:
    m, _ = play(preset("classic"), [SET_10, SET_10])
    for seat in range(4):
        reject(m, seat, Bid(3), Reason.MATCH_OVER)


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ((499, 0), None),
        ((500, 0), 0),
        ((0, 500), 1),
        ((510, 520), 1),
        ((510, 510), None),
        ((-199, 0), None),
        ((-200, 0), 1),
        ((-200, -200), None),
        ((-250, 600), 1),
        ((100, 100, 500, 499), 2),  # cutthroat: the highest of four
        ((100, 500, 500, 499), None),  # a tie for the highest plays on
        ((-200, 30, 30, 10), None),  # mercy reached, but the top is tied
        ((-200, 30, 40, 10), 2),
    ],
)
def test_match_winner(scores: tuple[int, ...], expected: int | None) -> None:
    rules = preset("classic", partnerships=len(scores) == 2)
    assert match_winner(rules, scores) == expected


def test_match_winner_without_mercy_and_with_another_target() -> None:
    assert match_winner(preset("classic", mercy_score=None), (-1000, 0)) is None
    assert match_winner(preset("classic", target_score=200), (200, 150)) == 0
    assert match_winner(preset("classic", target_score=200), (199, 150)) is None
