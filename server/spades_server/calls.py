"""What every call must do before its handler may trust it: arrive in time,
parse, and fit under the server's bound on open calls.

gRPC's own unary path waits for a call's request with no limit (a client that
half-closes without one is never answered) and turns a request that does not
parse into UNKNOWN with a traceback. So the service registers every method as
a request-streaming handler with no deserializer and receives the request
here: one message within ``REQUEST_WAIT.timeout_s``, parsed by the method's
message type, each failure a ``ServiceError`` the handler's wrapper sends with
its google.rpc details like any refusal.

The wait costs no timer per call: a call that waits is queued with its
deadline (in arrival order, which is the order of the deadlines), and one
sweeper task per process ends the waits that are overdue. Calls that never
send their request are a cheap attack (bench/hung_calls.py), so ending them
must not starve other clients:

* At most ``max_waiting`` calls wait at once (``--max-waiting-calls``): one
  more ends the call that has waited longest (a client that means to send its
  request does so at once, so it is never the oldest for long). This bounds
  the memory and the collector's work that waiting calls hold.
* The sweeper has at most ``_ENDING_AT_ONCE`` ended calls still sending their
  status; it ends the next only when one of them is done. Every status sent
  is a completion that grpc.aio delivers to the event loop one per loop
  iteration once a burst has filled its notification socket, in order, other
  clients' completions included: thousands of calls ended at once held up
  everyone else's calls for hundreds of milliseconds.
* The calls the sweeper ends are logged as one line a second with their
  count, not one line each.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import DecodeError
from grpc_status import rpc_status

from . import tracing
from .errors import ServiceError, exhausted, invalid

log = structlog.get_logger("spades.calls")

DEFAULT_REQUEST_TIMEOUT_S = 10.0
DEFAULT_MAX_CALLS = 20_000
DEFAULT_MAX_WAITING = 500

# Calls the sweeper ended whose status is not sent yet: it ends no more until
# one is done. A status that has not gone out in _ENDING_STUCK_S (its client
# does not read) stops holding its place.
_ENDING_AT_ONCE = 16
_ENDING_STUCK_S = 0.25
# The sweeper wakes at most this often, so that the calls that fall due
# together are ended together.
_SWEEP_GAP_S = 0.02
_LOG_EVERY_S = 1.0

# The outcome of a wait that ran out of time (``EOF`` is the client's end).
TIMED_OUT = object()

Read = Callable[[], Awaitable[Any]]

# Set in the task of a call whose wait the server ended, to why (_TIMEOUT or
# _ROOM): its refusal says so, and is counted in the sweeper's log line rather
# than logged on its own.
_TIMEOUT, _ROOM = "timeout", "room"
_ENDED_BY_SERVER: contextvars.ContextVar[str] = contextvars.ContextVar(
    "ended_by_server", default=""
)


def ended_by_server() -> bool:
    """Whether this call's wait for its request was ended by the server."""
    return bool(_ENDED_BY_SERVER.get())


class _Wait:
    __slots__ = ("deadline", "task")

    def __init__(self, task: asyncio.Task[Any] | None, deadline: float) -> None:
        self.task = task  # None once the wait is over
        self.deadline = deadline


class RequestWait:
    """Bounds how long a call may take to send its request, and how many
    calls may wait for theirs at once."""

    def __init__(
        self,
        timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
        max_waiting: int = DEFAULT_MAX_WAITING,
    ) -> None:
        self.timeout_s = timeout_s
        self.max_waiting = max_waiting
        self._waiting: dict[asyncio.Task[Any], _Wait] = {}
        # Every wait in arrival order (so in order of deadline, the timeout
        # being one for all); a wait that is over leaves when it reaches the front.
        self._order: deque[_Wait] = deque()
        # Waits the server ended whose read has not returned yet, and why.
        self._expired: dict[asyncio.Task[Any], str] = {}
        # Calls the sweeper ended whose status is not sent yet, and since when.
        self._ending: dict[asyncio.Task[Any], float] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None  # set: there is a wait to sweep
        self._slot: asyncio.Event | None = None  # set: an ending is done
        self._timed_out = 0  # ended since the last log line
        self._evicted = 0
        self._logged = 0.0

    @property
    def waiting(self) -> int:
        """Calls waiting for a message now."""
        return len(self._waiting) - len(self._expired)

    async def read(self, read: Read) -> Any:
        """``read()``'s message (bytes), ``grpc.aio.EOF``, or ``TIMED_OUT``."""
        task = asyncio.current_task()
        assert task is not None
        if self._sweeper is None or self._sweeper.done():
            self._start(task.get_loop())
        waiting = self._waiting
        if len(waiting) - len(self._expired) >= self.max_waiting:
            self._evict_oldest()
        wait = _Wait(task, time.monotonic() + self.timeout_s)
        waiting[task] = wait
        if not self._order:
            assert self._wake is not None
            self._wake.set()
        self._order.append(wait)
        try:
            return await read()
        except asyncio.CancelledError:
            why = self._expired.pop(task, None)
            if why is None:
                raise  # the client went away, or the server stops
            task.uncancel()
            _ENDED_BY_SERVER.set(why)
            return TIMED_OUT
        finally:
            del waiting[task]
            wait.task = None

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self._loop:  # a new loop (tests): the old one's calls are gone
            self._loop = loop
            self._waiting.clear()
            self._order.clear()
            self._expired.clear()
            self._ending.clear()
        # Events bind to the loop that first waits on them: new ones per sweeper.
        self._wake, self._slot = asyncio.Event(), asyncio.Event()
        # Its own context: not that of the call that starts it (its log fields).
        self._sweeper = loop.create_task(self._sweep(), context=contextvars.Context())

    def _end(self, task: asyncio.Task[Any], why: str) -> None:
        """End a call's wait: its read returns TIMED_OUT, and its handler sends
        the refusal."""
        self._expired[task] = why
        self._ending[task] = time.monotonic()
        task.add_done_callback(self._ended)
        task.cancel()

    def _ended(self, task: asyncio.Task[Any]) -> None:
        if self._ending.pop(task, None) is not None and self._slot is not None:
            self._slot.set()

    def _evict_oldest(self) -> None:
        order = self._order
        while order:
            task = order.popleft().task
            if task is not None and task not in self._expired:
                self._end(task, _ROOM)
                self._evicted += 1
                return

    async def _free_slot(self) -> None:
        """Until fewer than ``_ENDING_AT_ONCE`` ended calls are sending their status."""
        ending, slot = self._ending, self._slot
        assert slot is not None
        while len(ending) >= _ENDING_AT_ONCE:
            slot.clear()
            try:
                async with asyncio.timeout(_ENDING_STUCK_S):
                    await slot.wait()
            except TimeoutError:
                stuck = time.monotonic() - _ENDING_STUCK_S
                for task in [t for t, since in ending.items() if since <= stuck]:
                    del ending[task]

    async def _sweep(self) -> None:
        order, expired = self._order, self._expired
        wake = self._wake
        assert wake is not None
        while True:
            while order and (order[0].task is None or order[0].task in expired):
                order.popleft()  # over: answered, gone, or ended already
            if not order:
                self._log_ended(quiet=True)
                wake.clear()
                await wake.wait()
                continue
            await asyncio.sleep(max(order[0].deadline - time.monotonic(), _SWEEP_GAP_S))
            now = time.monotonic()
            while order and order[0].deadline <= now:
                wait = order.popleft()
                if wait.task is None or wait.task in expired:
                    continue
                await self._free_slot()
                task = wait.task  # still waiting after the pause?
                if task is not None and task not in expired:
                    self._end(task, _TIMEOUT)
                    self._timed_out += 1
            self._log_ended(quiet=False)

    def _log_ended(self, *, quiet: bool) -> None:
        """One line for the calls ended since the last one, at most every second."""
        if not (self._timed_out or self._evicted):
            return
        now = time.monotonic()
        if not quiet and now - self._logged < _LOG_EVERY_S:
            return
        log.info(
            "calls ended without their request",
            timed_out=self._timed_out,
            ended_for_room=self._evicted,
            waiting=self.waiting,
            timeout_s=self.timeout_s,
            max_waiting=self.max_waiting,
        )
        self._timed_out = self._evicted = 0
        self._logged = now

    def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None


REQUEST_WAIT = RequestWait()


async def receive(read: Read, parse: Callable[[bytes], Any], type_name: str) -> Any:
    """The one request of a call with a single request, parsed."""
    raw = await REQUEST_WAIT.read(read)
    if type(raw) is bytes:
        return parse_request(raw, parse, type_name)
    if raw is TIMED_OUT:
        raise invalid("REQUEST_EXPECTED", timed_out_message(REQUEST_WAIT))
    raise invalid("REQUEST_EXPECTED", "the call ended without its request")


def timed_out_message(wait: RequestWait, first: str = "a call sends its request") -> str:
    """Why the server ended a call's wait for its first message; ``first``
    says what that message is, for a wait that ran out of time."""
    if _ENDED_BY_SERVER.get() == _ROOM:
        return (
            f"the server holds at most {wait.max_waiting} calls that have not sent their "
            "first message, and this one had waited longest"
        )
    return f"{first} within {wait.timeout_s:g} s"


def parse_request(raw: bytes, parse: Callable[[bytes], Any], type_name: str) -> Any:
    try:
        return parse(raw)
    except DecodeError as exc:
        # "Error parsing message with type 'x': <what>": keep the what.
        what = str(exc).rpartition(": ")[2] or "not protobuf"
        raise invalid(
            "MALFORMED_REQUEST", f"the request is not a valid {type_name} message ({what})"
        ) from None


async def refuse_call(context: grpc.aio.ServicerContext[Any, Any], err: ServiceError) -> None:
    """Send ``err`` as the call's status; the handler then returns.

    grpc.aio's abort raises an AbortError that it also keeps, and raises again
    itself once the handler returns. Raised through the handler, its traceback
    (and that of ``err``) held the handler's frames, which hold the call: a
    reference cycle per refused call, left to the cyclic collector, which the
    server runs rarely (``main.tune_gc``), so 10,000 refused calls grew the
    server by tens of MB. Caught here and stripped, the call is freed when it
    ends."""
    err.__traceback__ = None
    if tracing.ON:
        tracing.refused(err)  # the call's span: the instrumentation sees no abort_with_status
    try:
        await context.abort_with_status(rpc_status.to_status(err.to_status()))
    except Exception as exc:
        if type(exc).__name__ != "AbortError":  # grpc._cython.cygrpc's, no public name
            raise
        exc.__traceback__ = exc.__context__ = None


class CallLimit:
    """The server-wide bound on open calls of every service (streams included)."""

    def __init__(self, maximum: int = DEFAULT_MAX_CALLS) -> None:
        self.maximum = maximum
        self.open = 0

    def refusal(self) -> ServiceError:
        return exhausted(
            "TOO_MANY_CALLS", f"this server holds at most {self.maximum} open calls; retry later"
        )

    def admit(self) -> _Admission:
        """``with CALLS.admit():`` counts the call while it is open, or raises
        the refusal if the server holds its maximum already."""
        return _Admission(self)


class _Admission:
    __slots__ = ("limit",)

    def __init__(self, limit: CallLimit) -> None:
        self.limit = limit

    def __enter__(self) -> None:
        if self.limit.open >= self.limit.maximum:
            raise self.limit.refusal()
        self.limit.open += 1

    def __exit__(self, *exc: object) -> None:
        self.limit.open -= 1


CALLS = CallLimit()


def configure(
    *, request_timeout_s: float, max_calls: int, max_waiting: int = DEFAULT_MAX_WAITING
) -> None:
    REQUEST_WAIT.timeout_s = request_timeout_s
    REQUEST_WAIT.max_waiting = max_waiting
    CALLS.maximum = max_calls


# -- the standard services ----------------------------------------------------------------


def add_service(server: grpc.aio.Server, service: ServiceDescriptor, servicer: Any) -> None:
    """Register a servicer of a service other than ours (health, reflection) with
    the same bounds: each call is counted in ``CALLS``, a call's single request
    must arrive within the request timeout, and a request that does not parse
    is refused as MALFORMED_REQUEST. Registered through gRPC's own helpers, a
    health check that never sends its request would wait forever, uncounted."""
    handlers = {m.name: _bounded(m, getattr(servicer, m.name)) for m in service.methods}
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )


def _bounded(method: MethodDescriptor, behaviour: Any) -> grpc.RpcMethodHandler[Any, Any]:
    parse = message_factory.GetMessageClass(method.input_type).FromString
    serialize = message_factory.GetMessageClass(method.output_type).SerializeToString
    type_name = method.input_type.full_name

    async def requests(context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
        while (raw := await context.read()) is not grpc.aio.EOF:
            yield parse_request(raw, parse, type_name)

    async def unary(_: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            with CALLS.admit():
                return await behaviour(await receive(context.read, parse, type_name), context)
        except ServiceError as err:
            await refuse_call(context, err)
            return None

    async def streaming(_: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        try:
            with CALLS.admit():
                if method.client_streaming:
                    given: Any = requests(context)
                else:
                    given = await receive(context.read, parse, type_name)
                result = behaviour(given, context)
                if inspect.isasyncgen(result):
                    async for response in result:
                        await context.write(response)
                else:
                    await result  # a coroutine that writes its responses
        except ServiceError as err:
            await refuse_call(context, err)

    if method.server_streaming:
        return grpc.stream_stream_rpc_method_handler(streaming, response_serializer=serialize)
    return grpc.stream_unary_rpc_method_handler(unary, response_serializer=serialize)
