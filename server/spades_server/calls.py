"""What every call must do before its handler may trust it: arrive in time,
parse, and fit under the server's bound on open calls.

gRPC's own unary path waits for a call's request with no limit (a client that
half-closes without one is never answered) and turns a request that does not
parse into UNKNOWN with a traceback. So the service registers every method as
a request-streaming handler with no deserializer and receives the request
here: one message within ``REQUEST_WAIT.timeout_s``, parsed by the method's
message type, each failure a ``ServiceError`` the handler's wrapper sends with
its google.rpc details like any refusal.

The wait costs no timer per call: a call that waits is put in a dict with its
deadline, and one sweeper task per process cancels the waits that are overdue
(checked every quarter of the timeout, at most every second).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import DecodeError
from grpc_status import rpc_status

from .errors import ServiceError, exhausted, invalid

DEFAULT_REQUEST_TIMEOUT_S = 10.0
DEFAULT_MAX_CALLS = 20_000

_SWEEP_BATCH = 32

# The outcome of a wait that ran out of time (``EOF`` is the client's end).
TIMED_OUT = object()

Read = Callable[[], Awaitable[Any]]


class RequestWait:
    """Bounds how long a call may take to send its request."""

    def __init__(self, timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._waiting: dict[asyncio.Task[Any], float] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        """Calls waiting for a message now."""
        return len(self._waiting)

    async def read(self, read: Read) -> Any:
        """``read()``'s message (bytes), ``grpc.aio.EOF``, or ``TIMED_OUT``."""
        task = asyncio.current_task()
        assert task is not None
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = task.get_loop().create_task(self._sweep())
        waiting = self._waiting
        waiting[task] = time.monotonic() + self.timeout_s
        try:
            return await read()
        except asyncio.CancelledError:
            if task not in self._expired:
                raise  # the client went away, or the server stops
            self._expired.discard(task)
            task.uncancel()
            return TIMED_OUT
        finally:
            del waiting[task]

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, max(0.05, self.timeout_s / 4)))
            if not self._waiting:
                continue
            now = time.monotonic()
            due = [t for t, d in self._waiting.items() if d <= now and t not in self._expired]
            # Each ended call sends its status and logs a line: a few hundred
            # at once would hold up every other call, so they go in small
            # batches with the event loop's other work between them.
            for i, task in enumerate(due):
                if i and i % _SWEEP_BATCH == 0:
                    await asyncio.sleep(0)
                # Still waiting (a wait may have ended during the pauses)?
                if self._waiting.get(task, now + 1) <= now:
                    self._expired.add(task)
                    task.cancel()

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
        raise invalid(
            "REQUEST_EXPECTED",
            f"a call sends its request within {REQUEST_WAIT.timeout_s:g} s",
        )
    raise invalid("REQUEST_EXPECTED", "the call ended without its request")


def parse_request(raw: bytes, parse: Callable[[bytes], Any], type_name: str) -> Any:
    try:
        return parse(raw)
    except DecodeError as exc:
        # "Error parsing message with type 'x': <what>": keep the what.
        what = str(exc).rpartition(": ")[2] or "not protobuf"
        raise invalid(
            "MALFORMED_REQUEST", f"the request is not a valid {type_name} message ({what})"
        ) from None


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


def configure(*, request_timeout_s: float, max_calls: int) -> None:
    REQUEST_WAIT.timeout_s = request_timeout_s
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
            await context.abort_with_status(rpc_status.to_status(err.to_status()))

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
            await context.abort_with_status(rpc_status.to_status(err.to_status()))

    if method.server_streaming:
        return grpc.stream_stream_rpc_method_handler(streaming, response_serializer=serialize)
    return grpc.stream_unary_rpc_method_handler(unary, response_serializer=serialize)
