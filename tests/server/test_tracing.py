"""OpenTelemetry traces (spades_server.tracing) over real gRPC channels.

Most tests run one server in this process (``main.serve`` on a thread of its
own, the in-memory store) with tracing installed through ``tracing.install``
and an in-memory exporter, so that they can read every span it ends. The
environment's path (the OTEL_* variables, the OTLP exporter, the sampler) runs
real server processes exporting to an OTLP collector this test process serves;
and a server started with no OTEL_* variable installs no tracing at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import json
import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
import structlog
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from server_harness import (
    OPERATOR_TOKEN,
    RPC_TIMEOUT,
    PlayCall,
    Server,
    StreamReader,
    Table,
    choose,
    create_match,
    failure_of,
    get_view,
    new_action_id,
    refusal_of,
    seat_md,
    stream_events,
    submit,
    wait_until,
)
from spades_server import main, tracing
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc

SERVICE = "spades.v1.SpadesService"
SUBMIT = f"/{SERVICE}/SubmitAction"
PLAY = f"/{SERVICE}/Play"
PARTS = ("engine.apply", "store.append", "events.fan_out")
_STARTED = re.compile(r'"grpc": "127\.0\.0\.1:(\d+)"')


# -- a traced server in this process -------------------------------------------------------


class Lines(io.StringIO):
    """The server's log, one JSON object a line."""

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.getvalue().splitlines() if line.startswith("{")]


class InProcessServer:
    """``main.serve`` on a thread with its own event loop, traced into
    ``exporter``, logging (as main.py configures it) into ``log``."""

    def __init__(self, exporter: InMemorySpanExporter, log: Lines) -> None:
        self.exporter = exporter
        self.log = log
        self.args = main.parse_args(
            [
                *("--port", "0", "--metrics-port", "-1", "--store", "memory"),
                *("--operator-token", OPERATOR_TOKEN, "--grace-seconds", "2"),
                *("--actions-per-second", "10000"),
            ]
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.channel: grpc.Channel | None = None

    def _run(self) -> None:
        async def serve() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            self._ready.set()
            await main.serve(self.args, self._stop)

        try:
            asyncio.run(serve())
        except BaseException as e:
            self.error = e
        finally:
            self._ready.set()

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(20)

        def port() -> int | None:
            found = _STARTED.search(self.log.getvalue())
            return int(found[1]) if found else None

        wait_until(lambda: port() is not None or self.error is not None, "the server's start")
        assert self.error is None, self.error
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port()}")
        grpc.channel_ready_future(self.channel).result(timeout=RPC_TIMEOUT)

    @property
    def stub(self) -> spades_pb2_grpc.SpadesServiceStub:
        assert self.channel is not None, "not started"
        return spades_pb2_grpc.SpadesServiceStub(self.channel)

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(20)
        assert not self._thread.is_alive(), "the in-process server did not stop"
        assert self.error is None, self.error

    # -- its spans ---------------------------------------------------------------------------
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def wait_span(self, pred: Callable[[ReadableSpan], bool], what: str) -> ReadableSpan:
        found: list[ReadableSpan] = []

        def ended() -> bool:
            found[:] = [s for s in self.spans() if pred(s)]
            return bool(found)

        wait_until(ended, what)
        assert len(found) == 1, [s.name for s in found]
        return found[0]

    def trace_of(self, span: ReadableSpan) -> list[ReadableSpan]:
        return [s for s in self.spans() if _ids(s)[0] == _ids(span)[0]]


def _ids(span: ReadableSpan) -> tuple[int, int]:
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


def _root_of(trace_id: str) -> Callable[[ReadableSpan], bool]:
    """Whether a span is the root of the trace ``trace_id`` (hex)."""
    return lambda s: f"{_ids(s)[0]:032x}" == trace_id and s.parent is None


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> dict[str, ReadableSpan]:
    """The children of ``parent`` by name (each name once)."""
    out: dict[str, ReadableSpan] = {}
    for s in spans:
        if s.parent is not None and s.parent.span_id == _ids(parent)[1]:
            assert s.name not in out, f"two {s.name} spans under {parent.name}"
            out[s.name] = s
    return out


@contextlib.contextmanager
def _server_logging(log: Lines) -> Iterator[None]:
    """structlog as main.configure_logging sets it up, into ``log`` (not cached,
    and put back as it was afterwards)."""
    before = structlog.get_config()
    structlog.configure(
        processors=main.log_processors(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.PrintLoggerFactory(log),
        cache_logger_on_first_use=False,
    )
    try:
        yield
    finally:
        structlog.configure(**before)


@contextlib.contextmanager
def _gc_as_it_was() -> Iterator[None]:
    """main.serve tunes this process's collector (tune_gc) and times it: undone after."""
    threshold, callbacks = gc.get_threshold(), list(gc.callbacks)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        gc.callbacks[:] = callbacks


@pytest.fixture(scope="module")
def traced() -> Iterator[InProcessServer]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    log = Lines()
    server = InProcessServer(exporter, log)
    try:
        with _gc_as_it_was(), _server_logging(log):
            server.start()
            try:
                yield server
            finally:
                server.stop()
    finally:
        tracing.uninstall()
        provider.shutdown()


def _turn(stub: spades_pb2_grpc.SpadesServiceStub, table: Table) -> tuple[int, pb.Action]:
    """The seat to act and a legal action of its."""
    seat = get_view(stub, table, 0).to_act
    return seat, choose(get_view(stub, table, seat))


def _call_of(traced: InProcessServer, table: Table) -> ReadableSpan:
    """The span of the call whose action the engine applied (or refused) on
    ``table``'s match: the parent of its one ``engine.apply`` by a human."""
    apply = traced.wait_span(
        lambda s: (
            s.name == "engine.apply"
            and s.attributes is not None
            and s.attributes["spades.match_id"] == table.match_id
            and s.attributes["spades.by"] == "human"
        ),
        "the action's engine.apply",
    )
    assert apply.parent is not None
    parent = apply.parent.span_id
    return traced.wait_span(lambda s: _ids(s)[1] == parent, "its parent")


def _watch(stub: spades_pb2_grpc.SpadesServiceStub, table: Table, seat: int) -> StreamReader:
    """A StreamEvents stream of ``seat``, caught up with the match."""
    reader = StreamReader(stream_events(stub, table, seat))
    reader.wait_for(bool, "the opening events")
    return reader


# -- the spans of an action ------------------------------------------------------------------


def test_a_submit_action_is_one_trace_its_call_and_apply_append_fan_out(
    traced: InProcessServer,
) -> None:
    stub = traced.stub
    table = create_match(stub, seed=101)
    seat, action = _turn(stub, table)
    watcher = _watch(stub, table, (seat + 1) % 4)
    seen = get_view(stub, table, seat).as_of_seq  # the match's last event
    response = submit(stub, table, seat, action)

    call = _call_of(traced, table)
    assert call.name == SUBMIT
    assert call.kind is SpanKind.SERVER
    assert call.parent is None  # the client sent no traceparent
    assert call.attributes is not None
    assert call.attributes["rpc.system"] == "grpc"
    assert call.attributes["rpc.service"] == SERVICE
    assert call.attributes["rpc.method"] == "SubmitAction"
    assert call.attributes["rpc.grpc.status_code"] == grpc.StatusCode.OK.value[0]
    assert call.status.status_code is StatusCode.UNSET

    spans = traced.trace_of(call)
    parts = children(spans, call)
    assert set(parts) == set(PARTS), sorted(parts)
    assert len(spans) == 1 + len(PARTS)  # nothing else in the trace
    apply, append, fan_out = (parts[p] for p in PARTS)
    for part in parts.values():
        assert part.kind is SpanKind.INTERNAL
        assert part.status.status_code is StatusCode.UNSET
        assert part.attributes is not None
        assert part.attributes["spades.match_id"] == table.match_id
        assert call.start_time <= part.start_time <= part.end_time <= call.end_time  # type: ignore[operator]
    # In the order of the path: applied, stored, then published.
    assert apply.end_time <= append.start_time  # type: ignore[operator]
    assert append.end_time <= fan_out.start_time  # type: ignore[operator]
    assert apply.attributes == {
        "spades.match_id": table.match_id,
        "spades.seat": seat,
        "spades.action": "Look" if action.HasField("look") else "Bid",
        "spades.by": "human",
    }
    events = response.last_seq - seen
    assert events >= 1
    assert append.attributes is not None and fan_out.attributes is not None
    assert append.attributes["spades.store"] == "MemoryStore"
    assert append.attributes["spades.events"] == fan_out.attributes["spades.events"] == events
    assert fan_out.attributes["spades.streams"] == 1  # the watcher's
    watcher.wait_seq(response.last_seq)
    watcher.cancel()


def test_a_play_action_is_a_span_of_the_play_call_with_apply_append_fan_out(
    traced: InProcessServer,
) -> None:
    stub = traced.stub
    table = create_match(stub, seed=102)
    seat, action = _turn(stub, table)
    call = PlayCall(stub, table, seat)
    call.wait_for(bool, "the opening events")
    action_id = call.act(action)
    result = call.result(action_id)
    assert not result.HasField("error"), refusal_of(result)

    acted = traced.wait_span(
        lambda s: (
            s.name == "Play.action"
            and s.attributes is not None
            and s.attributes.get("spades.action_id") == action_id
        ),
        "the action's span",
    )
    assert acted.kind is SpanKind.INTERNAL
    assert acted.status.status_code is StatusCode.UNSET
    assert acted.attributes is not None
    assert acted.attributes["spades.match_id"] == table.match_id
    assert acted.attributes["spades.seat"] == seat
    parts = children(traced.trace_of(acted), acted)
    assert set(parts) == set(PARTS), sorted(parts)
    assert parts["engine.apply"].attributes is not None
    assert parts["engine.apply"].attributes["spades.by"] == "human"
    assert parts["events.fan_out"].attributes is not None
    assert parts["events.fan_out"].attributes["spades.streams"] == 1  # the call's own

    # The action's parent is the Play call's span, which ends with the call.
    assert acted.parent is not None
    call.cancel()
    play = traced.wait_span(lambda s: _ids(s)[1] == acted.parent.span_id, "the Play call's span")  # type: ignore[union-attr]
    assert play.name == PLAY
    assert play.kind is SpanKind.SERVER
    assert play.attributes is not None and play.attributes["rpc.method"] == "Play"
    assert _ids(play)[0] == _ids(acted)[0]


def test_a_client_traceparent_is_continued(traced: InProcessServer) -> None:
    stub = traced.stub
    table = create_match(stub, seed=103)
    seat, action = _turn(stub, table)
    trace_id, parent_id = os.urandom(16).hex(), os.urandom(8).hex()
    request = pb.SubmitActionRequest(
        match_id=table.match_id, action_id=new_action_id(), action=action
    )
    traceparent = ("traceparent", f"00-{trace_id}-{parent_id}-01")
    stub.SubmitAction(
        request, metadata=(*seat_md(table.tokens[seat]), traceparent), timeout=RPC_TIMEOUT
    )

    call = traced.wait_span(
        lambda s: s.name == SUBMIT and _ids(s)[0] == int(trace_id, 16), "the continued span"
    )
    assert call.parent is not None and call.parent.is_remote
    assert call.parent.span_id == int(parent_id, 16)
    assert set(children(traced.trace_of(call), call)) == set(PARTS)

    # A client's trace that is not sampled stays so: no span at all.
    unsampled = os.urandom(16).hex()
    stub.Ping(
        pb.PingRequest(),
        metadata=(("traceparent", f"00-{unsampled}-{parent_id}-00"),),
        timeout=RPC_TIMEOUT,
    )
    stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)  # a sampled one, ended after it
    wait_until(
        lambda: any(s.name.endswith("/Ping") and s.parent is None for s in traced.spans()),
        "the sampled Ping's span",
    )
    assert not [s for s in traced.spans() if _ids(s)[0] == int(unsampled, 16)]


def test_a_refused_action_has_an_error_status(traced: InProcessServer) -> None:
    stub = traced.stub
    table = create_match(stub, seed=104)
    seat, action = _turn(stub, table)
    idle = (seat + 1) % 4
    with pytest.raises(grpc.RpcError) as refused:
        submit(stub, table, idle, action)
    failure = failure_of(refused.value)
    assert (failure.code, failure.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN")

    call = _call_of(traced, table)
    assert call.name == SUBMIT
    assert call.status.status_code is StatusCode.ERROR
    assert call.status.description is not None
    assert call.status.description.startswith("FAILED_PRECONDITION NOT_YOUR_TURN: ")
    assert call.attributes is not None
    assert call.attributes["spades.reason"] == "NOT_YOUR_TURN"
    assert call.attributes["rpc.grpc.status_code"] == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    # The engine refused it: its span says why; nothing was stored or sent.
    parts = children(traced.trace_of(call), call)
    assert set(parts) == {"engine.apply"}
    apply = parts["engine.apply"]
    assert apply.status.status_code is StatusCode.ERROR
    assert [e.name for e in apply.events] == ["exception"]
    assert apply.events[0].attributes is not None
    assert str(apply.events[0].attributes["exception.type"]).endswith("IllegalAction")

    # The same action on a Play call: the call goes on, the action's span is an error.
    play = PlayCall(stub, table, idle)
    play.wait_for(bool, "the opening events")
    action_id = play.act(action)
    assert refusal_of(play.result(action_id)).reason == "NOT_YOUR_TURN"
    acted = traced.wait_span(
        lambda s: (
            s.name == "Play.action"
            and s.attributes is not None
            and s.attributes.get("spades.action_id") == action_id
        ),
        "the refused Play action's span",
    )
    assert acted.status.status_code is StatusCode.ERROR
    assert acted.attributes is not None
    assert acted.attributes["spades.reason"] == "NOT_YOUR_TURN"
    assert set(children(traced.trace_of(acted), acted)) == {"engine.apply"}
    play.cancel()


def test_the_log_lines_of_a_traced_call_carry_its_trace_id(traced: InProcessServer) -> None:
    stub = traced.stub
    table = create_match(stub, seed=105)
    seat, action = _turn(stub, table)
    with pytest.raises(grpc.RpcError):
        submit(stub, table, (seat + 1) % 4, action)  # logged: "rpc refused"
    for event, method in (("match created", "CreateMatch"), ("rpc refused", "SubmitAction")):
        lines = [
            r
            for r in traced.log.records()
            if r.get("event") == event and r.get("match_id") == table.match_id
        ]
        assert len(lines) == 1, lines
        line = lines[0]
        assert line["method"] == method
        # The ids of the call's span: the line was written while it was current.
        span = traced.wait_span(_root_of(line["trace_id"]), f"{method}'s span")
        assert span.name == f"/{SERVICE}/{method}"
        assert line["span_id"] == f"{_ids(span)[1]:016x}"
    records = traced.log.records()
    # A line written outside any call has none.
    started = next(r for r in records if r["event"] == "server started")
    assert "trace_id" not in started and "span_id" not in started
    assert started["traces"] == "installed"


def test_a_bots_turn_is_a_trace_of_its_own_linked_to_what_woke_it(
    traced: InProcessServer,
) -> None:
    stub = traced.stub
    table = create_match(stub, seed=106, bots=(1, 2, 3))
    view = get_view(stub, table, 0)
    if view.to_act != 0:  # the bots play until seat 0 is to act
        wait_until(lambda: get_view(stub, table, 0).to_act == 0, "seat 0's turn")
    submit(stub, table, 0, choose(get_view(stub, table, 0)))
    call = _call_of(traced, table)
    assert call.name == SUBMIT

    def woken_by_it(s: ReadableSpan) -> bool:
        return (
            s.name == "bot.turn"
            and s.attributes is not None
            and s.attributes["spades.seat"] == 1
            and any(link.context.span_id == _ids(call)[1] for link in s.links)
        )

    # The bots play on until seat 0's turn, each turn linked to this call: the first.
    wait_until(lambda: any(woken_by_it(s) for s in traced.spans()), "seat 1's turn")
    turn = min(filter(woken_by_it, traced.spans()), key=lambda s: s.start_time or 0)
    assert turn.parent is None and _ids(turn)[0] != _ids(call)[0]
    assert turn.attributes is not None and turn.attributes["spades.match_id"] == table.match_id
    parts = children(traced.trace_of(turn), turn)
    assert set(parts) == set(PARTS)
    assert parts["engine.apply"].attributes is not None
    assert parts["engine.apply"].attributes["spades.by"] == "bot"


# -- the environment's path ---------------------------------------------------------------


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC trace receiver on loopback: every span exported to it."""

    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self.server)  # type: ignore[no-untyped-call]
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        with self._lock:
            self.requests.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """Each span received, with its resource's attributes."""
        out = []
        with self._lock:
            for request in self.requests:
                for rs in request.resource_spans:
                    resource = {a.key: a.value.string_value for a in rs.resource.attributes}
                    out += [(resource, s) for ss in rs.scope_spans for s in ss.spans]
        return out


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.server.stop(None)


def _no_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


def test_the_otel_variables_export_over_otlp_and_the_sampler_is_honoured(
    make_server: Callable[..., Server],
    collector: Collector,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_otel_variables(monkeypatch)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{collector.port}")
    server = make_server()
    table = create_match(server.stub, seed=107)
    seat, action = _turn(server.stub, table)
    trace_id, parent_id = os.urandom(16).hex(), os.urandom(8).hex()
    request = pb.SubmitActionRequest(
        match_id=table.match_id, action_id=new_action_id(), action=action
    )
    md = (*seat_md(table.tokens[seat]), ("traceparent", f"00-{trace_id}-{parent_id}-01"))
    server.stub.SubmitAction(request, metadata=md, timeout=RPC_TIMEOUT)
    refused_trace = os.urandom(16).hex()
    again = (*seat_md(table.tokens[seat]), ("traceparent", f"00-{refused_trace}-{parent_id}-01"))
    with pytest.raises(grpc.RpcError):  # logged: "rpc refused" (a retry, then not its turn)
        server.stub.SubmitAction(
            pb.SubmitActionRequest(match_id=table.match_id, action_id="x", action=action),
            metadata=again,
            timeout=RPC_TIMEOUT,
        )
    assert server.stop() == 0  # its spans are exported before it exits

    spans = [(r, s) for r, s in collector.spans() if s.trace_id.hex() == trace_id]
    names = sorted(s.name for _, s in spans)
    assert names == sorted([SUBMIT, *PARTS]), names
    resource = spans[0][0]
    assert resource["service.name"] == "spades-server"
    call = next(s for _, s in spans if s.name == SUBMIT)
    assert call.parent_span_id.hex() == parent_id
    for _, part in spans:
        if part.name != SUBMIT:
            assert part.parent_span_id == call.span_id
    # The log lines of the call carry its trace id; the start-up line says where traces go.
    log = [json.loads(line) for line in (server.workdir / "server-1.log").read_text().splitlines()]
    assert next(r for r in log if r["event"] == "server started")["traces"] == "otlp"
    refused = [r for r in log if r.get("trace_id") == refused_trace]
    assert [r["event"] for r in refused] == ["rpc refused"]

    # OTEL_SERVICE_NAME and OTEL_TRACES_SAMPLER are the SDK's: honoured.
    monkeypatch.setenv("OTEL_SERVICE_NAME", "spades-eu")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    before = len(collector.spans())
    quiet = make_server()
    quiet.stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
    assert quiet.stop() == 0
    assert len(collector.spans()) == before
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_on")
    named = make_server()
    named.stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
    assert named.stop() == 0
    pings = [r for r, s in collector.spans()[before:] if s.name.endswith("/Ping")]
    assert pings and {r["service.name"] for r in pings} == {"spades-eu"}


def test_without_otel_variables_the_server_installs_no_tracing(
    make_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_otel_variables(monkeypatch)
    assert tracing.exporters(os.environ) == []
    # What main() does at start, in a fresh process: no provider, no
    # interceptor, no log processor, and not one OpenTelemetry module imported.
    probe = (
        "import sys\n"
        "from spades_server import main, tracing\n"
        "main.parse_args(['--store', 'memory'])\n"
        "print(tracing.configure(), tracing.ON, tracing.server_interceptors(),\n"
        "      tracing.log_processors(), [m for m in sys.modules if 'opentelemetry' in m])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.split("\n")[0] == "off False [] [] []"
    # A real server started so: its log says so, and no line carries a trace id.
    server = make_server()
    table = create_match(server.stub, seed=108)
    seat, action = _turn(server.stub, table)
    submit(server.stub, table, seat, action)
    assert server.stop() == 0
    log = [json.loads(line) for line in (server.workdir / "server-1.log").read_text().splitlines()]
    assert next(r for r in log if r["event"] == "server started")["traces"] == "off"
    assert not [r for r in log if "trace_id" in r]


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, []),
        ({"OTEL_TRACES_EXPORTER": "none"}, []),
        ({"OTEL_TRACES_EXPORTER": "console"}, ["console"]),
        ({"OTEL_TRACES_EXPORTER": "otlp, console"}, ["otlp", "console"]),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"}, ["otlp"]),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_TRACES_EXPORTER": "none"},
            [],
        ),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_SDK_DISABLED": "true"}, []),
        ({"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}, []),
    ],
)
def test_which_otel_variables_turn_traces_on(env: dict[str, str], wanted: list[str]) -> None:
    assert tracing.exporters(env) == wanted


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "'zipkin' is not an exporter of this server"),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
            "exports OTLP over gRPC only",
        ),
    ],
)
def test_the_server_refuses_otel_variables_it_cannot_follow(
    env: dict[str, str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    _no_otel_variables(monkeypatch)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit):
        main.parse_args([])
    assert says in capsys.readouterr().err


def test_a_server_without_the_otel_extra_refuses_to_trace_but_serves_without(
    tmp_path: Path,
) -> None:
    # The packages hidden from a fresh process: what a server installed without the extra sees.
    hide = tmp_path / "sitecustomize.py"
    hide.write_text(
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'opentelemetry' or name.startswith('opentelemetry.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    probe = (
        "from spades_server import main, tracing\n"
        "main.parse_args(['--store', 'memory'])\n"
        "print(tracing.configure(), tracing.server_interceptors())\n"
    )
    run = [sys.executable, "-c", probe]
    off = subprocess.run(run, check=False, capture_output=True, text=True, env=env, timeout=60)
    assert off.returncode == 0, off.stderr
    assert off.stdout.strip() == "off []"
    env["OTEL_TRACES_EXPORTER"] = "console"
    on = subprocess.run(run, check=False, capture_output=True, text=True, env=env, timeout=60)
    assert on.returncode == 2
    assert "opentelemetry-sdk, opentelemetry-instrumentation-grpc are not installed" in on.stderr
    assert "spades-engine[otel]" in on.stderr
