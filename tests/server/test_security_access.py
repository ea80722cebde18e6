"""Private matches and revocable tokens (docs/security.md): who may watch a
match (public by default, nobody, or holders of its spectator token), the
operator changing it, and the operator reissuing a seat's token. A credential
that no longer holds is refused at once, on new calls and on the streams it
had open; every refusal changes nothing."""

from __future__ import annotations

from collections.abc import Callable

import grpc
from redis_harness import RedisServer
from server_harness import (
    OP,
    RPC_TIMEOUT,
    PlayCall,
    Server,
    StreamReader,
    Table,
    choose,
    expect_failure,
    failure_of,
    get_match,
    get_view,
    play_humans,
    play_one_seat,
    seat_md,
    stream_events,
    submit,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc

Stub = spades_pb2_grpc.SpadesServiceStub


def new_match(stub: Stub, spectators: int = 0, bots: tuple[int, ...] = ()) -> tuple[Table, str]:
    resp = stub.CreateMatch(
        pb.CreateMatchRequest(
            seats=[pb.SeatConfig(name=f"p{i}", bot=i in bots) for i in range(4)],
            seed=77,
            has_seed=True,
            spectators=spectators,  # type: ignore[arg-type]
        ),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    table = Table(resp.match.match_id, {t.seat: t.token for t in resp.seat_tokens}, resp.match)
    return table, resp.spectator_token


def watch(stub: Stub, match_id: str, token: str | None = None) -> StreamReader:
    md = seat_md(token) if token else None
    return StreamReader(
        stub.Spectate(pb.SpectateRequest(match_id=match_id), metadata=md, timeout=60)
    )


def poll(stub: Stub, match_id: str, token: str | None = None) -> pb.PollEventsResponse:
    md = seat_md(token) if token else None
    return stub.PollEvents(
        pb.PollEventsRequest(match_id=match_id), metadata=md, timeout=RPC_TIMEOUT
    )


def ended_with(reader: StreamReader, code: grpc.StatusCode, reason: str) -> None:
    reader.join(15)
    assert reader.error is not None, "the stream went on"
    failure = failure_of(reader.error)
    assert (failure.code, failure.reason) == (code, reason), failure


def set_spectators(stub: Stub, match_id: str, mode: int) -> pb.SetSpectatorsResponse:
    return stub.SetSpectators(
        pb.SetSpectatorsRequest(match_id=match_id, spectators=mode),  # type: ignore[arg-type]
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )


def reissue(stub: Stub, match_id: str, seat: int) -> pb.ReissueSeatTokenResponse:
    return stub.ReissueSeatToken(
        pb.ReissueSeatTokenRequest(match_id=match_id, seat=seat), metadata=OP, timeout=RPC_TIMEOUT
    )


def act(stub: Stub, table: Table) -> pb.SubmitActionResponse:
    seat = get_view(stub, table, 0).to_act
    return submit(stub, table, seat, choose(get_view(stub, table, seat)))


# -- who may watch ----------------------------------------------------------------------


def test_a_match_is_public_by_default_its_id_alone_lets_anyone_watch(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table, spectator_token = new_match(stub)
    assert spectator_token == ""
    assert table.summary.spectators == pb.SPECTATORS_PUBLIC
    reader = watch(stub, table.match_id)
    reader.wait_seq(1)
    reader.cancel()
    assert not any(e.HasField("hand_shown") for e in reader.events)
    assert poll(stub, table.match_id).last_seq >= 1
    # ...and nothing else: every seat call needs the seat's token.
    expect_failure(
        grpc.StatusCode.UNAUTHENTICATED,
        stub.GetView,
        pb.GetViewRequest(match_id=table.match_id),
        timeout=RPC_TIMEOUT,
    )


def test_a_private_match_cannot_be_watched_but_its_seats_play(shared_server: Server) -> None:
    stub = shared_server.stub
    table, spectator_token = new_match(stub, pb.SPECTATORS_NONE)
    assert spectator_token == ""
    assert get_match(stub, table.match_id).spectators == pb.SPECTATORS_NONE
    ended_with(watch(stub, table.match_id), grpc.StatusCode.PERMISSION_DENIED, "NOT_SPECTATABLE")
    refused = expect_failure(grpc.StatusCode.PERMISSION_DENIED, poll, stub, table.match_id)
    assert refused.reason == "NOT_SPECTATABLE"
    # A seat token is not a spectator's either.
    ended_with(
        watch(stub, table.match_id, table.tokens[1]),
        grpc.StatusCode.PERMISSION_DENIED,
        "NOT_SPECTATABLE",
    )
    last = act(stub, table).last_seq
    assert poll(stub, table.match_id, table.tokens[0]).last_seq == last


def test_a_spectator_token_match_is_watched_with_its_token_only(shared_server: Server) -> None:
    stub = shared_server.stub
    table, token = new_match(stub, pb.SPECTATORS_TOKEN)
    assert token.startswith(f"{table.match_id}.")
    before = get_match(stub, table.match_id).last_seq
    for credential, code, reason in (
        (None, grpc.StatusCode.UNAUTHENTICATED, "SPECTATOR_TOKEN_REQUIRED"),
        (table.tokens[2], grpc.StatusCode.UNAUTHENTICATED, "BAD_SPECTATOR_TOKEN"),
        (f"{table.match_id}.not-it", grpc.StatusCode.UNAUTHENTICATED, "BAD_SPECTATOR_TOKEN"),
    ):
        ended_with(watch(stub, table.match_id, credential), code, reason)
    assert expect_failure(grpc.StatusCode.UNAUTHENTICATED, poll, stub, table.match_id).reason == (
        "SPECTATOR_TOKEN_REQUIRED"
    )

    reader = watch(stub, table.match_id, token)
    reader.wait_seq(1)
    polled = poll(stub, table.match_id, token)
    reader.cancel()
    assert [e.seq for e in polled.events] == [e.seq for e in reader.events]
    for events in (reader.events, polled.events):
        assert not any(e.HasField("hand_shown") for e in events)
    # The spectator token acts for no seat.
    for call, request in (
        (stub.GetView, pb.GetViewRequest(match_id=table.match_id)),
        (stub.ClaimSeat, pb.ClaimSeatRequest(match_id=table.match_id)),
        (
            stub.SubmitAction,
            pb.SubmitActionRequest(
                match_id=table.match_id, action_id="x", action=pb.Action(look=pb.LookAction())
            ),
        ),
    ):
        expect_failure(
            grpc.StatusCode.UNAUTHENTICATED, call, request, metadata=seat_md(token), timeout=5
        )
    assert get_match(stub, table.match_id).last_seq == before


def test_setting_the_spectators_ends_the_streams_it_no_longer_allows(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table, _ = new_match(stub)
    seat0 = StreamReader(stream_events(stub, table, 0))
    anonymous = watch(stub, table.match_id)
    anonymous.wait_seq(1)

    first = set_spectators(stub, table.match_id, pb.SPECTATORS_TOKEN)
    assert first.match.spectators == pb.SPECTATORS_TOKEN and first.spectator_token
    ended_with(anonymous, grpc.StatusCode.UNAUTHENTICATED, "SPECTATOR_TOKEN_REQUIRED")
    assert not any(e.HasField("spectators_changed") for e in anonymous.events)
    seat0.wait_for(
        lambda evs: any(e.HasField("spectators_changed") for e in evs), "the change's event"
    )
    holder = watch(stub, table.match_id, first.spectator_token)
    holder.wait_seq(first.match.last_seq)

    second = set_spectators(stub, table.match_id, pb.SPECTATORS_TOKEN)
    assert second.spectator_token != first.spectator_token
    ended_with(holder, grpc.StatusCode.UNAUTHENTICATED, "BAD_SPECTATOR_TOKEN")
    newer = watch(stub, table.match_id, second.spectator_token)
    newer.wait_seq(second.match.last_seq)

    closed = set_spectators(stub, table.match_id, pb.SPECTATORS_NONE)
    assert closed.spectator_token == ""
    ended_with(newer, grpc.StatusCode.PERMISSION_DENIED, "NOT_SPECTATABLE")

    reopened = set_spectators(stub, table.match_id, pb.SPECTATORS_UNSPECIFIED)
    assert reopened.match.spectators == pb.SPECTATORS_PUBLIC
    again = watch(stub, table.match_id)
    again.wait_seq(reopened.match.last_seq)
    again.cancel()
    changes = [
        e.spectators_changed.spectators for e in again.events if e.HasField("spectators_changed")
    ]
    assert changes == [pb.SPECTATORS_TOKEN] * 2 + [pb.SPECTATORS_NONE, pb.SPECTATORS_PUBLIC]
    seat0.cancel()


def test_spectator_settings_refused_change_nothing(shared_server: Server) -> None:
    stub = shared_server.stub
    table, token = new_match(stub, pb.SPECTATORS_TOKEN)
    before = get_match(stub, table.match_id)
    bad = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, set_spectators, stub, table.match_id, 9)
    assert (bad.reason, bad.fields) == ("BAD_SPECTATORS", ["spectators"])
    created = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        stub.CreateMatch,
        pb.CreateMatchRequest(spectators=7),  # type: ignore[arg-type]
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    assert created.reason == "BAD_SPECTATORS"
    not_operator = expect_failure(
        grpc.StatusCode.PERMISSION_DENIED,
        stub.SetSpectators,
        pb.SetSpectatorsRequest(match_id=table.match_id, spectators=pb.SPECTATORS_PUBLIC),
        metadata=seat_md(table.tokens[0]),
        timeout=RPC_TIMEOUT,
    )
    assert not_operator.reason == "NOT_OPERATOR"
    expect_failure(
        grpc.StatusCode.NOT_FOUND, set_spectators, stub, "0123456789abcdef", pb.SPECTATORS_NONE
    )
    assert get_match(stub, table.match_id) == before
    watcher = watch(stub, table.match_id, token)  # the token still works
    watcher.wait_seq(1)
    watcher.cancel()


def test_spectator_settings_and_tokens_survive_a_restart(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server()
    table, token = new_match(srv.stub, pb.SPECTATORS_TOKEN)
    new = reissue(srv.stub, table.match_id, 1).seat_token.token
    srv.restart_after_kill()
    assert get_match(srv.stub, table.match_id).spectators == pb.SPECTATORS_TOKEN
    ended_with(
        watch(srv.stub, table.match_id),
        grpc.StatusCode.UNAUTHENTICATED,
        "SPECTATOR_TOKEN_REQUIRED",
    )
    reader = watch(srv.stub, table.match_id, token)
    reader.wait_seq(1)
    reader.cancel()
    # The token made at creation was replaced before the crash.
    expect_failure(grpc.StatusCode.UNAUTHENTICATED, get_view, srv.stub, table, 1)
    get_view(srv.stub, Table(table.match_id, {1: new}, table.summary), 1)


# -- reissued seat tokens ---------------------------------------------------------------


def test_a_reissued_seat_token_is_refused_at_once_also_on_open_streams(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table, _ = new_match(stub)
    stub.ClaimSeat(
        pb.ClaimSeatRequest(match_id=table.match_id),
        metadata=seat_md(table.tokens[0]),
        timeout=RPC_TIMEOUT,
    )
    old_stream = StreamReader(stream_events(stub, table, 0))
    old_play = PlayCall(stub, table, 0)
    partner = StreamReader(stream_events(stub, table, 2))
    old_stream.wait_seq(1)
    old_play.wait_seq(1)

    resp = reissue(stub, table.match_id, 0)
    assert resp.seat_token.seat == 0 and resp.seat_token.token != table.tokens[0]
    assert resp.match.seats[0].control == pb.SEAT_CONTROL_OPEN  # its human is out
    ended_with(old_stream, grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
    ended_with(old_play, grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
    partner.wait_for(
        lambda evs: any(
            e.seat_control_changed.reason == "token_reissued"
            and e.seat_control_changed.seat == 0
            and e.seat_control_changed.control == pb.SEAT_CONTROL_OPEN
            for e in evs
        ),
        "the reissue's event",
    )
    old = seat_md(table.tokens[0])
    for attempt in (
        lambda: stub.GetView(pb.GetViewRequest(match_id=table.match_id), metadata=old, timeout=5),
        lambda: stub.ClaimSeat(
            pb.ClaimSeatRequest(match_id=table.match_id), metadata=old, timeout=5
        ),
        lambda: list(
            stub.StreamEvents(
                pb.StreamEventsRequest(match_id=table.match_id), metadata=old, timeout=5
            )
        ),
    ):
        assert expect_failure(grpc.StatusCode.UNAUTHENTICATED, attempt).reason == "UNAUTHENTICATED"
    assert get_match(stub, table.match_id).last_seq == resp.match.last_seq

    renewed = Table(table.match_id, {**table.tokens, 0: resp.seat_token.token}, table.summary)
    view = get_view(stub, renewed, 0)
    assert view.seat == 0 and len(view.hand) == 13
    play_humans(stub, renewed, until=lambda v: v.hand_number == 0 and v.phase == pb.PHASE_PLAYING)
    partner.cancel()


def test_an_action_sent_on_a_play_call_after_the_reissue_is_refused(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table, _ = new_match(stub)
    seat = get_view(stub, table, 0).to_act
    action = choose(get_view(stub, table, seat))
    call = PlayCall(stub, table, seat)
    call.wait_seq(1)
    before = reissue(stub, table.match_id, seat).match.last_seq
    call.act(action)  # legal for the seat, sent with the old token: it must not land
    ended_with(call, grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
    assert get_match(stub, table.match_id).last_seq == before


def test_reissue_refusals_say_why_and_change_nothing(shared_server: Server) -> None:
    stub = shared_server.stub
    with_bot, _ = new_match(stub, bots=(3,))
    bot = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, reissue, stub, with_bot.match_id, 3)
    assert bot.reason == "BOT_SEAT"
    table, _ = new_match(stub)  # all human: nothing moves while it is checked
    before = get_match(stub, table.match_id)
    for seat in (-1, 4, 1 << 30):
        bad = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, reissue, stub, table.match_id, seat)
        assert (bad.reason, bad.fields) == ("BAD_SEAT", ["seat"])
    expect_failure(grpc.StatusCode.NOT_FOUND, reissue, stub, "0123456789abcdef", 0)
    by_seat = expect_failure(
        grpc.StatusCode.PERMISSION_DENIED,
        stub.ReissueSeatToken,
        pb.ReissueSeatTokenRequest(match_id=table.match_id, seat=1),
        metadata=seat_md(table.tokens[1]),
        timeout=RPC_TIMEOUT,
    )
    assert by_seat.reason == "NOT_OPERATOR"
    assert get_match(stub, table.match_id) == before
    get_view(stub, table, 1)  # the token still works


def test_a_finished_matchs_tokens_and_settings_are_final(shared_server: Server) -> None:
    stub = shared_server.stub
    resp = stub.CreateMatch(
        pb.CreateMatchRequest(
            ruleset=pb.Ruleset(target_score=50, mercy_score=-50),
            seats=[pb.SeatConfig(bot=i != 0) for i in range(4)],
            seed=3,
            has_seed=True,
        ),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    table = Table(resp.match.match_id, {t.seat: t.token for t in resp.seat_tokens}, resp.match)
    play_one_seat(stub, table, 0, timeout=60)
    over = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, reissue, stub, table.match_id, 0)
    assert over.reason == "MATCH_OVER"
    assert (
        expect_failure(
            grpc.StatusCode.FAILED_PRECONDITION,
            set_spectators,
            stub,
            table.match_id,
            pb.SPECTATORS_NONE,
        ).reason
        == "MATCH_OVER"
    )


def test_a_token_reissued_on_one_replica_is_refused_on_another_and_its_streams_end(
    make_server: Callable[..., Server], redis_server: RedisServer, redis_prefix: str
) -> None:
    a, b = (
        make_server(
            "--store",
            "redis",
            "--redis-url",
            redis_server.url,
            "--redis-prefix",
            redis_prefix,
            "--actions-per-second",
            "10000",
        )
        for _ in range(2)
    )
    table, spectator = new_match(a.stub, pb.SPECTATORS_TOKEN)
    seat = get_view(b.stub, table, 0).to_act
    on_b = StreamReader(stream_events(b.stub, table, seat))
    play_on_b = PlayCall(b.stub, table, seat)
    watcher_on_b = watch(b.stub, table.match_id, spectator)
    for reader in (on_b, play_on_b, watcher_on_b):
        reader.wait_seq(1)

    resp = reissue(a.stub, table.match_id, seat)
    ended_with(on_b, grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
    ended_with(play_on_b, grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
    # The old token's action through B is refused even if B had not caught up
    # when it was sent: its append would conflict, and the retry checks the token.
    renewed = Table(table.match_id, {**table.tokens, seat: resp.seat_token.token}, table.summary)
    action = choose(get_view(a.stub, renewed, seat))
    refused = expect_failure(grpc.StatusCode.UNAUTHENTICATED, submit, b.stub, table, seat, action)
    assert refused.reason in ("UNAUTHENTICATED", "TOKEN_REVOKED")
    submit(b.stub, renewed, seat, choose(get_view(b.stub, renewed, seat)))

    changed = set_spectators(a.stub, table.match_id, pb.SPECTATORS_NONE)
    ended_with(watcher_on_b, grpc.StatusCode.PERMISSION_DENIED, "NOT_SPECTATABLE")
    assert get_match(b.stub, table.match_id).spectators == pb.SPECTATORS_NONE
    assert get_match(b.stub, table.match_id).last_seq >= changed.match.last_seq
