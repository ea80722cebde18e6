#!/usr/bin/env python3
"""What Expert's draw search is worth: Expert against Expert drawing by the
simple rule (``choices.simple_draw``) and bidding and playing by its searches,
in a duplicate tournament of whole two-player games (the draw of RULES.md 3.1)
through ``spades_engine.tournament``.

The second bot is registered here as ``expert-simple-draw``; ``--draw-z``
changes ``expert.DRAW_Z`` (how sure the search must be to overrule the simple
rule) for the run.  The report is the one ``spades-tournament`` prints.

    python3 bench/expert_draw.py [--preset german] [--games 40] [--budget 20]
                                 [--draw-z Z] [--jobs 1] [--seed 1]
"""

from __future__ import annotations

import argparse
import importlib
import time

from spades_engine import preset
from spades_engine.actions import Action
from spades_engine.bots import BOTS
from spades_engine.bots.choices import draws, simple_draw
from spades_engine.bots.expert import expert
from spades_engine.tournament import Config, format_report, run, summarize
from spades_engine.view import SeatView


def expert_simple_draw(view: SeatView, seed: int, budget_ms: int = 200) -> Action:
    """Expert, but the draw by the simple rule every other level uses."""
    return simple_draw(view) if draws(view) else expert(view, seed, budget_ms)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="german")
    p.add_argument("--games", type=int, default=40)
    p.add_argument("--budget", type=int, default=20, help="milliseconds per decision")
    p.add_argument("--draw-z", type=float, default=None, help="expert.DRAW_Z for this run")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    BOTS["expert-simple-draw"] = expert_simple_draw
    if args.draw_z is not None:  # read at each draw; worker processes fork after this
        # the module, not the function that spades_engine.bots exports by its name
        importlib.import_module("spades_engine.bots.expert").DRAW_Z = args.draw_z
    cfg = Config(
        rules=preset(args.preset, players=2),
        a=("expert",),
        b=("expert-simple-draw",),
        mode="games",
        count=args.games,
        seed=args.seed,
        budget_ms=args.budget,
    )
    start = time.perf_counter()
    results = run(cfg, jobs=args.jobs)
    summary = summarize(
        cfg,
        results,
        preset_name=f"{args.preset} players=2",
        jobs=args.jobs,
        elapsed_s=time.perf_counter() - start,
    )
    print(format_report(summary))


if __name__ == "__main__":
    main()
