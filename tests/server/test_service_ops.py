"""Operations: health, reflection, metrics, graceful shutdown and limits."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Callable

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Deadline,
    Server,
    StreamReader,
    Table,
    choose,
    create_match,
    expect_failure,
    failure_of,
    get_match,
    get_view,
    is_match_ended,
    read_until,
    spectate,
    stream_events,
    submit,
    wait_until,
    wire,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb

SERVICE = "spades.v1.SpadesService"


def test_health_reflection_and_metrics(shared_server: Server) -> None:
    channel = shared_server.channel
    assert channel is not None
    health = health_pb2_grpc.HealthStub(channel)
    for name in ("", SERVICE):
        resp = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=RPC_TIMEOUT)
        assert resp.status == health_pb2.HealthCheckResponse.SERVING

    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    requests = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE),
        # a single method, as `grpcurl describe spades.v1.SpadesService.SubmitAction` asks
        reflection_pb2.ServerReflectionRequest(file_containing_symbol=f"{SERVICE}.SubmitAction"),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol=f"{SERVICE}.NoSuchMethod"),
    ]
    listed, described, method, missing = reflection.ServerReflectionInfo(
        iter(requests), timeout=RPC_TIMEOUT
    )
    names = {s.name for s in listed.list_services_response.service}
    assert {SERVICE, "grpc.health.v1.Health"} <= names
    assert described.file_descriptor_response.file_descriptor_proto
    assert method.file_descriptor_response == described.file_descriptor_response
    assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]

    shared_server.stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
    with urllib.request.urlopen(shared_server.metrics_url, timeout=RPC_TIMEOUT) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    assert "# TYPE spades_rpcs_total counter" in text
    pings = [
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("spades_rpcs_total{") and 'method="Ping"' in line and 'code="OK"' in line
    ]
    assert pings and pings[0] >= 1
    assert "spades_rpc_latency_seconds_bucket" in text
    # The full collection at start-up (tune_gc) is the first pause timed.
    assert metric(shared_server, 'spades_gc_pause_seconds_count{generation="2"}') >= 1


def metric(server: Server, name: str) -> float:
    """The value of one sample on the server's metrics page (``name`` with its
    labels, as the page writes them)."""
    with urllib.request.urlopen(server.metrics_url, timeout=RPC_TIMEOUT) as resp:
        text = resp.read().decode()
    values = [float(line.split()[1]) for line in text.splitlines() if line.split(" ")[0] == name]
    assert len(values) == 1, f"{name} on the metrics page {len(values)} times"
    return values[0]


def test_active_matches_counts_matches_not_over(make_server: Callable[..., Server]) -> None:
    srv = make_server()
    assert metric(srv, "spades_active_matches") == 0
    create_match(srv.stub, seed=5)
    bots_only = create_match(srv.stub, bots=(0, 1, 2, 3), seed=6, target_score=100)
    assert metric(srv, "spades_active_matches") in (1, 2)  # the bots may have finished
    ended = StreamReader(spectate(srv.stub, bots_only.match_id), stop=is_match_ended)
    ended.wait_for(lambda evs: any(map(is_match_ended, evs)), "the bots' match to end", 60)
    assert metric(srv, "spades_active_matches") == 1


def listed(srv: Server) -> list[pb.MatchSummary]:
    request = pb.ListMatchesRequest()
    return list(srv.stub.ListMatches(request, metadata=OP, timeout=RPC_TIMEOUT).matches)


def play_bots_to_the_end(srv: Server) -> tuple[Table, list[pb.MatchEvent]]:
    """A match of four bots, played to its end; its public events."""
    bots = create_match(srv.stub, bots=(0, 1, 2, 3), seed=6, target_score=100)
    watcher = StreamReader(spectate(srv.stub, bots.match_id), stop=is_match_ended)
    watcher.wait_for(lambda evs: any(map(is_match_ended, evs)), "the bots' match to end", 60)
    watcher.join()
    return bots, watcher.events


@pytest.mark.parametrize("store", ["sqlite", "memory"])  # memory: no snapshots, all replayed
def test_a_finished_match_leaves_memory_and_comes_back_whole(
    make_server: Callable[..., Server], store: str
) -> None:
    srv = make_server("--unload-after-seconds", "0.2", "--store", store)
    playing = create_match(srv.stub, seed=5)  # not over: stays in memory
    bots, seen = play_bots_to_the_end(srv)
    summary = get_match(srv.stub, bots.match_id)
    assert summary.last_seq == seen[-1].seq
    record = srv.stub.ExportMatch(
        pb.ExportMatchRequest(match_id=bots.match_id), metadata=OP, timeout=RPC_TIMEOUT
    ).record_json

    wait_until(lambda: metric(srv, "spades_loaded_matches") == 1, "the bots' match to unload")
    assert [m.match_id for m in listed(srv)] == [bots.match_id, playing.match_id]
    assert listed(srv)[0] == summary

    # Asked for, it comes back from the store as it was.
    again = read_until(spectate(srv.stub, bots.match_id), summary.last_seq)
    assert metric(srv, "spades_loaded_matches") == 2
    assert wire(again) == wire(seen)
    assert get_match(srv.stub, bots.match_id) == summary
    exported = srv.stub.ExportMatch(
        pb.ExportMatchRequest(match_id=bots.match_id), metadata=OP, timeout=RPC_TIMEOUT
    )
    assert exported.record_json == record
    assert [m.match_id for m in listed(srv)] == [bots.match_id, playing.match_id]
    wait_until(lambda: metric(srv, "spades_loaded_matches") == 1, "the bots' match to unload again")
    assert get_match(srv.stub, playing.match_id).phase == pb.PHASE_BIDDING


def test_a_restarted_server_lists_finished_matches_without_loading_them(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server()
    playing = create_match(srv.stub, seed=5)
    bots, seen = play_bots_to_the_end(srv)
    before = listed(srv)
    assert [m.match_id for m in before] == [bots.match_id, playing.match_id]
    assert srv.stop() == 0
    srv.start()
    assert metric(srv, "spades_loaded_matches") == 1
    assert listed(srv) == before
    again = read_until(spectate(srv.stub, bots.match_id), seen[-1].seq)
    assert wire(again) == wire(seen)
    assert metric(srv, "spades_loaded_matches") == 2
    assert listed(srv) == before


def test_sigterm_ends_open_streams_with_unavailable_and_exits_0(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server()
    table = create_match(srv.stub, seed=71)
    seat_stream = StreamReader(stream_events(srv.stub, table, 0))
    public = StreamReader(spectate(srv.stub, table.match_id))
    for reader in (seat_stream, public):
        reader.wait_for(bool, "the first event")

    srv.terminate()
    for reader in (seat_stream, public):
        reader.join(15)
        assert reader.error is not None
        ended = failure_of(reader.error)
        assert ended.code == grpc.StatusCode.UNAVAILABLE, ended
        assert ended.reason == "STREAM_INTERRUPTED"
        # It says where to resume: at or after the last event this stream delivered.
        resume = re.search(r"after_seq=(\d+)", ended.message)
        assert resume is not None
        assert reader.last_seq <= int(resume[1]) == table.summary.last_seq
    assert srv.wait() == 0
    assert srv.stop() == 0


def test_limits_answer_resource_exhausted(make_server: Callable[..., Server]) -> None:
    srv = make_server(
        "--max-message-bytes",
        "4096",
        "--max-matches",
        "2",
        "--streams-per-match",
        "2",
        "--actions-per-second",
        "1",
    )
    stub = srv.stub

    # A request over --max-message-bytes.
    huge = pb.ImportMatchRequest(snapshot=b"\x00" * 20_000)
    expect_failure(
        grpc.StatusCode.RESOURCE_EXHAUSTED, stub.ImportMatch, huge, metadata=OP, timeout=RPC_TIMEOUT
    )

    # --max-matches 2.
    first = create_match(stub, seed=1)
    second = create_match(stub, seed=2)
    third = expect_failure(grpc.StatusCode.RESOURCE_EXHAUSTED, create_match, stub, seed=3)
    assert third.reason == "TOO_MANY_MATCHES"

    # --streams-per-match 2 (seat streams and spectators alike); a closed one frees its slot.
    open_streams = [
        StreamReader(stream_events(stub, first, 0)),
        StreamReader(spectate(stub, first.match_id)),
    ]
    for reader in open_streams:
        reader.wait_for(bool, "the first event")
    extra = expect_failure(
        grpc.StatusCode.RESOURCE_EXHAUSTED, lambda: next(iter(stream_events(stub, first, 1)))
    )
    assert extra.reason == "TOO_MANY_STREAMS"
    other_match = StreamReader(spectate(stub, second.match_id))
    other_match.wait_for(bool, "a stream of another match")
    other_match.cancel()
    open_streams[0].cancel()
    d = Deadline(10)
    while True:
        d.check("a stream slot to free up")
        call = stream_events(stub, first, 1)
        try:
            assert next(iter(call)).events[0].seq == 1
            call.cancel()
            break
        except grpc.RpcError as err:
            assert failure_of(err).reason == "TOO_MANY_STREAMS"
    open_streams[1].cancel()

    # --actions-per-second 1 (a burst of 2): a burst of actions is cut off.
    seat = get_view(stub, second, 0).to_act
    action = choose(get_view(stub, second, seat))
    codes = []
    for _ in range(5):
        try:
            submit(stub, second, seat, action)
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as err:
            f = failure_of(err)
            codes.append(f.code)
            if f.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                assert f.reason == "RATE_LIMITED"
    assert codes[0] == grpc.StatusCode.OK
    assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes
    view = get_view(stub, second, seat)
    assert sum(b.has_bid for b in view.bids) == 1, "the burst applied one action"
    assert get_match(stub, second.match_id).last_seq == view.as_of_seq
