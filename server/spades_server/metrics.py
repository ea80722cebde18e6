"""Prometheus metrics, served on their own HTTP port."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

from . import tracing

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

RPCS = Counter("spades_rpcs_total", "RPCs handled, by method and status code", ["method", "code"])
RPC_LATENCY = Histogram(
    "spades_rpc_latency_seconds",
    "RPC latency (unary; streams until the first message)",
    ["method"],
    buckets=_LATENCY_BUCKETS,
)
ACTIVE_MATCHES = Gauge("spades_active_matches", "Matches loaded in this process and not over")
LOADED_MATCHES = Gauge(
    "spades_loaded_matches", "Matches held in this process's memory, over or not"
)
OPEN_STREAMS = Gauge("spades_open_streams", "Event streams open (seats and spectators)")
ACTIONS = Counter("spades_actions_total", "Actions applied, by type and by whom", ["type", "by"])
REJECTIONS = Counter("spades_rejections_total", "Requests refused, by reason", ["reason"])
STORE_LATENCY = Histogram(
    "spades_store_latency_seconds", "Store call latency", ["op"], buckets=_LATENCY_BUCKETS
)
BOT_THINK = Histogram(
    "spades_bot_think_seconds", "Bot decision time", ["level"], buckets=_LATENCY_BUCKETS
)
BOT_FAILURES = Counter(
    "spades_bot_failures_total",
    "Bot decisions that failed (an unknown level, an exception, an action the rules refuse) "
    "and were replaced by a legal action, by level",
    ["level"],
)
REPLICA_EVENTS = Counter(
    "spades_replica_events_total",
    "On a shared store (Redis): catch_up (another replica's appends read), conflict (an "
    "append lost a race and the match was rebuilt), takeover (a due match driven here)",
    ["kind"],
)
GC_PAUSE = Histogram(
    "spades_gc_pause_seconds",
    "Collections of the cyclic garbage collector, which stop the event loop, by generation",
    ["generation"],
    buckets=_LATENCY_BUCKETS,
)


def observe_gc_pauses() -> None:
    """Time every collection: a pause of the event loop shows in every RPC's
    latency, so a tail an operator sees may be the collector's."""
    started = [0.0]
    generations = [GC_PAUSE.labels(str(g)) for g in range(3)]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            generations[info["generation"]].observe(time.perf_counter() - started[0])

    gc.callbacks.append(on_gc)


# -- the conventional gRPC server metrics ------------------------------------------------
#
# The names and labels of go-grpc-prometheus (and its Python and Java ports),
# so that dashboards and alerts written for any gRPC server read this one:
# recorded by the wrappers every method of SpadesService and LobbyService goes
# through (rpc.unary, rpc.streaming) and by the edge's Play calls (edge_link).
# grpc_code is the code's name as Go writes it (InvalidArgument, not
# INVALID_ARGUMENT); spades_rpcs_total keeps Python's. grpc_type is the
# method's in the proto, whatever the handler it is registered as.

# Streams are timed until they end: minutes, hours.
_HANDLING_BUCKETS = (*_LATENCY_BUCKETS, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)
_GRPC_LABELS = ("grpc_type", "grpc_service", "grpc_method")

GRPC_STARTED = Counter(
    "grpc_server_started_total", "Total number of RPCs started on the server.", _GRPC_LABELS
)
GRPC_HANDLED = Counter(
    "grpc_server_handled_total",
    "Total number of RPCs completed on the server, regardless of success or failure.",
    [*_GRPC_LABELS, "grpc_code"],
)
GRPC_HANDLING = Histogram(
    "grpc_server_handling_seconds",
    "Histogram of response latency (seconds) of gRPC that had been application-level "
    "handled by the server (streams: until they end).",
    _GRPC_LABELS,
    buckets=_HANDLING_BUCKETS,
)
GRPC_MSG_RECEIVED = Counter(
    "grpc_server_msg_received_total",
    "Total number of RPC stream messages received on the server (streams only).",
    _GRPC_LABELS,
)
GRPC_MSG_SENT = Counter(
    "grpc_server_msg_sent_total",
    "Total number of gRPC stream messages sent by the server (streams only).",
    _GRPC_LABELS,
)

# grpc.StatusCode's names, as grpc-go's codes.Code.String() writes them.
GO_CODES = {
    "OK": "OK",
    "CANCELLED": "Canceled",
    "UNKNOWN": "Unknown",
    "INVALID_ARGUMENT": "InvalidArgument",
    "DEADLINE_EXCEEDED": "DeadlineExceeded",
    "NOT_FOUND": "NotFound",
    "ALREADY_EXISTS": "AlreadyExists",
    "PERMISSION_DENIED": "PermissionDenied",
    "RESOURCE_EXHAUSTED": "ResourceExhausted",
    "FAILED_PRECONDITION": "FailedPrecondition",
    "ABORTED": "Aborted",
    "OUT_OF_RANGE": "OutOfRange",
    "UNIMPLEMENTED": "Unimplemented",
    "INTERNAL": "Internal",
    "UNAVAILABLE": "Unavailable",
    "DATA_LOSS": "DataLoss",
    "UNAUTHENTICATED": "Unauthenticated",
}


def grpc_type(client_streaming: bool, server_streaming: bool) -> str:
    """A method's grpc_type label."""
    if client_streaming:
        return "bidi_stream" if server_streaming else "client_stream"
    return "server_stream" if server_streaming else "unary"


class GrpcMethod:
    """The grpc_server_* series of one method, looked up once (``labels`` takes
    a lock and builds a key on every call), not per call."""

    __slots__ = ("_handled", "_labels", "handling", "started")

    def __init__(self, service: str, method: str, kind: str) -> None:
        self._labels = (kind, service, method)
        self.started = GRPC_STARTED.labels(*self._labels)
        self.handling = GRPC_HANDLING.labels(*self._labels)
        self._handled = {"OK": GRPC_HANDLED.labels(*self._labels, "OK")}

    def messages(self) -> tuple[Counter, Counter]:
        """The method's grpc_server_msg_received_total and _sent_total (a
        stream's: unary calls have one message each way, not counted)."""
        return GRPC_MSG_RECEIVED.labels(*self._labels), GRPC_MSG_SENT.labels(*self._labels)

    def handled(self, code: str, seconds: float) -> None:
        """The call ended with ``code`` (grpc.StatusCode's name) after ``seconds``."""
        child = self._handled.get(code)
        if child is None:
            child = self._handled[code] = GRPC_HANDLED.labels(
                *self._labels, GO_CODES.get(code, code)
            )
        child.inc()
        self.handling.observe(seconds, trace_exemplar() if tracing.ON else None)


def trace_exemplar() -> dict[str, str] | None:
    """The exemplar of an observation made inside a traced call: the trace id
    of the current span, when tracing is on (``tracing``) and that span is
    recording (one the sampler dropped has no trace to look at). Exemplars
    are in the OpenMetrics exposition only: /metrics serves it to a scraper
    that asks for it (Prometheus does, first)."""
    if not tracing.ON:
        return None
    current_span = _current_span or _import_current_span()
    span = current_span()
    if not span.is_recording():
        return None
    return {"trace_id": format(span.get_span_context().trace_id, "032x")}


_current_span: Callable[[], Any] | None = None


def _import_current_span() -> Callable[[], Any]:
    """opentelemetry.trace's ``get_current_span``, imported once tracing is on
    (the package is the otel extra's)."""
    global _current_span  # noqa: PLW0603 - a lazy import, kept
    from opentelemetry.trace import get_current_span

    _current_span = get_current_span
    return get_current_span
