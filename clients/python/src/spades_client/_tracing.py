"""W3C trace context on every call, when the application traces.

If OpenTelemetry's API is installed (the ``otel`` extra, or the application's
own), each call carries the current context's ``traceparent`` (and
``tracestate``, baggage: whatever the configured propagators write), so the
server's span of the call is a child of the caller's span. Without the API,
or outside any span, calls go as before: no interceptor is added.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

Inject = Callable[[dict[str, str]], None]


def _injector() -> Inject | None:
    try:
        from opentelemetry import propagate
    except ImportError:
        return None

    def inject(carrier: dict[str, str]) -> None:
        propagate.inject(carrier)

    return inject


def _with_context(
    details: grpc.aio.ClientCallDetails, inject: Inject
) -> grpc.aio.ClientCallDetails:
    carrier: dict[str, str] = {}
    inject(carrier)
    if not carrier:
        return details  # no span: nothing to carry
    metadata = grpc.aio.Metadata(*(details.metadata or ()))
    for key, value in carrier.items():
        metadata[key.lower()] = value
    return grpc.aio.ClientCallDetails(
        details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
    )


class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, inject: Inject) -> None:
        self._inject = inject

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with_context(details, self._inject), request)


class _UnaryStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, inject: Inject) -> None:
        self._inject = inject

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with_context(details, self._inject), request)


class _StreamUnary(grpc.aio.StreamUnaryClientInterceptor):
    def __init__(self, inject: Inject) -> None:
        self._inject = inject

    async def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return await continuation(_with_context(details, self._inject), requests)


class _StreamStream(grpc.aio.StreamStreamClientInterceptor):
    def __init__(self, inject: Inject) -> None:
        self._inject = inject

    async def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return await continuation(_with_context(details, self._inject), requests)


def interceptors() -> list[grpc.aio.ClientInterceptor]:
    """The interceptors that carry the trace context; none without OpenTelemetry."""
    inject = _injector()
    if inject is None:
        return []
    return [_UnaryUnary(inject), _UnaryStream(inject), _StreamUnary(inject), _StreamStream(inject)]
