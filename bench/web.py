#!/usr/bin/env python3
"""Browsers' path: events on gRPC-Web streams through Envoy against direct gRPC.

One run starts, on loopback only, one server (``python3 -m spades_server.main``,
embedded SQLite store in a temporary directory, a rate limit high enough never
to refuse), the stack's static file server (``python3 -m spades_server.stack
static``, the web upstream the config names) and one Envoy (``.venv/bin/envoy``
from the ``proxy`` extra) on the repository's own ``deploy/envoy/envoy.yaml``,
rendered with ``spades_server.stack.render_config`` as ``make run`` renders it,
with ``--concurrency`` 1 as ``make run`` starts it (``--envoy-concurrency``).
All of them, and the client processes, stop when the bench ends, also on
Ctrl-C or SIGTERM (and by the kernel's parent-death signal if it is killed).

The load, in both modes: ``--matches`` paced matches (20) of four HUMAN seats
(classic preset). This process plays them: a seat acts when it is its turn,
after a think time drawn uniformly from 0.5 to 1.5 times ``--think-ms``
(250), with a random legal action, ``SubmitAction`` over direct gRPC
(grpc.aio), an ``action_id`` and ``expected_seq``. Unlike bench/server.py the
actor does not learn its turn from a stream: it keeps an engine replica of the
match fed by its own accepted actions (no bots, no timers, nobody else acts,
so the replica is exact), which keeps the streams under measurement in other
processes with nothing else to do. A match that ends is replaced by a new one
on the same table, and its first action waits until every stream of the
client processes is open on it (a stream opens from the match's first event,
``after_seq`` 0, and counts as open once its first message is in); the server
keeps a stream open after its match ends, so a stream closes itself when the
match's end arrives on it (that close is what Envoy counts as a reset by the
client, downstream_rq_rx_reset). Each table's first action of the run waits a
random 0 to ``--stagger-s`` (default one hand of think time, as in
bench/server.py), inside the warm-up.

What is measured: for each accepted action (the moment its ``SubmitAction``
response arrives here, ``time.monotonic()``, which on Linux is one clock for
every process of the machine), the delay until the action's event (its
``bid_made`` or ``card_played``, by sequence number) arrives on each stream of
its match, taken in the stream's process when the bytes that complete its
message have been read. An event that arrives before the response (the server
publishes, then answers) counts as 0 ms; how many did is printed ("early").
Actions accepted during the measured span count; their deliveries are
collected ``GRACE_S`` after it, and one that has not arrived by then is
counted missing. The time from the request being sent is printed too (in
the latency mode): it needs no 0 ms rule.

``--mode latency`` (the default): every seat of every match has one stream on
each path, all with its seat token, each path in its own client process:

* ``grpc``: native gRPC ``StreamEvents`` (grpc.aio), straight to the server,
  all of the process's streams on one HTTP/2 connection, as a native client;
* ``grpc-web``: gRPC-Web ``StreamEvents`` (``application/grpc-web+proto``)
  through Envoy over HTTP/1.1, one connection per stream, as a browser without
  HTTP/2 to the proxy does (aiohttp, from the ``tools`` extra; the framing is
  decoded here: a flag byte, 0x80 for the trailers, and a 4-byte big-endian
  length);
* ``connect``: the Connect protocol's server stream
  (``application/connect+proto``, enveloped messages, end of stream flag
  0x02) through Envoy's connect_grpc_bridge, also HTTP/1.1, one connection per
  stream (``--paths`` leaves paths out).

It prints count, p50, p90, p99 and max of the delay per path, from the same
run and the same actions.

``--mode capacity``: the same paced matches, plus K browser-style streams:
gRPC-Web through Envoy over HTTP/1.1, one connection each, as *spectators*
(``Spectate``, no credential: the public events, what a spectator's browser
or a page showing a table without a seat opens; a seat's own gRPC-Web stream
costs the same per message, see the latency mode). The seats act without
streams of their own in this mode. The spectators are spread evenly over the
matches (and follow each table to its next match) and over ``--clients``
client processes (each one asyncio loop). K steps up (``--streams``,
100,250,500,1000,2000,4000); each step is held ``--step-seconds`` after all
its streams are open, and prints: streams open (by the clients, by the
server's ``spades_open_streams`` gauge, by Envoy's active downstream
requests), events delivered, their p50/p99/max delay, and the CPU of the
server, Envoy, the stream clients and this process (the actors), as per cent
of one core. It stops after the first step whose p99 is 50 ms or more
(``--keep-going``: not) and reports the largest K with p99 under 50 ms and
no delivery missing.
The server runs with ``--streams-per-match`` high enough for the step (its
default, 64, would refuse the 65th stream of a match: 20 matches hold at most
1,280 streams with it); everything else in the server and Envoy is as
shipped. Envoy's counters of refused, overflowed, timed-out and reset
requests are read from its admin interface after every step and printed when
any is not zero, but for the resets of the streams the clients closed
themselves, which are counted apart (``--log-dir`` keeps its access log, with
each call's response flags).

The server, Envoy and the clients share the machine's cores (2 on the
project's machine): the figures are those of that one box, not of Envoy or
the server alone.

    python3 bench/web.py [--matches 20] [--think-ms 250] [--seconds 30]
                         [--paths grpc,grpc-web,connect]
    python3 bench/web.py --mode capacity [--streams 100,250,500,1000,2000,4000]
                         [--step-seconds 15] [--clients 2] [--keep-going]
    python3 bench/web.py --seconds 5                # a short run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import re
import signal
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from spades_server import convert, stack
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc
from spades_server.main import tune_gc

from cpu_usage import GroupMeter, percents, warn_if_disturbed
from load import (
    SERVICE,
    StreamError,
    http_stream,
    ms,
    pct,
    print_grid,
    split,
    web_headers,
)
from processes import (
    OPERATOR_MD,
    Envoy,
    Procs,
    Server,
    die_with_parent,
    start_process,
    stop_processes,
)
from server import ACTIONS_PER_HAND, RULES, RULESET_PB
from spades_engine import Match

PATHS = ("grpc", "grpc-web", "connect")
PATH_LABELS = {
    "grpc": "direct gRPC (grpc.aio, HTTP/2)",
    "grpc-web": "gRPC-Web via Envoy (HTTP/1.1)",
    "connect": "Connect via Envoy (HTTP/1.1)",
}
TARGET_P99_MS = 50.0  # the bar for the capacity mode
GRACE_S = 2.0  # after a measured span, before its deliveries are collected
READY_TIMEOUT_S = 120.0  # streams to open (a whole step's)
CALL_TIMEOUT_S = 30.0  # no unary call may hang the bench
OPEN_CONCURRENCY = 64  # streams being opened at once, per client process
ACTION_KINDS = frozenset({"card_played", "bid_made"})
# Envoy counters that mean a request was refused, cut or failed; printed when not 0.
ENVOY_BAD = re.compile(
    r"(overflow|timeout|_reset|rq_5xx|cx_destroy_remote_with_active_rq|"
    r"cx_destroy_local_with_active_rq|overload|rejected|cx_protocol_error|rq_retry)"
)
# What Envoy counts when a client closes its stream (a table moving to its next
# match): the downstream reset and the reset of the upstream stream it causes.
CLIENT_CLOSES = frozenset(
    {
        "http.spades.downstream_rq_rx_reset",
        "http.spades.downstream_cx_destroy_remote_active_rq",
        "cluster.spades_server.upstream_rq_tx_reset",
        "cluster.spades_server.http2.tx_reset",
    }
)


# -- the processes ----------------------------------------------------------------------------


@dataclass
class Stack:
    """The server and Envoy the bench measures (started and stopped by a Procs)."""

    server: Server
    envoy: Envoy

    def server_open_streams(self) -> int:
        with urllib.request.urlopen(self.server.metrics_url, timeout=10) as resp:
            for line in resp.read().decode().splitlines():
                if line.startswith("spades_open_streams "):
                    return int(float(line.split()[1]))
        return -1


def start(procs: Procs, server_args: list[str], envoy: str, concurrency: int) -> Stack:
    """The stack's static file server (the web upstream the config names;
    no web table to serve), the server, and Envoy in front of both."""
    argv = [sys.executable, "-m", "spades_server.stack", "static"]
    argv += ["--dir", str(procs.workdir / "no-web-table")]
    static = procs.child("static", argv, stack.STATIC_READY)
    server = procs.replica("server", "sqlite", extra=server_args)
    web = (static["host"], int(static["port"]))
    return Stack(server, procs.start_envoy([server], web, binary=envoy, concurrency=concurrency))


# -- the stream clients (one process per path, or per share of the spectators) ------------------


class Recorder:
    """Arrival times of action events, by (match id, seq), over all of a
    process's streams; and what went wrong."""

    def __init__(self) -> None:
        self.arrivals: dict[tuple[str, int], list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.closed = 0  # streams closed by this process: their match ended, or the run

    def message(self, match_id: str, data: bytes, now: float) -> bool:
        """Note the arrival of a stream message's action events; True if the
        match ended in it (the stream is then closed: the server keeps it open)."""
        arrivals = self.arrivals
        ended = False
        # SpectateResponse and StreamEventsResponse have the same wire format.
        for ev in pb.StreamEventsResponse.FromString(data).events:
            kind = ev.WhichOneof("kind")
            if kind in ACTION_KINDS:
                arrivals[match_id, ev.seq].append(now)
            elif kind == "match_ended":
                ended = True
        return ended

    def error(self, text: str) -> None:
        if len(self.errors) < 50:
            self.errors.append(text[:300])


class Opener:
    """Opens streams of one path; each runs as a task until cancelled."""

    def __init__(self, path: str, cfg: dict[str, Any], rec: Recorder) -> None:
        self.path = path
        self.rec = rec
        self.gate = asyncio.Semaphore(OPEN_CONCURRENCY)
        self.base = f"http://127.0.0.1:{cfg['envoy_port']}{SERVICE}"
        self.origin = cfg["origin"]
        self.channel: grpc.aio.Channel | None = None
        self.session: aiohttp.ClientSession | None = None
        if path == "grpc":
            self.channel = grpc.aio.insecure_channel(
                cfg["server_address"],
                options=[("grpc.use_local_subchannel_pool", 1), ("grpc.enable_retries", 0)],
            )
            self.stub = spades_pb2_grpc.SpadesServiceStub(self.channel)
        else:
            # One connection per stream, none reused, no overall timeout (streams last).
            connector = aiohttp.TCPConnector(limit=0, force_close=True)
            timeout = aiohttp.ClientTimeout(total=None, connect=30, sock_connect=30)
            self.session = aiohttp.ClientSession(connector=connector, timeout=timeout)

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close()
        if self.session is not None:
            await self.session.close()

    async def run(
        self, match_id: str, token: str | None, ready: asyncio.Future[bool | None]
    ) -> None:
        """One stream: a seat's (``token``) or a spectator's (None), until its
        match ends (then this closes it) or it is cancelled. ``ready`` is set
        when it is open (True: its first message came), has failed (False) or
        was closed before it opened (None)."""
        try:
            async with self.gate:  # released once the stream is open (first message)
                if self.path == "grpc":
                    reader = self._grpc(match_id, token, ready)
                else:
                    reader = self._http(match_id, token, ready)
                with contextlib.suppress(StopAsyncIteration):
                    await reader.__anext__()
            async for _ in reader:
                pass
            self.rec.closed += 1
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_result(None)
            raise
        except Exception as e:
            self.rec.error(f"{self.path} stream of {match_id}: {type(e).__name__} {e}")
        finally:
            if not ready.done():
                ready.set_result(False)

    async def _grpc(
        self, match_id: str, token: str | None, ready: asyncio.Future[bool | None]
    ) -> Any:
        # Raw bytes, decoded by the recorder, as on the other paths.
        assert self.channel is not None
        method = SERVICE + ("Spectate" if token is None else "StreamEvents")
        request = pb.StreamEventsRequest(match_id=match_id).SerializeToString()
        md = None if token is None else (("authorization", f"Bearer {token}"),)
        call = self.channel.unary_stream(method)(request, metadata=md)
        clock, rec = time.monotonic, self.rec
        try:
            while (data := await call.read()) is not grpc.aio.EOF:
                ended = rec.message(match_id, data, clock())
                if not ready.done():
                    ready.set_result(True)
                    yield
                if ended:
                    return
            raise StreamError("the stream ended before its match")
        finally:
            call.cancel()

    async def _http(
        self, match_id: str, token: str | None, ready: asyncio.Future[bool | None]
    ) -> Any:
        method = "Spectate" if token is None else "StreamEvents"
        request = pb.StreamEventsRequest(match_id=match_id).SerializeToString()
        assert self.session is not None
        messages = http_stream(
            self.session, self.base + method, request, web_headers(self.path, self.origin, token)
        )
        rec = self.rec
        async with contextlib.aclosing(messages):
            async for now, data in messages:
                ended = rec.message(match_id, data, now)
                if not ready.done():
                    ready.set_result(True)
                    yield
                if ended:
                    return


@dataclass
class TableStreams:
    match_id: str = ""
    tokens: list[str] = field(default_factory=list)
    spectators: int = 0  # wanted, on the current match
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class Client:
    """One client process: its streams on every table, as the parent orders."""

    def __init__(self, conn: Connection, cfg: dict[str, Any]) -> None:
        self.conn = conn
        self.cfg = cfg
        self.rec = Recorder()
        self.opener = Opener(cfg["path"], cfg, self.rec)
        self.tables: dict[int, TableStreams] = defaultdict(TableStreams)
        self.done = asyncio.Event()
        self.jobs: set[asyncio.Task[None]] = set()
        self.failed_by_match: dict[str, int] = {}  # streams that failed to open, by match
        self.failed_new = 0  # since the last collect

    def send(self, msg: Any) -> None:
        self.conn.send(msg)

    def on_readable(self) -> None:
        while self.conn.poll():
            msg = self.conn.recv()
            job = asyncio.create_task(self.handle(msg))
            self.jobs.add(job)
            job.add_done_callback(self.jobs.discard)

    async def open(self, t: int, match_id: str, tokens: list[str | None]) -> tuple[int, int]:
        """Open streams on ``match_id`` for table ``t``; (opened, failed) once
        each has its first message, has failed or was closed (the table moved on)."""
        table = self.tables[t]
        readies = []
        for token in tokens:
            ready: asyncio.Future[bool | None] = asyncio.get_running_loop().create_future()
            table.tasks.append(asyncio.create_task(self.opener.run(match_id, token, ready)))
            readies.append(ready)
        got = await asyncio.gather(*readies)
        failed = got.count(False)
        if failed:  # not retried: their match's deliveries are not expected of them
            self.failed_by_match[match_id] = self.failed_by_match.get(match_id, 0) + failed
            self.failed_new += failed
        return got.count(True), failed

    def close_table(self, t: int) -> list[asyncio.Task[None]]:
        """Forget table ``t``'s streams; the ones still open, to be closed."""
        tasks, self.tables[t].tasks = self.tables[t].tasks, []
        return [k for k in tasks if not k.done()]

    def close(self, tasks: list[asyncio.Task[None]]) -> None:
        for task in tasks:
            if not task.done():
                self.rec.closed += 1
                task.cancel()

    async def close_later(self, tasks: list[asyncio.Task[None]]) -> None:
        """Streams of a match that ended close themselves when its end arrives;
        close any that has not within ``GRACE_S`` of its table's next match."""
        await asyncio.sleep(GRACE_S)
        left = [k for k in tasks if not k.done()]
        if left:
            self.rec.error(
                f"{len(left)} streams had not seen their match end {GRACE_S:g} s after "
                "their table's next match began; closed"
            )
        self.close(left)

    def wanted(self, table: TableStreams) -> list[str | None]:
        if self.cfg["kind"] == "seats":
            return list(table.tokens)
        return [None] * table.spectators

    async def handle(self, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "table":  # ("table", t, match id, seat tokens): a new match on table t
            _, t, match_id, tokens = msg
            old = self.close_table(t)
            if old:
                later = asyncio.create_task(self.close_later(old))
                self.jobs.add(later)
                later.add_done_callback(self.jobs.discard)
            table = self.tables[t]
            table.match_id, table.tokens = match_id, tokens
            opened, failed = await self.open(t, match_id, self.wanted(table))
            self.send(("ready", t, match_id, opened, failed))
        elif kind == "spectators":  # ("spectators", {t: n}): n on table t from now on
            jobs = []
            for t, n in msg[1].items():
                table = self.tables[t]
                more = n - table.spectators
                table.spectators = n
                if more > 0 and table.match_id:
                    jobs.append(self.open(t, table.match_id, [None] * more))
            got = await asyncio.gather(*jobs)
            self.send(("grown", sum(o for o, _ in got), sum(f for _, f in got)))
        elif kind == "collect":
            arrivals, self.rec.arrivals = self.rec.arrivals, defaultdict(list)
            errors, self.rec.errors = self.rec.errors, []
            open_now = sum(1 for tb in self.tables.values() for k in tb.tasks if not k.done())
            self.send((
                "arrivals", dict(arrivals), errors, self.rec.closed, open_now,
                self.failed_new, dict(self.failed_by_match),
            ))  # fmt: skip
            self.rec.closed = self.failed_new = 0
        elif kind == "stop":
            for t in list(self.tables):
                self.close(self.close_table(t))
            for job in list(self.jobs):
                if job is not asyncio.current_task():
                    job.cancel()
            await asyncio.sleep(0.2)
            await self.opener.close()
            self.done.set()


def client_process(conn: Connection, cfg: dict[str, Any]) -> None:
    die_with_parent()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_client_main(conn, cfg))


async def _client_main(conn: Connection, cfg: dict[str, Any]) -> None:
    client = Client(conn, cfg)
    tune_gc()  # the server's own tuning: the clients share its cores
    loop = asyncio.get_running_loop()
    loop.add_reader(conn.fileno(), client.on_readable)
    conn.send(("started",))
    await client.done.wait()
    loop.remove_reader(conn.fileno())


# -- the actors (this process) and the parent's side of the clients ------------------------------


@dataclass
class Accepted:
    sent: float
    accepted: float


class Clients:
    """The client processes, from the parent's event loop."""

    def __init__(self, cfgs: list[dict[str, Any]]) -> None:
        self.cfgs = cfgs
        self.conns: list[Connection] = []
        self.procs: list[BaseProcess] = []
        for cfg in cfgs:
            p, conn = start_process(client_process, cfg)
            self.conns.append(conn)
            self.procs.append(p)
        self.queues: list[asyncio.Queue[Any]] = []
        # (table, match id) -> each process's (opened, failed), and its one waiter's event
        self.ready: dict[tuple[int, str], list[tuple[int, int]]] = defaultdict(list)
        self.ready_events: dict[tuple[int, str], asyncio.Event] = defaultdict(asyncio.Event)

    @property
    def pids(self) -> list[int]:
        return [p.pid or 0 for p in self.procs]

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.queues = [asyncio.Queue() for _ in self.conns]
        for i, conn in enumerate(self.conns):
            loop.add_reader(conn.fileno(), self._readable, i)
        for i in range(len(self.conns)):
            await self.expect(i, "started")

    def _readable(self, i: int) -> None:
        conn = self.conns[i]
        try:
            while conn.poll():
                msg = conn.recv()
                if msg[0] == "ready":  # ("ready", t, match id, opened, failed)
                    self.ready[msg[1], msg[2]].append((msg[3], msg[4]))
                    self.ready_events[msg[1], msg[2]].set()
                else:
                    self.queues[i].put_nowait(msg)
        except (EOFError, OSError):
            asyncio.get_running_loop().remove_reader(conn.fileno())
            self.queues[i].put_nowait(("dead",))

    async def expect(self, i: int, kind: str, timeout: float = READY_TIMEOUT_S) -> Any:
        try:
            msg = await asyncio.wait_for(self.queues[i].get(), timeout)
        except TimeoutError:
            raise SystemExit(f"client process {i} gave no {kind!r} within {timeout:g} s") from None
        if msg[0] != kind:
            raise SystemExit(f"client process {i}: {msg[0]!r} instead of {kind!r}")
        return msg

    def send(self, i: int, msg: Any) -> None:
        self.conns[i].send(msg)

    def broadcast(self, msg: Any) -> None:
        for conn in self.conns:
            conn.send(msg)

    async def wait_ready(self, t: int, match_id: str) -> tuple[int, int]:
        """Every process's streams open on ``match_id``: (opened, failed) in all."""
        key = (t, match_id)
        event = self.ready_events[key]
        deadline = time.monotonic() + READY_TIMEOUT_S
        while len(self.ready[key]) < len(self.conns):
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit(f"the streams of table {t} did not open in {READY_TIMEOUT_S} s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), left)
            event.clear()
        del self.ready_events[key]
        got = self.ready.pop(key)
        return sum(o for o, _ in got), sum(f for _, f in got)

    async def collect(self) -> dict[str, Any]:
        """Since the last collect: the arrivals, by (match id, seq), a list per
        process; the errors; the streams each process closed; the streams that
        failed to open (and, per process, by match since the start); streams
        open now."""
        self.broadcast(("collect",))
        per: dict[tuple[str, int], list[list[float]]] = {}
        out: dict[str, Any] = {
            "arrivals": per, "errors": [], "closed": [], "open": 0, "failed": 0,
            "failed_by_match": [],
        }  # fmt: skip
        for i in range(len(self.conns)):
            _, arrivals, errs, n_closed, n_open, n_failed, by_match = await self.expect(
                i, "arrivals"
            )
            out["failed"] += n_failed
            out["failed_by_match"].append(by_match)
            for key, times in arrivals.items():
                per.setdefault(key, [[] for _ in self.conns])[i] = times
            out["errors"] += errs
            out["closed"].append(n_closed)
            out["open"] += n_open
        return out

    async def stop(self) -> None:
        """Ask each process to close its streams and exit; kill what is left after 10 s."""
        for conn in self.conns:
            with contextlib.suppress(OSError, ValueError):
                conn.send(("stop",))
        deadline = time.monotonic() + 10.0
        while any(p.is_alive() for p in self.procs) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop_processes(self.procs)


class Driver:
    """The paced matches: this process plays every seat with SubmitAction."""

    def __init__(self, args: argparse.Namespace, address: str, clients: Clients) -> None:
        self.args = args
        self.clients = clients
        self.channel = grpc.aio.insecure_channel(
            address, options=[("grpc.use_local_subchannel_pool", 1), ("grpc.enable_retries", 0)]
        )
        self.stub = spades_pb2_grpc.SpadesServiceStub(self.channel)
        self.think_s = args.think_ms / 1000.0
        self.rng = random.Random(args.seed)
        self.accepted: dict[tuple[str, int], Accepted] = {}
        self.match_of: dict[int, str] = {}  # table -> its current match
        self.table_of: dict[str, int] = {}  # every match -> its table
        self.errors: list[str] = []
        self.stopping = False
        self.matches_started = 0
        self.matches_finished = 0
        self.stream_failures = 0

    async def new_match(self, t: int) -> tuple[str, list[str], int, int]:
        """A new match on table ``t``, its seats claimed and every client's
        streams open on it: (match id, seat tokens, seed, its last seq)."""
        seed = self.rng.getrandbits(63)
        created = await self.stub.CreateMatch(
            pb.CreateMatchRequest(
                ruleset=RULESET_PB,
                seats=[pb.SeatConfig(name=f"web {i}") for i in range(4)],
                seed=seed,
                has_seed=True,
            ),
            metadata=OPERATOR_MD,
            timeout=CALL_TIMEOUT_S,
        )
        match_id = created.match.match_id
        tokens = [s.token for s in created.seat_tokens]
        last = 0
        for token in tokens:
            claimed = await self.stub.ClaimSeat(
                pb.ClaimSeatRequest(match_id=match_id),
                metadata=(("authorization", f"Bearer {token}"),),
                timeout=CALL_TIMEOUT_S,
            )
            last = claimed.view.as_of_seq
        self.clients.broadcast(("table", t, match_id, tokens))
        _, failed = await self.clients.wait_ready(t, match_id)
        self.stream_failures += failed
        self.match_of[t] = match_id
        self.table_of[match_id] = t
        self.matches_started += 1
        return match_id, tokens, seed, last

    async def table(self, t: int) -> None:
        rng = random.Random(self.rng.getrandbits(64))
        delay = rng.uniform(0.0, self.args.stagger_s)
        while not self.stopping:
            try:
                match_id, tokens, seed, last_seq = await self.new_match(t)
            except grpc.aio.AioRpcError as e:
                self.errors.append(f"a new match: {e.code().name} {e.details()}")
                await asyncio.sleep(1.0)
                continue
            mds = [(("authorization", f"Bearer {tok}"),) for tok in tokens]
            replica = Match(RULES, seed=seed)
            if delay:
                await asyncio.sleep(delay)
                delay = 0.0
            while not replica.is_over and not self.stopping:
                seat = replica.to_act
                await asyncio.sleep(self.think_s * (0.5 + rng.random()))
                if self.stopping:
                    return
                action = rng.choice(replica.legal_actions(seat))
                request = pb.SubmitActionRequest(
                    match_id=match_id,
                    action_id=f"a{len(replica.actions)}",
                    action=convert.action_to_pb(action),
                    expected_seq=last_seq,  # nobody else acts: the log's last event
                )
                sent = time.monotonic()
                try:
                    response = await self.stub.SubmitAction(
                        request, metadata=mds[seat], timeout=CALL_TIMEOUT_S
                    )
                except grpc.aio.AioRpcError as e:
                    self.errors.append(f"SubmitAction: {e.code().name} {e.details()}")
                    break
                now = time.monotonic()
                self.accepted[match_id, response.events[0].seq] = Accepted(sent, now)
                replica.apply(seat, action)
                last_seq = response.last_seq
            if replica.is_over:
                self.matches_finished += 1

    async def close(self) -> None:
        await self.channel.close()


# -- statistics -----------------------------------------------------------------------------------


def delays(
    driver: Driver,
    arrivals: dict[tuple[str, int], list[list[float]]],
    expected: Callable[[str, int], int],
    start: float,
    end: float,
    n: int,
) -> list[dict[str, Any]]:
    """Per client process (or path), for the actions accepted in [start, end):
    the delays from the accepted action (0 for an early one) and from its
    request being sent, sorted; early and missing deliveries."""
    out = [
        {"delays": [], "from_sent": [], "early": 0, "missing": 0, "actions": 0} for _ in range(n)
    ]
    for key, acc in driver.accepted.items():
        if not start <= acc.accepted < end:
            continue
        got = arrivals.get(key)
        for i in range(n):
            times = got[i] if got else []
            r = out[i]
            r["actions"] += 1
            r["missing"] += max(0, expected(key[0], i) - len(times))
            for t in times:
                d = t - acc.accepted
                if d < 0:
                    r["early"] += 1
                r["delays"].append(max(0.0, d))
                r["from_sent"].append(t - acc.sent)
    for r in out:
        r["delays"].sort()
        r["from_sent"].sort()
    return out


def summary(r: dict[str, Any]) -> dict[str, Any]:
    d, f = r["delays"], r["from_sent"]
    return {
        "deliveries": len(d),
        "early": r["early"],
        "missing": r["missing"],
        "actions": r["actions"],
        "p50_ms": ms(pct(d, 0.50)),
        "p90_ms": ms(pct(d, 0.90)),
        "p99_ms": ms(pct(d, 0.99)),
        "max_ms": ms(d[-1]) if d else float("nan"),
        "from_sent_p50_ms": ms(pct(f, 0.50)),
        "from_sent_p90_ms": ms(pct(f, 0.90)),
        "from_sent_p99_ms": ms(pct(f, 0.99)),
        "from_sent_max_ms": ms(f[-1]) if f else float("nan"),
    }


def fmt_ms(x: float) -> str:
    return f"{x:.2f}"


def envoy_moved(before: dict[str, int], after: dict[str, int]) -> tuple[dict[str, int], int]:
    """Envoy's counters of trouble that moved, but for the resets of the streams
    the clients closed; and how many downstream streams were reset by their client."""
    moved = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    bad = {
        k: d
        for k, d in moved.items()
        if ENVOY_BAD.search(k) and k not in CLIENT_CLOSES and not k.endswith("_active")
    }
    return bad, moved.get("http.spades.downstream_rq_rx_reset", 0)


# -- the modes -------------------------------------------------------------------------------------


async def latency_mode(args: argparse.Namespace, st: Stack) -> dict[str, Any]:
    base = {
        "envoy_port": st.envoy.port,
        "origin": st.envoy.origin,
        "server_address": st.server.address,
    }
    cfgs = [dict(base, path=p, kind="seats") for p in args.paths]
    clients = Clients(cfgs)
    driver = Driver(args, st.server.address, clients)
    meter = GroupMeter(
        {
            "server": [st.server.pid],
            "envoy": [st.envoy.pid],
            **{f"client {p}": [pid] for p, pid in zip(args.paths, clients.pids, strict=True)},
            "actors": [os.getpid()],
        }
    )
    try:
        await clients.start()
        tables = [asyncio.create_task(driver.table(t)) for t in range(args.matches)]
        await asyncio.sleep(args.warmup + args.stagger_s)
        await clients.collect()  # the warm-up's arrivals and closes
        stats0 = st.envoy.stats()
        meter.start()
        start = time.monotonic()
        await asyncio.sleep(args.seconds)
        end = time.monotonic()
        cpu = percents(meter.stop())
        open_server = st.server_open_streams()
        open_envoy = st.envoy.stats().get("http.spades.downstream_rq_active", -1)
        await asyncio.sleep(GRACE_S)
        got = await clients.collect()
        bad, resets = envoy_moved(stats0, st.envoy.stats())
        driver.stopping = True
        await asyncio.wait(tables, timeout=30)
    finally:
        driver.stopping = True
        await clients.stop()
        await driver.close()
    failed = got["failed_by_match"]
    per = delays(
        driver,
        got["arrivals"],
        lambda m, i: 4 - failed[i].get(m, 0),
        start,
        end,
        len(args.paths),
    )
    submits = sorted(
        a.accepted - a.sent for a in driver.accepted.values() if start <= a.accepted < end
    )
    closed = got["closed"]
    return {
        "mode": "latency",
        "paths": {p: summary(r) for p, r in zip(args.paths, per, strict=True)},
        "streams_per_path": 4 * args.matches,
        "streams_open_clients": got["open"],
        "streams_open_server": open_server,
        "streams_open_envoy": open_envoy,
        "measured_seconds": end - start,
        "actions": len(submits),
        "actions_per_second": len(submits) / (end - start),
        "submit_ms_p50": ms(pct(submits, 0.50)),
        "submit_ms_p99": ms(pct(submits, 0.99)),
        "cpu_percent": cpu,
        "envoy_trouble": bad,
        "envoy_client_resets": resets,
        "closed_by_clients_via_envoy": sum(
            c for c, p in zip(closed, args.paths, strict=True) if p != "grpc"
        ),
        "matches_started": driver.matches_started,
        "matches_finished": driver.matches_finished,
        "stream_failures": driver.stream_failures,
        "errors": (driver.errors + got["errors"])[:50],
    }


def print_latency(r: dict[str, Any]) -> None:
    for title, key in (
        ("accepted action (its SubmitAction response) -> its event on a seat's stream, ms", ""),
        ("request sent -> the action's event on a seat's stream, ms", "from_sent_"),
    ):
        rows = []
        for p, s in r["paths"].items():
            rows.append(
                [
                    PATH_LABELS[p],
                    f"{r['streams_per_path']}",
                    f"{s['deliveries']:,}",
                    f"{s['missing']:,}",
                    f"{s['early']:,}" if not key else "",
                    *(fmt_ms(s[f"{key}{q}_ms"]) for q in ("p50", "p90", "p99", "max")),
                ]
            )
        print(title)
        early = "early" if not key else ""
        print_grid(
            ["path", "streams", "deliveries", "missing", early, "p50", "p90", "p99", "max"], rows
        )
        print()
    print(
        f"measured {r['actions']:,} accepted actions in {r['measured_seconds']:.1f} s "
        f"({r['actions_per_second']:,.0f} actions/s), each to 4 seat streams per path; "
        f"SubmitAction (direct gRPC) p50 {r['submit_ms_p50']:.2f} ms, "
        f"p99 {r['submit_ms_p99']:.2f} ms"
    )
    print(
        "early: on the stream before the actor had its SubmitAction response (the server "
        "publishes, then answers), counted as 0 ms; missing: not on the stream "
        f"{GRACE_S:g} s after the span"
    )
    print(
        f"streams open at the end: {r['streams_open_clients']:,} by the clients, "
        f"{r['streams_open_server']:,} by the server's gauge, {r['streams_open_envoy']:,} "
        f"through Envoy; matches: {r['matches_started']:,} started, "
        f"{r['matches_finished']:,} played to the end"
    )
    if r["stream_failures"]:
        print(f"{r['stream_failures']:,} streams failed to open (not retried, not expected)")
    print_cpu(r["cpu_percent"])
    print_trouble(r["envoy_trouble"], r["envoy_client_resets"], r["closed_by_clients_via_envoy"])
    print_errors(r["errors"])


def print_cpu(cpu: dict[str, float]) -> None:
    parts = ", ".join(f"{k} {v:.0f}" for k, v in cpu.items())
    print(f"CPU (% of one core, measured span): {parts}")
    warn_if_disturbed([cpu["other"]])


def print_trouble(bad: dict[str, int], resets: int, closed: int) -> None:
    if bad:
        print("Envoy counters of refused, cut or failed requests that moved:")
        for k, v in sorted(bad.items()):
            print(f"  {k}: {v:,}")
    else:
        print(
            "Envoy: no overflow, timeout, 5xx or server-side reset counter moved; "
            f"{resets:,} streams reset by their client (downstream_rq_rx_reset), the clients "
            f"closed {closed:,} (a table's next match)"
        )


def print_errors(errors: list[str]) -> None:
    if errors:
        print(f"ERRORS ({len(errors)}):")
        for e in errors[:10]:
            print(f"  {e}")


async def capacity_step(
    st: Stack, clients: Clients, driver: Driver, k: int, args: argparse.Namespace
) -> dict[str, Any]:
    """Grow the spectators to ``k``, hold the step, measure it."""
    n = len(clients.conns)
    per_table = split(k, args.matches)
    counts: list[dict[int, int]] = [{} for _ in range(n)]
    for t, m in enumerate(per_table):
        for i, share in enumerate(split(m, n)):
            counts[i][t] = share
    t_open = time.monotonic()
    for i in range(n):
        clients.send(i, ("spectators", counts[i]))
    for i in range(n):
        await clients.expect(i, "grown")
    open_seconds = time.monotonic() - t_open
    await asyncio.sleep(1.0)  # the last streams' backlogs
    before = await clients.collect()  # arrivals and closes so far: not this step's
    stats0 = st.envoy.stats()
    meter = driver_meter(st, clients)
    meter.start()
    start = time.monotonic()
    await asyncio.sleep(args.step_seconds)
    end = time.monotonic()
    cpu = percents(meter.stop())
    envoy_active = st.envoy.stats().get("http.spades.downstream_rq_active", -1)
    server_open = st.server_open_streams()
    await asyncio.sleep(GRACE_S)
    got = await clients.collect()
    bad, resets = envoy_moved(stats0, st.envoy.stats())
    # Every measured action's match had all its spectators open (a table's new
    # match waits for them): the expected deliveries per process are its share,
    # less the streams that failed to open on that match.
    table_of = driver.table_of
    failed_on = got["failed_by_match"]
    per = delays(
        driver,
        got["arrivals"],
        lambda m, i: counts[i].get(table_of.get(m, -1), 0) - failed_on[i].get(m, 0),
        start,
        end,
        n,
    )
    merged = {
        "delays": sorted(d for r in per for d in r["delays"]),
        "from_sent": sorted(d for r in per for d in r["from_sent"]),
        "early": sum(r["early"] for r in per),
        "missing": sum(r["missing"] for r in per),
        "actions": per[0]["actions"] if per else 0,
    }
    s = summary(merged)
    return {
        "streams": k,
        "open_clients": got["open"],
        "open_server": server_open,
        "open_envoy": envoy_active,
        "open_seconds": open_seconds,
        "failed_to_open": before["failed"] + got["failed"],
        "measured_seconds": end - start,
        **s,
        "deliveries_per_second": s["deliveries"] / (end - start),
        "actions_per_second": s["actions"] / (end - start),
        "cpu_percent": cpu,
        "envoy_trouble": bad,
        "envoy_client_resets": resets,
        "closed_by_clients": sum(got["closed"]),
        "errors": got["errors"][:20],
    }


def driver_meter(st: Stack, clients: Clients) -> GroupMeter:
    return GroupMeter(
        {
            "server": [st.server.pid],
            "envoy": [st.envoy.pid],
            "clients": clients.pids,
            "actors": [os.getpid()],
        }
    )


CAPACITY_HEADER = [
    "streams",
    "open",
    "server",
    "envoy",
    "open s",
    "delivered",
    "per s",
    "missing",
    "failed",
    "p50 ms",
    "p99 ms",
    "max ms",
    "server %",
    "envoy %",
    "clients %",
    "actors %",
    "other %",
    "p99<50",
]


def capacity_line(cells: list[str]) -> str:
    """One line of the capacity table, printed as each step ends."""
    return "  ".join(c.rjust(max(len(h), 8)) for c, h in zip(cells, CAPACITY_HEADER, strict=True))


def capacity_row(s: dict[str, Any]) -> list[str]:
    c = s["cpu_percent"]
    return [
        f"{s['streams']:,}",
        f"{s['open_clients']:,}",
        f"{s['open_server']:,}",
        f"{s['open_envoy']:,}",
        f"{s['open_seconds']:.1f}",
        f"{s['deliveries']:,}",
        f"{s['deliveries_per_second']:,.0f}",
        f"{s['missing']:,}",
        f"{s['failed_to_open']:,}",
        fmt_ms(s["p50_ms"]),
        fmt_ms(s["p99_ms"]),
        fmt_ms(s["max_ms"]),
        f"{c['server']:.0f}",
        f"{c['envoy']:.0f}",
        f"{c['clients']:.0f}",
        f"{c['actors']:.0f}",
        f"{c['other']:.0f}",
        "yes" if s["p99_ms"] < TARGET_P99_MS else "NO",
    ]


async def capacity_mode(args: argparse.Namespace, st: Stack) -> dict[str, Any]:
    base = {
        "envoy_port": st.envoy.port,
        "origin": st.envoy.origin,
        "server_address": st.server.address,
    }
    cfgs = [dict(base, path="grpc-web", kind="spectators") for _ in range(args.clients)]
    clients = Clients(cfgs)
    driver = Driver(args, st.server.address, clients)
    steps: list[dict[str, Any]] = []
    try:
        await clients.start()
        tables = [asyncio.create_task(driver.table(t)) for t in range(args.matches)]
        await asyncio.sleep(args.warmup + args.stagger_s)
        header = capacity_line(CAPACITY_HEADER)
        print(header)
        print("-" * len(header), flush=True)
        for k in args.streams:
            step = await capacity_step(st, clients, driver, k, args)
            steps.append(step)
            print(capacity_line(capacity_row(step)), flush=True)
            if step["p99_ms"] >= TARGET_P99_MS and not args.keep_going:
                break
        driver.stopping = True
        await asyncio.wait(tables, timeout=30)
    finally:
        driver.stopping = True
        await clients.stop()
        await driver.close()
    held = [s["streams"] for s in steps if s["p99_ms"] < TARGET_P99_MS and not s["missing"]]
    return {
        "mode": "capacity",
        "steps": steps,
        "largest_streams_p99_under_50ms": max(held) if held else 0,
        "matches_started": driver.matches_started,
        "matches_finished": driver.matches_finished,
        "stream_failures": driver.stream_failures,
        "errors": driver.errors[:50],
    }


def print_capacity(r: dict[str, Any]) -> None:
    print()
    print(
        "streams: the step's spectator streams (gRPC-Web through Envoy, HTTP/1.1, one connection "
        "each); open: by the clients, by the server's spades_open_streams gauge and by Envoy's "
        "active downstream requests, at the end of the step; open s: the time the step took to "
        "open its new streams; delivered: action events on the streams, of the actions accepted "
        "in the step, per s of the step; missing: not on an open stream 2 s after the step; "
        "failed: streams that failed to open since the previous step (not retried, and not "
        "expected to deliver); delay (ms) from the accepted action (its SubmitAction "
        "response) to its event on each stream, 0 if it was there first; % of one core over the "
        "step: server, Envoy, the stream clients, the actors (this process), other processes"
    )
    steps = r["steps"]
    held = r["largest_streams_p99_under_50ms"]
    print(f"largest K with p99 < {TARGET_P99_MS:g} ms: {held:,}" if held else "no step held")
    print(f"matches: {r['matches_started']:,} started, {r['matches_finished']:,} played to the end")
    for s in steps:
        extra = []
        if s["envoy_trouble"]:
            extra.append(f"Envoy counters moved: {s['envoy_trouble']}")
        if s["cpu_percent"]["other"] > 10:
            extra.append(
                f"WARNING: other processes used {s['cpu_percent']['other']:.0f} % of a core"
            )
        if s["errors"]:
            extra.append(f"errors: {s['errors'][:3]}")
        if extra:
            print(f"step {s['streams']:,}: " + "; ".join(extra))
    if not any(s["envoy_trouble"] for s in steps):
        resets = sum(s["envoy_client_resets"] for s in steps)
        closed = sum(s["closed_by_clients"] for s in steps)
        print(
            "Envoy: no overflow, timeout, 5xx or server-side reset counter moved in any step; "
            f"{resets:,} streams reset by their client (downstream_rq_rx_reset), the clients "
            f"closed {closed:,} (spectators following their table to its next match)"
        )
    if r["errors"]:
        print(f"ERRORS ({len(r['errors'])}): {r['errors'][:5]}")


# -- main -----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Delivery delay of events to browsers' streams (gRPC-Web and Connect through "
        "Envoy, HTTP/1.1) against direct gRPC, for the same paced load (--mode latency); and how "
        "many gRPC-Web streams one Envoy and one server hold with p99 under 50 ms (--mode "
        "capacity). Starts its own server, static file server and Envoy on loopback.",
    )
    ap.add_argument(
        "--mode",
        choices=("latency", "capacity"),
        default="latency",
        help="latency: every seat's stream on each path (default); capacity: "
        "K spectator streams through Envoy, stepping up",
    )
    ap.add_argument("--matches", type=int, default=20, help="paced matches of 4 human seats (20)")
    ap.add_argument(
        "--think-ms",
        type=float,
        default=250.0,
        help="a seat's mean think time before each action, drawn from 0.5 to 1.5 times it (250)",
    )
    ap.add_argument(
        "--stagger-s",
        type=float,
        default=None,
        help="each table's first action waits a random 0 to this many seconds, in "
        "the warm-up (default: one hand of think time, 56 x --think-ms)",
    )
    ap.add_argument(
        "--warmup",
        type=float,
        default=2.0,
        help="unmeasured seconds after the stagger before measuring (2)",
    )
    ap.add_argument(
        "--seconds", type=float, default=30.0, help="latency mode: measured seconds (30)"
    )
    ap.add_argument(
        "--paths",
        default=",".join(PATHS),
        help="latency mode: the stream paths, comma-separated, of grpc, grpc-web, "
        "connect (all three)",
    )
    ap.add_argument(
        "--streams",
        default="100,250,500,1000,2000,4000",
        help="capacity mode: the steps of K, comma-separated (100,250,500,1000,2000,4000)",
    )
    ap.add_argument(
        "--step-seconds",
        type=float,
        default=15.0,
        help="capacity mode: measured seconds of each step, once its streams are open (15)",
    )
    ap.add_argument(
        "--clients",
        type=int,
        default=2,
        help="capacity mode: client processes holding the streams (2)",
    )
    ap.add_argument(
        "--keep-going",
        action="store_true",
        help="capacity mode: run every step, also past p99 >= 50 ms",
    )
    ap.add_argument("--envoy", default="", help="the envoy binary (default: .venv/bin/envoy)")
    ap.add_argument(
        "--envoy-concurrency", type=int, default=1, help="Envoy's worker threads (1, as make run)"
    )
    ap.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra server flag, repeatable (--server-arg=--sqlite-synchronous=NORMAL)",
    )
    ap.add_argument("--seed", type=int, default=1, help="seed of the matches and choices (1)")
    ap.add_argument(
        "--log-dir",
        metavar="DIR",
        help="keep the server's, Envoy's (its access log: a line per call, with its response "
        "flags) and the file server's output in DIR (default: a temporary directory, removed)",
    )
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    args.paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    if not args.paths or set(args.paths) - set(PATHS):
        ap.error(f"--paths: some of {', '.join(PATHS)}")
    try:
        args.streams = sorted({int(k) for k in args.streams.split(",") if k.strip()})
    except ValueError:
        ap.error("--streams: whole numbers, comma-separated")
    if not args.streams or min(args.streams) < 1:
        ap.error("--streams: positive whole numbers")
    if min(args.matches, args.clients, args.envoy_concurrency) < 1:
        ap.error("--matches, --clients and --envoy-concurrency must be positive")
    if args.seconds <= 0 or args.step_seconds <= 0 or args.think_ms <= 0:
        ap.error("--seconds, --step-seconds and --think-ms must be positive")
    if args.stagger_s is None:
        args.stagger_s = ACTIONS_PER_HAND * args.think_ms / 1000.0
    return args


def _interrupt(_signum: int, _frame: Any) -> None:
    os.kill(os.getpid(), signal.SIGINT)  # SIGTERM stops the bench as Ctrl-C does


def fd_limit() -> int:
    import resource

    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print("Spades browsers' path: gRPC-Web through Envoy (bench/web.py)")
    print(
        f"python  {platform.python_implementation()} {platform.python_version()}, "
        f"grpcio {grpc.__version__}, aiohttp {aiohttp.__version__}"
    )
    print(
        f"cpu     {os.cpu_count()} cores, shared by the server, Envoy, the stream clients and "
        f"the actors; open files limit {fd_limit():,}"
    )
    server_args = list(args.server_arg)
    if args.mode == "capacity":
        per_match = -(-max(args.streams) // args.matches) + 16
        server_args = [f"--streams-per-match={max(64, per_match)}", *server_args]
    signal.signal(signal.SIGTERM, _interrupt)
    with tempfile.TemporaryDirectory(prefix="spades-bench-web-") as tmp:
        log_dir = Path(args.log_dir) if args.log_dir else None
        if log_dir:
            log_dir.mkdir(parents=True, exist_ok=True)
        procs = Procs(Path(tmp), log_dir, detached=True)
        try:
            st = start(procs, server_args, args.envoy, args.envoy_concurrency)
            print(
                f"server  pid {st.server.pid} on {st.server.address}, embedded SQLite store "
                f"(synchronous FULL) in {tmp}; flags {' '.join(server_args) or '(defaults)'}"
            )
            print(
                f"envoy   pid {st.envoy.pid} ({st.envoy.version()}) on 127.0.0.1:{st.envoy.port}, "
                f"deploy/envoy/envoy.yaml rendered, --concurrency {args.envoy_concurrency}"
            )
            print(
                f"load    {args.matches} paced matches x 4 human seats acting with SubmitAction "
                f"(direct gRPC), think time {args.think_ms:g} ms (0.5-1.5x), first actions "
                f"staggered over {args.stagger_s:g} s, then {args.warmup:g} s of warm-up"
            )
            if args.mode == "latency":
                print(
                    f"streams each seat has one per path: {', '.join(args.paths)} "
                    f"({4 * args.matches} per path, one client process per path); "
                    f"measured {args.seconds:g} s"
                )
                print()
                result = asyncio.run(latency_mode(args, st))
                print_latency(result)
            else:
                print(
                    f"streams K spectators (Spectate, gRPC-Web via Envoy, HTTP/1.1, one "
                    f"connection each) over {args.clients} client process(es), K = "
                    f"{', '.join(f'{k:,}' for k in args.streams)}, each step held "
                    f"{args.step_seconds:g} s once open"
                )
                print()
                result = asyncio.run(capacity_mode(args, st))
                print_capacity(result)
        finally:
            procs.stop_all()
    result["args"] = {k: v for k, v in vars(args).items() if k != "json"}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 1 if result.get("errors") else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
