"""OpenTelemetry traces (docs/operations.md, "Traces (OpenTelemetry)").

Off unless the standard OTEL_* variables ask for an exporter (``exporters``).
Then ``configure`` builds the SDK's tracer provider from them (the sampler,
the resource, the OTLP exporter's endpoint and headers: the SDK reads its own
variables) and the server adds the gRPC instrumentation's grpc.aio server
interceptor (``server_interceptors``): a SERVER span per call, which continues
a client's W3C ``traceparent``. Inside a call, the parts of an action have
spans of their own, children of the call's span or, on a Play call, of the
action's span (``Play.action``): the engine's apply (``engine.apply``), the
store's append (``store.append``) and the fan-out of the events to the match's
streams (``events.fan_out``). A bot's turn is the root of a trace of its own
(``bot.turn``), linked to the span of the change that woke the bots. Every log
line written while a span is current carries its ``trace_id`` and ``span_id``
(``add_trace_ids``).

The packages are the ``otel`` extra, imported only once tracing is on. Off,
each hot path checks ``ON`` once: read it as ``tracing.ON`` (a copy made by
``from .tracing import ON`` would never change).
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import os
from collections.abc import Awaitable, Iterator, Mapping, MutableMapping
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import grpc
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

    from spades_engine import Action, Match

    from .errors import ServiceError
    from .event_log import EventLog
    from .store import StoredEvent

# The one flag the hot paths check.
ON = False

SERVICE_NAME = "spades-server"  # the service.name unless OTEL_SERVICE_NAME says otherwise
EXPORTERS = ("otlp", "console")
# Not traced unless OTEL_PYTHON_GRPC_EXCLUDED_SERVICES names others: the probes
# of Kubernetes call it every few seconds (k8s/), a trace each.
DEFAULT_EXCLUDED_SERVICES = ("grpc.health.v1.Health",)
_PACKAGES = {
    "opentelemetry.sdk": "opentelemetry-sdk",
    "opentelemetry.instrumentation.grpc": "opentelemetry-instrumentation-grpc",
}
_OTLP_PACKAGE = ("opentelemetry.exporter.otlp.proto.grpc", "opentelemetry-exporter-otlp-proto-grpc")


class _State:
    """What ``install`` set up (None and "off": nothing)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.tracer: Tracer | None = None
        self.provider: TracerProvider | None = None
        self.owned = False  # the provider is configure's (shut down with the server), not a test's
        self.described = "off"
        self.current_span: Callable[[], Span] | None = None


_state = _State()


class TracingConfigError(ValueError):
    """The OTEL_* variables ask for something this server cannot do."""


def exporters(env: Mapping[str, str]) -> list[str]:
    """The exporters ``env`` asks for; none: tracing is off.

    OTEL_TRACES_EXPORTER (otlp, console or none, comma-separated) says which;
    without it, an OTLP endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
    OTEL_EXPORTER_OTLP_ENDPOINT) means otlp; without either, off (the SDK's
    own default would be otlp). OTEL_SDK_DISABLED=true turns it off."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = env.get("OTEL_TRACES_EXPORTER", "").strip()
    if not named:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        )
        return ["otlp"] if endpoint and endpoint.strip() else []
    wanted: list[str] = []
    for name in (n.strip().lower() for n in named.split(",")):
        if name not in (*EXPORTERS, "none", ""):
            raise TracingConfigError(
                f"OTEL_TRACES_EXPORTER: {name!r} is not an exporter of this server "
                f"({', '.join(EXPORTERS)} or none)"
            )
        if name in EXPORTERS and name not in wanted:
            wanted.append(name)
    if "otlp" in wanted:
        for var in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
            protocol = env.get(var, "").strip()
            if protocol:
                if protocol != "grpc":
                    raise TracingConfigError(
                        f"{var}: this server exports OTLP over gRPC only (grpc), not {protocol!r}"
                    )
                break
    return wanted


def check(env: Mapping[str, str]) -> list[str]:
    """``exporters(env)``, once the packages they need are known to be
    installed (found, not imported)."""
    wanted = exporters(env)
    if not wanted:
        return wanted
    needed = dict(_PACKAGES)
    if "otlp" in wanted:
        needed[_OTLP_PACKAGE[0]] = _OTLP_PACKAGE[1]
    missing = [dist for module, dist in needed.items() if not _installed(module)]
    if missing:
        raise TracingConfigError(
            f"the OTEL_* variables ask for traces ({', '.join(wanted)}), but "
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: "
            "install the server with its otel extra (pip install 'spades-engine[otel]')"
        )
    return wanted


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def configure(env: Mapping[str, str] | None = None) -> str:
    """Turn tracing on if the environment (os.environ) asks for it: the SDK's
    provider, made the global one, exporting in batches. Returns what
    ``described`` returns. Raises TracingConfigError."""
    wanted = check(os.environ if env is None else env)
    if not wanted:
        return "off"
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SpanExporter,
    )

    provider = TracerProvider(resource=_resource())  # the sampler: OTEL_TRACES_SAMPLER
    for name in wanted:
        exporter: SpanExporter
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()  # OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, HEADERS, ...
        else:
            exporter = ConsoleSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))  # OTEL_BSP_*
    trace.set_tracer_provider(provider)
    install(provider)
    _state.owned = True
    _state.described = ",".join(wanted)
    return _state.described


def _resource() -> Any:
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource

    # OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win over ours.
    given = OTELResourceDetector().detect().attributes
    ours: dict[str, str] = {}
    if "service.name" not in given:
        ours["service.name"] = SERVICE_NAME
    if "service.version" not in given:
        ours["service.version"] = _version()
    return Resource.create(ours)


def _version() -> str:
    try:
        return metadata.version("spades-engine")
    except metadata.PackageNotFoundError:
        return "unknown"


def install(provider: TracerProvider) -> None:
    """Trace with ``provider`` from now on. ``configure`` calls it with the
    SDK's; a test with one of its own (an in-memory exporter), which is then
    not made the global provider nor shut down with the server."""
    global ON  # noqa: PLW0603 - the hot paths' flag, read as tracing.ON
    from opentelemetry.trace import get_current_span

    _state.tracer = provider.get_tracer("spades_server", _version())
    _state.provider = provider
    _state.owned = False
    _state.described = "installed"
    _state.current_span = get_current_span
    ON = True


def uninstall() -> None:
    """Back to no tracing (tests)."""
    global ON  # noqa: PLW0603 - the hot paths' flag, read as tracing.ON
    ON = False
    _state.reset()


def described() -> str:
    """What the start-up log line says: off, or the exporters."""
    return _state.described


def shutdown() -> None:
    """Export the spans still held (the server stops)."""
    provider = _state.provider
    if provider is None:
        return
    if _state.owned:
        provider.shutdown()
    else:
        provider.force_flush()


# -- the server's interceptor -------------------------------------------------------------


def server_interceptors() -> list[grpc.aio.ServerInterceptor]:
    """The interceptors of the gRPC server: none when tracing is off."""
    if not ON:
        return []
    from opentelemetry import trace
    from opentelemetry.instrumentation.grpc import filters
    from opentelemetry.instrumentation.grpc.version import __version__

    names = os.environ.get("OTEL_PYTHON_GRPC_EXCLUDED_SERVICES", "").strip()
    excluded = [s.strip() for s in names.split(",") if s.strip()] or DEFAULT_EXCLUDED_SERVICES
    tracer = trace.get_tracer(
        "opentelemetry.instrumentation.grpc",  # the spans' scope, as the instrumentation names it
        __version__,
        _state.provider,
        schema_url="https://opentelemetry.io/schemas/1.11.0",
    )
    keep = filters.negate(filters.any_of(*(filters.service_name(s) for s in excluded)))
    interceptor: grpc.aio.ServerInterceptor = _interceptor_class()(tracer, filter_=keep)
    return [interceptor]


def _interceptor_class() -> Any:
    """The instrumentation's grpc.aio server interceptor, able to wrap handlers
    that write their responses with ``context.write`` (every streaming handler
    here): its own wraps every response-streaming handler as an async
    generator, which fails on a coroutine (open-telemetry/opentelemetry-python-
    contrib issue 3066)."""
    from opentelemetry.instrumentation.grpc._aio_server import (
        OpenTelemetryAioServerInterceptor,
        _OpenTelemetryAioServicerContext,
    )

    class Interceptor(OpenTelemetryAioServerInterceptor):
        def _intercept_aio_server_stream(self, behavior: Any, handler_call_details: Any) -> Any:
            if not inspect.iscoroutinefunction(behavior):
                return super()._intercept_aio_server_stream(  # type: ignore[no-untyped-call]
                    behavior, handler_call_details
                )

            async def written(request_or_iterator: Any, context: Any) -> None:
                with (
                    self._set_remote_context(context),
                    self._start_span(  # type: ignore[no-untyped-call]
                        handler_call_details, context, set_status_on_exception=False
                    ) as span,
                ):
                    wrapped = _OpenTelemetryAioServicerContext(context, span)  # type: ignore[no-untyped-call]
                    try:
                        await behavior(request_or_iterator, wrapped)
                    except Exception as error:
                        if type(error) is not Exception:  # as the instrumentation's own
                            span.record_exception(error)
                        raise

            return written

    return Interceptor


# -- spans inside a call ---------------------------------------------------------------------


@contextlib.contextmanager
def _child(name: str, attributes: dict[str, str | int]) -> Iterator[None]:
    """A span ``name``, child of the current span, when that one is
    recording: a call's, an action's or a bot's turn; not under a span that
    has ended (work a call left behind, such as a turn timer it armed) nor one
    the sampler dropped."""
    tracer, current_span = _state.tracer, _state.current_span
    assert tracer is not None and current_span is not None
    if not current_span().is_recording():
        yield
        return
    with tracer.start_as_current_span(name, attributes=attributes):
        yield


def apply(match: Match, seat: int, action: Action, match_id: str, by: str) -> list[Any]:
    """``match.apply(seat, action)`` in a span ``engine.apply``."""
    attributes: dict[str, str | int] = {
        "spades.match_id": match_id,
        "spades.seat": seat,
        "spades.action": type(action).__name__,  # the kind only: a pass of cards is private
        "spades.by": by,
    }
    with _child("engine.apply", attributes):
        return match.apply(seat, action)


async def store_append(pending: Awaitable[None], match_id: str, store: object, events: int) -> None:
    """Await the store's ``append`` in a span ``store.append``."""
    attributes: dict[str, str | int] = {
        "spades.match_id": match_id,
        "spades.store": type(store).__name__,
        "spades.events": events,
    }
    with _child("store.append", attributes):
        await pending


def fan_out(log: EventLog, stored: list[StoredEvent], match_id: str) -> None:
    """``log.publish(stored)`` in a span ``events.fan_out``: the streams of the
    match waiting for events are woken (each sends them in its own call)."""
    attributes: dict[str, str | int] = {
        "spades.match_id": match_id,
        "spades.events": len(stored),
        "spades.streams": log.streams,
        "spades.woken": log.waiting,
    }
    with _child("events.fan_out", attributes):
        log.publish(stored)


class ActionSpan:
    """The span of one action of a Play call, current until ``end``."""

    __slots__ = ("span", "token")

    def __init__(self, name: str, match_id: str, seat: int, action_id: str) -> None:
        from opentelemetry import context, trace

        assert _state.tracer is not None
        self.span = _state.tracer.start_span(
            name,
            attributes={
                "spades.match_id": match_id,
                "spades.seat": seat,
                "spades.action_id": action_id,
            },
        )
        self.token = context.attach(trace.set_span_in_context(self.span))

    def refused(self, err: ServiceError) -> None:
        refused(err, self.span)

    def end(self) -> None:
        from opentelemetry import context

        context.detach(self.token)
        self.span.end()


def refused(err: ServiceError, span: Span | None = None) -> None:
    """Mark ``span`` (by default the current one: the call's, where its status
    is sent) as refused: the gRPC code, the reason, status ERROR."""
    from opentelemetry.trace import Status, StatusCode, get_current_span

    span = span or get_current_span()
    if not span.is_recording():
        return
    span.set_attribute("rpc.grpc.status_code", err.code.value[0])
    span.set_attribute("spades.reason", err.reason)
    span.set_status(Status(StatusCode.ERROR, f"{err.code.name} {err.reason}: {err.message}"))


@contextlib.contextmanager
def bot_turn(match_id: str, seat: int) -> Iterator[None]:
    """A bot's turn (thinking, then its action's spans): the root of a trace of
    its own, linked to the span current when the bots were woken (the human
    action before it, say), whose call may be long over."""
    from opentelemetry import context, trace

    assert _state.tracer is not None
    cause = trace.get_current_span().get_span_context()
    with _state.tracer.start_as_current_span(
        "bot.turn",
        context=context.Context(),  # no parent
        links=[trace.Link(cause)] if cause.is_valid else None,
        attributes={"spades.match_id": match_id, "spades.seat": seat},
    ):
        yield


# -- logs ------------------------------------------------------------------------------


def add_trace_ids(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: the current span's trace and span ids (hex), when
    one is current and recording."""
    current_span = _state.current_span
    if current_span is not None:
        span = current_span()
        if span.is_recording():
            ids = span.get_span_context()
            event["trace_id"] = format(ids.trace_id, "032x")
            event["span_id"] = format(ids.span_id, "016x")
    return event


def log_processors() -> list[Callable[..., Any]]:
    """The structlog processors tracing adds: none when it is off."""
    return [add_trace_ids] if ON else []
