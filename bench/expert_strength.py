#!/usr/bin/env python3
"""Quick strength check of the Expert bot: a duplicate tournament against
another registered bot (random legal play by default), through
``spades_engine.tournament``.

Expert is added to ``BOTS`` here if the registry does not list it yet.  The
report gives A - B points per hand with a 95% interval, nil and bag figures,
and think-time percentiles per bot.

    python3 bench/expert_strength.py [--preset classic] [--deals 40] [--budget 50]
                                     [--opponent random] [--jobs 2] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

from spades_engine import preset
from spades_engine.bots import BOTS
from spades_engine.bots.expert import expert
from spades_engine.tournament import Config, format_report, run, summarize


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="classic")
    p.add_argument("--players", type=int, default=None, help="override the preset's players")
    p.add_argument("--deals", type=int, default=40)
    p.add_argument("--budget", type=int, default=50, help="milliseconds per decision")
    p.add_argument("--opponent", default="random")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    BOTS.setdefault("expert", expert)
    rules = (
        preset(args.preset) if args.players is None else preset(args.preset, players=args.players)
    )
    cfg = Config(
        rules=rules,
        a=("expert",),
        b=(args.opponent,),
        count=args.deals,
        seed=args.seed,
        budget_ms=args.budget,
    )
    start = time.perf_counter()
    results = run(cfg, jobs=args.jobs)
    summary = summarize(
        cfg, results, preset_name=args.preset, jobs=args.jobs, elapsed_s=time.perf_counter() - start
    )
    print(format_report(summary))


if __name__ == "__main__":
    main()
