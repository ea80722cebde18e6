#!/usr/bin/env python3
"""The lobby: quick play's time from ticket to table and its throughput, and
what a waiting table and a ticket cost, on one SQLite replica and on three
Redis replicas, in one run on loopback.

It starts its own processes, as bench/replicas.py does: one server on SQLite
(``--store sqlite``, synchronous FULL), and a redis-server of its own with
three servers on it (``--store redis``), each trusting player credentials
signed HS256 with a secret made for the run, with quick play's bot wait
(``--quickplay-bot-wait-seconds``) of 10 minutes, so that every table this
bench sees is filled by players, never by bots.

Parts, on each configuration (memory first, then quick play):

* **quickplay**: ``--players`` players (1,000) ask for quick play at once
  (``--concurrency`` calls in flight at most), each through a replica taken
  at random, for the classic rules: one queue, tables of four. Each then
  long-polls its ticket (``GetTicket`` with ``after_version``, on random
  replicas) until it is placed. Measured: time from ticket to table, the
  server's own clocks: the ticket's ``created_ms`` (when it was queued) to
  its table's ``created_ms`` (the matchmaker's claim), p50/p99; the same as
  the client sees it: from sending ``QuickPlay`` to the ``GetTicket`` answer
  that says ``PLACED`` (with the seat token); tickets placed per second,
  from the first ticket to the last table; and the check that every player
  sits once, at seats 0-3 of a table of four.
* **memory** (first, on fresh servers, after a warm-up of a quarter as many
  of each): ``--waiting`` players (2,000) each open a public table
  (``OpenTable``, one player, three open seats) and as many ask for quick
  play each with rules of their own (``target_score`` 1,000 + i, so no queue
  ever has a second ticket and none is placed): the growth of the servers'
  RSS (psutil) per waiting table and per ticket, and on Redis the growth of
  ``used_memory`` (``INFO memory``) per table and per ticket, with
  ``MEMORY USAGE`` of one table's document and one ticket's.

    .venv/bin/python bench/lobby.py [--players 1000] [--waiting 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import jwt
import psutil
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import lobby_pb2_grpc
from spades_server.gen.spades.v1 import spades_pb2 as pb

from load import pct
from processes import Procs, RedisProcess, redis_binary

ISSUER, AUDIENCE = "bench", "spades-bench"
SECRET = secrets.token_hex(32)
RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


def credential(player: str) -> str:
    now = int(time.time())
    claims = {"sub": player, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 3600}
    return jwt.encode(claims, SECRET, algorithm="HS256")


def flags() -> list[str]:
    return [
        "--player-issuer", ISSUER, "--player-audience", AUDIENCE,
        "--player-hs256-secret", SECRET,
        "--quickplay-bot-wait-seconds", "600",
        "--lobby-calls-per-second", "1000",
        "--max-waiting-tables", "1000000",
        "--max-matches", "1000000",
    ]  # fmt: skip


@dataclass
class Config:
    name: str
    addresses: list[str]
    pids: list[int]
    redis: RedisProcess | None = None
    channels: list[grpc.aio.Channel] = field(default_factory=list)

    def stub(self) -> lobby_pb2_grpc.LobbyServiceStub:
        return lobby_pb2_grpc.LobbyServiceStub(random.choice(self.channels))

    def rss(self) -> int:
        return sum(psutil.Process(p).memory_info().rss for p in self.pids)


async def call(cfg: Config, method: str, request: Any, md: Any) -> Any:
    for _ in range(20):
        try:
            return await getattr(cfg.stub(), method)(request, metadata=md, timeout=30)
        except grpc.aio.AioRpcError as e:
            if e.code() not in RETRYABLE:
                raise
            await asyncio.sleep(0.05)
    raise RuntimeError(f"{method} kept failing")


@dataclass
class Placed:
    player: str
    sent: float
    learned: float
    ticket: lpb.Ticket


async def one_player(cfg: Config, player: str, gate: asyncio.Semaphore) -> Placed:
    md = (("authorization", f"Bearer {credential(player)}"),)
    async with gate:
        sent = time.time()
        ticket = (await call(cfg, "QuickPlay", lpb.QuickPlayRequest(), md)).ticket
    while ticket.state != lpb.TICKET_STATE_PLACED:
        ticket = (
            await call(
                cfg,
                "GetTicket",
                lpb.GetTicketRequest(
                    ticket_id=ticket.ticket_id, after_version=ticket.version, wait_ms=20000
                ),
                md,
            )
        ).ticket
    return Placed(player, sent, time.time(), ticket)


async def quickplay(cfg: Config, players: int, concurrency: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    run = secrets.token_hex(3)
    t0 = time.time()
    placed = await asyncio.gather(*(one_player(cfg, f"qp-{run}-{i}", gate) for i in range(players)))
    wall = time.time() - t0
    tables: dict[str, dict[int, str]] = {}
    for p in placed:
        seats = tables.setdefault(p.ticket.placement.match_id, {})
        assert p.ticket.placement.seat not in seats, "two players on one seat"
        seats[p.ticket.placement.seat] = p.player
    assert all(sorted(s) == [0, 1, 2, 3] for s in tables.values()), "a table not of four"
    assert len({p.player for p in placed}) == players
    server_ms = sorted(
        float(p.ticket.placement.table.created_ms - p.ticket.created_ms) for p in placed
    )
    client_ms = sorted((p.learned - p.sent) * 1000 for p in placed)
    first = min(p.ticket.created_ms for p in placed)
    last = max(p.ticket.placement.table.created_ms for p in placed)
    return {
        "players": players,
        "tables": len(tables),
        "server_p50": pct(server_ms, 0.50),
        "server_p99": pct(server_ms, 0.99),
        "client_p50": pct(client_ms, 0.50),
        "client_p99": pct(client_ms, 0.99),
        "placed_per_s": players / max(0.001, (last - first) / 1000),
        "wall_s": wall,
    }


async def memory(cfg: Config, n: int, concurrency: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    run = secrets.token_hex(3)

    async def settle() -> tuple[int, int]:
        await asyncio.sleep(1.0)
        used = cfg.redis.used_memory() if cfg.redis is not None else 0
        return cfg.rss(), used

    async def open_table(i: int) -> lpb.OpenTableResponse:
        md = (("authorization", f"Bearer {credential(f'host-{run}-{i}')}"),)
        async with gate:
            return await call(cfg, "OpenTable", lpb.OpenTableRequest(), md)

    async def ask(i: int) -> lpb.QuickPlayResponse:
        md = (("authorization", f"Bearer {credential(f'alone-{run}-{i}')}"),)
        rules = pb.Ruleset(target_score=1000 + i)
        async with gate:
            return await call(cfg, "QuickPlay", lpb.QuickPlayRequest(ruleset=rules), md)

    # A warm-up of each (not counted): first calls fill caches and pools, and
    # the feed's ring of recent changes (``lobby.feed.RING``) fills up.
    warm = max(1, n // 4)
    await asyncio.gather(*(open_table(n + i) for i in range(warm)))
    await asyncio.gather(*(ask(n + i) for i in range(warm)))
    rss0, used0 = await settle()
    tables = await asyncio.gather(*(open_table(i) for i in range(n)))
    rss1, used1 = await settle()
    tickets = await asyncio.gather(*(ask(i) for i in range(n)))
    rss2, used2 = await settle()
    out: dict[str, Any] = {
        "n": n,
        "rss_per_table": (rss1 - rss0) / n,
        "rss_per_ticket": (rss2 - rss1) / n,
    }
    if cfg.redis is not None:
        client = cfg.redis.client
        out["redis_per_table"] = (used1 - used0) / n
        out["redis_per_ticket"] = (used2 - used1) / n
        table_key = next(
            k for k in client.scan_iter(match=f"*:{{lobby}}:*t:{tables[0].table.table_id}")
        )
        ticket_key = next(
            k for k in client.scan_iter(match=f"*:{{lobby}}:*k:{tickets[0].ticket.ticket_id}")
        )
        out["table_doc"] = client.memory_usage(table_key)
        out["ticket_doc"] = client.memory_usage(ticket_key)
    return out


async def measure(cfg: Config, args: argparse.Namespace) -> dict[str, Any]:
    cfg.channels = [grpc.aio.insecure_channel(a) for a in cfg.addresses]
    try:
        mem = await memory(cfg, args.waiting, args.concurrency)
        qp = await quickplay(cfg, args.players, args.concurrency)
    finally:
        for ch in cfg.channels:
            await ch.close(None)
    return {"quickplay": qp, "memory": mem}


def kib(n: float) -> str:
    return f"{n / 1024:.1f} KiB"


def report(results: dict[str, dict[str, Any]]) -> None:
    names = list(results)
    print()
    print(f"{'':44}" + "".join(f"{n:>22}" for n in names))

    def row(label: str, f: Any) -> None:
        print(f"{label:44}" + "".join(f"{f(results[n]):>22}" for n in names))

    row(
        "players (tables of four)",
        lambda r: f"{r['quickplay']['players']} ({r['quickplay']['tables']})",
    )
    row("ticket -> table, server clocks, p50", lambda r: f"{r['quickplay']['server_p50']:.0f} ms")
    row("ticket -> table, server clocks, p99", lambda r: f"{r['quickplay']['server_p99']:.0f} ms")
    row("QuickPlay sent -> PLACED learned, p50", lambda r: f"{r['quickplay']['client_p50']:.0f} ms")
    row("QuickPlay sent -> PLACED learned, p99", lambda r: f"{r['quickplay']['client_p99']:.0f} ms")
    row("tickets placed per second", lambda r: f"{r['quickplay']['placed_per_s']:.0f}")
    row("server RSS per waiting table", lambda r: kib(r["memory"]["rss_per_table"]))
    row("server RSS per queued ticket", lambda r: kib(r["memory"]["rss_per_ticket"]))
    row(
        "Redis used_memory per waiting table",
        lambda r: kib(r["memory"]["redis_per_table"]) if "redis_per_table" in r["memory"] else "-",
    )
    row(
        "Redis used_memory per queued ticket",
        lambda r: (
            kib(r["memory"]["redis_per_ticket"]) if "redis_per_ticket" in r["memory"] else "-"
        ),
    )
    row(
        "MEMORY USAGE of a table / ticket document",
        lambda r: (
            f"{r['memory']['table_doc']} / {r['memory']['ticket_doc']} B"
            if "table_doc" in r["memory"]
            else "-"
        ),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--players", type=int, default=1000)
    p.add_argument("--waiting", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=200)
    args = p.parse_args(argv)
    redis_binary()  # before the first part, not after it
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="spades-bench-lobby-") as tmp:
        procs = Procs(Path(tmp))
        try:
            sqlite = procs.replica("sqlite", "sqlite", extra=flags())
            cfg = Config("1 replica, SQLite", [sqlite.address], [sqlite.pid])
            results[cfg.name] = asyncio.run(measure(cfg, args))
            rp = procs.redis = RedisProcess(Path(tmp) / "redis", None)
            replicas = [procs.replica(f"redis{i}", "redis", "bench", flags()) for i in range(3)]
            cfg = Config(
                "3 replicas, Redis", [r.address for r in replicas], [r.pid for r in replicas], rp
            )
            results[cfg.name] = asyncio.run(measure(cfg, args))
        finally:
            procs.stop_all()
    print(
        f"bench/lobby.py: {args.players} players asking for quick play at once "
        f"({args.concurrency} calls in flight at most); {args.waiting} waiting tables and "
        f"{args.waiting} queued tickets for the memory"
    )
    report(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
