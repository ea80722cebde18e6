#!/usr/bin/env python3
"""The service on the compiled engine against the pure-Python one, in one spell.

Runs ``bench/server.py`` in alternation with the server (and the bench's
clients) on each build — ``SPADES_ENGINE_PURE=1`` for the pure one — paced
(``--think-ms 100``: every table thinks, as live matches do) and saturated
(no think time: the ratio of actions to Ping), ``--rounds`` times each, and
prints per build: actions per second, the p99 of an action's latency (request
to result) and of its event reaching all four seats' streams, the server's
CPU per accepted action (its CPU share of the action phases over the actions
per second), and the saturated ratio to Ping.  Each cell is the median over
the rounds.

    python3 bench/server_builds.py [--rounds 2] [--seconds 10] [--matches 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BUILDS = ("pure", "compiled")


def run_bench(build: str, paced: bool, args: argparse.Namespace) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "SPADES_ENGINE_PURE"}
    if build == "pure":
        env["SPADES_ENGINE_PURE"] = "1"
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [sys.executable, str(HERE / "server.py"), "--matches", str(args.matches)]
        cmd += ["--seconds", str(args.seconds), "--rounds", "1", "--json", out.name]
        if paced:
            cmd += ["--think-ms", "100"]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        result: dict[str, Any] = json.loads(Path(out.name).read_text())
    check = [sys.executable, "-c", "import spades_engine as s; print(s.COMPILED)"]
    compiled = subprocess.run(check, env=env, capture_output=True, text=True, check=True)
    assert compiled.stdout.strip() == str(build == "compiled"), f"{build} build not loaded"
    return result


def cpu_us_per_action(r: dict[str, Any]) -> float:
    share = r["cpu_percent_actions"]["server"] / 100  # of one core
    return 1e6 * share / r["actions_per_second"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--matches", type=int, default=100)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for i in range(args.rounds):
        for mode in ("paced", "saturated"):
            builds = BUILDS if i % 2 == 0 else BUILDS[::-1]
            for build in builds:
                r = run_bench(build, mode == "paced", args)
                runs.setdefault((build, mode), []).append(r)
                print(
                    f"round {i + 1} {mode:<9} {build:<8} {r['actions_per_second']:8.0f} actions/s"
                    f"  p99 {r['submit_ms_p99']:6.2f} ms  ratio {r['ratio']:.2f}",
                    flush=True,
                )

    def med(build: str, mode: str, key: Any) -> float:
        values = [key(r) if callable(key) else r[key] for r in runs[(build, mode)]]
        return statistics.median(values)

    print()
    print(f"median of {args.rounds} rounds, {args.matches} matches, {args.seconds:g} s each")
    head = f"{'':<24}" + "".join(f"{b:>12}" for b in BUILDS) + f"{'compiled/pure':>15}"
    print(head)
    rows = [
        ("paced actions/s", "paced", "actions_per_second"),
        ("paced p99 action ms", "paced", "submit_ms_p99"),
        ("paced p99 to streams ms", "paced", "submit_to_all_streams_ms_p99"),
        ("paced server CPU us/act", "paced", cpu_us_per_action),
        ("saturated actions/s", "saturated", "actions_per_second"),
        ("saturated server us/act", "saturated", cpu_us_per_action),
        ("saturated ratio to Ping", "saturated", "ratio"),
    ]
    table = {}
    for label, mode, key in rows:
        values = [med(b, mode, key) for b in BUILDS]
        table[label] = values
        fmt = "{:>12.2f}" if values[0] < 100 else "{:>12.0f}"
        ratio = values[1] / values[0] if values[0] else float("nan")
        print(f"{label:<24}" + "".join(fmt.format(v) for v in values) + f"{ratio:>15.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"table": table, "builds": BUILDS}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
