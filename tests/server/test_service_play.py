"""Play calls: a seat's actions and events on one bidirectional stream, over
real gRPC channels to a real server."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable

import grpc
from server_harness import (
    PlayCall,
    Server,
    Table,
    choose,
    create_match,
    failure_of,
    get_match,
    get_view,
    is_match_ended,
    play_card,
    read_until,
    refusal_of,
    seats_to_act,
    stream_events,
    submit,
    wire,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb


def ended(events: list[pb.MatchEvent]) -> bool:
    return any(is_match_ended(e) for e in events)


def act_and_wait(call: PlayCall, action: pb.Action, **kw: object) -> pb.ActionResult:
    return call.result(call.act(action, **kw))  # type: ignore[arg-type]


def state_of(server: Server, table: Table) -> list[bytes]:
    """Everything observable about a match: its summary and every seat's view."""
    out = [get_match(server.stub, table.match_id).SerializeToString(deterministic=True)]
    views = [get_view(server.stub, table, s) for s in range(4)]
    return out + [v.SerializeToString(deterministic=True) for v in views]


def play_to_the_end(server: Server, table: Table, calls: dict[int, PlayCall]) -> list[str]:
    """Every action sent on the acting seat's Play call; returns the action ids."""
    sent = []
    for _ in range(1000):
        pending = seats_to_act(get_view(server.stub, table, 0))
        if not pending:
            return sent
        seat = pending[0]
        action_id = calls[seat].act(choose(get_view(server.stub, table, seat)))
        result = calls[seat].result(action_id)
        assert not result.HasField("error"), refusal_of(result)
        sent.append(action_id)
    raise AssertionError("still playing after 1000 actions")


def test_four_play_calls_play_a_match_and_each_sees_what_its_stream_sees(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=4242, target_score=100)
    calls = {s: PlayCall(stub, table, s) for s in range(4)}
    streams = {s: stream_events(stub, table, s) for s in range(4)}

    sent = play_to_the_end(shared_server, table, calls)
    last = get_match(stub, table.match_id).last_seq
    assert get_match(stub, table.match_id).phase == pb.PHASE_MATCH_OVER

    for seat, call in calls.items():
        call.wait_for(ended, "the end of the match")
        call.cancel()
        assert call.fault is None, call.fault
        # The same events, batch for batch content, as StreamEvents gives the seat.
        assert wire(call.events) == wire(read_until(streams[seat], last_seq=call.events[-1].seq))
        # Results in the order sent, each after the events its action caused.
        mine = [r.action_id for r in call.results]
        assert mine == [a for a in sent if a in set(mine)]
        for result, seen in zip(call.results, call.seen_at_result, strict=True):
            assert 0 < result.first_seq <= result.last_seq <= seen
    assert sum(len(c.results) for c in calls.values()) == len(sent)
    assert max(r.last_seq for c in calls.values() for r in c.results) == last


def test_a_refused_action_changes_nothing_and_the_call_goes_on(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=77)
    seat = get_view(stub, table, 0).to_act
    other = (seat + 1) % 4
    call, idle = PlayCall(stub, table, seat), PlayCall(stub, table, other)
    call.wait_for(bool, "the opening events")
    seen = call.last_seq
    before = state_of(shared_server, table)

    def refused(on: PlayCall, action: pb.Action, **kw: object) -> tuple[grpc.StatusCode, str]:
        f = refusal_of(act_and_wait(on, action, **kw))
        assert f.reason is not None and f.message
        return f.code, f.reason

    fp, inv = grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT
    assert refused(idle, pb.Action(bid=pb.BidAction(tricks=3))) == (fp, "NOT_YOUR_TURN")
    assert refused(call, pb.Action(bid=pb.BidAction(tricks=14))) == (inv, "BID_OUT_OF_RANGE")
    assert refused(call, play_card(pb.SUIT_SPADES, pb.RANK_ACE)) == (fp, "WRONG_PHASE")
    assert refused(call, pb.Action(bid=pb.BidAction(tricks=3)), action_id="") == (
        inv,
        "BAD_ACTION_ID",
    )
    assert refused(call, pb.Action()) == (inv, "INVALID_ARGUMENT")
    stale = refusal_of(act_and_wait(call, pb.Action(bid=pb.BidAction(tricks=3)), expected_seq=0))
    assert (stale.code, stale.reason) == (fp, "STALE_SEQUENCE")
    assert stale.metadata == {"current_seq": str(seen)}
    illegal = refusal_of(act_and_wait(idle, pb.Action(bid=pb.BidAction(tricks=3))))
    assert illegal.fields == ["action"]
    assert state_of(shared_server, table) == before

    accepted = act_and_wait(call, pb.Action(bid=pb.BidAction(tricks=3)), expected_seq=seen)
    assert not accepted.HasField("error")
    assert accepted.first_seq == seen + 1
    idle.wait_seq(accepted.last_seq)
    assert idle.events[-1].bid_made.tricks == 3
    call.cancel()
    idle.cancel()


def test_an_action_id_is_answered_once_across_play_and_submit_action(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=78)
    seat = get_view(stub, table, 0).to_act
    first = submit(stub, table, seat, pb.Action(bid=pb.BidAction(tricks=2)), action_id="bid-1")
    call = PlayCall(stub, table, seat)
    # The same id again, on the Play call, twice, with another action: the first
    # result each time, and nothing applied again.
    again = [act_and_wait(call, pb.Action(bid=pb.BidAction(tricks=5)), action_id="bid-1")]
    again.append(call.result(call.act(pb.Action(), action_id="ignored-not")))
    assert (again[0].first_seq, again[0].last_seq) == (first.events[0].seq, first.last_seq)
    assert again[1].HasField("error")  # an empty action is still checked first
    assert get_match(stub, table.match_id).last_seq == first.last_seq
    # And an id first used on a Play call answers SubmitAction with its events.
    nxt = (seat + 1) % 4
    on_play = act_and_wait(PlayCall(stub, table, nxt), pb.Action(bid=pb.BidAction(tricks=4)))
    retried = submit(
        stub, table, nxt, pb.Action(bid=pb.BidAction(tricks=1)), action_id=on_play.action_id
    )
    assert retried.last_seq == on_play.last_seq
    assert [e.bid_made.tricks for e in retried.events] == [4]
    call.cancel()


def call_error(call: PlayCall) -> tuple[grpc.StatusCode, str | None]:
    call.join(15)
    assert call.error is not None, "the call should have failed"
    f = failure_of(call.error)
    return f.code, f.reason


def test_a_play_call_opens_first_with_a_seat_token_of_the_match(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=79)
    other = create_match(stub, seed=80)
    inv = grpc.StatusCode.INVALID_ARGUMENT
    bid = pb.PlayRequest(action=pb.PlayAction(action_id="b", action=pb.Action(bid=pb.BidAction())))
    assert call_error(PlayCall(stub, table, 0, first=bid)) == (inv, "OPEN_EXPECTED")
    twice = PlayCall(stub, table, 0)
    twice.send(pb.PlayRequest(open=pb.PlayOpen(match_id=table.match_id)))
    assert call_error(twice) == (inv, "ACTION_EXPECTED")

    def opened_with(token: str, match_id: str) -> tuple[grpc.StatusCode, str | None]:
        forged = Table(match_id, {0: token}, table.summary)
        return call_error(PlayCall(stub, forged, 0))

    mid = table.match_id
    assert opened_with(f"{mid}.nope", mid) == (grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED")
    assert opened_with(other.tokens[0], mid)[0] == grpc.StatusCode.PERMISSION_DENIED
    assert opened_with(f"{'0' * 16}.x", "0" * 16)[0] == grpc.StatusCode.NOT_FOUND


def test_a_play_call_resumes_after_a_sequence_number(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=81, bots=(1, 2, 3))
    for _ in range(3):  # a few of seat 0's actions; the bots answer each
        view = get_view(stub, table, 0)
        while not view.legal_actions:
            view = get_view(stub, table, 0)
        submit(stub, table, 0, choose(view))
    whole = read_until(stream_events(stub, table, 0), get_view(stub, table, 0).as_of_seq)
    middle = whole[len(whole) // 2].seq
    resumed = PlayCall(stub, table, 0, after_seq=middle)
    resumed.wait_seq(whole[-1].seq)
    resumed.cancel()
    assert wire(resumed.events[: len(whole) - len(whole) // 2 - 1]) == wire(
        [e for e in whole if e.seq > middle]
    )


def test_play_calls_are_rate_limited_per_seat(make_server: Callable[..., Server]) -> None:
    server = make_server("--actions-per-second", "1")  # bursts of 2
    table = create_match(server.stub, seed=82)
    seat = get_view(server.stub, table, 0).to_act
    call = PlayCall(server.stub, table, seat)
    results = [act_and_wait(call, pb.Action(bid=pb.BidAction(tricks=14))) for _ in range(3)]
    reasons = [refusal_of(r).reason for r in results]
    assert reasons == ["BID_OUT_OF_RANGE", "BID_OUT_OF_RANGE", "RATE_LIMITED"]
    assert refusal_of(results[2]).code == grpc.StatusCode.RESOURCE_EXHAUSTED
    call.cancel()
    # Operators see Play actions as if each were an RPC named Play.action.
    with urllib.request.urlopen(server.metrics_url, timeout=10) as resp:
        text = resp.read().decode()
    counted = {
        line.split('code="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("spades_rpcs_total{") and 'method="Play.action"' in line
    }
    assert {code: n for code, n in counted.items() if n} == {
        "INVALID_ARGUMENT": 2.0,
        "RESOURCE_EXHAUSTED": 1.0,
    }
    assert 'spades_rpc_latency_seconds_count{method="Play.action"} 3.0' in text


def test_actions_acknowledged_on_a_play_call_survive_kill_9(
    make_server: Callable[..., Server],
) -> None:
    server = make_server()
    table = create_match(server.stub, seed=83, bots=(1, 2, 3))
    call = PlayCall(server.stub, table, 0)
    results = []
    while len(results) < 8:
        view = get_view(server.stub, table, 0)
        if view.legal_actions:
            results.append(act_and_wait(call, choose(view)))
            assert not results[-1].HasField("error"), refusal_of(results[-1])
    acknowledged = call.events[:]  # everything the seat was sent
    server.restart_after_kill()
    assert get_match(server.stub, table.match_id).last_seq >= results[-1].last_seq
    after = PlayCall(server.stub, table, 0)
    after.wait_seq(acknowledged[-1].seq)
    assert wire(after.events[: len(acknowledged)]) == wire(acknowledged)
    retried = act_and_wait(after, pb.Action(bid=pb.BidAction()), action_id=results[-1].action_id)
    assert (retried.first_seq, retried.last_seq) == (results[-1].first_seq, results[-1].last_seq)
    after.cancel()


def test_a_draining_server_ends_play_calls_with_where_to_resume(
    make_server: Callable[..., Server],
) -> None:
    server = make_server()
    table = create_match(server.stub, seed=84)
    call = PlayCall(server.stub, table, 0)
    call.wait_for(bool, "the opening events")
    server.terminate()
    code, reason = call_error(call)
    assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "STREAM_INTERRUPTED")
    message = failure_of(call.error).message  # type: ignore[arg-type]
    # Where to resume: past what the seat saw (and past what it may not see).
    assert int(message.rpartition("after_seq=")[2]) >= call.last_seq
    assert server.wait() == 0


def test_an_action_sent_on_a_cancelled_call_applies_once_when_retried(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=85)
    seat = get_view(stub, table, 0).to_act
    gone = PlayCall(stub, table, seat)
    gone.wait_for(bool, "the opening events")
    gone.act(pb.Action(bid=pb.BidAction(tricks=4)), action_id="lost-1")
    gone.cancel()  # the client vanishes, maybe before the action arrives
    again = PlayCall(stub, table, seat)
    result = act_and_wait(again, pb.Action(bid=pb.BidAction(tricks=4)), action_id="lost-1")
    assert not result.HasField("error"), refusal_of(result)
    again.wait_seq(result.last_seq)
    again.cancel()
    bids = [e for e in again.events if e.HasField("bid_made") and e.bid_made.seat == seat]
    assert [(e.seq, e.bid_made.tricks) for e in bids] == [(result.first_seq, 4)]
