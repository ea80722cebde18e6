#!/usr/bin/env python3
"""Where Expert loses points to the omniscient yardstick: bidding or play.

Two hybrid match bots, for this bench only (never in ``BOTS``), each playing
one half of the hand as the omniscient bot (which sees every hand) and the
other as Expert (which sees its view):

* ``obid-eplay``: bids as the omniscient bot, plays as Expert;
* ``ebid-oplay``: bids as Expert, plays as the omniscient bot.

Each plays a duplicate tournament against ``--baseline`` (Hard) on the same
deals as ``bench/expert_gap.py`` (same ``--seed``, ``--deals``, ``--budget``),
so the per-deal differences pair with the gap's runs; give their
``spades-tournament --json`` files with ``--with NAME=PATH`` (e.g. the
omniscient's and Expert's runs against Hard) to print every line-up's mean
and its share of the omniscient's gain over the baseline on the same deals.

    python3 bench/expert_hybrid.py [--deals 60] [--budget 200] [--seed 1] [--jobs 1]
        [--bots obid-eplay,ebid-oplay] [--with omniscient=omni.json --with expert=expert.json]
        [--json-dir DIR] [--set MODULE.NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from expert_ab import apply_sets
from expert_gap import against_baseline
from spades_engine import preset
from spades_engine.actions import Action, Bid
from spades_engine.bots.expert import expert
from spades_engine.bots.omniscient import omniscient
from spades_engine.match import Match
from spades_engine.tournament import MATCH_BOTS, mean_ci


def _bidding(match: Match, seat: int) -> bool:
    legal = match.legal_actions(seat)
    return bool(legal) and isinstance(legal[0], Bid)


def obid_eplay(match: Match, seat: int, seed: int, budget_ms: int = 200) -> Action:
    """Bids as the omniscient bot, everything else as Expert."""
    if _bidding(match, seat):
        return omniscient(match, seat, seed, budget_ms)
    return expert(match.view(seat), seed, budget_ms)


def ebid_oplay(match: Match, seat: int, seed: int, budget_ms: int = 200) -> Action:
    """Bids as Expert, everything else as the omniscient bot."""
    if _bidding(match, seat):
        return expert(match.view(seat), seed, budget_ms)
    return omniscient(match, seat, seed, budget_ms)


HYBRIDS = {"obid-eplay": "obid_eplay", "ebid-oplay": "ebid_oplay"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="classic")
    p.add_argument("--deals", type=int, default=60)
    p.add_argument("--budget", type=int, default=200, help="milliseconds per decision")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--baseline", default="hard")
    p.add_argument("--bots", default=",".join(HYBRIDS))
    p.add_argument("--with", dest="extra", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--json-dir", metavar="DIR", help="write each run's summary there")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="MODULE.NAME=VALUE")
    args = p.parse_args()
    apply_sets(args.sets)  # as bench/expert_ab.py: in this process, so --jobs 1
    for name, function in HYBRIDS.items():
        MATCH_BOTS[name] = (__name__ if __name__ != "__main__" else "expert_hybrid", function)
    rules = preset(args.preset)
    diffs: dict[str, list[float]] = {}
    for name, path in (x.split("=", 1) for x in args.extra):
        s = json.loads(Path(path).read_text())
        diffs[name] = list(s["pair_diffs"])[: args.deals]
    for name in args.bots.split(","):
        s = against_baseline(
            rules, args.preset, name, args.baseline, args.deals, args.seed, args.budget, args.jobs
        )
        if args.json_dir:
            Path(args.json_dir, f"{name}_{args.baseline}_{args.deals}.json").write_text(
                json.dumps(s, indent=2) + "\n"
            )
        diffs[name] = s["pair_diffs"]
    print(summary_lines(diffs, args.baseline))


def summary_lines(diffs: dict[str, list[float]], baseline: str) -> str:
    """Each line-up's mean over the baseline, and its share of the omniscient's."""
    n = min(len(d) for d in diffs.values())
    ref = diffs.get("omniscient")
    lines = [f"the same {n} deals, points per hand per duplicate pair over {baseline}:"]
    for name, d in diffs.items():
        m = mean_ci(d[:n])
        text = f"  {name:12} {m['mean']:+7.2f}  95% CI [{m['ci95'][0]:+.2f}, {m['ci95'][1]:+.2f}]"
        if ref is not None and name != "omniscient":
            mo = math.fsum(ref[:n]) / n
            text += f"  share of omniscient's {mo:+.2f}: {m['mean'] / mo:.1%}"
        lines.append(text)
    return "\n".join(lines)


if __name__ == "__main__":
    main()
