#!/usr/bin/env python3
"""The hung-call flood: calls that never send their request, and another client's Pings.

The server (``python3 -m spades_server.main``, started as bench/server.py does)
runs as a subprocess. A flood process opens ``--calls`` calls of ``--method``
(GetView by default) spread over ``--connections`` connections (1 by default;
a hostile client is free to open 100), and never sends a request on any of
them: no message and no half-close, so each call waits for the server to end
it (INVALID_ARGUMENT REQUEST_EXPECTED after ``--request-timeout-seconds``, or
at once past ``--max-waiting-calls``). Past the server's
``--max-calls-per-connection`` the client's channel holds the rest until a
stream frees (or the server refuses them: UNAVAILABLE); past its
``--max-pending-calls`` gRPC cancels those the server has not taken up yet
(CANCELLED).

Meanwhile a separate process, on its own connection, Pings every
``--ping-every-ms`` (5) with a ``--ping-deadline-s`` (1 s) deadline, one call
at a time. Reported: the Pings from the moment the flood starts until its
last call ended (count, p50/p99/max latency, errors by code), the same for a
quiet second before the flood, the flood calls' outcomes by code and reason,
the time until the last one ended, and the server's resident memory (VmRSS)
before, at its peak (read every 20 ms) and after.

Targets (issue 25, on a quiet machine): 10,000 calls, the Ping max under
100 ms, no Ping failing, the server's RSS growing less than 50 MB.

    python3 bench/hung_calls.py [--calls 10000] [--connections 1] [--method GetView]
                                [--request-timeout-seconds 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc

from cpu_usage import GroupMeter, percents, warn_if_disturbed
from load import ms, pct, print_table
from processes import recv, rss_kib, start_process, start_server, stop_processes

SERVICE = "/spades.v1.SpadesService/"
TARGET_PING_MAX_MS = 100.0
TARGET_RSS_GROWTH_MB = 50.0
QUIET_S = 1.0  # Pings measured before the flood, for comparison
SETTLE_S = 0.5  # Pings go on this long after the flood's last call ended
RSS_EVERY_S = 0.02
CONNECT_TIMEOUT_S = 30.0


# -- the flood (its own process) ----------------------------------------------------------


def flood_process(
    conn: Connection, address: str, method: str, calls: int, connections: int, limit_s: float
) -> None:
    asyncio.run(_flood(conn, address, method, calls, connections, limit_s))


def _reason(err: grpc.RpcError) -> str:
    """The ErrorInfo reason of a failed call's google.rpc status, or ''."""
    from google.rpc import error_details_pb2
    from grpc_status import rpc_status

    try:
        status = rpc_status.from_call(err)
    except ValueError:
        return ""
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return ""


async def _flood(
    conn: Connection, address: str, method: str, calls: int, connections: int, limit_s: float
) -> None:
    loop = asyncio.get_running_loop()
    # One channel per connection: a channel of its own subchannel pool does not
    # share its connection with the others.
    channels = [
        grpc.aio.insecure_channel(
            address,
            options=[
                ("grpc.use_local_subchannel_pool", 1),
                ("grpc.enable_retries", 0),
                ("grpc.channel_id", i),  # distinct arguments: never one shared subchannel
            ],
        )
        for i in range(connections)
    ]
    await asyncio.wait_for(
        asyncio.gather(*(c.channel_ready() for c in channels)), CONNECT_TIMEOUT_S
    )
    conn.send("ready")
    await loop.run_in_executor(None, conn.recv)  # "go"
    t0 = time.monotonic()
    opened: list[Any] = [
        channels[i % connections].stream_unary(SERVICE + method)(timeout=limit_s)
        for i in range(calls)
    ]
    opened_s = time.monotonic() - t0

    async def ended(call: Any) -> tuple[str, float]:
        try:
            await call
        except grpc.RpcError as err:
            # The ErrorInfo reason of the server's refusals, else gRPC's own words.
            why = _reason(err) or f"({str(err.details())[:60]})"
            return f"{err.code().name} {why}", time.monotonic() - t0
        return "OK", time.monotonic() - t0

    outcomes = await asyncio.gather(*(ended(c) for c in opened))
    codes = Counter(code for code, _ in outcomes)
    ends = sorted(t for _, t in outcomes)
    conn.send(
        {
            "codes": dict(codes.most_common()),
            "opened_s": opened_s,
            "first_end_s": ends[0],
            "median_end_s": ends[len(ends) // 2],
            "last_end_s": ends[-1],
        }
    )
    await asyncio.gather(*(c.close() for c in channels))


# -- the Pinger (its own process) -----------------------------------------------------------


def ping_process(conn: Connection, address: str, every_s: float, deadline_s: float) -> None:
    """Pings one at a time until told to stop; sends (start, latency, code) of each."""
    from spades_server.gen.spades.v1 import spades_pb2 as pb

    channel = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
    ping = channel.unary_unary(
        SERVICE + "Ping",
        request_serializer=pb.PingRequest.SerializeToString,
        response_deserializer=pb.PingResponse.FromString,
    )
    for _ in range(20):  # connected and warm
        ping(pb.PingRequest(), timeout=CONNECT_TIMEOUT_S)
    conn.send("ready")
    samples: list[tuple[float, float, str]] = []
    clock = time.monotonic
    while not conn.poll(every_s):
        t0 = clock()
        code = "OK"
        try:
            ping(pb.PingRequest(), timeout=deadline_s)
        except grpc.RpcError as err:
            code = err.code().name
        samples.append((t0, clock() - t0, code))
    conn.recv()
    conn.send(samples)
    channel.close()


# -- the parent -----------------------------------------------------------------------------


def ping_stats(samples: list[tuple[float, float, str]]) -> dict[str, Any]:
    latencies = sorted(lat for _, lat, _ in samples)
    errors = Counter(code for _, _, code in samples if code != "OK")
    return {
        "count": len(samples),
        "p50_ms": ms(pct(latencies, 0.50)),
        "p99_ms": ms(pct(latencies, 0.99)),
        "max_ms": ms(latencies[-1]) if latencies else float("nan"),
        "errors": dict(errors.most_common()),
    }


def measure(args: argparse.Namespace, address: str, server_pid: int) -> dict[str, Any]:
    every_s, deadline_s = args.ping_every_ms / 1000, args.ping_deadline_s
    pinger, pconn = start_process(ping_process, address, every_s, deadline_s)
    flood, fconn = start_process(
        flood_process, address, args.method, args.calls, args.connections, args.limit_s
    )
    try:
        recv(pconn, CONNECT_TIMEOUT_S + 30, "the Pinger")
        recv(fconn, CONNECT_TIMEOUT_S + 30, "the flood")
        assert pinger.pid is not None and flood.pid is not None
        time.sleep(QUIET_S)
        rss_before = peak = rss_kib(server_pid)
        meter = GroupMeter({"server": [server_pid], "flood": [flood.pid], "pinger": [pinger.pid]})
        meter.start()
        t_go = time.monotonic()
        fconn.send("go")
        while not fconn.poll(RSS_EVERY_S):
            peak = max(peak, rss_kib(server_pid))
            if time.monotonic() - t_go > args.limit_s + 30:
                raise RuntimeError("the flood did not end")
        flood_result = fconn.recv()
        t_end = t_go + flood_result["last_end_s"]
        used = meter.stop()
        time.sleep(SETTLE_S)
        rss_after = rss_kib(server_pid)
        pconn.send("stop")
        samples: list[tuple[float, float, str]] = recv(pconn, 30, "the Pinger")
    finally:
        stop_processes([pinger, flood], grace=5)
    quiet = [s for s in samples if t_go - QUIET_S <= s[0] < t_go]
    during = [s for s in samples if t_go <= s[0] <= t_end]
    return {
        "calls": args.calls,
        "connections": args.connections,
        "method": args.method,
        "request_timeout_seconds": args.request_timeout_seconds,
        "server_args": args.server_arg,
        "flood": flood_result,
        "ping_quiet": ping_stats(quiet),
        "ping_during": ping_stats(during),
        # The slowest Pings: when they started (seconds after the flood did), how long.
        "slowest_pings": [
            (round(t - t_go, 3), round(ms(lat), 1), code)
            for t, lat, code in sorted(during, key=lambda s: -s[1])[:20]
        ],
        "rss_kib_before": rss_before,
        "rss_kib_peak": peak,
        "rss_kib_after": rss_after,
        "rss_growth_mb": (peak - rss_before) / 1024,
        "cpu_percent": percents(used),
    }


def _ok(passed: bool) -> str:
    return "yes" if passed else "NO"


def print_result(r: dict[str, Any]) -> None:
    f, q, d = r["flood"], r["ping_quiet"], r["ping_during"]
    errors = ", ".join(f"{k} {v}" for k, v in d["errors"].items()) or "none"
    rows = [
        ("Pings during the flood", f"{d['count']:,}", "", ""),
        ("Ping p50 / p99", f"{d['p50_ms']:.1f} / {d['p99_ms']:.1f} ms", "", ""),
        (
            "Ping max",
            f"{d['max_ms']:.1f} ms",
            f"< {TARGET_PING_MAX_MS:g} ms",
            _ok(d["max_ms"] < TARGET_PING_MAX_MS),
        ),
        ("Ping errors", errors, "none", _ok(not d["errors"])),
        ("Ping before the flood p50 / max", f"{q['p50_ms']:.1f} / {q['max_ms']:.1f} ms", "", ""),
        ("flood calls opened in", f"{f['opened_s']:.2f} s", "", ""),
        (
            "flood calls ended: first / median / last",
            f"{f['first_end_s']:.2f} / {f['median_end_s']:.2f} / {f['last_end_s']:.2f} s",
            "",
            "",
        ),
        ("server RSS before", f"{r['rss_kib_before'] / 1024:.1f} MB", "", ""),
        ("server RSS peak", f"{r['rss_kib_peak'] / 1024:.1f} MB", "", ""),
        (
            "server RSS growth (peak - before)",
            f"{r['rss_growth_mb']:.1f} MB",
            f"< {TARGET_RSS_GROWTH_MB:g} MB",
            _ok(r["rss_growth_mb"] < TARGET_RSS_GROWTH_MB),
        ),
        ("server RSS 0.5 s after the last", f"{r['rss_kib_after'] / 1024:.1f} MB", "", ""),
    ]
    print_table(rows)
    print()
    print("flood outcomes:")
    for code, n in f["codes"].items():
        print(f"  {n:>7,}  {code}")
    slowest = ", ".join(f"{lat:g} ms at {t:g} s" for t, lat, _ in r["slowest_pings"][:3])
    print(f"slowest Pings (and when, after the flood began): {slowest}")
    cpu = r["cpu_percent"]
    print(
        "CPU during the flood (% of one core): " + ", ".join(f"{k} {v:.0f}" for k, v in cpu.items())
    )
    warn_if_disturbed([cpu["other"]])
    print("MB = 2^20 bytes of VmRSS; Pings are one at a time on their own connection")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Flood the server with calls that never send their request, and measure "
        "another client's Pings and the server's memory meanwhile."
    )
    ap.add_argument("--calls", type=int, default=10_000, help="calls of the flood (10000)")
    ap.add_argument(
        "--connections", type=int, default=1, help="connections the calls are spread over (1)"
    )
    ap.add_argument("--method", default="GetView", help="method of the flood calls (GetView)")
    ap.add_argument(
        "--request-timeout-seconds",
        type=float,
        default=2.0,
        help="the server's --request-timeout-seconds (2; its default is 10)",
    )
    ap.add_argument("--ping-every-ms", type=float, default=5.0, help="pause between Pings (5)")
    ap.add_argument("--ping-deadline-s", type=float, default=1.0, help="a Ping's deadline (1)")
    ap.add_argument(
        "--limit-s",
        type=float,
        default=55.0,
        help="the flood calls' client deadline, and the run's limit (55)",
    )
    ap.add_argument(
        "--store", choices=("sqlite", "memory"), default="sqlite", help="server store (sqlite)"
    )
    ap.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra server argument, repeatable (--server-arg=--max-calls-per-connection=500)",
    )
    ap.add_argument("--server-log", metavar="PATH", help="keep the server's log (stderr) in PATH")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    if min(args.calls, args.connections) < 1:
        ap.error("--calls and --connections must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print("Hung-call flood (bench/hung_calls.py)")
    print(f"python  {platform.python_implementation()} {platform.python_version()}")
    print(f"cpu     {os.cpu_count()} cores, shared by the server, the flood and the Pinger")
    extra = ["--request-timeout-seconds", str(args.request_timeout_seconds), *args.server_arg]
    with tempfile.TemporaryDirectory(prefix="spades-bench-hung-") as tmp:
        server = start_server(args.store, Path(tmp), extra, None)
        print(f"server  pid {server.pid} on {server.address}, {' '.join(extra)}")
        print(
            f"load    {args.calls:,} {args.method} calls that never send their request, over "
            f"{args.connections} connection(s); a Ping every {args.ping_every_ms:g} ms "
            f"({args.ping_deadline_s:g} s deadline) on another"
        )
        print()
        try:
            result = measure(args, server.address, server.pid)
        finally:
            server.stop()
            if args.server_log:
                Path(args.server_log).write_text(server.log_path.read_text())
    print_result(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
