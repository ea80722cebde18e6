#!/usr/bin/env python3
"""Screen a change of Expert: Expert against the baseline (Hard) on the deals
of ``bench/expert_gap.py``, with module constants of the bots set for the run,
paired by deal with earlier runs of the same deals.

``--set MODULE.NAME=VALUE`` (repeatable) sets ``spades_engine.bots.MODULE.NAME``
to the Python literal VALUE before the tournament (e.g. ``--set
determinize._BID_SIGMA=1.0``), in this process: run with ``--jobs 1``.  The
constant must be one the module reads at each call (not a ``Final``, which the
compiled build inlines).  ``--against NAME=PATH`` (repeatable) reads a
``spades-tournament --json`` file of the same deals (or one written here with
``--json``) and prints this run minus it, paired by deal, and, given the
omniscient's run as ``omniscient=PATH``, the share of its gap this run closes.

    python3 bench/expert_ab.py --deals 60 [--budget 200] [--seed 1]
        [--set MODULE.NAME=VALUE ...] [--against NAME=PATH ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import math
from pathlib import Path

from expert_gap import against_baseline
from spades_engine import preset
from spades_engine.tournament import mean_ci


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="classic")
    p.add_argument("--deals", type=int, default=60)
    p.add_argument("--budget", type=int, default=200, help="milliseconds per decision")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bot", default="expert")
    p.add_argument("--baseline", default="hard")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="MODULE.NAME=VALUE")
    p.add_argument("--against", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args()
    apply_sets(args.sets)
    s = against_baseline(
        preset(args.preset),
        args.preset,
        args.bot,
        args.baseline,
        args.deals,
        args.seed,
        args.budget,
        1,
    )
    s["sets"] = args.sets
    if args.json:
        Path(args.json).write_text(json.dumps(s, indent=2) + "\n")
    mine = s["pair_diffs"]
    n = len(mine)
    for name, path in (x.split("=", 1) for x in args.against):
        other = list(json.loads(Path(path).read_text())["pair_diffs"])
        if len(other) < n:
            raise SystemExit(f"{path} has {len(other)} deals, fewer than {n}")
        other = other[:n]
        if name == "omniscient":
            mo = math.fsum(other) / n
            closed = math.fsum(mine) / n / mo
            print(f"share of the {args.baseline} -> omniscient gap ({mo:+.2f}): {closed:.1%}")
            continue
        d = mean_ci([a - b for a, b in zip(mine, other, strict=True)])
        lo, hi = d["ci95"]
        print(
            f"this run - {name}, paired by deal: {d['mean']:+.2f}  "
            f"95% CI [{lo:+.2f}, {hi:+.2f}]  (n={n}, sd={d['sd']:.2f})"
        )


def apply_sets(sets: list[str]) -> None:
    """Set each ``MODULE.NAME=VALUE`` of ``sets`` in ``spades_engine.bots``."""
    for item in sets:
        target, value = item.split("=", 1)
        module, name = target.rsplit(".", 1)
        mod = importlib.import_module(f"spades_engine.bots.{module}")
        if not hasattr(mod, name):
            raise SystemExit(f"spades_engine.bots.{module} has no {name}")
        setattr(mod, name, ast.literal_eval(value))
        print(f"set {module}.{name} = {getattr(mod, name)!r}")


if __name__ == "__main__":
    main()
