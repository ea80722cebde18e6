"""The connection limits docs/security.md lists that no other test drives:
a connection's age, a client's keepalive pings, and the calls one connection
may hold at once. They are gRPC's own HTTP/2 settings, which act on the
connection (no ErrorInfo): what a client sees is its call ending UNAVAILABLE,
or waiting for a free stream."""

from __future__ import annotations

import time
from typing import Any

import grpc
from server_harness import (
    Deadline,
    StreamReader,
    create_match,
    failure_of,
    spectate,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc


def test_an_old_connection_is_closed_after_its_grace_and_the_channel_reconnects(
    make_server: Any,
) -> None:
    srv = make_server("--connection-age-seconds", "1", "--connection-age-grace-seconds", "1")
    table = create_match(srv.stub, seed=2)
    reader = StreamReader(spectate(srv.stub, table.match_id))
    reader.wait_seq(1)
    reader.join(15)  # nothing more happens in the match: only the age ends it
    assert reader.error is not None and reader.error.code() == grpc.StatusCode.UNAVAILABLE
    srv.stub.Ping(pb.PingRequest(), timeout=10)  # the same channel, a new connection


def test_a_client_that_pings_too_often_is_disconnected(make_server: Any) -> None:
    srv = make_server("--min-client-ping-seconds", "10")
    table = create_match(srv.stub, seed=3)
    eager = grpc.insecure_channel(
        f"127.0.0.1:{srv.port}",
        options=[
            ("grpc.keepalive_time_ms", 100),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
        ],
    )
    with eager:
        stub = spades_pb2_grpc.SpadesServiceStub(eager)
        reader = StreamReader(spectate(stub, table.match_id))
        reader.wait_seq(1)
        reader.join(20)  # a quiet stream: only the pings' GOAWAY ends it
        assert reader.error is not None
        failure = failure_of(reader.error)
        assert failure.code == grpc.StatusCode.UNAVAILABLE, reader.error
        assert failure.message == "Too many pings", failure
    # A client that keeps to the limit (the default channel) is served on.
    calm = StreamReader(spectate(srv.stub, table.match_id))
    calm.wait_seq(1)
    time.sleep(1.0)
    assert not calm.done, calm.error
    calm.cancel()


def test_calls_past_the_per_connection_limit_wait_for_a_free_one(make_server: Any) -> None:
    srv = make_server("--max-calls-per-connection", "2")
    table = create_match(srv.stub, seed=4)
    first, second = (StreamReader(spectate(srv.stub, table.match_id)) for _ in range(2))
    first.wait_seq(1)
    second.wait_seq(1)
    third = StreamReader(spectate(srv.stub, table.match_id))
    time.sleep(1.0)
    assert not third.events, "a third stream ran on a connection that allows two"
    first.cancel()
    d = Deadline(10)
    while not third.events:
        d.check("the third stream to start once a stream is free")
        time.sleep(0.01)
    second.cancel()
    third.cancel()
