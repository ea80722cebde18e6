#!/usr/bin/env python3
"""Rated play's store costs (issue 26): rating updates per second, leaderboard
reads at a large board, and the memory a rated player takes, on SQLite and on
Redis, in one run on this machine.

Everything goes through the server's own code on the lobby store, as the
server runs it (no gRPC): ``Ledger`` (lobby/ratings.py) on a ``SqliteLobby``
(a fresh file, ``SqliteStore`` synchronous FULL unless ``--sqlite-synchronous``,
group commit as the server has it) and on a ``RedisLobby`` (a ``RedisStore``
on a redis-server this bench starts: Debian's, a free loopback port, files in a
temporary folder, no persistence: ``--save '' --appendonly no``). ``memory``
(``MemoryLobby``) can be added with ``--stores`` as the ceiling of the calling
code.

Parts, on each store:

* **updates**: ``Ledger.apply`` of 4-player partnership matches (sides 0/2 and
  1/3, winner 500-560 points, loser below) among a population of
  ``--population`` players (10,000), four distinct players drawn at random per
  match, in pool ``polish``. First ``--matches`` (1,000) one after another,
  then ``--concurrent-matches`` (2,000) with ``--concurrency`` (32) applies in
  flight at once (``asyncio.gather`` of that many workers, each applying its
  matches in turn), after 50 untimed applies (connections, scripts, tables).
  Measured: matches/s, apply latency p50/p99, and how many commits lost a
  race (two matches in flight with a player in common: the later one reads
  again and retries; counted around ``store.commit``).
* **leaderboard**: ``--players`` (100,000) rated players in pool ``classic``,
  written IN BULK (not by 100,000 applies): their ``rating:<pool>:<key>``
  documents and ``board:<pool>`` sorted-set entries, ``--fill-batch`` (1,000)
  players per commit (``Tx`` puts + zadds, the same documents and scores
  ``Ledger`` writes: mu ~ N(25, 4), sigma 1.5 to 8, 3 to 200 games). Then
  ``GetLeaderboard`` as the server answers it: a real ``Standings`` (the
  service's class) on a ``Context`` holding the store and default settings,
  ``page_size`` ``--page-size`` (25), ``--reads`` (500) calls of each kind,
  one at a time:
  ``top`` the first page (zrange from 0, get the docs, zcard);
  ``around`` the page around a random player (zrank, zrange at that offset,
  docs, zcard); ``deep`` the next page after a random player of the board's
  last 10%, through its page token (zrank of the anchor, zrange deep, docs,
  zcard; the tokens are taken from untimed ``around`` calls). Measured: p50 and
  p99 ms, calls/s. Then each store call of a page alone (median of 50): zrange
  of 25 at offsets 0, half and 95% down the board, zrank 95% down, zcard, get
  of 25 documents; on Redis also ZRANGE by index against ZRANGEBYSCORE with
  LIMIT at the deep offset (the store's zrange is the latter, whose cost grows
  with the offset), from a synchronous client.
* **memory**: the bulk fill's growth divided by the players: Redis
  ``used_memory`` (``INFO memory``), and SQLite's database size
  (``page_count * page_size``, WAL pages included as the connection sees
  them). On Redis also ``MEMORY USAGE`` of one rating document and of one
  ``played:<match>`` record written by the updates part.

    .venv/bin/python bench/ratings.py [--stores sqlite,redis] [--population 10000]
        [--matches 1000] [--concurrent-matches 2000] [--concurrency 32]
        [--players 100000] [--reads 500] [--page-size 25] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.lobby.context import Context, Settings
from spades_server.lobby.ratings import (
    Ledger,
    Standing,
    board_key,
    encode_standing,
    pool_part,
    rating_key,
)
from spades_server.lobby.seat_keys import SeatKeys
from spades_server.lobby.standings import Standings
from spades_server.rating import Participant, Rating
from spades_server.store.lobby import Doc, LobbyStore, Tx
from spades_server.store.lobby_memory import MemoryLobby
from spades_server.store.lobby_redis import RedisLobby
from spades_server.store.lobby_sqlite import SqliteLobby
from spades_server.store.redis import RedisStore
from spades_server.store.sqlite import SqliteStore

from load import pct
from processes import RedisProcess

UPDATE_POOL = "polish"  # the updates part's pool
BOARD_POOL = "classic"
Match = tuple[
    str, list[Participant]
]  # a match id and its players  # the leaderboard's (a preset: Standings knows it)
REDIS_START_S = 10.0
STORE_CALLS = 50  # timings of each store call alone


# -- stores -------------------------------------------------------------------------------


class Counting:
    """The lobby store, counting the commits that lost a race (returned None)."""

    def __init__(self, inner: LobbyStore, root: Counting | None = None) -> None:
        self.inner = inner
        self.root = root or self  # a partition counts into its store's counts
        self.commits = 0
        self.lost = 0

    def part(self, name: str) -> Counting:
        return Counting(self.inner.part(name), self.root)

    async def get(self, keys: Sequence[str]) -> list[Doc | None]:
        return await self.inner.get(keys)

    async def commit(self, tx: Tx) -> int | None:
        self.root.commits += 1
        out = await self.inner.commit(tx)
        if out is None:
            self.root.lost += 1
        return out

    async def zrange(
        self, name: str, low: float, high: float, offset: int = 0, count: int = -1
    ) -> list[tuple[str, float]]:
        return await self.inner.zrange(name, low, high, offset, count)

    async def zcard(self, name: str) -> int:
        return await self.inner.zcard(name)

    async def zrank(self, name: str, member: str) -> int | None:
        return await self.inner.zrank(name, member)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@dataclass
class Opened:
    kind: str
    lobby: LobbyStore
    sqlite: SqliteStore | None = None
    redis_store: RedisStore | None = None
    redis: RedisProcess | None = None
    prefix: str = ""
    closers: list[Any] = field(default_factory=list)

    async def size(self) -> int:
        """Bytes the store holds: Redis used_memory, SQLite pages; 0 for memory."""
        if self.redis is not None:
            return self.redis.used_memory()
        if self.sqlite is not None:

            def work(conn: Any) -> int:
                pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
                size = int(conn.execute("PRAGMA page_size").fetchone()[0])
                free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
                return (pages - free) * size

            return await self.sqlite.run(work)
        return 0

    def memory_usage(self, key: str) -> int | None:
        """Redis MEMORY USAGE of a lobby document's hash."""
        if self.redis is None:
            return None
        got = self.redis.client.memory_usage(f"{self.prefix}:{{lobby}}:d:{key}", samples=0)
        return None if got is None else int(got)

    async def close(self) -> None:
        await self.lobby.close()
        if self.redis_store is not None:
            await self.redis_store.close()
        if self.sqlite is not None:
            await self.sqlite.close()


async def open_store(
    kind: str, workdir: Path, server: RedisProcess | None, synchronous: str
) -> Opened:
    if kind == "memory":
        return Opened(kind, MemoryLobby())
    if kind == "sqlite":
        sqlite = await SqliteStore.open(workdir / "ratings.db", synchronous=synchronous)
        return Opened(kind, SqliteLobby(sqlite), sqlite=sqlite)
    assert server is not None
    prefix = f"bench{random.randrange(10**6)}"
    store = RedisStore(server.url, prefix)
    return Opened(kind, RedisLobby(store), redis_store=store, redis=server, prefix=prefix)


# -- updates ------------------------------------------------------------------------------


def matches_of(rng: random.Random, population: int, count: int, tag: str) -> list[Match]:
    out = []
    for i in range(count):
        players = rng.sample(range(population), 4)
        win = rng.randrange(500, 561)
        lose = rng.randrange(-100, win)
        first = rng.random() < 0.5
        scores = (win, lose) if first else (lose, win)
        participants = [
            Participant(f"player-{p:06d}", seat % 2, scores[seat % 2], turns=52, bot_turns=0)
            for seat, p in enumerate(players)
        ]
        out.append((f"bench-{tag}-{i}", participants))
    return out


async def updates(
    ledger: Ledger, counting: Counting, matches: list[Match], concurrency: int
) -> dict[str, Any]:
    latencies: list[float] = []
    todo = iter(matches)
    counting.commits = counting.lost = 0

    async def worker() -> None:
        for match_id, participants in todo:
            t0 = time.perf_counter()
            applied = await ledger.apply(match_id, UPDATE_POOL, participants)
            latencies.append(time.perf_counter() - t0)
            assert applied, match_id

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - start
    return {
        "matches": len(matches),
        "concurrency": concurrency,
        "seconds": wall,
        "per_second": len(matches) / wall,
        "p50_ms": 1000 * pct(sorted(latencies), 0.5),
        "p99_ms": 1000 * pct(sorted(latencies), 0.99),
        "lost_commits": counting.lost,
    }


# -- leaderboard --------------------------------------------------------------------------


def board_player(i: int) -> str:
    return f"rated-{i:07d}"


async def fill(store: LobbyStore, players: int, batch: int, rng: random.Random) -> float:
    """Write ``players`` rating documents and board entries, ``batch`` per commit."""
    lobby = store.part(pool_part(BOARD_POOL))
    board = board_key(BOARD_POOL)
    start = time.perf_counter()
    for first in range(0, players, batch):
        tx = Tx()
        for i in range(first, min(players, first + batch)):
            player = board_player(i)
            rating = Rating(rng.gauss(25.0, 4.0), rng.uniform(1.5, 8.0))
            games = rng.randrange(3, 201)
            wins = rng.randrange(games + 1)
            standing = Standing(player, rating, games, wins, games - wins, f"Player {i}")
            key = rating_key(BOARD_POOL, player)
            tx.put[key] = encode_standing(standing)
            tx.zadd.append((board, key, -rating.conservative))
        if await lobby.commit(tx) is None:
            raise RuntimeError("a fill commit lost a race: nobody else writes here")
    return time.perf_counter() - start


async def timed(calls: list[lpb.GetLeaderboardRequest], standings: Standings) -> list[float]:
    out = []
    for req in calls:
        t0 = time.perf_counter()
        page = await standings.leaderboard(req)
        out.append(time.perf_counter() - t0)
        assert page.entries, req
    return out


async def reads(
    standings: Standings, players: int, count: int, size: int, rng: random.Random
) -> dict[str, dict[str, float]]:
    top = [lpb.GetLeaderboardRequest(pool=BOARD_POOL, page_size=size) for _ in range(count)]
    around = [
        lpb.GetLeaderboardRequest(
            pool=BOARD_POOL, page_size=size, around_player_id=board_player(rng.randrange(players))
        )
        for _ in range(count)
    ]
    # Deep: the next page after a random player of the last 10%, by its token
    # (found by an untimed around call whose page that player's rank ends).
    deep = []
    last_tenth = max(1, players // 10)
    for _ in range(count):
        found = await standings.leaderboard(
            lpb.GetLeaderboardRequest(
                pool=BOARD_POOL,
                page_size=size,
                around_player_id=board_player(players - 1 - rng.randrange(last_tenth)),
            )
        )
        token = found.next_page_token or found.previous_page_token
        deep.append(lpb.GetLeaderboardRequest(pool=BOARD_POOL, page_size=size, page_token=token))
    out = {}
    for name, calls in (("top", top), ("around", around), ("deep", deep)):
        t0 = time.perf_counter()
        lat = await timed(calls, standings)
        wall = time.perf_counter() - t0
        out[name] = {
            "p50_ms": 1000 * pct(sorted(lat), 0.5),
            "p99_ms": 1000 * pct(sorted(lat), 0.99),
            "per_second": len(lat) / wall,
        }
    return out


async def store_calls(opened: Opened, players: int, rng: random.Random) -> dict[str, float]:
    """Median ms of the store calls a page is made of, alone (``STORE_CALLS`` each)."""
    lobby = opened.lobby.part(pool_part(BOARD_POOL))
    board = board_key(BOARD_POOL)
    deep = players - 1 - players // 20
    members = await lobby.zrange(board, float("-inf"), float("inf"), deep, 25)
    keys = [m for m, _ in members]
    calls: dict[str, Any] = {
        "zrange 25 @0": lambda: lobby.zrange(board, float("-inf"), float("inf"), 0, 25),
        f"zrange 25 @{players // 2:,}": lambda: lobby.zrange(
            board, float("-inf"), float("inf"), players // 2, 25
        ),
        f"zrange 25 @{deep:,}": lambda: lobby.zrange(board, float("-inf"), float("inf"), deep, 25),
        f"zrank @{deep:,}": lambda: lobby.zrank(board, keys[0]),
        "zcard": lambda: lobby.zcard(board),
        "get 25 docs": lambda: lobby.get(keys),
    }
    out = {}
    for name, call in calls.items():
        lat = []
        for _ in range(STORE_CALLS):
            t0 = time.perf_counter()
            await call()
            lat.append(time.perf_counter() - t0)
        out[name] = 1000 * pct(sorted(lat), 0.5)
    if opened.redis is not None:
        # What a read by rank would cost: ZRANGE by index, O(log n + 25),
        # where ZRANGEBYSCORE ... LIMIT walks the offset (the store's zrange).
        key = f"{opened.prefix}:{{lobby}}:z:{board}"
        client = opened.redis.client
        runs: list[tuple[str, Any]] = [
            (f"redis ZRANGE by index @{deep:,}", lambda: client.zrange(key, deep, deep + 24)),
            (
                f"redis ZRANGEBYSCORE LIMIT @{deep:,}",
                lambda: client.zrangebyscore(key, "-inf", "+inf", start=deep, num=25),
            ),
        ]
        for name, run in runs:
            lat = []
            for _ in range(STORE_CALLS):
                t0 = time.perf_counter()
                run()
                lat.append(time.perf_counter() - t0)
            out[name + " (sync client)"] = 1000 * pct(sorted(lat), 0.5)
    return out


# -- one store ----------------------------------------------------------------------------


async def bench_store(
    kind: str, args: argparse.Namespace, workdir: Path, server: RedisProcess | None
) -> dict[str, Any]:
    rng = random.Random(args.seed)
    opened = await open_store(kind, workdir, server, args.sqlite_synchronous)
    counting = Counting(opened.lobby)
    ledger = Ledger(counting, min_games=0)
    result: dict[str, Any] = {"kind": kind}
    try:
        seq = matches_of(rng, args.population, args.matches, "seq")
        conc = matches_of(rng, args.population, args.concurrent_matches, "conc")
        warm = matches_of(rng, args.population, 50, "warm")
        await updates(ledger, counting, warm, 1)  # connections, scripts, tables: untimed
        result["sequential"] = await updates(ledger, counting, seq, 1)
        result["concurrent"] = await updates(ledger, counting, conc, args.concurrency)
        if kind == "redis":
            result["played_doc_bytes"] = opened.memory_usage(f"played:{seq[0][0]}")
            result["rating_doc_bytes"] = opened.memory_usage(
                rating_key(UPDATE_POOL, seq[0][1][0].player)
            )
        before = await opened.size()
        result["fill_seconds"] = await fill(opened.lobby, args.players, args.fill_batch, rng)
        after = await opened.size()
        result["bytes_per_player"] = (after - before) / args.players if after else None
        assert await ledger.players(BOARD_POOL) == args.players
        ctx = Context(
            store=counting,
            feed=None,  # type: ignore[arg-type]
            registry=None,  # type: ignore[arg-type]
            seat_keys=SeatKeys.from_settings("", "bench-operator-token"),  # signs page tokens
            settings=Settings(),
        )
        standings = Standings(ctx, ledger)
        result["reads"] = await reads(standings, args.players, args.reads, args.page_size, rng)
        result["store_calls"] = await store_calls(opened, args.players, rng)
    finally:
        await opened.close()
    return result


# -- report -------------------------------------------------------------------------------


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print()
    print(
        f"rating updates: Ledger.apply of 4-player partnership matches, "
        f"{args.population:,} players, pool {UPDATE_POOL}"
    )
    head = f"{'store':<8} {'in flight':>9} {'matches':>8} {'matches/s':>10} {'p50 ms':>8}"
    head += f" {'p99 ms':>8} {'lost commits':>13}"
    print(head)
    print("-" * len(head))
    for r in results:
        for part in ("sequential", "concurrent"):
            u = r[part]
            print(
                f"{r['kind']:<8} {u['concurrency']:>9} {u['matches']:>8,} {u['per_second']:>10,.0f}"
                f" {u['p50_ms']:>8.2f} {u['p99_ms']:>8.2f} {u['lost_commits']:>13,}"
            )
    print()
    print(
        f"leaderboard reads (Standings.leaderboard = GetLeaderboard), {args.players:,} rated "
        f"players (written in bulk, {args.fill_batch:,} per commit, not applied match by match), "
        f"page_size {args.page_size}, {args.reads:,} calls of each kind, one at a time"
    )
    head = f"{'store':<8} {'kind':<7} {'p50 ms':>8} {'p99 ms':>8} {'calls/s':>9}"
    print(head)
    print("-" * len(head))
    for r in results:
        for name, x in r["reads"].items():
            print(
                f"{r['kind']:<8} {name:<7} {x['p50_ms']:>8.2f} {x['p99_ms']:>8.2f}"
                f" {x['per_second']:>9,.0f}"
            )
    print()
    print(f"the store calls of a page, alone: median ms of {STORE_CALLS} (@ offset or rank)")
    names = list(dict.fromkeys(n for r in results for n in r["store_calls"]))
    head = f"{'call':<52} " + " ".join(f"{r['kind']:>8}" for r in results)
    print(head)
    print("-" * len(head))
    for n in names:
        cells = [r["store_calls"].get(n) for r in results]
        print(f"{n:<52} " + " ".join(f"{c:>8.2f}" if c is not None else f"{'-':>8}" for c in cells))
    print()
    print("memory per rated player (the bulk fill's growth / players)")
    head = f"{'store':<8} {'measure':<44} {'bytes/player':>12} {'fill s':>7}"
    print(head)
    print("-" * len(head))
    for r in results:
        what = {
            "redis": "INFO memory used_memory delta",
            "sqlite": "database pages delta (page_count*page_size)",
            "memory": "(not measured)",
        }[r["kind"]]
        b = r["bytes_per_player"]
        print(
            f"{r['kind']:<8} {what:<44} {(f'{b:,.0f}' if b else '-'):>12} {r['fill_seconds']:>7.1f}"
        )
        if r["kind"] == "redis":
            print(
                f"{'':<8} MEMORY USAGE: a rating doc {r['rating_doc_bytes']} B, "
                f"a played:<match> record {r['played_doc_bytes']} B"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stores", default="sqlite,redis", help="of sqlite, redis, memory")
    ap.add_argument("--population", type=int, default=10_000, help="players of the updates part")
    ap.add_argument("--matches", type=int, default=1_000, help="sequential applies (1,000)")
    ap.add_argument("--concurrent-matches", type=int, default=2_000)
    ap.add_argument("--concurrency", type=int, default=32, help="applies in flight (32)")
    ap.add_argument("--players", type=int, default=100_000, help="rated players on the board")
    ap.add_argument("--fill-batch", type=int, default=1_000, help="players per fill commit")
    ap.add_argument("--reads", type=int, default=500, help="calls of each read kind (500)")
    ap.add_argument("--page-size", type=int, default=25)
    ap.add_argument("--sqlite-synchronous", default="FULL", choices=("FULL", "NORMAL"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    kinds = args.stores.split(",")
    if not set(kinds) <= {"sqlite", "redis", "memory"}:
        ap.error("--stores: sqlite, redis, memory")
    if min(args.population, args.players, args.reads, args.fill_batch) < 4:
        ap.error("sizes must be at least 4")
    print("rated play's store costs (bench/ratings.py)")
    print(f"python  {platform.python_implementation()} {platform.python_version()}")
    print(f"cpu     {os.cpu_count()} cores ({platform.machine()}), shared with the store")
    print(f"sqlite  synchronous={args.sqlite_synchronous}, WAL, group commit (SqliteStore)")
    results = []
    with tempfile.TemporaryDirectory(prefix="spades-bench-ratings-") as tmp:
        server = None
        try:
            if "redis" in kinds:
                server = RedisProcess(Path(tmp) / "redis-server", None)
                print(
                    f"redis   {server.version}, loopback,"
                    " no persistence (--save '' --appendonly no)"
                )
            for kind in kinds:
                workdir = Path(tmp) / kind
                workdir.mkdir()
                t0 = time.perf_counter()
                results.append(asyncio.run(bench_store(kind, args, workdir, server)))
                print(f"  {kind}: done in {time.perf_counter() - t0:.0f} s", flush=True)
        finally:
            if server is not None:
                server.client.close()
                server.proc.terminate()
                server.proc.wait(timeout=10)
    report(results, args)
    print()
    print(
        "command: .venv/bin/python bench/ratings.py "
        + " ".join(sys.argv[1:] if argv is None else argv)
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
