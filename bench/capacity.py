#!/usr/bin/env python3
"""Capacity inputs, measured: the service on a Redis Cluster of 1, 2 and 3
primaries (as many service replicas), in one run on loopback, and what one
table costs.

Parts (``--parts``, all by default):

* **shards**: for N in ``--shards`` (1,2,3): a cluster of N primaries (no
  replicas: this is throughput, not failover) made by processes.py, N server
  replicas on it (``--redis-mode cluster``), and bench/replicas.py's load
  client: ``--tables-per-shard`` x N tables of four seats, table k created on
  replica k % N and its seat i acting through replica (i + k) % N, so that
  every action is followed by the other replicas through Redis. Each step is
  measured saturated (no think time) for ``--seconds``: accepted actions/s,
  a Play action's latency (p50/p99), CPU per action of the servers, the
  Redis nodes and the client, and from every primary's INFO the commands and
  network bytes per action; and at set-up (every table created, its four
  Play streams open, nothing played) the replicas' RSS and Redis's memory
  per table.
* **idle**: on a 3-primary cluster, one replica: ``--idle-tables`` matches
  created and left waiting (no stream). Measured: Redis memory and the
  replica's RSS per table, and Redis commands per idle table per second
  over ``--seconds``.

Everything runs on this machine's cores at once (servers, Redis nodes and
clients share them): the per-core figures (actions per CPU-second of the
servers, of Redis) are the inputs docs/capacity.md scales from; the
actions/s of the N steps show whether the shared cores, not the shards,
set the ceiling here.

    python3 bench/capacity.py [--shards 1,2,3] [--tables-per-shard 40]
        [--seconds 10] [--idle-tables 2000] [--json PATH]
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
from pathlib import Path
from typing import Any

import grpc
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc

from cpu_usage import GroupMeter, percent
from load import error_counts, ms, pct, print_grid
from processes import OPERATOR_MD, Procs, RedisClusterProcess, recv
from replicas import load_client

SETUP_TIMEOUT_S = 300.0
PHASE_SLACK_S = 120.0
WARMUP_S = 3.0
CREATE_CONCURRENCY = 50


def run_shards(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    steps = []
    for placement in args.placements:
        for n in args.shards:
            steps.append(_shard_step(args, tmp / f"{placement}{n}", n, placement))
    return steps


def _shard_step(args: argparse.Namespace, workdir: Path, n: int, placement: str) -> dict[str, Any]:
    procs = Procs(workdir)
    procs.workdir.mkdir()
    try:
        cluster = RedisClusterProcess(procs.workdir / "redis", n)
        procs.redis = cluster
        servers = [procs.replica(f"replica{i}", "redis", "cap") for i in range(n)]
        cfg = {"matches": args.tables_per_shard * n, "seed": args.seed, "stagger_s": 0.0}
        cfg["together"] = placement == "together"
        rss0, redis0 = sum(s.rss_kib() for s in servers), cluster.used_memory()
        client, parent = procs.client(load_client, [s.address for s in servers], cfg)
        if recv(parent, SETUP_TIMEOUT_S) != "ready":
            raise SystemExit(f"the client of {n} shard(s) failed during set-up")
        time.sleep(0.5)
        tables = cfg["matches"]
        memory = {
            "replica_kib_per_table": (sum(s.rss_kib() for s in servers) - rss0) / tables,
            "redis_bytes_per_table": (cluster.used_memory() - redis0) / tables,
        }
        meter = GroupMeter(
            {
                "servers": [s.pid for s in servers],
                "redis": cluster.pids,
                "client": [client.pid or 0],
            }
        )
        parent.send(("actions", WARMUP_S, args.seconds, 0.0))
        time.sleep(WARMUP_S)
        before = cluster.stats()
        meter.start()
        answer = recv(parent, args.seconds + PHASE_SLACK_S)
        cpu = meter.stop()
        after = cluster.stats()
        parent.send(("stop",))
        final = recv(parent, 60.0)
        client.join(timeout=30)
        step = _step(n, answer, cpu, before, after, final)
        return {"placement": placement, **step, "tables": tables, **memory}
    finally:
        procs.stop_all()


def _step(
    n: int,
    answer: dict[str, Any],
    cpu: dict[str, float],
    before: dict[str, int],
    after: dict[str, int],
    final: dict[str, Any],
) -> dict[str, Any]:
    actions = answer["actions"] or 1
    submit = sorted(answer["submit"])
    delta = {k: after[k] - before[k] for k in after}
    return {
        "shards": n,
        "actions": answer["actions"],
        "actions_per_second": answer["actions"] / answer["seconds"],
        "action_ms_p50": ms(pct(submit, 0.50)),
        "action_ms_p99": ms(pct(submit, 0.99)),
        "cpu_percent": {k: percent(cpu, k) for k in ("servers", "redis", "client", "other")},
        "server_cpu_us_per_action": 1e6 * cpu["servers"] / actions,
        "redis_cpu_us_per_action": 1e6 * cpu["redis"] / actions,
        "redis_commands_per_action": delta["total_commands_processed"] / actions,
        "redis_bytes_in_per_action": delta["total_net_input_bytes"] / actions,
        "redis_bytes_out_per_action": delta["total_net_output_bytes"] / actions,
        "errors": len(answer["errors"]) + final["error_count"],
        "error_kinds": error_counts(answer["errors"]) or final["errors"],
    }


async def _create(stub: spades_pb2_grpc.SpadesServiceStub, count: int) -> list[str]:
    gate = asyncio.Semaphore(CREATE_CONCURRENCY)
    ids: list[str] = []

    async def one(i: int) -> None:
        async with gate:
            r = await stub.CreateMatch(
                pb.CreateMatchRequest(ruleset=pb.Ruleset(preset="classic"), seed=i),
                metadata=OPERATOR_MD,
                timeout=30,
            )
            ids.append(r.match.match_id)

    await asyncio.gather(*(one(i) for i in range(count)))
    return ids


async def _idle(args: argparse.Namespace, procs: Procs) -> dict[str, Any]:
    assert isinstance(procs.redis, RedisClusterProcess)
    cluster = procs.redis
    server = procs.replica("idle", "redis", "idle")
    channel = grpc.aio.insecure_channel(server.address)
    stub = spades_pb2_grpc.SpadesServiceStub(channel)
    await _create(stub, 20)  # warm: imports, pools, first allocations
    await asyncio.sleep(1.0)
    redis0, rss0 = cluster.used_memory(), server.rss_kib()
    ids = await _create(stub, args.idle_tables)
    await asyncio.sleep(1.0)
    redis1, rss1 = cluster.used_memory(), server.rss_kib()
    before = cluster.stats()
    await asyncio.sleep(args.seconds)
    after = cluster.stats()
    quiet = after["total_commands_processed"] - before["total_commands_processed"]
    assert len(ids) == args.idle_tables
    await channel.close()
    n = args.idle_tables
    return {
        "tables": n,
        "redis_bytes_per_table": (redis1 - redis0) / n,
        "replica_kib_per_table": (rss1 - rss0) / n,
        "redis_commands_per_idle_table_per_second": quiet / n / args.seconds,
        "redis_commands_per_second_idle": quiet / args.seconds,
    }


def run_idle(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    procs = Procs(tmp / "idle")
    procs.workdir.mkdir()
    try:
        procs.redis = RedisClusterProcess(procs.workdir / "redis", 3)
        return asyncio.run(_idle(args, procs))
    finally:
        procs.stop_all()


def print_shards(steps: list[dict[str, Any]]) -> None:
    print("\nThroughput by Redis Cluster primaries (as many service replicas), saturated")
    header = [
        "seats",
        "primaries",
        "actions/s",
        "p50 ms",
        "p99 ms",
        "servers %",
        "redis %",
        "client %",
    ]
    header += ["server µs/act", "redis µs/act", "cmds/act", "B in/act", "B out/act", "errors"]
    rows = []
    for s in steps:
        c = s["cpu_percent"]
        rows.append(
            [
                s["placement"],
                str(s["shards"]),
                f"{s['actions_per_second']:,.0f}",
                f"{s['action_ms_p50']:.1f}",
                f"{s['action_ms_p99']:.1f}",
                f"{c['servers']:.0f}",
                f"{c['redis']:.0f}",
                f"{c['client']:.0f}",
                f"{s['server_cpu_us_per_action']:,.0f}",
                f"{s['redis_cpu_us_per_action']:,.0f}",
                f"{s['redis_commands_per_action']:.1f}",
                f"{s['redis_bytes_in_per_action']:,.0f}",
                f"{s['redis_bytes_out_per_action']:,.0f}",
                str(s["errors"]),
            ]
        )
    print_grid(header, rows)
    print(
        "memory at set-up (each table created and its four Play streams open, nothing played): "
        + "; ".join(
            f"{s['placement']} {s['shards']}: replicas {s['replica_kib_per_table']:.1f} KiB, "
            f"Redis {s['redis_bytes_per_table'] / 1024:.1f} KiB per table"
            for s in steps
        )
    )
    for s in steps:
        if s["errors"]:
            print(f"  {s['placement']}, {s['shards']} primaries: errors {s['error_kinds']}")


def print_idle(r: dict[str, Any]) -> None:
    print(f"\nAn idle table ({r['tables']:,} tables on one replica, a 3-primary cluster)")
    print(f"  Redis memory per table        {r['redis_bytes_per_table']:,.0f} B")
    print(f"  replica memory per table      {r['replica_kib_per_table']:,.1f} KiB")
    print(
        f"  Redis commands while idle     {r['redis_commands_per_second_idle']:,.1f}/s in all, "
        f"{r['redis_commands_per_idle_table_per_second']:.4f}/s per table"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--parts", default="shards,idle", help="shards,idle (both)")
    ap.add_argument("--shards", default="1,2,3", help="primaries per step (1,2,3)")
    ap.add_argument(
        "--placements",
        default="together,spread",
        help="together: a table's four seats on one replica (a load balancer that hashes "
        "the match id); spread: each seat on another, so every replica follows every match",
    )
    ap.add_argument("--tables-per-shard", type=int, default=40, help="tables per primary (40)")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per step (10)")
    ap.add_argument("--idle-tables", type=int, default=2000, help="idle: tables (2000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    args.parts = args.parts.split(",")
    args.shards = [int(n) for n in args.shards.split(",")]
    args.placements = args.placements.split(",")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print("Capacity inputs on a Redis Cluster (bench/capacity.py)")
    print(f"python  {platform.python_implementation()} {platform.python_version()}")
    print(f"cpu     {os.cpu_count()} cores, shared by the Redis nodes, the servers and the client")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="capacity-") as tmp:
        if "shards" in args.parts:
            results["shards"] = run_shards(args, Path(tmp))
            print_shards(results["shards"])
        if "idle" in args.parts:
            results["idle"] = run_idle(args, Path(tmp))
            print_idle(results["idle"])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
