"""The link to an edge: Play calls held by another process (``--edge-link``).

An edge (docs/architecture.md, "Past the Python gRPC floor") holds the
clients' connections and their ``Play`` calls and forwards each call's bytes
over one socket, without parsing them (proto/spades/edge/v1/link.proto; each
message framed by its length, 4 bytes little-endian).

A call an edge holds runs no task while it waits. Its ``open`` is checked by
the servicer's own ``open_play`` (the seat token, the resume point) and its
actions applied by ``play_action``, one at a time in order, exactly as on a
gRPC Play call; what it is sent comes from the match's event log, walked with
the seat's viewer bit as ``EventLog.pump`` walks it. But instead of a writer
task per call woken at every change, the log calls the call back
(``EventLog.listen``), and the link serves every call that changed in one pass
(``_flush``): it checks the call's credential, takes the events the seat may
see and the results those events make ready, and puts the call's id under
those bytes. Calls that get the same bytes share one ``Down``, and the pass
leaves as one LinkDown that also answers the LinkUps taken up since the
previous one, so the edge batches what its clients send while the server is
busy. A call gets at most one payload a LinkDown (the edge joins a call's
payloads into one message, and two batches joined could pass the 256 events a
stream message promises); a call with more waiting is served again in the
next pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections import deque
from typing import TYPE_CHECKING, Any, cast

import structlog

from . import calls, convert, rpc
from .errors import ServiceError, exhausted, invalid, unavailable
from .gen.spades.edge.v1 import link_pb2 as lpb
from .gen.spades.v1 import spades_pb2 as pb
from .metrics import OPEN_STREAMS, RPC_LATENCY, RPCS

if TYPE_CHECKING:
    from collections.abc import Callable

    from .access import Check
    from .service import SpadesService
    from .session import Session

log = structlog.get_logger("spades.edge")

HEADER = 4  # a frame's length, little-endian
MAX_FRAME = 64 << 20  # a LinkUp longer than this ends the link: no edge sends one
# An edge that has not read this much of what was sent to it is stuck: the link
# ends (its calls with it; their clients resume) rather than the server's
# memory grow without bound.
MAX_UNREAD = 256 << 20
# Messages a call may have waiting behind the action being applied. A gRPC
# Play call reads its next message only once the previous action is answered,
# and HTTP/2's flow control holds the rest on the client; an edge forwards
# whatever its client sends, so the bound is kept here.
MAX_PENDING = 64
# Calls this side ended whose `closed` has not come from the edge yet: a
# message still on its way for one is dropped, not taken for a new call.
MAX_ENDED = 1 << 16
# How many passes shutdown makes to send what the calls still have.
_SHUTDOWN_PASSES = 64

_METHOD = "Play"
_parse = pb.PlayRequest.FromString
_TYPE = pb.PlayRequest.DESCRIPTOR.full_name
_LATENCY = RPC_LATENCY.labels(_METHOD)
# The grpc_server_* series of Play: an edge's calls are counted as gRPC ones.
_GRPC = rpc.grpc_method(_METHOD)
_STARTED = _GRPC.started
_RECEIVED, _SENT = _GRPC.messages()


class EdgeCall:
    """One client's Play call on an edge. It also stands in for the parts of
    grpc.aio's servicer context that ``open_play`` reads."""

    __slots__ = (
        "acting",
        "bit",
        "check",
        "conn",
        "context",
        "ended",
        "failure",
        "first_sent",
        "link",
        "metadata",
        "opening",
        "pos",
        "requests",
        "results",
        "seat",
        "session",
        "slots",
        "t0",
    )

    def __init__(self, link: EdgeLink, conn: int, credential: str) -> None:
        self.link = link
        self.conn = conn
        self.metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {credential}"),) if credential else ()
        )
        self.t0 = time.perf_counter()
        # Requests not taken yet: the `open`, then the actions behind the one
        # being applied.
        self.requests: deque[bytes] = deque()
        self.session: Session | None = None  # set once open
        self.seat = 0
        self.bit = 0  # the seat's viewer bit (convert.viewer_bit)
        self.check: Check | None = None
        self.pos = 0  # how far the log has been walked for this call
        # Answered actions: (the last sequence number whose events must be sent
        # first, the result as a serialized PlayResponse).
        self.results: deque[tuple[int, bytes]] = deque()
        self.failure: ServiceError | None = None  # ends the call at the next pass
        self.ended = False
        self.first_sent = False
        self.opening = True  # the open is being checked (a task holds the call)
        self.acting = False  # an action task holds the call
        self.context: contextvars.Context | None = None  # the call's log context
        # What the call holds while open: its stream slots (of the match here,
        # and across replicas on a shared store).
        self.slots: contextlib.AsyncExitStack | None = None

    # -- the servicer context, as open_play uses it ----------------------------------
    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata

    def peer_identities(self) -> None:
        return None  # an edge's clients present no certificate to this process

    def time_remaining(self) -> None:
        return None

    # -- the log's listener ------------------------------------------------------------
    def changed(self) -> None:
        self.link.dirty(self)


class EdgeLink(asyncio.Protocol):
    """One edge's connection: its calls, and what goes down to it."""

    def __init__(self, service: SpadesService, forget: Callable[[EdgeLink], None]) -> None:
        self._service = service
        self._forget = forget
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self.calls: dict[int, EdgeCall] = {}
        self._ended: set[int] = set()
        self._dirty: set[EdgeCall] = set()  # calls to serve at the next pass
        self._down: dict[bytes, list[int]] = {}  # payload -> the calls that get it
        self._closes: list[lpb.Down] = []
        self._owed = 0  # LinkUps taken up and not answered yet
        self._flush_due = False
        self._loop = asyncio.get_running_loop()

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
            self._end(call, None)

    def shutdown(self) -> None:
        """Send what the calls still have (the registry has interrupted every
        match by now, so each call ends with where to resume), then close."""
        for _ in range(_SHUTDOWN_PASSES):
            if not (self._dirty or self._down or self._closes or self._owed):
                break
            self._flush()
        if self._transport is not None:
            self._transport.close()

    def _abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    # -- up -------------------------------------------------------------------------
    def _take(self, up: lpb.LinkUp) -> None:
        for item in up.items:
            conn = item.conn
            call = self.calls.get(conn)
            if item.closed:
                self._ended.discard(conn)
                if call is not None:
                    self._end(call, None)
                continue
            if call is None:
                if conn not in self._ended:
                    self._start(conn, item)
                continue
            _RECEIVED.inc()
            if call.failure is not None:
                continue  # it ends at the next pass: nothing more of it is read
            if len(call.requests) >= MAX_PENDING:
                self._fail(
                    call,
                    exhausted(
                        "TOO_MANY_PENDING",
                        f"at most {MAX_PENDING} messages may wait for the action being applied",
                    ),
                )
                continue
            call.requests.append(item.request)
            if not (call.opening or call.acting):
                self._act_soon(call)
        self._owed += 1
        self._schedule()

    def _start(self, conn: int, item: lpb.Up) -> None:
        call = EdgeCall(self, conn, item.credential)
        self.calls[conn] = call
        call.requests.append(item.request)
        _STARTED.inc()
        _RECEIVED.inc()
        OPEN_STREAMS.inc()
        self._loop.create_task(self._open(call), context=contextvars.Context())

    async def _open(self, call: EdgeCall) -> None:
        structlog.contextvars.bind_contextvars(request_id=rpc.new_request_id(), method=_METHOD)
        slots = call.slots = contextlib.AsyncExitStack()
        try:
            slots.enter_context(calls.CALLS.admit())
            first = calls.parse_request(call.requests.popleft(), _parse, _TYPE)
            if first.WhichOneof("kind") != "open":
                raise invalid("OPEN_EXPECTED", "the first message of a Play call is `open`", "open")
            # EdgeCall has what open_play reads of a servicer context.
            context = cast(Any, call)
            session, seat, check = await self._service.open_play(context, first.open)
            if not call.ended:
                await slots.enter_async_context(session.stream_slot())
            if not call.ended:
                slots.enter_context(session.event_log.viewer())
        except Exception as exc:
            self._end(call, rpc.refuse(_METHOD, exc))
        finally:
            call.opening = False
        if call.ended:
            await slots.aclose()
            return
        event_log = session.event_log
        call.session, call.seat, call.check = session, seat, check
        call.bit = convert.viewer_bit(seat)
        call.pos = min(first.open.after_seq, event_log.last_seq)
        call.context = contextvars.copy_context()
        event_log.listen(call.changed)
        self.dirty(call)
        if call.requests:
            self._act_soon(call)

    def _act_soon(self, call: EdgeCall) -> None:
        call.acting = True
        self._loop.create_task(self._act(call), context=call.context)

    async def _act(self, call: EdgeCall) -> None:
        """Apply the call's actions in order; an action begun is finished (and
        stored) even if the client goes meanwhile, as on a gRPC call."""
        session, seat, check = call.session, call.seat, call.check
        assert session is not None and check is not None
        play_action = self._service.play_action
        requests = call.requests
        try:
            while requests and not call.ended and call.failure is None:
                try:
                    request = calls.parse_request(requests.popleft(), _parse, _TYPE)
                except ServiceError as err:
                    self._fail(call, err)
                    return
                if request.WhichOneof("kind") != "action":
                    why = "after `open`, a Play call sends actions"
                    self._fail(call, invalid("ACTION_EXPECTED", why, "action"))
                    return
                answer = await play_action(session, seat, check, request.action)
                if call.ended:
                    return
                call.results.append((answer[1], answer[0]))
                self.dirty(call)
        finally:
            call.acting = False
            if call.ended and call.slots is not None:
                await call.slots.aclose()

    def _fail(self, call: EdgeCall, err: ServiceError) -> None:
        """End the call with ``err`` at the next pass (a bad message, as a gRPC
        call's reader fails its Outbox)."""
        call.requests.clear()
        if call.failure is None:
            call.failure = err
        self.dirty(call)

    def _end(self, call: EdgeCall, err: ServiceError | None) -> None:
        """End the call: with ``err``'s status sent to the edge, or (None) in
        silence because the client or the link is gone."""
        if call.ended:
            return
        call.ended = True
        call.requests.clear()
        conn = call.conn
        if self.calls.get(conn) is call:
            del self.calls[conn]
            if err is not None and self._transport is not None:
                if len(self._ended) >= MAX_ENDED:
                    self._ended.pop()
                self._ended.add(conn)
        if err is not None:
            self._close(conn, err)
        self._dirty.discard(call)
        if call.session is not None:
            call.session.event_log.unlisten(call.changed)
        code = "CANCELLED" if err is None else err.code.name
        RPCS.labels(_METHOD, code).inc()
        _GRPC.handled(code, time.perf_counter() - call.t0)
        OPEN_STREAMS.dec()
        if not (call.opening or call.acting) and call.slots is not None:
            # The task that holds the call releases its slots when it is done.
            self._loop.create_task(call.slots.aclose())

    # -- down -----------------------------------------------------------------------
    def dirty(self, call: EdgeCall) -> None:
        self._dirty.add(call)
        if not self._flush_due:
            self._schedule()

    def _serve(self, call: EdgeCall) -> None:
        """Put what ``call`` has to send under its bytes, or end it."""
        if call.failure is not None:
            self._end(call, call.failure)
            return
        session, check = call.session, call.check
        assert session is not None and check is not None
        event_log = session.event_log
        try:
            check()
        except Exception as exc:  # the seat's token was reissued
            self._end(call, rpc.refuse(_METHOD, exc))
            return
        batch, pos = event_log.batch(call.pos, call.bit)
        call.pos = pos
        results = call.results
        while results and results[0][0] <= pos:
            batch.append(results.popleft()[1])
        if batch:
            payload = b"".join(batch)
            conns = self._down.get(payload)
            if conns is None:
                self._down[payload] = [call.conn]
            else:
                conns.append(call.conn)
            _SENT.inc()
            if not call.first_sent:
                call.first_sent = True
                _LATENCY.observe(time.perf_counter() - call.t0)
            if pos < event_log.last_seq or event_log.interrupted:
                self._dirty.add(call)  # the rest in the next pass
            return
        if event_log.interrupted:
            self._end(
                call,
                unavailable(
                    "STREAM_INTERRUPTED",
                    f"stream ended at sequence {pos}; reconnect with after_seq={pos}",
                ),
            )

    def _close(self, conn: int, err: ServiceError) -> None:
        status = err.to_status()
        self._closes.append(
            lpb.Down(
                conns=[conn],
                close_code=status.code,
                close_message=status.message,
                close_details=status.SerializeToString(),
            )
        )
        self._schedule()

    def _schedule(self) -> None:
        """Flush once the loop has run what is ready now. An action's task is
        created before the flush is scheduled, so an action that needs no wait
        (the memory store) and the events it publishes leave together."""
        if not self._flush_due:
            self._flush_due = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_due = False
        dirty, self._dirty = self._dirty, set()
        for call in dirty:
            if not call.ended:
                self._serve(call)
        transport = self._transport
        if transport is None or transport.is_closing():
            self._down.clear()
            self._closes.clear()
            return
        if self._down or self._closes or self._owed:
            down = lpb.LinkDown(answers=self._owed)
            down.items.extend(lpb.Down(conns=c, payload=p) for p, c in self._down.items())
            down.items.extend(self._closes)
            self._owed = 0
            self._down.clear()
            self._closes.clear()
            data = down.SerializeToString()
            transport.write(len(data).to_bytes(HEADER, "little") + data)
            if transport.get_write_buffer_size() > MAX_UNREAD:
                log.warning("edge stopped reading", unread=transport.get_write_buffer_size())
                self._abort()
                return
        if self._dirty:
            self._schedule()


class EdgeListener:
    """Accepts edges at one address, and closes their links on shutdown."""

    def __init__(self, service: SpadesService) -> None:
        self._service = service
        self._server: asyncio.Server | None = None
        self.links: set[EdgeLink] = set()

    def _link(self) -> EdgeLink:
        link = EdgeLink(self._service, self.links.discard)
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
