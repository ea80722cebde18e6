"""Quick play under fire: a crowd of players queueing through random replicas
while replicas are killed (kill -9) and restarted.

On Redis: three replicas, 200 players asking for four rulesets, some as
parties, some cancelling, a replica killed every few seconds. On SQLite: one
replica, killed once mid-way and restarted on its database. Either way: every
player placed at most once, every ticket not cancelled placed within the
bots' wait plus a second (measured from the ticket's queueing to its table's
creation), a cancelled ticket never placed, parties always partners, no
table with a player twice, and every placement's seat token plays its seat.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import redis
from google.rpc import error_details_pb2, status_pb2
from lobby_harness import LOBBY_FLAGS, bearer, credential, player
from redis_harness import RedisServer, RedisTarget
from server_harness import Server
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import lobby_pb2_grpc, spades_pb2_grpc
from spades_server.gen.spades.v1 import spades_pb2 as pb

BOT_WAIT_S = 2.0
RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.INTERNAL,
}
RULESETS = [pb.Ruleset(preset="classic", target_score=300 + 50 * i) for i in range(4)]


def reason_of(e: grpc.aio.AioRpcError) -> tuple[str, dict[str, str]]:
    """The ErrorInfo reason and metadata of a refused call."""
    for key, value in e.trailing_metadata() or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            for detail in status_pb2.Status.FromString(value).details:
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    detail.Unpack(info)
                    return info.reason, dict(info.metadata)
    return "", {}


@dataclass
class Ask:
    player: str
    rules: int
    partner: str = ""
    cancel_after_s: float | None = None
    delay_s: float = 0.0


@dataclass
class Seen:
    ticket_id: str = ""
    bots_at_ms: int = 0
    final: lpb.Ticket | None = None
    cancel_answered: str = ""  # "cancelled" or "placed" (TICKET_PLACED) when a cancel ran
    errors: list[str] = field(default_factory=list)


class Crowd:
    """Players calling random replicas; a refused connection is retried on another."""

    def __init__(self, servers: list[Server]) -> None:
        self.servers = servers
        self.channels: dict[int, grpc.aio.Channel] = {}

    def _channel(self) -> grpc.aio.Channel:
        live = [s.port for s in self.servers if s.running() and s.port]
        port = random.choice(live or [self.servers[0].port])
        if port not in self.channels:
            self.channels[port] = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        return self.channels[port]

    async def call(self, method: str, request: Any, player: str, deadline: float) -> Any:
        md = bearer(credential(player))
        while True:
            stub = lobby_pb2_grpc.LobbyServiceStub(self._channel())
            try:
                return await getattr(stub, method)(request, metadata=md, timeout=5)
            except grpc.aio.AioRpcError as e:
                if e.code() not in RETRYABLE or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)

    async def close(self) -> None:
        for ch in self.channels.values():
            await ch.close(None)


async def run_player(crowd: Crowd, ask: Ask, seen: dict[str, Seen], end: float) -> None:
    await asyncio.sleep(ask.delay_s)
    me = seen[ask.player]
    # Resent unchanged when an answer is lost (Crowd.call): the request_id
    # makes the repeat answer with the ticket the first call made.
    request = lpb.QuickPlayRequest(
        ruleset=RULESETS[ask.rules], partner_player_id=ask.partner, request_id=ask.player
    )
    try:
        ticket = (await crowd.call("QuickPlay", request, ask.player, end)).ticket
    except grpc.aio.AioRpcError as e:
        reason, _ = reason_of(e)
        me.errors.append(f"QuickPlay: {e.code()} {reason} {e.details()}")
        return
    me.ticket_id = ticket.ticket_id
    cancel_at = None if ask.cancel_after_s is None else time.monotonic() + ask.cancel_after_s
    while ticket.state not in (lpb.TICKET_STATE_PLACED, lpb.TICKET_STATE_CANCELLED):
        if time.monotonic() > end:
            me.errors.append(f"ticket {ticket.ticket_id} never placed: {ticket}")
            return
        if cancel_at is not None and time.monotonic() >= cancel_at:
            cancel_at = None
            try:
                ticket = (
                    await crowd.call(
                        "CancelTicket",
                        lpb.CancelTicketRequest(ticket_id=ticket.ticket_id),
                        ask.player,
                        end,
                    )
                ).ticket
                me.cancel_answered = "cancelled"
            except grpc.aio.AioRpcError as e:
                assert reason_of(e)[0] == "TICKET_PLACED", e
                me.cancel_answered = "placed"
            continue
        wait_ms = 300 if cancel_at is not None else 2000
        ticket = (
            await crowd.call(
                "GetTicket",
                lpb.GetTicketRequest(
                    ticket_id=ticket.ticket_id, after_version=ticket.version, wait_ms=wait_ms
                ),
                ask.player,
                end,
            )
        ).ticket
    me.final = ticket
    me.bots_at_ms = ticket.bots_at_ms  # a placed ticket keeps when its bots were due


def asks(n: int, rng: random.Random, spread_s: float) -> list[Ask]:
    """``n`` players: about a quarter in parties, a sixth of the rest cancelling."""
    out: list[Ask] = []
    i = 0
    while len(out) < n:
        rules = rng.randrange(len(RULESETS))
        delay = rng.uniform(0, spread_s)
        if rng.random() < 0.25 and len(out) + 2 <= n:
            a, b = f"party{i}a", f"party{i}b"
            out.append(Ask(a, rules, partner=b, delay_s=delay))
            out.append(Ask(b, rules, partner=a, delay_s=delay + rng.uniform(0, 0.3)))
        else:
            cancel = rng.uniform(0, 1.5) if rng.random() < 1 / 6 else None
            out.append(Ask(f"solo{i}", rules, cancel_after_s=cancel, delay_s=delay))
        i += 1
    return out


def kill_every(
    servers: list[Server],
    every_s: float,
    until: float,
    stop: threading.Event,
    kills: list[int],
    at_least: int = 3,
) -> None:
    """Kills a replica every `every_s` until `until`, and at least `at_least`
    times while the storm lasts: the test's point is the kills, not the
    clock. A killed replica restarts beside the next kills, so that a slow
    machine's slow restarts do not space them out; one replica keeps serving."""
    rng = random.Random(7)
    restarts: dict[int, threading.Thread] = {}
    while not stop.wait(every_s) and (time.monotonic() < until or len(kills) < at_least):
        up = [i for i in range(len(servers)) if i not in restarts or not restarts[i].is_alive()]
        if len(up) < 2:
            continue
        victim = rng.choice(up)
        servers[victim].kill9()
        kills.append(servers[victim].port)
        restarts[victim] = threading.Thread(target=servers[victim].start, daemon=True)
        restarts[victim].start()
    for t in restarts.values():
        t.join(timeout=60)


def check(
    plan: list[Ask], seen: dict[str, Seen], servers: list[Server], grace_ms: int = 1000
) -> dict[str, int]:
    """Every ticket placed once (or cancelled); placed within ``grace_ms`` of
    its bots' time; parties together; every seat token plays its seat."""
    errors = [e for s in seen.values() for e in s.errors]
    assert not errors, errors[:5]
    seats_of: dict[str, tuple[str, int]] = {}  # player -> (match, seat)
    tables: dict[str, dict[int, str]] = {}
    late = []
    for ask in plan:
        s = seen[ask.player]
        assert s.final is not None, ask
        if s.cancel_answered == "cancelled":
            assert s.final.state == lpb.TICKET_STATE_CANCELLED, (ask, s.final)
            continue
        assert s.final.state == lpb.TICKET_STATE_PLACED, (ask, s.final)
        placement = s.final.placement
        assert placement.table.seats[placement.seat].player_id == ask.player
        assert placement.table.turn_timer_ms == 30_000  # --quickplay-turn-timer-ms
        assert ask.player not in seats_of, f"{ask.player} placed twice"
        seats_of[ask.player] = (placement.match_id, placement.seat)
        table = tables.setdefault(placement.match_id, {})
        assert placement.seat not in table, f"two players at seat {placement.seat}"
        table[placement.seat] = ask.player
        if placement.table.created_ms > s.bots_at_ms + grace_ms:
            late.append((ask.player, placement.table.created_ms - s.bots_at_ms))
    assert not late, f"placed later than the bots' wait plus {grace_ms} ms: {late[:5]}"
    for ask in plan:
        if ask.partner and ask.player in seats_of:
            (m1, s1), (m2, s2) = seats_of[ask.player], seats_of[ask.partner]
            assert m1 == m2 and abs(s1 - s2) == 2, f"party {ask.player}/{ask.partner} apart"
    for match_id, table in tables.items():
        assert len(set(table.values())) == len(table), f"a player twice at {match_id}"
    # Every placement's seat token plays its seat, through any replica.
    live = [s for s in servers if s.running()]
    for ask in plan:
        s = seen[ask.player]
        if s.final is None or s.final.state != lpb.TICKET_STATE_PLACED:
            continue
        p = s.final.placement
        stub = spades_pb2_grpc.SpadesServiceStub(random.choice(live).channel)
        view = stub.GetView(
            pb.GetViewRequest(match_id=p.match_id), metadata=bearer(p.seat_token), timeout=10
        ).view
        assert view.seat == p.seat
    return {"players": len(plan), "tables": len(tables), "placed": len(seats_of)}


async def crowd_run(servers: list[Server], plan: list[Ask], budget_s: float) -> dict[str, Seen]:
    crowd = Crowd(servers)
    seen = {a.player: Seen() for a in plan}
    end = time.monotonic() + budget_s
    try:
        await asyncio.gather(*(run_player(crowd, a, seen, end) for a in plan))
    finally:
        await crowd.close()
    return seen


def storm(
    servers: list[Server], plan: list[Ask], kill: Callable[[threading.Event], None]
) -> dict[str, Seen]:
    stop = threading.Event()
    killer = threading.Thread(target=kill, args=(stop,), daemon=True)
    killer.start()
    try:
        return asyncio.run(crowd_run(servers, plan, budget_s=60))
    finally:
        stop.set()
        killer.join(timeout=30)


FLAGS = (*LOBBY_FLAGS, "--quickplay-bot-wait-seconds", str(BOT_WAIT_S), "--start-lease-ms", "1500")


def test_replicas_place_every_ticket_once_while_they_are_killed(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    servers = [
        make_server(
            "--store",
            "redis",
            "--redis-url",
            shared_redis.url,
            *shared_redis.flags,
            "--redis-prefix",
            redis_prefix,
            "--takeover-ms",
            "500",
            *FLAGS,
        )
        for _ in range(3)
    ]
    plan = asks(200, random.Random(24), spread_s=8)
    until = time.monotonic() + 10
    kills: list[int] = []
    seen = storm(servers, plan, lambda stop: kill_every(servers, 2.5, until, stop, kills))
    counts = check(plan, seen, servers)
    assert counts["placed"] > 150, counts
    assert len(kills) >= 3, "the replicas were not killed as often as meant"


def test_one_sqlite_replica_restarted_mid_way_places_every_ticket_once(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(*FLAGS)
    plan = asks(120, random.Random(5), spread_s=5)

    restarts = []

    def restart_once(stop: threading.Event) -> None:
        if not stop.wait(2.5):
            server.kill9()
            restarts.append(time.monotonic())
            server.start()

    seen = storm([server], plan, restart_once)
    counts = check(plan, seen, [server])
    assert counts["placed"] > 90, counts
    assert restarts, "the server was not restarted"


def lobby_replicas(
    make_server: Callable[..., Server], target: RedisTarget, prefix: str, n: int
) -> list[Server]:
    flags = ("--store", "redis", "--redis-url", target.url, *target.flags)
    return [make_server(*flags, "--redis-prefix", prefix, *FLAGS) for _ in range(n)]


def test_a_ticket_whose_replica_stops_is_placed_by_another_soon_after_its_bots(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    """The replica that queued a ticket places it; another only notes it, and
    takes it over when its own replica has not placed it in time."""
    a, b = lobby_replicas(make_server, shared_redis, redis_prefix, 2)
    solo = player(a, "solo")
    ticket = solo.call("QuickPlay", lpb.QuickPlayRequest(ruleset=RULESETS[0])).ticket
    assert ticket.state == lpb.TICKET_STATE_SEARCHING
    os.kill(a.pid, signal.SIGSTOP)  # alive, and placing nothing
    try:
        stub = lobby_pb2_grpc.LobbyServiceStub(b.channel)
        deadline = time.monotonic() + BOT_WAIT_S + 10
        while ticket.state != lpb.TICKET_STATE_PLACED:
            assert time.monotonic() < deadline, f"never placed: {ticket}"
            request = lpb.GetTicketRequest(
                ticket_id=ticket.ticket_id, after_version=ticket.version, wait_ms=1000
            )
            ticket = stub.GetTicket(request, metadata=solo.md, timeout=10).ticket
    finally:
        os.kill(a.pid, signal.SIGCONT)
    late = ticket.placement.table.created_ms - ticket.bots_at_ms
    assert late < 1000, f"placed {late} ms after its bots were due"
    assert [s.player_id for s in ticket.placement.table.seats].count(solo.id) == 1


def test_replicas_do_not_each_read_a_queue_for_every_ticket_of_another(
    make_server: Callable[..., Server], redis_server: RedisServer, redis_prefix: str
) -> None:
    """Forty tickets queued through one of three replicas: the queue is read
    about once per ticket, not once per ticket and replica (each read is of
    up to 400 tickets, on the one slot of the lobby)."""
    target = RedisTarget(redis_server.url)
    servers = lobby_replicas(make_server, target, redis_prefix, 3)
    raw = redis.Redis.from_url(redis_server.url)

    def queue_reads() -> int:
        stats: Any = raw.info("commandstats")
        return int(stats.get("cmdstat_zrange", {}).get("calls", 0))

    players = [player(servers[0], f"q{i}") for i in range(40)]
    before = queue_reads()
    for p in players:
        p.call("QuickPlay", lpb.QuickPlayRequest(ruleset=RULESETS[1]))
    placed = 0
    deadline = time.monotonic() + 20
    while placed < len(players):
        assert time.monotonic() < deadline, f"{placed} of {len(players)} placed"
        tickets = [p.call("GetTicket", lpb.GetTicketRequest()).ticket for p in players]
        placed = sum(t.state == lpb.TICKET_STATE_PLACED for t in tickets)
    time.sleep(1.0)  # the others' looks, half a second after the tickets they noted
    reads = queue_reads() - before
    raw.close()
    # One read per ticket here, and each other replica's few: 41 when
    # written; 119 when every replica read the queue for every ticket.
    assert reads <= len(players) + 20, f"{reads} queue reads for {len(players)} tickets"
