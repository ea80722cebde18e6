"""Whole matches over gRPC: played to the end, idempotent actions, the turn
timer and claiming a seat back, export and import."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import grpc
from server_harness import (
    OP,
    POLL,
    RPC_TIMEOUT,
    Deadline,
    Server,
    Step,
    StreamReader,
    Table,
    choose,
    create_match,
    expect_failure,
    get_match,
    get_view,
    is_match_ended,
    play_humans,
    play_one_seat,
    read_until,
    seat_md,
    seats_to_act,
    spectate,
    stream_events,
    submit,
    wire,
)
from spades_server import convert
from spades_server.gen.spades.v1 import spades_pb2 as pb

from spades_engine.record import loads_record, replay


def test_one_human_and_three_bots_play_a_match_to_the_end(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, bots=(1, 2, 3), seed=11, target_score=100)
    assert list(table.tokens) == [0], "only the human seat gets a token"
    assert [s.control for s in table.summary.seats] == [
        pb.SEAT_CONTROL_OPEN,
        pb.SEAT_CONTROL_BOT,
        pb.SEAT_CONTROL_BOT,
        pb.SEAT_CONTROL_BOT,
    ]
    own = StreamReader(stream_events(stub, table, 0), stop=is_match_ended)
    public = StreamReader(spectate(stub, table.match_id), stop=is_match_ended)

    steps: list[Step] = []
    final = play_one_seat(stub, table, 0, on_step=steps.append, timeout=60)

    assert final.phase == pb.PHASE_MATCH_OVER
    assert final.winner in (0, 1)
    assert final.to_act == -1
    assert not final.legal_actions
    assert max(final.scores) >= 100 or min(final.scores) <= -200
    summary = get_match(stub, table.match_id)
    assert summary.phase == pb.PHASE_MATCH_OVER
    assert summary.winner == final.winner
    assert list(summary.scores) == list(final.scores)
    assert steps, "the human seat acted"

    own.join(30)
    public.join(30)
    for reader in (own, public):
        assert reader.error is None, reader.error
        ended = reader.events[-1]
        assert ended.HasField("match_ended")
        assert ended.seq == summary.last_seq
        assert ended.match_ended.winner == summary.winner
        assert list(ended.match_ended.scores) == list(summary.scores)
        assert ended.match_ended.hands_played == len(final.results) == summary.hand_number + 1
        seqs = [e.seq for e in reader.events]
        assert seqs == sorted(set(seqs)), "strictly increasing sequence numbers"

    # The bots played their seats; every acknowledged event is on the seat's stream.
    players = {e.card_played.seat for e in own.events if e.HasField("card_played")}
    assert players == {0, 1, 2, 3}
    by_seq = {e.seq: e for e in own.events}
    for step in steps:
        assert step.response.events, "an action causes at least one event"
        assert step.response.last_seq == step.response.events[-1].seq
        for ev in step.response.events:
            assert wire([by_seq[ev.seq]]) == wire([ev])

    refused = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION,
        submit,
        stub,
        table,
        0,
        pb.Action(bid=pb.BidAction(tricks=3)),
    )
    assert refused.reason == "MATCH_OVER"


def test_a_retried_action_applies_once_and_a_stale_sequence_is_refused(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=5)
    public = get_view(stub, table, 0)
    seat = public.to_act
    before = get_match(stub, table.match_id)
    action = choose(get_view(stub, table, seat))

    first = submit(stub, table, seat, action, action_id="retry-me")
    again = submit(stub, table, seat, action, action_id="retry-me")
    assert again.SerializeToString(deterministic=True) == first.SerializeToString(
        deterministic=True
    )
    # Even a different body under the same id returns the first result, unapplied.
    other = choose(get_view(stub, table, (seat + 1) % 4))
    third = submit(stub, table, seat, other, action_id="retry-me")
    assert wire(third.events) == wire(first.events)

    after = get_match(stub, table.match_id)
    assert after.last_seq == first.last_seq == before.last_seq + len(first.events)
    view = get_view(stub, table, seat)
    assert [b.has_bid for b in view.bids] == [s == seat for s in range(4)]
    assert view.to_act == (seat + 1) % 4
    assert view.as_of_seq == first.last_seq

    # The next seat saw the bid at first.last_seq: expecting an older sequence is stale.
    nxt = (seat + 1) % 4
    nxt_view = get_view(stub, table, nxt)
    stale = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION,
        submit,
        stub,
        table,
        nxt,
        choose(nxt_view),
        expected_seq=first.last_seq - 1,
    )
    assert stale.reason == "STALE_SEQUENCE"
    assert stale.metadata["current_seq"] == str(first.last_seq)
    assert get_match(stub, table.match_id).last_seq == first.last_seq
    assert get_view(stub, table, nxt) == nxt_view

    ok = submit(stub, table, nxt, choose(nxt_view), expected_seq=first.last_seq)
    assert ok.last_seq == first.last_seq + len(ok.events)


def test_turn_timer_stands_a_bot_in_and_claim_seat_gives_it_back(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=3, turn_timer_ms=300, target_score=60)
    assert table.summary.turn_timer_ms == 300
    watcher = StreamReader(stream_events(stub, table, 1))
    public = StreamReader(spectate(stub, table.match_id), stop=is_match_ended)

    def control_changes(evs: list[pb.MatchEvent]) -> list[tuple[int, int, str, int]]:
        return [
            (
                e.seat_control_changed.seat,
                e.seat_control_changed.control,
                e.seat_control_changed.reason,
                e.seq,
            )
            for e in evs
            if e.HasField("seat_control_changed")
        ]

    def acted_by(evs: list[pb.MatchEvent], seat: int, after: int) -> bool:
        for e in evs:
            if e.seq <= after:
                continue
            if e.HasField("bid_made") and e.bid_made.seat == seat:
                return True
            if e.HasField("card_played") and e.card_played.seat == seat:
                return True
        return False

    def stood_in(evs: list[pb.MatchEvent]) -> int:
        for seat, control, reason, seq in control_changes(evs):
            if seat == 0 and control == pb.SEAT_CONTROL_BOT_STANDING_IN:
                assert reason == "turn_timer"
                return seq
        return 0

    # Seats 1-3 act at once; seat 0 never does, so its timer runs out.
    def play_others_until(done: Callable[[], bool]) -> None:
        d = Deadline(20)
        while not done():
            d.check("the stand-in to act")
            view = get_view(stub, table, 1)
            pending = [s for s in seats_to_act(view) if s != 0]
            if not pending:
                time.sleep(POLL)
                continue
            seat = pending[0]
            try:
                submit(stub, table, seat, choose(get_view(stub, table, seat)))
            except grpc.RpcError as err:  # the stand-in may have moved on meanwhile
                assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err

    play_others_until(lambda: acted_by(public.events, 0, stood_in(public.events) or 1 << 62))
    mark = stood_in(public.events)
    summary = get_match(stub, table.match_id)
    assert summary.seats[0].control == pb.SEAT_CONTROL_BOT_STANDING_IN
    watcher.wait_seq(mark)
    assert (0, pb.SEAT_CONTROL_BOT_STANDING_IN, "turn_timer", mark) in control_changes(
        watcher.events
    )

    claimed = stub.ClaimSeat(
        pb.ClaimSeatRequest(match_id=table.match_id),
        metadata=seat_md(table.tokens[0]),
        timeout=RPC_TIMEOUT,
    )
    assert claimed.seat == 0
    assert claimed.view.seat == 0
    assert claimed.view.seats[0].control == pb.SEAT_CONTROL_HUMAN

    def claim_seen(evs: list[pb.MatchEvent]) -> bool:
        return any(
            s == 0 and c == pb.SEAT_CONTROL_HUMAN and r == "claimed"
            for s, c, r, _ in control_changes(evs)
        )

    public.wait_for(claim_seen, "the claim on the public stream")
    watcher.wait_for(claim_seen, "the claim on seat 1's stream")

    # Seat 0 is human again: the test now acts for it, within its timer.
    human_step: list[pb.SubmitActionResponse] = []

    def seat0_acts() -> bool:
        view = get_view(stub, table, 0)
        if view.phase == pb.PHASE_MATCH_OVER:
            raise AssertionError("the match ended before seat 0 acted again")
        if view.legal_actions and 0 in seats_to_act(view):
            human_step.append(submit(stub, table, 0, choose(view)))
        return bool(human_step)

    play_others_until(seat0_acts)
    assert get_match(stub, table.match_id).seats[0].control == pb.SEAT_CONTROL_HUMAN

    # Everyone leaves: the bots finish the match.
    for seat, token in table.tokens.items():
        left = stub.LeaveSeat(
            pb.LeaveSeatRequest(match_id=table.match_id),
            metadata=seat_md(token),
            timeout=RPC_TIMEOUT,
        )
        assert left.seat == seat
    public.join(30)
    assert public.events[-1].HasField("match_ended")
    left_seats = {s for s, c, r, _ in control_changes(public.events) if r == "left"}
    assert 0 in left_seats
    watcher.cancel()


def test_export_then_import_makes_an_identical_match(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=21, target_score=500)
    steps = play_humans(stub, table, until=lambda v: v.hand_number == 1 and len(v.tricks) >= 2)
    exported = stub.ExportMatch(
        pb.ExportMatchRequest(match_id=table.match_id), metadata=OP, timeout=RPC_TIMEOUT
    )
    assert exported.snapshot
    assert exported.match.match_id == table.match_id
    record = json.loads(exported.record_json)
    assert record["seed"] == 21
    assert len(record["actions"]) == len(steps)

    imported = stub.ImportMatch(
        pb.ImportMatchRequest(
            snapshot=exported.snapshot, seats=[pb.SeatConfig(name=f"p{i}") for i in range(4)]
        ),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    copy = Table(
        imported.match.match_id, {t.seat: t.token for t in imported.seat_tokens}, imported.match
    )
    assert copy.match_id != table.match_id
    assert sorted(copy.tokens) == [0, 1, 2, 3]

    def without_seq(view: pb.SeatView) -> pb.SeatView:
        out = pb.SeatView()
        out.CopyFrom(view)
        out.ClearField("as_of_seq")  # the copy has its own, shorter, event log
        return out

    engine_copy = replay(loads_record(exported.record_json))
    for seat in range(4):
        original = get_view(stub, table, seat)
        assert without_seq(get_view(stub, copy, seat)) == without_seq(original)
        expected = convert.view_to_pb(
            engine_copy.view(seat), as_of_seq=original.as_of_seq, seats=original.seats
        )
        assert expected == original
    a, b = get_match(stub, table.match_id), imported.match
    for name in ("ruleset", "seats", "phase", "hand_number", "scores", "winner"):
        assert getattr(a, name) == getattr(b, name), name

    # The two matches go on independently.
    before = get_match(stub, table.match_id)
    seat = seats_to_act(get_view(stub, copy, 0))[0]
    submit(stub, copy, seat, choose(get_view(stub, copy, seat)))
    assert get_match(stub, table.match_id) == before
    assert get_match(stub, copy.match_id).last_seq > imported.match.last_seq


def _story(events: list[pb.MatchEvent]) -> list[bytes]:
    """Events without their numbering and time, and without the seat-control and
    chat events that belong to one server's session rather than to the game."""
    out = []
    for ev in events:
        if ev.WhichOneof("kind") in ("seat_control_changed", "chat_message"):
            continue
        bare = pb.MatchEvent()
        bare.CopyFrom(ev)
        bare.ClearField("seq")
        bare.ClearField("time_ms")
        out.append(bare.SerializeToString(deterministic=True))
    return out


def test_an_imported_mid_hand_match_streams_its_whole_history(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=33)
    play_humans(stub, table, until=lambda v: v.hand_number == 1 and len(v.trick) == 2)
    exported = stub.ExportMatch(
        pb.ExportMatchRequest(match_id=table.match_id), metadata=OP, timeout=RPC_TIMEOUT
    )
    imported = stub.ImportMatch(
        pb.ImportMatchRequest(snapshot=exported.snapshot), metadata=OP, timeout=RPC_TIMEOUT
    )
    copy = Table(
        imported.match.match_id, {t.seat: t.token for t in imported.seat_tokens}, imported.match
    )
    last = get_match(stub, table.match_id).last_seq
    for seat in range(4):
        mine = read_until(stream_events(stub, table, seat), last)
        theirs = read_until(stream_events(stub, copy, seat), imported.match.last_seq)
        assert _story(theirs) == _story(mine), f"seat {seat}"
        assert get_view(stub, copy, seat).as_of_seq == imported.match.last_seq
    public = read_until(spectate(stub, copy.match_id), imported.match.last_seq)
    assert _story(public) == _story(read_until(spectate(stub, table.match_id), last))
    assert not any(ev.WhichOneof("kind") == "hand_shown" for ev in public)
    shown = [ev for ev in read_until(stream_events(stub, copy, 2), imported.match.last_seq)]
    assert {ev.hand_shown.seat for ev in shown if ev.WhichOneof("kind") == "hand_shown"} == {2}
    # The copy's seats act from where the original stood.
    seat = seats_to_act(get_view(stub, copy, 0))[0]
    submit(stub, copy, seat, choose(get_view(stub, copy, seat)))


def test_every_bot_level_plays_its_seat_and_search_does_not_stall_the_server(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    levels = [pb.BOT_LEVEL_EXPERT, pb.BOT_LEVEL_HARD, pb.BOT_LEVEL_EXPERT]
    req = pb.CreateMatchRequest(
        seats=[pb.SeatConfig(name="me")]
        + [pb.SeatConfig(name=f"bot{i}", bot=True, bot_level=lv) for i, lv in enumerate(levels)],
        seed=5,
        has_seed=True,
    )
    resp = stub.CreateMatch(req, metadata=OP, timeout=RPC_TIMEOUT)
    table = Table(resp.match.match_id, {0: resp.seat_tokens[0].token}, resp.match)
    public = StreamReader(
        spectate(stub, table.match_id), stop=lambda e: e.HasField("bidding_closed")
    )
    # Seat 0 bids first when seat 3 deals; otherwise bots bid before it.
    deadline = Deadline(30)
    while not get_view(stub, table, 0).legal_actions:
        deadline.check("seat 0's turn to bid")
        stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)  # served while bots think
        time.sleep(POLL)
    view = get_view(stub, table, 0)
    submit(stub, table, 0, choose(view))
    public.join(30)
    assert public.error is None, public.error
    bids = [e.bid_made.seat for e in public.events if e.HasField("bid_made")]
    assert sorted(bids) == [0, 1, 2, 3]


def test_the_optional_exchange_decision_is_public_over_the_api(shared_server: Server) -> None:
    """polish: a blind nil bidder decides whether to exchange; every seat and a
    spectator see the decision, and a decision out of place is refused."""
    stub = shared_server.stub
    table = create_match(stub, seed=11, preset="polish", blind_nil_deficit=0)
    nil = get_view(stub, table, 0).to_act
    submit(stub, table, nil, pb.Action(blind_nil=pb.BlindNilAction()))
    for _ in range(3):
        seat = get_view(stub, table, 0).to_act
        submit(stub, table, seat, pb.Action(look=pb.LookAction()))
        submit(stub, table, seat, pb.Action(bid=pb.BidAction(tricks=3)))
    view = get_view(stub, table, nil)
    assert view.phase == pb.PHASE_EXCHANGE and list(view.exchange_deciders) == [nil]
    assert seats_to_act(view) == [nil]
    decisions = [a for a in view.legal_actions if a.HasField("exchange_decision")]
    assert [a.exchange_decision.exchange for a in decisions] == [True, False]
    partner = (nil + 2) % 4
    decline = pb.Action(exchange_decision=pb.ExchangeDecisionAction(exchange=False))
    refused = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION, submit, stub, table, partner, decline
    )
    assert refused.reason == "NOT_EXCHANGE_DECIDER"
    resp = submit(stub, table, nil, decline)
    (decided,) = [e for e in resp.events if e.HasField("exchange_decided")]
    assert (decided.exchange_decided.seat, decided.exchange_decided.exchange) == (nil, False)
    for seat in range(4):
        v = get_view(stub, table, seat)
        assert v.phase == pb.PHASE_PLAYING
        assert [(d.seat, d.exchange) for d in v.exchange_decisions] == [(nil, False)]
    public = read_until(spectate(stub, table.match_id), get_match(stub, table.match_id).last_seq)
    assert [e.exchange_decided.seat for e in public if e.HasField("exchange_decided")] == [nil]
    refused = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, submit, stub, table, nil, decline)
    assert refused.reason == "WRONG_PHASE"


def test_auction_trump_is_named_over_the_api(shared_server: Server) -> None:
    """auction_trump: the highest bidder names trump with name_trump; the named
    suit is public (event and every view), and a naming out of place is refused."""
    stub = shared_server.stub
    table = create_match(stub, seed=5, auction_trump=True)
    namer = get_view(stub, table, 0).to_act  # the first bidder bids highest
    for tricks in (5, 1, 1, 1):
        seat = get_view(stub, table, 0).to_act
        submit(stub, table, seat, pb.Action(bid=pb.BidAction(tricks=tricks)))
    view = get_view(stub, table, namer)
    assert view.phase == pb.PHASE_BIDDING and view.to_act == namer
    assert (view.trump_namer, view.trump_named) == (namer, False)
    assert [a.name_trump.suit for a in view.legal_actions] == [
        pb.SUIT_CLUBS,
        pb.SUIT_DIAMONDS,
        pb.SUIT_HEARTS,
        pb.SUIT_SPADES,
    ]
    assert seats_to_act(view) == [namer]
    hearts = pb.Action(name_trump=pb.NameTrumpAction(suit=pb.SUIT_HEARTS))
    other = (namer + 1) % 4
    refused = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION, submit, stub, table, other, hearts
    )
    assert refused.reason == "NOT_TRUMP_NAMER"
    no_suit = pb.Action(name_trump=pb.NameTrumpAction())
    expect_failure(grpc.StatusCode.INVALID_ARGUMENT, submit, stub, table, namer, no_suit)
    resp = submit(stub, table, namer, hearts)
    (named,) = [e for e in resp.events if e.HasField("trump_named")]
    assert (named.trump_named.seat, named.trump_named.suit) == (namer, pb.SUIT_HEARTS)
    for seat in range(4):
        v = get_view(stub, table, seat)
        assert v.phase == pb.PHASE_PLAYING
        assert (v.trump, v.trump_namer, v.trump_named) == (pb.SUIT_HEARTS, namer, True)
    public = read_until(spectate(stub, table.match_id), get_match(stub, table.match_id).last_seq)
    assert [e.trump_named.suit for e in public if e.HasField("trump_named")] == [pb.SUIT_HEARTS]
    refused = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION, submit, stub, table, namer, hearts
    )
    assert refused.reason == "TRUMP_ALREADY_NAMED"


def test_bots_and_a_human_name_trump_through_a_whole_match(shared_server: Server) -> None:
    """With auction trump the session waits for the namer, bot or human."""
    stub = shared_server.stub
    table = create_match(stub, bots=(1, 2, 3), seed=12, target_score=100, auction_trump=True)
    final = play_one_seat(stub, table, 0, timeout=60)
    assert final.phase == pb.PHASE_MATCH_OVER
    public = read_until(spectate(stub, table.match_id), get_match(stub, table.match_id).last_seq)
    namers = [e.trump_named.seat for e in public if e.HasField("trump_named")]
    assert len(namers) == len(final.results)  # one naming a hand


def test_two_players_draw_over_the_api_with_a_bot(shared_server: Server) -> None:
    """players=2: the draw (PHASE_DRAW) between a human and a bot, to the end of
    the match; the drawn cards reach the drawing seat only, never the other
    seat's stream nor a spectator's."""
    stub = shared_server.stub
    table = create_match(
        stub, bots=(1,), players=2, seed=8, target_score=60, partnerships=False, jokers=True
    )
    view = get_view(stub, table, 0)
    assert view.phase == pb.PHASE_DRAW and view.stock_size == 52
    if view.to_act == 0:
        assert view.HasField("stock_top")
        assert [a.WhichOneof("kind") for a in view.legal_actions] == ["draw", "draw"]
    else:
        assert not view.HasField("stock_top") and not view.legal_actions
    keep = pb.Action(draw=pb.DrawAction(keep=True))
    final = play_one_seat(stub, table, 0, timeout=60)
    assert final.phase == pb.PHASE_MATCH_OVER
    last = get_match(stub, table.match_id).last_seq
    public = read_until(spectate(stub, table.match_id), last)
    assert any(e.HasField("draw_taken") for e in public)
    assert not any(e.HasField("cards_drawn") for e in public)
    mine = read_until(stream_events(stub, table, 0), last)
    drawn = [e.cards_drawn for e in mine if e.HasField("cards_drawn")]
    assert drawn and {d.seat for d in drawn} == {0}
    assert len(drawn) == 13 * len(final.results)
    refused = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, submit, stub, table, 0, keep)
    assert refused.reason == "MATCH_OVER"


def test_two_humans_draw_and_a_draw_out_of_place_is_refused(shared_server: Server) -> None:
    """players=2 between two humans: only the seat to draw sees the top card;
    a draw out of turn, a bid during the draw and a draw after it are refused."""
    stub = shared_server.stub
    table = create_match(stub, players=2, seed=9, partnerships=False, jokers=True)
    drawer = get_view(stub, table, 0).to_act
    other = 1 - drawer
    keep = pb.Action(draw=pb.DrawAction(keep=True))
    discard = pb.Action(draw=pb.DrawAction())
    waiting = get_view(stub, table, other)
    assert not waiting.HasField("stock_top") and not waiting.legal_actions
    refused = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, submit, stub, table, other, keep)
    assert refused.reason == "NOT_YOUR_TURN"
    bid = pb.Action(bid=pb.BidAction(tricks=3))
    refused = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, submit, stub, table, drawer, bid)
    assert refused.reason == "WRONG_PHASE"
    top = get_view(stub, table, drawer).stock_top
    resp = submit(stub, table, drawer, discard)
    (drawn,) = [e.cards_drawn for e in resp.events if e.HasField("cards_drawn")]
    assert drawn.seat == drawer and drawn.discarded == top
    for turn in range(25):
        seat = get_view(stub, table, 0).to_act
        assert seat == (other if turn % 2 == 0 else drawer)
        resp = submit(stub, table, seat, keep if turn % 3 else discard)
    for seat in (0, 1):
        v = get_view(stub, table, seat)
        assert v.phase == pb.PHASE_BIDDING and v.stock_size == 0
        assert (len(v.hand), len(v.discards)) == (13, 13)
    refused = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, submit, stub, table, other, keep)
    assert refused.reason == "WRONG_PHASE"
    (last_public,) = [e.seq for e in resp.events if e.HasField("draw_taken")]
    spectator_events = read_until(spectate(stub, table.match_id), last_public)
    assert not any(e.HasField("cards_drawn") for e in spectator_events)
    assert sum(e.HasField("draw_taken") for e in spectator_events) == 26
