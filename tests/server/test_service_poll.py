"""PollEvents, the long poll for clients whose HTTP stack buffers streams:
resuming across polls with no gap and no duplicate, waiting and waking, the
bound on the wait, per-viewer filtering, refused credentials and input, and
the limits it counts against."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import grpc
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Server,
    Table,
    create_match,
    expect_failure,
    get_view,
    play_humans,
    play_one_seat,
    read_until,
    seat_md,
    spectate,
    stream_events,
    submit,
    wait_until,
    wire,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb
from test_service_streams import check_no_leak

Metadata = Sequence[tuple[str, str]]


def poll(
    stub: Any,
    match_id: str,
    after_seq: int = 0,
    wait_ms: int = 0,
    *,
    metadata: Metadata = (),
    timeout: float | None = RPC_TIMEOUT,
) -> pb.PollEventsResponse:
    request = pb.PollEventsRequest(match_id=match_id, after_seq=after_seq, wait_ms=wait_ms)
    response: pb.PollEventsResponse = stub.PollEvents(
        request, metadata=tuple(metadata), timeout=timeout
    )
    return response


def poll_all(
    stub: Any, match_id: str, metadata: Metadata = (), after_seq: int = 0, *, wait_ms: int = 0
) -> tuple[list[pb.MatchEvent], list[pb.PollEventsResponse]]:
    """Poll until a response says nothing more is there (``more`` false): every
    event, and every response, checked as a client would rely on them."""
    events: list[pb.MatchEvent] = []
    responses = []
    for _ in range(1000):
        resp = poll(stub, match_id, after_seq, wait_ms, metadata=metadata)
        responses.append(resp)
        assert len(resp.events) <= 256
        seqs = [e.seq for e in resp.events]
        assert seqs == sorted(seqs) and all(s > after_seq for s in seqs), (after_seq, seqs)
        assert resp.last_seq >= (seqs[-1] if seqs else after_seq)
        events.extend(resp.events)
        after_seq = resp.last_seq
        if not resp.more:
            return events, responses
    raise AssertionError("still polling after 1000 polls")


def test_polls_resume_with_no_gap_and_no_duplicate(shared_server: Server) -> None:
    stub = shared_server.stub
    # Four hands, long enough for more than one batch of 256 events.
    table = create_match(stub, bots=(1, 2, 3), seed=4242, target_score=1000, no_mercy_score=True)
    md = seat_md(table.tokens[0])
    live: list[pb.MatchEvent] = []
    after = 0

    # Poll while the match is played: each poll takes up where the last ended.
    def poll_some() -> None:
        nonlocal after
        resp = poll(stub, table.match_id, after, 0, metadata=md)
        live.extend(resp.events)
        after = resp.last_seq

    play_one_seat(stub, table, 0, until=lambda v: v.hand_number >= 4, on_step=lambda _: poll_some())
    # Once seat 0 is to act the bots wait for it: nothing more comes.
    wait_until(lambda: bool(get_view(stub, table, 0).legal_actions), "seat 0's turn")
    last = get_view(stub, table, 0).as_of_seq
    while after < last:
        poll_some()
    streamed = read_until(stream_events(stub, table, 0), live[-1].seq)
    assert [e.seq for e in live] == [e.seq for e in streamed]
    assert wire(live) == wire(streamed)

    # From the start: batches of 256, `more` until the last.
    again, responses = poll_all(stub, table.match_id, md)
    assert wire(again) == wire(streamed)
    assert len(streamed) > 256, "a match long enough for several batches"
    assert [len(r.events) for r in responses[:-1]] == [256] * (len(responses) - 1)
    assert [r.more for r in responses] == [True] * (len(responses) - 1) + [False]

    # No credential: the public events, as Spectate has them, resumed mid-way too.
    polled, _ = poll_all(stub, table.match_id)
    public = read_until(spectate(stub, table.match_id), polled[-1].seq)
    assert wire(polled) == wire(public)
    middle = public[len(public) // 2].seq
    tail, _ = poll_all(stub, table.match_id, after_seq=middle)
    assert wire(tail) == wire(e for e in public if e.seq > middle)


def four_humans(stub: Any) -> Table:
    return create_match(stub, seed=77)


def test_each_viewer_polls_only_what_it_may_see(shared_server: Server) -> None:
    stub = shared_server.stub
    table = four_humans(stub)
    # The deal: 1 hand_started, then each seat's hand_shown (2 to 5).
    for seat in range(4):
        resp = poll(stub, table.match_id, metadata=seat_md(table.tokens[seat]))
        kinds = [e.WhichOneof("kind") for e in resp.events]
        assert kinds == ["hand_started", "hand_shown"], kinds
        assert resp.events[1].hand_shown.seat == seat
        # The hidden hands after its own are skipped, not waited for again.
        assert resp.last_seq == 5
        assert not resp.more
        check_no_leak(seat, list(resp.events))
        streamed = read_until(stream_events(stub, table, seat), resp.events[-1].seq)
        assert wire(resp.events) == wire(streamed)
    public = poll(stub, table.match_id)
    assert [e.WhichOneof("kind") for e in public.events] == ["hand_started"]
    assert public.last_seq == 5
    # With a seat token the match id may be left out.
    assert poll(stub, "", metadata=seat_md(table.tokens[2])).events[1].hand_shown.seat == 2

    # After a whole hand, still no leak, for each seat and for no credential.
    play_humans(stub, table, until=lambda v: v.hand_number > 0)
    for seat in (*range(4), None):
        md = () if seat is None else seat_md(table.tokens[seat])
        events, _ = poll_all(stub, table.match_id, md)
        check_no_leak(seat, events)
        if seat is None:
            assert not {e.WhichOneof("kind") for e in events} & {"hand_shown", "chat_message"}


def test_a_poll_waits_then_wakes_on_a_new_event(shared_server: Server) -> None:
    stub = shared_server.stub
    table = four_humans(stub)
    md = seat_md(table.tokens[1])
    first = poll(stub, table.match_id, metadata=md)
    t0 = time.monotonic()
    waiting = stub.PollEvents.future(
        pb.PollEventsRequest(match_id=table.match_id, after_seq=first.last_seq, wait_ms=20_000),
        metadata=md,
        timeout=RPC_TIMEOUT * 3,
    )
    time.sleep(0.5)
    assert not waiting.done(), "nothing happened: the poll waits"
    view = get_view(stub, table, 1)  # seat 1 bids first (seat 0 deals)
    acted = submit(stub, table, view.to_act, get_view(stub, table, view.to_act).legal_actions[0])
    resp = waiting.result(timeout=10)
    took = time.monotonic() - t0
    assert took < 10, f"woken by the bid, not by the wait's end ({took:.1f} s)"
    assert [e.seq for e in resp.events] == [e.seq for e in acted.events]
    assert wire(resp.events) == wire(acted.events)
    assert resp.last_seq == acted.last_seq


def test_the_wait_is_bounded(make_server: Any) -> None:
    server = make_server("--poll-max-wait-ms", "300")
    stub = server.stub
    table = four_humans(stub)
    after = poll(stub, table.match_id).last_seq

    t0 = time.monotonic()
    resp = poll(stub, table.match_id, after, 60_000)  # more than the server's maximum
    took = time.monotonic() - t0
    assert not resp.events and resp.last_seq == after and not resp.more
    assert 0.25 <= took < 3, took

    t0 = time.monotonic()
    resp = poll(stub, table.match_id, after, 0)  # 0: at once
    assert not resp.events and time.monotonic() - t0 < 0.25

    t0 = time.monotonic()
    resp = poll(stub, table.match_id, after, 60_000, timeout=None)  # no deadline at all
    assert not resp.events and 0.25 <= time.monotonic() - t0 < 3

    # An after_seq past the end is refused, as on a stream: the events "after"
    # it would be ones the client claims to have seen already.
    failure = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT, poll, stub, table.match_id, after + 1000, 100
    )
    assert failure.reason == "FUTURE_SEQUENCE" and failure.metadata["current_seq"] == str(after)


def test_a_wait_ends_before_the_calls_deadline(shared_server: Server) -> None:
    stub = shared_server.stub
    table = four_humans(stub)
    after = poll(stub, table.match_id).last_seq
    t0 = time.monotonic()
    resp = poll(stub, table.match_id, after, 25_000, timeout=2.0)  # answered, not DEADLINE_EXCEEDED
    assert not resp.events and resp.last_seq == after
    assert time.monotonic() - t0 < 2.0


def test_a_credential_that_is_not_a_seat_token_is_refused(shared_server: Server) -> None:
    stub = shared_server.stub
    table = four_humans(stub)
    other = four_humans(stub)
    match_id = table.match_id
    U = grpc.StatusCode.UNAUTHENTICATED
    for md in (
        OP,  # the operator credential is no seat's
        (("authorization", "Bearer not-a-token"),),
        (("authorization", f"Bearer {match_id}.wrong-secret"),),
        (("authorization", f"Basic {table.tokens[0]}"),),  # not Bearer
        (("authorization", "Bearer "),),
        (("authorization", ""),),
    ):
        f = expect_failure(U, poll, stub, match_id, metadata=md)
        assert f.reason == "UNAUTHENTICATED", (md, f)
    f = expect_failure(
        grpc.StatusCode.PERMISSION_DENIED,
        poll,
        stub,
        match_id,
        metadata=seat_md(other.tokens[0]),
    )
    assert f.reason == "WRONG_MATCH"


def test_bad_requests_are_refused(shared_server: Server) -> None:
    stub = shared_server.stub
    table = four_humans(stub)
    for md in ((), seat_md(table.tokens[0])):
        f = expect_failure(
            grpc.StatusCode.INVALID_ARGUMENT, poll, stub, table.match_id, 0, -1, metadata=md
        )
        assert f.reason == "BAD_WAIT_MS" and f.fields == ["wait_ms"], f
    f = expect_failure(grpc.StatusCode.NOT_FOUND, poll, stub, "0123456789abcdef")
    assert f.reason == "MATCH_NOT_FOUND"
    f = expect_failure(grpc.StatusCode.NOT_FOUND, poll, stub, "")
    assert f.reason == "MATCH_NOT_FOUND"
    f = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, poll, stub, "x" * 65)
    assert f.reason == "BAD_MATCH_ID"


def test_polls_count_against_the_servers_limits(make_server: Any) -> None:
    server = make_server("--streams-per-match", "2", "--max-calls", "3")
    stub = server.stub
    a, b = four_humans(stub), four_humans(stub)
    after = poll(stub, a.match_id).last_seq

    def wait_on(table: Table) -> Any:
        return stub.PollEvents.future(
            pb.PollEventsRequest(match_id=table.match_id, after_seq=after, wait_ms=20_000),
            timeout=30,
        )

    waiting = [wait_on(a), wait_on(a)]
    time.sleep(0.5)
    # Two polls wait on match a: a third viewer of it is one too many.
    f = expect_failure(grpc.StatusCode.RESOURCE_EXHAUSTED, poll, stub, a.match_id, after, 1000)
    assert f.reason == "TOO_MANY_STREAMS"
    f = expect_failure(
        grpc.StatusCode.RESOURCE_EXHAUSTED, lambda: read_until(spectate(stub, a.match_id), 1)
    )
    assert f.reason == "TOO_MANY_STREAMS"
    # With a third poll waiting (on b), the server holds its --max-calls.
    waiting.append(wait_on(b))
    time.sleep(0.5)
    f = expect_failure(
        grpc.StatusCode.RESOURCE_EXHAUSTED, stub.Ping, pb.PingRequest(), timeout=RPC_TIMEOUT
    )
    assert f.reason == "TOO_MANY_CALLS"
    for call in waiting:
        call.cancel()
    wait_until(lambda: all(c.done() for c in waiting), "the polls to end")

    def ping_answers() -> bool:
        try:
            stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
        except grpc.RpcError:
            return False
        return True

    wait_until(ping_answers, "the cancelled polls to free their calls")


def test_a_waiting_poll_ends_when_the_server_stops(make_server: Any) -> None:
    server = make_server()
    stub = server.stub
    table = four_humans(stub)
    after = poll(stub, table.match_id).last_seq
    waiting = stub.PollEvents.future(
        pb.PollEventsRequest(match_id=table.match_id, after_seq=after, wait_ms=20_000),
        timeout=30,
    )
    time.sleep(0.5)
    t0 = time.monotonic()
    server.terminate()
    f = expect_failure(grpc.StatusCode.UNAVAILABLE, waiting.result, timeout=15)
    assert f.reason == "STREAM_INTERRUPTED", f
    assert f"after_seq={after}" in f.message
    assert time.monotonic() - t0 < 5
    assert server.wait() == 0
