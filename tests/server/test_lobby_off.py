"""Replicas that serve matches only (``--lobby off``) beside replicas that
serve the lobby: what a deployment that keeps the lobby on a few replicas
relies on (docs/capacity.md, the lobby's slot).

An off replica answers LobbyService with UNIMPLEMENTED and reports it
neither by health nor by reflection; it sends nothing to the lobby's keys
while no match of the lobby ends there (no feed followed, no matchmaker, no
sweeper); and a lobby match that ends there is rated there, with no lobby
replica to look after it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from lobby_harness import LOBBY_FLAGS, Player, play_out, player, seat_four, sure_bid
from redis_harness import RedisServer, RedisTarget
from server_harness import RPC_TIMEOUT, Server
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb

ENVOY = Path(sys.executable).parent / "envoy"

ONE_HAND = pb.Ruleset(preset="classic", target_score=1, mercy_score=-1)
# No lobby replica's sweeper looks at a result within the test: a rating
# seen is the off replica's own.
FLAGS = (*LOBBY_FLAGS, "--rating-min-games", "1", "--result-check-seconds", "3600")


def redis_flags(redis: RedisTarget, prefix: str) -> tuple[str, ...]:
    return ("--store", "redis", "--redis-url", redis.url, *redis.flags, "--redis-prefix", prefix)


def test_a_replica_without_the_lobby_refuses_its_calls_and_says_so(
    make_server: Callable[..., Server], make_redis: type[RedisServer]
) -> None:
    redis = make_redis()
    off = make_server(*redis_flags(RedisTarget(redis.url), "o"), "--lobby", "off", *FLAGS)
    with pytest.raises(grpc.RpcError) as refused:
        player(off).call("ListTables", lpb.ListTablesRequest())
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert off.channel is not None
    health = health_pb2_grpc.HealthStub(off.channel)
    for name, status in (
        ("spades.v1.SpadesService", health_pb2.HealthCheckResponse.SERVING),
        ("", health_pb2.HealthCheckResponse.SERVING),
    ):
        got = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=RPC_TIMEOUT)
        assert got.status == status, name
    with pytest.raises(grpc.RpcError) as unknown:
        health.Check(
            health_pb2.HealthCheckRequest(service="spades.v1.LobbyService"), timeout=RPC_TIMEOUT
        )
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


def test_a_replica_without_the_lobby_sends_nothing_to_its_keys(
    make_server: Callable[..., Server], make_redis: type[RedisServer]
) -> None:
    """What the lobby's slot pays per replica (its feed read every second,
    the matchmaker's and the sweeper's scans) is paid by the lobby's
    replicas only: an off replica, started and left idle, sends no command
    naming a key of the lobby. A replica that serves it does (the test's
    own check that it would see one)."""
    redis = make_redis()
    target = RedisTarget(redis.url)

    def lobby_commands(*flags: str) -> list[str]:
        monitor = subprocess.Popen(
            ["redis-cli", "-p", str(redis.port), "monitor"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            server = make_server(*redis_flags(target, "q"), *flags, *FLAGS)
            time.sleep(2.5)  # the feed's reads come every second
            server.stop()
        finally:
            monitor.terminate()
            out, _ = monitor.communicate(timeout=10)
        return [line for line in out.splitlines() if "{lobby" in line]

    assert lobby_commands("--lobby", "off") == []
    assert any("XREAD" in c.upper() for c in lobby_commands("--lobby", "serve"))


def test_a_lobby_match_that_ends_on_a_replica_without_the_lobby_is_rated_there(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    flags = redis_flags(shared_redis, redis_prefix)
    lobby = make_server(*flags, "--takeover-ms", "500", *FLAGS)
    off = make_server(*flags, "--takeover-ms", "500", "--lobby", "off", *FLAGS)
    table, players, tokens = seat_four([lobby], ONE_HAND, True, prefix="o")
    assert table.rated
    assert lobby.stop() == 0, lobby.log_tail()  # the match is the off replica's alone now
    over = play_out(off, table.table_id, tokens, timeout=90, choose=sure_bid)
    assert over.phase == pb.PHASE_MATCH_OVER
    asker = player(make_server(*flags, *FLAGS), "asker")  # a lobby replica, to read it

    def rated_games(who: Player) -> int:
        try:
            found = asker.call("GetProfile", lpb.GetProfileRequest(player_id=who.id)).profile
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:  # no match recorded yet
                return 0
            raise
        return sum(r.games for r in found.ratings)

    deadline = time.monotonic() + 20
    while True:
        games = [rated_games(p) for p in players]
        if games == [1, 1, 1, 1] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert games == [1, 1, 1, 1], off.log_tail()


def handled(server: Server, method: str) -> float:
    """The server's grpc_server_handled_total of ``method``, every code."""
    text = urllib.request.urlopen(server.metrics_url, timeout=10).read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("grpc_server_handled_total{") and f'grpc_method="{method}"' in line
    )


def test_envoy_routes_the_lobby_to_its_replicas_and_matches_to_the_others(
    make_server: Callable[..., Server], make_redis: type[RedisServer], tmp_path: Path
) -> None:
    """The Envoy template's LOBBY_HOST and LOBBY_PORT (``stack render
    --lobby-host --lobby-port``): one address for clients, LobbyService
    served by the lobby's replica, every SpadesService call by the other."""
    redis = RedisTarget(make_redis().url)
    lobby = make_server(*redis_flags(redis, "e"), *FLAGS)
    off = make_server(*redis_flags(redis, "e"), "--lobby", "off", *FLAGS)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "envoy.yaml"
    config.write_text(
        subprocess.run(
            [sys.executable, "-m", "spades_server.stack", "render",
             "--port", str(port), "--admin-port", "0",
             "--server-host", "127.0.0.1", "--server-port", str(off.port),
             "--lobby-host", "127.0.0.1", "--lobby-port", str(lobby.port)],
            check=True, capture_output=True, text=True, timeout=60,
        ).stdout
    )  # fmt: skip
    envoy = subprocess.Popen(
        [str(ENVOY), "-c", str(config), "--disable-hot-restart", "--log-level", "error"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        front = Server(tmp_path / "front")  # the stubs' channel is Envoy's
        front.channel = channel
        table, _, tokens = seat_four([front], ONE_HAND, False, prefix="e")
        play_out(front, table.table_id, tokens, timeout=90, choose=sure_bid)
        assert handled(lobby, "OpenTable") == 1 and handled(off, "OpenTable") == 0
        assert handled(lobby, "JoinTable") == 3
        assert handled(off, "SubmitAction") > 0 and handled(lobby, "SubmitAction") == 0
        assert handled(off, "GetView") > 0 and handled(lobby, "GetView") == 0
        channel.close()
    finally:
        envoy.terminate()
        envoy.wait(timeout=10)
