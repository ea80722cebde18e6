#!/usr/bin/env python3
"""The share of the gap between Hard and the omniscient yardstick that Expert
closes, on the same deals: two duplicate tournaments through
``spades_engine.tournament``, the reference (``omniscient``, which sees every
hand) against the baseline (``hard``) and the bot (``expert``) against the
same baseline, with the same ``--seed``, ``--deals`` and ``--budget``, so pair
i is the same deal in both.

Per deal i, o_i = reference - baseline and e_i = bot - baseline (points per
hand, each the mean over the deal's seatings).  The share is

    share = mean(e) / mean(o)

and its 95% interval comes two ways, both pairing the deals: the delta method,
share ± 1.96·sd(e_i - share·o_i)/(√n·mean(o)), and a bootstrap of the deals
(resampled with replacement, both tournaments' differences together).  The
bot's own gap to the reference, mean(o - e), is printed with its interval too.

    python3 bench/expert_gap.py [--deals 300] [--budget 200] [--seed 1] [--jobs 2]
        [--preset classic] [--bot expert] [--baseline hard] [--reference omniscient]
        [--json gap.json]
    # or from two spades-tournament --json outputs of the same deals:
    python3 bench/expert_gap.py --from-json omniscient_hard.json expert_hard.json
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spades_engine import Ruleset, preset
from spades_engine.tournament import Config, format_report, mean_ci, run, summarize

Z95 = 1.96
BOOTSTRAP = 4000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="classic")
    p.add_argument("--deals", type=int, default=300)
    p.add_argument("--budget", type=int, default=200, help="milliseconds per decision")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--bot", default="expert")
    p.add_argument("--baseline", default="hard")
    p.add_argument("--reference", default="omniscient")
    p.add_argument("--json", metavar="PATH", help="write both summaries and the share as JSON")
    p.add_argument(
        "--from-json",
        nargs=2,
        metavar=("REFERENCE_JSON", "BOT_JSON"),
        help="read the two tournaments from spades-tournament --json files instead of playing",
    )
    args = p.parse_args()
    if args.from_json:
        ref, bot = (json.loads(Path(path).read_text()) for path in args.from_json)
        _same_deals(ref, bot)
    else:
        rules = preset(args.preset)
        ref, bot = (
            against_baseline(
                rules, args.preset, a, args.baseline, args.deals, args.seed, args.budget, args.jobs
            )
            for a in (args.reference, args.bot)
        )
    gap = share(ref["pair_diffs"], bot["pair_diffs"])
    print(report(ref, bot, gap))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"reference": ref, "bot": bot, "gap": gap}, f, indent=2)
            f.write("\n")


def against_baseline(
    rules: Ruleset,
    preset_name: str,
    bot: str,
    baseline: str,
    deals: int,
    seed: int,
    budget_ms: int,
    jobs: int,
) -> dict[str, Any]:
    """One duplicate tournament of ``bot`` against ``baseline`` on ``deals``
    deals of ``seed``: its report printed, its summary returned with the
    unrounded per-deal differences as ``pair_diffs`` (the other expert benches
    run theirs through this too, so pair i is the same deal in all of them)."""
    cfg = Config(rules=rules, a=(bot,), b=(baseline,), count=deals, seed=seed, budget_ms=budget_ms)
    start = time.perf_counter()
    results = run(cfg, jobs=jobs)
    s = summarize(
        cfg, results, preset_name=preset_name, jobs=jobs, elapsed_s=time.perf_counter() - start
    )
    s["pair_diffs"] = [r.diff for r in results]  # unrounded
    print(format_report(s) + "\n", flush=True)
    return s


def _same_deals(ref: dict[str, Any], bot: dict[str, Any]) -> None:
    """Refuse two tournaments that did not play the same deals against the same baseline."""
    for key in ("mode", "seed", "pairs", "rules", "b"):
        if ref.get(key) != bot.get(key):
            sys.exit(f"the two runs differ in {key!r}: {ref.get(key)!r} vs {bot.get(key)!r}")
    if ref["mode"] != "deals":
        sys.exit("the share is taken over single deals: run both with --deals")
    if ref.get("budget_ms_a", ref["budget_ms"]) != bot.get("budget_ms_a", bot["budget_ms"]):
        print("note: the two runs gave their bots different budgets", file=sys.stderr)


def share(o: Sequence[float], e: Sequence[float]) -> dict[str, Any]:
    """The share mean(e)/mean(o) of paired per-deal differences, with its 95%
    interval by the delta method and by a bootstrap of the deals."""
    n = len(o)
    if n != len(e) or n < 2:
        raise ValueError("need two equally long lists of per-deal differences, n >= 2")
    mo, me = math.fsum(o) / n, math.fsum(e) / n
    out: dict[str, Any] = {
        "n": n,
        "reference_minus_baseline": mean_ci(o),
        "bot_minus_baseline": mean_ci(e),
        "reference_minus_bot": mean_ci([x - y for x, y in zip(o, e, strict=True)]),
        "share": None,
        "ci95_delta": None,
        "ci95_bootstrap": None,
    }
    if mo == 0:
        return out
    r = me / mo
    resid = [y - r * x for x, y in zip(o, e, strict=True)]
    sd = math.sqrt(math.fsum(v * v for v in resid) / (n - 1))
    half = Z95 * sd / (math.sqrt(n) * abs(mo))
    rng = random.Random(0)
    boots: list[float] = []
    for _ in range(BOOTSTRAP):
        idx = [rng.randrange(n) for _ in range(n)]
        so = math.fsum(o[i] for i in idx)
        if so != 0:
            boots.append(math.fsum(e[i] for i in idx) / so)
    boots.sort()
    lo = boots[int(0.025 * (len(boots) - 1))]
    hi = boots[int(0.975 * (len(boots) - 1))]
    out.update(share=r, ci95_delta=[r - half, r + half], ci95_bootstrap=[lo, hi])
    return out


def _ci(d: dict[str, Any]) -> str:
    ci = d["ci95"]
    return f"{d['mean']:+.2f}  95% CI [{ci[0]:+.2f}, {ci[1]:+.2f}]"


def report(ref: dict[str, Any], bot: dict[str, Any], gap: dict[str, Any]) -> str:
    a, b, base = ref["a"][0], bot["a"][0], ref["b"][0]
    lines = [
        f"the same {gap['n']} deals (seed {ref['seed']}), budget {ref['budget_ms']} ms, "
        f"points per hand per duplicate pair:",
        f"  {a} - {base}: {_ci(gap['reference_minus_baseline'])}",
        f"  {b} - {base}: {_ci(gap['bot_minus_baseline'])}",
        f"  {a} - {b} (paired by deal): {_ci(gap['reference_minus_bot'])}",
    ]
    if gap["share"] is None:
        lines.append(f"share: n/a ({a} and {base} tie on average)")
    else:
        d, bs = gap["ci95_delta"], gap["ci95_bootstrap"]
        lines.append(
            f"share of the {base} -> {a} gap that {b} closes: {gap['share']:.1%}  "
            f"95% CI [{d[0]:.1%}, {d[1]:.1%}] (delta method), "
            f"[{bs[0]:.1%}, {bs[1]:.1%}] (bootstrap of the deals)"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
