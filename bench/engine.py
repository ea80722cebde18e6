#!/usr/bin/env python3
"""Engine benchmark: full random hands per second on one core.

Two paths, each timed as the best of several runs of a few seconds of CPU
time of this process (``time.process_time``: a single thread, so one core;
other load on the machine distorts it less than wall-clock time would):

* public API: ``Match`` with a target score no one reaches and no mercy
  score, so hands keep coming; per hand the deal, the bids and every card are
  uniformly random legal actions from ``legal_actions``, then the scoring.
* kernel: ``spades_engine.kernel.random_hand`` (deal, random bids, random
  play on bitmasks, ``score_hand``).

    python3 bench/engine.py [--seconds 2] [--runs 3] [--preset classic] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spades_engine import Match, Ruleset, preset
from spades_engine.kernel import random_hand

TARGETS = {"public": 3_000, "kernel": 15_000}  # hands per second on one core
LABELS = {"public": "public API (Match)", "kernel": "kernel.random_hand"}


def bench_public(rules: Ruleset, seconds: float, seed: int) -> tuple[int, float]:
    """Hands completed through ``Match`` in about ``seconds``; (hands, elapsed)."""
    m = Match(rules.replace(target_score=10**9, mercy_score=None), seed=seed)
    rnd = random.Random(seed).random
    hands = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        number = m.hand_number
        while m.hand_number == number:  # bids and plays of one hand; the last scores it
            seat = m.to_act
            if seat < 0:  # a blind nil exchange: its seats act in any order
                seat = m.seats_to_act()[0]
            acts = m.legal_actions(seat)
            m.apply(seat, acts[int(rnd() * len(acts))])
        hands += 1
        now = time.process_time()
        if now >= deadline:
            return hands, now - start


def bench_kernel(rules: Ruleset, seconds: float, seed: int) -> tuple[int, float]:
    """Hands completed by ``kernel.random_hand`` in about ``seconds``."""
    rng = random.Random(seed)
    players = rules.players
    hands = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        random_hand(rules, rng, hands % players)
        hands += 1
        now = time.process_time()
        if now >= deadline:
            return hands, now - start


def best_of(
    fn: Callable[[Ruleset, float, int], tuple[int, float]],
    rules: Ruleset,
    seconds: float,
    runs: int,
) -> dict[str, Any]:
    results = [fn(rules, seconds, seed) for seed in range(1, runs + 1)]
    rates = [hands / elapsed for hands, elapsed in results]
    hands, elapsed = results[rates.index(max(rates))]
    return {
        "hands": hands,
        "seconds": round(elapsed, 3),
        "hands_per_second": round(hands / elapsed, 1),
        "runs_hands_per_second": [round(r, 1) for r in rates],
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Full random hands per second on one core.")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of each run (default 2)")
    ap.add_argument("--runs", type=int, default=3, help="runs per path; the best counts (3)")
    ap.add_argument("--preset", default="classic", help="ruleset preset (default classic)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    if args.seconds <= 0 or args.runs < 1:
        ap.error("--seconds must be positive and --runs at least 1")
    rules = preset(args.preset)

    python = f"{platform.python_implementation()} {platform.python_version()}"
    cpu = cpu_model()
    print("Spades engine benchmark: full random hands per second, one core")
    print(f"python  {python}")
    print(f"cpu     {cpu}")
    print(f"preset  {args.preset} ({rules.players} players, {rules.tricks_per_hand} tricks)")
    print(f"timing  best of {args.runs} runs of {args.seconds:g} s of CPU time each")
    print()
    header = f"{'path':<20} {'hands':>8} {'cpu s':>8} {'hands/s':>9} {'target':>8}  ok"
    print(header)
    print("-" * len(header))
    results: dict[str, dict[str, Any]] = {}
    for name, fn in (("public", bench_public), ("kernel", bench_kernel)):
        r = best_of(fn, rules, args.seconds, args.runs)
        r["target_hands_per_second"] = TARGETS[name]
        r["meets_target"] = r["hands_per_second"] >= TARGETS[name]
        results[name] = r
        print(
            f"{LABELS[name]:<20} {r['hands']:>8,} {r['seconds']:>8.3f} "
            f"{r['hands_per_second']:>9,.0f} {TARGETS[name]:>8,}  "
            f"{'yes' if r['meets_target'] else 'NO'}",
            flush=True,
        )
    if args.json:
        report = {
            "python": python,
            "cpu": cpu,
            "preset": args.preset,
            "runs": args.runs,
            "seconds_per_run": args.seconds,
            "results": results,
        }
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    missed = [name for name, r in results.items() if not r["meets_target"]]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
