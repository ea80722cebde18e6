"""Ratings from finished matches (spades_server.rating), checked against the
``openskill`` package called directly on the same results."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openskill.models import PlackettLuce
from server_harness import (
    Deadline,
    Server,
    choose,
    create_match,
    get_view,
    seats_to_act,
    submit,
    wait_until,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.rating import (
    DEFAULT,
    Participant,
    Rating,
    RatingError,
    RatingRules,
    ranks,
    rate,
    seat_turns,
)
from spades_server.seats import CONTROL_HUMAN, CONTROL_STAND_IN
from spades_server.store.sqlite import SqliteStore

MODEL = PlackettLuce()


def direct(teams: list[list[Rating]], team_ranks: list[int]) -> list[list[tuple[float, float]]]:
    rated = MODEL.rate(
        [[MODEL.rating(mu=r.mu, sigma=r.sigma) for r in team] for team in teams], ranks=team_ranks
    )
    return [[(r.mu, r.sigma) for r in team] for team in rated]


def pair(r: Rating) -> tuple[float, float]:
    return (r.mu, r.sigma)


def test_a_partnership_match_rates_two_teams_of_two_as_openskill_does() -> None:
    known = {"a": Rating(30.0, 5.0), "b": Rating(22.0, 7.0), "c": Rating(27.0, 4.0)}
    table = [
        Participant("a", side=0, score=520),
        Participant("c", side=1, score=310),
        Participant("b", side=0, score=520),
        Participant("d", side=1, score=310),  # new: the default rating
    ]
    got = rate(known, table)
    want = direct([[known["a"], known["b"]], [known["c"], DEFAULT]], [1, 2])
    assert [pair(got["a"]), pair(got["b"])] == want[0]
    assert [pair(got["c"]), pair(got["d"])] == want[1]
    assert got["a"].mu > known["a"].mu and got["c"].mu < known["c"].mu


def test_cutthroat_rates_everyone_against_everyone_and_equal_scores_share_a_rank() -> None:
    table = [Participant(p, side=i, score=s) for i, (p, s) in enumerate(
        [("w", 250), ("x", 310), ("y", 250), ("z", -40)]
    )]  # fmt: skip
    got = rate({}, table)
    want = direct([[DEFAULT]] * 4, [2, 1, 2, 4])
    assert [pair(got[p]) for p in "wxyz"] == [team[0] for team in want]
    assert got["w"] == got["y"]  # tied, from the same rating
    assert got["x"].mu > got["w"].mu > got["z"].mu


def test_a_leaver_is_ranked_below_everyone_and_the_partner_is_rated_as_played() -> None:
    known = {p: Rating(25.0 + i, 6.0) for i, p in enumerate("abcd")}
    played = [
        Participant("a", side=0, score=500, turns=52, bot_turns=40),  # left: 77 %
        Participant("b", side=0, score=500, turns=52, bot_turns=0),
        Participant("c", side=1, score=200, turns=52),
        Participant("d", side=1, score=200, turns=52),
    ]
    got = rate(known, played)
    stayed = rate(known, [Participant(p.player, p.side, p.score, p.turns) for p in played])
    for p in "bcd":  # as if nobody had left
        assert got[p] == stayed[p]
    alone_last = direct([[known["b"]], [known["c"], known["d"]], [known["a"]]], [1, 2, 3])
    assert pair(got["a"]) == alone_last[2][0]
    assert got["a"].mu < known["a"].mu  # their side won, they still lose rating


def test_a_human_who_came_back_is_no_leaver() -> None:
    rules = RatingRules(leaver_share=0.5)
    came_back = Participant("a", side=0, score=500, turns=52, bot_turns=26)  # exactly half
    assert not rules.left(came_back)
    assert rules.left(Participant("a", side=0, score=500, turns=52, bot_turns=27))
    assert not rules.left(Participant("a", side=0, score=500, turns=0, bot_turns=0))


def test_the_leaderboard_order_is_the_conservative_rating() -> None:
    sure, unsure = Rating(28.0, 1.0), Rating(31.0, 3.0)
    assert sure.conservative == 25.0 and unsure.conservative == 22.0
    assert DEFAULT.conservative == pytest.approx(0.0)


@pytest.mark.parametrize(
    "table, why",
    [
        ([Participant("a", 0, 1), Participant("a", 1, 2)], "twice"),
        ([Participant("a", 0, 1), Participant("b", 0, 1)], "two sides"),
        ([Participant("a", 0, 1), Participant("b", 0, 2), Participant("c", 1, 0)], "scores"),
        ([Participant("a", 0, 1, turns=3, bot_turns=4), Participant("b", 1, 0)], "bot_turns"),
    ],
)
def test_a_match_that_cannot_be_rated_is_refused(table: list[Participant], why: str) -> None:
    with pytest.raises(RatingError, match=why):
        rate({}, table)


def test_a_leaver_share_outside_0_to_1_is_refused() -> None:
    for share in (-0.1, 1.5):
        with pytest.raises(RatingError, match="leaver_share"):
            RatingRules(leaver_share=share)


@given(st.lists(st.integers(-500, 700), min_size=2, max_size=8))
def test_ranks_put_the_highest_score_first_and_ties_together(scores: list[int]) -> None:
    got = ranks(scores)
    for s, r in zip(scores, got, strict=True):
        assert r == 1 + sum(o > s for o in scores)
    assert min(got) == 1
    pairs = list(zip(scores, got, strict=True))
    assert all((a > b) == (ra < rb) for a, ra in pairs for b, rb in pairs)


@given(
    st.lists(st.integers(-300, 600), min_size=2, max_size=2),
    st.lists(st.floats(10, 40), min_size=4, max_size=4),
)
def test_a_winning_side_never_loses_mu_and_no_one_grows_less_certain_than_drift(
    scores: list[int], mus: list[float]
) -> None:
    known = {p: Rating(mu, 5.0) for p, mu in zip("abcd", mus, strict=True)}
    table = [
        Participant("a", 0, scores[0]),
        Participant("b", 0, scores[0]),
        Participant("c", 1, scores[1]),
        Participant("d", 1, scores[1]),
    ]
    got = rate(known, table)
    for p in "abcd":  # the model adds its drift (tau) before a game and learns from it
        assert got[p].sigma <= math.hypot(known[p].sigma, MODEL.tau)
    if scores[0] > scores[1]:
        assert got["a"].mu >= known["a"].mu and got["c"].mu <= known["c"].mu


def test_turns_a_stand_in_played_are_counted_from_the_log() -> None:
    # seat 0 leaves before its second turn (seq 20), a bot plays seqs 25 and 30,
    # then seat 0 acts itself (its action's first event takes the seat back);
    # seat 2's timer runs out (the stand-in's move begins with taking the seat).
    controls = [(20, 0, CONTROL_STAND_IN), (35, 0, CONTROL_HUMAN), (36, 2, CONTROL_STAND_IN)]
    actions = [(10, 0), (12, 1), (25, 0), (30, 0), (35, 0), (36, 2), (40, 1)]
    assert seat_turns(controls, actions, 4) == [(4, 2), (2, 0), (1, 1), (0, 0)]


def test_a_matchs_stored_log_gives_each_seats_turns_and_the_stand_ins(
    make_server: Callable[..., Server],
) -> None:
    """Ratings are recomputed from the store alone: seat 0 lets its turn timer
    run out, a bot stands in for two of its turns, then seat 0 acts itself."""
    srv = make_server("--bot-delay-ms", "1000", "--actions-per-second", "1000")
    table = create_match(srv.stub, seed=3, turn_timer_ms=300)
    bot_turns = 0
    d = Deadline(60)
    while True:
        d.check("seat 0 to be stood in for twice, then to act itself")
        view = get_view(srv.stub, table, 0)
        to_act = seats_to_act(view)
        if not to_act:
            time.sleep(0.02)
            continue
        seat = to_act[0]
        if seat == 0 and bot_turns < 2:  # the timer runs out, a bot plays the turn
            wait_until(lambda: seats_to_act(get_view(srv.stub, table, 0))[:1] != [0], "a bot")
            bot_turns += 1
            continue
        submit(srv.stub, table, seat, choose(get_view(srv.stub, table, seat)))
        if seat == 0:
            break
    assert get_view(srv.stub, table, 0).seats[0].control == CONTROL_HUMAN  # taken back
    assert srv.stop() == 0

    async def stored() -> list[tuple[int, int]]:
        store = await SqliteStore.open(srv.db)
        loaded = await store.load_match(table.match_id)
        await store.close()
        controls = []
        for e in loaded.events:
            ev = pb.MatchEvent.FromString(e.payload)
            if ev.HasField("seat_control_changed"):
                c = ev.seat_control_changed
                controls.append((e.seq, c.seat, int(c.control)))
        return seat_turns(controls, [(a.first_seq, a.seat) for a in loaded.actions], 4)

    turns = asyncio.run(stored())
    assert turns[0] == (bot_turns + 1, bot_turns)  # two by the stand-in, then its own
    assert all(bot == 0 for _, bot in turns[1:])
