"""Rated play against a real server: rated tables and quick play, the ratings
a finished match gives (checked against openskill called directly), profiles,
leaderboard pages, and every refusal with its reason (issue 26)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import grpc
import lobby_harness
import pytest
from lobby_harness import (
    LOBBY_FLAGS,
    Player,
    bearer,
    play_out,
    player,
    state_name,
    submit,
    sure_bid,
    view,
)
from openskill.models import PlackettLuce
from server_harness import Deadline, Server, expect_failure
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc

# One hand ends the match: a side reaches 1 point or falls to -1.
ONE_HAND = pb.Ruleset(preset="classic", target_score=1, mercy_score=-1)
FLAGS = (*LOBBY_FLAGS, "--rating-min-games", "1", "--quickplay-bot-wait-seconds", "1")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("rated"), *FLAGS)
    srv.start()
    yield srv
    assert srv.stop() == 0, srv.log_tail()


def seat_four(server: Server, rated: bool = True) -> tuple[lpb.Table, list[Player], list[str]]:
    return lobby_harness.seat_four([server], ONE_HAND, rated)


def profile(asker: Player, player_id: str = "") -> lpb.PlayerProfile:
    return asker.call("GetProfile", lpb.GetProfileRequest(player_id=player_id)).profile  # type: ignore[no-any-return]


def wait_profile(asker: Player, player_id: str, games: int) -> lpb.PlayerProfile:
    d = Deadline(20)
    while True:
        try:
            found = profile(asker, player_id)
            if found.with_humans.matches + found.with_bots.matches >= games:
                return found
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.NOT_FOUND:
                raise
        d.check(f"{player_id}'s result to be recorded")


def test_a_rated_match_rates_its_sides_as_openskill_does(server: Server) -> None:
    table, players, tokens = seat_four(server)
    assert state_name(table) == "TABLE_STATE_STARTED"
    assert table.rated and table.rating_pool == "classic"
    end = play_out(server, table.table_id, tokens, choose=sure_bid)
    scores = list(end.scores)
    profiles = [wait_profile(players[0], p.id, 1) for p in players]

    model = PlackettLuce()
    teams = [[model.rating(), model.rating()], [model.rating(), model.rating()]]
    ranks = [1 + sum(o > s for o in scores) for s in scores]
    rated = model.rate(teams, ranks=ranks)
    for seat, found in enumerate(profiles):
        (rating,) = found.ratings
        expected = rated[seat % 2][seat // 2]
        assert rating.pool == "classic" and rating.games == 1
        assert rating.mu == pytest.approx(expected.mu)
        assert rating.sigma == pytest.approx(expected.sigma)
        assert rating.conservative == pytest.approx(expected.mu - 3 * expected.sigma)
        won = scores[seat % 2] == max(scores)
        assert (rating.wins, rating.losses) == (int(won), int(not won))
        assert found.with_humans.matches == 1 and found.with_bots.matches == 0
        assert found.with_humans.hands >= 1
        assert found.name == players[seat].id.title()
        assert rating.rank >= 1


def test_a_players_record_counts_their_hands(server: Server) -> None:
    table, players, tokens = seat_four(server, rated=False)
    assert not table.rated and table.rating_pool == ""
    end = play_out(server, table.table_id, tokens, choose=sure_bid)
    found = wait_profile(players[0], players[1].id, 1)
    assert not found.ratings, "an unrated match moves no rating"
    stats = found.with_humans
    # Every seat looked at its cards and bid 3, every hand: each side's
    # contract was 6.
    assert stats.matches == 1 and stats.hands >= 1
    assert stats.wins == int(end.scores[1] == max(end.scores))  # seat 1 plays for side 1
    assert stats.mean_bid == 3.0
    assert stats.contracts == stats.hands == stats.contracts_made + stats.sets
    assert stats.contracts_made_share == pytest.approx(stats.contracts_made / stats.hands)
    assert stats.bags_per_hand == pytest.approx(stats.bags / stats.hands)
    tricks = stats.mean_tricks * stats.hands
    assert tricks == pytest.approx(round(tricks))  # whole tricks, summed
    assert stats.nils_bid == stats.blind_nils_bid == 0


def test_a_rated_table_refuses_bot_seats_and_bots_filling_it_make_it_unrated(
    server: Server,
) -> None:
    host = player(server, "host")
    failure = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        host.call,
        "OpenTable",
        lpb.OpenTableRequest(ruleset=ONE_HAND, rated=True, bot_seats=[1]),
    )
    assert failure.reason == "RATED_WITHOUT_BOTS" and "bot_seats" in failure.fields
    opened = host.call("OpenTable", lpb.OpenTableRequest(ruleset=ONE_HAND, rated=True))
    assert opened.table.rated
    started = host.call("StartTable", lpb.StartTableRequest(table_id=opened.table.table_id))
    assert state_name(started.table) == "TABLE_STATE_STARTED"
    assert not started.table.rated, "bots took the open seats: not rated"
    play_out(server, opened.table.table_id, [opened.seat_token], choose=sure_bid)
    found = wait_profile(host, host.id, 1)
    assert found.with_bots.matches == 1 and found.with_humans.matches == 0
    assert not found.ratings


def test_rated_and_unrated_tickets_wait_in_different_queues(server: Server) -> None:
    rules = pb.Ruleset(preset="classic", target_score=1, mercy_score=-1, blind_nil=False)
    rated = [player(server, f"q{i}") for i in range(4)]
    casual = player(server, "casual")
    casual_ticket = casual.call("QuickPlay", lpb.QuickPlayRequest(ruleset=rules)).ticket
    tickets = [
        p.call("QuickPlay", lpb.QuickPlayRequest(ruleset=rules, rated=True)).ticket for p in rated
    ]
    assert all(t.rated for t in tickets) and not casual_ticket.rated
    placed = [
        p.call(
            "GetTicket",
            lpb.GetTicketRequest(ticket_id=t.ticket_id, after_version=t.version, wait_ms=5000),
        ).ticket
        for p, t in zip(rated, tickets, strict=True)
    ]
    d = Deadline(20)
    while not all(t.state == lpb.TICKET_STATE_PLACED for t in placed):
        d.check("the rated tickets to be placed")
        placed = [
            p.call("GetTicket", lpb.GetTicketRequest(ticket_id=t.ticket_id, wait_ms=500)).ticket
            for p, t in zip(rated, tickets, strict=True)
        ]
    tables = {t.placement.match_id for t in placed}
    assert len(tables) == 1, "the four rated players sit at one table"
    table = placed[0].placement.table
    assert table.rated and table.rating_pool == "classic"
    assert casual.id not in {s.player_id for s in table.seats}
    # The casual ticket, alone in its queue, is filled with bots: not rated.
    d = Deadline(20)
    while True:
        mine = casual.call(
            "GetTicket", lpb.GetTicketRequest(ticket_id=casual_ticket.ticket_id, wait_ms=500)
        ).ticket
        if mine.state == lpb.TICKET_STATE_PLACED:
            break
        d.check("the casual ticket to be placed with bots")
    assert not mine.placement.table.rated
    assert mine.placement.match_id not in tables


def test_the_leaderboard_pages_forward_and_back_and_around_a_player(server: Server) -> None:
    for _ in range(2):  # eight more rated players at least
        table, players, tokens = seat_four(server)
        play_out(server, table.table_id, tokens, choose=sure_bid)
        for p in players:
            wait_profile(players[0], p.id, 1)
    asker = player(server, "reader")
    top = asker.call("GetLeaderboard", lpb.GetLeaderboardRequest(page_size=3))
    assert top.pool == "classic" and top.total_players >= 8 and top.min_games == 1
    assert [e.rank for e in top.entries] == [1, 2, 3]
    assert top.next_page_token and not top.previous_page_token
    seen = list(top.entries)
    token = top.next_page_token
    while token:
        page = asker.call(
            "GetLeaderboard", lpb.GetLeaderboardRequest(page_size=3, page_token=token)
        )
        assert page.previous_page_token
        seen += page.entries
        token = page.next_page_token
    assert [e.rank for e in seen] == list(range(1, len(seen) + 1))
    assert len({e.player_id for e in seen}) == len(seen) == top.total_players
    conservative = [e.rating.conservative for e in seen]
    assert conservative == sorted(conservative, reverse=True)
    # Back from the last page to the one before it.
    back = asker.call(
        "GetLeaderboard",
        lpb.GetLeaderboardRequest(page_size=3, page_token=page.previous_page_token),
    )
    assert [e.player_id for e in back.entries] == [
        e.player_id for e in seen[-len(page.entries) - 3 : -len(page.entries)]
    ]
    # The page holding a player.
    someone = seen[4]
    around = asker.call(
        "GetLeaderboard", lpb.GetLeaderboardRequest(page_size=3, around_player_id=someone.player_id)
    )
    assert someone.player_id in [e.player_id for e in around.entries]
    assert around.entries[0].rank == 4
    (rating,) = profile(asker, someone.player_id).ratings
    assert rating.rank == someone.rank


def test_bad_leaderboard_and_profile_requests_are_refused(server: Server) -> None:
    asker = player(server, "bad")

    def board(**kw: object) -> object:
        return asker.call("GetLeaderboard", lpb.GetLeaderboardRequest(**kw))  # type: ignore[arg-type]

    cases = [
        (grpc.StatusCode.NOT_FOUND, "POOL_NOT_FOUND", {"pool": "chess"}),
        (grpc.StatusCode.INVALID_ARGUMENT, "BAD_POOL", {"pool": "Classic!"}),
        (grpc.StatusCode.INVALID_ARGUMENT, "BAD_PAGE_TOKEN", {"page_token": "bm90IG91cnM"}),
        (grpc.StatusCode.INVALID_ARGUMENT, "BAD_PAGE_TOKEN", {"page_token": "x" * 300}),
        (grpc.StatusCode.INVALID_ARGUMENT, "BAD_PAGE_SIZE", {"page_size": 201}),
        (grpc.StatusCode.INVALID_ARGUMENT, "BAD_PAGE_SIZE", {"page_size": -1}),
        (grpc.StatusCode.NOT_FOUND, "PLAYER_NOT_RATED", {"around_player_id": "nobody-at-all"}),
        (
            grpc.StatusCode.INVALID_ARGUMENT,
            "TOKEN_AND_PLAYER",
            {"around_player_id": "x", "page_token": "y"},
        ),
    ]
    for code, reason, kw in cases:
        assert expect_failure(code, board, **kw).reason == reason, kw
    failure = expect_failure(grpc.StatusCode.NOT_FOUND, profile, asker, "nobody-at-all")
    assert failure.reason == "PLAYER_NOT_FOUND"
    failure = expect_failure(grpc.StatusCode.NOT_FOUND, profile, asker)
    assert failure.reason == "PLAYER_NOT_FOUND", "no empty profile for a player with no match"
    failure = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, profile, asker, "p" * 129)
    assert failure.reason == "BAD_PLAYER_ID"
    # Another pool's token is not this pool's.
    table, players, tokens = seat_four(server)
    play_out(server, table.table_id, tokens, choose=sure_bid)
    wait_profile(asker, players[3].id, 1)
    top = asker.call("GetLeaderboard", lpb.GetLeaderboardRequest(page_size=1))
    assert top.next_page_token
    failure = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT, board, pool="german", page_token=top.next_page_token
    )
    assert failure.reason == "BAD_PAGE_TOKEN"


def test_leaderboard_and_profile_need_a_player_credential(server: Server) -> None:
    assert server.channel is not None
    stub = player(server).lobby
    with pytest.raises(grpc.RpcError) as err:
        stub.GetLeaderboard(lpb.GetLeaderboardRequest(), timeout=10)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


def leave(server: Server, match_id: str, token: str, claim: bool = False) -> None:
    assert server.channel is not None
    stub = spades_pb2_grpc.SpadesServiceStub(server.channel)
    if claim:
        stub.ClaimSeat(pb.ClaimSeatRequest(match_id=match_id), metadata=bearer(token), timeout=10)
    else:
        stub.LeaveSeat(pb.LeaveSeatRequest(match_id=match_id), metadata=bearer(token), timeout=10)


def expected_ratings(scores: list[int], leaver: int | None) -> dict[int, tuple[float, float]]:
    """Each seat's (mu, sigma) after a first rated match, as openskill rates
    it directly: sides as teams; a leaver alone, below everyone."""
    model = PlackettLuce()
    ranks = [1 + sum(o > s for o in scores) for s in scores]
    rated = model.rate([[model.rating(), model.rating()] for _ in range(2)], ranks=ranks)
    out = {
        seat: (rated[seat % 2][seat // 2].mu, rated[seat % 2][seat // 2].sigma) for seat in range(4)
    }
    if leaver is not None:
        teams = [[model.rating() for s in (side, side + 2) if s != leaver] for side in (0, 1)]
        alone = model.rate([*teams, [model.rating()]], ranks=[*ranks, max(ranks) + 1])
        out[leaver] = (alone[2][0].mu, alone[2][0].sigma)
    return out


def rating_of(asker: Player, who: Player) -> tuple[float, float]:
    (rating,) = wait_profile(asker, who.id, 1).ratings
    return rating.mu, rating.sigma


def test_a_player_who_leaves_for_good_is_ranked_below_everyone(server: Server) -> None:
    table, players, tokens = seat_four(server)
    leave(server, table.table_id, tokens[1])  # a bot stands in for every turn of seat 1
    end = play_out(server, table.table_id, [tokens[0], tokens[2], tokens[3]], choose=sure_bid)
    expected = expected_ratings(list(end.scores), leaver=1)
    for seat, p in enumerate(players):
        assert rating_of(players[0], p) == pytest.approx(expected[seat]), seat
    # The partner is rated on the team's result; the leaver loses more than the partner.
    assert expected[1][0] < expected[3][0]


def test_a_player_who_comes_back_is_rated_as_everyone_else(server: Server) -> None:
    table, players, tokens = seat_four(server)
    match_id = table.table_id
    leave(server, match_id, tokens[1])
    d = Deadline(30)
    while not view(server, match_id, tokens[1]).bids[1].has_bid:  # a bot bid for seat 1
        d.check("a bot to bid for seat 1")
        for token in (tokens[0], tokens[2], tokens[3]):
            v = view(server, match_id, token)
            if v.legal_actions:
                submit(server, match_id, token, sure_bid(v), uuid.uuid4().hex)
    leave(server, match_id, tokens[1], claim=True)
    end = play_out(server, match_id, tokens, choose=sure_bid)
    expected = expected_ratings(list(end.scores), leaver=None)
    for seat, p in enumerate(players):
        assert rating_of(players[0], p) == pytest.approx(expected[seat]), seat


def test_with_rated_bots_a_bot_plays_at_its_fixed_rating(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server(*FLAGS, "--rated-bots", "normal=20")
    human = player(srv, "solo")
    opened = human.call(
        "OpenTable",
        lpb.OpenTableRequest(
            ruleset=ONE_HAND, rated=True, bot_seats=[1, 2, 3], bot_level=pb.BOT_LEVEL_NORMAL
        ),
    )
    assert opened.table.rated and state_name(opened.table) == "TABLE_STATE_STARTED"
    end = play_out(srv, opened.table.table_id, [opened.seat_token], choose=sure_bid)
    scores = list(end.scores)
    model = PlackettLuce()
    bots = [model.rating(mu=20.0, sigma=1.0) for _ in range(3)]  # openskill adjusts each
    ranks = [1 + sum(o > s for o in scores) for s in scores]
    rated = model.rate([[model.rating(), bots[0]], bots[1:]], ranks=ranks)
    found = wait_profile(human, human.id, 1)
    (rating,) = found.ratings
    assert (rating.mu, rating.sigma) == pytest.approx((rated[0][0].mu, rated[0][0].sigma))
    assert found.with_bots.matches == 1
    # The bots' ratings are fixed: nobody else is on the board.
    board = human.call("GetLeaderboard", lpb.GetLeaderboardRequest())
    assert [e.player_id for e in board.entries] == [human.id]


def test_with_one_pool_every_preset_counts_in_it(make_server: Callable[..., Server]) -> None:
    srv = make_server(*FLAGS, "--rating-pools", "one")
    players = [player(srv, f"one{i}") for i in range(4)]
    german = pb.Ruleset(preset="german", target_score=1, mercy_score=-1)
    opened = players[0].call("OpenTable", lpb.OpenTableRequest(ruleset=german, rated=True))
    tokens = [opened.seat_token]
    for i, p in enumerate(players[1:], start=1):
        joined = p.call("JoinTable", lpb.JoinTableRequest(table_id=opened.table.table_id, seat=i))
        tokens.append(joined.seat_token)
    assert joined.table.rated and joined.table.rating_pool == "all"
    play_out(srv, opened.table.table_id, tokens, choose=sure_bid)
    assert [r.pool for r in wait_profile(players[0], players[2].id, 1).ratings] == ["all"]
    board = players[0].call("GetLeaderboard", lpb.GetLeaderboardRequest())
    assert board.pool == "all" and board.total_players == 4
    failure = expect_failure(
        grpc.StatusCode.NOT_FOUND,
        players[0].call,
        "GetLeaderboard",
        lpb.GetLeaderboardRequest(pool="german"),
    )
    assert failure.reason == "POOL_NOT_FOUND"
