"""A Play call: one seat's actions and events on one bidirectional stream.

The call's handler sends what ``EventLog.pump`` sends a StreamEvents call, and a
reader task applies the actions that arrive on the call. The reader does not
write: it leaves each result in the call's ``Outbox``, and the pump sends the
result after the events its action caused, in the message that carries them or
the next. One writer per call keeps the order of the stream and never has two
``write``-s on it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.rpc import status_pb2

from . import calls
from .errors import ServiceError, invalid
from .gen.spades.v1 import spades_pb2 as pb

# The call's ``context.read``: the next request's bytes (the method has no
# deserializer: see ``calls``), or EOF once the client is done sending. Cheaper
# than the request iterator, an async generator around it.
Read = Callable[[], Awaitable[Any]]

_parse = pb.PlayRequest.FromString
_TYPE = pb.PlayRequest.DESCRIPTOR.full_name

# Applies one action and answers (the result's bytes, the last sequence number
# its events need to have been sent through before it may go: 0 if none).
Act = Callable[[pb.PlayAction], Awaitable[tuple[bytes, int]]]


def accepted(action_id: str, first_seq: int, last_seq: int) -> bytes:
    """A result as the ``results`` element of a serialized PlayResponse."""
    result = pb.ActionResult(action_id=action_id, first_seq=first_seq, last_seq=last_seq)
    return pb.PlayResponse(results=[result]).SerializeToString()


def refused(action_id: str, status: status_pb2.Status) -> bytes:
    """A refusal as the ``results`` element of a serialized PlayResponse; the
    error carries the status SubmitAction would have returned."""
    error = pb.ActionError.FromString(status.SerializeToString())  # the same fields
    result = pb.ActionResult(action_id=action_id, error=error)
    return pb.PlayResponse(results=[result]).SerializeToString()


async def first_request(read: Read) -> pb.PlayOpen | None:
    """The call's ``open`` message; None if the client closed without one. It
    must come within the time any call has to send its request."""
    raw = await calls.REQUEST_WAIT.read(read)
    if raw is calls.TIMED_OUT:
        why = calls.timed_out_message(calls.REQUEST_WAIT, "a Play call starts with `open`")
        raise invalid("OPEN_EXPECTED", why, "open")
    if raw is grpc.aio.EOF:
        return None
    first: pb.PlayRequest = calls.parse_request(raw, _parse, _TYPE)
    if first.WhichOneof("kind") != "open":
        raise invalid("OPEN_EXPECTED", "the first message of a Play call is `open`", "open")
    return first.open


class Outbox:
    """The results of a call's actions, waiting for their events to be sent."""

    def __init__(self) -> None:
        self._queue: deque[tuple[int, bytes]] = deque()
        # The pump's current wait, resolved when a result or a failure arrives.
        self.wake: asyncio.Future[None] | None = None
        self.failure: ServiceError | None = None

    def put(self, ready_at: int, result: bytes) -> None:
        self._queue.append((ready_at, result))
        self._nudge()

    def fail(self, error: ServiceError) -> None:
        """End the call with ``error`` (raised by the next ``take``)."""
        self.failure = error
        self._nudge()

    def _nudge(self) -> None:
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)

    def take(self, sent_through: int) -> bytes:
        """The results, in order, whose events are sent once the events through
        ``sent_through`` are; raises the failure the reader left, if any."""
        if self.failure is not None:
            raise self.failure
        queue = self._queue
        out = []
        while queue and queue[0][0] <= sent_through:
            out.append(queue.popleft()[1])
        return b"".join(out)


class Reader:
    """Reads a call's actions after its ``open`` and applies them one by one."""

    def __init__(self, read: Read, act: Act, outbox: Outbox) -> None:
        self.read = read
        self.act = act
        self.outbox = outbox
        self.acting = False
        self.stopped = False
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        # The call may end under the reader; the pump ends with it.
        with contextlib.suppress(grpc.RpcError):
            await self._read()

    async def _read(self) -> None:
        read = self.read
        while (raw := await read()) is not grpc.aio.EOF:
            try:
                request = calls.parse_request(raw, _parse, _TYPE)
            except ServiceError as err:
                self.outbox.fail(err)
                return
            if request.WhichOneof("kind") != "action":
                self.outbox.fail(
                    invalid("ACTION_EXPECTED", "after `open`, a Play call sends actions", "action")
                )
                return
            self.acting = True
            try:
                result, ready_at = await self.act(request.action)
            finally:
                self.acting = False
            self.outbox.put(ready_at, result)
            if self.stopped:
                return

    def stop(self) -> None:
        """The call is over. An action being applied is left to finish (and be
        logged and stored) so that cancelling a call never cuts one in half."""
        self.stopped = True
        if self.task is not None and not self.acting:
            self.task.cancel()
