#!/usr/bin/env python3
"""The lobby's slots: what quick play costs the Redis core that holds its
queue, and how many lobby commits a second one core takes.

A quick-play queue, its tickets and their tables are under one hash tag, its
shard's (lobby/shards.py; docs/architecture.md, "The lobby on a cluster"),
so on a Redis Cluster a queue runs on one primary's one core, and one
redis-server is the model of it. Redis runs commands on one
thread: its main thread's CPU seconds (``INFO cpu``) per ticket are what the
slot spends, and 10^6 / (µs per ticket) is the most tickets a second one
core at 100 % could take, however fast the replicas in front of it are.

Parts (``--parts``, all by default):

* **quickplay**: a redis-server of its own (bench/processes.py), ``--replicas``
  servers on it (a step each: 1, then 3), set up as bench/lobby.py's (HS256
  player credentials, bots only after 10 minutes, so every table is filled
  by players). ``--tickets`` players (6,000, a multiple of four) ask for
  quick play, ``--concurrency`` (200) at a time, each a new player through a
  replica taken at random, and long-poll their tickets until placed
  (bench/lobby.py's ``one_player``): every ticket of the run is placed, in
  tables of four. Redis's ``INFO cpu``, ``commandstats`` and ``stats`` are
  read before and after, and divided by the tickets placed: Redis main
  thread CPU µs, commands and bytes in / out per ticket, the lobby commits
  written per ticket (the commit script's ``SET`` of the feed's counter: no
  other script or call sets a string) and tried (every ``EVALSHA`` but a
  QuickPlay's rate token, a match's creation and the background's, counted
  over an idle window first), and the followers' ``XREAD`` calls. It is
  everything quick play asks of Redis: the lobby's reads and commits, the
  rate bucket, and the match's creation, which on a cluster goes to the
  match's own slot.
* **cluster**: the same with 3 replicas on a Redis Cluster of 3 primaries
  (RedisClusterProcess), once for each of ``--lanes`` (1, 4: the servers'
  ``--quickplay-lanes``): each primary's CPU per ticket. Quick play is in
  shards (lobby/shards.py): the busiest primary holds the queue's shard (or
  its lanes' shards), the one that owns ``{lobby}`` now only the tables
  players open, and the others the matches, the rate buckets and the
  players' documents they spread.
* **opened**: the same cluster and replicas, with no quick play: tables that
  players open (the default table, public), ``--tickets`` / 4 of them,
  ``--concurrency`` / 4 at a time. Each is opened by a host; three players
  each read a page of the public listing (``ListTables``, 20 tables) and
  join it, at once; the last one's join starts it. These tables, the
  listing and its feed are the ``{lobby}`` slot's (lobby/shards.py): its
  primary's CPU per player seated and per table is what a deployment whose
  players open their tables asks of that one core.
* **fanout**: quick play again on one Redis, with ``--fanout-replicas``
  (1, 3, 6) replicas and players arriving one at a time at
  ``--fanout-rate`` (100 tickets/s, ``--fanout-tickets`` 2,000), as people
  arrive rather than in a crowd: every replica follows the feed and runs the
  matchmaker, so each one more costs the slot per ticket (the least-squares
  slope over the steps is printed). A step written ``3+3`` runs three
  replicas that serve the lobby and three more with ``--lobby off``
  (serving matches only; no player calls them): what those cost the slot.
* **commits**: the lobby's commits alone, on one Redis, from ``--drivers``
  processes (2), each with N asyncio tasks, each task placing table after
  table: four tickets asked for (eight commits: each player's claim on
  their document, then the ticket), the table placed (one commit: four
  tickets placed, the table written) and started (one commit).
  The ten transactions are the ones the lobby's own code makes: recorded
  once from ``QuickPlay.ask``, ``QuickPlay.place`` and ``Tables.start`` on an
  in-memory lobby store, and replayed with new ids (of the same lengths, so
  the same sizes). No reads and no race between replicas: the commits alone.
  Two clients (``--clients``): **store**, each commit through
  ``RedisLobby.commit`` as a replica makes it (N = ``--tasks``: 1, 4, 16);
  and **wire**, the same EVALSHA requests byte for byte, one at a time on a
  connection per task (N = ``--wire-tasks``: 8, 64), which costs the driver
  so little that Redis's core, not the drivers', saturates. Each client's
  last step runs again with ``--followers`` (1, 3) processes following the
  feed as a replica does (``XREAD BLOCK``). Measured per step over
  ``--seconds`` (10, after 2 s of warm-up): commits/s, Redis main thread CPU
  (% of a core, µs per commit), the script's own time (``commandstats``),
  and the Redis CPU a follower adds per event.
* **followers**: the store client paced at ``--paced-rate`` commits/s (600:
  400 tickets/s) from one driver, with ``--paced-followers`` (0, 8, 32)
  followers over two processes: the Redis CPU and bytes each follower adds
  per event when the feed is not saturated, and how many events a
  follower's read carries.

Everything shares this machine's cores (Redis, the servers, the drivers and
the bench): the CPU per ticket and per commit are the figures to read, the
rates only say how far the step pushed Redis.

    .venv/bin/python bench/lobby_slot.py   # about 8 minutes
        [--parts quickplay,cluster,opened,fanout,commits,followers] [--tickets 6000]
        [--replicas 1,3] [--fanout-replicas 1,3,6] [--tasks 1,4,16]
        [--wire-tasks 8,64] [--followers 1,3] [--paced-rate 600]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import os
import platform
import secrets
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc
import redis
import structlog
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.lobby import shards
from spades_server.lobby.docs import player_key

from cpu_usage import GroupMeter, percent
from load import print_grid
from lobby import Config, Placed, call, credential, flags, one_player
from processes import Procs, RedisClusterProcess, RedisProcess, recv, redis_binary

PREFIX = "bench"
MATCH_SECONDS = 1800  # docs/capacity.md: a match lasts 30 minutes
SEATS = 4  # tickets per table: quick play's classic table, four lone players
CYCLE = 2 * SEATS + 2  # a table's commits: four claims, four tickets, placement, start
WARM_TICKETS = 400
IDLE_S = 3.0
DRIVER_WARM_S = 2.0
DRIVER_START_S = 8.0  # a driver's imports and its recorded cycle, on a busy machine
START_SLACK_S = 60.0
PHASE_SLACK_S = 60.0
FOLLOWER_PROCESSES = 2
PACED_IN_FLIGHT = 16  # tables being placed at once by a paced driver
# The commands a ticket's cost is shown by, when Redis ran them.
SHOWN = (
    "evalsha", "exec", "hmget", "zrange", "zrangebyscore", "xread", "xrange", "get", "set",
    "xadd", "hset", "hget", "pexpire", "zadd", "zrem",
)  # fmt: skip


# -- Redis's own counters -------------------------------------------------------------------


def redis_counters(client: redis.Redis) -> dict[str, float]:
    """The main thread's CPU seconds (the one that runs commands), network
    bytes, commands, and per command its calls and µs so far."""
    cpu: Any = client.info("cpu")
    stats: Any = client.info("stats")
    out = {
        "cpu_main": cpu["used_cpu_user_main_thread"] + cpu["used_cpu_sys_main_thread"],
        "bytes_in": float(stats["total_net_input_bytes"]),
        "bytes_out": float(stats["total_net_output_bytes"]),
        "commands": float(stats["total_commands_processed"]),
    }
    commandstats: Any = client.info("commandstats")
    for name, row in commandstats.items():
        command = name.removeprefix("cmdstat_")
        out[f"{command}.calls"] = float(row["calls"])
        out[f"{command}.usec"] = float(row["usec"])
    return out


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def lobby_node(nodes: list[RedisProcess]) -> RedisProcess:
    """The primary that owns ``{lobby}``: the others answer MOVED."""
    for node in nodes:
        try:
            node.client.exists(f"{PREFIX}:{{lobby}}:feed")
        except redis.exceptions.ResponseError:
            continue
        return node
    raise SystemExit("no primary owns the {lobby} slot")


# -- quickplay and cluster -----------------------------------------------------------------


def player_id(run: str, i: int, lanes: int) -> str:
    """The ``i``-th player of a run, in lane ``i % lanes`` of its ruleset
    (lobby/shards.py): every lane gets its multiple of four players, so
    that every table is filled by players."""
    for n in itertools.count():
        pid = f"slot-{run}-{i}-{n}"
        if shards.lane(player_key(pid), lanes) == i % lanes:
            return pid
    raise AssertionError("unreachable")


async def place(cfg: Config, tickets: int, concurrency: int, lanes: int = 1) -> list[Placed]:
    """``tickets`` new players through quick play, ``concurrency`` at a time
    (each the next player once the last is placed), until every one is placed."""
    run = secrets.token_hex(3)
    ids = itertools.count()
    gate = asyncio.Semaphore(concurrency)
    placed: list[Placed] = []

    async def worker() -> None:
        while (i := next(ids)) < tickets:
            placed.append(await one_player(cfg, player_id(run, i, lanes), gate))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return placed


async def place_paced(cfg: Config, tickets: int, rate: float) -> list[Placed]:
    """``tickets`` new players through quick play, one every 1 / ``rate`` s
    however many are still waiting: arrivals as from people, not a burst."""
    run = secrets.token_hex(3)
    gate = asyncio.Semaphore(tickets)
    players: list[asyncio.Task[Placed]] = []
    t0 = time.monotonic()
    for i in range(tickets):
        await asyncio.sleep(max(0.0, t0 + i / rate - time.monotonic()))
        players.append(asyncio.create_task(one_player(cfg, f"paced-{run}-{i}", gate)))
    return list(await asyncio.gather(*players))


LISTED = 20  # the page of the public listing a joining player reads


def bearer(player: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {credential(player)}"),)


async def fill_table(cfg: Config, host: str, gate: asyncio.Semaphore) -> lpb.Table:
    """A public table opened by ``host`` and joined by three players, each
    after a page of the listing, at once; the table as its last join left it."""
    async with gate:
        opened = await call(cfg, "OpenTable", lpb.OpenTableRequest(), bearer(host))
        table_id = opened.table.table_id

        async def join(k: int) -> lpb.Table:
            md = bearer(f"{host}-{k}")
            if LISTED:
                await call(cfg, "ListTables", lpb.ListTablesRequest(page_size=LISTED), md)
            joined = await call(cfg, "JoinTable", lpb.JoinTableRequest(table_id=table_id), md)
            return joined.table  # type: ignore[no-any-return]

        tables = await asyncio.gather(*(join(k) for k in range(1, SEATS)))
    return max(tables, key=lambda t: t.version)


async def open_tables(cfg: Config, players: int, concurrency: int) -> list[Placed]:
    """``players`` / 4 tables opened and filled, ``concurrency`` / 4 at a time;
    a ``Placed`` per player seated (the table's start is their placement)."""
    run = secrets.token_hex(3)
    gate = asyncio.Semaphore(max(1, concurrency // SEATS))
    t0 = time.time()
    tables = await asyncio.gather(
        *(fill_table(cfg, f"open-{run}-{i}", gate) for i in range(players // SEATS))
    )
    placed = []
    for table in tables:
        assert table.state == lpb.TABLE_STATE_STARTED, "a full table not started"
        for seat in table.seats:
            assert seat.state == lpb.TABLE_SEAT_STATE_PLAYER, "a seat not a player's"
            placement = lpb.Placement(match_id=table.match_id, seat=seat.seat, table=table)
            ticket = lpb.Ticket(placement=placement)
            placed.append(Placed(seat.player_id, t0, time.time(), ticket))
    return placed


async def quickplay_step(
    cfg: Config,
    nodes: list[RedisProcess],
    meter: GroupMeter,
    args: argparse.Namespace,
    rate: float,
    lanes: int,
    flow: str = "quickplay",
) -> dict[str, Any]:
    cfg.channels = [grpc.aio.insecure_channel(a) for a in cfg.addresses]
    try:
        # First calls fill pools, load scripts on every primary and make the
        # queue's keys; then an idle window: what the replicas ask of Redis
        # with nothing to do (due claims, the followers' blocked reads).
        if flow == "opened":
            await open_tables(cfg, WARM_TICKETS, args.concurrency)
        else:
            await place(cfg, WARM_TICKETS, args.concurrency, lanes)
        await asyncio.sleep(1.0)
        idle0 = [redis_counters(n.client) for n in nodes]
        await asyncio.sleep(IDLE_S)
        idle = [delta(a, redis_counters(n.client)) for a, n in zip(idle0, nodes, strict=True)]
        before = [redis_counters(n.client) for n in nodes]
        meter.start()
        t0 = time.monotonic()
        if flow == "opened":
            placed = await open_tables(cfg, args.tickets, args.concurrency)
        elif rate:
            placed = await place_paced(cfg, args.fanout_tickets, rate)
        else:
            placed = await place(cfg, args.tickets, args.concurrency, lanes)
        wall = time.monotonic() - t0
        cpu = meter.stop()
        used = [delta(b, redis_counters(n.client)) for b, n in zip(before, nodes, strict=True)]
    finally:
        for ch in cfg.channels:
            await ch.close(None)
    tables: dict[str, set[int]] = {}
    for p in placed:
        tables.setdefault(p.ticket.placement.match_id, set()).add(p.ticket.placement.seat)
    assert all(s == set(range(SEATS)) for s in tables.values()), "a table not of four"
    assert len(placed) == (args.fanout_tickets if rate else args.tickets)
    return {
        "name": cfg.name,
        "tickets": len(placed),
        "tables": len(tables),
        "wall": wall,
        "idle_s": IDLE_S,
        "idle": idle,
        "used": used,
        "cpu": cpu,
    }


def run_quickplay(
    args: argparse.Namespace,
    workdir: Path,
    replicas: int,
    cluster: bool,
    rate: float = 0.0,
    off: int = 0,
    lanes: int = 1,
    flow: str = "quickplay",
) -> dict[str, Any]:
    procs = Procs(workdir)
    workdir.mkdir()
    try:
        nodes: list[RedisProcess]
        if cluster:
            rc = RedisClusterProcess(workdir / "redis", 3)
            procs.redis, nodes = rc, list(rc.primaries)
        else:
            rp = RedisProcess(workdir / "redis", None)
            procs.redis, nodes = rp, [rp]
        lane_flags = ["--quickplay-lanes", str(lanes)]
        servers = [
            procs.replica(f"r{i}", "redis", PREFIX, [*flags(), *lane_flags])
            for i in range(replicas)
        ]
        others = [
            procs.replica(f"o{i}", "redis", PREFIX, [*flags(), "--lobby", "off"])
            for i in range(off)
        ]
        shape = "3-primary cluster" if cluster else "one Redis"
        name = f"{replicas} replica{'s' if replicas > 1 else ''}, {shape}"
        if off:
            name = f"{replicas} + {off} --lobby off, {shape}"
        if rate:
            name += f", {rate:g} tickets/s"
        if lanes > 1:
            name += f", {lanes} lanes"
        if flow == "opened":
            name += ", opened tables"
        cfg = Config(name, [s.address for s in servers], [s.pid for s in servers])
        meter = GroupMeter(
            {
                "servers": [s.pid for s in servers + others],
                "redis": [n.pid for n in nodes],
                "bench": [os.getpid()],
            }
        )
        step = asyncio.run(quickplay_step(cfg, nodes, meter, args, rate, lanes, flow))
        step["replicas"] = replicas
        step["off"] = off
        # On a cluster the figures per ticket are the busiest primary's (the
        # one that holds the queue's shard); the owner of {lobby} is marked.
        step["home_node"] = nodes.index(lobby_node(nodes)) if cluster else 0
        busy = [u["cpu_main"] for u in step["used"]]
        step["lobby_node"] = busy.index(max(busy))
        return step
    finally:
        procs.stop_all()


def per_ticket(step: dict[str, Any], node: int) -> dict[str, float]:
    """One primary's figures per ticket placed."""
    n = step["tickets"]
    used, idle = step["used"][node], step["idle"][node]
    out = {
        "cpu_main_us": 1e6 * used["cpu_main"] / n,
        "commands": used["commands"] / n,
        "bytes_in": used["bytes_in"] / n,
        "bytes_out": used["bytes_out"] / n,
        "busy": 100 * used["cpu_main"] / step["wall"],
        "idle_busy": 100 * idle["cpu_main"] / step["idle_s"],
    }
    for command in SHOWN:
        out[f"{command}.calls"] = used.get(f"{command}.calls", 0.0) / n
        out[f"{command}.usec"] = used.get(f"{command}.usec", 0.0) / n
    # Lobby commits: the written ones with events each SET the feed's counter
    # once (a player's claim has none); the tried ones are every EVALSHA but
    # a QuickPlay's rate token and its claim (two a ticket), a match's
    # creation (one a table) and the idle background.
    written = used.get("set.calls", 0.0)
    background = idle.get("evalsha.calls", 0.0) * step["wall"] / step["idle_s"]
    scripts = used.get("evalsha.calls", 0.0)
    out["commits_written"] = written / n
    if len(step["used"]) == 1:  # on a cluster the tokens and creations spread unknown
        out["commits_tried"] = max(written, scripts - 2 * n - step["tables"] - background) / n
    return out


def marks(step: dict[str, Any], node: int) -> str:
    """What a primary of a cluster step holds of the lobby."""
    said = []
    if node == step["home_node"]:
        said.append("{lobby}")
    if node == step["lobby_node"]:
        said.append("busiest")
    return f" ({', '.join(said)})" if said else ""


def print_quickplay(steps: list[dict[str, Any]]) -> None:
    print("\nQuick play on Redis: the cost per ticket placed (Redis main thread CPU)")
    header = ["replicas, Redis", "tickets", "tickets/s", "servers %", "Redis %", "idle %"]
    header += ["Redis µs/ticket", "ceiling tickets/s", "tables at ceiling"]
    header += ["commits/ticket", "cmds/ticket", "B in / out per ticket"]
    rows = []
    for s in steps:
        nodes = range(len(s["used"]))
        lobby = s["lobby_node"]
        t = per_ticket(s, lobby)
        ceiling = 1e6 / t["cpu_main_us"]
        rows.append(
            [
                s["name"],
                f"{s['tickets']:,}",
                f"{s['tickets'] / s['wall']:,.0f}",
                f"{percent(s['cpu'], 'servers'):.0f}",
                f"{t['busy']:.0f}",
                f"{t['idle_busy']:.1f}",
                f"{t['cpu_main_us']:,.0f}",
                f"{ceiling:,.0f}",
                f"{ceiling * MATCH_SECONDS / SEATS:,.0f}",
                f"{t['commits_written']:.2f}"
                + (f" ({t['commits_tried']:.2f} tried)" if "commits_tried" in t else ""),
                f"{t['commands']:.1f}",
                f"{t['bytes_in']:,.0f} / {t['bytes_out']:,.0f}",
            ]
        )
        if len(nodes) > 1:
            for i in nodes:
                o = per_ticket(s, i)
                rows.append(
                    [
                        f"  primary {i}{marks(s, i)}",
                        "",
                        "",
                        "",
                        f"{o['busy']:.0f}",
                        f"{o['idle_busy']:.1f}",
                        f"{o['cpu_main_us']:,.0f}",
                        "",
                        "",
                        f"{o['commits_written']:.2f}",
                        f"{o['commands']:.1f}",
                        f"{o['bytes_in']:,.0f} / {o['bytes_out']:,.0f}",
                    ]
                )
    print_grid(header, rows)
    print(
        "Redis µs/ticket: the main thread's CPU (INFO cpu) over the run / tickets placed; on a "
        "cluster, of the busiest primary (the one with the queue's shard). ceiling: 10^6 / that "
        "(one core at 100 %); "
        f"tables at ceiling: that x {MATCH_SECONDS} s a match / {SEATS} tickets a table. "
        "commits/ticket: written (tried, with the claims lost to another replica)."
    )
    print("\nCommands per ticket (calls, µs of Redis's own time; a script's commands are in its")
    print("EVALSHA's µs as well as in their own rows)")
    header = ["replicas, Redis", *SHOWN]
    rows = []
    for s in steps:
        t = per_ticket(s, s["lobby_node"])
        cells = []
        for c in SHOWN:
            calls, usec = t[f"{c}.calls"], t[f"{c}.usec"]
            cells.append(f"{calls:.2f} / {usec:.0f}" if calls else "-")
        rows.append([s["name"], *cells])
    print_grid(header, rows)


def print_opened(step: dict[str, Any]) -> None:
    print("\nTables players open, on a 3-primary cluster: the cost per table (4 players)")
    header = ["primary", "Redis %", "idle %", "Redis µs/table", "µs/player"]
    header += ["commits/table", "cmds/table", "B in / out per table"]
    rows = []
    for i in range(len(step["used"])):
        o = per_ticket(step, i)  # per player seated
        rows.append(
            [
                f"primary {i}{marks(step, i)}",
                f"{o['busy']:.0f}",
                f"{o['idle_busy']:.1f}",
                f"{SEATS * o['cpu_main_us']:,.0f}",
                f"{o['cpu_main_us']:,.0f}",
                f"{SEATS * o['commits_written']:.1f}",
                f"{SEATS * o['commands']:.1f}",
                f"{SEATS * o['bytes_in']:,.0f} / {SEATS * o['bytes_out']:,.0f}",
            ]
        )
    print(
        f"{step['name']}: {step['tables']:,} tables, {step['tickets']:,} players in "
        f"{step['wall']:.1f} s ({step['tables'] / step['wall']:,.0f} tables/s), servers "
        f"{percent(step['cpu'], 'servers'):.0f} % of a core: "
        f"{10 * percent(step['cpu'], 'servers') * step['wall'] / step['tables']:.1f} ms of "
        "their CPU a table"
    )
    print_grid(header, rows)
    print("Commands per table on each primary (calls / µs of Redis's own time)")
    cells = []
    for i in range(len(step["used"])):
        o = per_ticket(step, i)
        shown = [
            f"{SEATS * o[f'{c}.calls']:.1f} / {SEATS * o[f'{c}.usec']:.0f}"
            if o[f"{c}.calls"]
            else "-"
            for c in SHOWN
        ]
        cells.append([f"primary {i}{marks(step, i)}", *shown])
    print_grid(["primary", *SHOWN], cells)
    home = per_ticket(step, step["home_node"])
    ceiling = 1e6 / (SEATS * home["cpu_main_us"])
    print(
        f"The {{lobby}} primary: {SEATS * home['cpu_main_us']:,.0f} µs a table, so one core at "
        f"100 % opens and fills {ceiling:,.0f} tables/s: {ceiling * MATCH_SECONDS:,.0f} "
        f"tables at once at {MATCH_SECONDS} s a match. commits/table: written with events "
        "(a player's claim has none)."
    )


def print_fanout(steps: list[dict[str, Any]]) -> None:
    """What one more replica costs the slot per ticket: the least-squares
    slope of Redis µs per ticket over the replicas."""
    steps = [s for s in steps if not s["off"]]
    xs = [float(s["replicas"]) for s in steps]
    ys = [per_ticket(s, 0)["cpu_main_us"] for s in steps]
    if len(steps) < 2 or len(set(xs)) < 2:
        return
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    print(
        f"each replica adds {slope:,.0f} µs of Redis CPU per ticket (least squares over "
        f"{', '.join(f'{x:g}' for x in xs)} replicas); {my - slope * mx:,.0f} µs with none"
    )


# -- commits: the lobby store alone --------------------------------------------------------


def _quiet() -> None:
    """The lobby's code logs every ticket and table; a driver makes thousands."""
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


class _NoMatches:
    """The match registry a table's start calls: the match itself is another
    slot's (the match store's), not the lobby's."""

    async def create(self, *args: Any, **kwargs: Any) -> None:
        return None


async def record_cycle() -> tuple[list[Any], list[str]]:
    """The ten lobby transactions of one quick play table, as the lobby's
    code makes them (on an in-memory store): four players' claims and their
    four tickets asked for, the placement, the start; and the ids in them,
    to be replaced for each replay. (On a cluster the claims are on the
    players' shards, the other six on the queue's.)"""
    from spades_server.lobby.context import Context, Settings
    from spades_server.lobby.docs import TicketDoc, ticket_key
    from spades_server.lobby.quickplay import QuickPlay
    from spades_server.lobby.seat_keys import SeatKeys
    from spades_server.lobby.tables import Tables
    from spades_server.players import Player
    from spades_server.store.lobby import Tx
    from spades_server.store.lobby_memory import MemoryLobby

    class Recording(MemoryLobby):
        def __init__(self) -> None:
            super().__init__()
            self.txs: list[Tx] = []

        async def commit(self, tx: Tx) -> int | None:
            self.txs.append(tx)
            return await super().commit(tx)

    store = Recording()
    ctx = Context(store, None, _NoMatches(), SeatKeys(b"k" * 32), Settings())
    tables = Tables(ctx)
    quickplay = QuickPlay(ctx, tables)
    players = [Player(f"slot-player-{secrets.token_hex(8)}", "Slot Player") for _ in range(SEATS)]
    tickets = [(await quickplay.ask(p, lpb.QuickPlayRequest()))[0] for p in players]
    await quickplay.place(tickets[0].queue)
    made = len(store.txs)
    assert made == CYCLE, f"quick play made {made} commits, not {CYCLE}"
    (doc,) = await store.get([ticket_key(tickets[0].id)])
    assert doc is not None
    table = TicketDoc.from_bytes(doc.data).table
    ids = [t.id for t in tickets] + [p.id for p in players] + [table]
    return store.txs, ids


def renamed(tx: Any, pairs: list[tuple[str, str]]) -> Any:
    """``tx`` with every id replaced (an id's replacement has its length)."""
    from spades_server.store.lobby import Tx

    bpairs = [(a.encode(), b.encode()) for a, b in pairs]

    def s(x: str) -> str:
        for a, b in pairs:
            x = x.replace(a, b)
        return x

    def b(x: bytes) -> bytes:
        for a2, b2 in bpairs:
            x = x.replace(a2, b2)
        return x

    return Tx(
        expect={s(k): v for k, v in tx.expect.items()},
        put={s(k): b(v) for k, v in tx.put.items()},
        ttl_ms={s(k): v for k, v in tx.ttl_ms.items()},
        delete=[s(k) for k in tx.delete],
        zadd=[(s(n), s(m), score) for n, m, score in tx.zadd],
        zrem=[(s(n), s(m)) for n, m in tx.zrem],
        events=[b(e) for e in tx.events],
    )


def cycle_pairs(ids: list[str], index: int, n: int) -> list[tuple[str, str]]:
    """The recorded cycle's ids and cycle ``n``'s of driver ``index``: each
    as long as the one it replaces, so that every size stays the same."""
    from spades_server.lobby.docs import player_key

    pairs = [(old, f"{index:x}{k:x}{n:0{len(old) - 2}x}") for k, old in enumerate(ids)]
    # A player's document is under a hash of the id (as long).
    return pairs + [(player_key(a), player_key(b)) for a, b in pairs[SEATS : 2 * SEATS]]


def resp(parts: list[Any]) -> bytes:
    """A command as redis-py's encoder puts it on the wire."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class Window:
    """Commits counted from ``start`` to ``end`` (wall clock), and the
    cycle numbers a driver's tasks take in turn."""

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end
        self.counts = {"commits": 0, "refused": 0, "cycles": 0}
        self.cycles = itertools.count()

    def count(self, what: str) -> None:
        if self.start <= time.time() < self.end:
            self.counts[what] += 1

    def open(self) -> bool:
        return time.time() < self.end


async def one_cycle(lobby: Any, cycle: list[Any], w: Window) -> None:
    """A table's ten commits as replicas make them: the four players' asks
    at once (each its claim, then its ticket), then the placement, then the
    start."""

    async def commit(tx: Any) -> None:
        w.count("commits" if await lobby.commit(tx) is not None else "refused")

    async def ask(claim: Any, ticket: Any) -> None:
        await commit(claim)
        await commit(ticket)

    await asyncio.gather(*(ask(cycle[2 * i], cycle[2 * i + 1]) for i in range(SEATS)))
    for tx in cycle[2 * SEATS :]:
        await commit(tx)
    w.count("cycles")


async def store_task(lobby: Any, txs: list[Any], ids: list[str], index: int, w: Window) -> None:
    """Tables placed through ``RedisLobby.commit``, one after another."""
    while w.open():
        pairs = cycle_pairs(ids, index, next(w.cycles))
        await one_cycle(lobby, [renamed(tx, pairs) for tx in txs], w)


async def paced_task(
    lobby: Any, txs: list[Any], ids: list[str], index: int, w: Window, rate: float
) -> None:
    """Tables placed at ``rate`` commits a second (a table every ten), each
    started on time whether or not the last one is done (up to
    PACED_IN_FLIGHT at once: past that the rate falls, and shows it)."""
    interval = CYCLE / rate
    running: set[asyncio.Task[None]] = set()
    due = time.monotonic()
    while w.open():
        if len(running) >= PACED_IN_FLIGHT:
            await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for done in [t for t in running if t.done()]:
            running.discard(done)
            done.result()  # a failed commit fails the step
        pairs = cycle_pairs(ids, index, next(w.cycles))
        running.add(asyncio.create_task(one_cycle(lobby, [renamed(tx, pairs) for tx in txs], w)))
        due += interval
        await asyncio.sleep(max(0.0, due - time.monotonic()))
    await asyncio.gather(*running)


async def wire_task(
    url: str, templates: list[bytes], ids: list[str], index: int, w: Window
) -> None:
    """The same commits as ``store_task``'s, as bytes on a connection of
    its own, one at a time."""
    host, _, port = url.removeprefix("redis://").partition("/")[0].partition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        while w.open():
            pairs = [(a.encode(), b.encode()) for a, b in cycle_pairs(ids, index, next(w.cycles))]
            for template in templates:
                command = template
                for a, b in pairs:
                    command = command.replace(a, b)
                writer.write(command)
                reply = await reader.readline()
                if not reply.startswith(b":"):
                    raise RuntimeError(f"the commit script answered {reply!r}")
                w.count("refused" if reply.startswith(b":-") else "commits")
            w.count("cycles")
    finally:
        writer.close()


def driver(
    conn: Connection,
    url: str,
    client: str,
    index: int,
    tasks: int,
    start: float,
    end: float,
    rate: float = 0.0,
) -> None:
    """A process placing tables with ``tasks`` tasks from ``start`` to ``end``
    (wall clock), or at ``rate`` commits a second if given; sends the commits
    it made in between, and the refused.

    ``client`` store: each commit through ``RedisLobby.commit``, as a replica
    makes it. wire: the same EVALSHA, byte for byte (``RedisLobby``'s own
    KEYS and ARGV), written on a connection of the task's own, one at a time
    as a pool's connection carries them; Redis sees the same requests, and
    the driver spends a fraction of the CPU, so that two cores can bring
    Redis's one to saturation."""
    _quiet()
    from spades_server.store.lobby_redis import RedisLobby
    from spades_server.store.redis import RedisStore

    async def main() -> dict[str, int]:
        txs, ids = await record_cycle()
        connections = SEATS * (PACED_IN_FLIGHT if rate else tasks) + 4
        store = RedisStore(url, PREFIX, max_connections=connections)
        lobby = RedisLobby(store)
        w = Window(start, end)
        try:
            if client == "store" and rate:
                await paced_task(lobby, txs, ids, index, w, rate)
            elif client == "store":
                await asyncio.gather(*(store_task(lobby, txs, ids, index, w) for _ in range(tasks)))
            else:
                sha = await store._redis.script_load(lobby._commit.script)
                templates = []
                for tx in txs:
                    keys, argv = lobby._script_args(tx)
                    templates.append(resp(["EVALSHA", sha, len(keys), *keys, *argv]))
                await asyncio.gather(
                    *(wire_task(url, templates, ids, index, w) for _ in range(tasks))
                )
        finally:
            await lobby.close()
            await store.close()
        return w.counts

    conn.send(asyncio.run(main()))


def followers(conn: Connection, url: str, count: int) -> None:
    """A process with ``count`` lobby stores that each follow the feed as a
    replica's does (a connection of its own, ``XREAD BLOCK``), until told to
    stop; sends the events they were given."""
    _quiet()
    from spades_server.store.lobby_redis import RedisLobby
    from spades_server.store.redis import RedisStore

    async def main() -> int:
        stores = [RedisStore(url, PREFIX) for _ in range(count)]
        lobbies = [RedisLobby(store) for store in stores]
        seen = [0]

        def told(entries: list[tuple[int, bytes]], reset: bool) -> None:
            seen[0] += len(entries)

        for lobby in lobbies:
            lobby.follow(told, after=None)
        conn.send("following")
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        for lobby, store in zip(lobbies, stores, strict=True):
            await lobby.close()
            await store.close()
        return seen[0]

    conn.send(asyncio.run(main()))


def commits_step(
    args: argparse.Namespace,
    workdir: Path,
    client: str,
    tasks: int,
    following: int,
    rate: float = 0.0,
) -> dict[str, Any]:
    """One step: ``following`` followers (over at most two processes), the
    drivers (one when paced at ``rate``), and Redis measured meanwhile."""
    procs = Procs(workdir)
    workdir.mkdir()
    try:
        rp = RedisProcess(workdir / "redis", None)
        procs.redis = rp
        hosts = min(following, FOLLOWER_PROCESSES)
        shares = [following // hosts + (i < following % hosts) for i in range(hosts)]
        watching = [procs.client(followers, rp.url, n) for n in shares]
        for _, conn in watching:
            if recv(conn, START_SLACK_S, "a follower") != "following":
                raise SystemExit("a follower did not start")
        # Every driver starts at once on the wall clock, after its imports
        # and its recording of a cycle.
        start = time.time() + DRIVER_START_S + DRIVER_WARM_S
        end = start + args.seconds
        count = 1 if rate else args.drivers
        drivers = [
            procs.client(driver, rp.url, client, i, tasks, start, end, rate) for i in range(count)
        ]
        meter = GroupMeter(
            {
                "redis": [rp.pid],
                "drivers": [p.pid or 0 for p, _ in drivers],
                "followers": [p.pid or 0 for p, _ in watching],
            }
        )
        time.sleep(max(0.0, start - time.time()))
        before = redis_counters(rp.client)
        meter.start()
        time.sleep(max(0.0, end - time.time()))
        cpu = meter.stop()
        used = delta(before, redis_counters(rp.client))
        counts = [recv(conn, PHASE_SLACK_S, "a driver") for _, conn in drivers]
        for _, conn in watching:
            conn.send("stop")
        events = [recv(conn, PHASE_SLACK_S, "a follower") for _, conn in watching]
        return {
            "client": client,
            "tasks": tasks,
            "rate": rate,
            "drivers": count,
            "followers": following,
            "commits": sum(c["commits"] for c in counts),
            "refused": sum(c["refused"] for c in counts),
            "cycles": sum(c["cycles"] for c in counts),
            "events_followed": sum(events),
            "used": used,
            "cpu": cpu,
        }
    finally:
        procs.stop_all()


def commit_cost(step: dict[str, Any]) -> float:
    """Redis main thread CPU µs per commit."""
    return 1e6 * step["used"]["cpu_main"] / max(1, step["commits"])


def print_commits(steps: list[dict[str, Any]]) -> None:
    print("\nThe lobby store alone: quick play's commits on one Redis (10 a table: 4 players'")
    print("claims, 4 tickets, the placement, the start)")
    header = ["client", "drivers x tasks", "followers", "commits/s", "Redis %", "drivers %"]
    header += ["Redis µs/commit", "script µs/commit", "ceiling commits/s", "= tickets/s"]
    header += ["events/XREAD", "µs/event/follower", "B in / out per commit"]
    rows = []
    for s in steps:
        u, wall = s["used"], s["cpu"]["wall"]
        n = max(1, s["commits"])
        us = commit_cost(s)
        ceiling = 1e6 / us
        # Every event (an XADD in the commit script) goes to every follower:
        # what Redis spends on a follower is the step's cost over the same
        # step's without followers.
        events = u.get("xadd.calls", 0.0)
        alone = [
            t
            for t in steps
            if (t["client"], t["tasks"], t["followers"]) == (s["client"], s["tasks"], 0)
        ]
        per_follower = "-"
        if s["followers"] and alone and events:
            extra = (us - commit_cost(alone[0])) * n / (events * s["followers"])
            per_follower = f"{extra:.1f}"
        xread = u.get("xread.calls", 0.0)
        rows.append(
            [
                s["client"],
                f"{s['drivers']} x {s['tasks']}",
                str(s["followers"]),
                f"{s['commits'] / wall:,.0f}",
                f"{100 * u['cpu_main'] / wall:.0f}",
                f"{percent(s['cpu'], 'drivers'):.0f}",
                f"{us:.1f}",
                f"{u.get('evalsha.usec', 0.0) / n:.1f}",
                f"{ceiling:,.0f}",
                f"{ceiling * SEATS / CYCLE:,.0f}",
                f"{s['followers'] * events / xread:.1f}" if xread and s["followers"] else "-",
                per_follower,
                f"{u['bytes_in'] / n:,.0f} / {u['bytes_out'] / n:,.0f}",
            ]
        )
        if s["refused"]:
            rows[-1][3] += f" ({s['refused']} refused)"
    print_grid(header, rows)
    print(
        "Redis µs/commit: the main thread's CPU (INFO cpu) / commits; script µs: EVALSHA's own "
        f"time (commandstats); ceiling: 10^6 / Redis µs; tickets/s: 4 tickets a {CYCLE} commits; "
        "µs/event/follower: the Redis µs a follower adds per event (over the step without "
        "followers); events/XREAD: how many a follower's read carries."
    )


def print_followers(steps: list[dict[str, Any]]) -> None:
    rate = steps[0]["rate"]
    print(f"\nFollowers of the feed, commits paced at {rate:,.0f}/s (store client, one driver)")
    header = ["followers", "commits/s", "events/s", "Redis %", "Redis µs/commit"]
    header += ["events/XREAD", "µs/event/follower", "B out/event/follower"]
    base = next((t for t in steps if t["followers"] == 0), None)
    rows = []
    for s in steps:
        u, wall = s["used"], s["cpu"]["wall"]
        events = u.get("xadd.calls", 0.0)
        xread = u.get("xread.calls", 0.0)
        f = s["followers"]
        cost, out = "-", "-"
        if f and base is not None and events:
            # Per commit above the base's, so that a step that committed
            # less than asked (its drivers short of CPU) is not credited for
            # it; over the events each follower was given.
            n, b = max(1, s["commits"]), max(1, base["commits"])
            extra = u["cpu_main"] / n - base["used"]["cpu_main"] / b
            sent = u["bytes_out"] / n - base["used"]["bytes_out"] / b
            per_commit = events * f / n
            cost = f"{1e6 * extra / per_commit:.1f}"
            out = f"{sent / per_commit:,.0f}"
        rows.append(
            [
                str(f),
                f"{s['commits'] / wall:,.0f}"
                + (" (behind)" if s["commits"] < 0.9 * rate * wall else ""),
                f"{events / wall:,.0f}",
                f"{100 * u['cpu_main'] / wall:.1f}",
                f"{commit_cost(s):.1f}",
                f"{f * events / xread:.1f}" if xread and f else "-",
                cost,
                out,
            ]
        )
    print_grid(header, rows)
    print(
        "µs/event/follower: Redis main thread CPU per commit above the step without "
        "followers, over the events per commit times the followers; B out likewise. "
        "(behind): the driver, short of CPU, committed less than asked."
    )


# -- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    redis_binary()
    _quiet()
    print("The lobby's slot on one Redis core (bench/lobby_slot.py)")
    print(f"python  {platform.python_implementation()} {platform.python_version()}")
    print(f"cpu     {os.cpu_count()} cores, shared by Redis, the servers or drivers and the bench")
    with tempfile.TemporaryDirectory(prefix="spades-bench-slot-") as tmp:
        root = Path(tmp)
        if "quickplay" in args.parts or "cluster" in args.parts:
            steps = []
            if "quickplay" in args.parts:
                for r in args.replicas:
                    steps.append(run_quickplay(args, root / f"single{r}", r, cluster=False))
            if "cluster" in args.parts:
                for lanes in args.lanes:
                    workdir = root / f"cluster{lanes}"
                    steps.append(run_quickplay(args, workdir, 3, cluster=True, lanes=lanes))
            print_quickplay(steps)
        if "opened" in args.parts:
            step = run_quickplay(args, root / "opened", 3, cluster=True, flow="opened")
            print_opened(step)
        if "fanout" in args.parts:
            steps = []
            for r, off in args.fanout_replicas:
                workdir = root / f"fanout{r}-{off}"
                steps.append(run_quickplay(args, workdir, r, False, args.fanout_rate, off))
            print_quickplay(steps)
            print_fanout(steps)
        if "commits" in args.parts:
            steps = []
            for client in args.clients:
                ladder = args.tasks if client == "store" else args.wire_tasks
                for t in ladder:
                    steps.append(commits_step(args, root / f"{client}{t}", client, t, 0))
                for f in args.followers:
                    steps.append(commits_step(args, root / f"{client}f{f}", client, ladder[-1], f))
            print_commits(steps)
        if "followers" in args.parts:
            steps = []
            for f in args.paced_followers:
                workdir = root / f"paced{f}"
                steps.append(commits_step(args, workdir, "store", 1, f, args.paced_rate))
            print_followers(steps)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--parts", default="quickplay,cluster,opened,fanout,commits,followers")
    ap.add_argument("--tickets", type=int, default=6000, help="quick play: tickets (6000)")
    ap.add_argument("--concurrency", type=int, default=200, help="players at once (200)")
    ap.add_argument("--replicas", default="1,3", help="quickplay: replicas per step (1,3)")
    ap.add_argument("--lanes", default="1,4", help="cluster: --quickplay-lanes per step (1,4)")
    ap.add_argument(
        "--fanout-replicas",
        default="1,3,6",
        help="fanout: replicas per step; 3+3: three that serve the lobby, three --lobby off",
    )
    ap.add_argument("--fanout-rate", type=float, default=100.0, help="fanout: tickets/s (100)")
    ap.add_argument("--fanout-tickets", type=int, default=2000, help="fanout: tickets (2000)")
    ap.add_argument("--drivers", type=int, default=2, help="commits: driver processes (2)")
    ap.add_argument(
        "--clients",
        default="store,wire",
        help="commits: store (RedisLobby.commit), wire (the same requests, cheaper to send)",
    )
    ap.add_argument("--tasks", default="1,4,16", help="commits, store: tasks per driver per step")
    ap.add_argument("--wire-tasks", default="8,64", help="commits, wire: the same")
    ap.add_argument("--followers", default="1,3", help="commits: followers, at the most tasks")
    ap.add_argument(
        "--paced-rate", type=float, default=600.0, help="followers: commits a second (600)"
    )
    ap.add_argument("--paced-followers", default="0,8,32", help="followers: per step (0,8,32)")
    ap.add_argument("--seconds", type=float, default=10.0, help="commits: seconds measured (10)")
    args = ap.parse_args(argv)
    args.parts = args.parts.split(",")
    args.replicas = [int(n) for n in args.replicas.split(",")]
    args.lanes = [int(n) for n in args.lanes.split(",")]
    args.fanout_replicas = [
        (int(n.partition("+")[0]), int(n.partition("+")[2] or 0))
        for n in args.fanout_replicas.split(",")
    ]
    args.clients = args.clients.split(",")
    args.tasks = [int(n) for n in args.tasks.split(",")]
    args.wire_tasks = [int(n) for n in args.wire_tasks.split(",")]
    args.followers = [int(n) for n in args.followers.split(",") if n]
    args.paced_followers = [int(n) for n in args.paced_followers.split(",")]
    if args.tickets % (SEATS * max(args.lanes)) or args.fanout_tickets % SEATS:
        ap.error(
            f"tickets must be a multiple of {SEATS} (times the most --lanes): every ticket is "
            "placed at a table of players"
        )
    return args


if __name__ == "__main__":
    raise SystemExit(main())
