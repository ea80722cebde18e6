"""Players for the lobby's tests: credentials, stubs and a hand played out.

A test server trusts credentials signed HS256 with ``SECRET`` (issuer
``ISSUER``, audience ``AUDIENCE``): ``LOBBY_FLAGS`` are its flags, and
``player(id)`` is a player with a fresh credential and the two stubs.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt
from server_harness import RPC_TIMEOUT, Deadline, Server
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import lobby_pb2_grpc, spades_pb2_grpc
from spades_server.gen.spades.v1 import spades_pb2 as pb

SECRET = "lobby-tests-" + "s" * 32
ISSUER = "https://id.example.test"
AUDIENCE = "spades-tests"
LOBBY_FLAGS = (
    "--player-issuer", ISSUER,
    "--player-audience", AUDIENCE,
    "--player-hs256-secret", SECRET,
    "--lobby-calls-per-second", "1000",
    "--actions-per-second", "10000",
)  # fmt: skip


def credential(player_id: str, name: str = "", **claims: Any) -> str:
    now = int(time.time())
    body: dict[str, Any] = {
        "sub": player_id,
        "name": name or player_id.title(),
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now,
        "exp": now + 600,
    }
    body.update(claims)
    return jwt.encode(body, SECRET, algorithm="HS256")


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass
class Player:
    id: str
    md: tuple[tuple[str, str], ...]
    lobby: lobby_pb2_grpc.LobbyServiceStub
    spades: spades_pb2_grpc.SpadesServiceStub

    def call(self, method: str, request: Any, **kw: Any) -> Any:
        kw.setdefault("timeout", RPC_TIMEOUT + 30)
        return getattr(self.lobby, method)(request, metadata=self.md, **kw)


def player(server: Server, prefix: str = "p", name: str = "") -> Player:
    pid = unique(prefix)
    assert server.channel is not None
    return Player(
        pid,
        bearer(credential(pid, name)),
        lobby_pb2_grpc.LobbyServiceStub(server.channel),
        spades_pb2_grpc.SpadesServiceStub(server.channel),
    )


def view(server: Server, match_id: str, token: str) -> pb.SeatView:
    stub = spades_pb2_grpc.SpadesServiceStub(server.channel)
    return stub.GetView(
        pb.GetViewRequest(match_id=match_id), metadata=bearer(token), timeout=RPC_TIMEOUT
    ).view


def submit(server: Server, match_id: str, token: str, action: pb.Action, action_id: str) -> None:
    spades_pb2_grpc.SpadesServiceStub(server.channel).SubmitAction(
        pb.SubmitActionRequest(match_id=match_id, action_id=action_id, action=action),
        metadata=bearer(token),
        timeout=RPC_TIMEOUT,
    )


def seat_four(
    servers: list[Server], ruleset: pb.Ruleset, rated: bool, prefix: str = "r"
) -> tuple[lpb.Table, list[Player], list[str]]:
    """Four players at one table, seats 0 to 3, each calling the lobby
    through the next of ``servers``: the table as it started, the players by
    seat and their seat tokens."""
    players = [player(servers[i % len(servers)], f"{prefix}{i}") for i in range(4)]
    opened = players[0].call("OpenTable", lpb.OpenTableRequest(ruleset=ruleset, rated=rated))
    table, tokens = opened.table, [opened.seat_token]
    for i, p in enumerate(players[1:], start=1):
        joined = p.call("JoinTable", lpb.JoinTableRequest(table_id=table.table_id, seat=i))
        tokens.append(joined.seat_token)
        table = joined.table
    return table, players, tokens


def sure_bid(v: pb.SeatView) -> pb.Action:
    """Look at the cards rather than bid blind nil, and bid 3 (a side of two
    then makes its contract as often as not, so a match to 1 point ends
    within a few hands); else the first legal action."""
    for a in v.legal_actions:
        if a.HasField("look") or (a.HasField("bid") and a.bid.tricks == 3):
            return a
    return v.legal_actions[0]


def play_out(
    server: Server,
    match_id: str,
    tokens: list[str],
    timeout: float = 60,
    choose: Callable[[pb.SeatView], pb.Action] = lambda v: v.legal_actions[0],
) -> pb.SeatView:
    """Play every human seat (``choose``: the first legal action) until the
    match is over; the bots play theirs."""
    stub = spades_pb2_grpc.SpadesServiceStub(server.channel)
    deadline = Deadline(timeout)
    n = 0
    while True:
        deadline.check(f"match {match_id} to end")
        acted = False
        for token in tokens:
            v = view(server, match_id, token)
            if v.phase == pb.PHASE_MATCH_OVER:
                return v
            if v.legal_actions:
                n += 1
                stub.SubmitAction(
                    pb.SubmitActionRequest(match_id=match_id, action_id=f"a{n}", action=choose(v)),
                    metadata=bearer(token),
                    timeout=RPC_TIMEOUT,
                )
                acted = True
        if not acted:
            time.sleep(0.005)


# A quick match: the first hand that scores ends it.
QUICK_RULES = pb.Ruleset(preset="classic", target_score=1, no_mercy_score=True)

STATES = {v: k for k, v in lpb.TableState.items()}


def state_name(table: lpb.Table) -> str:
    return STATES[table.state]
