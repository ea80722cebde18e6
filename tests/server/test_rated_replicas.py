"""Rated matches on three Redis replicas: each finished match rates its
players exactly once, when every replica sees it end at once, and when the
replica that takes the final action is killed (kill -9) as it does (issue 26)."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable

import grpc
import lobby_harness
from lobby_harness import LOBBY_FLAGS, Player, bearer, player, submit, sure_bid, view
from redis_harness import RedisTarget
from server_harness import RPC_TIMEOUT, Deadline, Server
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc

ONE_HAND = pb.Ruleset(preset="classic", target_score=1, mercy_score=-1)
FLAGS = (*LOBBY_FLAGS, "--rating-min-games", "1", "--result-check-seconds", "1")


def three(make_server: Callable[..., Server], redis: RedisTarget, prefix: str) -> list[Server]:
    redis_flags = (
        "--store",
        "redis",
        "--redis-url",
        redis.url,
        *redis.flags,
        "--redis-prefix",
        prefix,
    )
    return [make_server(*redis_flags, "--takeover-ms", "500", *FLAGS) for _ in range(3)]


def seat_four(servers: list[Server]) -> tuple[str, list[Player], list[str]]:
    table, players, tokens = lobby_harness.seat_four(servers, ONE_HAND, True, prefix="x")
    assert table.rated
    return table.table_id, players, tokens


def stub(server: Server) -> spades_pb2_grpc.SpadesServiceStub:
    assert server.channel is not None
    return spades_pb2_grpc.SpadesServiceStub(server.channel)


def last_card(v: pb.SeatView) -> bool:
    return v.phase == pb.PHASE_PLAYING and len(v.hand) == 1 and len(v.trick) == 3


def play(
    servers: list[Server], match_id: str, tokens: list[str], at_last: Callable[[], None]
) -> None:
    """Play every seat through the first replica (the others read the match
    too, so all three hold it) until it is over; ``at_last`` runs as the
    final card of a hand is sent, without waiting for its answer."""
    acting = servers[0]
    d = Deadline(90)
    n = 0
    while True:
        d.check("the match to end")
        for other in servers[1:]:
            if other.running():
                view(other, match_id, tokens[0])
        progressed = False
        for token in tokens:
            v = view(acting, match_id, token)
            if v.phase == pb.PHASE_MATCH_OVER:
                return
            if not v.legal_actions:
                continue
            n += 1
            action, action_id = sure_bid(v), f"{match_id}-{n}"
            if last_card(v) and acting is servers[0]:
                call = stub(acting).SubmitAction.future(
                    pb.SubmitActionRequest(match_id=match_id, action_id=action_id, action=action),
                    metadata=bearer(token),
                    timeout=RPC_TIMEOUT,
                )
                at_last()
                acting = servers[1]  # the same action again, elsewhere: idempotent
                with contextlib.suppress(grpc.RpcError):
                    call.result()
                submit_retrying(acting, match_id, token, action, action_id)
            else:
                submit(acting, match_id, token, action, action_id)
            progressed = True
        if not progressed:
            time.sleep(0.01)


def submit_retrying(server: Server, match_id: str, token: str, action: pb.Action, aid: str) -> None:
    """Send an action to a replica taking the match over: it may answer
    UNAVAILABLE until it has the match."""
    d = Deadline(20)
    while True:
        try:
            submit(server, match_id, token, action, aid)
            return
        except grpc.RpcError as e:
            if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED):
                raise
        d.check("the surviving replica to take the match")
        time.sleep(0.1)


def games(asker: Player, who: Player) -> int:
    try:
        found = asker.call("GetProfile", lpb.GetProfileRequest(player_id=who.id)).profile
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.NOT_FOUND:
            return 0
        raise
    return sum(r.games for r in found.ratings)


def settled(asker: Player, players: list[Player], expect: int, seconds: float = 30) -> list[int]:
    """Each player's rated games once every one has ``expect`` (or the wait ran out),
    and for a second more: a late second update would show."""
    d = Deadline(seconds)
    while True:
        counts = [games(asker, p) for p in players]
        if all(c >= expect for c in counts):
            time.sleep(1.5)
            return [games(asker, p) for p in players]
        if d.expired():
            return counts
        time.sleep(0.2)


def test_every_replica_seeing_the_end_rates_the_match_once(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    servers = three(make_server, shared_redis, redis_prefix)
    match_id, players, tokens = seat_four(servers)
    play(servers, match_id, tokens, at_last=lambda: None)
    asker = player(servers[2], "asker")
    assert settled(asker, players, 1) == [1, 1, 1, 1]


def test_killing_the_replica_that_finishes_a_match_still_rates_it_once(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    rng = random.Random(26)
    for round_ in range(3):
        servers = three(make_server, shared_redis, f"{redis_prefix}{round_}")
        match_id, players, tokens = seat_four(servers)
        delay = rng.choice([0.0, 0.002, 0.01])

        def kill_first(victim: Server = servers[0], wait: float = delay) -> None:
            time.sleep(wait)
            victim.kill9()

        play(servers, match_id, tokens, at_last=kill_first)
        asker = player(servers[2], "asker")
        # Recorded by a surviving replica: when it saw the end, or by its
        # sweeper's check (--result-check-seconds 1) if only the dead one did.
        assert settled(asker, players, 1) == [1, 1, 1, 1], f"round {round_}, delay {delay}"
        for srv in servers[1:]:
            assert srv.stop() == 0, srv.log_tail()
