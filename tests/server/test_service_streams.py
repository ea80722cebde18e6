"""Event streams over gRPC: what each seat and a spectator may see, resuming
a stream after a disconnect, and partner chat."""

from __future__ import annotations

import contextlib
import random
import threading
from typing import Any

import grpc
from server_harness import (
    RPC_TIMEOUT,
    Server,
    Step,
    StreamReader,
    Table,
    card_key,
    cards_in,
    choose,
    create_match,
    expect_failure,
    failure_of,
    get_match,
    get_view,
    is_match_ended,
    play_humans,
    play_one_seat,
    seat_md,
    spectate,
    stream_events,
    submit,
    wait_until,
    wire,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb


def check_no_leak(seat: int | None, events: list[pb.MatchEvent]) -> None:
    """A viewer learns cards only from its own HandShown, an exchange it takes
    part in, or a card being played; every other card it is sent must be its
    own or already played this hand."""
    own: set[tuple[int, int]] = set()
    played: set[tuple[int, int]] = set()
    for ev in events:
        what = ev.WhichOneof("kind")
        cards = {card_key(c) for c in cards_in(ev)}
        where = f"seat {seat}, seq {ev.seq} ({what})"
        if what == "hand_started":
            own, played = set(), set()
        elif what == "hand_shown":
            assert seat is not None, f"a spectator was sent a hand: {where}"
            assert ev.hand_shown.seat == seat, f"another seat's hand: {where}"
            own = cards
        elif what == "cards_passed":
            passed = ev.cards_passed
            assert seat in (passed.from_seat, passed.to_seat), f"someone else's pass: {where}"
            if passed.from_seat == seat:
                assert cards <= own, f"passed cards it did not hold: {where}"
                own -= cards
            else:
                own |= cards
        elif what == "card_played":
            card = card_key(ev.card_played.card)
            if ev.card_played.seat == seat:
                assert card in own, f"played a card it was never shown: {where}"
            own.discard(card)
            played.add(card)
        else:
            assert cards <= played, f"cards not yet played: {where}: {cards - played}"


def test_each_seat_sees_only_its_own_cards_and_a_spectator_sees_none(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    # Blind nil at any score with a two-card exchange, so CardsPassed happens.
    table = create_match(
        stub,
        seed=1234,
        target_score=100,
        blind_nil=True,
        blind_nil_deficit=0,
        blind_nil_exchange=2,
    )
    seats = {s: StreamReader(stream_events(stub, table, s), stop=is_match_ended) for s in range(4)}
    public = StreamReader(spectate(stub, table.match_id), stop=is_match_ended)

    def chooser(seat: int, view: pb.SeatView) -> pb.Action:
        # The first bidder of every even hand bids blind nil.
        blind = view.hand_number % 2 == 0 and not any(b.has_bid for b in view.bids)
        return choose(view, blind_nil=blind)

    steps = play_humans(stub, table, chooser=chooser, timeout=60)
    summary = get_match(stub, table.match_id)
    assert summary.phase == pb.PHASE_MATCH_OVER
    assert any(s.action.HasField("pass_cards") for s in steps), "an exchange happened"

    for reader in (*seats.values(), public):
        reader.join(30)
        assert reader.error is None, reader.error
        assert reader.events[-1].seq == summary.last_seq

    for seat, reader in seats.items():
        check_no_leak(seat, reader.events)
        kinds = [e.WhichOneof("kind") for e in reader.events]
        assert "hand_shown" in kinds
        assert "cards_passed" in kinds or seat not in {
            s.seat for s in steps if s.action.HasField("pass_cards")
        }
    check_no_leak(None, public.events)
    public_kinds = {e.WhichOneof("kind") for e in public.events}
    assert not public_kinds & {"hand_shown", "cards_passed", "chat_message"}
    assert "card_played" in public_kinds

    # Every event reached some seat, the public ones reached every seat, in order.
    seen = [{e.seq for e in r.events} for r in seats.values()]
    assert set().union(*seen) == set(range(1, summary.last_seq + 1))
    public_seqs = [e.seq for e in public.events]
    for reader, seqs in zip(seats.values(), seen, strict=True):
        assert set(public_seqs) <= seqs
        assert [e.seq for e in reader.events] == sorted(seqs)
        mine = {e.seq: e for e in reader.events}
        assert wire(mine[e.seq] for e in public.events) == wire(public.events)


def test_a_resumed_stream_has_no_gap_and_no_duplicate(shared_server: Server) -> None:
    stub = shared_server.stub
    rng = random.Random(20240611)
    table = create_match(stub, bots=(1, 2, 3), seed=99, target_score=100)
    whole = StreamReader(stream_events(stub, table, 0), stop=is_match_ended)
    cut_after = rng.randint(3, 60)
    first = StreamReader(stream_events(stub, table, 0), limit=cut_after)

    # Play until the first stream has been cut, then a few more actions.
    more = rng.randint(3, 10)
    after_cut: list[Step] = []

    def count(step: Step) -> None:
        if first.done:
            after_cut.append(step)

    view = play_one_seat(stub, table, 0, until=lambda v: len(after_cut) >= more, on_step=count)
    first.join()
    assert first.error is None
    assert len(first.events) == cut_after
    last_seen = first.last_seq
    assert view.phase != pb.PHASE_MATCH_OVER, "resume while the match is still going"
    assert view.as_of_seq > last_seen, "events happened while disconnected"

    resumed = StreamReader(stream_events(stub, table, 0, after_seq=last_seen), stop=is_match_ended)
    play_one_seat(stub, table, 0)
    for reader in (whole, resumed):
        reader.join(30)
        assert reader.error is None, reader.error

    union = first.events + resumed.events
    assert [e.seq for e in union] == [e.seq for e in whole.events]
    assert wire(union) == wire(whole.events)
    replayed = StreamReader(stream_events(stub, table, 0), stop=is_match_ended)
    replayed.join()
    assert wire(replayed.events) == wire(whole.events)
    # A spectator resuming mid-way gets the public tail exactly.
    everything = StreamReader(spectate(stub, table.match_id), stop=is_match_ended)
    everything.join()
    middle = everything.events[len(everything.events) // 2].seq
    tail = StreamReader(spectate(stub, table.match_id, after_seq=middle), stop=is_match_ended)
    tail.join()
    assert wire(tail.events) == wire(e for e in everything.events if e.seq > middle)


def chat(stub: Any, table: Table, seat: int, text: str) -> pb.SendChatResponse:
    return stub.SendChat(
        pb.SendChatRequest(match_id=table.match_id, text=text),
        metadata=seat_md(table.tokens[seat]),
        timeout=RPC_TIMEOUT,
    )


def test_partner_chat_reaches_the_partner_only_and_only_during_bidding(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=77)
    readers = {s: StreamReader(stream_events(stub, table, s)) for s in range(4)}
    public = StreamReader(spectate(stub, table.match_id))

    said_0 = chat(stub, table, 0, "bid high, partner").seq
    said_1 = chat(stub, table, 1, "x" * 200).seq  # the longest line allowed
    too_long = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, chat, stub, table, 2, "y" * 201)
    assert too_long.reason == "CHAT_TEXT_INVALID"
    assert too_long.fields == ["text"]
    blank = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, chat, stub, table, 2, "")
    assert blank.reason == "CHAT_TEXT_INVALID"

    # A public marker after the chat: once every stream has it, all chat is delivered.
    seat = get_view(stub, table, 0).to_act
    marker = submit(stub, table, seat, choose(get_view(stub, table, seat))).last_seq
    for reader in (*readers.values(), public):
        reader.wait_seq(marker)

    def chat_lines(reader: StreamReader) -> list[tuple[int, int, str]]:
        return [
            (e.seq, e.chat_message.seat, e.chat_message.text)
            for e in reader.events
            if e.HasField("chat_message")
        ]

    line_0 = (said_0, 0, "bid high, partner")
    line_1 = (said_1, 1, "x" * 200)
    assert chat_lines(readers[0]) == [line_0]
    assert chat_lines(readers[2]) == [line_0]
    assert chat_lines(readers[1]) == [line_1]
    assert chat_lines(readers[3]) == [line_1]
    assert chat_lines(public) == []
    for s in (1, 3):
        assert said_0 not in {e.seq for e in readers[s].events}
    for s in (0, 2):
        assert said_1 not in {e.seq for e in readers[s].events}

    play_humans(stub, table, until=lambda v: v.phase == pb.PHASE_PLAYING)
    before = get_match(stub, table.match_id)
    closed = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, chat, stub, table, 0, "too late")
    assert closed.reason == "CHAT_CLOSED"
    assert get_match(stub, table.match_id) == before
    for reader in (*readers.values(), public):
        reader.cancel()
        assert reader.error is not None and reader.error.code() == grpc.StatusCode.CANCELLED

    cutthroat = create_match(stub, seed=1, partnerships=False)
    alone = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION, chat, stub, cutthroat, 0, "anyone there?"
    )
    assert alone.reason == "NO_PARTNER"


def test_stream_responses_batch_what_one_change_caused(shared_server: Server) -> None:
    """Catching up, a stream sends full batches of 256 events; live, one message
    carries everything one action caused (a card, the trick it ends, the score)."""
    stub = shared_server.stub
    table = create_match(stub, bots=(1, 2, 3), seed=5, no_mercy_score=True)
    play_one_seat(stub, table, 0, until=lambda v: v.hand_number >= 5)  # well over 256 events
    wait_until(lambda: bool(get_view(stub, table, 0).legal_actions), "seat 0's turn: all quiet")
    total = get_match(stub, table.match_id).last_seq
    sizes: list[int] = []
    seqs: list[int] = []
    call = stub.Spectate(pb.SpectateRequest(match_id=table.match_id), timeout=3)
    with contextlib.suppress(grpc.RpcError):  # DEADLINE_EXCEEDED once all is read
        for resp in call:
            sizes.append(len(resp.events))
            seqs += [e.seq for e in resp.events]
    public = len(seqs)
    assert public > 256
    assert sizes == [256] * (public // 256) + ([public % 256] if public % 256 else [])
    assert seqs == sorted(set(seqs)) and seqs[-1] <= total

    # Live: the last card of a hand, its trick, the hand's score and the next
    # deal (this seat's new cards included) arrive as one message.
    live = create_match(stub, seed=6)
    batches: list[list[str]] = []
    call = stream_events(stub, live, 1)

    def read() -> None:
        with contextlib.suppress(grpc.RpcError):
            for resp in call:
                batches.append([e.WhichOneof("kind") for e in resp.events])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    wait_until(lambda: bool(batches), "the opening batch")
    assert batches[0] == ["hand_started", "hand_shown"]
    play_humans(stub, live, until=lambda v: v.hand_number == 1)
    wait_until(lambda: any("hand_scored" in b for b in batches), "the end of the hand")
    call.cancel()
    reader.join(10)
    # A batch may also hold earlier changes the stream had not written yet, but
    # never splits one change: what caused an event is in the same message.
    causes = {
        "bidding_closed": ["bid_made"],
        "trick_won": ["card_played"],
        "hand_scored": ["card_played", "trick_won"],
    }
    seen = {kind: 0 for kind in causes}
    for batch in batches:
        for i, kind in enumerate(batch):
            if kind in causes:
                seen[kind] += 1
                before = causes[kind]
                assert batch[i - len(before) : i] == before, batch
    assert seen == {"bidding_closed": 1, "trick_won": 13, "hand_scored": 1}
    end = next(b for b in batches if "hand_scored" in b)
    assert end[-4:] == ["trick_won", "hand_scored", "hand_started", "hand_shown"]


def test_resuming_after_a_sequence_the_match_has_not_reached_is_refused(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=5)
    end = get_match(stub, table.match_id).last_seq
    for call in (
        stream_events(stub, table, 0, after_seq=end + 1),
        spectate(stub, table.match_id, after_seq=end + 1000),
    ):
        reader = StreamReader(call)
        reader.join(10)
        assert reader.error is not None and reader.error.code() == grpc.StatusCode.INVALID_ARGUMENT
        refused = failure_of(reader.error)
        assert refused.reason == "FUTURE_SEQUENCE" and refused.metadata["current_seq"] == str(end)
        assert not reader.events
    # The last sequence itself is fine: nothing yet, then the next event.
    reader = StreamReader(spectate(stub, table.match_id, after_seq=end))
    seat = stub.GetView(
        pb.GetViewRequest(match_id=table.match_id), metadata=seat_md(table.tokens[0]), timeout=10
    ).view.to_act
    submit(stub, table, seat, choose(get_view(stub, table, seat)))
    reader.wait_for(bool, "the next event")
    reader.cancel()
    assert reader.events[0].seq > end
