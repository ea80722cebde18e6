"""What every RPC of the service shares: receiving and parsing its request,
logging and counting it, and turning any refusal into a gRPC status with
google.rpc details (``unary``, ``streaming``, ``service_error``); and the
registration of a servicer's methods from the proto descriptor
(``add_to_server``). Used by ``service`` (SpadesService) and
``lobby.service`` (LobbyService).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import grpc
import structlog
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor
from prometheus_client import Counter

from spades_engine import (
    ActionParseError,
    CardError,
    DealError,
    IllegalAction,
    Reason,
    RulesetError,
    SnapshotError,
    SpadesError,
)

from . import calls, convert
from .errors import ServiceError, invalid, store_message, unavailable
from .gen.spades.v1 import lobby_pb2 as lpb
from .gen.spades.v1 import spades_pb2 as pb
from .metrics import OPEN_STREAMS, RPC_LATENCY, RPCS, GrpcMethod, grpc_type
from .store import StoreError

log = structlog.get_logger("spades.rpc")

Req = TypeVar("Req")
Resp = TypeVar("Resp")

# The services this server answers, by name.
SERVICES = {
    s.name: s
    for s in (
        pb.DESCRIPTOR.services_by_name["SpadesService"],
        lpb.DESCRIPTOR.services_by_name["LobbyService"],
    )
}
# A long poll's wait ends this long before the call's deadline, so that its
# (empty) answer arrives before the client gives up on the call.
POLL_DEADLINE_MARGIN_S = 0.5


# Refusals that are wrong whatever the state of the match (INVALID_ARGUMENT);
# every other rule violation depends on the state (FAILED_PRECONDITION).
_ARGUMENT_REASONS = {
    Reason.BID_OUT_OF_RANGE,
    Reason.UNKNOWN_ACTION,
    Reason.WRONG_PASS_COUNT,
    Reason.NOT_A_SUIT,
}


def service_error(exc: BaseException) -> ServiceError:
    """The status a client receives for an exception raised in a handler."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, IllegalAction):
        code = (
            grpc.StatusCode.INVALID_ARGUMENT
            if exc.reason in _ARGUMENT_REASONS
            else grpc.StatusCode.FAILED_PRECONDITION
        )
        return ServiceError(
            code, exc.reason.value, exc.message, fields=("action",), metadata={"rule": exc.rule}
        )
    if isinstance(exc, RulesetError):
        fields = tuple(f"ruleset.{o}" for o in exc.options)
        return invalid("INVALID_RULESET", str(exc), *fields)
    if isinstance(exc, convert.ConversionError):
        return invalid("INVALID_ARGUMENT", str(exc), exc.field_path)
    if isinstance(exc, SnapshotError):
        return invalid("INVALID_SNAPSHOT", str(exc), "snapshot")
    if isinstance(exc, SpadesError):  # the engine refused its input: never INTERNAL
        reason = next((r for t, r in _ENGINE_REASONS if isinstance(exc, t)), "INVALID_ARGUMENT")
        return invalid(reason, str(exc))
    if isinstance(exc, StoreError):
        # Loading a match (or listing) failed: the store is unreachable or
        # refused; nothing changed, and the same call can be retried.
        return unavailable("STORE_UNAVAILABLE", store_message("the store did not answer", exc))
    return ServiceError(grpc.StatusCode.INTERNAL, "INTERNAL", "internal error")


_ENGINE_REASONS: tuple[tuple[type[SpadesError], str], ...] = (
    (DealError, "INVALID_DEAL"),
    (ActionParseError, "INVALID_ACTION"),
    (CardError, "INVALID_CARD"),
)


# Request ids made here: a random per-process prefix and a counter, unique across
# replicas without a random draw (a syscall) per request.
_ID_PREFIX = secrets.token_hex(4)
_ids = itertools.count(1)


def new_request_id() -> str:
    return f"{_ID_PREFIX}-{next(_ids)}"


def _request_id(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "x-request-id" and isinstance(value, str) and 0 < len(value) <= 128:
            return value
    return new_request_id()


def refuse(name: str, exc: BaseException) -> ServiceError:
    """The status for ``exc`` raised by method ``name``, logged."""
    err = service_error(exc)
    if err.code is grpc.StatusCode.INTERNAL:
        log.exception("rpc failed", method=name)
    elif not calls.ended_by_server():  # those are counted in one line a second
        log.info("rpc refused", method=name, code=err.code.name, reason=err.reason)
    return err


def _method(name: str) -> MethodDescriptor:
    """The method called ``name`` (names are unique across the services)."""
    for service in SERVICES.values():
        method = service.methods_by_name.get(name)
        if method is not None:
            return method
    raise KeyError(f"no method {name} in {', '.join(SERVICES)}")


def grpc_method(name: str) -> GrpcMethod:
    """The grpc_server_* series of method ``name`` (metrics.GrpcMethod)."""
    method = _method(name)
    kind = grpc_type(method.client_streaming, method.server_streaming)
    return GrpcMethod(method.containing_service.full_name, name, kind)


def _request_type(name: str) -> tuple[Callable[[bytes], Any], str, bool]:
    """The parser of method ``name``'s request, the message's name, and whether
    the client streams requests."""
    method = _method(name)
    request = message_factory.GetMessageClass(method.input_type)
    return request.FromString, method.input_type.full_name, method.client_streaming


def unary(
    fn: Callable[[Any, Req, grpc.aio.ServicerContext[Any, Any]], Awaitable[Resp]],
) -> Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Resp]]:
    """A unary handler, registered as request-streaming (see ``calls``): it
    receives and parses the request, then runs ``fn`` on it."""
    name = fn.__name__
    parse, type_name, _ = _request_type(name)
    ok_count = RPCS.labels(name, "OK")  # children looked up once, not per call
    latency = RPC_LATENCY.labels(name)
    grpc_metrics = grpc_method(name)
    started = grpc_metrics.started
    limit = calls.CALLS

    @functools.wraps(fn)
    async def wrapper(
        self: Any, requests: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Resp:
        structlog.contextvars.bind_contextvars(request_id=_request_id(context), method=name)
        started.inc()
        t0 = time.perf_counter()
        code = "OK"
        try:
            with limit.admit():
                request = await calls.receive(context.read, parse, type_name)
                return await fn(self, request, context)
        except asyncio.CancelledError:  # the client went away (or the server stops)
            code = "CANCELLED"
            raise
        except Exception as exc:
            err = refuse(name, exc)
            code = err.code.name
            await calls.refuse_call(context, err)
            # No response is sent: gRPC raises the abort again (calls.refuse_call).
            return cast(Resp, None)
        finally:
            elapsed = time.perf_counter() - t0
            (ok_count if code == "OK" else RPCS.labels(name, code)).inc()
            latency.observe(elapsed)
            grpc_metrics.handled(code, elapsed)
            structlog.contextvars.clear_contextvars()

    return wrapper


def streaming(
    fn: Callable[
        [Any, Req, grpc.aio.ServicerContext[Any, Any], Callable[[], None]], Awaitable[None]
    ],
) -> Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[None]]:
    """A server-streaming handler that writes serialized responses with
    ``context.write``, counted and logged like ``_unary``; it calls the
    ``first_sent`` it is given after its first message, which ends the latency
    the histogram records for it. A method with one request receives it as
    ``_unary`` does; a bidirectional one (Play) reads its own requests, as bytes.
    The handler is given a context that counts the messages it reads and
    writes (grpc_server_msg_*); grpc_server_handling_seconds times the whole
    stream."""
    name = fn.__name__
    parse, type_name, client_streaming = _request_type(name)
    latency = RPC_LATENCY.labels(name)
    grpc_metrics = grpc_method(name)
    started = grpc_metrics.started
    received, sent = grpc_metrics.messages()
    limit = calls.CALLS

    @functools.wraps(fn)
    async def wrapper(
        self: Any, requests: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        structlog.contextvars.bind_contextvars(request_id=_request_id(context), method=name)
        started.inc()
        t0 = time.perf_counter()
        code = "OK"

        def first_sent() -> None:
            latency.observe(time.perf_counter() - t0)

        OPEN_STREAMS.inc()
        try:
            with limit.admit():
                if not client_streaming:
                    requests = await calls.receive(context.read, parse, type_name)
                    received.inc()
                counted = cast(Any, _CountingContext(context, received, sent))
                await fn(self, requests, counted, first_sent)
        except asyncio.CancelledError:  # the client went away (or the server stops)
            code = "CANCELLED"
            raise
        except Exception as exc:
            if type(exc).__name__ == "ExecuteBatchError":
                # grpc's (grpc._cython.cygrpc, no public name): a write on a call
                # whose client went away before the cancellation reached this
                # handler. Nobody is left to tell, and it is no server failure.
                code = "CANCELLED"
                log.info("rpc cancelled", method=name, during="write")
                return
            err = refuse(name, exc)
            code = err.code.name
            await calls.refuse_call(context, err)
        finally:
            OPEN_STREAMS.dec()
            RPCS.labels(name, code).inc()
            grpc_metrics.handled(code, time.perf_counter() - t0)
            structlog.contextvars.clear_contextvars()

    return wrapper


class _CountingContext:
    """A stream's servicer context, as its handler sees it: ``write`` and
    ``read`` count the messages (grpc_server_msg_sent_total,
    grpc_server_msg_received_total), the rest is the call's own context. A
    write costs a counter's increment more, and no coroutine of its own."""

    __slots__ = ("_context", "_read", "_received", "_sent", "_write")

    def __init__(
        self, context: grpc.aio.ServicerContext[Any, Any], received: Counter, sent: Counter
    ) -> None:
        self._context = context
        self._read = context.read
        self._write = context.write
        self._received = received
        self._sent = sent

    def write(self, message: Any) -> Awaitable[None]:
        self._sent.inc()
        return self._write(message)

    async def read(self) -> Any:
        message = await self._read()
        if message is not grpc.aio.EOF:
            self._received.inc()
        return message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def _serialized(message: Any) -> bytes:
    return message if isinstance(message, bytes) else bytes(message.SerializeToString())


def add_to_server(
    servicer: Any, server: grpc.aio.Server, service_name: str = "SpadesService"
) -> None:
    """Register every method of the service (from the proto descriptor,
    so a method missing here fails at start-up). Every method is registered as
    request-streaming with no deserializer: its wrapper receives the request
    bytes itself, within a time limit, and parses them (see ``calls``). Stream
    responses are built as bytes once per event by the session and sent as they
    are; unary ones are messages serialized by gRPC."""
    service = SERVICES[service_name]
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in service.methods:
        fn = getattr(servicer, method.name)
        response = message_factory.GetMessageClass(method.output_type)
        if method.client_streaming and not method.server_streaming:
            raise TypeError(f"{method.full_name}: client streaming alone is not served")
        if method.server_streaming:
            handlers[method.name] = grpc.stream_stream_rpc_method_handler(
                fn, request_deserializer=None, response_serializer=_serialized
            )
        else:
            handlers[method.name] = grpc.stream_unary_rpc_method_handler(
                fn, request_deserializer=None, response_serializer=response.SerializeToString
            )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )
    server.add_registered_method_handlers(service.full_name, handlers)


def poll_wait_s(wait_ms: int, context: grpc.aio.ServicerContext[Any, Any], most_ms: int) -> float:
    """How long a long poll may wait: ``wait_ms`` (BAD_WAIT_MS if negative), at
    most ``most_ms``, and ending early enough to answer before the call's
    deadline."""
    if wait_ms < 0:
        raise invalid("BAD_WAIT_MS", "wait_ms must be 0 (answer at once) or more", "wait_ms")
    wait_s = min(wait_ms, most_ms) / 1000
    remaining = context.time_remaining()
    if remaining is not None:
        wait_s = min(wait_s, max(0.0, remaining - POLL_DEADLINE_MARGIN_S))
    return wait_s
