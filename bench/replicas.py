#!/usr/bin/env python3
"""Replicas on Redis: the server on one shared Redis against the embedded SQLite
store, the wake-up of follower replicas, failover after ``kill -9`` and Redis's
memory per match, in one run on loopback.

It starts its own ``redis-server`` (Debian's, ``--port`` a free loopback port,
``--bind 127.0.0.1``, files in a temporary folder, ``--save ''``, ``--appendonly
no`` unless ``--aof always|everysec|no`` asks for AOF with that ``appendfsync``)
and its own server processes (``python3 -m spades_server.main``, as
bench/server.py starts them: ``--actions-per-second 1000000``; with ``--store
redis --redis-url ... --redis-prefix P``, each part of the run on its own
prefix). Every match has four HUMAN seats and no turn timer: no bot, no
takeover by the due set; a replica's matches move elsewhere because their
clients call another replica.

Parts (``--parts``, all by default, in this order):

* **load**: the load of bench/server.py (``--matches`` tables of four seats,
  one ``Play`` call per seat, each seat a bot-like client that acts when its
  events show its turn, random legal actions, ``action_id`` and
  ``expected_seq``; a finished match is replaced) on four configurations at
  once, each with its own client process and its matches set up beforehand:
  ``sqlite1`` one replica on SQLite (synchronous FULL), ``redis1`` one replica
  on Redis, ``redis3`` three replicas on the one Redis, table k created on
  replica k % 3 and its seat i on replica (i + k) % 3, so every action is
  caught up by the other two replicas through the store, and ``cluster1``
  one replica on a Redis Cluster of three primaries (no replicas) started
  beside the one Redis. Only one
  configuration plays at a time (the others' seats hold their next action,
  their streams open); they alternate, ``--rounds`` times, first all paced
  (``--think-ms``: a seat waits 0.5 to 1.5 times it before each action, the
  first action of a table a random part of one hand of think time) then all
  saturated (no think time), so a slow spell of the shared machine weighs on
  each. Measured: accepted actions/s, a Play action's latency (request sent
  -> result received), the time from the result to the action's event on all
  four streams, CPU of the servers, of redis-server and of the clients per
  action; the ratios Redis/SQLite on one replica.
* **scaling**: the wake-up of a follower replica as the matches it holds grow.
  Replicas A and B; M matches (``--scaling-matches``, 10, 100, 1000, each step
  adding to the last) created and played through A (``SubmitAction``, one
  action in flight per match, ``--scaling-rate`` actions/s in all whatever M,
  matches taken in turn, matches with no mercy score so that none ends), each
  with one ``Spectate`` stream on B, so B holds the M matches and follows them
  only through Redis. Measured: A's accepted action -> its event on B's
  stream (p50/p99; B's event may come before A's response reaches the
  client: counted as 0), request sent -> event on B, B's CPU, and from
  Redis's ``CLIENT LIST`` each replica's client connections, how many of them
  are subscribed and their shard channels (``ssub``), and how many of B's
  others sent a command while it was measured (``idle``); connections are
  told apart by their local ports (psutil).
* **failover**: replicas X, Y, Z; ``--failover-matches`` matches created on X,
  their four seats' ``StreamEvents`` streams and actions on X, each match
  played to a random point of its first hand (5 to 52 actions; no action in
  flight at the kill), then ``kill -9`` of X. At once every seat reconnects to
  a survivor (seat i of match k to Y or Z by (i + k) % 2: a match's seats
  split over both): its first call after the kill is ``GetView``, then a
  ``StreamEvents`` stream resumed after the last seq it saw, and the seat to
  act submits its next action; a call or stream that fails is tried again
  with the backoff of the project's clients (spades_client.Backoff: 0.1 s
  doubling to 5 s, jitter 0.5), for up to 30 s. Per match, from its
  seats' reconnect: (a) the last of its four first successful GetViews, (b)
  the new action's event on all four resumed streams. ``--rounds`` kills, each
  of a fresh X. That is the ``view`` flow of ``--failover-flows``; the
  ``play`` flow reconnects as the clients' session does: one ``Play`` call a
  seat, resumed after the last seq it saw, the seat to act sending its
  action on it ((a) is then the first message on all four calls). Each flow
  has its own kills, on one Redis and, with ``--failover-stores cluster``, on
  a 3-primary Redis Cluster.
* **memory**: Redis's ``INFO memory`` used_memory before and after one replica
  creates ``--idle-matches`` matches (after 100 not counted), divided by
  their number; then again after one whole hand (56 actions) was played in
  ``--hand-matches`` of them; and ``MEMORY USAGE`` of a match's keys, by key,
  on 20 of each kind.

Everything started is stopped when the run ends, also on Ctrl-C or SIGTERM;
every wait is bounded.

    python3 bench/replicas.py [--matches 100] [--think-ms 100] [--seconds 15] [--rounds 3]
                              [--aof always|everysec|no] [--parts load,scaling,failover,memory]
                              [--failover-flows play,view] [--failover-stores redis,cluster]
                              [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import random
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, TypeVar

import grpc
import psutil
from spades_server import convert
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc
from spades_server.main import tune_gc

from cpu_usage import GroupMeter as Meter
from cpu_usage import percent, warn_if_disturbed
from load import channel, error_counts, ms, pct, print_grid, retry_delay
from processes import OPERATOR_MD, Procs, RedisProcess, Server, recv, stop_on_signals
from server import ACTIONS_PER_HAND, RESULT_TIMEOUT_S, RULESET_PB, Control, Table
from spades_engine import Match

T = TypeVar("T")

TARGET_RATIO = 0.8  # Redis / SQLite actions/s, one replica
TARGET_FAILOVER_S = 1.0  # p99, from the reconnect
CONFIGS = {
    "sqlite1": "1 replica, SQLite",
    "redis1": "1 replica, Redis",
    "redis3": "3 replicas, one Redis",
    "cluster1": "1 replica, 3-primary Cluster",
}
PARTS = ("load", "scaling", "failover", "memory")
RAMP_S = 1.0  # unmeasured start of every load phase after a configuration's first
SETUP_TIMEOUT_S = 300.0
PHASE_SLACK_S = 120.0
RPC_TIMEOUT_S = 10.0
FAILOVER_GIVE_UP_S = 30.0
STREAM_WAIT_S = 15.0
CREATE_CONCURRENCY = 20
ACTION_KINDS = frozenset({"card_played", "bid_made"})
# The scaling part's matches must not end while they are measured: with random
# bids the classic preset's mercy score ends most within two hands.
ENDLESS_PB = pb.Ruleset(preset="classic", no_mercy_score=True, target_score=100_000)


def clock() -> float:
    return time.perf_counter()


def add_cpu(total: dict[str, float], more: dict[str, float]) -> None:
    for k, v in more.items():
        total[k] = total.get(k, 0.0) + v


# -- output ------------------------------------------------------------------------------


def f_ms(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{ms(seconds):.2f} ms"


def yes(passed: bool) -> str:
    return "yes" if passed else "NO"


# -- part 1: the load on three configurations --------------------------------------------


SETUP_ATTEMPTS = 50  # a table whose match cannot be replaced after this many tries stops


async def keep_playing(table: Table) -> None:
    """Matches one after the other until the client stops. Unlike
    bench/server.py's tables, one whose match failed (the error is recorded) is
    given a new match too, so that the load stays the same."""
    c = table.control
    while not c.stopping:
        await table.play()
        for _ in range(SETUP_ATTEMPTS):
            if c.stopping:
                return
            try:
                await table.setup()
                break
            except grpc.aio.AioRpcError as e:
                c.errors.append(f"set-up of a new match: {e.code().name} {e.details()}"[:200])
                await asyncio.sleep(0.1)
        else:
            return


def load_client(conn: Connection, addresses: list[str], cfg: dict[str, Any]) -> None:
    """One configuration's client process: its tables, then the phases the parent orders."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it
    asyncio.run(_load_client(conn, addresses, cfg))


async def _load_client(conn: Connection, addresses: list[str], cfg: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    channels = [channel(a) for a in addresses]
    stubs = [spades_pb2_grpc.SpadesServiceStub(c) for c in channels]
    n = len(stubs)
    control = Control(
        think_s=0.0, via="play", stagger_s=cfg["stagger_s"], turn_timer_ms=cfg["turn_timer_ms"]
    )
    rng = random.Random(cfg["seed"])
    tables = [
        Table(
            stubs[k % n],
            control,
            random.Random(rng.getrandbits(64)),
            # Spread: seat i of table k on replica (i + k) % n, so that every
            # replica follows every match; together: all four on replica k % n.
            [stubs[k % n if cfg.get("together") else (i + k) % n] for i in range(4)],
        )
        for k in range(cfg["matches"])
    ]
    setups = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def setup(t: Table) -> None:
        async with setups:
            await t.setup()

    await asyncio.gather(*(setup(t) for t in tables))
    tune_gc()  # the server's own tuning: the clients share its two cores
    playing = [asyncio.create_task(keep_playing(t)) for t in tables]
    conn.send("ready")
    while True:
        order = await loop.run_in_executor(None, conn.recv)
        if order[0] != "actions":  # ("stop",)
            break
        _, ramp, seconds, think_s = order
        control.think_s = think_s
        control.submit, control.fanout = [], []
        control.before_response = 0
        base, errors = control.actions, len(control.errors)
        t0 = clock()
        control.start, control.end = t0 + ramp, t0 + ramp + seconds
        control.gate.set()
        await asyncio.sleep(ramp + seconds)
        control.gate.clear()
        deadline = clock() + 30.0
        while control.submitting and clock() < deadline:  # let the calls in flight finish
            await asyncio.sleep(0.005)
        conn.send(
            {
                "actions": control.actions - base,
                "seconds": seconds,
                "submit": control.submit,
                "fanout": control.fanout,
                "before_response": control.before_response,
                "errors": control.errors[errors:],
            }
        )
    control.stopping = True
    control.gate.set()
    try:
        await asyncio.wait_for(asyncio.gather(*playing), timeout=RESULT_TIMEOUT_S + 15)
    except TimeoutError:
        control.errors.append(f"the tables did not stop within {RESULT_TIMEOUT_S + 15:g} s")
    conn.send(
        {
            "matches_started": control.matches_started,
            "matches_finished": control.matches_finished,
            "errors": error_counts(control.errors),
            "error_count": len(control.errors),
        }
    )
    for c in channels:
        await c.close()


@dataclass
class LoadConfig:
    key: str
    servers: list[Server]
    conn: Connection
    proc: BaseProcess
    first: bool = True
    results: dict[str, dict[str, Any]] = field(default_factory=dict)


def _new_totals() -> dict[str, Any]:
    return {
        "actions": 0,
        "seconds": 0.0,
        "submit": [],
        "fanout": [],
        "before_response": 0,
        "errors": [],
        "cpu": {},
    }


def run_load(args: argparse.Namespace, procs: Procs) -> dict[str, Any]:
    configs: list[LoadConfig] = []
    redis_pids = {key: [procs.redis.pid] for key in args.configs if procs.redis is not None}
    for key in args.configs:
        if key == "sqlite1":
            servers = [procs.replica("load-sqlite", "sqlite")]
        elif key == "redis1":
            servers = [procs.replica("load-redis1", "redis", "load1")]
        elif key == "cluster1":
            cluster = procs.cluster("load-cluster", 3)
            servers = [procs.replica("load-cluster1", "redis", "loadc", redis=cluster)]
            redis_pids[key] = cluster.pids
        else:
            servers = [procs.replica(f"load-redis3-{i}", "redis", "load3") for i in range(3)]
        cfg = {
            "matches": args.matches,
            "seed": args.seed,
            "stagger_s": args.stagger_s,
            "turn_timer_ms": args.turn_timer_ms,
        }
        p, conn = procs.client(load_client, [s.address for s in servers], cfg)
        configs.append(LoadConfig(key, servers, conn, p))
    t0 = clock()
    for c in configs:
        if recv(c.conn, SETUP_TIMEOUT_S) != "ready":
            raise SystemExit(f"the client of {c.key} failed during set-up")
    setup_s = clock() - t0
    kinds = [("paced", args.think_ms / 1000.0)]
    if args.saturated:
        kinds.append(("saturated", 0.0))
    for c in configs:
        c.results = {kind: _new_totals() for kind, _ in kinds}
    for r in range(args.rounds):
        for kind, think_s in kinds:
            order = configs[r % len(configs) :] + configs[: r % len(configs)]
            for c in order:
                ramp = args.warmup + args.stagger_s if c.first else RAMP_S
                c.first = False
                seconds = args.seconds / args.rounds
                meter = Meter(
                    {
                        "servers": [s.pid for s in c.servers],
                        "redis": redis_pids.get(c.key, []),
                        "clients": [c.proc.pid or 0],
                        "idle": [
                            p
                            for o in configs
                            if o is not c
                            for p in [*(s.pid for s in o.servers), o.proc.pid or 0]
                        ],
                    }
                )
                c.conn.send(("actions", ramp, seconds, think_s))
                time.sleep(ramp)  # CPU is measured from the end of the ramp to the answer
                meter.start()
                answer = recv(c.conn, seconds + PHASE_SLACK_S)
                cpu = meter.stop()
                t = c.results[kind]
                t["actions"] += answer["actions"]
                t["seconds"] += answer["seconds"]
                t["submit"] += answer["submit"]
                t["fanout"] += answer["fanout"]
                t["before_response"] += answer["before_response"]
                t["errors"] += answer["errors"]
                add_cpu(t["cpu"], cpu)
    out: dict[str, Any] = {"setup_seconds": setup_s, "configs": {}}
    for c in configs:
        c.conn.send(("stop",))
    for c in configs:
        final = recv(c.conn, 60.0)
        c.proc.join(timeout=30)
        summary: dict[str, Any] = dict(final)
        for kind, t in c.results.items():
            summary[kind] = _load_summary(t)
        out["configs"][c.key] = summary
    procs.stop([s for c in configs for s in c.servers])
    return out


def _load_summary(t: dict[str, Any]) -> dict[str, Any]:
    submit, fanout = sorted(t["submit"]), sorted(t["fanout"])
    cpu = t["cpu"]
    n = t["actions"] or 1
    return {
        "actions": t["actions"],
        "measured_seconds": t["seconds"],
        "actions_per_second": t["actions"] / t["seconds"] if t["seconds"] else float("nan"),
        "action_ms_p50": ms(pct(submit, 0.50)),
        "action_ms_p99": ms(pct(submit, 0.99)),
        "action_ms_max": ms(submit[-1]) if submit else float("nan"),
        "fanout_ms_p50": ms(pct(fanout, 0.50)),
        "fanout_ms_p99": ms(pct(fanout, 0.99)),
        "fanout_samples": len(fanout),
        "errors": len(t["errors"]),
        "error_kinds": error_counts(t["errors"]),
        "delivered_before_result": t["before_response"],
        "cpu_percent": {
            k: percent(cpu, k) for k in ("servers", "redis", "clients", "idle", "other")
        },
        "cpu_us_per_action": {
            k: 1e6 * cpu.get(k, 0.0) / n for k in ("servers", "redis", "clients")
        },
    }


def print_load(r: dict[str, Any], args: argparse.Namespace) -> None:
    kinds = [("paced", f"paced, think time {args.think_ms:g} ms")]
    if args.saturated:
        kinds.append(("saturated", "saturated, no think time"))
    for kind, title in kinds:
        print(f"Load, {title}: {args.matches} matches x 4 seats on Play calls")
        rows = []
        for key, c in r["configs"].items():
            s = c[kind]
            cpu, per = s["cpu_percent"], s["cpu_us_per_action"]
            rows.append(
                [
                    CONFIGS[key],
                    f"{s['actions_per_second']:,.0f}",
                    f"{s['action_ms_p50']:.2f} ms",
                    f"{s['action_ms_p99']:.2f} ms",
                    f"{s['fanout_ms_p99']:.2f} ms",
                    f"{cpu['servers']:.0f} %",
                    f"{cpu['redis']:.0f} %",
                    f"{cpu['clients']:.0f} %",
                    f"{cpu['idle']:.0f} %",
                    f"{cpu['other']:.0f} %",
                    f"{per['servers'] + per['redis']:,.0f} us",
                    f"{s['errors']:,}",
                ]
            )
        print_grid(
            [
                "configuration",
                "actions/s",
                "action p50",
                "action p99",
                "-> 4 streams p99",
                "servers",
                "redis",
                "clients",
                "idle",
                "other",
                "server+redis CPU/action",
                "errors",
            ],
            rows,
        )
        print()
    print(
        f"action: Play request sent -> its result; -> 4 streams: the result -> the action's "
        f"event on all four seats' streams (0 when they came first); CPU in % of one core over "
        f"the measured seconds ({args.seconds:g} s per configuration and kind, in "
        f"{args.rounds} alternating rounds); 'idle': the processes of the configurations "
        f"not playing; 'other': the rest of the machine; set-up of all tables "
        f"{r['setup_seconds']:.1f} s"
    )
    warn_if_disturbed(
        [c[kind]["cpu_percent"]["other"] for c in r["configs"].values() for kind, _ in kinds]
    )
    for key, c in r["configs"].items():
        if c["error_count"]:
            print(f"ERRORS in {key}, {c['error_count']:,} in all (measured or not), by kind:")
            for text, count in c["errors"]:
                print(f"  {count:>6,} x {text}")
    print()


# -- shared by the other parts: matches driven by this process ---------------------------


@dataclass
class Game:
    """A match of four human seats created here, and its engine replica."""

    match_id: str
    seed: int
    md: list[tuple[tuple[str, str], ...]]
    match: Match
    rng: random.Random
    busy: bool = False
    failed: bool = False
    last_seq: int = 0  # the last event of the last action made here
    made: int = 0  # actions made here


async def create_games(
    stub: spades_pb2_grpc.SpadesServiceAsyncStub,
    count: int,
    rng: random.Random,
    ruleset: pb.Ruleset = RULESET_PB,
) -> list[Game]:
    sem = asyncio.Semaphore(CREATE_CONCURRENCY)
    rules = convert.ruleset_from_pb(ruleset)

    async def one(seed: int) -> Game:
        async with sem:
            created = await stub.CreateMatch(
                pb.CreateMatchRequest(
                    ruleset=ruleset,
                    seats=[pb.SeatConfig(name=f"bench {i}") for i in range(4)],
                    seed=seed,
                    has_seed=True,
                ),
                metadata=OPERATOR_MD,
                timeout=RPC_TIMEOUT_S,
            )
        return Game(
            created.match.match_id,
            seed,
            [(("authorization", f"Bearer {t.token}"),) for t in created.seat_tokens],
            Match(rules, seed=seed),
            random.Random(seed),
            last_seq=created.match.last_seq,
        )

    return list(await asyncio.gather(*(one(rng.getrandbits(63)) for _ in range(count))))


async def act(stub: spades_pb2_grpc.SpadesServiceAsyncStub, game: Game) -> tuple[int, float, float]:
    """The seat to act makes a random legal action through ``stub``: (its first
    event's seq, request sent, response received)."""
    seat = game.match.to_act
    action = game.rng.choice(game.match.legal_actions(seat))
    request = pb.SubmitActionRequest(
        match_id=game.match_id,
        action_id=f"b{game.made}",
        action=convert.action_to_pb(action),
        expected_seq=game.last_seq,
    )
    sent = clock()
    response = await stub.SubmitAction(request, metadata=game.md[seat], timeout=RPC_TIMEOUT_S)
    accepted = clock()
    game.match.apply(seat, action)
    game.made += 1
    game.last_seq = response.last_seq
    return int(response.events[0].seq), sent, accepted


class Reader:
    """Reads one server stream in a task: when each action's event came, the last seq."""

    def __init__(self, call: Any) -> None:
        self.call = call
        self.arrivals: dict[int, float] = {}  # an action's first seq -> when it was read
        self.last_seq = 0
        self.error = ""
        self.changed = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while (item := await self.call.read()) is not grpc.aio.EOF:
                now = clock()
                for ev in item.events:
                    if ev.WhichOneof("kind") in ACTION_KINDS:
                        self.arrivals[ev.seq] = now
                    self.last_seq = ev.seq
                self.changed.set()
            self.error = "EOF"
        except asyncio.CancelledError:
            self.error = "cancelled"
        except grpc.aio.AioRpcError as e:
            self.error = e.code().name
        self.changed.set()

    async def wait(self, done: Callable[[Reader], bool], timeout: float) -> bool:
        """Until ``done(self)`` holds (True), the stream ends or ``timeout`` passes."""
        deadline = clock() + timeout
        while not done(self):
            if self.error or clock() >= deadline:
                return False
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), deadline - clock())
        return True

    def first_action_after(self, seq: int) -> float | None:
        times = [t for s, t in self.arrivals.items() if s > seq]
        return min(times) if times else None

    def cancel(self) -> None:
        self.call.cancel()


# -- part 2: the wake-up of a follower replica --------------------------------------------


def redis_connections(
    r: RedisProcess, pids: dict[str, int], recent_s: float
) -> dict[str, dict[str, int]]:
    """Each replica's client connections in Redis's CLIENT LIST, told apart by
    their local ports: how many, how many subscribed, their shard channels,
    and how many of the others sent a command in the last ``recent_s``
    (CLIENT LIST's idle): redis-py's pool keeps every connection it ever
    opened, as many as calls were once in flight together."""
    by_port: dict[int, dict[str, Any]] = {}
    for entry in r.client.client_list():
        by_port[int(str(entry["addr"]).rsplit(":", 1)[1])] = entry
    out = {}
    for name, pid in pids.items():
        ports = {
            c.laddr.port
            for c in psutil.Process(pid).net_connections("tcp")
            if c.raddr and c.raddr.port == r.port
        }
        mine = [by_port[p] for p in ports if p in by_port]
        subscribed = [
            e for e in mine if int(e.get("ssub", 0)) or int(e.get("sub", 0)) or "P" in e["flags"]
        ]
        out[name] = {
            "connections": len(mine),
            "subscribed": len(subscribed),
            "shard_channels": sum(int(e.get("ssub", 0)) for e in mine),
            "commands_used": sum(
                1 for e in mine if e not in subscribed and int(e["idle"]) < recent_s
            ),
        }
    return out


async def _drive(
    stub: spades_pb2_grpc.SpadesServiceAsyncStub,
    games: list[Game],
    rate: float,
    ramp: float,
    seconds: float,
    errors: list[str],
) -> list[tuple[Game, int, float, float]]:
    """Actions through ``stub`` at ``rate`` per second in all, the matches in
    turn, one in flight per match; those sent after ``ramp``:
    (game, first seq, sent, accepted)."""
    made: list[tuple[Game, int, float, float]] = []
    tasks: set[asyncio.Task[None]] = set()
    start = clock()
    measured_from, end = start + ramp, start + ramp + seconds
    interval = 1.0 / rate
    due = start
    turn = 0

    async def one(game: Game) -> None:
        try:
            first, sent, accepted = await act(stub, game)
            if sent >= measured_from:
                made.append((game, first, sent, accepted))
        except grpc.aio.AioRpcError as e:
            game.failed = True
            errors.append(f"SubmitAction: {e.code().name} {e.details()}"[:200])
        finally:
            game.busy = False

    while clock() < end:
        for _ in range(len(games)):
            game = games[turn % len(games)]
            turn += 1
            if not (game.busy or game.failed or game.match.is_over):
                game.busy = True
                task = asyncio.create_task(one(game))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                break
        due += interval
        await asyncio.sleep(max(0.0, due - clock()))
    if tasks:
        await asyncio.wait(tasks, timeout=RPC_TIMEOUT_S * 2)
    return made


async def _scaling(args: argparse.Namespace, procs: Procs, a: Server, b: Server) -> dict[str, Any]:
    assert procs.redis is not None
    rng = random.Random(args.seed)
    errors: list[str] = []
    steps = []
    async with channel(a.address) as ca, channel(b.address) as cb:
        stub_a = spades_pb2_grpc.SpadesServiceStub(ca)
        stub_b = spades_pb2_grpc.SpadesServiceStub(cb)
        games: list[Game] = []
        readers: dict[str, Reader] = {}
        opening = asyncio.Semaphore(CREATE_CONCURRENCY)

        async def follow(game: Game) -> None:
            async with opening:
                call = stub_b.Spectate(pb.SpectateRequest(match_id=game.match_id))
                reader = readers[game.match_id] = Reader(call)
                if not await reader.wait(lambda r: r.last_seq > 0, STREAM_WAIT_S):
                    errors.append(f"Spectate on B: no history ({reader.error or 'timeout'})")

        for m in args.scaling_matches:
            new = await create_games(stub_a, m - len(games), rng, ENDLESS_PB)
            await asyncio.gather(*(follow(g) for g in new))
            games += new
            await asyncio.sleep(0.5)
            meter = Meter(
                {"b": [b.pid], "a": [a.pid], "redis": [procs.redis.pid], "client": [os.getpid()]}
            )
            meter.start()
            made = await _drive(
                stub_a, games, args.scaling_rate, RAMP_S, args.scaling_seconds, errors
            )
            cpu = meter.stop()
            await asyncio.sleep(0.5)  # the last events' way to B
            after, from_sent, before, missing = [], [], 0, 0
            for game, first, sent, accepted in made:
                seen = readers[game.match_id].arrivals.get(first)
                if seen is None:
                    missing += 1
                    continue
                if seen < accepted:
                    before += 1
                after.append(max(0.0, seen - accepted))
                from_sent.append(seen - sent)
            after.sort()
            from_sent.sort()
            conns = redis_connections(procs.redis, {"A": a.pid, "B": b.pid}, args.scaling_seconds)
            steps.append(
                {
                    "matches": m,
                    "actions": len(made),
                    "actions_per_second": len(made) / args.scaling_seconds,
                    "accepted_to_b_ms_p50": ms(pct(after, 0.50)),
                    "accepted_to_b_ms_p99": ms(pct(after, 0.99)),
                    "sent_to_b_ms_p50": ms(pct(from_sent, 0.50)),
                    "sent_to_b_ms_p99": ms(pct(from_sent, 0.99)),
                    "on_b_before_accepted": before,
                    "never_on_b": missing,
                    "cpu_percent": {
                        k: percent(cpu, k) for k in ("a", "b", "redis", "client", "other")
                    },
                    "redis_clients": conns,
                }
            )
        for reader in readers.values():
            reader.cancel()
        await asyncio.gather(*(r.task for r in readers.values()))
    return {"steps": steps, "errors": errors[:20], "rate": args.scaling_rate}


def run_scaling(args: argparse.Namespace, procs: Procs) -> dict[str, Any]:
    # B holds up to 1,000 streams of one client connection (the default allows 1,000 calls).
    extra = ("--max-calls-per-connection", "10000")
    a = procs.replica("scaling-a", "redis", "scaling", extra)
    b = procs.replica("scaling-b", "redis", "scaling", extra)
    try:
        return asyncio.run(_scaling(args, procs, a, b))
    finally:
        procs.stop([a, b])


def print_scaling(r: dict[str, Any], args: argparse.Namespace) -> None:
    print(
        f"Wake-up of a follower replica: M matches played through replica A at "
        f"{r['rate']:g} actions/s in all, one Spectate stream each on replica B"
    )
    rows = []
    for s in r["steps"]:
        c = s["redis_clients"]
        rows.append(
            [
                f"{s['matches']:,}",
                f"{s['actions_per_second']:,.0f}",
                f"{s['accepted_to_b_ms_p50']:.2f} ms",
                f"{s['accepted_to_b_ms_p99']:.2f} ms",
                f"{s['sent_to_b_ms_p50']:.2f} ms",
                f"{s['sent_to_b_ms_p99']:.2f} ms",
                f"{s['cpu_percent']['b']:.0f} %",
                f"{c['A']['connections']} ({c['A']['subscribed']})",
                f"{c['B']['connections']} ({c['B']['subscribed']})",
                f"{c['B']['commands_used']}",
                f"{c['B']['shard_channels']:,}",
            ]
        )
    print_grid(
        [
            "M",
            "actions/s",
            "accepted->B p50",
            "p99",
            "sent->B p50",
            "p99",
            "B CPU",
            "A conns (subscr.)",
            "B conns (subscr.)",
            "B used",
            "B ssub",
        ],
        rows,
    )
    print()
    notes = ", ".join(
        f"M={s['matches']:,}: {s['on_b_before_accepted']:,} of {s['actions']:,} on B before A's "
        f"response, {s['never_on_b']} never"
        for s in r["steps"]
    )
    print(
        f"accepted->B: A's SubmitAction response received -> the action's event read from B's "
        f"stream (0 when B's came first: {notes}); sent->B: from the request; "
        f"{args.scaling_seconds:g} s measured per step after {RAMP_S:g} s; conns: the replica's "
        f"connections in Redis's CLIENT LIST (of which subscribed: the wake-up's), ssub: their "
        f"shard channels; used: B's other connections that sent a command in the last "
        f"{args.scaling_seconds:g} s (the rest are left in redis-py's pool by the set-up's "
        f"bursts)"
    )
    warn_if_disturbed([s["cpu_percent"]["other"] for s in r["steps"]])
    for e in r["errors"][:10]:
        print(f"  ERROR {e}")
    print()


# -- part 3: failover after kill -9 ----------------------------------------------------------


async def until_ok(call: Callable[[], Awaitable[T]], give_up: float, failures: list[str]) -> T:
    """``call()`` until it succeeds, with the clients' backoff; fails past ``give_up``."""
    for retry in range(1_000_000):
        try:
            return await call()
        except grpc.aio.AioRpcError as e:
            failures.append(f"{e.code().name} {e.details()}"[:120])
            if clock() >= give_up:
                raise
            await asyncio.sleep(retry_delay(retry))
    raise AssertionError("unreachable")


async def _prepare(
    stub_x: spades_pb2_grpc.SpadesServiceAsyncStub, count: int, rng: random.Random
) -> tuple[list[Game], list[list[Reader]]]:
    """Matches on X with their four seats' streams on X, each played to a
    random point of its first hand, every stream up to date."""
    games = await create_games(stub_x, count, rng)
    streams = [
        [
            Reader(stub_x.StreamEvents(pb.StreamEventsRequest(match_id=g.match_id), metadata=md))
            for md in g.md
        ]
        for g in games
    ]
    sem = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def play_to(game: Game, actions: int) -> int:
        async with sem:
            first = 0
            for _ in range(actions):
                first, _, _ = await act(stub_x, game)
            return first

    lasts = await asyncio.gather(*(play_to(g, rng.randint(5, 52)) for g in games))
    for readers, last in zip(streams, lasts, strict=True):
        for reader in readers:
            if not await reader.wait(lambda r, s=last: s in r.arrivals, STREAM_WAIT_S):
                raise SystemExit(f"a stream on X did not show seq {last}: {reader.error}")
    return games, streams


async def _resumed(
    game: Game,
    seat: int,
    stub: spades_pb2_grpc.SpadesServiceAsyncStub,
    after: int,
    kill_seq: int,
    give_up: float,
    failures: list[str],
) -> float:
    """The seat's stream resumed after ``after``, opened again (with the
    clients' backoff) if it fails, until it shows an action after
    ``kill_seq``: when it did (NaN if not by ``give_up``)."""
    for retry in range(1_000_000):
        reader = Reader(
            stub.StreamEvents(
                pb.StreamEventsRequest(match_id=game.match_id, after_seq=after),
                metadata=game.md[seat],
            )
        )
        await reader.wait(
            lambda r: r.first_action_after(kill_seq) is not None, max(0.0, give_up - clock())
        )
        arrival = reader.first_action_after(kill_seq)
        reader.cancel()
        await reader.task
        if arrival is not None:
            return arrival
        failures.append(f"a resumed stream ended: {reader.error or 'timeout'}")
        if clock() >= give_up:
            return float("nan")
        after = max(after, reader.last_seq)
        await asyncio.sleep(retry_delay(retry))
    return float("nan")


async def _reconnect(
    game: Game,
    stubs: list[spades_pb2_grpc.SpadesServiceAsyncStub],
    last_seen: list[int],
    failures: list[str],
) -> dict[str, float]:
    """The four seats of one match call the survivors; times from their reconnect."""
    t0 = clock()
    give_up = t0 + FAILOVER_GIVE_UP_S
    acting = game.match.to_act
    kill_seq = game.last_seq

    async def seat_flow(
        seat: int, stub: spades_pb2_grpc.SpadesServiceAsyncStub
    ) -> tuple[float, float]:
        request = pb.GetViewRequest(match_id=game.match_id)
        view = (
            await until_ok(
                lambda: stub.GetView(request, metadata=game.md[seat], timeout=RPC_TIMEOUT_S),
                give_up,
                failures,
            )
        ).view
        viewed = clock()
        stream = asyncio.create_task(
            _resumed(game, seat, stub, last_seen[seat], kill_seq, give_up, failures)
        )
        if seat == acting:
            action = game.rng.choice(list(view.legal_actions))
            submit = pb.SubmitActionRequest(
                match_id=game.match_id,
                action_id="after-kill",  # the same id on every attempt: applied once
                action=action,
                expected_seq=view.as_of_seq,
            )
            await until_ok(
                lambda: stub.SubmitAction(submit, metadata=game.md[seat], timeout=RPC_TIMEOUT_S),
                give_up,
                failures,
            )
        return viewed, await stream

    times = await asyncio.gather(*(seat_flow(s, stubs[s]) for s in range(4)))
    return {
        "view": max(v for v, _ in times) - t0,
        "event": max(e for _, e in times) - t0,  # NaN if one stream never showed it
    }


async def _play_resumed(
    game: Game,
    seat: int,
    stub: spades_pb2_grpc.SpadesServiceAsyncStub,
    after: int,
    kill_seq: int,
    give_up: float,
    failures: list[str],
) -> tuple[float, float]:
    """The seat's ``Play`` call opened again after ``after``, as the
    clients' session does (spades_client.Session: no GetView), with the
    seat to act sending its next action on it; opened again with the
    clients' backoff if it fails. Returns when the call's first message
    came, and when it showed an action after ``kill_seq`` (NaN if not by
    ``give_up``)."""
    acting = seat == game.match.to_act
    action = game.rng.choice(game.match.legal_actions(seat)) if acting else None
    first = float("nan")
    for retry in range(1_000_000):
        call = stub.Play(metadata=game.md[seat])
        await call.write(pb.PlayRequest(open=pb.PlayOpen(match_id=game.match_id, after_seq=after)))
        if action is not None:
            play = pb.PlayAction(
                action_id="after-kill",  # the same id on every attempt: applied once
                action=convert.action_to_pb(action),
                expected_seq=game.last_seq,
            )
            await call.write(pb.PlayRequest(action=play))
        try:
            async with asyncio.timeout(max(0.0, give_up - clock())):
                while (item := await call.read()) is not grpc.aio.EOF:
                    now = clock()
                    if math.isnan(first):
                        first = now
                    for result in item.results:
                        if result.HasField("error"):
                            failures.append(f"action refused: {result.error.message}"[:120])
                    for ev in item.events:
                        after = max(after, ev.seq)
                        if ev.seq > kill_seq and ev.WhichOneof("kind") in ACTION_KINDS:
                            call.cancel()
                            return first, now
                failures.append("a resumed Play call ended: EOF")
        except TimeoutError:
            call.cancel()
            return first, float("nan")
        except grpc.aio.AioRpcError as e:
            failures.append(f"{e.code().name} {e.details()}"[:120])
        if clock() >= give_up:
            return first, float("nan")
        await asyncio.sleep(retry_delay(retry))
    return first, float("nan")


async def _reconnect_play(
    game: Game,
    stubs: list[spades_pb2_grpc.SpadesServiceAsyncStub],
    last_seen: list[int],
    failures: list[str],
) -> dict[str, float]:
    """The four seats of one match resume their Play calls on the survivors."""
    t0 = clock()
    give_up = t0 + FAILOVER_GIVE_UP_S
    times = await asyncio.gather(
        *(
            _play_resumed(game, s, stubs[s], last_seen[s], game.last_seq, give_up, failures)
            for s in range(4)
        )
    )
    return {
        "view": max(f for f, _ in times) - t0,  # the first message on every seat's call
        "event": max(e for _, e in times) - t0,
    }


async def _failover_round(
    x: Server,
    y: Server,
    z: Server,
    redis_pids: list[int],
    count: int,
    rng: random.Random,
    flow: str,
) -> dict[str, Any]:
    async with (
        channel(x.address) as cx,
        channel(y.address) as cy,
        channel(z.address) as cz,
    ):
        stub_x = spades_pb2_grpc.SpadesServiceStub(cx)
        survivors = [spades_pb2_grpc.SpadesServiceStub(c) for c in (cy, cz)]
        # The survivors' channels connected before the kill, as a client's would be.
        for c in (cy, cz):
            await asyncio.wait_for(c.channel_ready(), RPC_TIMEOUT_S)
        games, streams = await _prepare(stub_x, count, rng)
        last_seen = [[r.last_seq for r in readers] for readers in streams]
        x.proc.kill()
        x.proc.wait(timeout=10)
        failures: list[str] = []
        meter = Meter({"survivors": [y.pid, z.pid], "redis": redis_pids, "client": [os.getpid()]})
        meter.start()
        reconnect = _reconnect_play if flow == "play" else _reconnect
        times = await asyncio.gather(
            *(
                reconnect(g, [survivors[(k + i) % 2] for i in range(4)], last_seen[k], failures)
                for k, g in enumerate(games)
            )
        )
        cpu = meter.stop()
        broken = sum(1 for readers in streams for r in readers if r.error)
        for readers in streams:
            for r in readers:
                r.cancel()
        await asyncio.gather(*(r.task for readers in streams for r in readers))
    return {"times": times, "failures": failures, "streams_broken_on_x": broken, "cpu": cpu}


def run_failover(args: argparse.Namespace, procs: Procs, flow: str, store: str) -> dict[str, Any]:
    cluster = procs.cluster(f"failover-{flow}-cluster", 3) if store == "cluster" else None
    name = f"failover-{flow}-{store}"

    def replica(who: str) -> Server:
        return procs.replica(f"{name}-{who}", "redis", "failover", redis=cluster)

    y, z = replica("y"), replica("z")
    rng = random.Random(args.seed)
    views: list[float] = []
    events: list[float] = []
    failures: list[str] = []
    broken = 0
    cpu: dict[str, float] = {}
    assert procs.redis is not None
    redis_pids = cluster.pids if cluster is not None else [procs.redis.pid]
    try:
        for r in range(args.rounds):
            x = replica(f"x{r}")
            out = asyncio.run(
                _failover_round(x, y, z, redis_pids, args.failover_matches, rng, flow)
            )
            add_cpu(cpu, out["cpu"])
            views += [t["view"] for t in out["times"]]
            events += [t["event"] for t in out["times"]]
            failures += out["failures"]
            broken += out["streams_broken_on_x"]
    finally:
        procs.stop([y, z])
    unserved = sum(1 for e in events if math.isnan(e))
    views.sort()
    events = sorted(e for e in events if not math.isnan(e))
    return {
        "flow": flow,
        "store": store,
        "matches": len(views),
        "never_served": unserved,
        "kills": args.rounds,
        "view_s_p50": pct(views, 0.50),
        "view_s_p99": pct(views, 0.99),
        "view_s_max": views[-1] if views else float("nan"),
        "event_s_p50": pct(events, 0.50),
        "event_s_p99": pct(events, 0.99),
        "event_s_max": max(events) if events else float("nan"),
        "failed_calls": len(failures),
        "failures": error_counts(failures),
        "streams_broken_on_x": broken,
        "reconnect_seconds": cpu.get("wall", 0.0),
        "cpu_percent": {k: percent(cpu, k) for k in ("survivors", "redis", "client", "other")},
    }


FLOW_TITLE = {
    "play": "each seat's Play call resumed (the clients' session)",
    "view": "GetView, then StreamEvents resumed and SubmitAction",
}
STORE_TITLE = {"redis": "one Redis", "cluster": "a 3-primary Redis Cluster"}
FLOW_FIRST = {
    "play": "(a) first message on all four resumed Play calls",
    "view": "(a) first successful GetView, all four seats",
}


def print_failover(r: dict[str, Any], args: argparse.Namespace) -> None:
    print(
        f"Failover on {STORE_TITLE[r['store']]}, {FLOW_TITLE[r['flow']]}: kill -9 of the "
        f"replica holding "
        f"{args.failover_matches} matches (four seats each), {r['kills']} kill(s); times per "
        f"match from its seats' reconnect to a survivor"
    )
    print_grid(
        ["measure", "p50", "p99", "max", "target"],
        [
            [
                FLOW_FIRST[r["flow"]],
                f_ms(r["view_s_p50"]),
                f_ms(r["view_s_p99"]),
                f_ms(r["view_s_max"]),
                f"p99 < {TARGET_FAILOVER_S:g} s",
            ],
            [
                "(b) next action's event on all four resumed calls",
                f_ms(r["event_s_p50"]),
                f_ms(r["event_s_p99"]),
                f_ms(r["event_s_max"]),
                f"p99 < {TARGET_FAILOVER_S:g} s",
            ],
        ],
    )
    print()
    print(
        f"{r['matches']:,} matches, {4 * args.failover_matches:,} seats reconnecting at once "
        f"per kill; "
        f"{r['streams_broken_on_x']:,} streams on the killed replica ended; "
        f"{r['failed_calls']:,} calls to the survivors failed and were sent again (streams "
        f"opened again); {r['never_served']} matches not served within "
        f"{FAILOVER_GIVE_UP_S:g} s (left out of (b))"
    )
    c = r["cpu_percent"]
    print(
        f"CPU (% of one core) from the kill to the last match served, {r['reconnect_seconds']:.1f} "
        f"s in all: the two survivors {c['survivors']:.0f}, redis-server {c['redis']:.0f}, "
        f"this client {c['client']:.0f}, other processes {c['other']:.0f}"
    )
    warn_if_disturbed([c["other"]])
    for text, count in r["failures"]:
        print(f"  {count:>6,} x {text}")
    print()


# -- part 4: Redis's memory per match ---------------------------------------------------------


def _match_keys(prefix: str, match_id: str) -> dict[str, str]:
    base = f"{prefix}:{{{match_id}}}"
    return {"hash": base, "log": f"{base}:log", "act": f"{base}:act", "ids": f"{base}:ids"}


def _key_usage(r: RedisProcess, prefix: str, games: list[Game]) -> dict[str, float]:
    """Mean MEMORY USAGE (all samples) of each key of these matches."""
    totals: dict[str, int] = {}
    for g in games:
        for kind, key in _match_keys(prefix, g.match_id).items():
            used = r.client.memory_usage(key, samples=0)
            totals[kind] = totals.get(kind, 0) + int(used or 0)
    return {k: v / max(1, len(games)) for k, v in totals.items()}


async def _memory(args: argparse.Namespace, procs: Procs, server: Server) -> dict[str, Any]:
    r = procs.redis
    assert r is not None
    rng = random.Random(args.seed)
    async with channel(server.address) as ch:
        stub = spades_pb2_grpc.SpadesServiceStub(ch)
        await create_games(stub, 100, rng)  # warm-up, not counted
        await asyncio.sleep(0.5)
        before = r.used_memory()
        keys_before = int(r.client.dbsize())
        games = await create_games(stub, args.idle_matches, rng)
        await asyncio.sleep(0.5)
        idle = r.used_memory()
        keys_idle = int(r.client.dbsize())
        played = games[: args.hand_matches]
        sem = asyncio.Semaphore(CREATE_CONCURRENCY)

        async def one_hand(game: Game) -> None:
            async with sem:
                for _ in range(ACTIONS_PER_HAND):
                    await act(stub, game)

        t0 = clock()
        await asyncio.gather(*(one_hand(g) for g in played))
        hand_seconds = clock() - t0
        await asyncio.sleep(0.5)
        after = r.used_memory()
        sample = 20
        usage_idle = _key_usage(r, "memory", games[-sample:])
        usage_played = _key_usage(r, "memory", played[:sample])
    n, h = len(games), len(played)
    return {
        "idle_matches": n,
        "hand_matches": h,
        "used_memory_before": before,
        "used_memory_idle": idle,
        "used_memory_after_hand": after,
        "bytes_per_idle_match": (idle - before) / n,
        "bytes_per_hand_played": (after - idle) / h if h else float("nan"),
        "bytes_per_match_after_hand": (idle - before) / n + ((after - idle) / h if h else 0.0),
        "keys_per_idle_match": (keys_idle - keys_before) / n,
        "memory_usage_idle": usage_idle,
        "memory_usage_after_hand": usage_played,
        "events_per_hand_match": played[0].last_seq if played else 0,
        "hand_seconds": hand_seconds,
    }


def run_memory(args: argparse.Namespace, procs: Procs) -> dict[str, Any]:
    server = procs.replica("memory", "redis", "memory")
    try:
        return asyncio.run(_memory(args, procs, server))
    finally:
        procs.stop([server])


def print_memory(r: dict[str, Any]) -> None:
    kib = 1024.0
    print("Redis memory per match (INFO memory used_memory, one replica holding the matches)")
    ui, up = r["memory_usage_idle"], r["memory_usage_after_hand"]
    print_grid(
        ["measure", "value"],
        [
            ["used_memory before", f"{r['used_memory_before'] / kib / kib:,.1f} MiB"],
            [
                f"after {r['idle_matches']:,} idle matches",
                f"{r['used_memory_idle'] / kib / kib:,.1f} MiB",
            ],
            ["per idle match", f"{r['bytes_per_idle_match'] / kib:.1f} KiB"],
            [
                f"after one whole hand in {r['hand_matches']:,} of them",
                f"{r['used_memory_after_hand'] / kib / kib:,.1f} MiB",
            ],
            ["per match, growth over one hand", f"{r['bytes_per_hand_played'] / kib:.1f} KiB"],
            ["per match after one hand", f"{r['bytes_per_match_after_hand'] / kib:.1f} KiB"],
            [
                "MEMORY USAGE idle: hash / log / act / ids",
                " / ".join(f"{ui.get(k, 0) / kib:.1f}" for k in ("hash", "log", "act", "ids"))
                + " KiB",
            ],
            [
                "MEMORY USAGE after one hand",
                " / ".join(f"{up.get(k, 0) / kib:.1f}" for k in ("hash", "log", "act", "ids"))
                + " KiB",
            ],
        ],
    )
    print()
    print(
        f"used_memory read 0.5 s after the last call, after 100 warm-up matches; a match is "
        f"{r['keys_per_idle_match']:.0f} keys when idle; after one hand a match holds "
        f"{r['events_per_hand_match']} events and 56 actions; the replica subscribes to each "
        f"match's channel, which Redis counts too; MEMORY USAGE: the mean of 20 matches of each "
        f"kind, SAMPLES 0; KiB = 1024 bytes"
    )
    print()


# -- main ----------------------------------------------------------------------------------


def print_targets(results: dict[str, Any]) -> None:
    rows = []
    load = results.get("load")
    for key, store in (("redis1", "Redis"), ("cluster1", "Cluster")):
        if not load or not {"sqlite1", key} <= load["configs"].keys():
            continue
        for kind in ("paced", "saturated"):
            s, r = load["configs"]["sqlite1"].get(kind), load["configs"][key].get(kind)
            if s and r:
                ratio = r["actions_per_second"] / s["actions_per_second"]
                rows.append(
                    [
                        f"{store} / SQLite actions/s, 1 replica, {kind}",
                        f"{ratio:.2f}",
                        f">= {TARGET_RATIO:g}",
                        yes(ratio >= TARGET_RATIO),
                    ]
                )
    for fo in results.get("failover", {}).values():
        first = "(a) first message" if fo["flow"] == "play" else "(a) GetView"
        where = f"{fo['flow']}, {fo['store']}"
        for key, label in (("view", first), ("event", "(b) new event")):
            p99 = fo[f"{key}_s_p99"]
            served = key == "view" or not fo["never_served"]
            rows.append(
                [
                    f"failover p99, {where}, {label}",
                    f_ms(p99),
                    f"< {TARGET_FAILOVER_S * 1000:g} ms",
                    yes(p99 < TARGET_FAILOVER_S and served),
                ]
            )
    sc = results.get("scaling")
    if sc and sc["steps"]:
        counts = [s["redis_clients"]["B"]["connections"] for s in sc["steps"]]
        subs = [s["redis_clients"]["B"]["subscribed"] for s in sc["steps"]]
        ms_ = [s["matches"] for s in sc["steps"]]
        rows.append(
            [
                f"B's subscribed connections at M = {', '.join(f'{m:,}' for m in ms_)}",
                ", ".join(map(str, subs)),
                "1 at every M",
                yes(set(subs) == {1}),
            ]
        )
        # The rest is redis-py's pool, which keeps as many connections as calls
        # were ever in flight at once (the set-up's bursts); those the
        # wake-up used while measured must not grow with M.
        used = [s["redis_clients"]["B"]["commands_used"] for s in sc["steps"]]
        rows.append(
            [
                "  its other connections used while measured",
                ", ".join(map(str, used)),
                "not growing with M",
                yes(max(used) - used[0] <= 2),
            ]
        )
        rows.append(["  its connections in all", ", ".join(map(str, counts)), "", ""])
    mem = results.get("memory")
    if mem:
        rows.append(
            ["Redis memory per idle match", f"{mem['bytes_per_idle_match'] / 1024:.1f} KiB", "", ""]
        )
        rows.append(
            [
                "Redis memory per match after one hand",
                f"{mem['bytes_per_match_after_hand'] / 1024:.1f} KiB",
                "",
                "",
            ]
        )
    if rows:
        print("Against the targets (issue 14)")
        print_grid(["measure", "value", "target", "ok"], rows)
        print()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"the parts to run, comma-separated, in this order: {', '.join(PARTS)} (all)",
    )
    ap.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help="load part: configurations, comma-separated: sqlite1 (one replica on SQLite), "
        "redis1 (one on Redis), redis3 (three on one Redis), cluster1 (one on a Redis "
        "Cluster of 3 primaries) (all four)",
    )
    ap.add_argument("--matches", type=int, default=100, help="load: concurrent matches (100)")
    ap.add_argument(
        "--turn-timer-ms",
        type=int,
        default=0,
        help="load: the matches' turn timer (0: none); with one, every action on Redis "
        "also sets the match's due time (another replica's takeover)",
    )
    ap.add_argument(
        "--think-ms",
        type=float,
        default=100.0,
        help="load: the paced phases' mean think time of a seat before each action, drawn "
        "uniformly from 0.5 to 1.5 times it (100)",
    )
    ap.add_argument(
        "--stagger-s",
        type=float,
        default=None,
        help="load: each table's first action waits a random 0 to this many seconds, unmeasured "
        "(default: one hand of think time, 56 x --think-ms)",
    )
    ap.add_argument(
        "--seconds",
        type=float,
        default=15.0,
        help="load: measured seconds per configuration and kind of phase, over all rounds (15); "
        "also sets the scaling steps' length (a third of it, at least 2 s) unless "
        "--scaling-seconds is given. --seconds 5 is a quick run",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="load: alternations of the configurations (3); failover: kills (the same number)",
    )
    ap.add_argument(
        "--warmup",
        type=float,
        default=3.0,
        help=f"load: unmeasured seconds before each configuration's first phase (3); later "
        f"phases ramp {RAMP_S:g} s",
    )
    ap.add_argument(
        "--no-saturated",
        dest="saturated",
        action="store_false",
        help="load: paced phases only (by default each round also has saturated phases, no "
        "think time, for the capacity of each configuration)",
    )
    ap.add_argument(
        "--scaling-matches",
        default="10,100,1000",
        help="scaling: the numbers of matches B holds, ascending, comma-separated (10,100,1000)",
    )
    ap.add_argument(
        "--scaling-rate",
        type=float,
        default=200.0,
        help="scaling: actions per second through A, in all, whatever the number of matches (200)",
    )
    ap.add_argument(
        "--scaling-seconds",
        type=float,
        default=None,
        help="scaling: measured seconds per step (default: --seconds / 3, at least 2)",
    )
    ap.add_argument(
        "--failover-matches",
        type=int,
        default=100,
        help="failover: matches on the replica killed, per kill (100)",
    )
    ap.add_argument(
        "--failover-flows",
        default="play,view",
        help="failover: how seats reconnect, of play (a Play call each, as the clients' "
        "session) and view (GetView, StreamEvents and SubmitAction)",
    )
    ap.add_argument(
        "--failover-stores",
        default="redis",
        help="failover: of redis (one Redis) and cluster (a 3-primary Redis Cluster)",
    )
    ap.add_argument(
        "--idle-matches", type=int, default=2000, help="memory: idle matches created (2000)"
    )
    ap.add_argument(
        "--hand-matches",
        type=int,
        default=200,
        help="memory: of those, matches in which one whole hand is then played (200)",
    )
    ap.add_argument(
        "--aof",
        choices=("always", "everysec", "no"),
        default=None,
        help="run redis-server with AOF (--appendonly yes) and this appendfsync; by default no "
        "persistence at all (--save '' --appendonly no)",
    )
    ap.add_argument("--seed", type=int, default=1, help="seed of the matches and choices (1)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    ap.add_argument(
        "--logs",
        metavar="DIR",
        help="copy every server's log and redis-server's to DIR at the end (they are in a "
        "temporary folder, removed then); the whole store errors are there, clients get "
        "only a short reason",
    )
    args = ap.parse_args(argv)
    for name, known in (
        ("parts", PARTS),
        ("configs", CONFIGS),
        ("failover_flows", FLOW_TITLE),
        ("failover_stores", STORE_TITLE),
    ):
        chosen = [c for c in getattr(args, name).split(",") if c]
        if not chosen or not set(chosen) <= set(known):
            ap.error(f"--{name.replace('_', '-')}: some of {', '.join(known)}")
        setattr(args, name, chosen)
    try:
        args.scaling_matches = [int(m) for m in args.scaling_matches.split(",")]
    except ValueError:
        ap.error("--scaling-matches: numbers, comma-separated")
    if args.scaling_matches != sorted(args.scaling_matches) or min(args.scaling_matches) < 1:
        ap.error("--scaling-matches: positive and ascending")
    if min(args.matches, args.rounds, args.failover_matches, args.idle_matches) < 1:
        ap.error("--matches, --rounds, --failover-matches and --idle-matches must be positive")
    if args.seconds <= 0 or args.think_ms < 0 or args.scaling_rate <= 0:
        ap.error("--seconds and --scaling-rate must be positive, --think-ms not negative")
    if not 0 <= args.hand_matches <= args.idle_matches:
        ap.error("--hand-matches: 0 to --idle-matches")
    if args.scaling_seconds is None:
        args.scaling_seconds = max(2.0, args.seconds / 3)
    if args.stagger_s is None:
        args.stagger_s = ACTIONS_PER_HAND * args.think_ms / 1000.0
    return args


def keep_logs(tmp: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for log in sorted([*tmp.glob("*/server.log"), *tmp.glob("*/redis.log")]):
        shutil.copyfile(log, dest / f"{log.parent.name}.log")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop_on_signals()
    results: dict[str, Any] = {
        "args": {k: v for k, v in vars(args).items() if k not in ("json", "logs")}
    }
    print("Replicas on Redis (bench/replicas.py)")
    print(f"python  {platform.python_implementation()} {platform.python_version()}")
    print(f"cpu     {os.cpu_count()} cores, shared by redis-server, the servers and the clients")
    with tempfile.TemporaryDirectory(prefix="spades-bench-replicas-") as tmp:
        procs = Procs(Path(tmp))
        try:
            procs.redis = RedisProcess(Path(tmp) / "redis", args.aof)
            print(
                f"redis   {procs.redis.version} pid {procs.redis.pid} on 127.0.0.1:"
                f"{procs.redis.port}, persistence {procs.redis.persistence()}"
            )
            results["redis"] = {"version": procs.redis.version, "aof": args.aof or "off"}
            print(f"parts   {', '.join(args.parts)}")
            print()
            if "load" in args.parts:
                results["load"] = run_load(args, procs)
                print_load(results["load"], args)
            if "scaling" in args.parts:
                results["scaling"] = run_scaling(args, procs)
                print_scaling(results["scaling"], args)
            if "failover" in args.parts:
                results["failover"] = {}
                for store in args.failover_stores:
                    for flow in args.failover_flows:
                        fo = run_failover(args, procs, flow, store)
                        results["failover"][f"{flow}-{store}"] = fo
                        print_failover(fo, args)
            if "memory" in args.parts:
                results["memory"] = run_memory(args, procs)
                print_memory(results["memory"])
            print_targets(results)
        finally:
            procs.stop_all()
            if args.logs:
                keep_logs(Path(tmp), Path(args.logs))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    errors = sum(c["error_count"] for c in results.get("load", {}).get("configs", {}).values())
    errors += len(results.get("scaling", {}).get("errors", []))
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
