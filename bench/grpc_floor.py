#!/usr/bin/env python3
"""Transport ceiling of grpc.aio on this machine, for the load pattern of bench/server.py.

A bare ``grpc.aio`` server (a child process) with no application logic: generic
handlers, bytes in and bytes out, no protobuf, no store, no rules engine. It
serves three methods:

* ``Ping``: unary no-op, empty request and response.
* ``Act``: unary; the request names a match, and before answering the server
  puts one 60-byte payload on the queue of each of the K streams subscribed to
  that match (an ``asyncio.Queue`` per stream, as a real service hands an event
  to its subscribers).
* ``Stream``: server streaming; the request names a match, and the handler (a
  coroutine) ``await context.write(...)``-s every payload its queue gets.
* ``Play``: bidirectional, as the service's Play call: the first message names
  the match and subscribes the call like ``Stream``; every later message is an
  act (the same fan-out as ``Act``), read by a second task.

With ``--act unary`` (the default) an act is an ``Act`` call beside K ``Stream``
calls, the pattern of bench/server.py ``--via unary``; with ``--act bidi`` the
K streams are ``Play`` calls and the actor sends its act as a message on one of
them, the pattern of bench/server.py's default.

One client process (one event loop, one channel) opens K streams for each of
``--matches`` M matches and runs one actor per match: call Act, wait until all K
streams of the match have the payload, repeat; so each match has one action in
flight, as in bench/server.py. In the Ping phases M callers call Ping back to
back. The phases alternate ``--rounds`` times and each total is summed over its
rounds, so a slow spell of a shared machine weighs on both sides of the ratio.

This is the ceiling our service cannot beat: a server that does nothing but move
the same messages. The ratio target of bench/server.py (actions/s >= 50 % of
Ping calls/s) should be read against the ratio printed here: if the bare
transport itself only reaches X %, the service is judged by how close it gets
to X %, not to 100 %.

    python3 bench/grpc_floor.py [--matches 100] [--streams 4] [--act unary|bidi]
                                [--seconds 15] [--rounds 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import random
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc

from cpu_usage import Meter, Usage, print_caveats
from processes import recv, start_process, stop_processes

SERVICE = "floor.Floor"
PAYLOAD = b"x" * 60  # about the size of one serialized event of the service
WARMUP_S = 2.0  # unmeasured start of the first phase
RAMP_S = 1.0  # unmeasured start of every later phase
CALL_TIMEOUT_S = 10.0  # no RPC or fan-out wait may hang the benchmark
ORDER_SLACK_S = 30.0  # how much longer than its phase the parent waits for an answer
GC_GEN0_THRESHOLD = 20_000  # as spades_server.main.tune_gc, so the floor is tuned alike
TARGET_RATIO = 0.50  # bench/server.py's target, shown for comparison

# -- the bare server (child process) --------------------------------------------------


class Floor:
    """The three handlers; the only state is who listens to which match."""

    def __init__(self) -> None:
        self.subscribers: dict[bytes, list[asyncio.Queue[bytes]]] = {}

    async def ping(self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return b""

    async def act(self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        for queue in self.subscribers.get(request, ()):
            queue.put_nowait(PAYLOAD)
        return b""

    async def stream(self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        listeners = self.subscribers.setdefault(request, [])
        listeners.append(queue)
        try:
            await context.write(b"")  # tells the client it is subscribed before it acts
            # Ends when the client cancels the call: grpc cancels this task.
            while True:
                await context.write(await queue.get())
        finally:
            listeners.remove(queue)

    async def play(self, requests: Any, context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        name = await context.read()
        listeners = self.subscribers.setdefault(name, [])
        listeners.append(queue)

        async def read_acts() -> None:
            while (match := await context.read()) is not grpc.aio.EOF:
                for q in self.subscribers.get(match, ()):
                    q.put_nowait(PAYLOAD)

        reader = asyncio.create_task(read_acts())
        try:
            await context.write(b"")  # subscribed
            while True:
                await context.write(await queue.get())
        finally:
            reader.cancel()
            listeners.remove(queue)

    def handler(self) -> grpc.GenericRpcHandler:
        # No (de)serializers: bytes pass through untouched, the cheapest identity.
        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Ping": grpc.unary_unary_rpc_method_handler(self.ping),
                "Act": grpc.unary_unary_rpc_method_handler(self.act),
                "Stream": grpc.unary_stream_rpc_method_handler(self.stream),
                "Play": grpc.stream_stream_rpc_method_handler(self.play),
            },
        )


def server_process(conn: Connection) -> None:
    asyncio.run(_serve(conn))


async def _serve(conn: Connection) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((Floor().handler(),))
    port = server.add_insecure_port("127.0.0.1:0")  # port 0: the kernel picks a free one
    await server.start()
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 20, 20)
    conn.send(port)
    # Runs until the parent terminates this process.
    await server.wait_for_termination()


# -- the client (child process) ------------------------------------------------------


@dataclass
class Control:
    """The phase the parent ordered, and what the actors measured in it."""

    streams: int
    bidi: bool  # acts are messages on a Play call, not Act calls
    think_s: float = 0.0  # mean wait before each act (0: act at once)
    start: float = float("inf")  # measured span of the current phase
    end: float = float("inf")
    stopping: bool = False
    gate: asyncio.Event = field(default_factory=asyncio.Event)  # set: actors may act
    in_flight: int = 0
    acts: int = 0
    errors: list[str] = field(default_factory=list)

    def measuring(self, t: float) -> bool:
        return self.start <= t < self.end


@dataclass
class Table:
    """One match: its name, its K stream calls, and the payloads they have received."""

    name: bytes
    calls: list[Any] = field(default_factory=list)  # Stream or Play calls
    turn: int = 0  # the Play call the next act goes on
    received: int = 0
    all_in: asyncio.Event = field(default_factory=asyncio.Event)


class Client:
    def __init__(self, channel: grpc.aio.Channel, matches: int, streams: int, bidi: bool) -> None:
        # No (de)serializers: requests and responses are raw bytes.
        self.ping: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]
        self.act: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]
        self.stream: grpc.aio.UnaryStreamMultiCallable[bytes, bytes]
        self.ping = channel.unary_unary(f"/{SERVICE}/Ping")
        self.act = channel.unary_unary(f"/{SERVICE}/Act")
        self.stream = channel.unary_stream(f"/{SERVICE}/Stream")
        self.play: grpc.aio.StreamStreamMultiCallable[bytes, bytes]
        self.play = channel.stream_stream(f"/{SERVICE}/Play")
        self.control = Control(streams, bidi)
        self.tables = [Table(f"m{i}".encode()) for i in range(matches)]
        self.tasks: list[asyncio.Task[None]] = []  # the loop keeps only weak references

    async def open(self) -> None:
        """Open every stream, wait until the server has subscribed each, start the loops."""
        for t in self.tables:
            if self.control.bidi:
                t.calls = [self.play() for _ in range(self.control.streams)]
                for call in t.calls:
                    await call.write(t.name)
            else:
                t.calls = [self.stream(t.name) for _ in range(self.control.streams)]
        first = [c.read() for t in self.tables for c in t.calls]
        await asyncio.wait_for(asyncio.gather(*first), 60)
        for t in self.tables:
            self.tasks += [asyncio.create_task(self.listen(t, c)) for c in t.calls]
            self.tasks.append(asyncio.create_task(self.actor(t)))

    async def listen(self, table: Table, call: Any) -> None:
        k = self.control.streams
        try:
            while (await call.read()) is not grpc.aio.EOF:
                table.received += 1
                if table.received >= k:
                    table.all_in.set()
        except asyncio.CancelledError:
            return
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                self.control.errors.append(f"stream {table.name!r}: {e.code().name}")

    async def actor(self, table: Table) -> None:
        c = self.control
        while True:
            await c.gate.wait()  # closed between action phases
            if c.stopping:
                return
            if c.think_s:
                await asyncio.sleep(random.uniform(0.5, 1.5) * c.think_s)
            c.in_flight += 1
            try:
                ok = await self.one_action(table)
            finally:
                c.in_flight -= 1
            if ok and c.measuring(time.perf_counter()):
                c.acts += 1

    async def one_action(self, table: Table) -> bool:
        """Act, then wait for the payload on all K streams; False on error or timeout."""
        table.received = 0
        table.all_in.clear()
        try:
            if self.control.bidi:
                table.turn = (table.turn + 1) % len(table.calls)  # seats take turns
                await table.calls[table.turn].write(table.name)
            else:
                await self.act(table.name, timeout=CALL_TIMEOUT_S)
            if self.control.streams:
                await asyncio.wait_for(table.all_in.wait(), CALL_TIMEOUT_S)
        except (grpc.aio.AioRpcError, TimeoutError) as e:
            self.control.errors.append(f"act {table.name!r}: {e!r}"[:200])
            await asyncio.sleep(0.1)  # an error must not become a busy loop
            return False
        return True

    async def act_phase(self, ramp: float, seconds: float) -> tuple[int, float]:
        c = self.control
        base = c.acts
        c.start = time.perf_counter() + ramp
        c.end = c.start + seconds
        c.gate.set()
        await asyncio.sleep(c.end - time.perf_counter())
        c.gate.clear()
        await self.drain()
        return c.acts - base, seconds

    async def drain(self) -> None:
        """Let the actions in flight finish, so they do not spill into the next phase."""
        deadline = time.perf_counter() + 2 * CALL_TIMEOUT_S
        while self.control.in_flight and time.perf_counter() < deadline:
            await asyncio.sleep(0.005)

    async def ping_phase(self, workers: int, ramp: float, seconds: float) -> tuple[int, float]:
        clock = time.perf_counter
        start = clock() + ramp
        end = start + seconds
        done = 0

        async def worker() -> None:
            nonlocal done
            while clock() < end:
                try:
                    await self.ping(b"", timeout=CALL_TIMEOUT_S)
                except grpc.aio.AioRpcError as e:
                    self.control.errors.append(f"ping: {e.code().name}")
                    await asyncio.sleep(0.1)
                    continue
                if start <= clock() < end:
                    done += 1

        await asyncio.gather(*(worker() for _ in range(workers)))
        return done, seconds

    async def close(self) -> None:
        c = self.control
        c.stopping = True
        c.gate.set()
        for t in self.tables:
            for call in t.calls:
                call.cancel()
        try:
            await asyncio.wait_for(asyncio.gather(*self.tasks), 2 * CALL_TIMEOUT_S)
        except TimeoutError:
            c.errors.append("the client loops did not stop in time")


def client_process(
    conn: Connection, port: int, matches: int, streams: int, bidi: bool, think_s: float
) -> None:
    asyncio.run(_client(conn, port, matches, streams, bidi, think_s))


async def _client(
    conn: Connection, port: int, matches: int, streams: int, bidi: bool, think_s: float
) -> None:
    loop = asyncio.get_running_loop()
    async with grpc.aio.insecure_channel(
        f"127.0.0.1:{port}",
        options=[("grpc.use_local_subchannel_pool", 1), ("grpc.enable_retries", 0)],
    ) as channel:
        client = Client(channel, matches, streams, bidi)
        client.control.think_s = think_s
        await client.open()
        conn.send("ready")
        phases: dict[str, Callable[..., Awaitable[tuple[int, float]]]] = {
            "act": client.act_phase,
            "ping": lambda ramp, s: client.ping_phase(matches, ramp, s),
        }
        while True:
            order = await loop.run_in_executor(None, conn.recv)  # (kind, ramp, seconds)
            if order[0] not in phases:  # ("stop",)
                break
            conn.send(await phases[order[0]](*order[1:]))
        await client.close()
        conn.send({"errors": client.control.errors[:20]})


# -- the parent: start both, order the phases, read the CPU ---------------------------------


@dataclass
class Counted(Usage):
    """A kind of phase's CPU usage, with what its phases did and for how long."""

    count: int = 0
    measured: float = 0.0


def run_phase(conn: Connection, order: tuple[Any, ...], usage: Counted, meter: Meter) -> None:
    """One phase in the client, with the CPU both processes used meanwhile."""
    meter.start()
    t0 = time.perf_counter()
    conn.send(order)
    count, measured = recv(conn, order[1] + order[2] + ORDER_SLACK_S, "the client")
    meter.stop(usage, time.perf_counter() - t0)
    usage.count += count
    usage.measured += measured


def run_rounds(
    args: argparse.Namespace, conn: Connection, server: int, client: int
) -> tuple[Counted, Counted, list[str]]:
    acts, pings = Counted(), Counted()
    meter = Meter(server, [client])
    share = args.seconds / args.rounds
    for k in range(args.rounds):
        run_phase(conn, ("act", WARMUP_S if k == 0 else RAMP_S, share), acts, meter)
        run_phase(conn, ("ping", RAMP_S, share), pings, meter)
    conn.send(("stop",))
    final = recv(conn, ORDER_SLACK_S + 2 * CALL_TIMEOUT_S, "the client")
    return acts, pings, final["errors"]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    server, sconn = start_process(server_process)
    client = None
    try:
        port = recv(sconn, 30, "the server")
        bidi = args.act == "bidi"
        client, cconn = start_process(
            client_process, port, args.matches, args.streams, bidi, args.think_ms / 1000
        )
        if recv(cconn, 90, "the client") != "ready":
            raise RuntimeError("the client failed to open its streams")
        assert server.pid is not None and client.pid is not None  # both started
        acts, pings, errors = run_rounds(args, cconn, server.pid, client.pid)
        client.join(10)
    finally:
        stop_processes([server] if client is None else [client, server])
    return results(args, port, acts, pings, errors)


def results(
    args: argparse.Namespace, port: int, acts: Counted, pings: Counted, errors: list[str]
) -> dict[str, Any]:
    acts_s = acts.count / acts.measured
    pings_s = pings.count / pings.measured
    return {
        "python": platform.python_version(),
        "grpc": grpc.__version__,
        "cpu_count": os.cpu_count(),
        "port": port,
        "matches": args.matches,
        "streams_per_match": args.streams,
        "act": args.act,
        "think_ms": args.think_ms,
        "rounds": args.rounds,
        "acts": acts.count,
        "act_seconds": acts.measured,
        "acts_per_second": acts_s,
        "ping_calls": pings.count,
        "ping_seconds": pings.measured,
        "ping_calls_per_second": pings_s,
        "ratio": acts_s / pings_s if pings_s else float("nan"),
        "cpu_percent_acts": acts.percent(),
        "cpu_percent_ping": pings.percent(),
        "errors": errors,
    }


# -- output ------------------------------------------------------------------------------


def print_table(rows: list[tuple[str, str]]) -> None:
    """Rows of (measure, value), aligned."""
    w = [max(len(r[i]) for r in rows) for i in range(2)]
    header = f"{'measure':<{w[0]}}  {'value':>{w[1]}}"
    print(header)
    print("-" * len(header))
    for name, value in rows:
        print(f"{name:<{w[0]}}  {value:>{w[1]}}")


def cpu_rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for label, key in (("Act", "cpu_percent_acts"), ("Ping", "cpu_percent_ping")):
        u = r[key]
        rows += [
            (f"server CPU, {label} phases (% of one core)", f"{u['server']:.0f}"),
            ("  of which its event-loop thread", f"{u['server_event_loop_thread']:.0f}"),
            (f"client CPU, {label} phases (% of one core)", f"{u['clients']:.0f}"),
            (f"other processes, {label} phases", f"{u['other_processes']:.0f}"),
        ]
    return rows


def cpu_us(r: dict[str, Any], usage: str, rate: str) -> float:
    """Server CPU time per act or per Ping, in microseconds: its share of one
    core over the phases divided by their rate."""
    return float(r[usage]["server"]) / 100 / r[rate] * 1e6 if r[rate] else float("nan")


def print_result(r: dict[str, Any]) -> None:
    print_table(
        [
            ("python", f"{platform.python_implementation()} {r['python']}"),
            ("grpcio", r["grpc"]),
            ("cpu count", f"{r['cpu_count']}"),
            ("matches (M)", f"{r['matches']}"),
            ("streams per match (K)", f"{r['streams_per_match']}"),
            ("act", "message on a Play call" if r["act"] == "bidi" else "unary Act call"),
            ("act + fan-out to K streams, acts/s", f"{r['acts_per_second']:,.0f}"),
            ("Ping calls/s (M callers)", f"{r['ping_calls_per_second']:,.0f}"),
            ("acts/s / Ping calls/s", f"{100 * r['ratio']:.1f} %"),
            ("server CPU per act, us", f"{cpu_us(r, 'cpu_percent_acts', 'acts_per_second'):.0f}"),
            (
                "server CPU per Ping, us",
                f"{cpu_us(r, 'cpu_percent_ping', 'ping_calls_per_second'):.0f}",
            ),
            *cpu_rows(r),
        ]
    )
    print()
    print(
        f"measured {r['acts']:,} acts in {r['act_seconds']:g} s and {r['ping_calls']:,} Ping "
        f"calls in {r['ping_seconds']:g} s over {r['rounds']} alternating round(s); "
        f"bench/server.py targets actions/s >= {100 * TARGET_RATIO:g} % of Ping calls/s"
    )
    print_caveats([r[k] for k in ("cpu_percent_acts", "cpu_percent_ping")], r["errors"])


# -- main ----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Transport ceiling of grpc.aio: a bare server moving bench/server.py's "
        "messages (Act + fan-out to K streams per match, and Ping)."
    )
    ap.add_argument("--matches", type=int, default=100, help="concurrent matches, M (100)")
    ap.add_argument("--streams", type=int, default=4, help="streams per match, K, 0..8 (4)")
    ap.add_argument(
        "--seconds", type=float, default=15.0, help="measured seconds per phase kind, in all (15)"
    )
    ap.add_argument("--rounds", type=int, default=3, help="alternations of Act and Ping (3)")
    ap.add_argument(
        "--act",
        choices=("unary", "bidi"),
        default="unary",
        help="an act is a unary Act call beside K server streams (unary, the default), or a "
        "message on one of K bidirectional Play calls (bidi)",
    )
    ap.add_argument(
        "--think-ms",
        type=float,
        default=0.0,
        help="each actor waits a uniformly random 0.5 to 1.5 times this before each act (0)",
    )
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    if min(args.matches, args.rounds) < 1 or args.seconds <= 0:
        ap.error("--matches, --rounds and --seconds must be positive")
    if not 0 <= args.streams <= 8:
        ap.error("--streams must be within 0..8")
    if args.act == "bidi" and args.streams < 1:
        ap.error("--act bidi needs at least one stream (the acts travel on them)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print("grpc.aio transport ceiling (bench/grpc_floor.py): a server with no logic")
    print(
        f"load    {args.matches} matches x {args.streams} streams, one action in flight per "
        f"match; {args.rounds} round(s) of Act then Ping, {args.seconds:g} s of each in all"
    )
    print()
    result = measure(args)
    print_result(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
