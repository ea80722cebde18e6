"""A seat's session on the bidirectional ``Play`` call, kept alive across drops.

One task per session owns the call. It opens ``Play`` with ``after_seq`` = the
last sequence number received, sends every action still waiting for its
result (with the same ``action_id``: the server answers a repeated id with the
first result and never applies an action twice), then reads events and
results until the call fails. A transient failure (a dropped connection, a
draining server) is retried with exponential backoff and jitter, at most
``Backoff.max_attempts`` times in a row; anything else ends the session with
that error. Events whose sequence number is not above the last one received
are dropped, so a resume neither repeats nor skips an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import uuid
from collections.abc import AsyncIterator, Callable, Generator
from typing import Any, Final

import grpc

from ._errors import ConnectionLost, SessionClosed, SpadesError
from ._gen.spades.v1 import spades_pb2 as pb
from ._gen.spades.v1 import spades_pb2_grpc
from ._retry import Backoff, is_transient

__all__ = ["PendingAction", "Session", "settle"]


class _End:
    """Put in the event queue when the session is over."""


_END: Final = _End()


def new_action_id() -> str:
    """A fresh client action id (a UUID, 32 hex digits)."""
    return uuid.uuid4().hex


class PendingAction:
    """An action sent on a session. ``await`` it for its ``ActionResult``; a
    refusal raises ``SpadesError`` (``SessionClosed`` if the session closed
    first). Cancelling the wait (``cancel()``, or cancelling the task that
    awaits it) stops the session from sending the action again after a
    reconnection; it may still have been applied."""

    __slots__ = ("_future", "request")

    def __init__(self, request: pb.PlayRequest, future: asyncio.Future[pb.ActionResult]) -> None:
        self.request = request
        self._future = future
        # A refusal nobody awaits is not an error worth a warning at exit.
        future.add_done_callback(_retrieve)

    @property
    def action_id(self) -> str:
        return self.request.action.action_id

    @property
    def action(self) -> pb.Action:
        return self.request.action.action

    def done(self) -> bool:
        return self._future.done()

    def cancelled(self) -> bool:
        return self._future.cancelled()

    def cancel(self) -> bool:
        return self._future.cancel()

    def __await__(self) -> Generator[Any, None, pb.ActionResult]:
        return self._future.__await__()

    async def result(self, timeout: float | None = None) -> pb.ActionResult:
        """The result, waiting at most ``timeout`` seconds (``TimeoutError``;
        the action stays pending)."""
        return await asyncio.wait_for(asyncio.shield(self._future), timeout)

    def __repr__(self) -> str:
        state = "done" if self.done() else "pending"
        return f"PendingAction({self.action_id!r}, {state})"


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class Session:
    """The events and actions of one seat, on a ``Play`` call that survives drops.

    >>> async with seat.session() as session:          # doctest: +SKIP
    ...     async for event in session:
    ...         ...
    ...         result = await session.act(view.legal_actions[0])

    Iterate over it (``async for``, or ``next_event``) for the seat's events in
    sequence order; the iteration ends when the session is closed and raises
    ``SpadesError`` if the session failed. One consumer at a time.
    """

    def __init__(
        self,
        stub: spades_pb2_grpc.SpadesServiceAsyncStub,
        token: str,
        match_id: str,
        *,
        after_seq: int = 0,
        backoff: Backoff | None = None,
        on_seq: Callable[[int], None] | None = None,
    ) -> None:
        self._stub = stub
        self._metadata = (("authorization", f"Bearer {token}"),)
        self.match_id = match_id
        self._last_seq = after_seq
        self._on_seq = on_seq  # told every new last_seq (its Seat's seen_seq)
        self._backoff = backoff or Backoff()
        self._events: asyncio.Queue[pb.MatchEvent | _End] = asyncio.Queue()
        # Actions sent and not answered yet, in the order sent.
        self._unacked: dict[int, PendingAction] = {}
        self._serial = itertools.count()
        self._outbox: asyncio.Queue[pb.PlayRequest] | None = None  # the live call's
        self._task: asyncio.Task[None] | None = None
        self._failure: SpadesError | None = None
        self._closed = False
        self._rng = random.Random()
        self.reconnects = 0  # calls opened after the first
        self.duplicates = 0  # events received again after a reconnection, and dropped

    # -- lifecycle ---------------------------------------------------------------------
    async def open(self) -> Session:
        """Start the session (idempotent); the call connects in the background."""
        if self._closed:
            raise SessionClosed()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"spades-session-{self.match_id}"
            )
        return self

    async def __aenter__(self) -> Session:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """End the session: cancel the call (the server keeps a half-closed
        ``Play`` call open, so this is how it ends), fail the actions still
        waiting with ``SessionClosed``, and end the event iteration."""
        if self._closed:
            return
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._finish(SessionClosed())

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def failure(self) -> SpadesError | None:
        """The error that ended the session, if one did."""
        return self._failure

    @property
    def last_seq(self) -> int:
        """The sequence number of the last event received (the resume point)."""
        return self._last_seq

    # -- events ------------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[pb.MatchEvent]:
        return self.events()

    async def events(self) -> AsyncIterator[pb.MatchEvent]:
        """The seat's events, in order, until the session is closed."""
        while True:
            try:
                event = await self.next_event()
            except SessionClosed:
                return
            yield event

    async def next_event(self, timeout: float | None = None) -> pb.MatchEvent:
        """The next event; ``TimeoutError`` after ``timeout`` seconds,
        ``SessionClosed`` once closed, the session's failure if it failed."""
        item = await asyncio.wait_for(self._events.get(), timeout)
        if isinstance(item, _End):
            self._events.put_nowait(item)  # for the next caller too
            raise self._failure or SessionClosed()
        return item

    # -- actions -----------------------------------------------------------------------
    def send(
        self,
        action: pb.Action,
        *,
        action_id: str | None = None,
        expected_seq: int | None = None,
    ) -> PendingAction:
        """Send an action without waiting; await the returned ``PendingAction``
        for its result. ``action_id`` defaults to a fresh UUID: pass the same
        id again to retry a decision (the server answers it with the first
        result). ``expected_seq``: refuse the action (``STALE_SEQUENCE``) if
        the seat has missed visible events after it."""
        if self._closed or self._failure is not None:
            raise self._failure or SessionClosed()
        if self._task is None:
            raise SessionClosed("the session is not open: use `async with` or open()")
        sent = pb.PlayAction(action_id=action_id or new_action_id(), action=action)
        if expected_seq is not None:
            sent.expected_seq = expected_seq
        request = pb.PlayRequest(action=sent)
        pending = PendingAction(request, asyncio.get_running_loop().create_future())
        self._unacked[next(self._serial)] = pending
        if self._outbox is not None:
            self._outbox.put_nowait(request)
        return pending

    async def act(
        self,
        action: pb.Action,
        *,
        action_id: str | None = None,
        expected_seq: int | None = None,
        timeout: float | None = None,
    ) -> pb.ActionResult:
        """Send an action and wait for its result (``first_seq``/``last_seq`` of
        its events, which have been received by then); a refusal raises
        ``SpadesError``, a wait past ``timeout`` seconds ``TimeoutError``."""
        pending = self.send(action, action_id=action_id, expected_seq=expected_seq)
        try:
            return await asyncio.wait_for(pending._future, timeout)
        finally:
            pending.cancel()  # no-op once done; else never resent

    # -- the call ----------------------------------------------------------------------
    async def _run(self) -> None:
        failures = 0
        last: SpadesError | None = None
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            err, heard = await self._call_once()
            if heard or loop.time() - started >= self._backoff.max_s:
                failures = 0  # the call worked for a while: a new run of failures
            err = err or SpadesError(grpc.StatusCode.UNAVAILABLE, "the server ended the call")
            if not is_transient(err):
                self._finish(err)
                return
            failures += 1
            last = err
            if failures >= self._backoff.max_attempts:
                self._finish(ConnectionLost(failures, last))
                return
            await asyncio.sleep(self._backoff.delay(failures - 1, self._rng))
            self.reconnects += 1

    async def _call_once(self) -> tuple[SpadesError | None, bool]:
        """One ``Play`` call, until it ends: its failure (None if it ended
        without one) and whether anything came on it."""
        call = self._stub.Play(metadata=self._metadata)
        outbox: asyncio.Queue[pb.PlayRequest] = asyncio.Queue()
        opening = pb.PlayOpen(match_id=self.match_id, after_seq=self._last_seq)
        outbox.put_nowait(pb.PlayRequest(open=opening))
        for serial, pending in list(self._unacked.items()):
            if pending.done():
                del self._unacked[serial]  # cancelled by its waiter: not sent again
            else:
                outbox.put_nowait(pending.request)
        self._outbox = outbox
        writer = asyncio.get_running_loop().create_task(_write(call, outbox))
        heard = False
        try:
            while True:
                response = await call.read()
                if not isinstance(response, pb.PlayResponse):
                    return None, heard  # EOF
                heard = True
                self._receive(response)
        except grpc.RpcError as e:
            return SpadesError.from_rpc_error(e), heard
        finally:
            self._outbox = None
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            await settle(call)

    def _receive(self, response: pb.PlayResponse) -> None:
        for event in response.events:
            if event.seq <= self._last_seq:
                self.duplicates += 1
                continue
            self._last_seq = event.seq
            self._events.put_nowait(event)
        if self._on_seq is not None:
            self._on_seq(self._last_seq)
        for result in response.results:
            pending = self._answered(result.action_id)
            if pending is None or pending.done():
                continue  # its waiter gave up
            if result.HasField("error"):
                pending._future.set_exception(SpadesError.from_action_error(result.error))
            else:
                pending._future.set_result(result)

    def _answered(self, action_id: str) -> PendingAction | None:
        """The oldest unanswered action with this id (results come in the
        order the actions were sent), taken off the list."""
        for serial, pending in self._unacked.items():
            if pending.action_id == action_id:
                del self._unacked[serial]
                return pending
        return None

    def _finish(self, err: SpadesError) -> None:
        """The session is over: fail what waits, end the events."""
        if self._failure is None and not isinstance(err, SessionClosed):
            self._failure = err
        for pending in self._unacked.values():
            if not pending.done():
                pending._future.set_exception(self._failure or err)
        self._unacked.clear()
        self._events.put_nowait(_END)


async def settle(call: grpc.aio.Call) -> None:
    """Cancel a call and wait until gRPC is done with it (a call cancelled
    but not awaited completes later, maybe on an event loop closed by then)."""
    call.cancel()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(call.code(), _SETTLE_S)


_SETTLE_S = 5.0


async def _write(
    call: grpc.aio.StreamStreamCall[pb.PlayRequest, pb.PlayResponse],
    outbox: asyncio.Queue[pb.PlayRequest],
) -> None:
    """Send the call's requests in order, one write at a time; a failed call
    ends it (the reader sees why)."""
    with contextlib.suppress(grpc.RpcError, asyncio.InvalidStateError, grpc.aio.UsageError):
        while True:
            await call.write(await outbox.get())
