"""A match's event log in memory, and its fan-out to streams.

The session numbers events (``stage``), has the store append them, and only
then publishes them here (``publish``): what a stream sends is always durable.
Each event is kept once, as bytes, with the viewers who may see it; every
stream of the match (StreamEvents, Spectate, the events of a Play call) walks
the same list (``pump``). ``pump`` and ``publish`` are the fan-out hot path:
``bench/server.py`` measures them, so they allocate nothing per event beyond
the batch and call nothing per event.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from spades_engine import Ruleset

from . import convert
from .errors import exhausted, unavailable
from .gen.spades.v1 import spades_pb2 as pb
from .store import StoredEvent

if TYPE_CHECKING:
    from .access import Check
    from .play import Outbox

STREAM_BATCH = 256  # most events in one stream response (the proto promises it)

# An event before it is numbered: its audience key ("everyone", "seat:N",
# "team:N") and its message.
Payload = tuple[str, pb.MatchEvent]


def _now_ms() -> int:
    return int(time.time() * 1000)


def engine_payloads(events: list[Any]) -> list[Payload]:
    """Engine events as payloads, to be staged."""
    return [(convert.audience_key(e.audience), convert.event_to_pb(e, 0, 0)) for e in events]


class EventLog:
    def __init__(self, rules: Ruleset, seats: int, max_streams: int) -> None:
        self._players = rules.players
        self._partnerships = rules.partnerships
        self.max_streams = max_streams
        # The event log, compact: each event serialized once and framed as an
        # element of a stream response (convert.frame_event), and the viewers
        # who may see it as a bitmask (convert.audience_mask).
        self.framed: list[bytes] = []
        self.masks: list[int] = []
        self.last_visible = [0] * seats  # each seat's latest visible sequence number
        self.streams = 0  # pumps running
        # Set when the session closes or breaks: no more events will be
        # published here, so a stream that has sent everything ends
        # (STREAM_INTERRUPTED) rather than wait.
        self.interrupted = False
        self._waiters: list[asyncio.Future[None]] = []  # streams waiting for a change
        # Called at every change, in the publisher's turn: the calls an edge
        # holds (edge_link), which have no task to wake.
        self._listeners: list[Callable[[], None]] = []

    @property
    def last_seq(self) -> int:
        return len(self.framed)

    @property
    def waiting(self) -> int:
        """Streams (and calls an edge holds) that the next change wakes."""
        return len(self._waiters) + len(self._listeners)

    # -- building the log ---------------------------------------------------------
    def stage(self, payloads: list[Payload]) -> list[StoredEvent]:
        """Number events after the log's end (not yet published)."""
        stored = []
        seq = self.last_seq
        now = _now_ms()
        for audience, ev in payloads:
            seq += 1
            ev.seq = seq
            ev.time_ms = now
            stored.append(StoredEvent(seq, audience, ev.SerializeToString()))
        return stored

    def publish(self, stored: list[StoredEvent]) -> None:
        """Add stored events to the log and wake the streams."""
        players, partnerships = self._players, self._partnerships
        last_visible = self.last_visible
        seats = range(len(last_visible))
        for e in stored:
            mask = convert.audience_mask(e.audience, players, partnerships)
            self.framed.append(convert.frame_event(e.payload))
            self.masks.append(mask)
            for seat in seats:
                if mask >> seat & 1:
                    last_visible[seat] = e.seq
        self.wake()

    # -- waiting for it -------------------------------------------------------------
    def waiter(self) -> asyncio.Future[None]:
        """A future resolved at the next change to the log (or on close)."""
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        return fut

    def forget(self, fut: asyncio.Future[None]) -> None:
        """Drop a waiter that stopped waiting (a poll that timed out), so that a
        log with no change for a long time does not pile them up."""
        with contextlib.suppress(ValueError):
            self._waiters.remove(fut)

    def listen(self, changed: Callable[[], None]) -> None:
        """Call ``changed`` at each change to the log (and on close) until
        ``unlisten``; it must not change the listeners."""
        self._listeners.append(changed)

    def unlisten(self, changed: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(changed)

    def wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():  # a stream cancelled while waiting has cancelled its future
                fut.set_result(None)
        for changed in self._listeners:
            changed()

    def interrupt(self) -> None:
        """End every stream once it has sent what there is (the session closes)."""
        self.interrupted = True
        self.wake()

    # -- reading it -------------------------------------------------------------------
    def visible_range(self, seat: int, first: int, last: int) -> list[pb.MatchEvent]:
        """The events ``first`` to ``last`` that ``seat`` may see."""
        bit = convert.viewer_bit(seat)
        masks, framed = self.masks, self.framed
        data = b"".join(framed[i] for i in range(first - 1, last) if masks[i] & bit)
        return list(pb.StreamEventsResponse.FromString(data).events)

    async def pump(
        self,
        seat: int | None,
        after_seq: int,
        send: Callable[[bytes], Awaitable[None]],
        first_sent: Callable[[], None] | None = None,
        outbox: Outbox | None = None,
        check: Check | None = None,
    ) -> None:
        """Send the visible events after ``after_seq``, then live ones, until the
        server closes (UNAVAILABLE, with the sequence to resume from).

        Each ``send`` gets one serialized stream response: a batch of up to
        ``STREAM_BATCH`` events, everything visible that is new when the
        previous send has finished, followed on a Play call by the results in
        ``outbox`` whose events it has sent; ``first_sent`` is called after the
        first. ``check`` runs before each send: it ends the stream (raising)
        when the viewer's credential no longer holds. A plain coroutine rather
        than an async generator: every generator layer costs a few
        microseconds per message on the fan-out path."""
        with self.viewer():
            pos = min(after_seq, self.last_seq)
            bit = convert.viewer_bit(seat)
            while True:
                if check is not None:
                    check()
                batch, pos = self.batch(pos, bit)
                if outbox is not None:
                    results = outbox.take(pos)
                    if results:
                        batch.append(results)
                if batch:
                    await send(b"".join(batch))
                    if first_sent is not None:
                        first_sent()
                        first_sent = None
                    continue
                if self.interrupted:
                    raise unavailable(
                        "STREAM_INTERRUPTED",
                        f"stream ended at sequence {pos}; reconnect with after_seq={pos}",
                    )
                woken = self.waiter()
                if outbox is not None:
                    outbox.wake = woken
                await woken

    async def poll(
        self, seat: int | None, after_seq: int, wait_s: float, check: Check | None = None
    ) -> tuple[bytes, int, bool]:
        """One PollEvents answer: what ``pump`` would send next from
        ``after_seq``, waiting up to ``wait_s`` for it when there is nothing yet.

        Returns the batch (framed events joined, as ``pump`` sends it: up to
        ``STREAM_BATCH``), the sequence number it ends at (the next
        ``after_seq``: the log's end when the events after the batch are all
        hidden from this viewer), and whether visible events remain after it.
        A poll counts against ``max_streams`` while it runs, like a stream: a
        viewer waiting is a viewer of the match."""
        with self.viewer():
            loop = asyncio.get_running_loop()
            deadline = loop.time() + wait_s
            pos = min(after_seq, self.last_seq)
            bit = convert.viewer_bit(seat)
            masks = self.masks
            while True:
                if check is not None:
                    check()
                batch, pos = self.batch(pos, bit)
                if batch:
                    end = self.last_seq
                    more = any(masks[i] & bit for i in range(pos, end))
                    return b"".join(batch), pos, more
                if self.interrupted:
                    raise unavailable(
                        "STREAM_INTERRUPTED",
                        f"events end at sequence {pos} here; poll again with after_seq={pos}",
                    )
                left = deadline - loop.time()
                if left <= 0:
                    return b"", pos, False
                woken = self.waiter()
                try:
                    async with asyncio.timeout(left):
                        await woken
                except TimeoutError:
                    self.forget(woken)

    @contextlib.contextmanager
    def viewer(self) -> Iterator[None]:
        """Count one stream (or poll) of the match while it runs; refuse one
        past ``max_streams``."""
        if self.streams >= self.max_streams:
            raise exhausted("TOO_MANY_STREAMS", f"at most {self.max_streams} streams per match")
        self.streams += 1
        try:
            yield
        finally:
            self.streams -= 1

    def batch(self, pos: int, bit: int) -> tuple[list[bytes], int]:
        """The framed events from ``pos`` (0-based) that the viewer ``bit`` may
        see, at most ``STREAM_BATCH``, and where the walk stopped. One call per
        message: the loop over events stays inline."""
        batch: list[bytes] = []
        masks, framed, end = self.masks, self.framed, self.last_seq
        while pos < end and len(batch) < STREAM_BATCH:
            if masks[pos] & bit:
                batch.append(framed[pos])
            pos += 1
        return batch, pos
