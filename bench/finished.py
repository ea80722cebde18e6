#!/usr/bin/env python3
"""Memory of matches that are over: held in the server, or unloaded.

Starts the server (``python3 -m spades_server.main``, embedded SQLite store in
a temporary directory) twice: with ``--unload-after-seconds -1`` a finished
match stays in memory with its whole event log; with ``0`` it leaves memory as
soon as it ends (the server keeps its summary and loads it from the store
when asked for it). Each time it creates ``--matches`` matches of four random
bots, which the server plays to the end by itself, waits until every one is
over (each watched to its end on a Spectate stream, twenty at a time, so
memory holds at most twenty live matches), and reads the server's VmRSS
before and after.

    python3 bench/finished.py [--matches 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc

from load import channel, print_table
from processes import OPERATOR_MD, start_server
from server import RULESET_PB

WARMUP_MATCHES = 100  # allocator arenas and caches first; not counted
FINISH_TIMEOUT_S = 600.0
CONCURRENCY = 20  # matches being played at once


async def play_out(address: str, seeds: range) -> list[pb.MatchSummary]:
    """A bots-only match per seed, at most CONCURRENCY at a time, each watched
    on a Spectate stream to its end; their summaries once all are over."""
    seats = [
        pb.SeatConfig(name=f"bot {i}", bot=True, bot_level=pb.BOT_LEVEL_RANDOM) for i in range(4)
    ]
    pending = list(seeds)
    async with channel(address) as ch:
        stub = spades_pb2_grpc.SpadesServiceStub(ch)
        ids: set[str] = set()

        async def worker() -> None:
            while pending:
                request = pb.CreateMatchRequest(
                    ruleset=RULESET_PB, seats=seats, seed=pending.pop(), has_seed=True
                )
                created = await stub.CreateMatch(request, metadata=OPERATOR_MD)
                ids.add(created.match.match_id)
                await watch_to_end(stub, created.match.match_id)

        await asyncio.wait_for(
            asyncio.gather(*(worker() for _ in range(CONCURRENCY))), FINISH_TIMEOUT_S
        )
        return [m for m in await list_all(stub) if m.match_id in ids]


async def watch_to_end(stub: Any, match_id: str) -> None:
    call = stub.Spectate(pb.SpectateRequest(match_id=match_id))
    try:
        async for response in call:
            if any(ev.HasField("match_ended") for ev in response.events):
                return
        raise SystemExit(f"the stream of match {match_id} ended before the match")
    finally:
        call.cancel()


async def list_all(stub: Any) -> list[pb.MatchSummary]:
    matches: list[pb.MatchSummary] = []
    token = ""
    while True:
        page = await stub.ListMatches(
            pb.ListMatchesRequest(page_size=500, page_token=token), metadata=OPERATOR_MD
        )
        matches.extend(page.matches)
        token = page.next_page_token
        if not token:
            return matches


def measure(unload_after: str, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="spades-bench-finished-") as tmp:
        server = start_server("sqlite", Path(tmp), ["--unload-after-seconds", unload_after], None)
        try:
            asyncio.run(play_out(server.address, range(10**6, 10**6 + WARMUP_MATCHES)))
            time.sleep(1.0)
            before = server.rss_kib()
            t0 = time.perf_counter()
            summaries = asyncio.run(play_out(server.address, range(count)))
            seconds = time.perf_counter() - t0
            time.sleep(1.0)
            after = server.rss_kib()
        finally:
            server.stop()
    return {
        "unload_after_seconds": unload_after,
        "matches": count,
        "events": sum(m.last_seq for m in summaries),
        "hands": sum(m.hand_number + 1 for m in summaries),
        "rss_kib_before": before,
        "rss_kib_after": after,
        "kib_per_match": (after - before) / count,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=1000, help="finished matches to make (1000)")
    args = ap.parse_args(argv)
    if args.matches < 1:
        ap.error("--matches must be positive")
    print("Finished matches in memory (bench/finished.py)")
    print(f"python  {platform.python_implementation()} {platform.python_version()}")
    print(
        f"load    {args.matches:,} matches of four random bots played to the end by the "
        "server, embedded SQLite store"
    )
    print()
    held, unloaded = measure("-1", args.matches), measure("0", args.matches)
    rows = []
    for r, label in ((held, "kept (-1)"), (unloaded, "unloaded at once (0)")):
        rows += [
            (
                f"--unload-after-seconds {label}: VmRSS before",
                f"{r['rss_kib_before'] / 1024:,.1f} MiB",
                "",
                "",
            ),
            ("  VmRSS after", f"{r['rss_kib_after'] / 1024:,.1f} MiB", "", ""),
            ("  RSS growth per finished match", f"{r['kib_per_match']:.1f} KiB", "", ""),
        ]
    print_table(rows)
    print()
    print(
        f"each run: the same {held['matches']:,} seeded matches, {held['hands']:,} hands and "
        f"{held['events']:,} events in all (second run: {unloaded['events']:,} events); VmRSS "
        f"from /proc/<server pid>/status after {WARMUP_MATCHES} warm-up matches and 1 s after "
        "the last match ended; KiB = 1024 bytes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
