#!/usr/bin/env python3
"""The Expert's work costs for the compiled build, measured against the pure one.

The Expert counts its search in calibrated microseconds (``bots/expert.py``:
``CARD_US``, ``SAMPLE_US``, ``ROLLOUT_US``, ``DRAW_US``), fitted on the pure
build; compiled, the same work takes less time, so the same budget buys more
work only if the costs are the compiled build's.  This script times the same
decisions, seeded alike, in both builds in one process (the pure sources
loaded a second time, ``_build.load_pure``), alternating which goes first,
with each build's costs forced to the pure ones (so both do exactly the same
work), and prints the ratio of compiled to pure time: the factor by which the
compiled build's costs are the pure ones' (``expert.COSTS``).

Positions: every decision of seeded matches between Hard bots (classic
preset), bids and plays, where the Expert searches (more than one legal
action).  Timed with ``time.perf_counter`` around the call alone; the budget
is large enough (``--budget``) that the work count, not the clock guard, ends
each search.

    python3 bench/expert_calibrate.py [--matches 3] [--budget 100]
"""

from __future__ import annotations

import argparse
import importlib
import math
import random
import statistics
import sys
import time
from types import ModuleType
from typing import Any

import spades_engine
from spades_engine import Match, preset
from spades_engine._build import load_pure
from spades_engine.bots import BOTS


def positions(matches: int, seed: int) -> list[tuple[bytes, int]]:
    """(snapshot, seat to act) before every searched decision of Hard matches."""
    out: list[tuple[bytes, int]] = []
    rng = random.Random(seed)
    for i in range(matches):
        m = Match(preset("classic", target_score=300), seed=seed * 1000 + i)
        while not m.is_over and len(out) < 10_000:
            seat = m.seats_to_act()[0]
            if len(m.legal_actions(seat)) > 1:
                out.append((m.to_snapshot(), seat))
            m.apply(seat, BOTS["hard"](m.view(seat), rng.getrandbits(32), 0))
    return out


def timed(pkg: ModuleType, snap: bytes, seat: int, seed: int, budget: int) -> tuple[float, str]:
    view = pkg.Match.from_snapshot(snap).view(seat)
    expert = pkg.bots.BOTS["expert"]
    t = time.perf_counter()
    action = expert(view, seed, budget)
    return time.perf_counter() - t, str(action)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matches", type=int, default=3, help="Hard matches to take positions from")
    ap.add_argument("--budget", type=int, default=100, help="ms per decision (work-bound)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if not spades_engine.COMPILED:
        print(f"the compiled engine is not loaded ({spades_engine.BUILD})", file=sys.stderr)
        return 1
    pure = load_pure()
    # The modules, not the ``expert`` functions that bots/__init__ exports by that name.
    c_expert = importlib.import_module("spades_engine.bots.expert")
    p_expert = importlib.import_module("spades_engine_pure.bots.expert")

    # Both builds on the pure build's costs: the same work in both.
    c_expert.COSTS = p_expert.COSTS = p_expert.PURE_COSTS
    pos = positions(args.matches, args.seed)
    ratios: list[float] = []
    times: dict[str, list[float]] = {"compiled": [], "pure": []}
    differ = 0
    for i, (snap, seat) in enumerate(pos):
        order: list[tuple[str, Any]] = [("compiled", spades_engine), ("pure", pure)]
        if i % 2:
            order.reverse()
        got = {name: timed(pkg, snap, seat, 7 + i, args.budget) for name, pkg in order}
        differ += got["compiled"][1] != got["pure"][1]
        for name, spent in times.items():
            spent.append(got[name][0])
        ratios.append(got["compiled"][0] / got["pure"][0])
    logs = [math.log(r) for r in ratios]
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = 1.96 * sd / math.sqrt(len(logs))
    total = {k: sum(v) for k, v in times.items()}
    print(f"Expert at {args.budget} ms on {len(pos)} positions, both builds on the pure costs")
    print(f"  total time: compiled {total['compiled']:.2f} s, pure {total['pure']:.2f} s")
    print(
        f"  mean per decision: compiled {1000 * total['compiled'] / len(pos):.1f} ms, "
        f"pure {1000 * total['pure'] / len(pos):.1f} ms (work-bound: about "
        f"{args.budget * p_expert.WORK_SHARE:.0f} ms)"
    )
    print(
        f"  compiled/pure, geometric mean per decision: {math.exp(mean):.3f} "
        f"[{math.exp(mean - half):.3f}, {math.exp(mean + half):.3f}]"
    )
    print(f"  compiled/pure, total time: {total['compiled'] / total['pure']:.3f}")
    print(f"  decisions that differed between builds: {differ} (0 expected: the same work)")
    factor = total["compiled"] / total["pure"]
    costs = ", ".join(f"{v * factor:.3g}" for v in p_expert.PURE_COSTS)
    print(f"  implied compiled costs (card, sample, rollout, draw us): {costs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
