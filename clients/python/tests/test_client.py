"""What a user of spades_client notices, against a real server (serve.py):
typed refusals, a session that resumes after a dropped connection without a
gap or a repeat, retries that apply an action once, cancellation, deadlines,
and the synchronous wrapper."""

from __future__ import annotations

import asyncio
import socket

import grpc
import pytest
from harness import Harness, run

import spades_client as sc
from spades_client import pb, sync

WAIT_S = 20.0


async def table(
    client: sc.Client, *, seed: int = 5, level: pb.BotLevel.ValueType = pb.BOT_LEVEL_RANDOM
) -> sc.Seat:
    """A classic match, the client at seat 0 (first to bid with these seeds),
    three bots; the seat claimed."""
    created = await client.create_match(
        ruleset=pb.Ruleset(preset="classic"),
        seats=[sc.human("Me"), *sc.bots(3, level)],
        seed=seed,
    )
    seat = client.seat(sc.seat_token(created, 0))
    await seat.claim()
    return seat


async def my_turn(seat: sc.Seat) -> pb.SeatView:
    async with asyncio.timeout(WAIT_S):
        while True:
            view = await seat.view()
            if view.legal_actions or view.phase == pb.PHASE_MATCH_OVER:
                return view
            await asyncio.sleep(0.005)


async def play_turns(seat: sc.Seat, session: sc.Session, n: int) -> list[pb.ActionResult]:
    """Act ``n`` times by the first legal action."""
    results = []
    for _ in range(n):
        view = await my_turn(seat)
        results.append(await session.act(view.legal_actions[0], timeout=WAIT_S))
    return results


async def read_through(session: sc.Session, seq: int) -> list[pb.MatchEvent]:
    """The session's events until one numbered ``seq`` or later."""
    events: list[pb.MatchEvent] = []
    async with asyncio.timeout(WAIT_S):
        async for event in session:
            events.append(event)
            if event.seq >= seq:
                return events
    raise AssertionError(f"the session ended before seq {seq}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# -- errors ---------------------------------------------------------------------------


def test_unary_refusals_are_typed(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            with pytest.raises(sc.SpadesError) as wrong_seats:
                await client.create_match(seats=[sc.human("Alone")])
            e = wrong_seats.value
            assert e.code is grpc.StatusCode.INVALID_ARGUMENT
            assert (e.reason, e.fields, e.domain) == ("WRONG_SEAT_COUNT", ("seats",), "spades.v1")
            assert e.field_violations[0].description == e.message
            assert e.rule is None

            seat = await table(client)
            with pytest.raises(sc.SpadesError) as wrong_token:
                await client.seat(f"{seat.match_id}.not-the-secret").view()
            assert wrong_token.value.code is grpc.StatusCode.UNAUTHENTICATED
            assert wrong_token.value.reason == "UNAUTHENTICATED"

            # A card during the bidding: a rule refusal, with the rule's sentence.
            card = sc.play_card(sc.card(pb.SUIT_SPADES, pb.RANK_ACE))
            with pytest.raises(sc.SpadesError) as rule:
                await seat.submit(card)
            assert rule.value.code is grpc.StatusCode.FAILED_PRECONDITION
            assert rule.value.reason == "WRONG_PHASE"
            assert rule.value.rule == "each action belongs to one phase of the hand"
            assert rule.value.fields == ("action",)

        async with sc.connect(harness.address, operator_token="not-the-operator") as stranger:
            with pytest.raises(sc.SpadesError) as denied:
                await stranger.list_matches()
            assert (denied.value.code, denied.value.reason) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "NOT_OPERATOR",
            )

    run(main())


def test_refusals_on_the_play_stream_are_typed_and_the_session_goes_on(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            seat = await table(client)
            async with seat.session() as session:
                with pytest.raises(sc.SpadesError) as out_of_range:
                    await session.act(sc.bid(14), timeout=WAIT_S)
                assert out_of_range.value.code is grpc.StatusCode.INVALID_ARGUMENT
                assert out_of_range.value.reason == "BID_OUT_OF_RANGE"
                assert out_of_range.value.rule  # the rule's sentence
                assert out_of_range.value.fields == ("action",)

                with pytest.raises(sc.SpadesError) as stale:
                    await session.act(sc.bid(3), expected_seq=0, timeout=WAIT_S)
                assert stale.value.code is grpc.StatusCode.FAILED_PRECONDITION
                assert stale.value.reason == "STALE_SEQUENCE"
                assert int(stale.value.metadata["current_seq"]) > 0

                result = await session.act(sc.bid(3), timeout=WAIT_S)  # still open
                assert 0 < result.first_seq <= result.last_seq
                assert session.failure is None

    run(main())


# -- resuming ---------------------------------------------------------------------------


def test_a_cut_session_resumes_without_a_gap_or_a_repeat(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            seat = await table(client, seed=9)
            async with seat.session() as session:
                received: list[pb.MatchEvent] = []

                async def collect() -> None:
                    async for event in session:
                        received.append(event)

                reader = asyncio.create_task(collect())
                for _ in range(3):
                    await play_turns(seat, session, 2)
                    assert await harness.cut_async() >= 1
                await play_turns(seat, session, 2)
                last = (await seat.view()).as_of_seq
                async with asyncio.timeout(WAIT_S):
                    while session.last_seq < last:
                        await asyncio.sleep(0.01)
                assert session.reconnects >= 3
            await reader

            # The same events a fresh session reads from the start, once each.
            async with seat.session() as fresh:
                replay = await read_through(fresh, received[-1].seq)
            assert [e.SerializeToString() for e in received] == [
                e.SerializeToString() for e in replay
            ]
            seqs = [e.seq for e in received]
            assert seqs == sorted(set(seqs))

    run(main())


def test_an_action_sent_into_a_cut_is_applied_once(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            seat = await table(client, seed=13)
            async with seat.session() as session:
                view = await my_turn(seat)
                pending = session.send(view.legal_actions[0])
                await harness.cut_async()
                result = await pending.result(WAIT_S)
                events = await read_through(session, result.last_seq)
            mine = [e for e in events if e.HasField("bid_made") and e.bid_made.seat == 0]
            assert len(mine) == 1 and mine[0].seq == result.first_seq

    run(main())


def test_the_same_action_id_gets_the_first_result(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            seat = await table(client, seed=17)
            async with seat.session() as session:
                view = await my_turn(seat)
                action_id = sc.new_action_id()
                first = await session.act(view.legal_actions[0], action_id=action_id)
                await play_turns(seat, session, 1)  # the match moves on
                again = await session.act(view.legal_actions[0], action_id=action_id)
                assert (again.first_seq, again.last_seq) == (first.first_seq, first.last_seq)
                # SubmitAction answers the id from the Play call the same way.
                unary = await seat.submit(view.legal_actions[0], action_id=action_id)
                assert unary.last_seq == first.last_seq

    run(main())


# -- ending, cancelling, deadlines ------------------------------------------------------


def test_closing_a_session_fails_what_waits_and_ends_the_events(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            seat = await table(client, seed=21)
            session = await seat.session().open()
            events = asyncio.create_task(read_through(session, 10**9))
            await asyncio.sleep(0.2)  # the first events are in
            await session.close()
            assert session.closed
            with pytest.raises(AssertionError, match="ended before"):
                await events  # the iteration ended, no error
            with pytest.raises(sc.SessionClosed):
                session.send(sc.bid(3))
            with pytest.raises(sc.SessionClosed):
                await session.next_event()

            # An action still waiting when the session closes fails with SessionClosed.
            dead = sc.Client(
                grpc.aio.insecure_channel(f"127.0.0.1:{free_port()}"),
                backoff=sc.Backoff(initial_s=0.01, max_s=0.05, max_attempts=1000),
            )
            stuck = await dead.seat(seat.token).session().open()
            pending = stuck.send(sc.bid(3))
            await asyncio.sleep(0.1)
            await dead.close()  # closes its sessions too
            with pytest.raises(sc.SessionClosed):
                await pending

    run(main())


def test_cancelling_a_wait_leaves_the_session_usable(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            seat = await table(client, seed=25)
            async with seat.session() as session:
                reader = asyncio.create_task(read_through(session, 10**9))
                await asyncio.sleep(0.1)
                reader.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await reader
                await play_turns(seat, session, 2)  # events and results still come
                assert session.failure is None and not session.closed

    run(main())


def test_deadlines_and_giving_up(harness: Harness) -> None:
    async def main() -> None:
        # A listener that never answers: the call waits for its deadline.
        with socket.socket() as hole:
            hole.bind(("127.0.0.1", 0))
            hole.listen(8)
            address = f"127.0.0.1:{hole.getsockname()[1]}"
            async with sc.connect(address, timeout=0.3) as hurried:  # every call's
                with pytest.raises(sc.SpadesError) as late:
                    await hurried.seat("m.secret").view()
                assert late.value.code is grpc.StatusCode.DEADLINE_EXCEEDED
            async with sc.connect(address) as patient:
                with pytest.raises(sc.SpadesError) as later:  # one call's own
                    await patient.seat("m.secret").view(timeout=0.2)
                assert later.value.code is grpc.StatusCode.DEADLINE_EXCEEDED

        backoff = sc.Backoff(initial_s=0.01, max_s=0.05, max_attempts=3)
        async with sc.connect(f"127.0.0.1:{free_port()}", backoff=backoff) as nowhere:
            session = await nowhere.seat("m.secret").session().open()
            pending = session.send(sc.bid(3))
            with pytest.raises(TimeoutError):
                await pending.result(0.001)  # still pending after that
            with pytest.raises(sc.ConnectionLost) as lost:
                await session.next_event(WAIT_S)
            assert lost.value.code is grpc.StatusCode.UNAVAILABLE
            assert lost.value.attempts == 3
            with pytest.raises(sc.ConnectionLost):
                await pending
            with pytest.raises(sc.ConnectionLost):
                await nowhere.ping()

    run(main())


def test_spectating_resumes_after_a_cut(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            seat = await table(client, seed=29)
            watched: list[pb.MatchEvent] = []
            async with seat.session() as session:
                await play_turns(seat, session, 3)
                stream = client.spectate(seat.match_id)
                async with asyncio.timeout(WAIT_S):
                    async for event in stream:
                        watched.append(event)
                        if len(watched) == 3:
                            await harness.cut_async()
                        if event.seq >= session.last_seq:
                            break
            seqs = [e.seq for e in watched]
            assert seqs == sorted(set(seqs)) and len(seqs) > 3
            assert not any(e.HasField("hand_shown") for e in watched)  # public only

    run(main())


# -- the synchronous wrapper ------------------------------------------------------------


def test_the_synchronous_client_plays_a_few_turns(harness: Harness) -> None:
    with sync.connect(harness.address, operator_token=harness.operator_token) as client:
        created = client.create_match(seats=[sc.human("Me"), *sc.bots(3)], seed=33)
        seat = client.seat(sc.seat_token(created, 0))
        assert seat.claim().seat == 0
        with seat.session() as session:
            acted = 0
            for event in session.events(timeout=WAIT_S):
                assert event.seq > 0
                legal = seat.legal_actions()
                if legal:
                    result = session.act(legal[0])
                    assert result.last_seq >= result.first_seq > 0
                    acted += 1
                if acted == 3:
                    break
        with pytest.raises(sc.SpadesError) as refused:
            seat.submit(sc.bid(99))
        assert refused.value.reason in ("BID_OUT_OF_RANGE", "NOT_YOUR_TURN", "WRONG_PHASE")
        assert client.get_match(seat.match_id).match_id == seat.match_id


def test_operator_calls_and_leaving_a_seat(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            await table(client, seed=36)
            seat = await table(client, seed=37)
            summary = await client.get_match(seat.match_id)
            assert summary.match_id == seat.match_id and len(summary.seats) == 4
            page = await client.list_matches(page_size=1)
            assert [m.match_id for m in page.matches] == [seat.match_id]  # newest first
            assert page.next_page_token
            ids = [m.match_id async for m in client.matches(page_size=2)]
            assert seat.match_id in ids and len(ids) == len(set(ids)) > 1

            assert await seat.leave() == 0
            view = await seat.view()
            assert view.seats[0].control == pb.SEAT_CONTROL_BOT_STANDING_IN
            claimed = await seat.claim()
            assert claimed.view.seats[0].control == pb.SEAT_CONTROL_HUMAN

    run(main())


def test_a_view_is_asked_at_least_as_new_as_what_the_seat_has_seen(harness: Harness) -> None:
    async def main() -> None:
        async with sc.connect(harness.address, operator_token=harness.operator_token) as client:
            seat = await table(client)
            assert seat.seen_seq == 0
            view = await my_turn(seat)
            assert seat.seen_seq == view.as_of_seq
            done = await seat.submit(view.legal_actions[0])
            assert seat.seen_seq == done.last_seq  # what the next view must include
            assert (await seat.view()).as_of_seq >= done.last_seq
            async with seat.session() as session:
                await read_through(session, done.last_seq)
                assert seat.seen_seq >= session.last_seq
            # A seq the match has not reached: refused, not waited for.
            with pytest.raises(sc.SpadesError) as ahead:
                await seat.view(min_seq=seat.seen_seq + 10_000)
            assert (ahead.value.code, ahead.value.reason) == (
                grpc.StatusCode.OUT_OF_RANGE,
                "SEQ_AHEAD",
            )
            assert ahead.value.fields == ("min_seq",)

    run(main())
