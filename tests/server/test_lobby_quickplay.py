"""Quick play and rematch, against a real server: tickets placed first come
first served, parties as partners, bots after the wait, one ticket per
player, cancelling, asking again after a lost connection; a rematch of a
finished match with the same seats."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest
from lobby_harness import LOBBY_FLAGS, QUICK_RULES, Player, play_out, player, state_name, view
from server_harness import Server, expect_failure
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb

BOT_WAIT_S = 2.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(
        tmp_path_factory.mktemp("quickplay"),
        *LOBBY_FLAGS,
        "--quickplay-bot-wait-seconds", str(BOT_WAIT_S),
        "--quickplay-turn-timer-ms", "0",
        "--party-wait-seconds", "3",
        "--rematch-seconds", "5",
    )  # fmt: skip
    srv.start()
    yield srv
    assert srv.stop() == 0, srv.log_tail()


def ask(
    p: Player, rules: pb.Ruleset | None = None, partner: str = "", request_id: str = ""
) -> lpb.Ticket:
    request = lpb.QuickPlayRequest(partner_player_id=partner, request_id=request_id)
    if rules is not None:
        request.ruleset.CopyFrom(rules)
    ticket: lpb.Ticket = p.call("QuickPlay", request).ticket
    return ticket


def placed(p: Player, ticket: lpb.Ticket, timeout: float = 15) -> lpb.Ticket:
    """Long-poll the ticket until it is placed."""
    deadline = time.monotonic() + timeout
    while ticket.state != lpb.TICKET_STATE_PLACED:
        assert time.monotonic() < deadline, f"ticket {ticket.ticket_id} not placed: {ticket}"
        ticket = p.call(
            "GetTicket",
            lpb.GetTicketRequest(
                ticket_id=ticket.ticket_id, after_version=ticket.version, wait_ms=2000
            ),
        ).ticket
    return ticket


def rules(n: int) -> pb.Ruleset:
    """A queue of its own for each test (the server is shared)."""
    return pb.Ruleset(preset="classic", target_score=100 + n)


def test_four_players_asking_together_sit_at_one_table_at_once(server: Server) -> None:
    queue = rules(1)
    players = [player(server, "solo") for _ in range(4)]
    t0 = time.monotonic()
    tickets = [ask(p, queue) for p in players]
    assert all(t.state == lpb.TICKET_STATE_SEARCHING for t in tickets)
    done = [placed(p, t) for p, t in zip(players, tickets, strict=True)]
    assert time.monotonic() - t0 < BOT_WAIT_S, "placed without waiting for bots"
    matches = {t.placement.match_id for t in done}
    assert len(matches) == 1
    assert sorted(t.placement.seat for t in done) == [0, 1, 2, 3]
    table = done[0].placement.table
    assert table.kind == lpb.TABLE_KIND_QUICK_PLAY
    assert {s.player_id for s in table.seats} == {p.id for p in players}
    # Seats 0, 2, 1, 3 in the order they asked.
    assert [table.seats[s].player_id for s in (0, 2, 1, 3)] == [p.id for p in players]
    for t in done:
        assert view(server, t.placement.match_id, t.placement.seat_token).seat == t.placement.seat


def test_a_lone_player_gets_bots_after_the_wait_and_can_ask_again(server: Server) -> None:
    alone = player(server, "alone")
    ticket = ask(alone, rules(2))
    assert ticket.bots_at_ms - ticket.created_ms == int(BOT_WAIT_S * 1000)
    t0 = time.monotonic()
    got = placed(alone, ticket)
    assert BOT_WAIT_S - 0.5 <= time.monotonic() - t0 <= BOT_WAIT_S + 1.5
    seats = got.placement.table.seats
    assert [s.state for s in seats].count(lpb.TABLE_SEAT_STATE_BOT) == 3
    # --bot-level (normal by default) plays them.
    assert {s.bot_level for s in seats if s.state == lpb.TABLE_SEAT_STATE_BOT} == {
        pb.BOT_LEVEL_NORMAL
    }
    # After a lost connection: the latest ticket, with the same seat token.
    again = alone.call("GetTicket", lpb.GetTicketRequest()).ticket
    assert again.placement.seat_token == got.placement.seat_token
    assert again.placement.match_id == got.placement.match_id
    v = view(server, got.placement.match_id, got.placement.seat_token)
    assert v.seats[got.placement.seat].name == alone.id.title()
    # Placed: it can no longer be cancelled; a new ticket can be asked for.
    refused = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION,
        alone.call,
        "CancelTicket",
        lpb.CancelTicketRequest(ticket_id=got.ticket_id),
    )
    assert refused.reason == "TICKET_PLACED"
    assert ask(alone, rules(2)).ticket_id != got.ticket_id
    alone.call("CancelTicket", lpb.CancelTicketRequest())


def test_a_party_of_two_sits_as_partners(server: Server) -> None:
    queue = rules(3)
    ann, ben = player(server, "ann"), player(server, "ben")
    first = ask(ann, queue, partner=ben.id)
    assert first.state == lpb.TICKET_STATE_WAITING_FOR_PARTNER
    joined = ask(ben, queue, partner=ann.id)
    assert joined.ticket_id == first.ticket_id
    assert joined.state == lpb.TICKET_STATE_SEARCHING
    assert list(joined.player_ids) == [ann.id, ben.id]
    solos = [player(server, "solo") for _ in range(2)]
    for p in solos:
        ask(p, queue)
    a, b = placed(ann, first), placed(ben, joined)
    assert a.placement.match_id == b.placement.match_id
    assert {a.placement.seat, b.placement.seat} in ({0, 2}, {1, 3}), "partners sit opposite"
    assert a.placement.seat_token != b.placement.seat_token
    table = a.placement.table
    assert not [s for s in table.seats if s.state == lpb.TABLE_SEAT_STATE_BOT]


def test_a_party_needs_both_players_to_agree(server: Server) -> None:
    queue = rules(4)
    asker, other = player(server, "asker"), player(server, "other")
    waiting = ask(asker, queue, partner=other.id)
    # The named player queues alone instead: placed without the asker.
    alone = placed(other, ask(other, queue))
    assert asker.id not in {s.player_id for s in alone.placement.table.seats}
    still = asker.call("GetTicket", lpb.GetTicketRequest(ticket_id=waiting.ticket_id)).ticket
    assert still.state == lpb.TICKET_STATE_WAITING_FOR_PARTNER
    # Nobody else can see or join the asker's ticket.
    stranger = player(server, "stranger")
    f = expect_failure(
        grpc.StatusCode.NOT_FOUND,
        stranger.call,
        "GetTicket",
        lpb.GetTicketRequest(ticket_id=waiting.ticket_id),
    )
    assert f.reason == "TICKET_NOT_FOUND"
    # The partner never came: the ticket ends (--party-wait-seconds 3).
    deadline = time.monotonic() + 10
    while still.state == lpb.TICKET_STATE_WAITING_FOR_PARTNER:
        assert time.monotonic() < deadline
        still = asker.call(
            "GetTicket",
            lpb.GetTicketRequest(
                ticket_id=waiting.ticket_id, after_version=still.version, wait_ms=2000
            ),
        ).ticket
    assert still.state == lpb.TICKET_STATE_CANCELLED
    assert still.cancel_reason == "partner_did_not_join"


def test_one_ticket_per_player_and_cancelling(server: Server) -> None:
    queue = rules(5)
    p = player(server, "twice")
    ticket = ask(p, queue)
    twice = expect_failure(grpc.StatusCode.ALREADY_EXISTS, ask, p, queue)
    assert twice.reason == "ALREADY_QUEUED" and twice.metadata["ticket_id"] == ticket.ticket_id
    seat = expect_failure(
        grpc.StatusCode.ALREADY_EXISTS,
        p.call,
        "OpenTable",
        lpb.OpenTableRequest(),
    )
    assert seat.reason == "ALREADY_QUEUED"
    watch = p.lobby.WatchTicket(
        lpb.WatchTicketRequest(ticket_id=ticket.ticket_id), metadata=p.md, timeout=20
    )
    assert next(watch).ticket.state == lpb.TICKET_STATE_SEARCHING
    cancelled = p.call("CancelTicket", lpb.CancelTicketRequest(ticket_id=ticket.ticket_id))
    assert cancelled.ticket.state == lpb.TICKET_STATE_CANCELLED
    assert [m.ticket.state for m in watch] == [lpb.TICKET_STATE_CANCELLED]
    # Idempotent, and never placed even after the bots' wait.
    again = p.call("CancelTicket", lpb.CancelTicketRequest(ticket_id=ticket.ticket_id)).ticket
    assert again.state == lpb.TICKET_STATE_CANCELLED
    time.sleep(BOT_WAIT_S + 0.5)
    after = p.call("GetTicket", lpb.GetTicketRequest(ticket_id=ticket.ticket_id)).ticket
    assert after.state == lpb.TICKET_STATE_CANCELLED and not after.placement.match_id


def test_a_quick_play_resent_with_its_request_id_answers_with_the_ticket_it_made(
    server: Server,
) -> None:
    # What a client that lost the answers meets: here, the party's first
    # player resends after the party has been placed (a failover of the
    # lobby's Redis did that; test_replicas_cluster.py runs it).
    queue = rules(9)
    ann, ben = player(server, "ann"), player(server, "ben")
    first = ask(ann, queue, partner=ben.id, request_id="ann-1")
    assert ask(ann, queue, partner=ben.id, request_id="ann-1") == first
    joined = ask(ben, queue, partner=ann.id, request_id="ben-1")
    assert ask(ben, queue, partner=ann.id, request_id="ben-1") == joined
    for p in (player(server, "solo"), player(server, "solo")):
        ask(p, queue)
    a = placed(ann, first)
    again = ask(ann, queue, partner=ben.id, request_id="ann-1")
    assert again.state == lpb.TICKET_STATE_PLACED and again.ticket_id == first.ticket_id
    assert again.placement == a.placement
    # Another request id is another game: a new ticket, waiting for ben.
    fresh = ask(ann, queue, partner=ben.id, request_id="ann-2")
    assert fresh.ticket_id != first.ticket_id
    assert fresh.state == lpb.TICKET_STATE_WAITING_FOR_PARTNER
    # The id that made the first ticket is no longer the latest: refused as a
    # second ticket would be.
    twice = expect_failure(grpc.StatusCode.ALREADY_EXISTS, ask, ann, queue, ben.id, "ann-1")
    assert twice.reason == "ALREADY_QUEUED" and twice.metadata["ticket_id"] == fresh.ticket_id
    ann.call("CancelTicket", lpb.CancelTicketRequest(ticket_id=fresh.ticket_id))
    long_id = lpb.QuickPlayRequest(request_id="x" * 65)
    bad = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, ann.call, "QuickPlay", long_id)
    assert bad.reason == "BAD_REQUEST_ID" and bad.fields == ["request_id"]


def test_party_refusals(server: Server) -> None:
    p, q = player(server, "p"), player(server, "q")
    for request, reason in (
        (lpb.QuickPlayRequest(partner_player_id=p.id), "BAD_PARTNER"),
        (
            lpb.QuickPlayRequest(ruleset=pb.Ruleset(partnerships=False), partner_player_id=q.id),
            "PARTY_NEEDS_PARTNERSHIPS",
        ),
        (lpb.QuickPlayRequest(ruleset=pb.Ruleset(preset="nope")), "INVALID_RULESET"),
    ):
        f = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, p.call, "QuickPlay", request)
        assert f.reason == reason, f
    ask(p, rules(6), partner=q.id)
    mismatch = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION, ask, q, rules(7), q.id.replace(q.id, p.id)
    )
    assert mismatch.reason == "PARTY_RULESET_MISMATCH"
    p.call("CancelTicket", lpb.CancelTicketRequest())


def test_a_rematch_with_the_same_seats_once_every_human_accepts(server: Server) -> None:
    host, guest = player(server, "host"), player(server, "guest")
    opened = host.call("OpenTable", lpb.OpenTableRequest(ruleset=QUICK_RULES, bot_seats=[1, 3]))
    match_id = opened.table.table_id
    joined = guest.call("JoinTable", lpb.JoinTableRequest(table_id=match_id))
    tokens = {0: opened.seat_token, 2: joined.seat_token}
    early = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION,
        host.lobby.Rematch,
        lpb.RematchRequest(match_id=match_id),
        metadata=(("authorization", f"Bearer {tokens[0]}"),),
    )
    assert early.reason == "MATCH_NOT_OVER"
    play_out(server, match_id, list(tokens.values()))

    def rematch(seat: int, **kw: object) -> lpb.RematchResponse:
        response: lpb.RematchResponse = host.lobby.Rematch(
            lpb.RematchRequest(match_id=match_id, **kw),  # type: ignore[arg-type]
            metadata=(("authorization", f"Bearer {tokens[seat]}"),),
            timeout=30,
        )
        return response

    first = rematch(0)
    assert state_name(first.table) == "TABLE_STATE_WAITING"
    assert first.table.rematch_of == match_id and first.seat == 0
    assert [s.accepted for s in first.table.seats] == [True, False, False, False]
    assert [s.player_id for s in first.table.seats] == [host.id, "", guest.id, ""]
    second = rematch(2)
    assert state_name(second.table) == "TABLE_STATE_STARTED"
    new_id = second.table.match_id
    assert new_id != match_id
    # The first asker learns it by asking again (a long poll) and gets its token.
    again = rematch(0, after_version=first.table.version, wait_ms=2000)
    assert state_name(again.table) == "TABLE_STATE_STARTED"
    assert view(server, new_id, again.seat_token).seat == 0
    assert view(server, new_id, second.seat_token).seat == 2
    v = view(server, new_id, again.seat_token)
    assert [s.control for s in v.seats][1] == pb.SEAT_CONTROL_BOT
    # Asking again after the start changes nothing.
    assert rematch(2).table.match_id == new_id


def test_a_declined_rematch_closes(server: Server) -> None:
    host, guest = player(server, "host"), player(server, "guest")
    opened = host.call("OpenTable", lpb.OpenTableRequest(ruleset=QUICK_RULES, bot_seats=[1, 3]))
    match_id = opened.table.table_id
    joined = guest.call("JoinTable", lpb.JoinTableRequest(table_id=match_id))
    play_out(server, match_id, [opened.seat_token, joined.seat_token])
    md = (("authorization", f"Bearer {joined.seat_token}"),)
    host.lobby.Rematch(lpb.RematchRequest(match_id=match_id), metadata=md, timeout=10)
    declined = host.lobby.Rematch(
        lpb.RematchRequest(match_id=match_id, decline=True),
        metadata=(("authorization", f"Bearer {opened.seat_token}"),),
        timeout=10,
    ).table
    assert state_name(declined) == "TABLE_STATE_CLOSED" and declined.close_reason == "declined"
    wrong = expect_failure(
        grpc.StatusCode.UNAUTHENTICATED,
        host.lobby.Rematch,
        lpb.RematchRequest(match_id=match_id),
        metadata=host.md,  # a player credential is not a seat token
        timeout=10,
    )
    assert wrong.reason == "SEAT_TOKEN_REQUIRED"


def test_a_rematch_not_every_human_accepts_in_time_closes(server: Server) -> None:
    host, guest = player(server, "host"), player(server, "guest")
    opened = host.call("OpenTable", lpb.OpenTableRequest(ruleset=QUICK_RULES, bot_seats=[1, 3]))
    match_id = opened.table.table_id
    joined = guest.call("JoinTable", lpb.JoinTableRequest(table_id=match_id))
    play_out(server, match_id, [opened.seat_token, joined.seat_token])
    md = (("authorization", f"Bearer {opened.seat_token}"),)
    asked = host.lobby.Rematch(lpb.RematchRequest(match_id=match_id), metadata=md, timeout=10)
    assert asked.table.deadline_ms - asked.table.created_ms == 5000  # --rematch-seconds 5
    table = asked.table
    deadline = time.monotonic() + 15
    while state_name(table) == "TABLE_STATE_WAITING":
        assert time.monotonic() < deadline
        table = host.lobby.Rematch(
            lpb.RematchRequest(match_id=match_id, after_version=table.version, wait_ms=3000),
            metadata=md,
            timeout=10,
        ).table
    assert state_name(table) == "TABLE_STATE_CLOSED" and table.close_reason == "expired"
