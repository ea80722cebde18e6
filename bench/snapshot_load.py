#!/usr/bin/env python3
"""What loading a snapshot costs, and what that means for a server restart.

``Match.from_snapshot`` checks a snapshot by replaying its actions from its
deal and comparing the state they give with the one stored, so its cost grows
with the number of actions in the snapshot. Two measurements:

* per snapshot: ``Match.from_snapshot`` (and, for scale, ``to_snapshot``) of
  a classic match of Normal bots stopped after 0, 1, 3 and 6 hands and at the
  end, best of ``--runs`` timings of ``--reps`` loads each (CPU time of this
  process, one core);
* a restart: ``--matches`` unfinished matches (each stopped at a random point
  of a seeded match of Normal bots) are stored in an embedded SQLite database the way
  the server stores them; then the server (``python3 -m spades_server.main``)
  is started on it and timed from spawn to its ready line, against a start on
  an empty database. A restarted server loads every unfinished match before
  it listens.

    python3 bench/snapshot_load.py [--matches 1000] [--runs 3] [--reps 20]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from spades_server.allowance import SessionLimits
from spades_server.matches import Registry, SeatSpec
from spades_server.store.sqlite import SqliteStore

from load import print_table
from processes import start_server
from spades_engine import Event, Match, preset
from spades_engine.bots import BOTS

POINTS = (0, 1, 3, 6)  # hands played before the snapshot, then the finished match


def bot_match(seed: int) -> Match:
    """A classic match played to its end by four Normal bots: about nine hands,
    as people's matches last (random play ends classic matches in two or three
    hands by the mercy rule)."""
    m = Match(preset("classic"), seed=seed)
    while not m.is_over:
        seat = m.to_act
        m.apply(seat, BOTS["normal"](m.view(seat), seed, 0))
    return m


def replayed(whole: Match, actions: int) -> tuple[Match, list[Event]]:
    """``whole`` after its first ``actions`` actions, with every event they caused."""
    m = Match(whole.rules, seed=whole.seed)
    events = list(m.opening_events)
    for seat, action in whole.actions[:actions]:
        events += m.apply(seat, action)
    return m, events


def snapshots_at_points(seed: int) -> list[tuple[str, bytes, int]]:
    """(label, snapshot, actions) at each point of POINTS and at the end."""
    whole = bot_match(seed)
    out = []
    m = Match(whole.rules, seed=seed)
    points = iter(POINTS)
    want = next(points)
    for seat, action in [*whole.actions, (-1, None)]:
        while want is not None and len(m.state.results) == want and not m.state.hand.completed:
            out.append((f"after {want} hand(s)", m.to_snapshot(), len(m.actions)))
            want = next(points, None)
        if action is None:
            break
        m.apply(seat, action)
    out.append(("finished match", m.to_snapshot(), len(m.actions)))
    return out


def best_us(fn: Callable[[], object], runs: int, reps: int) -> float:
    """Best over ``runs`` of the mean CPU microseconds of ``reps`` calls of ``fn``."""
    times = []
    for _ in range(runs):
        t0 = time.process_time()
        for _ in range(reps):
            fn()
        times.append((time.process_time() - t0) / reps * 1e6)
    return min(times)


def per_snapshot(runs: int, reps: int) -> list[tuple[str, str, str, str]]:
    rows = []
    for label, data, actions in snapshots_at_points(seed=7):
        load = best_us(functools.partial(Match.from_snapshot, data), runs, reps)
        dump = best_us(Match.from_snapshot(data).to_snapshot, runs, reps)
        per_action = f"{load / actions:.1f} us/action" if actions else ""
        rows.append(
            (
                f"{label}: {actions} actions, {len(data):,} bytes",
                f"load {load:,.0f} us",
                f"dump {dump:,.0f} us",
                per_action,
            )
        )
    return rows


async def populate(db: Path, count: int, seed: int) -> tuple[int, int]:
    """``count`` unfinished matches stored as the server stores them; returns
    (matches, actions in them)."""
    store = await SqliteStore.open(db, synchronous="OFF")
    registry = Registry(store, SessionLimits(), max_matches=count + 1, unload_after_s=-1)
    rng = random.Random(seed)
    specs = [SeatSpec(f"Seat {i}", False, 0) for i in range(4)]
    actions = 0
    for i in range(count):
        whole = bot_match(seed + i)
        match, events = replayed(whole, rng.randrange(len(whole.actions)))
        session, _, _ = await registry.create(match, specs, 0, events)
        session.close()
        actions += len(match.actions)
    await registry.close()
    await store.close()
    return count, actions


def start_seconds(tmp: Path) -> float:
    """Seconds from spawning the server on ``tmp``'s database to its ready line."""
    t0 = time.perf_counter()
    server = start_server("sqlite", tmp, [], None)
    seconds = time.perf_counter() - t0
    server.stop()
    return seconds


def restart(count: int, runs: int) -> list[tuple[str, str, str, str]]:
    with tempfile.TemporaryDirectory(prefix="spades-bench-restart-") as empty_dir:
        empty = [start_seconds(Path(empty_dir)) for _ in range(runs)]
    with tempfile.TemporaryDirectory(prefix="spades-bench-restart-") as tmp:
        matches, actions = asyncio.run(populate(Path(tmp) / "s.db", count, seed=1000))
        full = [start_seconds(Path(tmp)) for _ in range(runs)]
    extra = statistics.median(full) - statistics.median(empty)
    return [
        ("server start, empty database (median)", f"{statistics.median(empty):.2f} s", "", ""),
        (
            f"server start, {matches:,} unfinished matches, {actions:,} actions (median)",
            f"{statistics.median(full):.2f} s",
            "",
            "",
        ),
        (
            "  loading them",
            f"{extra:.2f} s",
            f"{extra / matches * 1e3:.2f} ms/match",
            f"{extra / actions * 1e6:.1f} us/action",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=1000, help="unfinished matches (1000)")
    ap.add_argument("--runs", type=int, default=3, help="timings of each measure (3)")
    ap.add_argument("--reps", type=int, default=20, help="loads per timing (20)")
    args = ap.parse_args(argv)
    if min(args.matches, args.runs, args.reps) < 1:
        ap.error("--matches, --runs and --reps must be positive")
    print("Snapshot loading (bench/snapshot_load.py)")
    print(f"python  {platform.python_implementation()} {platform.python_version()}")
    print()
    print_table(per_snapshot(args.runs, args.reps))
    print()
    print_table(restart(args.matches, args.runs))
    print()
    print(
        "load/dump: best of runs of the mean CPU time per call; server start: wall clock "
        "from spawn to the ready line, embedded SQLite store"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
