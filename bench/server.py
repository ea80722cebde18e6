#!/usr/bin/env python3
"""Server benchmark: the gRPC service under load, against a real server process.

The server (``python3 -m spades_server.main``) runs as a subprocess, with the
embedded SQLite store by default (``--store memory``: the in-memory one) and a
rate limit high enough never to refuse. The clients run in separate processes
(``--clients``, default 1), each one ``grpc.aio`` event loop.

Load mode (the default), in one run against one server:

* **Actions.** ``--matches`` concurrent matches (100) of four HUMAN seats. Each
  seat is a bot-like client: it claims its seat, keeps its events coming, and
  when they show it is its turn it sends a uniformly random legal action, with
  an ``action_id`` and ``expected_seq``. ``--via play`` (the default): each seat
  has one ``Play`` call, which carries its events and its actions and their
  results. ``--via unary``: each seat has a ``StreamEvents`` stream and acts
  with ``SubmitAction`` calls. The four seats of a table live in this process
  and share one replica of the match, an engine ``Match`` built from the
  match's seed and fed the actions the first of their streams shows (the
  classic preset has no blind nil, so every action is public): a seat learns
  its legal actions without an RPC, and the client applies each action once,
  not once per seat. A finished match is replaced by a new one. With
  ``--think-ms`` each table's first action waits a random part of one hand's
  think time (``--stagger-s``), as matches on a live server do not all begin
  at once. Measured:
  accepted actions per second, the latency of an action (request sent to
  response or result received), and the time from the response or result to
  the action's event being on all four seats' streams.
* **Ping**, the no-op RPC, with the same concurrency (one caller per match: the
  action phase has one action in flight per match): calls per second, and the
  ratio actions/s ÷ Ping calls/s.

The two alternate (``--rounds``, 3) and each total is summed over its rounds,
so a slow spell of a shared machine weighs on both sides of the ratio. Between
rounds the seats hold their next action; streams stay open.

Idle mode (``--idle-matches N``) creates N matches of four human seats in one
server process and reports the growth of the server's resident memory (VmRSS of
/proc/<pid>/status) per match.

    python3 bench/server.py [--matches 100] [--seconds 15] [--store sqlite|memory]
                            [--via play|unary] [--think-ms 0] [--clients 1] [--json PATH]
    python3 bench/server.py --idle-matches 10000 [--store sqlite|memory]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc
from spades_server import convert
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc
from spades_server.main import tune_gc

from cpu_usage import Meter, Usage, print_caveats
from load import channel, ms, pct, print_table, split
from processes import OPERATOR_MD, Server, recv, start_process, start_server
from spades_engine import Match, preset
from spades_engine.actions import bid as make_bid
from spades_engine.actions import play as make_play

# Targets (the server issue), for 100 concurrent matches on the embedded store.
TARGET_MATCHES = 100
TARGET_P99_MS = 25.0
TARGET_RATIO = 0.50
TARGET_IDLE_KIB = 50.0
RAMP_S = 1.0  # unmeasured start of every phase after the first
SETUP_TIMEOUT_S = 300.0  # creating the matches and opening their streams
PHASE_SLACK_S = 120.0  # past its ramp and measured time, what a phase may take
RESULT_TIMEOUT_S = 30.0  # no action's result on a Play call may hang the benchmark
ACTIONS_PER_HAND = 4 + 52  # classic: four bids, 52 cards
# Every action of the classic preset is public (no blind nil, no exchange).
RULES = preset("classic")
RULESET_PB = pb.Ruleset(preset="classic")


# -- the load client (one per client process) ----------------------------------------------


@dataclass
class Control:
    """What the parent asks of one client process's tables, and what they measured."""

    think_s: float
    via: str  # "play": one Play call per seat; "unary": StreamEvents + SubmitAction
    stagger_s: float = 0.0  # a table's first action waits a random part of this
    turn_timer_ms: int = 0  # the matches' turn timer (0: none)
    start: float = float("inf")  # the measured span of the current action phase
    end: float = float("inf")
    stopping: bool = False
    submitting: int = 0  # SubmitAction calls in flight
    gate: asyncio.Event = field(default_factory=asyncio.Event)  # set: seats may act
    actions: int = 0
    submit: list[float] = field(default_factory=list)  # SubmitAction round trips
    fanout: list[float] = field(default_factory=list)  # response -> on all 4 streams
    submit_to_all: list[float] = field(default_factory=list)  # request sent -> all 4 streams
    before_response: int = 0  # actions on all 4 streams before their response arrived
    matches_started: int = 0
    matches_finished: int = 0
    errors: list[str] = field(default_factory=list)

    def measuring(self, t: float) -> bool:
        return self.start <= t < self.end


class Table:
    """One match and its four seat clients, all in this process. ``seat_stubs``:
    the server each seat talks to (bench/replicas.py spreads them over
    replicas); by default all four use ``stub``, which creates the match."""

    def __init__(
        self,
        stub: spades_pb2_grpc.SpadesServiceAsyncStub,
        control: Control,
        rng: random.Random,
        seat_stubs: list[spades_pb2_grpc.SpadesServiceAsyncStub] | None = None,
    ) -> None:
        self.stub = stub
        self.seat_stubs = seat_stubs or [stub] * 4
        self.control = control
        self.rng = rng
        self.in_flight = 0  # actions chosen and not yet answered
        self.delay = rng.uniform(0.0, control.stagger_s)  # before the table's first action
        self.idle = asyncio.Event()
        self.idle.set()

    async def setup(self) -> None:
        """Create a match, claim its four seats, open their four streams."""
        self.seed = self.rng.getrandbits(63)
        created = await self.stub.CreateMatch(
            pb.CreateMatchRequest(
                ruleset=RULESET_PB,
                seats=[pb.SeatConfig(name=f"bench {i}") for i in range(4)],
                seed=self.seed,
                has_seed=True,
                turn_timer_ms=self.control.turn_timer_ms,
            ),
            metadata=OPERATOR_MD,
        )
        self.match_id = created.match.match_id
        self.metadata = [(("authorization", f"Bearer {t.token}"),) for t in created.seat_tokens]
        for md, stub in zip(self.metadata, self.seat_stubs, strict=True):
            claimed = await stub.ClaimSeat(pb.ClaimSeatRequest(match_id=self.match_id), metadata=md)
        self.setup_seq = claimed.view.as_of_seq  # the last claim's event
        # The table's replica of the match, fed by whichever seat's stream shows
        # an action first (every action of the classic preset is public): the
        # seats learn their legal actions from it without an RPC, and the
        # replica is applied once per action rather than once per seat.
        self.replica = Match(RULES, seed=self.seed)
        self.applied = 0  # the seq of the last action event applied
        # (seat, seq): that seat acts once its stream has shown this seq, the
        # last event before its turn that it may see.
        self.turn: tuple[int, int] | None = (self.replica.to_act, self.setup_seq)
        # first seq of an action -> [response time, send time, streams seen, last seen]
        self.tracked: dict[int, list[Any]] = {}
        self.calls: list[Any] = []
        for md, stub in zip(self.metadata, self.seat_stubs, strict=True):
            if self.control.via == "play":
                call: Any = stub.Play(metadata=md)
                await call.write(pb.PlayRequest(open=pb.PlayOpen(match_id=self.match_id)))
            else:
                call = stub.StreamEvents(
                    pb.StreamEventsRequest(match_id=self.match_id, after_seq=0), metadata=md
                )
            self.calls.append(call)
        for call in self.calls:
            await call.wait_for_connection()
        self.control.matches_started += 1

    async def play(self) -> bool:
        """Play until the match ends (True) or the client stops (False)."""
        seats = [SeatClient(self, s) for s in range(4)]
        try:
            done = await asyncio.gather(*(s.run() for s in seats))
        finally:
            self.cancel_streams()
            await self.idle.wait()  # the last response belongs to this match
        if all(done):
            self.control.matches_finished += 1
            return True
        return False

    def cancel_streams(self) -> None:
        for call in self.calls:
            call.cancel()

    def learn(self, seq: int, ev: Any, kind: str) -> None:
        """Apply the action of event ``seq`` to the replica; note whose turn is next."""
        if kind == "card_played":
            actor = ev.card_played.seat
            action: Any = make_play(convert.card_from_pb(ev.card_played.card))
        else:
            actor = ev.bid_made.seat
            action = make_bid(ev.bid_made.tricks)
        caused = self.replica.apply(actor, action)
        self.applied = seq
        if self.replica.is_over:
            return
        nxt = self.replica.to_act
        last = max(i for i, e in enumerate(caused) if e.audience.visible_to(nxt, nxt & 1))
        self.turn = (nxt, seq + last)

    # An action is delivered when its response and its event on all four streams
    # are in, in either order.
    def on_response(self, seq: int, sent: float, now: float) -> None:
        entry = self.tracked.get(seq)
        if entry is None:
            self.tracked[seq] = [now, sent, 0, 0.0]
            return
        entry[0], entry[1] = now, sent
        if entry[2] == 4:
            self._delivered(seq, entry)

    def on_stream(self, seq: int, now: float) -> None:
        entry = self.tracked.get(seq)
        if entry is None:
            entry = self.tracked[seq] = [None, 0.0, 0, 0.0]
        entry[2] += 1
        entry[3] = now
        if entry[2] == 4 and entry[0] is not None:
            self._delivered(seq, entry)

    def _delivered(self, seq: int, entry: list[Any]) -> None:
        del self.tracked[seq]
        responded, sent, _, last = entry
        c = self.control
        if c.measuring(responded):
            if last < responded:
                c.before_response += 1
            c.fanout.append(max(0.0, last - responded))
            c.submit_to_all.append(last - sent)


_ACTION_KINDS = frozenset({"card_played", "bid_made"})  # the events actions start with


class SeatClient:
    """A human seat played by a bot: reads its stream, acts when it is its turn."""

    def __init__(self, table: Table, seat: int) -> None:
        self.table = table
        self.seat = seat
        self.md = table.metadata[seat]
        self.call = table.calls[seat]
        self.rng = random.Random(table.seed ^ seat)
        self.task: asyncio.Task[None] | None = None  # the loop keeps only weak references
        # On a Play call: the results the seat waits for, by action id. A seat
        # may have two: the events of its action can show that it acts next
        # before the action's result has come (the result may follow them).
        self.waiting: dict[str, asyncio.Future[pb.ActionResult]] = {}

    async def run(self) -> bool:
        """Read the stream to the match's end (True) or until it is cancelled (False)."""
        table = self.table
        seat = self.seat
        clock = time.perf_counter
        ended = False
        read = self.call.read  # cheaper than `async for`, a generator layer per message
        play = table.control.via == "play"  # Play responses carry results too
        try:
            while (item := await read()) is not grpc.aio.EOF:
                if play and item.results:
                    self._on_results(item.results)
                for ev in item.events:
                    seq = ev.seq
                    kind = ev.WhichOneof("kind")
                    if kind in _ACTION_KINDS:
                        table.on_stream(seq, clock())
                        if seq > table.applied:
                            table.learn(seq, ev, kind)
                    elif kind == "match_ended":
                        ended = True
                    turn = table.turn
                    if turn is not None and turn[0] == seat and seq >= turn[1]:
                        table.turn = None
                        self.task = asyncio.create_task(self.act(seq))
                # On a Play call the last action's result may follow the match's end.
                if ended and not self.waiting:
                    return True
        except asyncio.CancelledError:
            return False
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                table.control.errors.append(f"stream of seat {seat}: {e.code().name} {e.details()}")
                # Without this seat the match cannot go on: end the table's
                # other calls too, rather than leave them waiting for its turn.
                table.cancel_streams()
            return False
        finally:
            for fut in self.waiting.values():  # results that can no longer come
                if not fut.done():
                    fut.set_exception(ConnectionError("the seat's call ended"))
        return False

    def _on_results(self, results: Any) -> None:
        for r in results:
            fut = self.waiting.pop(r.action_id, None)
            if fut is not None and not fut.done():
                fut.set_result(r)

    async def act(self, seen_seq: int) -> None:
        table = self.table
        c = table.control
        table.in_flight += 1
        table.idle.clear()
        try:
            await c.gate.wait()  # closed between action phases
            if table.delay:  # once per table, see --stagger-s
                delay, table.delay = table.delay, 0.0
                await asyncio.sleep(delay)
            if c.think_s:  # uniform on [0.5, 1.5] x think time, so tables do not march in step
                await asyncio.sleep(c.think_s * (0.5 + self.rng.random()))
            if c.stopping:
                table.cancel_streams()  # ends every seat of this table
            else:
                c.submitting += 1
                try:
                    await self._submit(seen_seq)
                finally:
                    c.submitting -= 1
        finally:
            table.in_flight -= 1
            if table.in_flight == 0:
                table.idle.set()

    async def _submit(self, seen_seq: int) -> None:
        table = self.table
        replica = table.replica
        action = self.rng.choice(replica.legal_actions(self.seat))
        request = pb.SubmitActionRequest(
            match_id=table.match_id,
            action_id=f"a{len(replica.actions)}",
            action=convert.action_to_pb(action),
            expected_seq=seen_seq,
        )
        sent = time.perf_counter()
        if table.control.via == "play":
            first = await self._on_play(request)
        else:
            first = await self._on_unary(request)
        if first is None:
            table.cancel_streams()
            return
        now = time.perf_counter()
        c = table.control
        if c.measuring(now):
            c.actions += 1
            c.submit.append(now - sent)
        table.on_response(first, sent, now)

    async def _on_unary(self, request: pb.SubmitActionRequest) -> int | None:
        """SubmitAction; the first event's sequence number, or None on an error."""
        try:
            stub = self.table.seat_stubs[self.seat]
            response = await stub.SubmitAction(request, metadata=self.md)
        except grpc.aio.AioRpcError as e:
            self.table.control.errors.append(f"SubmitAction: {e.code().name} {e.details()}")
            return None
        return int(response.events[0].seq)

    async def _on_play(self, request: pb.SubmitActionRequest) -> int | None:
        """The same action sent on the seat's Play call; its result's first
        sequence number, or None on an error."""
        action = pb.PlayAction(
            action_id=request.action_id, action=request.action, expected_seq=request.expected_seq
        )
        waiting = self.waiting[request.action_id] = asyncio.get_running_loop().create_future()
        try:
            await self.call.write(pb.PlayRequest(action=action))
            result = await asyncio.wait_for(waiting, RESULT_TIMEOUT_S)
        except ConnectionError:
            return None  # the call ended (its error, if any, is counted once)
        except (grpc.aio.AioRpcError, TimeoutError) as e:
            self.waiting.pop(request.action_id, None)
            self.table.control.errors.append(f"Play action: {e!r}"[:200])
            return None
        if result.HasField("error"):
            self.table.control.errors.append(f"Play action refused: {result.error.message}")
            return None
        return int(result.first_seq)


async def run_table(table: Table) -> None:
    """Play matches one after the other until the client stops."""
    while await table.play() and not table.control.stopping:
        await table.setup()


async def run_pings(
    stub: spades_pb2_grpc.SpadesServiceAsyncStub, workers: int, ramp: float, seconds: float
) -> tuple[int, list[float]]:
    """``workers`` callers of Ping back to back; the calls and latencies measured."""
    request = pb.PingRequest()
    latencies: list[float] = []
    clock = time.perf_counter
    start = clock() + ramp
    end = start + seconds

    async def worker() -> None:
        ping = stub.Ping
        while True:
            t0 = clock()
            if t0 >= end:
                return
            await ping(request)
            t1 = clock()
            if start <= t1 < end:
                latencies.append(t1 - t0)

    await asyncio.gather(*(worker() for _ in range(workers)))
    return len(latencies), latencies


def client_process(conn: Connection, address: str, cfg: dict[str, Any]) -> None:
    """One client process: set up its matches, then run the phases the parent orders."""
    asyncio.run(_client(conn, address, cfg))


async def set_up_tables(
    stubs: list[spades_pb2_grpc.SpadesServiceAsyncStub],
    shares: list[int],
    control: Control,
    seed: int,
) -> list[Table]:
    """Each stub's share of the tables, their matches created and streams open."""
    rng = random.Random(seed)
    tables = [
        Table(stub, control, random.Random(rng.getrandbits(64)))
        for stub, n in zip(stubs, shares, strict=True)
        for _ in range(n)
    ]
    setups = asyncio.Semaphore(20)

    async def setup(t: Table) -> None:
        async with setups:
            await t.setup()

    await asyncio.gather(*(setup(t) for t in tables))
    return tables


async def _client(conn: Connection, address: str, cfg: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()

    async def recv() -> Any:
        return await loop.run_in_executor(None, conn.recv)

    channels = [channel(address) for _ in range(cfg["channels"])]
    stubs = [spades_pb2_grpc.SpadesServiceStub(c) for c in channels]
    shares = split(cfg["matches"], len(stubs))
    control = Control(think_s=cfg["think_ms"] / 1000.0, via=cfg["via"], stagger_s=cfg["stagger_s"])
    tables = await set_up_tables(stubs, shares, control, cfg["seed"])
    tune_gc()  # the server's own tuning: the clients share its two cores
    playing = [asyncio.create_task(run_table(t)) for t in tables]
    pings: list[float] = []
    conn.send("ready")
    while True:
        order = await recv()
        if order[0] == "actions":  # ("actions", ramp s, seconds, or actions to measure)
            _, ramp, seconds, quota = order
            base = control.actions
            t0 = time.perf_counter()
            control.start, control.end = t0 + ramp, float("inf")
            control.gate.set()
            if quota:
                while control.actions - base < quota:
                    await asyncio.sleep(0.005)
                control.end = time.perf_counter()
            else:
                control.end = control.start + seconds
                await asyncio.sleep(control.end - t0)
            control.gate.clear()
            while control.submitting:  # let the calls in flight finish
                await asyncio.sleep(0.005)
            conn.send((control.actions - base, control.end - control.start))
        elif order[0] == "ping":  # ("ping", ramp s, seconds)
            _, ramp, seconds = order
            results = await asyncio.gather(
                *(run_pings(stub, n, ramp, seconds) for stub, n in zip(stubs, shares, strict=True))
            )
            for _, lat in results:
                pings.extend(lat)
            conn.send((sum(n for n, _ in results), seconds))
        else:  # ("stop",)
            break
    control.stopping = True
    control.gate.set()
    try:
        await asyncio.wait_for(asyncio.gather(*playing), timeout=30)
    except TimeoutError:
        control.errors.append("the tables did not stop within 30 s")
    conn.send(
        {
            "submit": control.submit,
            "fanout": control.fanout,
            "submit_to_all": control.submit_to_all,
            "before_response": control.before_response,
            "matches_started": control.matches_started,
            "matches_finished": control.matches_finished,
            "errors": control.errors[:20],
            "ping_latencies": pings,
        }
    )
    for c in channels:
        await c.close()


# -- load mode ----------------------------------------------------------------------------


def run_load(args: argparse.Namespace, server: Server) -> dict[str, Any]:
    shares = [n for n in split(args.matches, args.clients) if n]
    pipes: list[Connection] = []
    procs = []
    for i, n in enumerate(shares):
        cfg = {
            "matches": n,
            "channels": min(args.channels, n),
            "seed": args.seed * 1000 + i,
            "think_ms": args.think_ms,
            "via": args.via,
            "stagger_s": args.stagger_s,
        }
        p, conn = start_process(client_process, server.address, cfg)
        pipes.append(conn)
        procs.append(p)
    setup0 = time.perf_counter()
    for conn in pipes:
        if recv(conn, SETUP_TIMEOUT_S) != "ready":
            raise SystemExit("a client process failed during set-up")
    setup_seconds = time.perf_counter() - setup0

    meter = Meter(server.pid, [p.pid for p in procs if p.pid is not None])

    def phase(orders: list[tuple[Any, ...]], usage: Usage) -> list[Any]:
        meter.start()
        t0 = time.perf_counter()
        for conn, order in zip(pipes, orders, strict=True):
            conn.send(order)
        answers = [
            recv(conn, order[1] + order[2] + PHASE_SLACK_S)
            for conn, order in zip(pipes, orders, strict=True)
        ]
        meter.stop(usage, time.perf_counter() - t0)
        return answers

    rounds = args.rounds
    action_usage, ping_usage = Usage(), Usage()
    actions = action_seconds = 0.0
    ping_calls = ping_seconds = 0.0
    quotas = [split(q, len(pipes)) for q in split(args.actions, rounds)] if args.actions else None
    for k in range(rounds):
        ramp = args.warmup + args.stagger_s if k == 0 else RAMP_S
        orders: list[tuple[Any, ...]] = [
            ("actions", ramp, args.seconds / rounds, quotas[k][i] if quotas else 0)
            for i in range(len(pipes))
        ]
        answers = phase(orders, action_usage)
        actions += sum(a for a, _ in answers)
        action_seconds += max(s for _, s in answers)
        answers = phase([("ping", RAMP_S, args.ping_seconds / rounds)] * len(pipes), ping_usage)
        ping_calls += sum(c for c, _ in answers)
        ping_seconds += args.ping_seconds / rounds
    for conn in pipes:
        conn.send(("stop",))
    finals = [recv(conn, 60.0) for conn in pipes]
    for p in procs:
        p.join(timeout=30)

    def merged(key: str) -> list[float]:
        return sorted(x for f in finals for x in f[key])

    submit, fanout = merged("submit"), merged("fanout")
    to_all, ping_lat = merged("submit_to_all"), merged("ping_latencies")
    actions_per_s = actions / action_seconds
    pings_per_s = ping_calls / ping_seconds
    return {
        "matches": args.matches,
        "streams": 4 * args.matches,
        "think_ms": args.think_ms,
        "via": args.via,
        "client_processes": len(pipes),
        "rounds": rounds,
        "setup_seconds": setup_seconds,
        "measured_seconds": action_seconds,
        "actions": int(actions),
        "actions_per_second": actions_per_s,
        "submit_ms_p50": ms(pct(submit, 0.50)),
        "submit_ms_p99": ms(pct(submit, 0.99)),
        "submit_ms_max": ms(submit[-1]) if submit else float("nan"),
        "fanout_ms_p50": ms(pct(fanout, 0.50)),
        "fanout_ms_p99": ms(pct(fanout, 0.99)),
        "fanout_samples": len(fanout),
        "delivered_before_response": sum(f["before_response"] for f in finals),
        "submit_to_all_streams_ms_p50": ms(pct(to_all, 0.50)),
        "submit_to_all_streams_ms_p99": ms(pct(to_all, 0.99)),
        "ping_calls": int(ping_calls),
        "ping_seconds": ping_seconds,
        "ping_calls_per_second": pings_per_s,
        "ping_ms_p50": ms(pct(ping_lat, 0.50)),
        "ping_ms_p99": ms(pct(ping_lat, 0.99)),
        "ratio": actions_per_s / pings_per_s if pings_per_s else float("nan"),
        "matches_started": sum(f["matches_started"] for f in finals),
        "matches_finished": sum(f["matches_finished"] for f in finals),
        "cpu_percent_actions": action_usage.percent(),
        "cpu_percent_ping": ping_usage.percent(),
        "errors": [e for f in finals for e in f["errors"]],
    }


def _ok(passed: bool) -> str:
    return "yes" if passed else "NO"


def print_load(r: dict[str, Any], args: argparse.Namespace) -> None:
    paced = args.think_ms > 0
    embedded = args.store == "sqlite"
    p99_target = f"< {TARGET_P99_MS:g} ms" if embedded else "(sqlite only)"
    p99_ok = _ok(r["submit_ms_p99"] < TARGET_P99_MS) if embedded else ""
    ratio_target = f">= {100 * TARGET_RATIO:g} %" if not paced else "(unpaced only)"
    ratio_ok = _ok(r["ratio"] >= TARGET_RATIO) if not paced else ""
    act = "Play action" if r["via"] == "play" else "SubmitAction"
    answer = "result" if r["via"] == "play" else "response"
    print_table(
        [
            (
                "concurrent matches (4 streams each)",
                f"{r['matches']}",
                f">= {TARGET_MATCHES}",
                _ok(r["matches"] >= TARGET_MATCHES),
            ),
            (f"{act} accepted, actions/s", f"{r['actions_per_second']:,.0f}", "", ""),
            (f"{act} latency p50", f"{r['submit_ms_p50']:.2f} ms", "", ""),
            (f"{act} latency p99", f"{r['submit_ms_p99']:.2f} ms", p99_target, p99_ok),
            (f"{answer} -> on all 4 streams p50", f"{r['fanout_ms_p50']:.2f} ms", "", ""),
            (f"{answer} -> on all 4 streams p99", f"{r['fanout_ms_p99']:.2f} ms", "", ""),
            (
                "request sent -> on all 4 streams p50",
                f"{r['submit_to_all_streams_ms_p50']:.2f} ms",
                "",
                "",
            ),
            (
                "request sent -> on all 4 streams p99",
                f"{r['submit_to_all_streams_ms_p99']:.2f} ms",
                "",
                "",
            ),
            ("Ping calls/s (same concurrency)", f"{r['ping_calls_per_second']:,.0f}", "", ""),
            ("Ping latency p50", f"{r['ping_ms_p50']:.2f} ms", "", ""),
            ("Ping latency p99", f"{r['ping_ms_p99']:.2f} ms", "", ""),
            ("actions/s / Ping calls/s", f"{100 * r['ratio']:.1f} %", ratio_target, ratio_ok),
        ]
    )
    print()
    print(
        f"measured {r['actions']:,} actions in {r['measured_seconds']:.1f} s and "
        f"{r['ping_calls']:,} Ping calls in {r['ping_seconds']:g} s, over {r['rounds']} "
        f"alternating rounds; {r['matches_started']:,} matches played, "
        f"{r['matches_finished']:,} to the end"
    )
    print(
        f"fan-out: {r['delivered_before_response']:,} of {r['fanout_samples']:,} actions were on "
        f"all 4 streams before their {answer} arrived (counted as 0 ms)"
    )
    if not paced:
        print(
            "note: without --think-ms every match always has one action in flight, so latency "
            f"~ matches / throughput = {1000 * r['matches'] / r['actions_per_second']:.0f} ms "
            "(Little's law)"
        )
    for label, key in (("actions", "cpu_percent_actions"), ("Ping", "cpu_percent_ping")):
        u = r[key]
        print(
            f"CPU (% of one core), {label + ' phases:':<15} server {u['server']:.0f} "
            f"(event-loop thread {u['server_event_loop_thread']:.0f}), "
            f"clients {u['clients']:.0f}, other processes {u['other_processes']:.0f}"
        )
    print_caveats([r[k] for k in ("cpu_percent_actions", "cpu_percent_ping")], r["errors"])


# -- idle mode ------------------------------------------------------------------------------


async def create_idle(address: str, count: int, concurrency: int) -> None:
    async with channel(address) as ch:
        stub = spades_pb2_grpc.SpadesServiceStub(ch)
        request = pb.CreateMatchRequest(
            ruleset=RULESET_PB, seats=[pb.SeatConfig(name=f"idle {i}") for i in range(4)]
        )
        remaining = count

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await stub.CreateMatch(request, metadata=OPERATOR_MD)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))


def run_idle(args: argparse.Namespace, server: Server) -> dict[str, Any]:
    warm = 200  # first matches warm up caches and allocator arenas; not counted
    asyncio.run(create_idle(server.address, warm, 20))
    time.sleep(1.0)
    before = server.rss_kib()
    t0 = time.perf_counter()
    asyncio.run(create_idle(server.address, args.idle_matches, 20))
    seconds = time.perf_counter() - t0
    time.sleep(1.0)
    after = server.rss_kib()
    per = (after - before) / args.idle_matches
    return {
        "idle_matches": args.idle_matches,
        "warmup_matches": warm,
        "rss_kib_before": before,
        "rss_kib_after": after,
        "kib_per_match": per,
        "create_seconds": seconds,
        "creates_per_second": args.idle_matches / seconds,
    }


def print_idle(r: dict[str, Any]) -> None:
    print_table(
        [
            ("server VmRSS before", f"{r['rss_kib_before'] / 1024:,.1f} MiB", "", ""),
            (
                f"server VmRSS after {r['idle_matches']:,} more matches",
                f"{r['rss_kib_after'] / 1024:,.1f} MiB",
                "",
                "",
            ),
            (
                "RSS growth per idle match",
                f"{r['kib_per_match']:.1f} KiB",
                f"<= {TARGET_IDLE_KIB:g} KiB",
                _ok(r["kib_per_match"] <= TARGET_IDLE_KIB),
            ),
            ("CreateMatch calls/s (20 in flight)", f"{r['creates_per_second']:,.0f}", "", ""),
        ]
    )
    print()
    print(
        f"RSS is read from /proc/<server pid>/status after {r['warmup_matches']} warm-up matches "
        "and again 1 s after the last CreateMatch; KiB = 1024 bytes"
    )


# -- main -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Benchmark the gRPC server in a subprocess: actions/s, SubmitAction latency, "
        "fan-out to streams and the Ping baseline; or memory per idle match (--idle-matches)."
    )
    ap.add_argument("--matches", type=int, default=100, help="concurrent matches (100)")
    ap.add_argument(
        "--seconds", type=float, default=15.0, help="measured seconds of actions, in all (15)"
    )
    ap.add_argument(
        "--actions",
        type=int,
        default=0,
        help="measure this many actions instead of --seconds (0: use --seconds)",
    )
    ap.add_argument(
        "--ping-seconds",
        type=float,
        default=0.0,
        help="measured seconds of Ping, in all (default: --seconds)",
    )
    ap.add_argument("--rounds", type=int, default=3, help="alternations of actions and Ping (3)")
    ap.add_argument(
        "--warmup",
        type=float,
        default=3.0,
        help=f"unmeasured seconds before the first round (3); later phases ramp {RAMP_S:g} s",
    )
    ap.add_argument(
        "--think-ms",
        type=float,
        default=0.0,
        help="mean pause of a seat before each action, drawn uniformly from 0.5 to 1.5 times it "
        "(0: act at once, which saturates the server)",
    )
    ap.add_argument(
        "--stagger-s",
        type=float,
        default=None,
        help="each table's first action waits a random 0 to this many seconds, unmeasured "
        "(default: one hand of think time, 56 x --think-ms; 0 without it). Tables that all "
        "start at once end their hands together ever after, and then about half of the "
        "matches end and are replaced in the same half second",
    )
    ap.add_argument(
        "--store", choices=("sqlite", "memory"), default="sqlite", help="server store (sqlite)"
    )
    ap.add_argument(
        "--via",
        choices=("play", "unary"),
        default="play",
        help="how seats act: 'play', one Play call per seat carrying its actions and events "
        "(default); 'unary', SubmitAction calls beside a StreamEvents stream",
    )
    ap.add_argument(
        "--clients", type=int, default=1, help="client processes sharing the matches (1)"
    )
    ap.add_argument("--channels", type=int, default=1, help="gRPC channels per client process (1)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the matches and choices (1)")
    ap.add_argument(
        "--idle-matches",
        type=int,
        default=0,
        metavar="N",
        help="instead: create N idle matches, report the server's RSS growth per match",
    )
    ap.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra server argument, repeatable (--server-arg=--sqlite-synchronous=NORMAL)",
    )
    ap.add_argument(
        "--profile",
        metavar="PATH",
        help="run the server under cProfile (its event-loop thread), writing the stats to PATH",
    )
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    if min(args.matches, args.clients, args.channels, args.rounds) < 1 or args.seconds <= 0:
        ap.error("--matches, --clients, --channels, --rounds and --seconds must be positive")
    if args.ping_seconds <= 0:
        args.ping_seconds = args.seconds
    if args.stagger_s is None:
        args.stagger_s = ACTIONS_PER_HAND * args.think_ms / 1000.0
    if args.stagger_s < 0:
        ap.error("--stagger-s must not be negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print("Spades server benchmark (bench/server.py)")
    print(f"python  {platform.python_implementation()} {platform.python_version()}")
    print(f"cpu     {os.cpu_count()} cores, shared by the server and the clients")
    with tempfile.TemporaryDirectory(prefix="spades-bench-server-") as tmp:
        server = start_server(args.store, Path(tmp), args.server_arg, args.profile)
        store = "in memory"
        if args.store == "sqlite":
            sync = "NORMAL" if any("NORMAL" in a.upper() for a in args.server_arg) else "FULL"
            store = f"embedded SQLite (synchronous {sync}), in {tmp}"
        print(f"server  pid {server.pid} on {server.address}, store {store}")
        try:
            if args.idle_matches:
                print(f"load    {args.idle_matches:,} idle matches of 4 human seats, no streams")
                print()
                result = run_idle(args, server)
                print_idle(result)
            else:
                amount = f"{args.actions:,} actions" if args.actions else f"{args.seconds:g} s"
                print(
                    f"load    {args.matches} concurrent matches x 4 human seats "
                    f"({4 * args.matches} streams), {args.clients} client process(es), "
                    f"think time {args.think_ms:g} ms, first actions staggered over "
                    f"{args.stagger_s:g} s"
                )
                print(
                    f"phases  {args.rounds} rounds of actions then Ping: {amount} of actions, "
                    f"{args.ping_seconds:g} s of Ping in all, after "
                    f"{args.warmup + args.stagger_s:g} s of warm-up"
                )
                print()
                result = run_load(args, server)
                print_load(result, args)
        finally:
            server.stop()
    result["store"] = args.store
    result["server_args"] = args.server_arg
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 1 if result.get("errors") else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
