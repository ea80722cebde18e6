#!/usr/bin/env python3
"""The Redis store's own calls, one at a time, on one redis-server and on a
one-primary Redis Cluster (bench/processes.py starts both): a match's tail
(what a replica reads to catch up), its whole load, and an append with its
due time. One match of 40 events; each call timed ``--calls`` times in a row
from one coroutine, so the figure is the round trip plus redis-py's own work
(the cluster client's routing included).

    python3 bench/redis_reads.py [--calls 500]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from spades_server.store.base import StoredAction, StoredEvent
from spades_server.store.redis import RedisStore

from load import print_grid
from processes import RedisClusterProcess, RedisProcess

PAYLOAD = b"e" * 200  # about an event's size


def event(seq: int) -> StoredEvent:
    return StoredEvent(seq, "everyone", PAYLOAD)


def action(seq: int) -> StoredAction:
    return StoredAction(seq - 2, 0, "play 2S", f"a{seq}", seq, seq)


async def timed(calls: int, call: Callable[[int], Awaitable[Any]]) -> float:
    """Microseconds per call, ``call(i)`` for i in range(calls)."""
    t0 = time.perf_counter()
    for i in range(calls):
        await call(i)
    return (time.perf_counter() - t0) / calls * 1e6


async def measure(store: RedisStore, calls: int) -> dict[str, float]:
    await store.create_match("m", b"meta", b"snap", [event(1)])
    for seq in range(2, 41):
        await store.append("m", seq - 1, [event(seq)], action(seq), due_ms=1)
    out = {
        "tail": await timed(calls, lambda _: store.tail("m", 30, 28)),
        "load": await timed(calls, lambda _: store.load_match("m")),
    }

    async def append(i: int) -> None:
        seq = 41 + i
        await store.append("m", seq - 1, [event(seq)], action(seq), due_ms=1)

    out["append with due time"] = await timed(calls, append)
    await store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=500, help="calls of each kind (500)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="redis-reads-") as tmp:
        single = RedisProcess(Path(tmp) / "single", None)
        cluster = RedisClusterProcess(Path(tmp) / "cluster", 1)
        try:
            one = asyncio.run(measure(RedisStore(single.url, "b"), args.calls))
            many = asyncio.run(measure(RedisStore(cluster.url, "b", cluster=True), args.calls))
        finally:
            single.stop()
            cluster.stop()
    print(f"The Redis store's calls, µs each ({args.calls} in a row, redis {single.version})")
    rows = [[k, f"{one[k]:,.0f}", f"{many[k]:,.0f}"] for k in one]
    print_grid(["call", "one Redis", "cluster, 1 primary"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
