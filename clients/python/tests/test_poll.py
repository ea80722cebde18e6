"""Long polls (``Seat.poll_events``, ``Client.poll_spectate``) against a real
server (serve.py): the same events as the streams, in the same order, each
once; batches of 256 with ``more``; resuming after a given sequence number and
across dropped connections; no hidden card for a spectator; closing cancels
the waiting poll; typed refusals."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import pytest
from harness import Harness, run

import spades_client as sc
from spades_client import pb

WAIT_S = 20.0
FAST = sc.Backoff(initial_s=0.02, max_s=0.5, max_attempts=10)
PRIVATE = {"hand_shown", "cards_passed", "chat_message", "cards_drawn"}
T = TypeVar("T")


@dataclass
class Poll:
    """One PollEvents call: its request, and its answer or failure."""

    request: pb.PollEventsRequest
    authorization: str | None
    timeout: float | None
    response: pb.PollEventsResponse | None = None
    error: grpc.RpcError | None = None
    cancelled: bool = False

    @property
    def ended(self) -> bool:
        return self.response is not None or self.error is not None or self.cancelled


class PollLog(grpc.aio.UnaryUnaryClientInterceptor):
    """Records every PollEvents call a client makes."""

    def __init__(self) -> None:
        self.calls: list[Poll] = []

    async def intercept_unary_unary(
        self,
        continuation: Callable[
            [grpc.aio.ClientCallDetails, Any], Awaitable[grpc.aio.UnaryUnaryCall[Any, Any]]
        ],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        call = await continuation(client_call_details, request)
        method = client_call_details.method
        name = method.decode() if isinstance(method, bytes) else str(method)
        if not name.endswith("/PollEvents"):
            return call
        auth = dict(client_call_details.metadata or ()).get("authorization")
        entry = Poll(request, None if auth is None else str(auth), client_call_details.timeout)
        self.calls.append(entry)
        try:
            entry.response = await call
        except grpc.RpcError as e:
            entry.error = e
        except asyncio.CancelledError:
            entry.cancelled = True
            raise
        return call


@contextlib.asynccontextmanager
async def logged_client(harness: Harness) -> AsyncIterator[tuple[sc.Client, PollLog]]:
    log = PollLog()
    channel = grpc.aio.insecure_channel(harness.address, interceptors=[log])
    client = sc.Client(channel, operator_token=harness.operator_token, backoff=FAST)
    try:
        yield client, log
    finally:
        await client.close()


async def bot_match(
    client: sc.Client, seed: int, level: pb.BotLevel.ValueType = pb.BOT_LEVEL_EASY
) -> sc.Seat:
    """Seat 0 claimed, three bots; a side wins at 300 (no mercy score: the
    match does not end after one bad hand)."""
    created = await client.create_match(
        ruleset=pb.Ruleset(preset="classic", target_score=300, no_mercy_score=True),
        seats=[sc.human("Me"), *sc.bots(3, level)],
        seed=seed,
    )
    seat = client.seat(sc.seat_token(created, 0))
    await seat.claim()
    return seat


async def quiet_match(client: sc.Client, seed: int) -> list[sc.Seat]:
    """Four human seats: nothing happens until the test acts, so a poll waits."""
    created = await client.create_match(seats=[sc.human(n) for n in "SWNE"], seed=seed)
    return [client.seat(t.token) for t in created.seat_tokens]


async def finished_match(client: sc.Client, seed: int) -> sc.Seat:
    """A match its bots play to the end by themselves (seat 0 left to its stand-in)."""
    seat = await bot_match(client, seed, pb.BOT_LEVEL_NORMAL)
    await seat.leave()
    async with asyncio.timeout(60):
        while (await seat.view()).phase != pb.PHASE_MATCH_OVER:
            await asyncio.sleep(0.1)
    return seat


async def aclose(events: AsyncIterator[Any]) -> None:
    """Close an event iterator (an async generator): its poll, if one waits, is cancelled."""
    close: Callable[[], Awaitable[None]] = getattr(events, "aclose")  # noqa: B009
    await close()


@contextlib.asynccontextmanager
async def closing(events: AsyncIterator[T]) -> AsyncIterator[AsyncIterator[T]]:
    try:
        yield events
    finally:
        await aclose(events)


async def read_to_the_end(events: AsyncIterator[pb.MatchEvent]) -> list[pb.MatchEvent]:
    """A finished match's events up to its match_ended; closes the iterator."""
    out: list[pb.MatchEvent] = []
    async with closing(events), asyncio.timeout(WAIT_S):
        async for event in events:
            out.append(event)
            if event.HasField("match_ended"):
                return out
    raise AssertionError("the events ended before match_ended")


async def read_through(events: AsyncIterator[pb.MatchEvent], seq: int) -> list[pb.MatchEvent]:
    """The events up to one numbered ``seq`` or later; closes the iterator."""
    out: list[pb.MatchEvent] = []
    async with closing(events), asyncio.timeout(WAIT_S):
        async for event in events:
            out.append(event)
            if event.seq >= seq:
                return out
    raise AssertionError(f"the events ended before seq {seq}")


def wire(events: list[pb.MatchEvent]) -> list[bytes]:
    return [e.SerializeToString() for e in events]


def kinds(events: list[pb.MatchEvent]) -> list[str]:
    return [f"{e.seq} {sc.event_kind(e)}" for e in events]


def test_a_seats_polls_deliver_what_its_stream_does_over_a_hand_and_across_cuts(
    harness: Harness,
) -> None:
    async def main() -> None:
        async with logged_client(harness) as (client, log):
            seat = await bot_match(client, 71)
            polled: list[pb.MatchEvent] = []
            streamed: list[pb.MatchEvent] = []
            moved = asyncio.Event()

            async def collect(
                events: AsyncIterator[pb.MatchEvent], into: list[pb.MatchEvent]
            ) -> None:
                async with closing(events):
                    async for event in events:
                        into.append(event)
                        moved.set()

            poller = asyncio.create_task(collect(seat.poll_events(wait_ms=3000), polled))
            stream = asyncio.create_task(collect(seat.stream_events(), streamed))
            acted = cuts = 0
            try:
                async with asyncio.timeout(90):
                    while not any(e.HasField("hand_scored") for e in polled):
                        moved.clear()
                        view = await seat.view()
                        if not view.legal_actions:
                            await moved.wait()
                            continue
                        res = await seat.submit(view.legal_actions[0], expected_seq=view.as_of_seq)
                        mine = res.events[-1].seq  # the action's events this seat sees
                        while not polled or polled[-1].seq < mine:
                            await asyncio.sleep(0.01)
                        acted += 1
                        if acted % 4 == 0:
                            assert await harness.cut_async() >= 1
                            cuts += 1
                    last = polled[-1].seq
                    while not streamed or streamed[-1].seq < last:
                        await asyncio.sleep(0.01)
            finally:
                poller.cancel()
                stream.cancel()
                await asyncio.gather(poller, stream, return_exceptions=True)

            assert cuts >= 3
            # The poller runs on until cancelled: bots play on past `last`.
            polled = [e for e in polled if e.seq <= last]
            assert kinds(polled) == kinds([e for e in streamed if e.seq <= last])
            assert wire(polled) == wire([e for e in streamed if e.seq <= last])
            scored = next(i for i, e in enumerate(polled) if e.HasField("hand_scored"))
            assert sum(e.HasField("card_played") for e in polled[:scored]) == 52
            # Some poll failed at a cut and was sent again from where it was.
            mine_calls = [c for c in log.calls if c.request.match_id == seat.match_id]
            assert any(c.error is not None for c in mine_calls)
            assert all(c.authorization == f"Bearer {seat.token}" for c in mine_calls)
            assert all(c.request.wait_ms in (0, 3000) for c in mine_calls)
            assert all(
                c.timeout is not None and c.timeout > c.request.wait_ms / 1000 for c in mine_calls
            )

    run(main(), timeout=150)


def test_a_finished_match_comes_in_batches_of_256_with_more(harness: Harness) -> None:
    async def main() -> None:
        async with logged_client(harness) as (client, log):
            seat = await finished_match(client, 72)
            streamed = await read_to_the_end(seat.stream_events())
            assert len(streamed) > 256, f"{len(streamed)} events: two batches at least"
            start = len(log.calls)
            polled = await read_to_the_end(seat.poll_events())
            assert wire(polled) == wire(streamed)
            calls = [c for c in log.calls[start:] if c.response is not None]
            full = (len(streamed) - 1) // 256  # answers cut at 256
            responses = [c.response for c in calls[: full + 1] if c.response is not None]
            assert [len(r.events) for r in responses] == [256] * full + [len(streamed) - 256 * full]
            assert [r.more for r in responses] == [True] * full + [False]
            assert calls[0].request.wait_ms == sc.DEFAULT_POLL_WAIT_MS
            for before, after in itertools.pairwise(calls[: full + 1]):
                assert before.response is not None
                assert after.request.wait_ms == 0  # more: no wait
                assert after.request.after_seq == before.response.last_seq

    run(main())


def test_resuming_after_a_given_sequence_number(harness: Harness) -> None:
    async def main() -> None:
        async with logged_client(harness) as (client, _):
            seat = await finished_match(client, 73)
            every = await read_to_the_end(seat.stream_events())
            for middle in (every[1].seq, every[len(every) // 2].seq, every[-2].seq):
                rest = await read_to_the_end(seat.poll_events(after_seq=middle))
                assert wire(rest) == wire([e for e in every if e.seq > middle]), middle
            # Between two visible events (a hidden one): the next visible event.
            gap = next(i for i in range(1, len(every)) if every[i].seq - every[i - 1].seq > 1)
            between = every[gap - 1].seq + 1
            rest = await read_through(seat.poll_events(after_seq=between), every[gap + 2].seq)
            assert kinds(rest) == kinds(every[gap : gap + 3])

    run(main())


def test_a_spectators_polls_have_no_hidden_card(harness: Harness) -> None:
    async def main() -> None:
        async with logged_client(harness) as (client, log):
            seat = await finished_match(client, 74)
            start = len(log.calls)
            watched = await read_to_the_end(client.poll_spectate(seat.match_id))
            calls = log.calls[start:]
            spectated = await read_to_the_end(client.spectate(seat.match_id))
            assert wire(watched) == wire(spectated)
            seen = {sc.event_kind(e) for e in watched}
            assert not seen & PRIVATE, seen & PRIVATE
            assert {"card_played", "hand_scored"} <= seen
            # No credential on the spectator's polls (not the client's operator token).
            assert calls and all(
                c.authorization is None and c.request.match_id == seat.match_id for c in calls
            )
            mine = await read_to_the_end(seat.poll_events())
            assert any(e.HasField("hand_shown") for e in mine)

    run(main())


def test_closing_cancels_the_waiting_poll_and_a_poll_wakes_on_an_event(harness: Harness) -> None:
    async def main() -> None:
        async with logged_client(harness) as (client, log):
            seats = await quiet_match(client, 75)
            events = seats[1].poll_events(wait_ms=15_000)
            first = [await anext(events), await anext(events)]
            assert [sc.event_kind(e) for e in first] == ["hand_started", "hand_shown"]

            # Nothing new: the next poll waits; a bid wakes it long before its wait ends.
            nxt = asyncio.ensure_future(anext(events))
            await asyncio.sleep(0.3)
            assert not nxt.done()
            to_act = seats[(await seats[0].view()).to_act]
            started = time.monotonic()
            res = await to_act.submit((await to_act.legal_actions())[0])
            woken = await asyncio.wait_for(nxt, WAIT_S)
            assert time.monotonic() - started < 3
            assert woken.seq == res.events[0].seq and woken.HasField("bid_made")

            # Waiting again; closing the iterator cancels that poll.
            nxt = asyncio.ensure_future(anext(events))
            await asyncio.sleep(0.3)
            waiting = log.calls[-1]
            assert not waiting.ended, "a poll waits"
            started = time.monotonic()
            nxt.cancel()
            with pytest.raises(asyncio.CancelledError):
                await nxt
            await aclose(events)
            assert time.monotonic() - started < 2
            count = len(log.calls)
            await asyncio.sleep(1.0)
            assert len(log.calls) == count, "no poll after closing"
            assert waiting.response is None and (waiting.cancelled or waiting.error is not None)
            with pytest.raises(StopAsyncIteration):
                await anext(events)

    run(main())


def test_refusals_are_typed_and_not_retried(harness: Harness) -> None:
    async def main() -> None:
        async with logged_client(harness) as (client, log):
            seats = await quiet_match(client, 76)
            start = len(log.calls)
            forged = client.seat(f"{seats[0].match_id}.not-the-secret")
            with pytest.raises(sc.SpadesError) as bad_token:
                await anext(forged.poll_events())
            assert bad_token.value.code is grpc.StatusCode.UNAUTHENTICATED
            assert bad_token.value.reason == "UNAUTHENTICATED"
            assert len(log.calls) == start + 1, "a refusal is not sent again"

            with pytest.raises(sc.SpadesError) as missing:
                await anext(client.poll_spectate("no-such-match"))
            assert (missing.value.code, missing.value.reason) == (
                grpc.StatusCode.NOT_FOUND,
                "MATCH_NOT_FOUND",
            )
            with pytest.raises(sc.SpadesError) as wait:
                await anext(seats[0].poll_events(wait_ms=-1))
            assert wait.value.code is grpc.StatusCode.INVALID_ARGUMENT
            assert (wait.value.reason, wait.value.fields) == ("BAD_WAIT_MS", ("wait_ms",))

        # Nobody there: the client backs off and gives up after max_attempts.
        backoff = sc.Backoff(initial_s=0.01, max_s=0.05, max_attempts=3)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        async with sc.connect(f"127.0.0.1:{port}", backoff=backoff) as nowhere:
            with pytest.raises(sc.ConnectionLost) as lost:
                await anext(nowhere.seat("m.secret").poll_events())
            assert lost.value.code is grpc.StatusCode.UNAVAILABLE
            assert lost.value.attempts == 3

    run(main())
