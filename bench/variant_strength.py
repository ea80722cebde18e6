#!/usr/bin/env python3
"""Each bot level against the one below it, table by table: duplicate
tournaments (``spades_engine.tournament``) on the presets and variants of
RULES.md, printed as one Markdown table (docs/bots.md quotes it).

Every row is a single-hand duplicate tournament, A - B points per hand with its
95% interval.  Normal-Easy and Hard-Normal play ``--deals`` deals, Expert-Hard
``--expert-deals`` at ``--budget`` ms a decision.  Under deuces high one more
row sets Hard against the same Hard reading the real card indices (without the
virtual deck of bots/deuces.py), which is what the bots did before it.

    python3 bench/variant_strength.py [--deals 300] [--expert-deals 60]
        [--budget 50] [--jobs 2] [--seed 1] [--tables classic,deuces,...]
"""

from __future__ import annotations

import argparse
import time

from spades_engine import Ruleset, preset
from spades_engine.bots import BOTS
from spades_engine.tournament import Config, run, summarize

TABLES: dict[str, Ruleset] = {
    "classic": preset("classic"),
    "polish": preset("polish"),
    "tricks": preset("classic", scoring="tricks"),
    "suicide": preset("classic", suicide=True),
    "auction": preset("classic", auction_trump=True),
    "deuces": preset("classic", jokers=True, deuces_high=True),
}
"""The tables by short name: each preset of RULES.md that changed, and each variant
but two players, whose hands are drawn, not dealt, so single deals cannot be
repeated: docs/bots.md measures that table in whole games."""

PAIRS = (("normal", "easy"), ("hard", "normal"), ("expert", "hard"))

UNAWARE = "hard-unaware"


def _rows(name: str) -> list[tuple[str, str]]:
    rows = list(PAIRS)
    if name == "deuces":
        rows.append(("hard", UNAWARE))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--deals", type=int, default=300)
    p.add_argument("--expert-deals", type=int, default=60)
    p.add_argument("--budget", type=int, default=50, help="ms per Expert decision")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tables", default=",".join(TABLES), help=f"of {', '.join(TABLES)}")
    args = p.parse_args()
    # Hard without the deuces renumbering: functools.wraps keeps the inner bot.
    BOTS[UNAWARE] = BOTS["hard"].__wrapped__  # type: ignore[attr-defined]
    print(f"seed {args.seed}, Expert budget {args.budget} ms\n")
    print("| table | A - B | deals | points per hand, A - B | 95% CI |")
    print("|---|---|---|---|---|")
    for name in args.tables.split(","):
        rules = TABLES[name]
        for a, b in _rows(name):
            deals = args.expert_deals if "expert" in (a, b) else args.deals
            cfg = Config(
                rules=rules, a=(a,), b=(b,), count=deals, seed=args.seed, budget_ms=args.budget
            )
            start = time.perf_counter()
            s = summarize(cfg, run(cfg, jobs=args.jobs), elapsed_s=time.perf_counter() - start)
            d = s["points_diff"]
            print(
                f"| {name} | {a} - {b} | {deals} | {d['mean']:+.2f} | "
                f"[{d['ci95'][0]:+.2f}, {d['ci95'][1]:+.2f}] |",
                flush=True,
            )


if __name__ == "__main__":
    main()
