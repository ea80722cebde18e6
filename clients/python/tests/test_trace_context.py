"""The trace context a traced application sends: a call made inside an
OpenTelemetry span carries its W3C ``traceparent``, unary and streaming
alike, so the server's span of the call continues the caller's trace; a call
outside any span carries none. The server here is a real grpc.aio server on
loopback that records the metadata of each call it is sent."""

from __future__ import annotations

import re
from typing import Any

import grpc
import pytest
from harness import run

import spades_client as sc
from spades_client import pb

trace = pytest.importorskip("opentelemetry.trace", reason="the otel extra is not installed")
sdk_trace = pytest.importorskip(
    "opentelemetry.sdk.trace", reason="the OpenTelemetry SDK is not installed"
)

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


class Recorder(grpc.GenericRpcHandler):
    """Answers every method UNIMPLEMENTED, after noting its metadata."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []

    def service(self, details: grpc.HandlerCallDetails) -> Any:
        self.seen.append((details.method, {k: str(v) for k, v in details.invocation_metadata}))
        return None


async def _calls(recorder: Recorder, tracer: Any) -> tuple[str, str]:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((recorder,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with sc.connect(f"127.0.0.1:{port}", timeout=5) as client:
            seat = client.seat("m1.token")
            with tracer.start_as_current_span("the app's turn") as span:
                ids = span.get_span_context()
                with pytest.raises(sc.SpadesError):
                    await seat.view()
                stream = client.stub.StreamEvents(pb.StreamEventsRequest(match_id="m1"))
                with pytest.raises(grpc.aio.AioRpcError):
                    async for _ in stream:
                        pass
            with pytest.raises(sc.SpadesError):
                await seat.view()  # outside the span
        return format(ids.trace_id, "032x"), format(ids.span_id, "016x")
    finally:
        await server.stop(None)


def test_calls_in_a_span_carry_its_traceparent_and_calls_outside_carry_none() -> None:
    provider = sdk_trace.TracerProvider()
    tracer = provider.get_tracer("the app")
    recorder = Recorder()
    trace_id, span_id = run(_calls(recorder, tracer))
    methods = [m for m, _ in recorder.seen]
    assert methods[-3:] == [
        "/spades.v1.SpadesService/GetView",
        "/spades.v1.SpadesService/StreamEvents",
        "/spades.v1.SpadesService/GetView",
    ], methods
    in_span = [md for m, md in recorder.seen[:-1]]
    for md in in_span:
        m = TRACEPARENT.match(md.get("traceparent", ""))
        assert m is not None, md
        assert m.groups() == (trace_id, span_id)
    assert "traceparent" not in recorder.seen[-1][1]
