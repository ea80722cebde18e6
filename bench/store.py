#!/usr/bin/env python3
"""Store benchmark: appends per second with many matches acting at once.

``--matches`` matches (100) run concurrently on one event loop; each makes
``--appends`` sequential appends (each waits for the previous one to be
acknowledged), every append carrying 3 events (~200 bytes each) and an action,
like a card play that ends a trick. Measured in wall-clock time, the store
created fresh in a temporary directory for each configuration:

* SQLite, synchronous=FULL (the default: fsync at every commit);
* SQLite, synchronous=NORMAL (survives a process crash, not a power loss);
* SQLite, synchronous=FULL with max_batch=1: no group commit, for comparison;
* the in-memory store, as the ceiling of the calling code itself.

    python3 bench/store.py [--matches 100] [--appends 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from spades_server.store import Store, StoredAction, StoredEvent
from spades_server.store.memory import MemoryStore
from spades_server.store.sqlite import SqliteStore

PAYLOAD = b"x" * 200


async def drive(store: Store, matches: int, appends: int) -> dict[str, Any]:
    ids = [f"bench-{i}" for i in range(matches)]
    await asyncio.gather(*(store.create_match(m, b"{}", b"snapshot", []) for m in ids))
    latencies: list[float] = []

    async def play(match_id: str) -> None:
        seq = 0
        for index in range(appends):
            events = [StoredEvent(seq + k, "everyone", PAYLOAD) for k in (1, 2, 3)]
            action = StoredAction(index, index % 4, "play QS", f"a{index}", seq + 1, seq + 3)
            t0 = time.perf_counter()
            await store.append(match_id, seq, events, action, b'{"v":1}')
            latencies.append(time.perf_counter() - t0)
            seq += 3

    start = time.perf_counter()
    await asyncio.gather(*(play(m) for m in ids))
    elapsed = time.perf_counter() - start
    latencies.sort()
    total = matches * appends
    return {
        "appends": total,
        "seconds": elapsed,
        "appends_per_second": total / elapsed,
        "events_per_second": 3 * total / elapsed,
        "latency_ms_p50": 1000 * statistics.median(latencies),
        "latency_ms_p99": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
    }


async def bench(kind: str, matches: int, appends: int, directory: Path) -> dict[str, Any]:
    store: Store
    if kind == "memory":
        store = MemoryStore()
    else:
        sync, _, batch = kind.partition("/")
        store = await SqliteStore.open(
            directory / f"{kind.replace('/', '-')}.db",
            synchronous=sync,
            max_batch=1 if batch == "nogroup" else 1024,
        )
    result = await drive(store, matches, appends)
    if isinstance(store, SqliteStore):
        stats = store.stats()
        result["commits"] = stats.commits
        result["mean_batch"] = stats.requests / max(stats.commits, 1)
        result["largest_batch"] = stats.largest_batch
    await store.close()
    return result


CONFIGS = {
    "FULL": "SQLite synchronous=FULL",
    "NORMAL": "SQLite synchronous=NORMAL",
    "FULL/nogroup": "SQLite FULL, no group commit",
    "memory": "MemoryStore",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Store appends per second, many matches at once.")
    ap.add_argument("--matches", type=int, default=100, help="concurrent matches (100)")
    ap.add_argument("--appends", type=int, default=50, help="sequential appends per match (50)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    if args.matches < 1 or args.appends < 1:
        ap.error("--matches and --appends must be at least 1")
    print("Store benchmark: appends/s, each append = 3 events + 1 action + metadata")
    print(f"python  {platform.python_implementation()} {platform.python_version()}")
    print(f"load    {args.matches} concurrent matches x {args.appends} sequential appends")
    print()
    header = (
        f"{'store':<30} {'appends/s':>10} {'events/s':>10} {'p50 ms':>8} {'p99 ms':>8}"
        f" {'commits':>8} {'batch':>6}"
    )
    print(header)
    print("-" * len(header))
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="spades-bench-store-") as tmp:
        for kind, label in CONFIGS.items():
            r = asyncio.run(bench(kind, args.matches, args.appends, Path(tmp)))
            results[kind] = r
            commits = f"{r['commits']:>8,} {r['mean_batch']:>6.1f}" if "commits" in r else ""
            print(
                f"{label:<30} {r['appends_per_second']:>10,.0f} {r['events_per_second']:>10,.0f}"
                f" {r['latency_ms_p50']:>8.2f} {r['latency_ms_p99']:>8.2f} {commits}",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
