"""The schema-driven fuzz of spades.v1.LobbyService, against a real server.

Requests are generated from the proto descriptors (or, two in five, left at
their defaults) (every method, the streams
included: fuzz_schema.message_strategy), sent with every kind of credential
(a valid player's, none, garbage, an expired one, another audience's, a seat
token, the operator token), and with real table ids, invite codes, ticket ids
and player ids put where those fields are, so that generated calls reach real
tables and tickets. Then: every refusal was a status with an ErrorInfo, never
INTERNAL or UNKNOWN; the server is alive and serves; and what the lobby shows
holds together (a public waiting table lists only players, each player sits
at one waiting table at most, every listed table is WAITING).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from fuzz_schema import fields_named, message_strategy
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lobby_harness import LOBBY_FLAGS, bearer, credential
from server_harness import OP, RPC_TIMEOUT, Server, failure_of
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import lobby_pb2_grpc

SERVICE = lpb.DESCRIPTOR.services_by_name["LobbyService"]
METHODS: list[MethodDescriptor] = list(SERVICE.methods)
PLAYERS = [f"fuzz-{i}" for i in range(6)]
EXAMPLES = 400
STREAM_DEADLINE = 0.3
BARE = {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
NEVER = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(
        tmp_path_factory.mktemp("lobby-fuzz"),
        *LOBBY_FLAGS,
        "--poll-max-wait-ms", "200",
        "--quickplay-bot-wait-seconds", "1",
        "--request-timeout-seconds", "2",
    )  # fmt: skip
    srv.start()
    yield srv
    assert srv.stop() == 0, srv.log_tail()


class Pool:
    """Real ids the fuzz puts in its requests, grown from the answers it gets."""

    def __init__(self) -> None:
        self.values: dict[str, list[str]] = {
            "table_id": [],
            "invite_code": [],
            "ticket_id": [],
            "match_id": [],
            "partner_player_id": list(PLAYERS),
        }
        self.seat_tokens: list[str] = []

    def learn(self, response: Any) -> None:
        for name in ("table_id", "invite_code", "ticket_id", "match_id"):
            for msg, field in fields_named(response, name):
                value = getattr(msg, field.name)
                if value and value not in self.values[name]:
                    self.values[name].append(value)
        for msg, field in fields_named(response, "seat_token"):
            token = getattr(msg, field.name)
            if token:
                self.seat_tokens.append(token)


def credentials(pool: Pool, rng: random.Random) -> tuple[str, tuple[tuple[str, str], ...]]:
    kind = rng.choice(
        ["player"] * 6 + ["none", "garbage", "expired", "audience", "seat", "operator"]
    )
    if kind == "player":
        return kind, bearer(credential(rng.choice(PLAYERS)))
    if kind == "none":
        return kind, ()
    if kind == "garbage":
        return kind, bearer(rng.choice(["x", "a.b.c", "e30.e30.", "." * 300]))
    if kind == "expired":
        return kind, bearer(credential(rng.choice(PLAYERS), exp=int(time.time()) - 600))
    if kind == "audience":
        return kind, bearer(credential(rng.choice(PLAYERS), aud="elsewhere"))
    if kind == "seat" and pool.seat_tokens:
        return kind, bearer(rng.choice(pool.seat_tokens))
    return "operator", OP


def call(channel: grpc.Channel, method: MethodDescriptor, request: Any, md: Any) -> Any:
    """The call's responses, or the RpcError it ended with."""
    path = f"/{SERVICE.full_name}/{method.name}"
    out = message_factory.GetMessageClass(method.output_type)
    kw: dict[str, Any] = {
        "request_serializer": lambda m: m.SerializeToString(),
        "response_deserializer": out.FromString,
    }
    try:
        if not method.server_streaming:
            return [channel.unary_unary(path, **kw)(request, metadata=md, timeout=RPC_TIMEOUT)]
        stream = channel.unary_stream(path, **kw)(request, metadata=md, timeout=STREAM_DEADLINE)
        got = []
        for response in stream:
            got.append(response)
            if len(got) >= 3:
                stream.cancel()
                break
        return got
    except grpc.RpcError as e:
        return e


def check_reply(method: str, kind: str, reply: Any) -> None:
    if not isinstance(reply, grpc.RpcError):
        return
    f = failure_of(reply)
    assert f.code not in NEVER, (method, kind, f)
    if f.code in BARE:
        return
    assert f.reason, f"{method} ({kind}): {f.code.name} without an ErrorInfo: {f.message}"


def test_fuzz_the_lobby_from_its_schema(server: Server) -> None:
    assert server.channel is not None
    channel = server.channel
    pool = Pool()
    codes: dict[str, int] = {}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def one(data: st.DataObject) -> None:
        method = data.draw(st.sampled_from(METHODS), label="method")
        request = data.draw(message_strategy(method.input_type), label="request")
        rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
        if rng.random() < 0.4:
            # Mostly defaults and real ids: a request the service may accept,
            # so that the fuzz also changes tables and tickets, not only refuses.
            request = message_factory.GetMessageClass(method.input_type)()
        for name, values in pool.values.items():
            for msg, field in fields_named(request, name):
                if values and rng.random() < 0.7:
                    setattr(msg, field.name, rng.choice(values))
        kind, md = credentials(pool, rng)
        reply = call(channel, method, request, md)
        check_reply(method.name, kind, reply)
        if isinstance(reply, grpc.RpcError):
            code = failure_of(reply).code.name
        else:
            code = "OK"
            for response in reply:
                pool.learn(response)
        codes[code] = codes.get(code, 0) + 1

    one()
    assert codes.get("OK", 0) > 30, codes  # the fuzz reached the service, not only refusals
    # Alive, and what the lobby shows holds together.
    stub = lobby_pb2_grpc.LobbyServiceStub(channel)
    seen: dict[str, str] = {}
    token = ""
    while True:
        page = stub.ListTables(
            lpb.ListTablesRequest(page_size=100, page_token=token),
            metadata=bearer(credential(PLAYERS[0])),
            timeout=RPC_TIMEOUT,
        )
        for table in page.tables:
            assert table.state == lpb.TABLE_STATE_WAITING
            assert table.visibility == lpb.TABLE_VISIBILITY_PUBLIC and not table.invite_code
            for seat in table.seats:
                if seat.state == lpb.TABLE_SEAT_STATE_PLAYER:
                    assert seat.player_id not in seen, f"{seat.player_id} at two waiting tables"
                    seen[seat.player_id] = table.table_id
        token = page.next_page_token
        if not token:
            break
