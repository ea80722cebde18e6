"""The link to an edge: Play calls held by another process (``--edge-link``).

An edge (docs/architecture.md, "Past the Python gRPC floor") holds the
clients' connections and their ``Play`` calls and forwards each call's bytes
over one socket, without parsing them (proto/spades/edge/v1/link.proto; each
message framed by its length, 4 bytes little-endian). Here every call of an
edge is served by the very handler a gRPC ``Play`` call runs
(``SpadesService.Play``), through ``EdgeCall``, which stands in for the call's
grpc.aio context: ``read`` takes the next request the edge forwarded,
``write`` queues a serialized PlayResponse for it, ``abort_with_status`` ends
the call with its status. So credentials, limits, idempotency, resume,
filtering and the store's acknowledgement are the gRPC call's own; what the
edge saves the server is gRPC itself, one operation per stream message.

What a loop iteration writes goes to the edge as one LinkDown, the calls that
get the same bytes in one ``Down``; it also answers the LinkUps taken up since
the previous one, so the edge can batch what its clients send while the
server is busy.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, cast

import grpc
import structlog

from .gen.spades.edge.v1 import link_pb2 as lpb

log = structlog.get_logger("spades.edge")

HEADER = 4  # a frame's length, little-endian
MAX_FRAME = 64 << 20  # a LinkUp longer than this ends the link: no edge sends one
# An edge that has not read this much of what was sent to it is stuck: the link
# ends (its calls with it; their clients resume) rather than the server's
# memory grow without bound.
MAX_UNREAD = 256 << 20

# The handler an edge's call runs: the servicer's Play (requests, context).
Handler = Callable[[Any, Any], Awaitable[None]]


class AbortError(Exception):
    """Raised by ``EdgeCall.abort_with_status``, as grpc.aio's abort raises its
    own: ``calls.refuse_call`` knows the exception by this name."""


class EdgeCall:
    """One client's Play call on an edge, as its handler sees it."""

    def __init__(self, link: EdgeLink, conn: int, credential: str) -> None:
        self._link = link
        self.conn = conn
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {credential}"),) if credential else ()
        )
        self._requests: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.ended = False  # the client's side is done: no more requests
        self.task: asyncio.Task[None] | None = None

    # -- what the edge sends ------------------------------------------------------
    def push(self, request: bytes) -> None:
        self._requests.append(request)
        self._wake()

    def end(self) -> None:
        self.ended = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # -- the grpc.aio.ServicerContext the handler uses ----------------------------
    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def peer_identities(self) -> None:
        return None  # an edge's clients present no certificate to this process

    def time_remaining(self) -> None:
        return None

    async def read(self) -> Any:
        """The next request's bytes, or ``grpc.aio.EOF`` once the client is done."""
        while not self._requests:
            if self.ended:
                return grpc.aio.EOF
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self._requests.popleft()

    async def write(self, message: bytes) -> None:
        self._link.send(self.conn, message)

    async def abort_with_status(self, status: Any) -> None:
        self._link.close(self.conn, status)
        raise AbortError()


class EdgeLink(asyncio.Protocol):
    """One edge's connection: its calls, and what goes down to it."""

    def __init__(self, handler: Handler, forget: Callable[[EdgeLink], None]) -> None:
        self._handler = handler
        self._forget = forget
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self.calls: dict[int, EdgeCall] = {}
        self._down: dict[bytes, list[int]] = {}  # payload -> the calls that get it
        self._sending: set[int] = set()  # the calls in _down
        self._closes: list[lpb.Down] = []
        self._owed = 0  # LinkUps taken up and not answered yet
        self._flush_due = False

    # -- the socket -----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        log.info("edge connected", peer=str(transport.get_extra_info("peername")))

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while len(buffer) >= HEADER:
            size = int.from_bytes(buffer[:HEADER], "little")
            if size > MAX_FRAME:
                log.warning("edge sent an oversized frame", size=size)
                self._abort()
                return
            if len(buffer) < HEADER + size:
                break
            frame = bytes(buffer[HEADER : HEADER + size])
            del buffer[: HEADER + size]
            try:
                up = lpb.LinkUp.FromString(frame)
            except Exception:  # protobuf's DecodeError; nothing else parses
                log.warning("edge sent a frame that is not a LinkUp", size=size)
                self._abort()
                return
            self._take(up)

    def connection_lost(self, exc: Exception | None) -> None:
        log.info("edge disconnected", calls=len(self.calls), error=str(exc) if exc else None)
        self._transport = None
        self._forget(self)
        for call in list(self.calls.values()):
            self._cancel(call)
        self.calls.clear()

    def shutdown(self) -> None:
        """Send what is pending, then close the link."""
        if self._transport is not None:
            self._flush()
            self._transport.close()

    def _abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    # -- up -------------------------------------------------------------------------
    def _take(self, up: lpb.LinkUp) -> None:
        for item in up.items:
            call = self.calls.get(item.conn)
            if item.closed:
                if call is not None:
                    del self.calls[item.conn]
                    self._cancel(call)
                continue
            if call is None:
                call = EdgeCall(self, item.conn, item.credential)
                self.calls[item.conn] = call
                call.task = asyncio.get_running_loop().create_task(self._run(call))
            call.push(item.request)
        self._owed += 1
        self._schedule()

    async def _run(self, call: EdgeCall) -> None:
        try:
            await self._handler(None, call)
        finally:
            if self.calls.get(call.conn) is call:
                del self.calls[call.conn]

    @staticmethod
    def _cancel(call: EdgeCall) -> None:
        """The client went away: its handler is cancelled, as gRPC cancels a
        call's (an action being applied finishes first: ``play.Reader``)."""
        call.end()
        if call.task is not None:
            call.task.cancel()

    # -- down -----------------------------------------------------------------------
    def send(self, conn: int, payload: bytes) -> None:
        # A call gets at most one payload a LinkDown: the edge writes a call's
        # payloads of one LinkDown as one message, and two batches joined could
        # pass the 256 events a stream message promises.
        if conn in self._sending:
            self._flush()
        self._sending.add(conn)
        conns = self._down.get(payload)
        if conns is None:
            self._down[payload] = [conn]
        else:
            conns.append(conn)
        self._schedule()

    def close(self, conn: int, status: Any) -> None:
        details = b""
        for key, value in status.trailing_metadata or ():
            if key == "grpc-status-details-bin":
                details = value
        code = status.code.value[0]
        self._closes.append(
            lpb.Down(
                conns=[conn], close_code=code, close_message=status.details, close_details=details
            )
        )
        self._schedule()

    def _schedule(self) -> None:
        """Flush once the loop has run what is ready now and what that wakes:
        an action taken up and the events it publishes then leave together."""
        if not self._flush_due:
            self._flush_due = True
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, self._flush)

    def _flush(self) -> None:
        self._flush_due = False
        if self._transport is None or self._transport.is_closing():
            self._down.clear()
            self._sending.clear()
            self._closes.clear()
            return
        down = lpb.LinkDown(answers=self._owed)
        down.items.extend(lpb.Down(conns=c, payload=p) for p, c in self._down.items())
        down.items.extend(self._closes)
        self._owed = 0
        self._down.clear()
        self._sending.clear()
        self._closes.clear()
        data = down.SerializeToString()
        self._transport.write(len(data).to_bytes(HEADER, "little") + data)
        if self._transport.get_write_buffer_size() > MAX_UNREAD:
            log.warning("edge stopped reading", unread=self._transport.get_write_buffer_size())
            self._abort()


class EdgeListener:
    """Accepts edges at one address, and closes their links on shutdown."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._server: asyncio.Server | None = None
        self.links: set[EdgeLink] = set()

    def _link(self) -> EdgeLink:
        link = EdgeLink(self._handler, self.links.discard)
        self.links.add(link)
        return link

    async def start(self, address: str) -> str:
        """Listen at ``address`` (``host:port``, port 0 for any, or
        ``unix:PATH``); returns where, in the same form."""
        loop = asyncio.get_running_loop()
        if address.startswith("unix:"):
            self._server = await loop.create_unix_server(self._link, address[5:])
            return address
        host, _, port = address.rpartition(":")
        self._server = await loop.create_server(self._link, host or "127.0.0.1", int(port))
        name = self._server.sockets[0].getsockname()
        return f"{name[0]}:{name[1]}"

    async def stop(self) -> None:
        """No new edges; the links end once their calls have been answered (the
        registry has ended every stream by then)."""
        if self._server is not None:
            self._server.close()
        for link in list(self.links):
            link.shutdown()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
